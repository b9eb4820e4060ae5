//! A run attached to a job rlmon did not start (`rlmon watch --attach PATH`): what
//! it follows, and the process whose exit ends it.
use std::path::PathBuf;

use super::command::MetricsSource;

#[derive(Debug, Clone, PartialEq)]
pub struct AttachConfig {
    /// What the job writes: a metrics file or a folder of TensorBoard event files.
    pub source: AttachSource,
    /// The job's process (`--attach-pid`): its GPU use is shown, and its exit ends
    /// the run. Without it the run is followed until rlmon stops.
    pub pid: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachSource {
    /// A file appended to, or a folder of event files, as a command run reads them.
    Stream(MetricsSource),
    /// A document rewritten whole as the job goes (Hugging Face `trainer_state.json`,
    /// Sacred's `metrics.json`, a Keras history dump).
    Document(PathBuf),
    /// A run folder of rlmon's Python client (`rlmon.init`): its metrics, its
    /// alerts, and the finish record that ends the run.
    Client(PathBuf),
    /// Runs of headless rlmons on other machines (`--attach http://node3:9464/`),
    /// read from their `--serve` feed: one run, or one job whose ranks run on
    /// several machines.
    Remote(Vec<RemoteRun>),
}

/// One run of an rlmon serving on another machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteRun {
    /// The serving rlmon's base URL, as given (`http://node3:9464/`).
    pub url: String,
    /// The name the machine goes by here (`node3`): run names and telemetry.
    pub host: String,
    /// The run's name there.
    pub run: String,
    /// Whether this run also brings the machine's telemetry (one run per machine does).
    pub telemetry: bool,
}

impl AttachSource {
    /// The path followed.
    pub fn path(&self) -> &std::path::Path {
        match self {
            AttachSource::Stream(MetricsSource::File(p) | MetricsSource::TensorBoard(p) | MetricsSource::Glob(p) | MetricsSource::MlFlow(p) | MetricsSource::MlFlowStore(p) | MetricsSource::Wandb(p) | MetricsSource::WandbDir(p) | MetricsSource::Trackio { db: p, .. }) | AttachSource::Document(p) | AttachSource::Client(p) => p,
            AttachSource::Stream(MetricsSource::Stdout) => std::path::Path::new("stdout"),
            AttachSource::Stream(MetricsSource::Stderr) => std::path::Path::new("stderr"),
            AttachSource::Remote(remotes) => std::path::Path::new(remotes.first().map_or("remote", |r| r.url.as_str())),
        }
    }
}
