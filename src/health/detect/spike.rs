//! Spikes and drops of one positive metric (loss_spike, grad_explosion, kl_spike,
//! grad_vanishing): a robust z-score of log(value) against the trailing median and
//! MAD, gated by a ratio so that tiny-variance series do not alert on tiny moves
//! and noisy ones (gradient norms) do not alert on their own tails.
use super::{grade, Detector, Point, Raised};
use crate::health::config::KindSettings;
use crate::health::stats::{median_mad, Cooldown, Streak, Window, MAD_TO_SIGMA};
use crate::health::{AlertKind, Severity};

/// Robust z-score needed on top of the ratio threshold.
pub const SPIKE_Z: f64 = 4.0;
/// Lower bound of the noise scale on the log scale (1%), so a flat series does not
/// make every wiggle infinitely significant.
const MIN_LOG_SIGMA: f64 = 0.01;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
}

#[derive(Debug, Clone)]
pub struct Spike {
    kind: AlertKind,
    settings: KindSettings,
    metric: String,
    direction: Direction,
    /// Added before the log so that values near zero (KL) do not explode the ratio.
    floor: f64,
    window: Window,
    streak: Streak,
    cooldown: Cooldown,
    /// The first value of the current streak.
    onset_value: f64,
    what: &'static str,
}

impl Spike {
    /// `what` is the verb of the alert's message ("jumped", "vanished").
    pub fn new(kind: AlertKind, settings: KindSettings, direction: Direction, floor: f64, what: &'static str) -> Self {
        let metric = settings.metric.clone().unwrap_or_default();
        Spike {
            kind,
            window: Window::new(settings.window.max(8)),
            cooldown: Cooldown::new(settings.cooldown),
            settings,
            metric,
            direction,
            floor,
            streak: Streak::default(),
            onset_value: f64::NAN,
            what,
        }
    }

    pub fn check(&mut self, p: &Point) -> Option<Raised> {
        let x = p.get(&self.metric)?;
        if !x.is_finite() {
            return None;
        }
        let y = (x.max(0.0) + self.floor).max(1e-300).ln();
        if self.window.len() < self.settings.warmup.max(8) as usize {
            self.window.push(y);
            return None;
        }
        let (med, mad) = median_mad(&self.window.to_vec())?;
        self.window.push(y);
        let sigma = (MAD_TO_SIGMA * mad).max(MIN_LOG_SIGMA);
        let (z, ratio) = match self.direction {
            Direction::Up => ((y - med) / sigma, (y - med).exp()),
            Direction::Down => ((med - y) / sigma, (y - med).exp()),
        };
        let lower = self.direction == Direction::Down;
        let severity = grade(ratio, self.settings.warn, self.settings.critical, lower).filter(|_| z >= SPIKE_Z);
        let before = self.streak.count;
        let count = self.streak.update(severity.is_some(), p.step);
        if count == 1 {
            self.onset_value = x;
        }
        let base = (med.exp() - self.floor).max(0.0);
        let firing = if count >= self.settings.persistence { severity } else { None };
        // A bump shorter than the persistence that has already recovered: benign,
        // worth a line but not an alarm.
        let recovered_bump = count == 0 && before > 0 && before < self.settings.persistence;
        let gated = self.cooldown.gate(firing.or(recovered_bump.then_some(Severity::Info)));
        let sev = gated?;
        let message = if sev == Severity::Info {
            format!("{} bump to {:.4} at step {} recovered (trailing median {:.4})", self.metric, self.onset_value, self.streak.start, base)
        } else {
            format!(
                "{} {} to {:.4}, {:.1}x its trailing median {:.4}, for {count} steps",
                self.metric, self.what, x, if lower { 1.0 / ratio } else { ratio }, base
            )
        };
        Some(Raised { severity: sev, metric: self.metric.clone(), step: self.streak.start, value: if sev == Severity::Info { self.onset_value } else { x }, message })
    }
}

impl Detector for Spike {
    fn kind(&self) -> AlertKind {
        self.kind
    }

    fn observe(&mut self, p: &Point) -> Vec<Raised> {
        self.check(p).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::config::defaults;
    use crate::metrics::MetricName;

    fn run(det: &mut Spike, values: &[f64]) -> Vec<(u64, Raised)> {
        let mut out = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let vals: Vec<(MetricName, f64)> = vec![("loss".into(), *v)];
            let p = Point { step: i as u64, time_s: i as f64, values: &vals };
            if let Some(r) = det.check(&p) {
                out.push((i as u64, r));
            }
        }
        out
    }

    fn noisy(n: usize) -> Vec<f64> {
        // Deterministic small wiggle around 2.0.
        (0..n).map(|i| 2.0 * (1.0 + 0.02 * ((i as f64) * 1.7).sin())).collect()
    }

    #[test]
    fn lasting_spike_alerts_once_a_step_after_onset() {
        let mut d = Spike::new(AlertKind::LossSpike, defaults(AlertKind::LossSpike), Direction::Up, 0.0, "jumped");
        let mut v = noisy(200);
        for x in &mut v[120..140] {
            *x *= 2.0;
        }
        let alerts = run(&mut d, &v);
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        let (raised_at, a) = &alerts[0];
        assert_eq!((*raised_at, a.step, a.severity), (121, 120, Severity::Warn));
    }

    #[test]
    fn one_step_bump_is_info_only() {
        let mut d = Spike::new(AlertKind::LossSpike, defaults(AlertKind::LossSpike), Direction::Up, 0.0, "jumped");
        let mut v = noisy(200);
        v[150] *= 5.0;
        let alerts = run(&mut d, &v);
        assert_eq!(alerts.len(), 1);
        assert_eq!((alerts[0].1.severity, alerts[0].1.step), (Severity::Info, 150));
    }

    #[test]
    fn huge_spike_is_critical_and_warmup_is_quiet() {
        let mut d = Spike::new(AlertKind::LossSpike, defaults(AlertKind::LossSpike), Direction::Up, 0.0, "jumped");
        let mut v = noisy(100);
        v[3] = 100.0;
        v[4] = 100.0;
        for x in &mut v[60..65] {
            *x = 50.0;
        }
        let alerts = run(&mut d, &v);
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        assert_eq!(alerts[0].1.severity, Severity::Critical);
    }

    #[test]
    fn vanishing_gradients_alert_downwards() {
        let mut s = defaults(AlertKind::GradVanishing);
        s.metric = Some("loss".into());
        let mut d = Spike::new(AlertKind::GradVanishing, s, Direction::Down, 0.0, "fell");
        let mut v = noisy(200);
        for x in &mut v[100..] {
            *x *= 1e-3;
        }
        let alerts = run(&mut d, &v);
        assert_eq!(alerts.len(), 1);
        assert_eq!((alerts[0].0, alerts[0].1.step), (104, 100));
    }
}
