//! What trains. Each run is a tokio task that owns one named OS thread, where the
//! training loop runs (libtorch calls block); the thread sends metric events through
//! the session's bounded channel and checks its cancellation token every step.
//! A failure inside a run (an error, NaN loss, a panic such as CUDA out of memory)
//! ends that run as failed with the reason; other runs and rlmon go on.
pub mod determinism;
pub mod device;
pub mod faults;
pub mod lm;
pub mod rlhf;
pub mod rng;
pub mod threads;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{RunConfig, WorkloadConfig};
use crate::metrics::MetricName;
use crate::session::{Event, RunId, RunOutcome};

/// Training threads are named `rlmon-run:<name>`; the panic hook recognises them.
pub const RUN_THREAD_PREFIX: &str = "rlmon-run:";

/// What a training loop needs from the session.
pub struct RunContext {
    pub id: RunId,
    pub config: RunConfig,
    /// Intra-op threads this run may use.
    pub threads: usize,
    tx: mpsc::Sender<Event>,
    cancel: CancellationToken,
    started: Instant,
}

/// The session stopped listening (rlmon is shutting down): stop training.
#[derive(Debug)]
pub struct Detached;

impl RunContext {
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Seconds since the run started.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Announces the device the run trains on.
    pub fn started(&self, device: String) -> Result<(), Detached> {
        self.send(Event::RunStarted { run: self.id, device, threads: self.threads })
    }

    /// Sends one step's metrics. Blocks only while the channel is full, which the
    /// hub drains continuously.
    pub fn emit(&self, step: u64, values: Vec<(MetricName, f64)>) -> Result<(), Detached> {
        self.send(Event::Metrics { run: self.id, step, time_s: self.elapsed_s(), values })
    }

    fn send(&self, event: Event) -> Result<(), Detached> {
        self.tx.blocking_send(event).map_err(|_| Detached)
    }
}

/// Starts one run; the task ends after sending the run's `RunEnded` event.
pub fn spawn(id: RunId, config: RunConfig, threads: usize, tx: mpsc::Sender<Event>, cancel: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let (done_tx, done_rx) = oneshot::channel();
        let thread_name = format!("{RUN_THREAD_PREFIX}{}", config.name);
        let ctx = RunContext { id, config, threads, tx: tx.clone(), cancel, started: Instant::now() };
        let spawned = std::thread::Builder::new().name(thread_name).spawn(move || {
            let outcome = match catch_unwind(AssertUnwindSafe(|| run_workload(&ctx))) {
                Ok(outcome) => outcome,
                Err(payload) => RunOutcome::Failed(panic_reason(payload.as_ref())),
            };
            let _ = done_tx.send(outcome);
        });
        let outcome = match spawned {
            Ok(_) => done_rx.await.unwrap_or_else(|_| RunOutcome::Failed("training thread ended without a result".into())),
            Err(e) => RunOutcome::Failed(format!("cannot start training thread: {e}")),
        };
        let _ = tx.send(Event::RunEnded { run: id, outcome }).await;
    })
}

fn run_workload(ctx: &RunContext) -> RunOutcome {
    let result = match &ctx.config.workload {
        WorkloadConfig::Lm(lm_config) => lm::train(ctx, lm_config),
        WorkloadConfig::Rlhf(rlhf_config) => rlhf::train(ctx, rlhf_config),
    };
    match result {
        Ok(outcome) => outcome,
        Err(e) => RunOutcome::Failed(format!("{e:#}")),
    }
}

/// A one-line reason from a panic payload. libtorch errors arrive as panics whose
/// message carries a C++ backtrace: keep the first line of the error itself.
pub fn panic_reason(payload: &(dyn std::any::Any + Send)) -> String {
    let raw = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic with a non-text payload".into());
    let raw = raw.strip_prefix("called `Result::unwrap()` on an `Err` value: ").unwrap_or(&raw);
    // The error text may arrive Debug-escaped, with its line breaks as `\n`.
    let first = raw.split(['\n']).flat_map(|l| l.split("\\n")).map(str::trim).find(|l| !l.is_empty()).unwrap_or("panic");
    let first = first.trim_start_matches("Torch(\"").trim_end_matches("\")");
    const MAX: usize = 240;
    if first.chars().count() > MAX {
        format!("{}…", first.chars().take(MAX).collect::<String>())
    } else {
        first.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_reason_keeps_the_first_line_of_torch_errors() {
        let msg = String::from("called `Result::unwrap()` on an `Err` value: Torch(\"CUDA out of memory. Tried to allocate 2.00 GiB\\nException raised from malloc at ...\")");
        assert_eq!(panic_reason(&msg), "CUDA out of memory. Tried to allocate 2.00 GiB");
        assert_eq!(panic_reason(&"plain"), "plain");
    }
}
