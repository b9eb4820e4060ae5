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
    /// The metrics that have had a finite value yet: a statistic over episodes, an
    /// evaluation or a rate window is NaN until there is something to average (RLlib's `episode_reward_mean`
    /// before the first episode ends, Sample Factory's first `Fps is (10 sec: nan`),
    /// which is no break.
    finite_yet: Vec<String>,
    /// The metrics that were NaN before their first finite value: a statistic over
    /// what may be none (TorchBeast's `mean_episode_return` of an interval in which
    /// no episode ended) may be NaN again, so its later NaN warns, not critical.
    undefined_first: Vec<String>,
    /// The run scales its loss (a dynamic fp16 loss scale above 1 was logged): a
    /// gradient norm that overflows while the loss stays finite is a step the
    /// scaler skips.
    loss_scaled: bool,
}

impl NonfiniteValues {
    pub fn new(s: KindSettings) -> Self {
        NonfiniteValues { cooldown: s.cooldown, open: BTreeMap::new(), finite_yet: Vec::new(), undefined_first: Vec::new(), loss_scaled: false }
    }

    /// Notes that the value at `place` of a point, of `name`, is finite. Metrics
    /// are noted in the order they first come finite, which is a point's order when
    /// all are finite from the start, so a steady point finds each at its place; a
    /// metric away from its place is looked up.
    fn note_finite(&mut self, place: usize, name: &str) {
        if self.finite_yet.get(place).is_some_and(|n| super::same_name(n, name)) {
            return;
        }
        if !self.finite_yet.iter().any(|n| n == name) {
            self.finite_yet.push(name.to_owned());
        }
    }

    /// Whether a NaN/Inf of `name` is a break: always for what training computes
    /// every step (a loss, a gradient, a KL, an entropy, a perplexity: broken from
    /// the start is broken), and for anything else once it has had a finite value.
    fn is_a_break(&self, name: &str) -> bool {
        let lower = name.to_ascii_lowercase();
        [catalog::LOSS, "grad", "norm", catalog::KL, catalog::ENTROPY].iter().any(|w| lower.contains(w))
            || catalog::names_a_perplexity(&lower)
            || catalog::names_a_gan_loss(&lower)
            || self.finite_yet.iter().any(|n| n == name)
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
        if !self.loss_scaled {
            self.loss_scaled = p.values.iter().any(|(name, v)| catalog::loss_scale(name, *v).is_some_and(|s| s > 1.0));
        }
        let mut broken: Vec<(&str, f64)> = Vec::new();
        // NaNs of metrics that may be NaN before their first value, held back.
        let mut unsure: Vec<&str> = Vec::new();
        for (place, (name, v)) in p.values.iter().enumerate() {
            if v.is_finite() {
                self.note_finite(place, name);
                // Nothing open and nothing broken, the usual case, costs no lookup.
                if self.open.is_empty() {
                    continue;
                }
            }
            // A timing or memory reading that is NaN (modded-nanogpt prints
            // `step_avg:nanms` at step 0) says nothing about the training.
            if catalog::is_timing_or_resource(name) {
                continue;
            }
            if !v.is_finite() && !self.open.contains_key(&**name) && !self.is_a_break(name) {
                unsure.push(name);
                continue;
            }
            if self.gate(name, *v) {
                broken.push((name, *v));
            }
        }
        // Every metric of the step NaN or infinite, of two or more (CycleGAN's
        // `D_A: nan G_A: nan cycle_A: nan ...` from its first line) is a broken run
        // whatever their names: a statistic waiting for its first value is NaN
        // beside the training's own finite metrics.
        if !unsure.is_empty() {
            let judged = || p.values.iter().filter(|(name, _)| !catalog::is_timing_or_resource(name) && &**name != catalog::EPOCH);
            if judged().count() >= 2 && judged().all(|(_, v)| !v.is_finite()) {
                for (name, v) in judged() {
                    if !broken.iter().any(|(n, _)| *n == &**name) && self.gate(name, *v) {
                        broken.push((name, *v));
                    }
                }
            } else {
                for name in unsure {
                    if !self.undefined_first.iter().any(|n| n == name) {
                        self.undefined_first.push(name.to_owned());
                    }
                }
            }
        }
        let &(first, value) = broken.first()?;
        let what = |v: f64| if v.is_nan() { "NaN" } else { "infinite" };
        let list: Vec<String> = broken.iter().map(|(n, v)| format!("{n} is {}", what(*v))).collect();
        // Only statistics that were undefined before their first value: a warning.
        let undefined_again = broken.iter().all(|(n, _)| self.undefined_first.iter().any(|u| u == n));
        // Only gradient norms, in a run that scales its loss, beside a finite loss:
        // fp16 gradients that overflowed, a step the scaler skips (a run of them
        // lowers the scale, which grad_explosion judges).
        let skipped = self.loss_scaled
            && broken.iter().all(|(n, _)| catalog::names_a_gradient(n))
            && p.values.iter().any(|(n, v)| n.contains(catalog::LOSS) && v.is_finite() && catalog::loss_scale(n, *v).is_none());
        // Only parts of the loss (per-domain losses: InternLM's `loss/cn`) beside a
        // finite loss: the NaN never reached the loss training steps on, a part
        // with nothing in the batch. A warning; info when a count of the same part
        // is 0 at that step (`tokens/cn=0`).
        let parts_only = p.get(catalog::LOSS).is_some_and(f64::is_finite) && broken.iter().all(|(n, _)| catalog::is_part_of_loss(n));
        fn part(n: &str) -> Option<&str> {
            n.rsplit_once('/').map(|(_, part)| part)
        }
        let empty = |n: &str| part(n).is_some_and(|pt| p.values.iter().any(|(m, v)| *v == 0.0 && &**m != n && part(m) == Some(pt)));
        let (severity, note) = if parts_only && broken.iter().all(|(n, _)| empty(n)) {
            (Severity::Info, " (the loss finite, a count of each part 0: parts with nothing in the batch)")
        } else if parts_only {
            (Severity::Warn, " (the loss finite: a part that reached no loss, with nothing in the batch?)")
        } else if undefined_again {
            (Severity::Warn, " (undefined before its first value too: a mean over none?)")
        } else if skipped {
            (Severity::Info, " (the loss finite, the loss scaled: an fp16 overflow the scaler skips?)")
        } else {
            (Severity::Critical, "")
        };
        let message = format!("{} at step {}{note}", list.join(", "), p.step);
        Some(Raised { severity, metric: first.to_owned(), step: p.step, value, message, peak: None, escalated_at: None })
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
    fn a_statistic_with_nothing_to_average_yet_is_not_a_break() {
        let mut d = NonfiniteValues::new(defaults(AlertKind::Nonfinite));
        let mut raised = Vec::new();
        // RLlib: the episode reward is NaN until the first episode ends, then a
        // number; a NaN after that warns (TorchBeast's mean over an interval's
        // episodes is NaN whenever none ended). A loss NaN from the start is critical.
        for step in 0..8u64 {
            let reward = if step < 3 || step == 6 { f64::NAN } else { 20.0 + step as f64 };
            let loss = if step == 7 { f64::NAN } else { 0.5 };
            let values: Vec<(MetricName, f64)> = vec![("episode_reward_mean".into(), reward), ("policy_loss".into(), loss)];
            if let Some(r) = d.check(&Point { step, time_s: 0.0, values: &values }) {
                raised.push((r.step, r.metric, r.severity));
            }
        }
        assert_eq!(raised, vec![(6, "episode_reward_mean".to_owned(), Severity::Warn), (7, "policy_loss".to_owned(), Severity::Critical)]);
        // A score first finite at a place another metric holds is still its own:
        // its NaN afterwards is a break.
        let mut d = NonfiniteValues::new(defaults(AlertKind::Nonfinite));
        let mut raised = Vec::new();
        for (step, values) in [vec![("loss", 0.5)], vec![("eval_accuracy", 0.7), ("loss", 0.4)], vec![("eval_accuracy", f64::NAN), ("loss", 0.3)]].into_iter().enumerate() {
            let values: Vec<(MetricName, f64)> = values.into_iter().map(|(n, v)| (n.into(), v)).collect();
            if let Some(r) = d.check(&Point { step: step as u64, time_s: 0.0, values: &values }) {
                raised.push((r.step, r.metric));
            }
        }
        assert_eq!(raised, vec![(2, "eval_accuracy".to_owned())]);
        let mut d = NonfiniteValues::new(defaults(AlertKind::Nonfinite));
        let values: Vec<(MetricName, f64)> = vec![("loss".into(), f64::NAN)];
        assert!(d.check(&Point { step: 0, time_s: 0.0, values: &values }).is_some(), "a loss broken from its first step");
    }

    /// Should raise / should not: InternLM's per-domain losses (`loss/cn=nan` where
    /// `tokens/cn=0`) beside a finite loss are parts with nothing in the batch:
    /// info; a part NaN without a count of 0 warns; the loss itself, or a part
    /// beside a NaN loss, or a validation loss, stays critical.
    #[test]
    fn a_part_of_the_loss_nan_beside_a_finite_loss_is_no_break() {
        fn severity(values: &[(&'static str, f64)]) -> Option<Severity> {
            let mut d = NonfiniteValues::new(defaults(AlertKind::Nonfinite));
            let values: Vec<(MetricName, f64)> = values.iter().map(|(n, v)| ((*n).into(), *v)).collect();
            d.check(&Point { step: 0, time_s: 0.0, values: &values }).map(|r| r.severity)
        }
        let nan = f64::NAN;
        assert_eq!(severity(&[("loss", 11.6), ("tokens/en", 120836.0), ("tokens/cn", 0.0), ("loss/en", 11.6), ("loss/cn", nan)]), Some(Severity::Info));
        assert_eq!(severity(&[("loss", 11.6), ("loss/en", 11.6), ("loss/cn", nan)]), Some(Severity::Warn));
        assert_eq!(severity(&[("loss", nan), ("tokens/cn", 0.0), ("loss/cn", nan)]), Some(Severity::Critical));
        assert_eq!(severity(&[("loss", 2.0), ("val/loss", nan)]), Some(Severity::Critical));
        assert_eq!(severity(&[("loss", 2.0), ("loss/cn", nan), ("grad_norm", nan)]), Some(Severity::Critical));
    }

    #[test]
    fn a_step_of_nothing_but_nan_or_a_gans_nan_loss_is_broken_from_the_start() {
        fn check(values: &[(&'static str, f64)]) -> Option<String> {
            let mut d = NonfiniteValues::new(defaults(AlertKind::Nonfinite));
            let values: Vec<(MetricName, f64)> = values.iter().map(|(n, v)| ((*n).into(), *v)).collect();
            d.check(&Point { step: 100, time_s: 0.0, values: &values }).map(|r| r.message)
        }
        // CycleGAN from its first line: the nets' losses by letter.
        let got = check(&[("epoch", 1.0), ("time", 0.3), ("d_a", f64::NAN), ("g_a", f64::NAN), ("cycle_a", f64::NAN)]);
        assert_eq!(got.as_deref(), Some("d_a is NaN, g_a is NaN, cycle_a is NaN at step 100"));
        // Every metric of a step NaN, of names of no family rlmon knows.
        assert!(check(&[("epoch", 1.0), ("mse_q0", f64::NAN), ("vb_q0", f64::INFINITY)]).is_some());
        // Beside the run's finite metrics, statistics waiting for a value are not.
        assert!(check(&[("num_env_steps", 4000.0), ("episode_reward_mean", f64::NAN), ("episode_len_mean", f64::NAN)]).is_none());
        assert!(check(&[("epoch", 1.0), ("episode_reward_mean", f64::NAN)]).is_none(), "one metric alone is no such step");
    }

    #[test]
    fn an_overflowing_gradient_beside_a_finite_loss_in_a_loss_scaled_run_is_a_skipped_step() {
        let check = |values: &[(&'static str, f64)]| {
            let mut d = NonfiniteValues::new(defaults(AlertKind::Nonfinite));
            let values: Vec<(MetricName, f64)> = values.iter().map(|(n, v)| ((*n).into(), *v)).collect();
            d.check(&Point { step: 7, time_s: 0.0, values: &values }).map(|r| (r.severity, r.message))
        };
        let (severity, message) = check(&[("loss", 0.91), ("grad_norm", f64::INFINITY), (catalog::LOSS_SCALE, 32768.0)]).unwrap();
        assert_eq!(severity, Severity::Info);
        assert_eq!(message, "grad_norm is infinite at step 7 (the loss finite, the loss scaled: an fp16 overflow the scaler skips?)");
        // Without a scaler (bf16 prints a scale of 1), or with the loss broken too: critical.
        assert_eq!(check(&[("loss", 0.91), ("grad_norm", f64::NAN), (catalog::LOSS_SCALE, 1.0)]).unwrap().0, Severity::Critical);
        assert_eq!(check(&[("loss", 0.91), ("grad_norm", f64::NAN)]).unwrap().0, Severity::Critical);
        assert_eq!(check(&[("loss", f64::NAN), ("grad_norm", f64::NAN), (catalog::LOSS_SCALE, 32768.0)]).unwrap().0, Severity::Critical);
        // The scale is no loss: a run that prints no loss beside it (Megatron-DeepSpeed's
        // `grad norm: nan | loss scale: 65536.0`) is broken.
        assert_eq!(check(&[("grad_norm", f64::NAN), (catalog::LOSS_SCALE, 65536.0)]).unwrap().0, Severity::Critical);
    }

    #[test]
    fn a_nan_timing_reading_is_not_a_broken_run() {
        let mut d = NonfiniteValues::new(defaults(AlertKind::Nonfinite));
        let values: Vec<(MetricName, f64)> = vec![("loss".into(), 2.0), ("step_avg_s".into(), f64::NAN), ("step_time_s".into(), f64::INFINITY)];
        assert!(d.check(&Point { step: 0, time_s: 0.0, values: &values }).is_none());
    }
}
