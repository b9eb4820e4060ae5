//! The one training loop. A built-in workload implements `Trainer` (how to build its
//! model and what one step does and measures); `drive` does everything around the
//! steps the same way for all of them: thread count, device, determinism, seeded
//! init, faults, the `started` event, cancellation, timing, the learning-rate
//! schedule, metric emission and failure reasons (errors, NaN loss, panics).
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use anyhow::Result;
use tch::Device;

use crate::common::schedule;
use crate::context::RunContext;
use crate::faults::FaultInjector;
use crate::{determinism, device};
use rlmon::config::OptimizerConfig;
use rlmon::metrics::catalog;
use rlmon::metrics::MetricName;
use rlmon::session::RunOutcome;

/// Where and how a run trains, as the driver resolved it.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub device: Device,
    pub seed: u64,
    /// Bitwise-repeatable kernels (see `determinism`).
    pub deterministic: bool,
}

/// What the driver passes to a step's metrics besides the trainer's own measurements.
#[derive(Debug, Clone, Copy)]
pub struct StepTiming {
    /// The learning rate the step used (schedule and faults applied).
    pub lr: f64,
    /// Wall time of the step, including any slowdown fault.
    pub step_time_s: f64,
}

/// A built-in workload's training, as `drive` runs it.
pub trait Trainer: Sized {
    /// The workload's settings from the run's config.
    type Config;
    /// What `prepare` produced (data read before the model exists).
    type Prepared;
    /// What one step measured.
    type Stats;

    /// Work that needs no parameters (reading data), done outside the seeded-init
    /// lock so that slow I/O does not hold up other runs' initialisation.
    fn prepare(cfg: &Self::Config, setup: &Setup) -> Result<Self::Prepared>;

    /// Builds parameters and optimizer. The driver holds the seeded-init lock, so
    /// every draw from libtorch's generator here is fixed by the seed.
    fn setup(cfg: &Self::Config, prepared: Self::Prepared, setup: &Setup) -> Result<Self>;

    /// Work after `started` and before step 1 (rlhf's pretraining); it checks
    /// `cancelled` as often as a step would. Returns false when cancelled part-way.
    fn before_steps(&mut self, _cancelled: &dyn Fn() -> bool) -> Result<bool> {
        Ok(true)
    }

    /// The optimizer settings the learning-rate schedule follows.
    fn optimizer(&self) -> &OptimizerConfig;

    /// One optimisation step (1-based) at learning rate `lr`, with the run's faults.
    fn step(&mut self, step: u64, lr: f64, faults: &FaultInjector) -> Self::Stats;

    /// The step's loss; a non-finite loss fails the run.
    fn loss(stats: &Self::Stats) -> f64;

    /// The step's metrics under their catalog names, in the order they are emitted.
    fn metrics(&self, stats: Self::Stats, timing: StepTiming) -> Vec<(MetricName, f64)>;

    /// Called once when the loop ends without a panic (finished, cancelled or
    /// failed). Dropping the trainer frees its tensors; this is for anything more.
    fn teardown(&mut self) {}
}

/// Runs `T` to its outcome; errors and panics (CUDA out of memory arrives as one)
/// become the failure reason, so a broken run never takes rlmon down.
pub fn drive<T: Trainer>(ctx: &RunContext, cfg: &T::Config) -> RunOutcome {
    match catch_unwind(AssertUnwindSafe(|| train::<T>(ctx, cfg))) {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => RunOutcome::Failed(format!("{e:#}")),
        Err(payload) => RunOutcome::Failed(panic_reason(payload.as_ref())),
    }
}

fn train<T: Trainer>(ctx: &RunContext, cfg: &T::Config) -> Result<RunOutcome> {
    // OpenMP's thread count is per calling thread: set it on the training thread.
    tch::set_num_threads(ctx.threads as i32);
    let device = match device::resolve(ctx.config.device) {
        Ok(d) => d,
        Err(reason) => return Ok(RunOutcome::Failed(reason)),
    };
    let setup = Setup { device, seed: ctx.config.seed, deterministic: ctx.config.deterministic };
    determinism::apply(setup.deterministic);
    let prepared = T::prepare(cfg, &setup)?;
    let mut trainer = {
        let _init = determinism::seeded_init(setup.seed);
        T::setup(cfg, prepared, &setup)?
    };
    let outcome = steps(ctx, &mut trainer, device);
    trainer.teardown();
    outcome
}

/// From the `started` event to the run's end.
fn steps<T: Trainer>(ctx: &RunContext, trainer: &mut T, device: Device) -> Result<RunOutcome> {
    let mut faults = FaultInjector::new(&ctx.config);
    let resident = Resident::open();
    if ctx.started(device::name(device)).is_err() {
        return Ok(RunOutcome::Cancelled);
    }
    if !trainer.before_steps(&|| ctx.is_cancelled())? {
        return Ok(RunOutcome::Cancelled);
    }
    let total = ctx.config.steps;
    for step in 1..=total {
        if ctx.is_cancelled() {
            return Ok(RunOutcome::Cancelled);
        }
        let t0 = Instant::now();
        let lr = faults.lr(step, schedule::lr_at(trainer.optimizer(), step, total));
        let stats = trainer.step(step, lr, &faults);
        faults.after_step(step, device, t0.elapsed());
        let timing = StepTiming { lr, step_time_s: t0.elapsed().as_secs_f64() };
        let loss = T::loss(&stats);
        let mut metrics = trainer.metrics(stats, timing);
        // The run's own process memory: what the memory-leak detector watches for a
        // built-in run on the CPU (NVML attributes its GPU memory to it on CUDA).
        if let Some(rss) = resident.bytes() {
            metrics.push((catalog::MEM_RSS_BYTES.into(), rss));
        }
        if ctx.emit(step, metrics).is_err() {
            return Ok(RunOutcome::Cancelled);
        }
        if !loss.is_finite() {
            return Ok(RunOutcome::Failed(format!("loss became {loss} at step {step}")));
        }
    }
    Ok(RunOutcome::Finished)
}

pub use rlmon::error::panic_reason;

/// This process's resident memory, from `/proc/self/statm` (pages).
/// Kept open across steps, and the page size read once: every step reads it.
struct Resident {
    statm: Option<std::fs::File>,
    page_bytes: f64,
}

impl Resident {
    fn open() -> Self {
        // SAFETY: sysconf only reads a system constant.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        Resident { statm: std::fs::File::open("/proc/self/statm").ok(), page_bytes: page.max(0) as f64 }
    }

    fn bytes(&self) -> Option<f64> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 128];
        // procfs answers each read from offset 0 afresh.
        let n = self.statm.as_ref()?.read_at(&mut buf, 0).ok()?;
        let pages: f64 = std::str::from_utf8(&buf[..n]).ok()?.split_whitespace().nth(1)?.parse().ok()?;
        (self.page_bytes > 0.0).then(|| pages * self.page_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlmon::config::{SessionConfig, DEFAULT_OPTIMIZER};
    use rlmon::metrics::catalog;
    use rlmon::workload::protocol::{Decoder, Message};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    /// What a scripted trainer does, and what the driver did to it.
    #[derive(Default)]
    struct Script {
        fail_setup: bool,
        cancel_before_steps: bool,
        nan_at: Option<u64>,
        panic_at: Option<u64>,
        /// Cancels the run from inside this step (as a user's key would, mid-step).
        cancel_at: Option<u64>,
        cancel: Arc<AtomicBool>,
        steps_seen: Mutex<Vec<(u64, f64)>>,
        torn_down: Mutex<bool>,
    }

    struct Scripted {
        script: Arc<Script>,
        optimizer: OptimizerConfig,
    }

    impl Trainer for Scripted {
        type Config = Arc<Script>;
        type Prepared = ();
        type Stats = f64;

        fn prepare(_: &Arc<Script>, _: &Setup) -> Result<()> {
            Ok(())
        }

        fn setup(script: &Arc<Script>, _: (), _: &Setup) -> Result<Self> {
            anyhow::ensure!(!script.fail_setup, "no model today");
            let optimizer = OptimizerConfig { lr: 1.0, warmup_steps: 2, ..DEFAULT_OPTIMIZER };
            Ok(Scripted { script: script.clone(), optimizer })
        }

        fn before_steps(&mut self, cancelled: &dyn Fn() -> bool) -> Result<bool> {
            if self.script.cancel_before_steps {
                self.script.cancel.store(true, Ordering::Relaxed);
            }
            Ok(!cancelled())
        }

        fn optimizer(&self) -> &OptimizerConfig {
            &self.optimizer
        }

        fn step(&mut self, step: u64, lr: f64, _: &FaultInjector) -> f64 {
            self.script.steps_seen.lock().unwrap().push((step, lr));
            if self.script.panic_at == Some(step) {
                panic!("boom at {step}");
            }
            if self.script.cancel_at == Some(step) {
                self.script.cancel.store(true, Ordering::Relaxed);
            }
            if self.script.nan_at == Some(step) { f64::NAN } else { 1.0 / step as f64 }
        }

        fn loss(loss: &f64) -> f64 {
            *loss
        }

        fn metrics(&self, loss: f64, timing: StepTiming) -> Vec<(MetricName, f64)> {
            vec![(catalog::LOSS.into(), loss), (catalog::LR.into(), timing.lr)]
        }

        fn teardown(&mut self) {
            *self.script.torn_down.lock().unwrap() = true;
        }
    }

    /// Drives a scripted 4-step run on the CPU; returns its outcome and the events sent.
    /// What the driver wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn drive_script(script: &Arc<Script>) -> (RunOutcome, Vec<Message>) {
        let text = "[[run]]\nname = \"a\"\nworkload = \"lm\"\ndevice = \"cpu\"\nsteps = 4\nintra_op_threads = 1\n";
        let config = SessionConfig::from_str(text, std::path::Path::new("d.toml")).unwrap().runs.remove(0);
        let out = Captured::default();
        let ctx = RunContext::new(config, 1, Box::new(out.clone()), script.cancel.clone());
        let outcome = drive::<Scripted>(&ctx, script);
        let events = Decoder::default().push(&out.0.lock().unwrap()).unwrap();
        (outcome, events)
    }

    fn metric_steps(events: &[Message]) -> Vec<u64> {
        events.iter().filter_map(|e| if let Message::Metrics { step, .. } = e { Some(*step) } else { None }).collect()
    }

    #[test]
    fn a_run_starts_then_emits_every_step_at_the_scheduled_rate() {
        let script = Arc::new(Script::default());
        let (outcome, events) = drive_script(&script);
        assert_eq!(outcome, RunOutcome::Finished);
        assert!(matches!(&events[0], Message::Started { device, threads: 1, .. } if device == "cpu"));
        assert_eq!(metric_steps(&events), [1, 2, 3, 4]);
        let lrs: Vec<f64> = script.steps_seen.lock().unwrap().iter().map(|(_, lr)| *lr).collect();
        assert_eq!(lrs[..2], [0.5, 1.0], "linear warm-up over 2 steps");
        assert!(lrs[3] < lrs[2] && lrs[2] < 1.0, "then the cosine decay: {lrs:?}");
        let Message::Metrics { values, .. } = &events[1] else { panic!("metrics after the start") };
        assert_eq!(values[1], (MetricName::from(catalog::LR), 0.5), "the step's metrics carry the rate it used");
        assert!(*script.torn_down.lock().unwrap());
    }

    #[test]
    fn a_non_finite_loss_fails_the_run_after_its_metrics_are_sent() {
        let script = Arc::new(Script { nan_at: Some(2), ..Script::default() });
        let (outcome, events) = drive_script(&script);
        assert_eq!(outcome, RunOutcome::Failed("loss became NaN at step 2".into()));
        assert_eq!(metric_steps(&events), [1, 2]);
        assert!(*script.torn_down.lock().unwrap());
    }

    #[test]
    fn cancellation_is_seen_before_the_next_step_and_during_before_steps() {
        let script = Arc::new(Script { cancel_at: Some(2), ..Script::default() });
        let (outcome, events) = drive_script(&script);
        assert_eq!(outcome, RunOutcome::Cancelled);
        assert_eq!(metric_steps(&events), [1, 2], "the step under way finishes; no step 3");
        let script = Arc::new(Script { cancel_before_steps: true, ..Script::default() });
        let (outcome, events) = drive_script(&script);
        assert_eq!(outcome, RunOutcome::Cancelled);
        assert!(matches!(events[..], [Message::Started { .. }]), "started, then no step");
    }

    #[test]
    fn errors_and_panics_become_failure_reasons() {
        let (outcome, events) = drive_script(&Arc::new(Script { fail_setup: true, ..Script::default() }));
        assert_eq!(outcome, RunOutcome::Failed("no model today".into()));
        assert!(events.is_empty(), "no start without a model");
        let (outcome, events) = drive_script(&Arc::new(Script { panic_at: Some(3), ..Script::default() }));
        assert_eq!(outcome, RunOutcome::Failed("boom at 3".into()));
        assert_eq!(metric_steps(&events), [1, 2]);
    }

    #[test]
    fn panic_reason_keeps_the_first_line_of_torch_errors() {
        let msg = String::from("called `Result::unwrap()` on an `Err` value: Torch(\"CUDA out of memory. Tried to allocate 2.00 GiB\\nException raised from malloc at ...\")");
        assert_eq!(panic_reason(&msg), "CUDA out of memory. Tried to allocate 2.00 GiB");
        assert_eq!(panic_reason(&"plain"), "plain");
    }
}
