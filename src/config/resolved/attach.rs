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
    /// A document rewritten whole as the job goes (Hugging Face `trainer_state.json`).
    TrainerState(PathBuf),
}

impl AttachSource {
    /// The path followed.
    pub fn path(&self) -> &std::path::Path {
        match self {
            AttachSource::Stream(MetricsSource::File(p) | MetricsSource::TensorBoard(p) | MetricsSource::Glob(p)) | AttachSource::TrainerState(p) => p,
            AttachSource::Stream(MetricsSource::Stdout) => std::path::Path::new("stdout"),
        }
    }
}
