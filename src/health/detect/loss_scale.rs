//! fp16's dynamic loss scale falling away: the gradients overflow at every scale
//! the scaler tries, a gradient explosion seen through the scaler.
//!
//! A loss scaler halves the scale at each step whose gradients overflow fp16 and
//! skips that step; it grows the scale back after a long stretch without one. A
//! healthy run's scale settles between about 2^7 and 2^24 and stays there. One
//! that has fallen 64x or more below the highest it held, to 8 or less, means
//! gradients of about 8,000 and more at every step (apex's and DeepSpeed's
//! `Gradient overflow ... reducing loss scale to 2.0`); under 1/16, they overflow
//! fp16 without any scaling, and DeepSpeed and Megatron stop at their floor of 1.
//! Only a fall counts: bf16 runs print a constant scale of 1, and a constant
//! weight named `loss_scale` is no scaler's.
use super::{Point, Raised};
use crate::health::Severity;
use crate::metrics::catalog;

/// A scale this far below the highest the run held has fallen, not settled.
const FELL_BY: f64 = 64.0;
/// At or under this (after a fall), overflowing gradients are about 8,000 and more.
const WARN_AT: f64 = 8.0;
/// At or under this (after a fall), they overflow fp16 unscaled.
const CRITICAL_AT: f64 = 1.0 / 16.0;

#[derive(Debug, Clone, Default)]
pub struct LossScaleCollapse {
    highest: f64,
    /// The open event: its first step and scale, and the severity raised so far.
    raised: Option<(u64, f64, Severity)>,
}

impl LossScaleCollapse {
    pub fn new() -> Self {
        LossScaleCollapse::default()
    }

    pub fn check(&mut self, p: &Point) -> Option<Raised> {
        let (name, scale) = p.values.iter().find_map(|(name, v)| catalog::loss_scale(name, *v).map(|s| (name, s)))?;
        if !scale.is_finite() || scale < 0.0 {
            return None;
        }
        let fell = self.highest >= scale * FELL_BY;
        let from = self.highest;
        self.highest = self.highest.max(scale);
        if scale > WARN_AT {
            // Grown back: the event is over.
            self.raised = self.raised.filter(|_| scale * FELL_BY <= from);
            return None;
        }
        let severity = match () {
            _ if fell && scale <= CRITICAL_AT => Severity::Critical,
            _ if fell => Severity::Warn,
            _ => return None,
        };
        if self.raised.is_some_and(|(_, _, raised)| raised >= severity) {
            return None;
        }
        let (step, value, escalated_at) = match self.raised {
            Some((step, value, _)) => (step, value, Some(p.step)),
            None => (p.step, scale, None),
        };
        self.raised = Some((step, value, severity));
        let why = match severity {
            Severity::Critical => "the gradients overflow fp16 unscaled",
            _ => "the gradients overflow fp16 at every scale tried (an fp16 gradient explosion)",
        };
        let message = format!("{name} fell to {} from {} at step {}: {why}", short(scale), short(from), p.step);
        Some(Raised { severity, metric: name.to_string(), step, value, message, peak: None, escalated_at })
    }
}

/// A scale as people write it: a power of two's digits, or a fraction's 3 figures.
fn short(scale: f64) -> String {
    if scale >= 1.0 {
        format!("{scale:.0}")
    } else {
        format!("{scale:.3}")
    }
}

super::one_alert_detectors!(LossScaleCollapse => GradExplosion);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::MetricName;

    fn run(name: &'static str, scales: &[f64]) -> Vec<(u64, Severity, Option<u64>, String)> {
        let mut d = LossScaleCollapse::new();
        let mut raised = Vec::new();
        for (step, &s) in scales.iter().enumerate() {
            let values: Vec<(MetricName, f64)> = vec![("loss".into(), 0.5), (name.into(), s)];
            if let Some(r) = d.check(&Point { step: step as u64, time_s: 0.0, values: &values }) {
                raised.push((r.step, r.severity, r.escalated_at, r.message));
            }
        }
        raised
    }

    #[test]
    fn a_scale_that_falls_away_warns_then_is_critical_under_the_floor() {
        // apex halving at each overflow from 512 to 2, then on below 1/16.
        let scales = [512.0, 512.0, 256.0, 128.0, 64.0, 32.0, 16.0, 8.0, 4.0, 2.0, 1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125];
        let got = run(catalog::LOSS_SCALE, &scales);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!((got[0].0, got[0].1, got[0].2), (7, Severity::Warn, None));
        assert_eq!(got[0].3, "loss_scale fell to 8 from 512 at step 7: the gradients overflow fp16 at every scale tried (an fp16 gradient explosion)");
        assert_eq!((got[1].0, got[1].1, got[1].2), (7, Severity::Critical, Some(14)));
        // Guided-diffusion's base-2 logarithm of it.
        let lg: Vec<f64> = [16.0, 14.0, 10.0, 6.0, 2.0, -0.8, -5.0].to_vec();
        let got = run("lg_loss_scale", &lg);
        assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), vec![(4, Severity::Warn), (4, Severity::Critical)]);
    }

    #[test]
    fn a_scale_that_settles_or_never_moved_is_quiet() {
        // DeepSpeed's start: from 2^32 down to 2^16 in a few steps, then steady.
        let mut start: Vec<f64> = (16..=32).rev().map(|e| 2f64.powi(e)).collect();
        start.extend([65536.0; 20]);
        assert!(run(catalog::LOSS_SCALE, &start).is_empty());
        // bf16 Megatron prints a constant 1; a constant weight under the name.
        assert!(run(catalog::LOSS_SCALE, &[1.0; 30]).is_empty());
        assert!(run(catalog::LOSS_SCALE, &[0.01; 30]).is_empty());
        // Overflows that the scaler recovers from, down to 16: no collapse.
        assert!(run(catalog::LOSS_SCALE, &[1024.0, 512.0, 256.0, 128.0, 64.0, 32.0, 16.0, 32.0, 64.0]).is_empty());
    }

    #[test]
    fn a_scale_grown_back_closes_the_event_so_a_second_fall_raises_again() {
        let mut scales = vec![4096.0, 8.0, 8.0, 1024.0, 1024.0, 4.0];
        scales.push(4.0);
        let got = run(catalog::LOSS_SCALE, &scales);
        assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), vec![(1, Severity::Warn), (5, Severity::Warn)]);
    }
}
