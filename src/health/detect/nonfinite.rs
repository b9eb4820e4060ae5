//! NaN and infinite values: always critical, at the step they happen.
use std::collections::BTreeMap;

use super::{Point, Raised};
use crate::health::config::KindSettings;
use crate::health::stats::Cooldown;
use crate::health::Severity;
use crate::metrics::catalog;

/// Every metric that turns NaN/Inf at a step, in one alert: loss and gradients
/// usually break together, and that is one event. Each metric has its own
/// cooldown, so a value that stays NaN is reported once.
#[derive(Debug, Clone)]
pub struct NonfiniteValues {
    cooldown: u32,
    /// Metrics whose event is still open (alerted, not yet clear for `cooldown`
    /// points). A metric not here is one whose cooldown is closed, so a finite
    /// value costs nothing while nothing is broken.
    open: BTreeMap<String, Cooldown>,
}

impl NonfiniteValues {
    pub fn new(s: KindSettings) -> Self {
        NonfiniteValues { cooldown: s.cooldown, open: BTreeMap::new() }
    }

    /// Passes one value of `name` through its cooldown; true when it raises.
    fn gate(&mut self, name: &str, v: f64) -> bool {
        let firing = (!v.is_finite()).then_some(Severity::Critical);
        match self.open.get_mut(name) {
            Some(gate) => {
                let raised = gate.gate(firing).is_some();
                if !gate.open() {
                    self.open.remove(name);
                }
                raised
            }
            None if firing.is_some() => {
                let mut gate = Cooldown::new(self.cooldown);
                let raised = gate.gate(firing).is_some();
                self.open.insert(name.to_owned(), gate);
                raised
            }
            None => false,
        }
    }

    pub fn check(&mut self, p: &Point) -> Option<Raised> {
        let mut broken: Vec<(&str, f64)> = Vec::new();
        for (name, v) in p.values {
            // Nothing open and nothing broken, the usual case, costs no lookup.
            let quiet = self.open.is_empty() && v.is_finite();
            // A timing or memory reading that is NaN (modded-nanogpt prints
            // `step_avg:nanms` at step 0) says nothing about the training.
            if !quiet && !catalog::is_timing_or_resource(name) && self.gate(name, *v) {
                broken.push((name, *v));
            }
        }
        let &(first, value) = broken.first()?;
        let what = |v: f64| if v.is_nan() { "NaN" } else { "infinite" };
        let list: Vec<String> = broken.iter().map(|(n, v)| format!("{n} is {}", what(*v))).collect();
        let message = format!("{} at step {}", list.join(", "), p.step);
        Some(Raised { severity: Severity::Critical, metric: first.to_owned(), step: p.step, value, message, peak: None, escalated_at: None })
    }
}

super::one_alert_detectors!(NonfiniteValues => Nonfinite);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::AlertKind;
    use crate::health::config::defaults;
    use crate::metrics::MetricName;

    fn point(step: u64, loss: f64, grad: f64, f: impl FnOnce(&Point) -> Option<Raised>) -> Option<Raised> {
        let values: Vec<(MetricName, f64)> = vec![("loss".into(), loss), ("grad_norm".into(), grad)];
        f(&Point { step, time_s: 0.0, values: &values })
    }

    #[test]
    fn each_metric_alerts_once_per_event_and_again_after_its_cooldown() {
        let mut s = defaults(AlertKind::Nonfinite);
        s.cooldown = 3;
        let mut d = NonfiniteValues::new(s);
        let mut raised = Vec::new();
        // loss breaks at 1 and 2, recovers for 3 steps (cooldown over), breaks at 6;
        // grad_norm breaks at 2 while loss's event is open: its own alert.
        let loss = [1.0, f64::NAN, f64::NAN, 1.0, 1.0, 1.0, f64::NAN, 1.0, 1.0, 1.0];
        let grad = [1.0, 1.0, f64::INFINITY, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        for step in 0..loss.len() {
            if let Some(r) = point(step as u64, loss[step], grad[step], |p| d.check(p)) {
                raised.push((r.step, r.metric, r.message));
            }
        }
        assert_eq!(
            raised,
            vec![
                (1, "loss".to_owned(), "loss is NaN at step 1".to_owned()),
                (2, "grad_norm".to_owned(), "grad_norm is infinite at step 2".to_owned()),
                (6, "loss".to_owned(), "loss is NaN at step 6".to_owned()),
            ]
        );
        assert!(d.open.is_empty(), "both events closed after their cooldown");
    }

    #[test]
    fn a_nan_timing_reading_is_not_a_broken_run() {
        let mut d = NonfiniteValues::new(defaults(AlertKind::Nonfinite));
        let values: Vec<(MetricName, f64)> = vec![("loss".into(), 2.0), ("step_avg_s".into(), f64::NAN), ("step_time_s".into(), f64::INFINITY)];
        assert!(d.check(&Point { step: 0, time_s: 0.0, values: &values }).is_none());
    }
}
