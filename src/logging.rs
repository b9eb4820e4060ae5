//! Logs go to a file through a non-blocking writer, never to the terminal a live
//! display or a headless summary is using. `RLMON_LOG` sets the filter (default info).
use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

use crate::error::{Result, RlmonError};

/// Starts file logging; keep the guard alive until exit so the last lines are flushed.
pub fn to_file(path: &Path) -> Result<WorkerGuard> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| RlmonError::Io { path: path.to_path_buf(), source })?;
    let (writer, guard) = tracing_appender::non_blocking(file);
    let filter = EnvFilter::try_from_env("RLMON_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    // A second session in the same process (tests) keeps the first subscriber.
    let _ = tracing_subscriber::fmt().with_writer(writer).with_ansi(false).with_env_filter(filter).try_init();
    Ok(guard)
}
