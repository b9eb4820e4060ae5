//! What trains. Each run is a tokio task that supervises where its points come from:
//! a built-in workload (`builtin`: the training worker `rlmon-train`, a process of its
//! own speaking `protocol`), the user's own program (`command`), or a job rlmon did
//! not start (`attach`). A failure inside a run (an error, NaN loss, an abort or a
//! crash of its process) ends that run as failed with the reason; other runs and
//! rlmon go on. The training loops themselves live in `train/src/`, the worker's
//! crate: rlmon does not link libtorch.
pub mod attach;
pub mod builtin;
pub mod client_run;
pub mod command;
pub mod protocol;
pub mod rng;
pub mod threads;

use std::time::Instant;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{RunConfig, WorkloadConfig};
use crate::session::{Event, RunId, RunOutcome};

/// Why rlmon stops a run (`on_critical`): set before the run's token is
/// cancelled, so that the run ends as stopped with the alert named.
pub type StopReason = std::sync::Arc<std::sync::OnceLock<String>>;

/// What a run's supervisor needs from the session.
pub struct RunContext {
    pub id: RunId,
    pub config: RunConfig,
    /// Intra-op threads this run may use (a built-in run's).
    pub threads: usize,
    tx: mpsc::Sender<Event>,
    cancel: CancellationToken,
    started: Instant,
    /// Where a run whose job is a process tree (command, attach) names its root.
    jobs: crate::telemetry::procs::JobPids,
    /// Set when rlmon stops the run on an alert.
    stop: StopReason,
}

impl RunContext {
    /// Seconds since the run started.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// Starts one run; the task ends after sending the run's `RunEnded` event.
/// `jobs`: where the run names its job's process, for GPU attribution; `source`:
/// the config a built-in run's worker resolves its run from.
/// `stop`: set (then `cancel` cancelled) when rlmon stops the run on an alert.
#[allow(clippy::too_many_arguments)]
pub fn spawn(id: RunId, config: RunConfig, threads: usize, tx: mpsc::Sender<Event>, cancel: CancellationToken, jobs: crate::telemetry::procs::JobPids, source: std::sync::Arc<builtin::ConfigSource>, stop: StopReason) -> JoinHandle<()> {
    tokio::spawn(async move {
        let job_over = jobs.clone();
        let ctx = RunContext { id, config, threads, tx: tx.clone(), cancel, started: Instant::now(), jobs, stop: stop.clone() };
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
            WorkloadConfig::Lm(_) | WorkloadConfig::Rlhf(_) => builtin::run(&ctx, &source).await,
        };
        // Cancelled because rlmon stopped it: stopped, with the alert named.
        let outcome = match (stop.get(), outcome) {
            (Some(reason), RunOutcome::Cancelled) => RunOutcome::Stopped(reason.clone()),
            (_, outcome) => outcome,
        };
        // The job's process id may be reused from now on.
        job_over.clear(id);
        let _ = tx.send(Event::RunEnded { run: id, outcome }).await;
    })
}

/// Sends `sig` to the job whose root process is `pid`: to its process group when
/// the process leads one of its own or its group is not rlmon's, else to the
/// process alone (never to rlmon's own group).
pub fn signal_job(pid: u32, sig: i32) -> Result<(), String> {
    let pid = i32::try_from(pid).map_err(|_| format!("no such process {pid}"))?;
    if pid <= 1 {
        return Err(format!("refusing to signal process {pid}"));
    }
    // SAFETY: getpgid and kill have no memory effects.
    let (group, own) = unsafe { (libc::getpgid(pid), libc::getpgid(0)) };
    let target = if group > 1 && group != own { -group } else { pid };
    // SAFETY: as above.
    if unsafe { libc::kill(target, sig) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().to_string())
    }
}
