//! `rlmon watch`: launch the runs of a config, monitor them (terminal UI, or headless
//! progress on stderr), summarise.
use std::io::{IsTerminal, Write};
use std::time::Duration;

use super::live::LiveSession;
use super::signals::Signals;
use crate::cli::WatchArgs;
use crate::config::{find_config, SessionConfig, WorkloadConfig};
use crate::error::{Result, RlmonError, EXIT_FAILURE};
use crate::report::progress::progress_line;
use crate::session::baseline::DEFAULT_TOLERANCE;
use crate::session::{LogLevel, RunState, SessionState};
use crate::ui::theme::Theme;

/// `rlmon watch` alone: the recent runs of the Python client (`rlmon.init`) under
/// ./rlmon-runs or `RLMON_DIR`. On a terminal with none yet, it waits for the
/// first one to start (Ctrl-C stops waiting); headless, none is a usage error.
async fn client_runs() -> Result<SessionConfig> {
    let root = crate::workload::client_run::default_root();
    let interactive = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    let recent = super::attach::recent_client_runs(&root);
    if recent.is_ok() || !interactive {
        return recent;
    }
    crate::say!("rlmon: waiting for a run under {} (rlmon.init in your script starts one; Ctrl-C stops)", root.display());
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Err(RlmonError::Usage(super::attach::no_recent_runs(&root))),
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
        if let Ok(config) = super::attach::recent_client_runs(&root) {
            return Ok(config);
        }
    }
}

/// A built-in run (`workload = "lm"` or `"rlhf"`) trains in `rlmon-train`: an
/// install without it (pip, `cargo install --path .`: the monitor alone) is told so,
/// with how to get it, before anything starts (exit 2), not by a run failing later.
fn require_worker(config: &SessionConfig) -> Result<()> {
    let Some(run) = config.runs.iter().find(|r| matches!(r.workload, WorkloadConfig::Lm(_) | WorkloadConfig::Rlhf(_))) else {
        return Ok(());
    };
    crate::workload::builtin::locate_worker()
        .map(drop)
        .map_err(|e| RlmonError::Usage(format!("{}: run {:?} (workload = \"{}\"): {e}", config.path.display(), run.name, run.workload.kind())))
}

/// How often headless mode prints a progress line per run.
pub const PROGRESS_PERIOD: Duration = Duration::from_secs(5);

pub async fn watch(args: WatchArgs) -> Result<u8> {
    let mut config = match &args.config {
        Some(name) => {
            let mut config = SessionConfig::load(&find_config(name)?)?;
            super::attach::add_runs(&mut config, &args.attach, args.attach_pid, args.all)?;
            config
        }
        None if args.attach.is_empty() => client_runs().await?,
        None => super::attach::session(&args.attach, args.attach_pid, args.all)?,
    };
    if config.runs.is_empty() {
        return Err(RlmonError::Usage(format!("{}: no runs: add at least one [[run]] table, or follow runs with --attach", config.path.display())));
    }
    require_worker(&config)?;
    for arg in &args.notify {
        let mut target = crate::notify::Target::from_arg(arg).map_err(RlmonError::Usage)?;
        target.on_end = args.notify_on_end;
        config.notify.push(target);
    }
    if let Some(action) = &args.on_critical {
        let action = match action.as_str() {
            "stop" => crate::config::CriticalAction::Stop,
            s => crate::config::CriticalAction::Signal(crate::notify::parse_signal(s).ok_or_else(|| RlmonError::Usage(format!("--on-critical {s}: expected `stop` or a signal name such as USR1")))?),
        };
        for run in config.runs.iter_mut().filter(|r| r.on_critical.is_none()) {
            let builtin = matches!(run.workload, crate::config::WorkloadConfig::Lm(_) | crate::config::WorkloadConfig::Rlhf(_));
            if builtin && action != crate::config::CriticalAction::Stop {
                continue; // a built-in run stops itself; it takes no signal
            }
            // An attached run can be acted on only through its process.
            if let crate::config::WorkloadConfig::Attach(a) = &run.workload {
                if a.pid.is_none() || matches!(a.source, crate::config::AttachSource::Remote(_)) {
                    crate::say!("rlmon: --on-critical: run {} is followed without --attach-pid: rlmon cannot stop it", run.name);
                    continue;
                }
            }
            run.on_critical = Some(crate::config::OnCritical { action, kinds: None });
        }
    }
    let path = config.path.clone();
    if let Some(max) = args.max_steps {
        config.cap_steps(max);
    }
    let theme = Theme::resolve(&args.theme)?;
    // A session that cannot be recorded is refused before anything trains: the
    // recording is what replay, compare and baselines are made of.
    let unwritable = |e: &dyn std::fmt::Display| {
        RlmonError::Usage(format!(
            "cannot write the session folder {}: {e}; choose another with --session-dir (or RLMON_SESSION_DIR)",
            args.session_dir.display()
        ))
    };
    std::fs::create_dir_all(&args.session_dir).map_err(|e| unwritable(&e))?;
    let _log_guard = crate::logging::to_file(&args.session_dir.join("rlmon.log")).map_err(|e| match e {
        RlmonError::Io { source, .. } => unwritable(&source),
        other => other,
    })?;
    let headless = args.headless || !std::io::stdout().is_terminal();
    // Listen before anything slow (recovery, recorder start): a Ctrl-C that arrives
    // while the session starts is then seen by the headless loop, not lost.
    let signals = headless.then(Signals::new);
    tracing::info!(config = %path.display(), runs = config.runs.len(), "session starting");

    recover_interrupted(&args.session_dir);
    let baseline_path = args.baseline.clone().or_else(|| config.baseline.clone());
    let baseline = match &baseline_path {
        // Streamed from its file when it is a snapshot: only its final state is kept.
        Some(path) => Some(crate::record::Playback::open(path)?),
        None => None,
    };

    // Bound before any run starts: an address in use is refused, not found out later.
    let server = match &args.serve {
        Some(addr) => {
            let server = crate::serve::http::Server::bind(addr).await.map_err(|e| RlmonError::Usage(format!("cannot serve on {addr}: {e}")))?;
            let bound = server.local_addr().map_or_else(|_| addr.clone(), |a| a.to_string());
            crate::say!("rlmon: serving http://{bound}/metrics and http://{bound}/api/points");
            Some(server)
        }
        None => None,
    };
    // Webhook URLs are secrets: the recorded config text has them redacted.
    let config_text = crate::notify::redact_text(&config.text, &config.notify);
    let mut live = LiveSession::start(config);
    if let Some(server) = server {
        live.serve(server);
    }
    if let Err(e) = live.record(&args.session_dir, config_text, baseline_path.as_deref().map(|p| (p, DEFAULT_TOLERANCE))) {
        // Monitoring goes on; only the recording is lost, and the user is told.
        crate::say!("rlmon: warning: cannot record this session in {}: {e}", args.session_dir.display());
    }
    if let Some(mut recording) = baseline {
        live.set_baseline(&mut recording, DEFAULT_TOLERANCE);
    }
    if let Some(signals) = signals {
        run_headless(&mut live, 0, signals).await;
    } else {
        // Signals (SIGTERM, SIGHUP; Ctrl-C is a key in the display) leave the display;
        // the same listeners then serve the wait below.
        let mut signals = Signals::new();
        crate::ui::run(&mut live, theme, args.fps, signals.next()).await.map_err(|e| RlmonError::Other(e.into()))?;
        // The display is gone: runs cancelled by quitting finish their step; say so.
        if !live.state().all_over() {
            crate::say!("rlmon: waiting for runs to stop (Ctrl-C again to stop waiting)");
            let seen = live.state().logged_total;
            run_headless(&mut live, seen, signals).await;
        }
    }
    let summary = live.finish().await;
    report_summary(&summary, args.json)
}

/// Prints the summary (text on stderr, JSON on stdout with `json`) and returns the
/// exit code: 0 when every run finished, 1 otherwise. Shared by watch and replay.
pub fn report_summary(summary: &crate::report::summary::SessionSummary, json: bool) -> Result<u8> {
    let _ = std::io::stderr().lock().write_all(summary.to_text().as_bytes());
    if json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, summary).map_err(anyhow::Error::from)?;
        writeln!(out).ok();
    }
    let all_finished = summary.runs.iter().all(|r| r.state == RunState::Finished.as_str());
    Ok(if all_finished { 0 } else { EXIT_FAILURE })
}

/// Sessions in `dir` that were killed before writing their snapshot: say so, and
/// turn each journal into its snapshot. A journal that cannot be read is left as it
/// is, never deleted.
fn recover_interrupted(dir: &std::path::Path) {
    for journal in crate::record::journal::interrupted(dir) {
        crate::say!("rlmon: found an interrupted session: {}", journal.display());
        match crate::record::journal::convert(&journal) {
            Ok((path, r)) => {
                let damage = r.damage.map_or(String::new(), |d| format!(" ({d})"));
                crate::say!("rlmon: recovered {} points into {}{damage}", r.recording.points.len(), path.display());
            }
            Err(e) => crate::say!("rlmon: warning: cannot recover {}: {e}; left as it is", journal.display()),
        }
    }
}

/// Drives a session until every run is over, printing progress and events on stderr.
/// The first signal cancels every run; a second stops waiting for them. Log lines
/// after the first `seen` are printed.
pub async fn run_headless(live: &mut LiveSession, seen: u64, mut signals: Signals) {
    let mut progress = tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_PERIOD, PROGRESS_PERIOD);
    let mut logged = seen;
    while !live.state().all_over() {
        tokio::select! {
            open = live.recv_and_apply() => if !open { break },
            _ = progress.tick() => {
                for r in live.state().runs.iter().filter(|r| r.state == RunState::Running) {
                    crate::say!("{}", progress_line(r));
                }
            }
            signal = signals.next() => {
                if live.is_cancelled() {
                    crate::say!("rlmon: {signal} again: not waiting for runs to stop");
                    break;
                }
                crate::say!("rlmon: {signal}: cancelling runs (again to stop waiting)");
                live.cancel_all();
            }
        }
        print_log(live.state(), logged);
        logged = live.state().logged_total;
    }
}

pub(crate) fn print_log(state: &SessionState, seen: u64) {
    for line in state.log_since(seen) {
        let who = line.run.and_then(|i| state.runs.get(i)).map_or("rlmon:".into(), |r| format!("[{}]", r.name));
        let level = match line.level {
            LogLevel::Info => "",
            LogLevel::Warn => "warning: ",
            LogLevel::Error => "error: ",
        };
        crate::say!("{who} {level}{}", line.message);
    }
}
