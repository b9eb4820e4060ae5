//! Learning-rate schedule: linear warm-up to `lr`, then cosine decay to
//! `lr * min_lr_ratio` at the last step.
use std::f64::consts::PI;

use rlmon::config::OptimizerConfig;

/// The learning rate for 1-based `step` of `total`.
pub fn lr_at(o: &OptimizerConfig, step: u64, total: u64) -> f64 {
    let warmup = o.warmup_steps.min(total);
    if step <= warmup {
        return o.lr * step as f64 / warmup as f64;
    }
    let decay_steps = (total - warmup).max(1) as f64;
    let progress = ((step - warmup) as f64 / decay_steps).clamp(0.0, 1.0);
    let min_lr = o.lr * o.min_lr_ratio;
    min_lr + 0.5 * (o.lr - min_lr) * (1.0 + (PI * progress).cos())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlmon::config::DEFAULT_OPTIMIZER;

    #[test]
    fn warmup_then_cosine_to_the_floor() {
        let o = OptimizerConfig { lr: 1.0, warmup_steps: 10, min_lr_ratio: 0.1, ..DEFAULT_OPTIMIZER };
        assert!((lr_at(&o, 1, 110) - 0.1).abs() < 1e-12);
        assert!((lr_at(&o, 10, 110) - 1.0).abs() < 1e-12);
        assert!((lr_at(&o, 60, 110) - 0.55).abs() < 1e-12, "half way down the cosine");
        assert!((lr_at(&o, 110, 110) - 0.1).abs() < 1e-12);
        let lrs: Vec<f64> = (10..=110).map(|s| lr_at(&o, s, 110)).collect();
        assert!(lrs.windows(2).all(|w| w[1] <= w[0]), "monotone after warm-up");
    }

    #[test]
    fn no_warmup_starts_at_full_rate() {
        let o = OptimizerConfig { lr: 2.0, warmup_steps: 0, ..DEFAULT_OPTIMIZER };
        assert!((lr_at(&o, 1, 100) - 2.0).abs() < 0.01);
    }
}
