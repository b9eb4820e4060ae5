//! What trains. Each run is a tokio task that owns one named OS thread, where the
//! training loop runs (libtorch calls block); the thread sends metric events through
//! the session's bounded channel and checks its cancellation token every step.
//! A failure inside a run (an error, NaN loss, a panic such as CUDA out of memory)
//! ends that run as failed with the reason; other runs and rlmon go on.
//!
//! `driver` is the one training loop; `lm` and `rlhf` are its `Trainer`s, built from
//! the shared model, data and schedule in `common`. `command` is the other kind of
//! run: the user's own program, whose output is read instead of a loop driven.
pub mod attach;
pub mod command;
pub mod common;
pub mod determinism;
pub mod device;
pub mod driver;
pub mod faults;
pub mod lm;
pub mod rlhf;
pub mod rng;
pub mod threads;

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
    /// Where a run whose job is a process tree (command, attach) names its root.
    jobs: crate::telemetry::procs::JobPids,
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
/// `jobs`: where the run names its job's process, for GPU attribution.
pub fn spawn(id: RunId, config: RunConfig, threads: usize, tx: mpsc::Sender<Event>, cancel: CancellationToken, jobs: crate::telemetry::procs::JobPids) -> JoinHandle<()> {
    tokio::spawn(async move {
        let job_over = jobs.clone();
        let ctx = RunContext { id, config, threads, tx: tx.clone(), cancel, started: Instant::now(), jobs };
        let outcome = match &ctx.config.workload {
            // A program of the user's: waited on here, no training thread.
            WorkloadConfig::Command(cfg) => {
                let cfg = cfg.clone();
                command::run(&ctx, &cfg).await
            }
            WorkloadConfig::Attach(cfg) => {
                let cfg = cfg.clone();
                attach::run(&ctx, &cfg).await
            }
            WorkloadConfig::Lm(_) | WorkloadConfig::Rlhf(_) => on_training_thread(ctx).await,
        };
        // The job's process id may be reused from now on.
        job_over.clear(id);
        let _ = tx.send(Event::RunEnded { run: id, outcome }).await;
    })
}

/// Runs a built-in workload on its own named thread (libtorch calls block).
async fn on_training_thread(ctx: RunContext) -> RunOutcome {
    let (done_tx, done_rx) = oneshot::channel();
    let thread_name = format!("{RUN_THREAD_PREFIX}{}", ctx.config.name);
    let spawned = std::thread::Builder::new().name(thread_name).spawn(move || {
        let _ = done_tx.send(run_workload(&ctx));
    });
    match spawned {
        Ok(_) => done_rx.await.unwrap_or_else(|_| RunOutcome::Failed("training thread ended without a result".into())),
        Err(e) => RunOutcome::Failed(format!("cannot start training thread: {e}")),
    }
}

/// The built-in workloads: each is a `driver::Trainer`, run by the one driver.
fn run_workload(ctx: &RunContext) -> RunOutcome {
    match &ctx.config.workload {
        WorkloadConfig::Lm(cfg) => driver::drive::<lm::LmTrainer>(ctx, cfg),
        WorkloadConfig::Rlhf(cfg) => driver::drive::<rlhf::trainer::RlhfTrainer>(ctx, cfg),
        WorkloadConfig::Command(_) | WorkloadConfig::Attach(_) => RunOutcome::Failed("a command or attached run has no training loop".into()),
    }
}
