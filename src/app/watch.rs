//! `rlmon watch`: launch the runs of a config, monitor them, summarise.
//!
//! ```text
//!  run tasks ──┐ (one training thread each)
//!  telemetry ──┼─► bounded channel ─► Hub (session state) ─► headless progress / summary
//! ```
//! One root cancellation token; each run gets a child, so Ctrl-C, SIGTERM or SIGHUP
//! stop every run at its next step and the summary is still printed.
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cli::WatchArgs;
use crate::config::{find_config, SessionConfig, Threads};
use crate::error::{Result, RlmonError, EXIT_FAILURE};
use crate::report::{progress::progress_line, summary::SessionSummary};
use crate::session::{Hub, LogLevel, RunRecord, RunState, SessionState};
use crate::{telemetry, workload};

/// Events in flight between producers and the hub. A step sends one event per run,
/// so this is seconds of slack even for fast loops.
pub const EVENT_CAPACITY: usize = 4096;
/// How often headless mode prints a progress line per run.
pub const PROGRESS_PERIOD: Duration = Duration::from_secs(5);

pub async fn watch(args: WatchArgs) -> Result<u8> {
    let path = find_config(&args.config)?;
    let mut config = SessionConfig::load(&path)?;
    if let Some(max) = args.max_steps {
        config.cap_steps(max);
    }
    crate::ui::theme::Theme::resolve(&args.theme)?;
    std::fs::create_dir_all(&args.session_dir)
        .map_err(|source| RlmonError::Io { path: args.session_dir.clone(), source })?;
    let _log_guard = crate::logging::to_file(&args.session_dir.join("rlmon.log"))?;
    tracing::info!(config = %path.display(), runs = config.runs.len(), "session starting");

    let headless = args.headless || !std::io::stdout().is_terminal();
    if !headless {
        eprintln!("rlmon: live display not available in this build; reporting progress on stderr (as with --headless)");
    }
    let summary = run_session(config).await;
    eprint!("{}", summary.to_text());
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &summary).map_err(anyhow::Error::from)?;
        writeln!(out).ok();
    }
    let all_finished = summary.runs.iter().all(|r| r.state == RunState::Finished.as_str());
    Ok(if all_finished { 0 } else { EXIT_FAILURE })
}

/// Runs a session to its end (all runs over, or cancelled by a signal) and returns
/// its summary. Progress goes to stderr.
pub async fn run_session(config: SessionConfig) -> SessionSummary {
    let started = Instant::now();
    let runs = config
        .runs
        .iter()
        .map(|r| RunRecord::new(r.name.clone(), r.workload.kind().into(), r.device.to_string(), r.steps))
        .collect();
    let mut hub = Hub::new(SessionState::new(config.name.clone(), runs));
    let (tx, mut rx) = mpsc::channel(EVENT_CAPACITY);
    let root = CancellationToken::new();

    let cores = workload::threads::available_cores();
    let n_runs = config.runs.len();
    let mut tasks = Vec::with_capacity(n_runs);
    for (id, run) in config.runs.into_iter().enumerate() {
        let threads = match run.threads {
            Threads::Fixed(n) => n,
            Threads::Auto => workload::threads::auto_intra_op_threads(cores, n_runs),
        };
        tasks.push(workload::spawn(id, run, threads, tx.clone(), root.child_token()));
    }
    let sampler = telemetry::spawn(tx.clone(), root.child_token(), telemetry::DEFAULT_SAMPLE_HZ, started);
    if let Err(e) = &sampler {
        eprintln!("rlmon: telemetry disabled: cannot start its thread: {e}");
    }
    drop(tx);

    let mut signals = Signals::new();
    let mut progress = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_PERIOD, PROGRESS_PERIOD);
    let mut logged = 0;
    while !hub.state.all_over() {
        tokio::select! {
            event = rx.recv() => match event {
                Some(event) => hub.apply(event, started.elapsed().as_secs_f64()),
                None => break,
            },
            _ = progress.tick() => {
                for r in hub.state.runs.iter().filter(|r| r.state == RunState::Running) {
                    eprintln!("{}", progress_line(r));
                }
            }
            signal = signals.next() => {
                if root.is_cancelled() {
                    eprintln!("rlmon: {signal} again: not waiting for runs to stop");
                    break;
                }
                eprintln!("rlmon: {signal}: cancelling runs (again to stop waiting)");
                root.cancel();
            }
        }
        for line in hub.state.log_since(logged) {
            let run = line.run.and_then(|i| hub.state.runs.get(i)).map_or("rlmon:".into(), |r| format!("[{}]", r.name));
            let level = match line.level {
                LogLevel::Info => "",
                LogLevel::Warn => "warning: ",
                LogLevel::Error => "error: ",
            };
            eprintln!("{run} {level}{}", line.message);
        }
        logged = hub.state.logged_total;
    }
    root.cancel();
    for task in tasks {
        if task.is_finished() {
            let _ = task.await;
        }
    }
    if let Ok(handle) = sampler {
        let _ = tokio::task::spawn_blocking(move || handle.join()).await;
    }
    SessionSummary::of(&hub.state, started.elapsed().as_secs_f64())
}

/// Ctrl-C, SIGTERM and SIGHUP as one stream of names.
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    hup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Signals { term: signal(SignalKind::terminate()).ok(), hup: signal(SignalKind::hangup()).ok() }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
                match s {
                    Some(s) => {
                        s.recv().await;
                    }
                    None => std::future::pending().await,
                }
            }
            tokio::select! {
                _ = tokio::signal::ctrl_c() => "interrupted",
                _ = recv(&mut self.term) => "terminated",
                _ = recv(&mut self.hup) => "hangup",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "interrupted"
        }
    }
}
