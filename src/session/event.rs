//! What producers send to the hub. Events own their data; producers never share
//! state with views.
use serde::{Deserialize, Serialize};

use crate::metrics::MetricName;

/// Index of a run in the session's config order.
pub type RunId = usize;

/// The device an attached run shows (the runs pane's device column): a job rlmon
/// follows but did not start, local (`--attach PATH`) or remote (`--attach http://`).
pub const ATTACHED_DEVICE: &str = "attached";

/// Whether `device` is one rlmon's own worker trains on (`cpu`, `cuda:0`, `mps`),
/// as opposed to a job it follows (`external`, `attached`).
pub fn is_torch_device(device: &str) -> bool {
    device == "cpu" || device == "mps" || device == "cuda" || device.starts_with("cuda:")
}

/// Serializable so the recorder can journal every event as it arrives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// A run's training loop is up: device chosen, model built.
    RunStarted { run: RunId, device: String, threads: usize },
    /// The metrics of one step of one run.
    Metrics { run: RunId, step: u64, time_s: f64, values: Vec<(MetricName, f64)> },
    /// A run stopped, for good.
    RunEnded { run: RunId, outcome: RunOutcome },
    /// One telemetry sample (GPU and host), `time_s` since session start.
    Telemetry { time_s: f64, values: Vec<(MetricName, f64)> },
    /// Whether GPU telemetry works, and why not.
    GpuStatus(GpuStatus),
    /// A line for the events pane / stderr: lifecycle, warnings, child output.
    Log { run: Option<RunId>, level: LogLevel, message: String },
    /// An alert raised outside the runs' own detectors (a live run held against a
    /// baseline session); journalled like any event so a replay raises it again.
    Alert { run: Option<RunId>, alert: crate::health::Alert },
    /// The job behind a run restarted from a checkpoint: its steps went back to
    /// `at_step`, and the `discarded` steps logged from there on are replaced by
    /// the ones that follow. (Journals encode variants by position: new ones go last.)
    Resumed { run: RunId, at_step: u64, discarded: u64 },
    /// The metrics of one step of one rank of a job of several processes (run
    /// `job`): the rank's own run, `{job}/rank{rank}`, is made on its first point.
    RankMetrics { job: RunId, rank: u32, step: u64, time_s: f64, values: Vec<(MetricName, f64)> },
    /// Rank `rank` of job `job` restarted from a checkpoint: `Resumed` for the
    /// rank's own run; the job's other ranks keep their points. Last of the
    /// variants: journals number them.
    RankResumed { job: RunId, rank: u32, at_step: u64, discarded: u64 },
}

/// The name of rank `rank`'s run under job `job`.
pub fn rank_run_name(job: &str, rank: u32) -> String {
    format!("{job}/rank{rank}")
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunOutcome {
    Finished,
    Failed(String),
    Cancelled,
    /// Stopped by rlmon (`on_critical`), with the alert that stopped it. Last:
    /// journals number the variants.
    Stopped(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum GpuStatus {
    /// Not probed yet.
    Unknown,
    /// NVML works; one entry per GPU.
    Available { driver: String, gpus: Vec<GpuInfo> },
    /// No GPU telemetry, with the reason (no driver, no device, ...).
    Unavailable { reason: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    pub index: u32,
    pub name: String,
    pub mem_total_bytes: u64,
}
