//! `stalled`: a run that makes no new step for longer than `k` times its usual
//! time between new steps (the median of the last `window` gaps), and at least
//! the floor, while its process is alive (for an attached file without a
//! process: while the file does not grow either). Critical when the GPUs the job
//! uses are idle (a hung collective, a dead loader), a warning otherwise (they
//! are busy, or there is no GPU telemetry to tell). It clears when steps resume.
//!
//! Unlike the other kinds it is judged on the clock, not per point: the live
//! session calls [`StallWatch::step`] as steps arrive and [`StallWatch::check`]
//! every second with what it sees of the job ([`Activity`]). Pure: the caller
//! gives the time.
use crate::health::config::KindSettings;
use crate::health::stats::Window;
use crate::health::Severity;

/// What the session sees of a job while it makes no step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Activity {
    /// Whether the job's process is alive; `None`: no process is known.
    pub alive: Option<bool>,
    /// For a run without a process (an attached file): when its file last grew,
    /// on the caller's clock.
    pub grew_s: Option<f64>,
    /// Whether every GPU the job uses is idle; `None`: no GPU telemetry, or no
    /// GPU memory of the job's.
    pub gpus_idle: Option<bool>,
    /// What the process and GPUs are doing, in words, for the message.
    pub doing: String,
}

/// A change of a run's stall.
#[derive(Debug, Clone, PartialEq)]
pub enum StallEvent {
    /// The run stalled at `step` (its last), silent for `silent_s`.
    Raised { severity: Severity, step: u64, silent_s: f64, message: String },
    /// A warning became critical (the GPUs went idle).
    Escalated { step: u64, silent_s: f64, message: String },
    /// Steps resumed.
    Cleared { step: u64, silent_s: f64, message: String },
}

#[derive(Debug, Clone)]
pub struct StallWatch {
    k: f64,
    floor_s: f64,
    warmup: usize,
    gaps: Window,
    /// The newest step and when it came.
    last: Option<(u64, f64)>,
    /// The severity raised for the current silence.
    raised: Option<Severity>,
}

/// `45 s`, `3m05s`, `2h03m`.
pub fn duration(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..=99 => format!("{s} s"),
        100..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

fn seconds(s: f64) -> String {
    if s < 10.0 { format!("{s:.2} s") } else { duration(s) }
}

impl StallWatch {
    pub fn new(s: &KindSettings) -> Self {
        StallWatch { k: s.warn, floor_s: s.critical, warmup: s.warmup as usize, gaps: Window::new(s.window.max(1)), last: None, raised: None }
    }

    /// The run's usual time between new steps, once enough gaps are seen.
    pub fn usual_gap_s(&self) -> Option<f64> {
        (self.gaps.len() >= self.warmup.max(1)).then(|| self.gaps.median()).flatten()
    }

    /// How long a silence must last to be a stall.
    pub fn threshold_s(&self) -> f64 {
        self.usual_gap_s().map_or(self.floor_s, |g| (self.k * g).max(self.floor_s))
    }

    /// The run's newest step is `step` at `now_s`; a stall it ends is cleared.
    pub fn step(&mut self, step: u64, now_s: f64) -> Option<StallEvent> {
        let Some((last, at)) = self.last else {
            self.last = Some((step, now_s));
            return None;
        };
        if step == last {
            return None;
        }
        let silent_s = now_s - at;
        self.last = Some((step, now_s));
        // A stall's silence is not the run's usual pace.
        if self.raised.take().is_some() {
            let message = format!("steps resumed at step {step} after {} without a new step", duration(silent_s));
            return Some(StallEvent::Cleared { step, silent_s, message });
        }
        if silent_s >= 0.0 && step > last {
            self.gaps.push(silent_s);
        }
        None
    }

    /// Whether the run is stalled at `now_s`, given what its job is doing.
    pub fn check(&mut self, now_s: f64, activity: &Activity) -> Option<StallEvent> {
        let (step, at) = self.last?;
        let silent_s = now_s - at;
        let threshold = self.threshold_s();
        if silent_s <= threshold {
            return None;
        }
        let judged = match (activity.alive, activity.grew_s) {
            (Some(alive), _) => alive,
            // An attached file: stalled when it has not grown either.
            (None, Some(grew)) => now_s - grew > threshold,
            (None, None) => false,
        };
        if !judged {
            return None;
        }
        let severity = if activity.gpus_idle == Some(true) { Severity::Critical } else { Severity::Warn };
        let usual = match self.usual_gap_s() {
            Some(g) => format!("usually {} between steps, ", seconds(g)),
            None => String::new(),
        };
        let message = format!("no new step for {} since step {step} ({usual}a stall after {}); {}", duration(silent_s), duration(threshold), activity.doing);
        match self.raised {
            None => {
                self.raised = Some(severity);
                Some(StallEvent::Raised { severity, step, silent_s, message })
            }
            Some(Severity::Warn) if severity == Severity::Critical => {
                self.raised = Some(severity);
                Some(StallEvent::Escalated { step, silent_s, message })
            }
            Some(_) => None,
        }
    }

    /// Whether a stall is raised now.
    pub fn stalled(&self) -> bool {
        self.raised.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::config::defaults;
    use crate::health::AlertKind;

    fn watch(k: f64, floor_s: f64) -> StallWatch {
        let mut s = defaults(AlertKind::Stalled);
        s.warn = k;
        s.critical = floor_s;
        StallWatch::new(&s)
    }

    fn alive(gpus_idle: Option<bool>) -> Activity {
        Activity { alive: Some(true), grew_s: None, gpus_idle, doing: "process 7 sleeping".into() }
    }

    #[test]
    fn a_silence_longer_than_k_usual_gaps_and_the_floor_is_a_stall_that_clears() {
        let mut w = watch(10.0, 5.0);
        for s in 1..=20u64 {
            assert!(w.step(s, s as f64).is_none());
            assert!(w.check(s as f64 + 0.9, &alive(None)).is_none());
        }
        assert_eq!(w.usual_gap_s(), Some(1.0));
        assert_eq!(w.threshold_s(), 10.0, "10 x 1 s, above the 5 s floor");
        assert!(w.check(29.9, &alive(None)).is_none());
        let Some(StallEvent::Raised { severity, step, message, .. }) = w.check(30.5, &alive(None)) else { panic!() };
        assert_eq!((severity, step), (Severity::Warn, 20));
        assert_eq!(message, "no new step for 11 s since step 20 (usually 1.00 s between steps, a stall after 10 s); process 7 sleeping");
        assert!(w.check(31.0, &alive(None)).is_none(), "raised once");
        let Some(StallEvent::Escalated { .. }) = w.check(32.0, &alive(Some(true))) else { panic!("GPUs idle: critical") };
        assert!(w.check(33.0, &alive(Some(true))).is_none());
        let Some(StallEvent::Cleared { step, message, .. }) = w.step(21, 40.0) else { panic!() };
        assert_eq!(step, 21);
        assert_eq!(message, "steps resumed at step 21 after 20 s without a new step");
        assert_eq!(w.usual_gap_s(), Some(1.0), "the stall is not a usual gap");
        assert!(!w.stalled());
    }

    #[test]
    fn the_floor_holds_for_fast_runs_and_before_the_pace_is_known() {
        let mut w = watch(10.0, 60.0);
        w.step(1, 0.0);
        assert!(w.check(59.0, &alive(Some(true))).is_none());
        let Some(StallEvent::Raised { severity, .. }) = w.check(61.0, &alive(Some(true))) else { panic!() };
        assert_eq!(severity, Severity::Critical, "idle GPUs");
        assert!(watch(10.0, 60.0).check(1000.0, &alive(None)).is_none(), "no step yet: nothing to stall");
    }

    #[test]
    fn a_dead_process_or_a_growing_file_is_no_stall() {
        let mut w = watch(10.0, 5.0);
        w.step(1, 0.0);
        assert!(w.check(100.0, &Activity { alive: Some(false), ..alive(None) }).is_none());
        let file = |grew_s| Activity { alive: None, grew_s: Some(grew_s), gpus_idle: None, doing: String::new() };
        assert!(w.check(100.0, &file(98.0)).is_none(), "the file still grows");
        assert!(matches!(w.check(100.0, &file(90.0)), Some(StallEvent::Raised { .. })));
        assert!(watch(10.0, 5.0).check(100.0, &Activity::default()).is_none());
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(duration(45.2), "45 s");
        assert_eq!(duration(185.0), "3m05s");
        assert_eq!(duration(7380.0), "2h03m");
    }
}
