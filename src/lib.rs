//! rlmon: a terminal monitor for ML training runs.
//!
//! Layout, by concern:
//! - `cli`, `config`: what the user asked for;
//! - `workload`: what trains: each run's supervisor (the training loops run in the
//!   worker executable `rlmon-train`, built from `train/src/`; rlmon itself does not
//!   link libtorch);
//! - `telemetry`: GPU and host sampling;
//! - `session`: events, the hub and the state views read;
//! - `metrics`: metric names and the math over series;
//! - `health`: detectors and run-to-run divergence (pure logic);
//! - `ingest`: parsers for metrics written by other programs (JSONL);
//! - `record`: the session journal, Parquet snapshots, and recovery;
//! - `report`: headless progress and summaries; `ui`: the terminal interface;
//! - `app`: one module per command, wiring the above together;
//! - `failpoint`: faults injected on purpose by rlmon's reliability tests.
pub mod app;
pub mod cli;
pub mod config;
pub mod error;
pub mod failpoint;
pub mod fuzzing;
pub mod health;
pub mod ingest;
pub mod logging;
pub mod metrics;
pub mod notify;
pub mod record;
pub mod report;
pub mod serve;
pub mod session;
pub mod telemetry;
pub mod ui;
pub mod workload;

#[cfg(test)]
mod test_rng;

use clap::CommandFactory;

/// `eprintln!` that never panics: a closed stderr (a terminal gone, a pipe shut)
/// must not take a session and its recording down with it.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// `print!` that never panics (`rlmon compare ... | head` closes stdout early).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

pub use error::{Result, RlmonError};

/// Runs one command; the returned code is the process exit status.
pub fn run(cli: cli::Cli) -> Result<u8> {
    install_panic_hook();
    match cli.command {
        cli::Command::Watch(args) => runtime()?.block_on(app::watch::watch(args)),
        cli::Command::Check(args) => app::check::check(args),
        cli::Command::Replay(args) => runtime()?.block_on(app::replay::replay(args)),
        cli::Command::Compare(args) => runtime()?.block_on(app::compare::compare(args)),
        cli::Command::Export(args) => app::export::export(args),
        cli::Command::Doctor(args) => app::doctor::doctor(args),
        cli::Command::Completions { shell } => {
            clap_complete::generate(shell, &mut cli::Cli::command(), "rlmon", &mut std::io::stdout());
            Ok(0)
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    // Two workers are plenty for the hub, signals and run supervision; training
    // runs on threads of its own.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("rlmon-async")
        .enable_all()
        .build()
        .map_err(|e| RlmonError::Other(e.into()))
}

/// A panic in a background thread while the live display is up is logged: the display owns the
/// screen and keeps going (the thread's owner reports what stopped). A panic on the
/// display's own thread, or with no display, first restores the terminal, then goes
/// to the previous hook, so it is printed on the normal screen.
fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if error::panic_contained() {
            tracing::debug!("contained: {info}");
        } else if ui::terminal::active_on_another_thread() {
            tracing::error!(thread = std::thread::current().name(), "{info}");
        } else {
            ui::terminal::restore_if_active();
            previous(info);
        }
    }));
}
