//! Session config: the TOML file a user writes (`raw`), checked and resolved into the
//! settings the rest of rlmon uses (this module). Every problem is reported before
//! anything starts, with file, line and column.
mod error;
pub mod faults;
mod raw;
mod resolve;
pub mod rlhf;

use std::path::{Path, PathBuf};

pub use error::ConfigError;
pub use resolve::{
    DataSource, DeviceRequest, LmConfig, ModelConfig, MoeConfig, NdtConfig, OptimizerConfig, Replica, RunConfig, Threads,
    WorkloadConfig, DEFAULT_MODEL, DEFAULT_OPTIMIZER,
};
pub use rlhf::{KlEstimator, RewardKind, RlAlgorithm, RlhfConfig};

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
}

impl SessionConfig {
    /// Parses and checks config text; `path` is used in messages and to resolve
    /// relative data paths.
    pub fn from_str(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let raw: raw::RawConfig =
            toml::from_str(text).map_err(|e| ConfigError::from_toml(path, text, &e))?;
        resolve::resolve(raw, text, path)
    }

    /// Reads and checks a config file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::unreadable(path, &e))?;
        Self::from_str(&text, path)
    }

    /// Caps every run at `max_steps` (the `--max-steps` flag).
    pub fn cap_steps(&mut self, max_steps: u64) {
        for run in &mut self.runs {
            run.steps = run.steps.min(max_steps);
        }
    }
}

/// Finds a config named on the command line: as given, else under `workloads/`
/// (also with `.toml` added), so `--config tiny` and `--config tiny.toml` work.
pub fn find_config(name: &Path) -> Result<PathBuf, ConfigError> {
    let mut candidates = vec![name.to_path_buf()];
    if name.is_relative() {
        candidates.push(Path::new("workloads").join(name));
    }
    if name.extension().is_none() {
        let with_ext: Vec<PathBuf> =
            candidates.iter().map(|p| p.with_extension("toml")).collect();
        candidates.extend(with_ext);
    }
    candidates.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        ConfigError::not_found(name, &tried)
    })
}
