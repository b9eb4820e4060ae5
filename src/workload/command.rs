//! `workload = "command"`: the user's own program, started by rlmon and read like
//! a built-in run. It runs in its own process group (so a terminal's Ctrl-C
//! reaches rlmon only, and stopping it reaches every process it started); its
//! stdout (or a file it writes) is read as metrics through `ingest`, and its other
//! output goes to the events pane. Cancelling sends SIGTERM to the group, then
//! SIGKILL after the grace period; once the run ends, the group is gone.
//!
//! `stream` holds the pure parts (lines, formats, outcome), `tail` follows a file,
//! `events_dir` a folder of TensorBoard event files, and `glob` finds the files of
//! `metrics = { glob = ... }` (one stream, one rank each).
pub mod events_dir;
pub mod glob;
pub mod mlflow_dir;
pub mod stream;
pub mod tail;
mod trackers;
pub mod trackio_db;
pub mod wandb_dir;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio_util::sync::CancellationToken;

use self::stream::{LineSplitter, MetricStream, StreamOut};
use super::RunContext;
use crate::config::{CommandConfig, MetricsSource};
use crate::ingest::Format;
use crate::session::{Event, LogLevel, RunId, RunOutcome};

/// How often a metrics file is looked at.
const TAIL_PERIOD: Duration = Duration::from_millis(200);
/// Output readers get this long to finish once the program is gone (a process
/// that left the group may still hold the pipe).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// How long to wait for the killed group's last processes to be reaped.
const GONE_TIMEOUT: Duration = Duration::from_secs(2);
/// Skipped lines of a metrics file named one by one; later ones are only counted.
const SKIPS_SHOWN: u64 = 5;
/// The device a command run shows: rlmon cannot tell where it trains.
pub const DEVICE: &str = "external";

/// Runs the program to its end; the outcome follows its exit status.
pub async fn run(ctx: &RunContext, cfg: &CommandConfig) -> RunOutcome {
    let program = &cfg.argv[0];
    let mut command = tokio::process::Command::new(program);
    command
        .args(&cfg.argv[1..])
        .current_dir(&cfg.cwd)
        .envs(cfg.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return RunOutcome::Failed(format!("cannot start `{program}`: {e}")),
    };
    // The program leads its own group, whose id is its pid.
    let mut group = Group(child.id().map(|pid| pid as i32));
    if let Some(pid) = child.id() {
        ctx.jobs.set(ctx.id, pid);
    }
    let sink = || Sink::new(ctx);
    if sink().send(Event::RunStarted { run: ctx.id, device: DEVICE.into(), threads: 0 }).await.is_err() {
        group.signal(libc::SIGKILL);
        return RunOutcome::Cancelled;
    }
    let format = cfg.format.as_deref().and_then(Format::from_name);
    let stop_tail = CancellationToken::new();
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        let metrics = matches!(cfg.metrics, MetricsSource::Stdout).then(|| MetricStream::new(Path::new("stdout"), format.clone(), true));
        let hint = matches!(cfg.metrics, MetricsSource::Stderr);
        readers.push(tokio::spawn(read_output(stdout, Pipe::Stdout, metrics, hint, sink())));
    }
    if let Some(stderr) = child.stderr.take() {
        let metrics = matches!(cfg.metrics, MetricsSource::Stderr).then(|| MetricStream::new(Path::new("stderr"), format.clone(), true));
        let hint = matches!(cfg.metrics, MetricsSource::Stdout);
        readers.push(tokio::spawn(read_output(stderr, Pipe::Stderr, metrics, hint, sink())));
    }
    let tailer = match &cfg.metrics {
        MetricsSource::Stdout | MetricsSource::Stderr => None,
        source => follow(source, format, sink(), stop_tail.clone()),
    };

    let mut cancelled = false;
    let status = tokio::select! {
        status = child.wait() => status,
        _ = ctx.cancel.cancelled() => {
            cancelled = true;
            group.signal(libc::SIGTERM);
            match tokio::time::timeout(cfg.grace, child.wait()).await {
                Ok(status) => status,
                Err(_) => {
                    group.signal(libc::SIGKILL);
                    child.wait().await
                }
            }
        }
    };
    // Whatever the program left behind in its group goes with it.
    group.signal(libc::SIGKILL);
    for reader in readers {
        let abort = reader.abort_handle();
        if tokio::time::timeout(DRAIN_TIMEOUT, reader).await.is_err() {
            abort.abort();
        }
    }
    stop_tail.cancel();
    if let Some(tailer) = tailer {
        let _ = tailer.await;
    }
    // Killed processes whose parent died are reaped by init: the run ends once
    // they are, so that nothing of the job is left when it shows as over.
    group.wait_gone(GONE_TIMEOUT).await;
    group.disarm();
    match status {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            stream::outcome(status.code(), status.signal(), cancelled)
        }
        Err(e) => RunOutcome::Failed(format!("cannot wait for `{program}`: {e}")),
    }
}

/// The program's process group. Dropped while armed (rlmon stopped waiting for
/// the run), it kills the group so that nothing outlives rlmon.
pub(crate) struct Group(Option<i32>);

impl Group {
    pub(crate) fn new(pgid: Option<i32>) -> Self {
        Group(pgid)
    }

    pub(crate) fn signal(&self, sig: i32) {
        // 0 and 1 would mean rlmon's own group and every process: never those.
        if let Some(pgid) = self.0.filter(|p| *p > 1) {
            // SAFETY: kill has no memory effects; a group already gone gives ESRCH.
            unsafe {
                libc::kill(-pgid, sig);
            }
        }
    }

    /// Waits until no process of the group is left (zombies included), at most `limit`.
    async fn wait_gone(&self, limit: Duration) {
        let Some(pgid) = self.0.filter(|p| *p > 1) else { return };
        let deadline = Instant::now() + limit;
        // SAFETY: signal 0 only asks whether the group still has a process.
        while unsafe { libc::kill(-pgid, 0) } == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The group is gone: its id may be reused from now on.
    pub(crate) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
    }
}

/// Where a reader's events go. Metrics wait for room in the queue (as a built-in
/// run's do); output lines do not: when the queue is full they are dropped and
/// counted, so a flood of output never holds up the program or grows memory.
pub(crate) struct Sink {
    tx: mpsc::Sender<Event>,
    run: RunId,
    /// The run's name (alerts name their run).
    name: String,
    started: Instant,
    dropped: u64,
}

/// The session stopped listening.
pub(crate) struct Gone;

impl Sink {
    pub(crate) fn new(ctx: &RunContext) -> Self {
        Sink { tx: ctx.tx.clone(), run: ctx.id, name: ctx.config.name.clone(), started: ctx.started, dropped: 0 }
    }

    pub(crate) fn run(&self) -> RunId {
        self.run
    }

    pub(crate) fn now_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    pub(crate) async fn send(&self, event: Event) -> Result<(), Gone> {
        self.tx.send(event).await.map_err(|_| Gone)
    }

    pub(crate) fn log(&mut self, level: LogLevel, message: String) -> Result<(), Gone> {
        if self.dropped > 0 {
            let note = Event::Log { run: Some(self.run), level: LogLevel::Warn, message: dropped_note(self.dropped) };
            match self.tx.try_send(note) {
                Ok(()) => self.dropped = 0,
                Err(TrySendError::Full(_)) => {
                    self.dropped += 1;
                    return Ok(());
                }
                Err(TrySendError::Closed(_)) => return Err(Gone),
            }
        }
        match self.tx.try_send(Event::Log { run: Some(self.run), level, message }) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.dropped += 1;
                Ok(())
            }
            Err(TrySendError::Closed(_)) => Err(Gone),
        }
    }

    /// At the end of a stream: says how many lines were dropped, waiting for room.
    async fn flush(&mut self) {
        if self.dropped > 0 {
            let message = dropped_note(self.dropped);
            self.dropped = 0;
            let _ = self.send(Event::Log { run: Some(self.run), level: LogLevel::Warn, message }).await;
        }
    }

    /// Hands on what a metric stream produced.
    pub(crate) async fn stream(&mut self, outs: Vec<StreamOut>, text_level: LogLevel, skips: &mut u64) -> Result<(), Gone> {
        for out in outs {
            match out {
                StreamOut::Point { rank: None, step, time_s, values } => self.send(Event::Metrics { run: self.run, step, time_s, values }).await?,
                StreamOut::Point { rank: Some(rank), step, time_s, values } => self.send(Event::RankMetrics { job: self.run, rank, step, time_s, values }).await?,
                StreamOut::Resumed { rank: None, resume: r } => self.send(Event::Resumed { run: self.run, at_step: r.at_step, discarded: r.discarded }).await?,
                StreamOut::Resumed { rank: Some(rank), resume: r } => self.send(Event::RankResumed { job: self.run, rank, at_step: r.at_step, discarded: r.discarded }).await?,
                StreamOut::Text(line) => self.log(text_level, line)?,
                StreamOut::Skipped(kind, reason) => {
                    *skips += 1;
                    if *skips <= SKIPS_SHOWN {
                        self.log(LogLevel::Warn, format!("metrics line skipped ({}): {reason}", kind.as_str()))?;
                    }
                }
                StreamOut::Telemetry(values) => {
                    // Telemetry is dropped rather than waited for, as local samples are.
                    if let Err(TrySendError::Closed(_)) = self.tx.try_send(Event::Telemetry { time_s: self.now_s(), values }) {
                        return Err(Gone);
                    }
                }
                StreamOut::Alert(mut alert) => {
                    alert.run = self.name.clone();
                    alert.time_s = self.now_s();
                    self.send(Event::Alert { run: Some(self.run), alert }).await?
                }
            }
        }
        Ok(())
    }
}

/// Said once when the pipe rlmon does not read metrics from has metric lines
/// (tqdm and Python's `logging` write to stderr).
fn wrong_pipe_hint(which: Pipe, line: &stream::RawLine) -> String {
    let other = match which {
        Pipe::Stdout => Pipe::Stderr,
        Pipe::Stderr => Pipe::Stdout,
    };
    let text = stream::log_text(line);
    let excerpt: String = text.trim().chars().take(80).collect();
    format!("{} has metric lines (`{excerpt}`) but this run reads its metrics from {}: set metrics = \"{}\" in the run's config to read them", which.name(), other.name(), which.name())
}

fn dropped_note(n: u64) -> String {
    format!("{n} lines of output dropped: they came faster than rlmon could show them")
}

/// One of the program's output pipes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pipe {
    Stdout,
    Stderr,
}

impl Pipe {
    /// The level its text is logged at.
    fn level(self) -> LogLevel {
        match self {
            Pipe::Stdout => LogLevel::Info,
            Pipe::Stderr => LogLevel::Warn,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Pipe::Stdout => "stdout",
            Pipe::Stderr => "stderr",
        }
    }
}

/// Lines of a pipe that does not carry the metrics looked at for metric lines, to
/// say once where the metrics seem to be.
const HINT_LINES: usize = 256;

/// Reads one of the program's pipes to its end: metric lines (when this pipe
/// carries the metrics) become points, everything else log lines at the pipe's
/// level. `hint`: the other pipe carries the metrics; say so if this one has them.
async fn read_output(mut pipe: impl AsyncRead + Unpin, which: Pipe, mut metrics: Option<MetricStream>, hint: bool, mut sink: Sink) {
    let level = which.level();
    let mut splitter = LineSplitter::default();
    let mut buf = vec![0u8; 64 * 1024];
    let mut skips = 0;
    let mut unprobed = if hint && metrics.is_none() { HINT_LINES } else { 0 };
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for line in splitter.push(&buf[..n]) {
            let mut outs = Vec::new();
            if unprobed > 0 && !line.too_long() && !line.bytes.iter().all(u8::is_ascii_whitespace) {
                unprobed -= 1;
                if stream::reads_as_metrics(&line) {
                    unprobed = 0;
                    outs.push(StreamOut::Text(wrong_pipe_hint(which, &line)));
                }
            }
            match &mut metrics {
                Some(m) => outs.extend(m.line(line, sink.now_s())),
                // A progress bar's states drawn over each other: only the last is shown.
                None if line.overwritten => {}
                None => outs.push(StreamOut::Text(stream::log_text(&line))),
            }
            if sink.stream(outs, level, &mut skips).await.is_err() {
                return;
            }
        }
        // What the program wrote so far is read: show its latest step now.
        if let Some(m) = &mut metrics {
            let outs = m.flush();
            if sink.stream(outs, level, &mut skips).await.is_err() {
                return;
            }
        }
    }
    let mut outs = Vec::new();
    let now = sink.now_s();
    if let Some(line) = splitter.finish() {
        match &mut metrics {
            Some(m) => outs.extend(m.line(line, now)),
            None => outs.push(StreamOut::Text(stream::log_text(&line))),
        }
    }
    if let Some(m) = &mut metrics {
        outs.extend(m.finish(now));
    }
    if sink.stream(outs, level, &mut skips).await.is_ok() {
        sink.flush().await;
    }
}

/// Waits `period` between two polls of a followed source, or until `stop`.
pub(crate) async fn pause(period: Duration, stop: &CancellationToken) {
    tokio::select! {
        _ = tokio::time::sleep(period) => {}
        _ = stop.cancelled() => {}
    }
}

/// Starts following a metrics file, an event folder or a glob's files until `stop`;
/// `None` for stdout. The task ends with the outcome the source itself recorded (a
/// W&B run's exit record), if it did: the run is over then.
pub(crate) fn follow(source: &MetricsSource, format: Option<Format>, sink: Sink, stop: CancellationToken) -> Option<tokio::task::JoinHandle<Option<RunOutcome>>> {
    Some(match source {
        MetricsSource::Stdout | MetricsSource::Stderr => return None,
        MetricsSource::File(path) => tokio::spawn(follow_file(path.clone(), MetricStream::new(path, format, false), sink, stop)),
        MetricsSource::TensorBoard(dir) => tokio::spawn(follow_events(dir.clone(), sink, stop)),
        MetricsSource::Glob(pattern) => {
            let pattern = pattern.clone();
            tokio::spawn(async move {
                follow_glob(pattern, format, sink, stop).await;
                None
            })
        }
        MetricsSource::MlFlow(run) => tokio::spawn(follow_until_stopped(MlflowRun::of_run(run), sink, stop)),
        MetricsSource::MlFlowStore(store) => tokio::spawn(follow_until_stopped(MlflowRun::first_new_in(store), sink, stop)),
        MetricsSource::Wandb(run) => tokio::spawn(follow_until_stopped(trackers::WandbRun::of_run(run), sink, stop)),
        MetricsSource::WandbDir(dir) => tokio::spawn(follow_until_stopped(trackers::WandbRun::first_new_in(dir), sink, stop)),
        MetricsSource::Trackio { db, run } => tokio::spawn(follow_until_stopped(trackers::TrackioRun::new(db, run.clone()), sink, stop)),
    })
}

/// Follows every file matching `pattern` until `stop`, each as the stream of one
/// rank (the number in its name, else its place among the files found); files
/// that appear later are followed from then on. A file last written before the
/// run started is an earlier run's: it waits until the program writes it again.
async fn follow_glob(pattern: std::path::PathBuf, format: Option<Format>, mut log: Sink, stop: CancellationToken) {
    let (tx, run, started, name) = (log.tx.clone(), log.run, log.started, log.name.clone());
    let sink = || Sink { tx: tx.clone(), run, name: name.clone(), started, dropped: 0 };
    let Ok(glob) = glob::FileGlob::new(&pattern) else { return };
    // A little before this run's start: file times may be coarse.
    let since = std::time::SystemTime::now() - Duration::from_secs(1);
    let mut followed: Vec<std::path::PathBuf> = Vec::new();
    let mut stale: Vec<std::path::PathBuf> = Vec::new();
    let mut tailers = Vec::new();
    loop {
        let last = stop.is_cancelled();
        for path in glob.list() {
            if followed.contains(&path) {
                continue;
            }
            let modified = std::fs::metadata(&path).and_then(|m| m.modified());
            if modified.is_ok_and(|m| m < since) {
                if !stale.contains(&path) {
                    let message = format!("{} was written before this run: read once the program writes it", path.display());
                    if log.log(LogLevel::Info, message).is_err() {
                        break;
                    }
                    stale.push(path);
                }
                continue;
            }
            let rank = stream::rank_of_file(&path).unwrap_or(followed.len() as u32);
            let metrics = MetricStream::new(&path, format.clone(), false).with_rank(Some(rank));
            let message = format!("rank {rank}: following {}", path.display());
            tailers.push(tokio::spawn(follow_file(path.clone(), metrics, sink(), stop.clone())));
            followed.push(path);
            if log.log(LogLevel::Info, message).is_err() {
                break;
            }
        }
        if last {
            break;
        }
        pause(TAIL_PERIOD, &stop).await;
    }
    if followed.is_empty() {
        let _ = log.log(LogLevel::Warn, format!("no file matched {}: no metrics were read", pattern.display()));
    }
    log.flush().await;
    for tailer in tailers {
        let _ = tailer.await;
    }
}

/// A source a run's metrics are followed from: polled every [`TAIL_PERIOD`] while
/// the program runs, read one last time when it ends.
trait Followed {
    /// What is new since the last poll: points and notes for the events pane.
    fn poll(&mut self, now_s: f64, notes: &mut Vec<String>) -> std::io::Result<Vec<StreamOut>>;
    /// The end of the source: what is left (a last line without its newline, streams
    /// finishing) and notes (a source that never appeared).
    fn finish(&mut self, now_s: f64, notes: &mut Vec<String>) -> Vec<StreamOut>;
    /// The source, in a sentence: `metrics file x`.
    fn what(&self) -> String;
    /// The unit skipped lines are counted in: `lines of the metrics file`.
    fn skipped_unit(&self) -> &'static str;
    /// How the run ended, when the source itself records it (a W&B exit record):
    /// following stops once it is known.
    fn outcome(&self) -> Option<RunOutcome> {
        None
    }
}

/// Follows `source` until `stop` (or until the source records the run's end), then
/// reads it one last time. A read that fails is said once, and again only after
/// one has worked. Returns the outcome the source recorded.
async fn follow_until_stopped(mut source: impl Followed, mut sink: Sink, stop: CancellationToken) -> Option<RunOutcome> {
    let mut skips = 0;
    let mut failing = false;
    let mut notes = Vec::new();
    loop {
        let last = stop.is_cancelled() || source.outcome().is_some();
        match source.poll(sink.now_s(), &mut notes) {
            Ok(outs) => {
                failing = false;
                for note in notes.drain(..) {
                    if sink.log(LogLevel::Info, note).is_err() {
                        return None;
                    }
                }
                if sink.stream(outs, LogLevel::Info, &mut skips).await.is_err() {
                    return None;
                }
            }
            Err(e) if !failing => {
                failing = true;
                if sink.log(LogLevel::Warn, format!("cannot read {}: {e}", source.what())).is_err() {
                    return None;
                }
            }
            Err(_) => {}
        }
        if last || source.outcome().is_some() {
            break;
        }
        pause(TAIL_PERIOD, &stop).await;
    }
    let outs = source.finish(sink.now_s(), &mut notes);
    for note in notes {
        let _ = sink.log(LogLevel::Warn, note);
    }
    if sink.stream(outs, LogLevel::Info, &mut skips).await.is_ok() {
        if skips > SKIPS_SHOWN {
            let _ = sink.log(LogLevel::Warn, format!("{skips} {} skipped in all", source.skipped_unit()));
        }
        sink.flush().await;
    }
    source.outcome()
}

/// A folder of TensorBoard event files. Each folder under it is one stream (its
/// own steps, resumes and report).
struct EventFolder {
    dir: std::path::PathBuf,
    events: events_dir::EventDir,
    streams: std::collections::BTreeMap<String, MetricStream>,
}

impl Followed for EventFolder {
    fn poll(&mut self, now_s: f64, _: &mut Vec<String>) -> std::io::Result<Vec<StreamOut>> {
        let mut outs = Vec::new();
        for r in self.events.poll()? {
            let dir = &self.dir;
            let stream = self.streams.entry(r.stream.clone()).or_insert_with(|| MetricStream::new(dir, Some(Format::TensorBoard), false));
            outs.extend(stream.record(events_dir::prefixed(&r.stream, r.line), now_s));
        }
        for stream in self.streams.values_mut() {
            outs.extend(stream.flush());
        }
        Ok(outs)
    }

    fn finish(&mut self, now_s: f64, notes: &mut Vec<String>) -> Vec<StreamOut> {
        if self.events.files() == 0 {
            notes.push(format!("no TensorBoard event files appeared under {}: no metrics were read", self.dir.display()));
        }
        self.streams.values_mut().flat_map(|s| s.finish(now_s)).collect()
    }

    fn what(&self) -> String {
        format!("event files under {}", self.dir.display())
    }

    fn skipped_unit(&self) -> &'static str {
        "records of the event files"
    }
}

/// An MLflow run: its metric files, each a metric, merged by step. A command's
/// run is not known when it starts: it is the first run that appears in the
/// store the program logs to.
struct MlflowRun {
    /// The run followed, once known.
    run: Option<(std::path::PathBuf, mlflow_dir::RunFiles)>,
    /// The store searched for a new run, and the runs it held before.
    store: Option<(std::path::PathBuf, Vec<std::path::PathBuf>)>,
    /// Whether the followed run was named in the notes yet.
    announced: bool,
    stream: MetricStream,
}

impl MlflowRun {
    fn of_run(run: &std::path::Path) -> Self {
        let files = mlflow_dir::RunFiles::new(run.to_path_buf());
        MlflowRun { run: Some((run.to_path_buf(), files)), store: None, announced: true, stream: MetricStream::new(run, Some(Format::MlFlow), false) }
    }

    /// The first run created under `store` from now on (runs already there are
    /// earlier programs').
    fn first_new_in(store: &std::path::Path) -> Self {
        let before = mlflow_dir::runs_under(store);
        MlflowRun { run: None, store: Some((store.to_path_buf(), before)), announced: false, stream: MetricStream::new(store, Some(Format::MlFlow), false) }
    }

    /// Looks for the new run until one appears.
    fn find_run(&mut self, notes: &mut Vec<String>) {
        let Some((store, before)) = self.store.as_ref().filter(|_| self.run.is_none()) else { return };
        let new: Vec<_> = mlflow_dir::runs_under(store).into_iter().filter(|r| !before.contains(r)).collect();
        let Some(run) = new.first() else { return };
        if new.len() > 1 {
            notes.push(format!("{} other new runs under {} are not followed (one command is one run)", new.len() - 1, store.display()));
        }
        self.run = Some((run.clone(), mlflow_dir::RunFiles::new(run.clone())));
    }

    /// Notes which run is followed, by name: once its `mlflow.runName` tag or its
    /// first metric file is written (MLflow writes the run's folder, then its
    /// tags, then metrics: a run found in between would be named by its id), or
    /// when the job ends.
    fn announce(&mut self, notes: &mut Vec<String>, ending: bool) {
        let Some((run, files)) = self.run.as_ref().filter(|_| !self.announced) else { return };
        if ending || mlflow_dir::has_run_name(run) || files.files() > 0 {
            notes.push(format!("following MLflow run {} ({})", mlflow_dir::run_name(run), run.display()));
            self.announced = true;
        }
    }
}

impl Followed for MlflowRun {
    fn poll(&mut self, now_s: f64, notes: &mut Vec<String>) -> std::io::Result<Vec<StreamOut>> {
        self.find_run(notes);
        let mut outs = Vec::new();
        let Some((_, files)) = self.run.as_mut() else { return Ok(outs) };
        for line in files.poll()? {
            outs.extend(self.stream.record(line, now_s));
        }
        outs.extend(self.stream.flush());
        self.announce(notes, false);
        Ok(outs)
    }

    fn finish(&mut self, now_s: f64, notes: &mut Vec<String>) -> Vec<StreamOut> {
        self.find_run(notes);
        self.announce(notes, true);
        let mut outs = Vec::new();
        match self.run.as_mut() {
            Some((run, files)) => {
                for line in files.finish() {
                    outs.extend(self.stream.record(line, now_s));
                }
                if files.files() == 0 {
                    notes.push(format!("no MLflow metric files appeared under {}: no metrics were read", run.join("metrics").display()));
                }
            }
            None => {
                let store = self.store.as_ref().map(|s| s.0.display().to_string()).unwrap_or_default();
                notes.push(format!("no new MLflow run appeared under {store}: no metrics were read (does the program log to this store? MLFLOW_TRACKING_URI)"));
            }
        }
        outs.extend(self.stream.finish(now_s));
        outs
    }

    fn what(&self) -> String {
        match (&self.run, &self.store) {
            (Some((run, _)), _) => format!("MLflow metric files under {}", run.join("metrics").display()),
            (None, Some((store, _))) => format!("the MLflow store {}", store.display()),
            (None, None) => "an MLflow run".into(),
        }
    }

    fn skipped_unit(&self) -> &'static str {
        "lines of the metric files"
    }
}

/// A metrics file, surviving truncation and rotation.
struct MetricsFile {
    path: std::path::PathBuf,
    tail: tail::Tail,
    splitter: LineSplitter,
    metrics: MetricStream,
}

impl Followed for MetricsFile {
    fn poll(&mut self, now_s: f64, notes: &mut Vec<String>) -> std::io::Result<Vec<StreamOut>> {
        let read = self.tail.poll()?;
        let mut lines = self.splitter.push(&read.bytes);
        if let Some(restart) = read.restarted {
            // A partial line of the old file never gets its end.
            self.splitter.reset();
            notes.push(format!("metrics file {} was {}: reading it from the start", self.path.display(), restart.why));
            lines.extend(self.splitter.push(&restart.after));
        }
        let mut outs: Vec<StreamOut> = lines.into_iter().flat_map(|l| self.metrics.line(l, now_s)).collect();
        outs.extend(self.metrics.flush());
        Ok(outs)
    }

    fn finish(&mut self, now_s: f64, notes: &mut Vec<String>) -> Vec<StreamOut> {
        let mut outs = Vec::new();
        if let Some(line) = self.splitter.finish() {
            outs.extend(self.metrics.line(line, now_s));
        }
        outs.extend(self.metrics.finish(now_s));
        if !self.tail.found() {
            notes.push(format!("metrics file {} never appeared: no metrics were read", self.path.display()));
        }
        outs
    }

    fn what(&self) -> String {
        format!("metrics file {}", self.path.display())
    }

    fn skipped_unit(&self) -> &'static str {
        "lines of the metrics file"
    }
}

/// Follows a folder of TensorBoard event files until `stop`, then reads it one last time.
async fn follow_events(dir: std::path::PathBuf, sink: Sink, stop: CancellationToken) -> Option<RunOutcome> {
    let source = EventFolder { events: events_dir::EventDir::new(dir.clone()), dir, streams: Default::default() };
    follow_until_stopped(source, sink, stop).await
}

/// Follows a metrics file until `stop`, then reads it one last time.
async fn follow_file(path: std::path::PathBuf, metrics: MetricStream, sink: Sink, stop: CancellationToken) -> Option<RunOutcome> {
    let source = MetricsFile { tail: tail::Tail::new(path.clone()), path, splitter: LineSplitter::default(), metrics };
    follow_until_stopped(source, sink, stop).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store watched for a new run, then a run created in it (its `meta.yaml`
    /// and `folder`, no tags yet): (the store's guard, what follows it, the run).
    fn store_with_new_run(id: &str, folder: &str) -> (tempfile::TempDir, MlflowRun, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("mlruns");
        std::fs::create_dir_all(&store).unwrap();
        let followed = MlflowRun::first_new_in(&store);
        let run = store.join("0").join(id);
        std::fs::create_dir_all(run.join(folder)).unwrap();
        std::fs::write(run.join("meta.yaml"), format!("run_id: {id}\n")).unwrap();
        (dir, followed, run)
    }

    /// A run found between its folder and its `mlflow.runName` tag is named by the
    /// tag once it is written, not by its id.
    #[test]
    fn a_new_mlflow_run_is_announced_by_its_name_once_the_tag_is_written() {
        let (_dir, mut followed, run) = store_with_new_run("a1b2c3", "metrics");
        std::fs::create_dir_all(run.join("tags")).unwrap();
        let mut notes = Vec::new();
        followed.poll(0.0, &mut notes).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        std::fs::write(run.join("tags/mlflow.runName"), "bright-owl-7").unwrap();
        followed.poll(0.1, &mut notes).unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("following MLflow run bright-owl-7"), "{notes:?}");
        followed.finish(0.2, &mut notes);
        assert_eq!(notes.iter().filter(|n| n.starts_with("following")).count(), 1, "{notes:?}");
    }

    /// A run that never writes the tag is named by its id when the job ends.
    #[test]
    fn a_new_mlflow_run_without_a_name_is_announced_by_its_id_at_the_end() {
        let (_dir, mut followed, _run) = store_with_new_run("d4e5f6", "params");
        let mut notes = Vec::new();
        followed.poll(0.0, &mut notes).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        followed.finish(0.1, &mut notes);
        assert!(notes.iter().any(|n| n.starts_with("following MLflow run d4e5f6")), "{notes:?}");
    }
}
