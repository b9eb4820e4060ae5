//! Session config: the TOML file a user writes (`raw`), checked (`checker`) and
//! resolved per workload and table (`resolve`) into the settings the rest of rlmon
//! uses (`resolved`, re-exported here). Imports go one way: raw -> resolve ->
//! resolved. Every problem is reported before anything starts, with file, line and
//! column.
mod checker;
mod error;
mod raw;
mod resolve;
mod resolved;

use std::path::{Path, PathBuf};

pub use error::ConfigError;
pub use resolved::attach::{AttachConfig, AttachSource, RemoteRun};
pub use resolved::command::{CommandConfig, MetricsSource};
pub use resolved::faults;
pub use resolved::lm::{DataSource, LmConfig, ModelConfig, MoeConfig, NdtConfig, OptimizerConfig, DEFAULT_MODEL, DEFAULT_OPTIMIZER};
pub use resolved::rlhf::{self, KlEstimator, RewardKind, RlAlgorithm, RlhfConfig};
pub use resolved::{CriticalAction, DeviceRequest, OnCritical, PrometheusSource, Replica, RunConfig, ScrapeTarget, SessionConfig, Threads, WorkloadConfig, DEFAULT_SCRAPE_INTERVAL_S};

impl SessionConfig {
    /// Parses and checks config text; `path` is used in messages and to resolve
    /// relative data paths.
    pub fn from_str(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let raw: raw::RawConfig = toml::from_str(text).map_err(|e| ConfigError::from_toml(path, text, &e))?;
        resolve::session(raw, text, path)
    }

    /// Reads and checks a config file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::unreadable(path, &e))?;
        Self::from_str(&text, path)
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
