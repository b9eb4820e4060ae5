//! Which notices a target is sent, and when: each alert once per level (raised,
//! then escalated), alerts that come together gathered into one message, and at
//! most one message per cooldown (a critical alert or a run's end does not wait
//! for it). Pure: the caller gives the time, in seconds on any monotonic clock.
use std::collections::HashSet;

use super::Notice;
use crate::health::{AlertKind, Severity};

/// An alert and level: the same alert raised twice, or escalated to a level it
/// was already sent at, is sent once.
type Key = (String, AlertKind, String, u64, Severity);

#[derive(Debug)]
pub struct Throttle {
    group_s: f64,
    cooldown_s: f64,
    sent: HashSet<Key>,
    pending: Vec<Notice>,
    /// When the oldest pending notice came.
    first_s: Option<f64>,
    /// When the last message went.
    last_sent_s: Option<f64>,
}

fn key(n: &Notice) -> Option<Key> {
    match n {
        Notice::Alert { alert: a, .. } => Some((a.run.clone(), a.kind, a.metric.clone(), a.step, a.severity)),
        _ => None,
    }
}

/// Goes out without waiting for the cooldown.
fn urgent(n: &Notice) -> bool {
    match n {
        Notice::Alert { alert, .. } => alert.severity == Severity::Critical,
        Notice::RunEnded { .. } => true,
        Notice::Cleared { .. } => false,
    }
}

impl Throttle {
    pub fn new(group_s: f64, cooldown_s: f64) -> Self {
        Throttle { group_s, cooldown_s, sent: HashSet::new(), pending: Vec::new(), first_s: None, last_sent_s: None }
    }

    /// Takes a notice the target wants; a repeat of one already taken is dropped.
    /// Returns whether it was taken.
    pub fn offer(&mut self, notice: Notice, now_s: f64) -> bool {
        if let Some(k) = key(&notice) {
            if !self.sent.insert(k) {
                return false;
            }
        }
        self.first_s.get_or_insert(now_s);
        self.pending.push(notice);
        true
    }

    /// When the pending notices are due to go out (`None`: nothing pending).
    pub fn due_s(&self) -> Option<f64> {
        let first = self.first_s?;
        let grouped = first + self.group_s;
        if self.pending.iter().any(urgent) {
            return Some(grouped);
        }
        Some(match self.last_sent_s {
            Some(last) => grouped.max(last + self.cooldown_s),
            None => grouped,
        })
    }

    /// The pending notices as one message, when due at `now_s`.
    pub fn take(&mut self, now_s: f64) -> Option<Vec<Notice>> {
        if self.due_s()? > now_s {
            return None;
        }
        Some(self.flush(now_s))
    }

    /// Every pending notice now (the session is ending), due or not.
    pub fn flush(&mut self, now_s: f64) -> Vec<Notice> {
        self.first_s = None;
        if !self.pending.is_empty() {
            self.last_sent_s = Some(now_s);
        }
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::Alert;

    fn alert(kind: AlertKind, step: u64, severity: Severity) -> Notice {
        let a = Alert { kind, severity, run: "r".into(), metric: "loss".into(), step, time_s: 0.0, value: 1.0, message: "m".into(), peak: None, escalated_at: None };
        Notice::Alert { alert: a, escalated: false, moved: Vec::new() }
    }

    #[test]
    fn a_burst_is_one_message_after_the_group_window() {
        let mut t = Throttle::new(2.0, 30.0);
        assert!(t.offer(alert(AlertKind::LossSpike, 10, Severity::Warn), 100.0));
        assert!(t.offer(alert(AlertKind::GradExplosion, 10, Severity::Warn), 100.5));
        assert!(t.offer(alert(AlertKind::KlSpike, 11, Severity::Warn), 101.0));
        assert_eq!(t.due_s(), Some(102.0));
        assert!(t.take(101.9).is_none());
        assert_eq!(t.take(102.0).unwrap().len(), 3);
        assert!(t.take(200.0).is_none(), "nothing left");
    }

    #[test]
    fn one_message_per_alert_and_level() {
        let mut t = Throttle::new(0.0, 0.0);
        assert!(t.offer(alert(AlertKind::LossSpike, 10, Severity::Warn), 0.0));
        assert!(!t.offer(alert(AlertKind::LossSpike, 10, Severity::Warn), 1.0), "the same alert again");
        assert!(t.offer(alert(AlertKind::LossSpike, 10, Severity::Critical), 2.0), "escalated: a new level");
        assert!(!t.offer(alert(AlertKind::LossSpike, 10, Severity::Critical), 3.0));
        assert!(t.offer(alert(AlertKind::LossSpike, 90, Severity::Warn), 4.0), "a later spike is another alert");
        assert_eq!(t.flush(5.0).len(), 3);
    }

    #[test]
    fn warnings_wait_out_the_cooldown_and_critical_ones_do_not() {
        let mut t = Throttle::new(2.0, 30.0);
        t.offer(alert(AlertKind::LossSpike, 10, Severity::Warn), 0.0);
        assert_eq!(t.take(2.0).unwrap().len(), 1);
        t.offer(alert(AlertKind::LossSpike, 50, Severity::Warn), 5.0);
        t.offer(alert(AlertKind::GradExplosion, 51, Severity::Warn), 20.0);
        assert_eq!(t.due_s(), Some(32.0), "a warning waits for the cooldown");
        assert!(t.take(31.0).is_none());
        t.offer(alert(AlertKind::Nonfinite, 52, Severity::Critical), 25.0);
        assert_eq!(t.due_s(), Some(7.0), "a critical alert goes at once, with what waited");
        assert_eq!(t.take(25.0).unwrap().len(), 3);
        t.offer(Notice::RunEnded { run: "r".into(), state: "failed".into(), step: 52, summary: String::new(), error: None }, 26.0);
        assert_eq!(t.due_s(), Some(28.0), "a run's end does not wait either");
    }
}
