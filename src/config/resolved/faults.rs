//! Fault injection settings (`[run.faults]`): each knob makes a real run misbehave
//! in one way, so that every health alert can be seen on a live run. All are off
//! unless set.

/// Resolved `[run.faults]`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FaultConfig {
    /// Multiply the learning rate by `factor` for `steps` steps from `at`.
    pub lr_spike: Option<LrSpike>,
    /// Make the loss NaN from this step on.
    pub nan_at: Option<u64>,
    /// Multiply gradients by `factor` from `at` on (before clipping).
    pub grad_scale: Option<AtFactor>,
    /// RLHF: set the KL penalty coefficient to zero from this step.
    pub kl_coef_zero_at: Option<u64>,
    /// RLHF: switch to the gameable (length) reward from this step.
    pub reward_gaming_at: Option<u64>,
    /// MoE: bias the router towards one expert and drop the balancing losses.
    pub router_collapse_at: Option<u64>,
    /// Hold on to this many MiB of freshly written tensors every step.
    pub memory_leak_mb_per_step: Option<f64>,
    /// Ask the device for an impossible allocation at this step: the out-of-memory
    /// error a real job dies of, failing this run only.
    pub oom_at: Option<u64>,
    /// Abort the run's process at this step, as libtorch does on some internal
    /// errors: only that run's worker goes down.
    pub abort_at: Option<u64>,
    /// Kill the run's process with SIGSEGV at this step (a crash in native code).
    pub segfault_at: Option<u64>,
    /// Sleep so that steps take `factor` times as long from `at` on.
    pub slowdown: Option<AtFactor>,
    /// Perturb the weights of one replica at a step.
    pub nondeterminism: Option<Nondeterminism>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LrSpike {
    pub at: u64,
    pub factor: f64,
    pub steps: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtFactor {
    pub at: u64,
    pub factor: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Nondeterminism {
    pub at: u64,
    /// Which replica (1-based) is perturbed; the others stay bitwise equal.
    pub replica: usize,
}

impl FaultConfig {
    /// Whether step `step` is at or after an optional onset.
    pub fn active(at: Option<u64>, step: u64) -> bool {
        at.is_some_and(|at| step >= at)
    }

    pub fn lr_factor(&self, step: u64) -> f64 {
        match self.lr_spike {
            Some(s) if step >= s.at && step < s.at + s.steps => s.factor,
            _ => 1.0,
        }
    }

    pub fn grad_factor(&self, step: u64) -> f64 {
        match self.grad_scale {
            Some(g) if step >= g.at => g.factor,
            _ => 1.0,
        }
    }

    pub fn slowdown_factor(&self, step: u64) -> f64 {
        match self.slowdown {
            Some(s) if step >= s.at => s.factor,
            _ => 1.0,
        }
    }

    pub fn any(&self) -> bool {
        *self != FaultConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_apply_only_inside_their_window() {
        let f = FaultConfig {
            lr_spike: Some(LrSpike { at: 10, factor: 50.0, steps: 3 }),
            grad_scale: Some(AtFactor { at: 5, factor: 100.0 }),
            slowdown: Some(AtFactor { at: 7, factor: 3.0 }),
            ..Default::default()
        };
        assert_eq!(f.lr_factor(9), 1.0);
        assert_eq!(f.lr_factor(10), 50.0);
        assert_eq!(f.lr_factor(12), 50.0);
        assert_eq!(f.lr_factor(13), 1.0);
        assert_eq!(f.grad_factor(4), 1.0);
        assert_eq!(f.grad_factor(500), 100.0);
        assert_eq!(f.slowdown_factor(6), 1.0);
        assert_eq!(f.slowdown_factor(7), 3.0);
        assert!(f.any());
        assert!(!FaultConfig::default().any());
        assert!(FaultConfig::active(Some(3), 3) && !FaultConfig::active(Some(3), 2) && !FaultConfig::active(None, 9));
    }
}
