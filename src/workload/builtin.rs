//! A built-in run (`workload = "lm"` or `"rlhf"`) as rlmon supervises it: the
//! training worker `rlmon-train` (train/src/) started for this run alone, in its own
//! process group, told what to train on stdin and read on stdout (see `protocol`).
//! libtorch aborting, a segfault, or an out-of-memory kill end this one process:
//! the run is marked failed with what the worker last said, and the display, the
//! recording and the other runs go on.
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::command::stream::{self, LineSplitter};
use super::command::{Group, Sink};
use super::protocol::{Decoder, Job, Message, PROTOCOL_VERSION, WORKER_ENV, WORKER_EXE};
use super::RunContext;
use crate::session::{Event, LogLevel, RunOutcome};

/// How long a cancelled worker gets to finish its step and say so before it is
/// killed (a step of the built-in workloads takes milliseconds to a second).
const CANCEL_GRACE: Duration = Duration::from_secs(5);
/// How long the output readers get once the worker has exited.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// The libtorch version the first worker of this process's session reported.
static LIBTORCH_VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The libtorch the built-in runs trained with, once one has started (rlmon itself
/// does not load it).
pub fn libtorch_version() -> Option<String> {
    LIBTORCH_VERSION.get().cloned()
}

/// The session config the built-in runs come from: the worker resolves its run from
/// the same text.
#[derive(Debug, Clone, Default)]
pub struct ConfigSource {
    pub path: PathBuf,
    pub text: String,
}

/// Trains the run in a worker process until it ends.
pub async fn run(ctx: &RunContext, source: &ConfigSource) -> RunOutcome {
    let exe = match locate_worker() {
        Ok(exe) => exe,
        Err(e) => return RunOutcome::Failed(e),
    };
    let job = Job {
        protocol: PROTOCOL_VERSION,
        config_path: source.path.clone(),
        config_text: source.text.clone(),
        run: ctx.config.name.clone(),
        steps: ctx.config.steps,
        threads: ctx.threads,
    };
    let mut line = serde_json::to_vec(&job).expect("a job is plain data");
    line.push(b'\n');

    let mut command = tokio::process::Command::new(&exe);
    command
        .arg("run")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: a terminal's Ctrl-C reaches rlmon, which stops the run itself.
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return RunOutcome::Failed(format!("cannot start the training worker {}: {e}", exe.display())),
    };
    let mut group = Group::new(child.id().map(|pid| pid as i32));
    if let Some(pid) = child.id() {
        // Its GPU memory is this run's.
        ctx.jobs.set(ctx.id, pid);
    }
    // Kept open while the run trains: closing it is how the worker is told to stop.
    let mut stdin = child.stdin.take();
    if let Some(pipe) = stdin.as_mut() {
        if let Err(e) = pipe.write_all(&line).await {
            group.signal(libc::SIGKILL);
            let _ = child.wait().await;
            return RunOutcome::Failed(format!("cannot hand the run to the training worker: {e}"));
        }
    }

    let last_error_line = Arc::new(Mutex::new(None));
    let stderr_reader = child.stderr.take().map(|pipe| tokio::spawn(read_stderr(pipe, Sink::new(ctx), last_error_line.clone())));
    let Some(stdout) = child.stdout.take() else {
        return RunOutcome::Failed("the training worker has no output pipe".into());
    };
    // The worker's clock starts about now; its times are shifted onto the session's.
    let offset_s = ctx.elapsed_s();
    let mut reading = std::pin::pin!(read_messages(stdout, Sink::new(ctx), offset_s));

    let mut cancelled = false;
    let read = tokio::select! {
        read = &mut reading => read,
        _ = ctx.cancel.cancelled() => {
            cancelled = true;
            drop(stdin.take());
            match tokio::time::timeout(CANCEL_GRACE, &mut reading).await {
                Ok(read) => read,
                Err(_) => {
                    group.signal(libc::SIGKILL);
                    tokio::time::timeout(DRAIN_TIMEOUT, &mut reading).await.unwrap_or_default()
                }
            }
        }
    };
    // Its output is closed: the worker has ended, or broke its stream and is stopped.
    if read.error.is_some() {
        group.signal(libc::SIGKILL);
    }
    drop(stdin);
    let status = match tokio::time::timeout(CANCEL_GRACE, child.wait()).await {
        Ok(status) => status.ok(),
        Err(_) => {
            group.signal(libc::SIGKILL);
            child.wait().await.ok()
        }
    };
    group.disarm();
    if let Some(reader) = stderr_reader {
        let abort = reader.abort_handle();
        if tokio::time::timeout(DRAIN_TIMEOUT, reader).await.is_err() {
            abort.abort();
        }
    }
    use std::os::unix::process::ExitStatusExt;
    let last_error = last_error_line.lock().map(|l| l.clone()).unwrap_or_default();
    outcome(read, status.and_then(|s| s.code()), status.and_then(|s| s.signal()), cancelled, last_error.as_deref())
}

/// What the worker's stdout held.
#[derive(Debug, Default)]
struct Read {
    /// The outcome the worker reported, if it got that far.
    reported: Option<RunOutcome>,
    /// Why its stream could not be read (then the worker is stopped).
    error: Option<String>,
    /// The session stopped listening.
    gone: bool,
}

async fn read_messages(mut pipe: impl AsyncRead + Unpin, mut sink: Sink, offset_s: f64) -> Read {
    let mut decoder = Decoder::default();
    let mut buf = vec![0u8; 64 * 1024];
    let mut read = Read::default();
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let messages = match decoder.push(&buf[..n]) {
            Ok(m) => m,
            Err(e) => {
                read.error = Some(e);
                return read;
            }
        };
        for message in messages {
            let sent = match message {
                Message::Started { device, threads, libtorch } => {
                    if let Some(version) = libtorch {
                        let _ = LIBTORCH_VERSION.set(version);
                    }
                    sink.send(Event::RunStarted { run: sink.run(), device, threads }).await
                }
                Message::Metrics { step, time_s, values } => sink.send(Event::Metrics { run: sink.run(), step, time_s: offset_s + time_s, values }).await,
                Message::Log { level, message } => sink.log(level, message),
                Message::Ended { outcome } => {
                    read.reported = Some(outcome);
                    Ok(())
                }
            };
            if sent.is_err() {
                read.gone = true;
                return read;
            }
        }
    }
    if decoder.pending() > 0 && read.reported.is_none() {
        read.error = Some(format!("its output stopped inside a message ({} bytes)", decoder.pending()));
    }
    read
}

/// The worker's stderr (libtorch's warnings, an abort's last words) goes to the
/// events pane; its last line is kept for the failure reason.
async fn read_stderr(mut pipe: impl AsyncRead + Unpin, mut sink: Sink, last: Arc<Mutex<Option<String>>>) {
    let mut splitter = LineSplitter::default();
    let mut buf = vec![0u8; 16 * 1024];
    let mut lines = Vec::new();
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => lines.extend(splitter.push(&buf[..n])),
        }
        if !forward(&mut lines, &mut sink, &last) {
            return;
        }
    }
    lines.extend(splitter.finish());
    forward(&mut lines, &mut sink, &last);
}

fn forward(lines: &mut Vec<stream::RawLine>, sink: &mut Sink, last: &Mutex<Option<String>>) -> bool {
    for raw in lines.drain(..) {
        let text = stream::log_text(&raw);
        if text.trim().is_empty() {
            continue;
        }
        if let Ok(mut last) = last.lock() {
            *last = Some(text.trim().to_owned());
        }
        if sink.log(LogLevel::Warn, text).is_err() {
            return false;
        }
    }
    true
}

/// The run's outcome: what the worker reported, else how its process ended,
/// with the last thing it wrote on stderr (an abort's reason).
fn outcome(read: Read, code: Option<i32>, signal: Option<i32>, cancelled: bool, last_error: Option<&str>) -> RunOutcome {
    if let Some(reported) = read.reported {
        return reported;
    }
    if cancelled || read.gone {
        return RunOutcome::Cancelled;
    }
    let mut reason = match read.error {
        Some(e) => format!("training process stopped: {e}"),
        None => match stream::outcome(code, signal, false) {
            RunOutcome::Failed(how) => format!("training process {how}"),
            // Exit 0 without a word: the worker's own contract broken.
            RunOutcome::Finished | RunOutcome::Cancelled | RunOutcome::Stopped(_) => "training process exited without reporting the run's end".into(),
        },
    };
    if let Some(line) = last_error {
        reason.push_str(": ");
        reason.push_str(line);
    }
    RunOutcome::Failed(reason)
}

/// The worker executable: `RLMON_TRAIN_BIN`, else `rlmon-train` beside this
/// executable (or one folder up, for cargo's test binaries in `deps/`).
pub fn locate_worker() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(WORKER_ENV) {
        let path = PathBuf::from(path);
        return if path.is_file() { Ok(path) } else { Err(format!("{WORKER_ENV}={} is not a file", path.display())) };
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot tell where rlmon is installed: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let mut candidates = vec![dir.join(WORKER_EXE)];
    if dir.file_name().is_some_and(|n| n == "deps") {
        candidates.extend(dir.parent().map(|up| up.join(WORKER_EXE)));
    }
    candidates.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        format!(
            "built-in workloads train in `{WORKER_EXE}`, which is not installed beside rlmon (looked for {}): \
             this rlmon is the monitor alone (as `pip install` and `cargo install --path .` give it). \
             Get the worker from a checkout of rlmon with `./scripts/setup.sh && cargo build --release` \
             (installs torch, about 4.7 GB), then run that target/release/rlmon, or set {WORKER_ENV} to its rlmon-train. \
             Your own program (`workload = \"command\"`) and `--attach` need no worker",
            candidates[0].display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reported_outcome_wins_else_the_process_end_with_its_last_words() {
        let reported = Read { reported: Some(RunOutcome::Finished), ..Read::default() };
        assert_eq!(outcome(reported, Some(0), None, false, None), RunOutcome::Finished);
        let aborted = outcome(Read::default(), None, Some(libc::SIGABRT), false, Some("terminate called after throwing an instance of 'c10::Error'"));
        assert_eq!(aborted, RunOutcome::Failed("training process killed by signal 6 (SIGABRT): terminate called after throwing an instance of 'c10::Error'".into()));
        assert_eq!(outcome(Read::default(), None, Some(libc::SIGKILL), true, None), RunOutcome::Cancelled);
        assert_eq!(outcome(Read::default(), Some(0), None, false, None), RunOutcome::Failed("training process exited without reporting the run's end".into()));
        let garbled = Read { error: Some("a frame of 99999999 bytes".into()), ..Read::default() };
        assert!(matches!(outcome(garbled, None, Some(libc::SIGKILL), false, None), RunOutcome::Failed(r) if r.contains("frame of")));
    }
}
