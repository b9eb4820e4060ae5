//! Applies `[run.faults]` to a live training loop. The knobs act on real tensors
//! (learning rate, loss, gradients, weights, held memory) or real time (sleeps);
//! nothing is faked in the metrics. Workload-specific knobs (KL coefficient, reward,
//! router) are read by their workloads from the same `FaultConfig`.
use std::time::Duration;

use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

use rlmon::config::faults::FaultConfig;
use rlmon::config::RunConfig;

/// How much the perturbed replica's weights are scaled: small enough to look like
/// float noise at first, large enough to grow into a visible difference.
const PERTURB_SCALE: f64 = 1.0 + 1e-3;

pub struct FaultInjector {
    pub cfg: FaultConfig,
    /// This run is the replica that `nondeterminism` perturbs.
    perturbed_replica: bool,
    /// Tensors held on purpose by `memory_leak_mb_per_step`.
    leaked: Vec<Tensor>,
}

impl FaultInjector {
    pub fn new(run: &RunConfig) -> Self {
        let perturbed_replica = match (&run.faults.nondeterminism, &run.replica) {
            (Some(n), Some(r)) => n.replica == r.index,
            _ => false,
        };
        FaultInjector { cfg: run.faults, perturbed_replica, leaked: Vec::new() }
    }

    #[cfg(test)]
    /// No faults (tests and tools that drive a trainer directly).
    pub fn none() -> Self {
        FaultInjector { cfg: FaultConfig::default(), perturbed_replica: false, leaked: Vec::new() }
    }

    /// The learning rate after an `lr_spike`.
    pub fn lr(&self, step: u64, lr: f64) -> f64 {
        lr * self.cfg.lr_factor(step)
    }

    /// The loss to back-propagate: NaN from `nan_at` on.
    pub fn loss(&self, step: u64, loss: Tensor) -> Tensor {
        if FaultConfig::active(self.cfg.nan_at, step) {
            loss * f64::NAN
        } else {
            loss
        }
    }

    /// Scales the gradients in place (before clipping measures them).
    pub fn scale_gradients(&self, step: u64, vs: &VarStore) {
        let factor = self.cfg.grad_factor(step);
        if factor == 1.0 {
            return;
        }
        tch::no_grad(|| {
            for v in vs.trainable_variables() {
                let mut g = v.grad();
                if g.defined() {
                    let _ = g.g_mul_scalar_(factor);
                }
            }
        });
    }

    /// Scales the weights of the perturbed replica once, at the onset step.
    pub fn perturb_weights(&self, step: u64, vs: &VarStore) {
        let Some(n) = self.cfg.nondeterminism else { return };
        if !self.perturbed_replica || step != n.at {
            return;
        }
        tch::no_grad(|| {
            for mut v in vs.trainable_variables() {
                let _ = v.g_mul_scalar_(PERTURB_SCALE);
            }
        });
    }

    /// End-of-step faults: held memory and slow steps. `step_time` is the step's own
    /// duration; the sleep stretches it to `factor` times.
    pub fn after_step(&mut self, step: u64, device: Device, step_time: Duration) {
        if self.cfg.oom_at == Some(step) {
            // 2^50 floats (4 PiB): no device has it, so libtorch raises its own
            // out-of-memory error, which ends this run as a real one would.
            let _impossible = Tensor::ones([1i64 << 50], (Kind::Float, device));
        }
        if self.cfg.abort_at == Some(step) {
            eprintln!("rlmon fault: abort_at = {step}: aborting the training process");
            std::process::abort();
        }
        if self.cfg.segfault_at == Some(step) {
            eprintln!("rlmon fault: segfault_at = {step}: raising SIGSEGV in the training process");
            // The default action, as for a real fault: Rust's own handler (stack
            // overflow detection) would let a raised, not faulted, SIGSEGV pass.
            // SAFETY: resetting a handler and raising a signal touch no Rust memory.
            unsafe {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
                libc::raise(libc::SIGSEGV);
            }
        }
        if let Some(mb) = self.cfg.memory_leak_mb_per_step {
            let floats = (mb * 1024.0 * 1024.0 / 4.0) as i64;
            // Ones, not zeros: the pages must be written to count as used memory.
            self.leaked.push(Tensor::ones([floats.max(1)], (Kind::Float, device)));
        }
        let factor = self.cfg.slowdown_factor(step);
        if factor > 1.0 {
            std::thread::sleep(step_time.mul_f64(factor - 1.0));
        }
    }

    #[cfg(test)]
    /// Bytes held by the memory-leak fault so far.
    pub fn leaked_bytes(&self) -> u64 {
        self.leaked.iter().map(|t| t.numel() as u64 * 4).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlmon::config::faults::{AtFactor, Nondeterminism};
    use rlmon::config::SessionConfig;
    use std::path::Path;

    fn run_config(faults: &str) -> Vec<RunConfig> {
        let text = format!("[[run]]\nname = \"a\"\nworkload = \"lm\"\nsteps = 10\nreplicas = 2\n[run.faults]\n{faults}\n");
        SessionConfig::from_str(&text, Path::new("t.toml")).unwrap().runs
    }

    #[test]
    fn nan_fault_makes_the_loss_nan_from_its_step() {
        let runs = run_config("nan_at = 3");
        let f = FaultInjector::new(&runs[0]);
        assert!(f.loss(2, Tensor::from(1.5)).double_value(&[]).is_finite());
        assert!(f.loss(3, Tensor::from(1.5)).double_value(&[]).is_nan());
    }

    #[test]
    fn gradient_and_weight_faults_change_the_tensors() {
        let vs = VarStore::new(Device::Cpu);
        let w = vs.root().ones("w", &[4]);
        (&w * 2.0).sum(Kind::Float).backward();
        let mut runs = run_config("nondeterminism = { at = 5 }");
        runs[1].faults.grad_scale = Some(AtFactor { at: 1, factor: 10.0 });
        assert_eq!(runs[1].faults.nondeterminism, Some(Nondeterminism { at: 5, replica: 2 }));
        let first = FaultInjector::new(&runs[0]);
        let second = FaultInjector::new(&runs[1]);
        second.scale_gradients(1, &vs);
        assert_eq!(w.grad().double_value(&[0]), 20.0);
        first.perturb_weights(5, &vs);
        assert_eq!(w.double_value(&[0]), 1.0, "replica 1 is left alone");
        second.perturb_weights(4, &vs);
        assert_eq!(w.double_value(&[0]), 1.0, "not before the onset");
        second.perturb_weights(5, &vs);
        assert!((w.double_value(&[0]) - PERTURB_SCALE).abs() < 1e-6);
    }

    #[test]
    fn memory_leak_holds_memory_every_step() {
        let mut f = FaultInjector::new(&run_config("memory_leak_mb_per_step = 1.0")[0]);
        for step in 1..=3 {
            f.after_step(step, Device::Cpu, Duration::ZERO);
        }
        assert_eq!(f.leaked_bytes(), 3 * 1024 * 1024);
    }
}
