//! A run attached to a job rlmon did not start (`rlmon watch --attach PATH`): its
//! metrics file or event folder is followed as the job writes it, read like a
//! command run's. The job is not rlmon's, so it has no exit status here: the run
//! stays running while it is followed and ends when rlmon stops following it, or
//! when the process given with `--attach-pid` exits.
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::command::stream::MetricStream;
use super::command::{self, Sink};
use super::RunContext;
use crate::config::{AttachConfig, AttachSource};
use crate::ingest::{self, Format, Line};
use crate::session::{Event, LogLevel, RunOutcome, ATTACHED_DEVICE};

/// How often the job's process and a rewritten document are looked at.
const POLL_PERIOD: Duration = Duration::from_millis(250);

pub async fn run(ctx: &RunContext, cfg: &AttachConfig) -> RunOutcome {
    // Runs of an rlmon on another machine: its feed says when they are over.
    if let AttachSource::Remote(remotes) = &cfg.source {
        return crate::serve::follow::follow(ctx.id, remotes, &ctx.tx, ctx.started, &ctx.cancel).await;
    }
    let mut sink = Sink::new(ctx);
    if sink.send(Event::RunStarted { run: ctx.id, device: ATTACHED_DEVICE.into(), threads: 0 }).await.is_err() {
        return RunOutcome::Cancelled;
    }
    let path = cfg.source.path().display().to_string();
    let whose = cfg.pid.map_or(String::new(), |pid| format!(" (process {pid})"));
    let _ = sink.log(LogLevel::Info, format!("following {path}{whose}"));
    if let Some(pid) = cfg.pid {
        ctx.jobs.set(ctx.id, pid);
    }
    if let AttachSource::Client(dir) = &cfg.source {
        return follow_client(ctx, dir, cfg.pid, sink).await;
    }
    let stop = CancellationToken::new();
    let mut follower = match &cfg.source {
        AttachSource::Stream(source) => command::follow(source, None, Sink::new(ctx), stop.clone()),
        AttachSource::Document(file) => {
            let (file, sink, stop) = (file.clone(), Sink::new(ctx), stop.clone());
            Some(tokio::spawn(async move {
                follow_document(file, sink, stop).await;
                None
            }))
        }
        AttachSource::Remote(_) | AttachSource::Client(_) => None,
    };
    let mut recorded = None;
    let mut stopped = false;
    let message = tokio::select! {
        _ = ctx.cancel.cancelled() => match (ctx.stop.get(), cfg.pid) {
            // rlmon stops the job on an alert (`on_critical`): SIGTERM, then SIGKILL.
            (Some(_), Some(pid)) => {
                stopped = true;
                terminate(pid, STOP_GRACE).await
            }
            _ => format!("stopped following {path}; the job itself is not stopped"),
        },
        pid = process_gone(cfg.pid) => format!("process {pid} exited: the job is over"),
        outcome = recorded_end(&mut follower) => {
            recorded = Some(outcome);
            format!("{path} recorded the run's end")
        }
    };
    stop.cancel();
    if let Some(f) = follower {
        let _ = f.await;
    }
    let _ = sink.log(LogLevel::Info, message);
    if stopped {
        return RunOutcome::Cancelled;
    }
    // The job's own exit status is its parent's to see, not rlmon's, unless its
    // tracker recorded it (a W&B exit record).
    recorded.unwrap_or(RunOutcome::Finished)
}

/// The outcome a follower ends with when its source records the run's end (a W&B
/// exit record); never, otherwise.
async fn recorded_end(follower: &mut Option<tokio::task::JoinHandle<Option<RunOutcome>>>) -> RunOutcome {
    if let Some(f) = follower.as_mut() {
        let ended = f.await;
        *follower = None;
        if let Ok(Some(outcome)) = ended {
            return outcome;
        }
    }
    std::future::pending().await
}

/// How long an attached job stopped by rlmon gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

/// Stops the attached job of process `pid`: SIGTERM to its group, SIGKILL after
/// `grace`; says how it went.
async fn terminate(pid: u32, grace: Duration) -> String {
    if let Err(e) = super::signal_job(pid, libc::SIGTERM) {
        return format!("cannot stop process {pid}: {e}");
    }
    if tokio::time::timeout(grace, process_gone(Some(pid))).await.is_ok() {
        return format!("process {pid} stopped (SIGTERM)");
    }
    let _ = super::signal_job(pid, libc::SIGKILL);
    let _ = tokio::time::timeout(Duration::from_secs(2), process_gone(Some(pid))).await;
    format!("process {pid} killed (SIGKILL) after {} s", grace.as_secs())
}

/// Follows a run of rlmon's Python client: its metrics file as a JSONL file, its
/// alerts (raised in the session as they are written, beside rlmon's own), and its
/// finish record, which ends the run with the script's outcome. The script's
/// process (from its start record, when it runs here, or `--attach-pid`) is the
/// run's: its GPU memory is shown, and its end without a finish record fails the run.
async fn follow_client(ctx: &RunContext, dir: &Path, pid: Option<u32>, mut sink: Sink) -> RunOutcome {
    use crate::ingest::client::{self as records, Ended};
    use crate::workload::client_run;
    let pid = pid.or_else(|| client_run::live_pid(dir, process_alive));
    if let Some(pid) = pid {
        ctx.jobs.set(ctx.id, pid);
    }
    let stop = CancellationToken::new();
    let metrics = crate::config::MetricsSource::File(dir.join(records::METRICS_FILE));
    let follower = command::follow(&metrics, Some(Format::Jsonl), Sink::new(ctx), stop.clone());
    let alerts_path = dir.join(records::ALERTS_FILE);
    let mut offset = 0;
    let run_name = ctx.config.name.clone();
    let raise = |sink: &mut Sink, offset: &mut u64| {
        let (alerts, bad) = client_run::alerts_of(&client_run::new_lines(&alerts_path, offset));
        let now = sink.now_s();
        let events: Vec<Event> = alerts.iter().map(|a| Event::Alert { run: Some(sink.run()), alert: a.to_alert(&run_name, now) }).collect();
        for message in bad {
            let _ = sink.log(LogLevel::Warn, message);
        }
        events
    };
    let ended = loop {
        for event in raise(&mut sink, &mut offset) {
            if sink.send(event).await.is_err() {
                return RunOutcome::Cancelled;
            }
        }
        if let Some(finish) = client_run::finish(dir) {
            break Some(finish);
        }
        tokio::select! {
            _ = ctx.cancel.cancelled() => break None,
            gone = process_gone(pid) => {
                // The finish record may have been written just before the exit.
                match client_run::finish(dir) {
                    Some(finish) => break Some(finish),
                    None => {
                        stop.cancel();
                        if let Some(f) = follower {
                            let _ = f.await;
                        }
                        return RunOutcome::Failed(format!("the script (process {gone}) ended without finishing its run (killed, or rlmon.finish never ran)"));
                    }
                }
            }
            _ = tokio::time::sleep(POLL_PERIOD) => {}
        }
    };
    // What was written before the finish record is read before the run ends.
    stop.cancel();
    if let Some(f) = follower {
        let _ = f.await;
    }
    for event in raise(&mut sink, &mut offset) {
        let _ = sink.send(event).await;
    }
    match ended.map(|f| f.ended()) {
        None => {
            let _ = sink.log(LogLevel::Info, format!("stopped following {}; the script itself is not stopped", dir.display()));
            RunOutcome::Finished
        }
        Some(Ended::Finished) => RunOutcome::Finished,
        Some(Ended::Cancelled) => RunOutcome::Cancelled,
        Some(Ended::Failed(why)) => RunOutcome::Failed(why),
    }
}

/// Waits until process `pid` is gone (never, without one); returns its pid.
async fn process_gone(pid: Option<u32>) -> u32 {
    let Some(pid) = pid else { return std::future::pending().await };
    while process_alive(pid) {
        tokio::time::sleep(POLL_PERIOD).await;
    }
    pid
}

/// Whether `pid` is a live process (a zombie has exited: only its parent has not
/// looked yet).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat_alive(&stat),
        Err(_) => false,
    }
}

/// Whether a `/proc/PID/stat` line is a running (not zombie or dead) process's.
pub fn stat_alive(stat: &str) -> bool {
    // The state follows the command name, which is in parentheses and may hold any byte.
    let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, Some("Z" | "X" | "x") | None)
}

/// Follows a document the job rewrites whole (trainer_state.json, Sacred's
/// metrics.json): each time it changes, the records not seen before are read. A
/// history rewritten from an earlier point (the job resumed from a checkpoint) is
/// read from where it differs.
async fn follow_document(path: PathBuf, mut sink: Sink, stop: CancellationToken) {
    let mut stream = MetricStream::new(&path, Some(Format::TrainerState), false);
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    let mut seen: Vec<Line> = Vec::new();
    let mut last_change = None;
    let mut skips = 0;
    loop {
        let last = stop.is_cancelled();
        let change = std::fs::metadata(&path).ok().map(|m| (m.len(), m.modified().ok()));
        if change.is_some() && change != last_change {
            // A document caught half written does not parse: read it again next time.
            let records = std::fs::read_to_string(&path).ok().and_then(|t| ingest::document_records(&ingest::detect(&name, &t), &t)?.ok());
            if let Some(records) = records {
                last_change = change;
                let now = sink.now_s();
                let mut outs = Vec::new();
                for line in new_records(&mut seen, records) {
                    outs.extend(stream.record(line, now));
                }
                outs.extend(stream.flush());
                if sink.stream(outs, LogLevel::Info, &mut skips).await.is_err() {
                    return;
                }
            }
        }
        if last {
            break;
        }
        super::command::pause(POLL_PERIOD, &stop).await;
    }
    let now = sink.now_s();
    let outs = stream.finish(now);
    let _ = sink.stream(outs, LogLevel::Info, &mut skips).await;
}

/// The records of a rewritten document that were not read before: those after the
/// longest start it shares with what was read. `seen` becomes the document.
pub fn new_records(seen: &mut Vec<Line>, now: Vec<Line>) -> Vec<Line> {
    let same = seen.iter().zip(&now).take_while(|(a, b)| a == b).count();
    let fresh = now[same..].to_vec();
    *seen = now;
    fresh
}

/// The name a path gives its run: a file's stem, a folder's name, and for
/// `trainer_state.json` its folder's (the checkpoint or output folder).
pub fn run_name(path: &Path) -> String {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let named = if absolute.file_name().is_some_and(|n| n == "trainer_state.json") { absolute.parent().unwrap_or(&absolute) } else { &absolute };
    let name = if named.is_dir() { named.file_name() } else { named.file_stem() };
    name.map(|n| n.to_string_lossy().into_owned()).filter(|n| !n.is_empty()).unwrap_or_else(|| "attached".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::Record;

    fn rec(step: u64) -> Line {
        Line::Metrics(Record { step: Some(step), fields: vec![("loss".into(), step as f64)], ..Default::default() })
    }

    #[test]
    fn a_rewritten_document_is_read_from_where_it_changed() {
        let mut seen = Vec::new();
        assert_eq!(new_records(&mut seen, vec![rec(1), rec(2)]), vec![rec(1), rec(2)]);
        assert_eq!(new_records(&mut seen, vec![rec(1), rec(2), rec(3)]), vec![rec(3)], "grown: only the new record");
        assert_eq!(new_records(&mut seen, vec![rec(1), rec(2), rec(3)]), vec![], "unchanged");
        // Resumed from the checkpoint at step 2: its history goes on from there.
        assert_eq!(new_records(&mut seen, vec![rec(1), rec(2), rec(30)]), vec![rec(30)]);
        assert_eq!(new_records(&mut seen, vec![rec(1)]), vec![]);
        assert_eq!(new_records(&mut seen, vec![rec(1), rec(2)]), vec![rec(2)]);
    }

    #[test]
    fn zombies_and_dead_processes_are_gone() {
        assert!(stat_alive("42 (python3) S 1 42 42 0"));
        assert!(stat_alive("42 (a) b) R 1 42"), "a name with a parenthesis");
        assert!(!stat_alive("42 (python3) Z 1 42 42 0"));
        assert!(!stat_alive("garbage"));
        assert!(process_alive(std::process::id()));
        assert!(!process_alive(u32::MAX));
    }

    #[test]
    fn runs_are_named_after_their_file_or_folder() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("checkpoint-500");
        std::fs::create_dir(&out).unwrap();
        assert_eq!(run_name(&out.join("trainer_state.json")), "checkpoint-500");
        assert_eq!(run_name(&out), "checkpoint-500");
        assert_eq!(run_name(&dir.path().join("metrics.jsonl")), "metrics");
    }
}
