//! The settings the rest of rlmon uses: a config file checked and with every
//! default filled in. Plain data; `resolve` builds them from the file.
pub mod attach;
pub mod command;
pub mod faults;
pub mod lm;
pub mod rlhf;

use std::path::PathBuf;

use crate::health::HealthConfig;
use attach::AttachConfig;
use command::CommandConfig;
use faults::FaultConfig;
use lm::LmConfig;
use rlhf::RlhfConfig;

/// A resolved session config.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Session name, used in the header and in snapshot file names.
    pub name: String,
    /// Where the config was read from.
    pub path: PathBuf,
    /// The config text as written, kept for the snapshot's metadata.
    pub text: String,
    pub runs: Vec<RunConfig>,
    /// A snapshot to compare against live (relative to the config's folder).
    pub baseline: Option<PathBuf>,
    /// `[[telemetry.scrape]]`: exporters on other machines, read like local telemetry.
    pub scrape: Vec<ScrapeTarget>,
    /// `[telemetry.prometheus]`: a central Prometheus read for the same figures.
    pub prometheus: Option<PrometheusSource>,
    /// `[[notify]]`: where alerts are sent (`--notify` adds more).
    pub notify: Vec<crate::notify::Target>,
}

/// The telemetry settings a config resolves into are telemetry's own types.
pub use crate::telemetry::prometheus::PrometheusSource;
pub use crate::telemetry::scrape::ScrapeTarget;

/// Seconds of history read from Prometheus at start when the config gives none.
pub const DEFAULT_PROMETHEUS_HISTORY_S: f64 = 300.0;

/// Seconds between scrapes when the config gives none.
pub const DEFAULT_SCRAPE_INTERVAL_S: f64 = 2.0;

impl SessionConfig {
    /// Caps every built-in run at `max_steps` (the `--max-steps` flag). A command
    /// run's program decides its own steps, so its total is left as given.
    pub fn cap_steps(&mut self, max_steps: u64) {
        for run in self.runs.iter_mut().filter(|r| !matches!(r.workload, WorkloadConfig::Command(_) | WorkloadConfig::Attach(_))) {
            run.steps = run.steps.min(max_steps);
        }
    }
}

/// One run of a session, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    pub name: String,
    pub device: DeviceRequest,
    pub seed: u64,
    /// Steps to train; for a command run the total it was given, 0 when unknown.
    pub steps: u64,
    pub threads: Threads,
    pub workload: WorkloadConfig,
    /// Set when this run is one of several copies of a `[[run]]` (`replicas = N`).
    pub replica: Option<Replica>,
    /// Bitwise-repeatable settings (see `workload::determinism`).
    pub deterministic: bool,
    pub faults: FaultConfig,
    /// Detector settings: defaults with the config's `[run.health]` overrides.
    pub health: HealthConfig,
    /// Hardware price per hour, for cost per 1,000 samples and cost so far.
    pub price_per_hour: Option<f64>,
    /// What rlmon does to the run on a critical alert (`on_critical`); off when `None`.
    pub on_critical: Option<OnCritical>,
}

/// This run's place among the copies of one `[[run]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    /// The `[[run]]` name the copies share; runs are named `{of}#{index}`.
    pub of: String,
    /// 1-based.
    pub index: usize,
    pub count: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadConfig {
    Lm(LmConfig),
    Rlhf(RlhfConfig),
    Command(CommandConfig),
    /// Following a job rlmon did not start (`watch --attach`); never in a config file.
    Attach(AttachConfig),
}

impl WorkloadConfig {
    /// The workload kind as written in the config (`workload = "lm"`).
    pub fn kind(&self) -> &'static str {
        match self {
            WorkloadConfig::Lm(_) => "lm",
            WorkloadConfig::Rlhf(_) => "rlhf",
            WorkloadConfig::Command(_) => "command",
            WorkloadConfig::Attach(_) => "attach",
        }
    }
}

/// Responses (rlhf) or sequences (lm) per step when `batch_size` is left out.
pub const DEFAULT_BATCH_SIZE: u64 = 16;

/// Which device a run asked for; `Auto` picks CUDA when it is available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceRequest {
    Auto,
    Cpu,
    Cuda(usize),
}

impl DeviceRequest {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(DeviceRequest::Auto),
            "cpu" => Some(DeviceRequest::Cpu),
            "cuda" => Some(DeviceRequest::Cuda(0)),
            _ => s.strip_prefix("cuda:")?.parse().ok().map(DeviceRequest::Cuda),
        }
    }
}

impl std::fmt::Display for DeviceRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceRequest::Auto => f.write_str("auto"),
            DeviceRequest::Cpu => f.write_str("cpu"),
            DeviceRequest::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

/// Intra-op (OpenMP) threads of a run's training loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// Chosen at start from the core count and the number of runs (see `workload::threads`).
    Auto,
    Fixed(usize),
}

/// What rlmon does to a run on an alert it is armed for (`on_critical`).
#[derive(Debug, Clone, PartialEq)]
pub struct OnCritical {
    pub action: CriticalAction,
    /// The kinds acted on, at warn or critical; `None`: every kind, at critical.
    pub kinds: Option<Vec<crate::health::AlertKind>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CriticalAction {
    /// SIGTERM to the job's process group, SIGKILL after the grace period; a
    /// built-in run stops itself. The run ends as stopped.
    Stop,
    /// This signal to the job's process group (the trainer may checkpoint); the
    /// run goes on.
    Signal(i32),
}

impl OnCritical {
    /// Whether an alert of this kind and severity sets the action off.
    pub fn acts_on(&self, kind: crate::health::AlertKind, severity: crate::health::Severity) -> bool {
        use crate::health::Severity;
        match &self.kinds {
            None => severity == Severity::Critical,
            Some(kinds) => kinds.contains(&kind) && severity >= Severity::Warn,
        }
    }

    /// `stop`, `SIGUSR1`, `stop on stalled, nonfinite`: for the header and the log.
    pub fn describe(&self) -> String {
        let action = match self.action {
            CriticalAction::Stop => "stop".to_owned(),
            CriticalAction::Signal(sig) => crate::workload::command::stream::signal_name(sig).map_or_else(|| format!("signal {sig}"), str::to_owned),
        };
        match &self.kinds {
            None => action,
            Some(k) => format!("{action} on {}", k.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")),
        }
    }
}
