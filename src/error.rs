//! Errors that end a command, each mapped to the exit code users' scripts rely on:
//! 2 for bad usage or bad input, 1 for everything else that failed.
use std::path::PathBuf;

use thiserror::Error;

/// Exit code for bad usage or bad input (design.md, "Command line").
pub const EXIT_USAGE: u8 = 2;
/// Exit code for a failed run or alerts at or above --fail-on.
pub const EXIT_FAILURE: u8 = 1;

#[derive(Debug, Error)]
pub enum RlmonError {
    /// Bad input in a file: the message names file, line, column and the problem.
    #[error("{0}")]
    Config(#[from] crate::config::ConfigError),
    /// Bad usage not caught by the argument parser (an unknown theme, a missing file).
    #[error("{0}")]
    Usage(String),
    /// A recorded file (snapshot, journal) that cannot be used: truncated,
    /// corrupted, foreign or from a newer rlmon. The message says which.
    #[error("{path}: {problem}")]
    BadInput { path: PathBuf, problem: String },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// Anything else: a failure of rlmon itself or of its environment.
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl RlmonError {
    pub fn exit_code(&self) -> u8 {
        match self {
            RlmonError::Config(_) | RlmonError::Usage(_) | RlmonError::BadInput { .. } => EXIT_USAGE,
            RlmonError::Io { .. } | RlmonError::Other(_) => EXIT_FAILURE,
        }
    }
}

pub type Result<T, E = RlmonError> = std::result::Result<T, E>;

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

thread_local! {
    /// Set while [`contain_panic`] runs: the panic hook stays quiet, since the panic
    /// is turned into an error the caller reports.
    static CONTAINED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, turning a panic inside it into `Err(reason)`. For third-party code that
/// can panic on corrupt input (the Parquet reader on a damaged file): bad input gets
/// a message, never a crash.
pub fn contain_panic<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    CONTAINED.with(|c| c.set(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CONTAINED.with(|c| c.set(false));
    result.map_err(|payload| panic_reason(payload.as_ref()))
}

/// Whether the current thread is inside [`contain_panic`].
pub fn panic_contained() -> bool {
    CONTAINED.with(|c| c.get())
}
