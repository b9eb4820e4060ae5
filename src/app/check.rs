//! `rlmon check FILE`: the live detectors over a JSONL metrics log, fed through the
//! same hub as a live session, or over a recorded session (snapshot or journal),
//! replayed with its own detector settings. Exit 0 when no alert reaches --fail-on,
//! 1 when one does, 2 when the file cannot be read or holds no metrics.
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::cli::{CheckArgs, FailOn};
use crate::error::{Result, RlmonError, EXIT_FAILURE};
use crate::health::context::{self, Moved};
pub use crate::health::judged::NotJudged;
use crate::health::{Alert, HealthConfig, SessionHealth, Severity};
use crate::ingest::normalize::{Emit, Normalizer, StreamReport};
use crate::ingest::{self, Format, Line, LineReader, Record, SkipKind};
use crate::session::event::rank_run_name;
use crate::session::hub::HealthCall;
use crate::session::{Event, Hub, RunRecord, SessionState};

#[derive(Debug, Serialize)]
pub struct CheckReport {
    /// The input format read (`jsonl`, `csv`, `megatron`, ..., `snapshot`).
    pub format: String,
    /// Other formats tried, which read no metric: before `format` when it read the
    /// input (the detected one first), or after it when none did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tried: Vec<String>,
    pub runs: Vec<CheckedRun>,
    pub alerts: Vec<CheckedAlert>,
    /// Steps with metrics read, over every run.
    pub points: u64,
    /// Lines that were not usable metric lines, skipped.
    pub skipped_lines: u64,
    /// Skipped lines by reason: how many, and the first one's line number and message.
    pub skipped: BTreeMap<SkipKind, Skipped>,
    /// The first skipped line and why, for the text report.
    #[serde(skip)]
    pub first_skipped: Option<(usize, String)>,
}

/// An alert as design.md writes it, and the other metrics of its run that moved
/// around its step (`moved`, most first), so a CI log says more than "loss spiked".
#[derive(Debug, Clone, Serialize)]
pub struct CheckedAlert {
    #[serde(flatten)]
    pub alert: Alert,
    pub moved: Vec<Moved>,
}

impl std::ops::Deref for CheckedAlert {
    type Target = Alert;
    fn deref(&self) -> &Alert {
        &self.alert
    }
}

/// The alerts of `state`, each with its context.
fn with_context(state: &SessionState) -> Vec<CheckedAlert> {
    state
        .alerts
        .iter()
        .map(|a| {
            let series = state.runs.iter().find(|r| r.name == a.run).map(|r| &r.series);
            let moved = series.map(|s| context::context(s, &a.metric, a.step, &Default::default()).moved).unwrap_or_default();
            CheckedAlert { alert: a.clone(), moved }
        })
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub lines: u64,
    pub first_line: usize,
    pub first: String,
}

#[derive(Debug, Serialize)]
pub struct CheckedRun {
    pub name: String,
    pub points: u64,
    pub last_step: u64,
    /// The worst alert severity of the run, or null.
    pub worst: Option<Severity>,
    pub alerts: usize,
    /// What was read as what, ignored, merged or resumed (logs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<StreamReport>,
    /// Detectors that could not judge this run, and why.
    pub not_judged: Vec<NotJudged>,
    /// What its tracker recorded besides metrics (W&B and trackio runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracker: Option<TrackedRun>,
}

/// A tracker's run as its files describe it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TrackedRun {
    /// `wandb` or `trackio`.
    pub tracker: &'static str,
    /// The file read.
    pub file: String,
    pub id: String,
    pub project: String,
    /// The run's config, flattened (`model.d`), values as JSON.
    pub config: BTreeMap<String, String>,
    /// The run's summary (W&B), values as JSON.
    pub summary: BTreeMap<String, String>,
    /// The script's exit code, from the run's exit record (W&B); none when the run
    /// did not record its end (still running, or killed).
    pub exit_code: Option<i32>,
    /// Records (W&B) or rows (trackio) read.
    pub records: u64,
    /// Damaged blocks skipped (the rest of each block unread).
    pub damaged_blocks: u64,
    /// Records that did not decode.
    pub malformed_records: u64,
    /// The file ends inside a record (the run stopped while writing it).
    pub cut_short: bool,
}

impl TrackedRun {
    /// Whether the run recorded a failed end.
    pub fn failed(&self) -> bool {
        self.exit_code.is_some_and(|c| c != 0)
    }
}

/// Detectors of `settings` that could not judge `run` (health::judged).
fn not_judged(run: &RunRecord, settings: &HealthConfig) -> Vec<NotJudged> {
    crate::health::judged::not_judged(settings, run.series.keys().map(String::as_str), |m| run.series(m).map(crate::health::judged::Logged::of))
}

/// Analyses log text in `format`; `default_run` names records without a run.
pub fn analyse(text: &[u8], format: Format, default_run: &str, default_metric: Option<String>) -> std::result::Result<CheckReport, String> {
    analyse_sources(&[(default_run, text)], format, default_metric)
}

/// Analyses several inputs of one format (the event files of a TensorBoard folder),
/// each `(default run, text)`; records of one run name form one stream, in order.
pub fn analyse_sources(sources: &[(&str, &[u8])], format: Format, default_metric: Option<String>) -> std::result::Result<CheckReport, String> {
    let session = sources.first().map_or("log", |s| s.0);
    analyse_stream(&format, session, |reading| {
        for (default_run, text) in sources {
            let mut reader = LineReader::new(format.clone(), default_metric.clone());
            ingest::read_all(text, &mut reader, |line_no, line| reading.line(default_run, line_no, line))?;
        }
        Ok(())
    })
}

/// Analyses a log file of a line format, read a chunk at a time: memory does not
/// hold the file, and parsing overlaps the detectors.
fn analyse_file(path: &Path, format: Format, default_run: &str, default_metric: Option<String>) -> std::result::Result<CheckReport, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read: {e}"))?;
    analyse_stream(&format.clone(), default_run, move |reading| {
        let mut reader = LineReader::new(format, default_metric);
        ingest::read_lines(file, &mut reader, |line_no, line| reading.line(default_run, line_no, line))
            .map_err(|e| format!("cannot read: {e}"))
    })
}

/// Analyses a log file in the format detected from its first lines; when that reads
/// no metric line, in the first of the other line formats that reads one (the report
/// says which, and what read nothing before it). With none, the detected format's
/// report, naming the others tried.
fn analyse_detected(path: &Path, detected: Format, default_run: &str, default_metric: Option<String>) -> std::result::Result<CheckReport, String> {
    let (format, tried) = ingest::settle(|| std::fs::File::open(path), detected, default_metric.clone()).map_err(|e| format!("cannot read: {e}"))?;
    let mut report = analyse_file(path, format, default_run, default_metric)?;
    report.tried = tried.into_iter().map(str::to_owned).collect();
    Ok(report)
}

/// What the reading side hands the analysing side, in input order.
enum Read {
    /// A stream met for the first time: the run it belongs to, and its rank.
    Stream { name: String, rank: Option<u32> },
    /// What stream `n` (in order of first appearance) made complete: one step, or a
    /// resume (one item each, so a record adds no vector of its own).
    Emit(usize, Emit),
    /// An alert the script raised (through its tracker), for run `name`.
    Alert(String, Alert),
}

/// Items sent from the reading side at a time.
const BATCH: usize = 1024;

/// The reading side of an analysis: lines parsed, split into streams and made
/// canonical, skipped lines counted; what is complete goes to the hub in batches.
struct Reading {
    keys: HashMap<String, usize>,
    /// Each stream's key (its run's name) and normalizer, in order of appearance.
    streams: Vec<(String, Normalizer)>,
    skipped: BTreeMap<SkipKind, Skipped>,
    /// The last record's input (its default run), run and rank, and its stream.
    last: Option<(String, Option<String>, Option<u32>, usize)>,
    /// What a record completed, before it goes into the batch (kept for its allocation).
    emits: Vec<Emit>,
    /// Field names by place, none holding the separator of a CSV row's runs.
    plain: Vec<ingest::FieldName>,
    batch: Vec<Read>,
    to_hub: Option<std::sync::mpsc::SyncSender<Vec<Read>>>,
    /// Values vectors judged, for the normalizers to fill again.
    spent: std::sync::mpsc::Receiver<Vec<Values>>,
}

/// A step's values, as the normalizer makes them and the detectors read them.
type Values = Vec<(crate::metrics::MetricName, f64)>;

impl Reading {
    fn line(&mut self, default_run: &str, line_no: usize, line: Line) {
        match line {
            // A CSV row of several runs' columns is a record per run.
            Line::Metrics(rec) if self.of_several_runs(&rec) => {
                for rec in ingest::csv::split_runs(rec) {
                    self.record(default_run, rec);
                }
            }
            Line::Metrics(rec) => self.record(default_run, rec),
            Line::Skip(kind, why) => {
                let s = self.skipped.entry(kind).or_insert_with(|| Skipped { lines: 0, first_line: line_no, first: why });
                s.lines += 1;
            }
            Line::Text => {
                let kind = SkipKind::NotMetrics;
                self.skipped.entry(kind).or_insert_with(|| Skipped { lines: 0, first_line: line_no, first: kind.as_str().into() }).lines += 1;
            }
            Line::Blank => {}
        }
    }

    /// Whether a field's name holds the separator of a CSV row's runs (looked for
    /// only in names not met at their place in the record before).
    fn of_several_runs(&mut self, rec: &Record) -> bool {
        for (i, (k, _)) in rec.fields.iter().enumerate() {
            if self.plain.get(i).is_some_and(|p| p.same(k)) {
                continue;
            }
            if k.contains('\u{1f}') {
                return true;
            }
            match self.plain.get_mut(i) {
                Some(p) => *p = k.clone(),
                None => self.plain.push(k.clone()),
            }
        }
        false
    }

    /// One record to its stream's normalizer.
    fn record(&mut self, default_run: &str, rec: Record) {
        // Most records belong to the stream of the record before them.
        let n = match &self.last {
            Some((default, run, rank, n)) if *run == rec.run && *rank == rec.rank && default == default_run => *n,
            _ => {
                let n = self.stream(default_run, &rec);
                self.last = Some((default_run.to_owned(), rec.run.clone(), rec.rank, n));
                n
            }
        };
        let mut emits = std::mem::take(&mut self.emits);
        self.streams[n].1.push_into(rec, &mut emits);
        for e in emits.drain(..) {
            self.send(Read::Emit(n, e));
        }
        self.emits = emits;
    }

    /// The stream of a record, in order of first appearance.
    fn stream(&mut self, default_run: &str, rec: &Record) -> usize {
        let name = rec.run.clone().unwrap_or_else(|| default_run.to_owned());
        // A rank's records are a stream of their own, a run under its job.
        let key = rec.rank.map_or_else(|| name.clone(), |rank| rank_run_name(&name, rank));
        match self.keys.get(&key) {
            Some(n) => *n,
            None => {
                let n = self.streams.len();
                self.keys.insert(key.clone(), n);
                self.streams.push((key, Normalizer::default()));
                self.batch.push(Read::Stream { name, rank: rec.rank });
                n
            }
        }
    }

    /// An alert the script raised for run `run`, in input order.
    fn alert(&mut self, run: &str, alert: Alert) {
        self.send(Read::Alert(run.to_owned(), alert));
    }

    fn send(&mut self, read: Read) {
        self.batch.push(read);
        if self.batch.len() >= BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if !self.batch.is_empty() {
            // The hub side only stops early by panicking: nothing to do then.
            if let Some(to_hub) = &self.to_hub {
                let _ = to_hub.send(std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH)));
            }
        }
        // To the stream read last: most logs are one stream.
        if let Some((.., n)) = self.last {
            while let Ok(spent) = self.spent.try_recv() {
                spent.into_iter().for_each(|values| self.streams[n].1.reuse(values));
            }
        }
    }

    /// Each stream's last step, streams in the order of their keys.
    fn finish(&mut self) {
        let mut order: Vec<usize> = (0..self.streams.len()).collect();
        order.sort_by(|a, b| self.streams[*a].0.cmp(&self.streams[*b].0));
        for n in order {
            for e in self.streams[n].1.finish() {
                self.send(Read::Emit(n, e));
            }
        }
        self.flush();
        // The hub side reads until the channel closes.
        self.to_hub = None;
    }
}

/// Runs `read` (which calls `Reading::line` for each line of the input) on a thread
/// of its own, feeding what it completes through a hub of session `session` on this
/// one, and reports. The runs' detectors judge on a third thread, a batch behind the
/// hub: their alerts are stored once every point is in.
fn analyse_stream(
    format: &Format,
    session: &str,
    read: impl FnOnce(&mut Reading) -> std::result::Result<(), String> + Send,
) -> std::result::Result<CheckReport, String> {
    let format_name = format.name().to_owned();
    let strict = format.strict();
    let mut hub = Hub::new(SessionState::new(session.to_owned(), Vec::new())).judged_elsewhere();
    let (to_hub, from_reading) = std::sync::mpsc::sync_channel::<Vec<Read>>(16);
    let (to_judge, from_hub) = std::sync::mpsc::sync_channel::<Vec<HealthCall>>(16);
    // The steps' values vectors, once judged, go back to the reading side to be
    // filled again: no allocation there, no free on the judging thread.
    let (to_reuse, spent) = std::sync::mpsc::channel::<Vec<Values>>();
    let reading = std::thread::scope(|scope| {
        let judging = scope.spawn(move || {
            let (mut health, mut raised) = (SessionHealth::new(), Vec::new());
            for calls in from_hub {
                let judged: Vec<Values> = calls.into_iter().filter_map(|call| call.judge(&mut health, &mut raised)).collect();
                // The reading side may be done: the vectors are freed then.
                let _ = to_reuse.send(judged);
            }
            raised
        });
        let reader = scope.spawn(move || {
            let mut reading = Reading { keys: HashMap::new(), streams: Vec::new(), skipped: BTreeMap::new(), last: None, emits: Vec::new(), plain: Vec::new(), batch: Vec::with_capacity(BATCH), to_hub: Some(to_hub), spent };
            let done = read(&mut reading);
            reading.finish();
            done.map(|()| reading)
        });
        let mut runs: Vec<usize> = Vec::new();
        for batch in from_reading {
            for item in batch {
                match item {
                    Read::Stream { name, rank } => {
                        let job = hub.state.runs.iter().position(|r| r.name == name && r.rank_of.is_none());
                        let job = job.unwrap_or_else(|| hub.add_run(RunRecord::new(name.clone(), "log".into(), "-".into(), 0), &HealthConfig::default()));
                        runs.push(rank.and_then(|rank| hub.rank_run(job, rank)).unwrap_or(job));
                    }
                    Read::Emit(n, emit) => feed(&mut hub, runs[n], emit),
                    Read::Alert(name, mut alert) => {
                        let run = hub.state.runs.iter().position(|r| r.name == name && r.rank_of.is_none());
                        let run = run.unwrap_or_else(|| hub.add_run(RunRecord::new(name.clone(), "log".into(), "-".into(), 0), &HealthConfig::default()));
                        let now = hub.state.time_s;
                        alert.run = name;
                        alert.time_s = now;
                        hub.apply(Event::Alert { run: Some(run), alert }, now);
                    }
                }
            }
            // The judging side only stops early by panicking: joined below.
            let _ = to_judge.send(hub.take_health_calls());
        }
        let _ = to_judge.send(hub.take_health_calls());
        drop(to_judge);
        let raised = judging.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        for (run, alert, time_s) in raised {
            hub.raise_judged(run, alert, time_s);
        }
        reader.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    let Reading { streams, mut skipped, .. } = reading;
    let reports: HashMap<String, StreamReport> = streams.into_iter().map(|(key, n)| (key, n.report)).collect();
    let settings = hub.settings.clone();
    let state = hub.state;
    let runs = state
        .runs
        .iter()
        .zip(&settings)
        .map(|(r, settings)| {
            let input = reports.get(&r.name).cloned();
            CheckedRun {
                name: r.name.clone(),
                points: input.as_ref().map_or(0, |i| i.points),
                last_step: r.step,
                worst: r.worst_alert(&state.alerts, |_| true),
                alerts: r.alerts.len(),
                input,
                not_judged: not_judged(r, settings),
                tracker: None,
            }
        })
        .collect::<Vec<_>>();
    // Text logs hold other output between metric lines: that is not a skip.
    if !strict {
        skipped.remove(&SkipKind::NotMetrics);
    }
    let first_skipped = skipped.values().min_by_key(|s| s.first_line).map(|s| (s.first_line, s.first.clone()));
    Ok(CheckReport {
        format: format_name,
        tried: Vec::new(),
        points: runs.iter().map(|r| r.points).sum(),
        runs,
        alerts: with_context(&state),
        skipped_lines: skipped.values().map(|s| s.lines).sum(),
        skipped,
        first_skipped,
    })
}

/// A stream's completed steps into the hub, as run `run`.
fn feed(hub: &mut Hub, run: usize, emit: Emit) {
    match emit {
        Emit::Point(p) => hub.apply(Event::Metrics { run, step: p.step, time_s: p.time_s, values: p.values }, p.time_s),
        Emit::Resumed(r) => {
            let now = hub.state.time_s;
            hub.resume(run, r.at_step, now);
        }
    }
}

impl CheckReport {
    pub fn worst(&self) -> Option<Severity> {
        self.alerts.iter().map(|a| a.severity).max()
    }

    pub fn to_text(&self, path: &Path) -> String {
        let format = match self.tried.as_slice() {
            [] => self.format.clone(),
            tried => format!("read as {}; {} read nothing", self.format, tried.join(", ")),
        };
        let mut out = format!("{} ({format}): {} points, {} run(s)", path.display(), self.points, self.runs.len());
        if self.skipped_lines > 0 {
            let _ = write!(out, ", {} line(s) skipped", self.skipped_lines);
            let by_kind: Vec<String> = self.skipped.iter().map(|(k, s)| format!("{} {}", s.lines, k.as_str())).collect();
            let _ = write!(out, " ({})", by_kind.join(", "));
            if let Some((line, why)) = &self.first_skipped {
                let _ = write!(out, "; first: line {line}: {why}");
            }
        }
        out.push('\n');
        for r in &self.runs {
            let worst = r.worst.map_or("ok", Severity::as_str);
            let _ = writeln!(out, "  {:<20} {:>7} points, last step {:>7}, {} alert(s), worst: {worst}", r.name, r.points, r.last_step, r.alerts);
            if let Some(input) = &r.input {
                // A wide log names its fields by the thousand: the text shows the first
                // ones and a count (the JSON report has them all).
                const SHOWN: usize = 40;
                let mut read: Vec<String> = input.read.iter().take(SHOWN).map(|(from, to)| if from == to { from.clone() } else { format!("{from} as {to}") }).collect();
                if input.read.len() > SHOWN {
                    read.push(format!("… and {} more", input.read.len() - SHOWN));
                }
                let _ = writeln!(out, "    read: {}", read.join(", "));
                if input.over_metric_limit > 0 {
                    let max = crate::ingest::normalize::MAX_METRICS;
                    let _ = writeln!(out, "    {} value(s) dropped: the log names more than {max} distinct metrics", input.over_metric_limit);
                }
                for (name, close) in &input.unknown_close_to {
                    let _ = writeln!(out, "    kept as its own name: {name} (did you mean {close}?)");
                }
                if !input.ignored.is_empty() {
                    let ignored: Vec<String> = input.ignored.iter().map(|(n, c)| c.as_ref().map_or(n.clone(), |c| format!("{n} (closest: {c})"))).collect();
                    let _ = writeln!(out, "    ignored (not numbers): {}", ignored.join(", "));
                }
                if input.duplicate_steps > 0 {
                    let _ = writeln!(out, "    {} step(s) logged twice with other values (the later kept, unless the earlier was NaN or infinite)", input.duplicate_steps);
                }
                for resume in &input.resumed {
                    let _ = writeln!(out, "    resumed at step {} ({} steps discarded)", resume.at_step, resume.discarded);
                }
            }
            if let Some(t) = &r.tracker {
                let _ = writeln!(out, "{}", tracked_text(t));
            }
            for n in &r.not_judged {
                let _ = writeln!(out, "    {} not judged: {}", n.kind.as_str(), n.reason);
            }
        }
        for a in &self.alerts {
            let _ = write!(out, "  {:<8} {:<20} step {:>7}  {:<21} {}", a.severity.as_str(), a.run, a.step, a.kind.as_str(), a.message);
            let moved: Vec<String> = a.moved.iter().take(3).map(Moved::short).collect();
            if !moved.is_empty() {
                let _ = write!(out, " · moved: {}", moved.join(", "));
            }
            out.push('\n');
        }
        out
    }
}

/// A tracker's run in the text report: where it came from, how it ended, its
/// config and summary (the first few), what could not be read.
fn tracked_text(t: &TrackedRun) -> String {
    const SHOWN: usize = 12;
    let shown = |m: &BTreeMap<String, String>| {
        let mut items: Vec<String> = m.iter().take(SHOWN).map(|(k, v)| format!("{k}={v}")).collect();
        if m.len() > SHOWN {
            items.push(format!("… and {} more", m.len() - SHOWN));
        }
        items.join(", ")
    };
    let who = match t.tracker {
        "wandb" => format!("W&B run {}", t.id),
        _ => "trackio run".to_owned(),
    };
    let project = if t.project.is_empty() { String::new() } else { format!(" of project {}", t.project) };
    let end = match t.exit_code {
        Some(0) => ": finished (exit code 0)".to_owned(),
        Some(code) => format!(": FAILED with exit code {code}"),
        None if t.tracker == "wandb" => ": no exit record (still running, or killed)".to_owned(),
        None => String::new(),
    };
    let mut out = format!("    {who}{project} ({}){end}", t.file);
    if !t.config.is_empty() {
        let _ = write!(out, "\n    config: {}", shown(&t.config));
    }
    if !t.summary.is_empty() {
        let _ = write!(out, "\n    summary: {}", shown(&t.summary));
    }
    let unit = if t.tracker == "wandb" { "records" } else { "rows" };
    let mut problems = vec![format!("{} {unit} read", t.records)];
    if t.damaged_blocks > 0 {
        problems.push(format!("{} damaged block(s) skipped", t.damaged_blocks));
    }
    if t.malformed_records > 0 {
        problems.push(format!("{} record(s) that did not decode", t.malformed_records));
    }
    if t.cut_short {
        problems.push("the file ends inside a record (its end was never written)".into());
    }
    let _ = write!(out, "\n    {}", problems.join("; "));
    out
}

/// W&B runs (`.wandb` files or run folders): each read whole, its history rows
/// judged, the alerts its script raised passed on, its config, summary and exit
/// record reported.
fn analyse_wandb(path: &Path, runs: &[std::path::PathBuf]) -> Result<CheckReport> {
    use crate::ingest::wandb::{self, Out};
    use crate::workload::command::wandb_dir;
    let mut read = Vec::with_capacity(runs.len());
    for run in runs {
        let file = if run.is_file() { Some(run.clone()) } else { wandb_dir::run_file(run) };
        let file = file.ok_or_else(|| RlmonError::Usage(format!("{}: no W&B run file (.wandb) in this folder", run.display())))?;
        let bytes = std::fs::read(&file).map_err(|e| RlmonError::Usage(format!("{}: cannot read: {e}", file.display())))?;
        let (outs, summary) = wandb::read_all(&bytes).map_err(|e| RlmonError::Usage(format!("{}: {e}", file.display())))?;
        let name = match &summary.info {
            Some(i) if !i.name.is_empty() => i.name.clone(),
            Some(i) if !i.id.is_empty() => i.id.clone(),
            _ => wandb_dir::run_name(run),
        };
        let info = summary.info.clone().unwrap_or_default();
        let tracked = TrackedRun {
            tracker: "wandb",
            file: file.display().to_string(),
            id: info.id,
            project: info.project,
            config: summary.config.clone(),
            summary: summary.summary.clone(),
            exit_code: summary.exit.map(|e| e.code),
            records: summary.records,
            damaged_blocks: summary.damaged,
            malformed_records: summary.malformed,
            cut_short: summary.cut_short,
        };
        read.push((name, outs, tracked));
    }
    let session = path.file_name().map_or_else(|| "wandb".into(), |n| n.to_string_lossy().into_owned());
    let inputs: Vec<(String, Vec<Out>)> = read.iter().map(|(n, o, _)| (n.clone(), o.clone())).collect();
    let mut report = analyse_stream(&Format::Wandb, &session, move |reading| {
        for (name, outs) in &inputs {
            for (i, out) in outs.iter().enumerate() {
                match out {
                    Out::Line(line) => reading.line(name, i + 1, line.clone()),
                    Out::Alert { step, alert } => reading.alert(name, Alert::from_script("wandb.alert", *step, alert.severity, &alert.title, &alert.text)),
                    Out::Telemetry { .. } | Out::Exit(_) => {}
                }
            }
        }
        Ok(())
    })
    .map_err(|e| RlmonError::Usage(format!("{}: {e}", path.display())))?;
    for (name, _, tracked) in read {
        if let Some(r) = report.runs.iter_mut().find(|r| r.name == name) {
            r.tracker = Some(tracked);
        }
    }
    Ok(report)
}

/// trackio projects: each `(database, run)` read (every run of the project, or the
/// one named), rows by id; each run's config reported.
fn analyse_trackio(path: &Path, projects: &[(std::path::PathBuf, Option<String>)]) -> Result<CheckReport> {
    use crate::workload::command::trackio_db::{Project, Row};
    let mut rows = Vec::new();
    let mut tracked: BTreeMap<String, TrackedRun> = BTreeMap::new();
    for (db, run) in projects {
        let usage = |e: String| RlmonError::Usage(e);
        let mut project = Project::open(db).map_err(usage)?;
        let configs = project.configs();
        loop {
            let batch = project.poll(run.as_deref()).map_err(usage)?;
            if batch.is_empty() {
                break;
            }
            rows.extend(batch);
        }
        let runs = project.runs().map_err(usage)?;
        for name in runs.iter().filter(|r| run.as_ref().is_none_or(|want| want == *r)) {
            let t = TrackedRun { tracker: "trackio", file: db.display().to_string(), project: project.name(), config: configs.get(name).cloned().unwrap_or_default(), ..Default::default() };
            tracked.insert(name.clone(), t);
        }
        if let Some(want) = run.as_ref().filter(|r| !runs.contains(r)) {
            return Err(RlmonError::Usage(format!("{}: no run named {want} (runs: {})", db.display(), runs.join(", "))));
        }
    }
    for row in &rows {
        let name = match row {
            Row::Metrics(Line::Metrics(rec)) => rec.run.clone(),
            Row::Alert { run, .. } => Some(run.clone()),
            _ => None,
        };
        if let Some(t) = name.and_then(|n| tracked.get_mut(&n)) {
            t.records += 1;
        }
    }
    let session = path.file_stem().map_or_else(|| "trackio".into(), |n| n.to_string_lossy().into_owned());
    let mut report = analyse_stream(&Format::Trackio, &session, move |reading| {
        for (i, row) in rows.into_iter().enumerate() {
            match row {
                Row::Metrics(line) => reading.line("trackio", i + 1, line),
                Row::Alert { run, step, title, text, severity } => reading.alert(&run, Alert::from_script("trackio.alert", step.unwrap_or(0), severity, &title, &text)),
            }
        }
        Ok(())
    })
    .map_err(|e| RlmonError::Usage(format!("{}: {e}", path.display())))?;
    for r in &mut report.runs {
        r.tracker = tracked.remove(&r.name);
    }
    Ok(report)
}

/// The trackio runs an argument of `rlmon check` names: `trackio:PROJECT[#RUN]`,
/// `PATH.db[#RUN]`, or a folder of project databases; `None` for other inputs.
fn trackio_inputs(path: &Path) -> Result<Option<Vec<(std::path::PathBuf, Option<String>)>>> {
    use crate::workload::command::trackio_db;
    let arg = path.to_string_lossy();
    let (target, run) = trackio_db::split_run(&arg);
    let run = run.map(str::to_owned);
    if let Some(project) = target.strip_prefix("trackio:") {
        let db = trackio_db::project_db(project, Path::new(".")).map_err(|e| RlmonError::Usage(format!("{arg}: {e}")))?;
        if !db.is_file() {
            return Err(RlmonError::Usage(format!("{arg}: no trackio project at {}", db.display())));
        }
        return Ok(Some(vec![(db, run)]));
    }
    let target = Path::new(target);
    if target.is_file() && trackio_db::is_sqlite(target) && (run.is_some() || !path.exists() || target == path) {
        return Ok(Some(vec![(target.to_path_buf(), run)]));
    }
    if path.is_dir() {
        let dbs = trackio_db::projects_in(path);
        if !dbs.is_empty() {
            return Ok(Some(dbs.into_iter().map(|db| (db, None)).collect()));
        }
    }
    Ok(None)
}

/// TensorBoard event files under `dir` (three levels deep), sorted by path: a
/// folder's files are one run's, in the order they were started.
fn tensorboard_files(dir: &Path) -> Vec<std::path::PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && depth < 3 {
                walk(&path, depth + 1, out);
            } else if path.file_name().is_some_and(|n| ingest::tensorboard::is_event_file(&n.to_string_lossy())) {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, 0, &mut out);
    out.sort();
    out
}

/// A TensorBoard log folder: each sub-folder holding event files is a run, named by
/// its path under `dir` (the folder itself: its own name).
fn analyse_tensorboard(dir: &Path, files: &[std::path::PathBuf]) -> Result<CheckReport> {
    let mut texts = Vec::with_capacity(files.len());
    for f in files {
        let bytes = std::fs::read(f).map_err(|e| RlmonError::Usage(format!("{}: cannot read: {e}", f.display())))?;
        let parent = f.parent().unwrap_or(dir);
        let run = match parent.strip_prefix(dir) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
            _ => dir.file_name().map_or_else(|| "run".into(), |n| n.to_string_lossy().into_owned()),
        };
        texts.push((run, bytes));
    }
    let sources: Vec<(&str, &[u8])> = texts.iter().map(|(r, b)| (r.as_str(), b.as_slice())).collect();
    analyse_sources(&sources, Format::TensorBoard, None).map_err(|e| RlmonError::Usage(format!("{}: {e}", dir.display())))
}

/// MLflow runs (a run folder, an experiment or a whole `mlruns` store): each run's
/// metric files merged by step, the run named by its `mlflow.runName` tag.
fn analyse_mlflow(dir: &Path, runs: &[std::path::PathBuf]) -> Result<CheckReport> {
    let mut read = Vec::with_capacity(runs.len());
    for run in runs {
        let files = crate::workload::command::mlflow_dir::metric_files(run).map_err(|e| RlmonError::Usage(format!("{}: cannot read: {e}", run.display())))?;
        read.push((crate::workload::command::mlflow_dir::run_name(run), files));
    }
    let session = dir.file_name().map_or_else(|| "mlruns".into(), |n| n.to_string_lossy().into_owned());
    analyse_stream(&Format::MlFlow, &session, move |reading| {
        for (name, files) in &read {
            for (i, line) in ingest::mlflow::run_records(files).into_iter().enumerate() {
                reading.line(name, i + 1, line);
            }
        }
        Ok(())
    })
    .map_err(|e| RlmonError::Usage(format!("{}: {e}", dir.display())))
}

/// The report of a recorded session: its runs replayed through the hub (alerts as
/// live, baseline alerts included); a run's points are its logged steps.
pub fn analyse_recording(rec: &crate::record::Recording) -> CheckReport {
    let state = crate::record::replayed_state(rec);
    let mut steps = vec![0u64; state.runs.len()];
    for (_, e) in rec.timeline().events(rec) {
        if let Event::Metrics { run, .. } = e {
            steps[run] += 1;
        }
    }
    recording_report(&rec.meta, state, steps)
}

/// [`analyse_recording`] of a session played from its file (a snapshot streamed
/// row group by row group): the same report, without holding its points.
pub fn analyse_playback(mut p: crate::record::Playback) -> CheckReport {
    let baseline = crate::record::recorded_baseline(p.meta());
    let mut hub = p.start(baseline.as_ref());
    let mut steps = vec![0u64; hub.state.runs.len()];
    // Read, judged and kept on three threads (see `Playback::play_into`).
    p.play_into(0, &mut hub, |_, _, step| {
        if let Some(run) = step {
            if steps.len() <= run {
                steps.resize(run + 1, 0);
            }
            steps[run] += 1;
        }
    });
    steps.resize(hub.state.runs.len(), 0);
    recording_report(p.meta(), hub.state, steps)
}

/// The report of a recorded session from its replayed state and each run's
/// number of logged steps.
fn recording_report(meta: &crate::record::Meta, state: crate::session::SessionState, steps: Vec<u64>) -> CheckReport {
    let settings = meta.fresh_hub().settings;
    let runs = state
        .runs
        .iter()
        .zip(&steps)
        .zip(&settings)
        .map(|((r, n), settings)| CheckedRun {
            name: r.name.clone(),
            points: *n,
            last_step: r.step,
            worst: r.worst_alert(&state.alerts, |_| true),
            alerts: r.alerts.len(),
            input: None,
            not_judged: not_judged(r, settings),
            tracker: None,
        })
        .collect();
    let points = steps.iter().sum();
    CheckReport { format: "snapshot".into(), tried: Vec::new(), runs, alerts: with_context(&state), points, skipped_lines: 0, skipped: BTreeMap::new(), first_skipped: None }
}

/// A run folder of rlmon's Python client: its metrics file through the detectors,
/// under the run's name, and the alerts the script raised itself (`rlmon.alert`)
/// beside theirs.
fn analyse_client_run(dir: &Path) -> Result<CheckReport> {
    use crate::ingest::client;
    let name = crate::workload::client_run::start(dir).map_or_else(|| "run".to_owned(), |s| s.name);
    let metrics = dir.join(client::METRICS_FILE);
    if !metrics.is_file() {
        return Err(RlmonError::Usage(format!("{}: the run has logged nothing yet (no {})", dir.display(), client::METRICS_FILE)));
    }
    let mut report = analyse_file(&metrics, Format::Jsonl, &name, None).map_err(|e| RlmonError::Usage(format!("{}: {e}", metrics.display())))?;
    let text = std::fs::read_to_string(dir.join(client::ALERTS_FILE)).unwrap_or_default();
    let (alerts, bad) = client::alerts(&text);
    for (line, why) in bad {
        crate::say!("rlmon: {}:{line}: {why} (skipped)", dir.join(client::ALERTS_FILE).display());
    }
    for a in alerts {
        let alert = a.to_alert(&name, 0.0);
        if let Some(run) = report.runs.iter_mut().find(|r| r.name == name) {
            run.alerts += 1;
            run.worst = run.worst.max(Some(alert.severity));
        }
        report.alerts.push(CheckedAlert { alert, moved: Vec::new() });
    }
    report.alerts.sort_by_key(|a| a.step);
    report.format = "rlmon-client".into();
    Ok(report)
}

pub fn check(args: CheckArgs) -> Result<u8> {
    let path = &args.file;
    let event_files = if path.is_dir() { tensorboard_files(path) } else { Vec::new() };
    let mlflow_runs = if path.is_dir() && event_files.is_empty() { crate::workload::command::mlflow_dir::runs_under(path) } else { Vec::new() };
    let wandb_runs = {
        use crate::workload::command::wandb_dir;
        let is_wandb = path.is_file() && path.file_name().is_some_and(|n| crate::ingest::wandb::is_run_file(&n.to_string_lossy()));
        if is_wandb || (path.is_dir() && event_files.is_empty() && mlflow_runs.is_empty() && (wandb_dir::is_run_dir(path) || wandb_dir::is_wandb_dir(path))) {
            wandb_dir::runs_at(path, true)
        } else {
            Vec::new()
        }
    };
    let trackio = if wandb_runs.is_empty() && event_files.is_empty() && mlflow_runs.is_empty() { trackio_inputs(path)? } else { None };
    let client_run = path.is_dir() && crate::workload::client_run::is_run(path);
    let report = if client_run {
        analyse_client_run(path)?
    } else if !event_files.is_empty() {
        analyse_tensorboard(path, &event_files)?
    } else if !mlflow_runs.is_empty() {
        analyse_mlflow(path, &mlflow_runs)?
    } else if !wandb_runs.is_empty() {
        analyse_wandb(path, &wandb_runs)?
    } else if let Some(projects) = trackio {
        analyse_trackio(path, &projects)?
    } else if path.is_dir() || crate::record::snapshot::looks_like_parquet(path) {
        match crate::record::stream::Streamed::open_path(path)? {
            Some(s) => analyse_playback(crate::record::Playback::Streamed(Box::new(s))),
            None => analyse_recording(&crate::record::load(path)?),
        }
    } else {
        let cannot_read = |e: std::io::Error| RlmonError::Usage(format!("{}: cannot read: {e}", path.display()));
        let mut head = Vec::with_capacity(64 * 1024);
        std::io::Read::read_to_end(&mut std::io::Read::take(std::fs::File::open(path).map_err(cannot_read)?, 64 * 1024), &mut head).map_err(cannot_read)?;
        let format = match (&args.format, &args.pattern) {
            (_, Some(p)) => Format::Pattern(ingest::text::Pattern::new(p).map_err(|e| RlmonError::Usage(format!("--pattern: {e}")))?),
            (Some(name), None) => Format::from_name(name).ok_or_else(|| RlmonError::Usage(format!("--format {name}: not a format (one of: {})", ingest::FORMAT_NAMES.join(", "))))?,
            (None, None) => ingest::detect(path, &String::from_utf8_lossy(&head)),
        };
        let detected = args.format.is_none() && args.pattern.is_none();
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        // An event file's name is a timestamp and a host: its folder names the run.
        let folder = || path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned());
        // TensorBoard's export of one tag: `run-NAME-tag-TAG.csv` names both.
        let exported = stem.as_deref().and_then(|s| s.strip_prefix("run-")?.rsplit_once("-tag-")).map(|(run, tag)| (run.to_owned(), tag.to_owned()));
        let default_run = match (&format, &exported) {
            (Format::TensorBoard, _) => folder(),
            (_, Some((run, _))) if !run.is_empty() => Some(run.clone()),
            _ => stem.clone(),
        }
        .unwrap_or_else(|| "run".into());
        let default_metric = stem.map(|s| s.rsplit_once("-tag-").map_or(s.clone(), |(_, tag)| tag.to_owned()));
        // A line format is read a chunk at a time; the others are documents.
        let analysed = if matches!(format, Format::TensorBoard | Format::TrainerState | Format::JsonDocument) {
            let text = std::fs::read(path).map_err(cannot_read)?;
            analyse(&text, format, &default_run, default_metric)
        } else if detected {
            analyse_detected(path, format, &default_run, default_metric)
        } else {
            analyse_file(path, format, &default_run, default_metric)
        };
        analysed.map_err(|e| RlmonError::Usage(format!("{}: {e}", path.display())))?
    };
    if report.points == 0 {
        let read_as = match report.tried.as_slice() {
            [] => format!("read as {}", report.format),
            tried => format!("read as {}, nor as {}", report.format, tried.join(", ")),
        };
        let why = match &report.first_skipped {
            Some((line, why)) => format!("{}:{line}: {why} (no metric lines in the file, {read_as})", path.display()),
            None if report.format == "snapshot" => format!("{}: the recording holds no metric points", path.display()),
            None => format!("{}: no metric lines ({read_as}; --format or --pattern names another)", path.display()),
        };
        return Err(RlmonError::Usage(why));
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &report).map_err(anyhow::Error::from)?;
        writeln!(out).ok();
    } else {
        crate::out!("{}", report.to_text(path));
    }
    let threshold = match args.fail_on {
        FailOn::Warn => Severity::Warn,
        FailOn::Critical => Severity::Critical,
    };
    // A run whose tracker recorded a failed exit is a failed run.
    let failed = report.runs.iter().any(|r| r.tracker.as_ref().is_some_and(TrackedRun::failed));
    Ok(if failed || report.worst().is_some_and(|w| w >= threshold) { EXIT_FAILURE } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::AlertKind;

    #[test]
    fn a_snapshot_checked_streamed_reports_as_read_whole() {
        let (_, rec) = crate::record::model::tests::live_and_recorded();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.rlmon.parquet");
        crate::record::snapshot::write(&path, &rec).unwrap();
        let whole = analyse_recording(&crate::record::load(&path).unwrap());
        let streamed = crate::record::Playback::open(&path).unwrap();
        assert!(matches!(streamed, crate::record::Playback::Streamed(_)));
        let streamed = analyse_playback(streamed);
        assert_eq!(serde_json::to_string(&streamed).unwrap(), serde_json::to_string(&whole).unwrap());
        assert!(whole.points > 0);
    }

    #[test]
    fn streams_split_by_run_and_bad_lines_are_counted() {
        let mut log = String::new();
        for step in 1..=30 {
            log.push_str(&format!("{{\"run\": \"a\", \"step\": {step}, \"loss\": 2.0}}\n"));
            let loss = if step == 20 { "NaN".to_owned() } else { "2.0".to_owned() };
            log.push_str(&format!("{{\"run_id\": \"b\", \"step\": {step}, \"train_loss\": {loss}}}\n"));
        }
        log.push_str("garbage\n");
        let r = analyse(log.as_bytes(), Format::Jsonl, "x", None).unwrap();
        assert_eq!((r.points, r.skipped_lines), (60, 1));
        assert_eq!(r.first_skipped.as_ref().unwrap().0, 61);
        assert_eq!(r.runs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(r.alerts.len(), 1);
        assert_eq!((r.alerts[0].run.as_str(), r.alerts[0].step), ("b", 20));
        assert_eq!(r.worst(), Some(Severity::Critical));
    }

    #[test]
    fn each_alert_carries_the_metrics_that_moved_around_it() {
        let mut log = String::new();
        for step in 1..=120u64 {
            let wobble = 0.01 * ((step as f64) * 1.7).sin();
            let (lr, loss) = if (80..83).contains(&step) { (0.04, 9.0) } else { (0.001 * (1.0 + wobble), 2.0 + wobble) };
            log.push_str(&format!("{{\"step\": {step}, \"loss\": {loss}, \"lr\": {lr}, \"tokens\": 1024}}\n"));
        }
        let r = analyse(log.as_bytes(), Format::Jsonl, "x", None).unwrap();
        let spike = r.alerts.iter().find(|a| a.kind == AlertKind::LossSpike).expect("a loss spike");
        assert_eq!(spike.moved.first().map(|m| m.metric.as_str()), Some("lr"), "{:?}", spike.moved);
        let json = serde_json::to_value(&r).unwrap();
        let alert = json["alerts"].as_array().unwrap().iter().find(|a| a["kind"] == "loss_spike").unwrap();
        assert_eq!((alert["metric"].as_str(), alert["moved"][0]["metric"].as_str()), (Some("loss"), Some("lr")), "{alert}");
        assert!(alert["moved"][0]["change"]["factor"].as_f64().is_some_and(|f| f > 30.0), "{alert}");
        assert!(r.to_text(Path::new("x.jsonl")).contains("moved: lr x"), "{}", r.to_text(Path::new("x.jsonl")));
    }

    #[test]
    fn ranks_in_a_log_are_runs_under_their_job_and_a_straggler_is_found() {
        let mut log = String::new();
        for step in 1..=40 {
            for rank in 0..2 {
                let step_time = if rank == 1 { 0.12 } else { 0.1 };
                log.push_str(&format!("{{\"step\": {step}, \"rank\": {rank}, \"loss\": 2.0, \"tokens\": 1000, \"step_time_s\": {step_time}}}\n"));
            }
        }
        let r = analyse(log.as_bytes(), Format::Jsonl, "job", None).unwrap();
        assert_eq!(r.runs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["job", "job/rank0", "job/rank1"]);
        assert_eq!((r.points, r.runs[1].points, r.runs[2].last_step), (80, 40, 40));
        let kinds: Vec<(AlertKind, &str)> = r.alerts.iter().map(|a| (a.kind, a.run.as_str())).collect();
        assert_eq!(kinds, [(AlertKind::RankStraggler, "job")]);
        assert!(r.alerts[0].message.starts_with("rank 1 is 16.67% slower than rank 0"), "{}", r.alerts[0].message);
    }

    #[test]
    fn replicas_in_a_log_report_their_first_differing_step() {
        let mut log = String::new();
        for step in 1..=40 {
            let drift = if step >= 25 { 0.01 } else { 0.0 };
            log.push_str(&format!("{{\"run\": \"seed7#1\", \"step\": {step}, \"loss\": 2.0}}\n"));
            log.push_str(&format!("{{\"run\": \"seed7#2\", \"step\": {step}, \"loss\": {}}}\n", 2.0 + drift));
        }
        let r = analyse(log.as_bytes(), Format::Jsonl, "x", None).unwrap();
        let nd: Vec<&Alert> = r.alerts.iter().map(|a| &a.alert).filter(|a| a.kind == crate::health::AlertKind::Nondeterminism).collect();
        assert_eq!(nd.len(), 1, "{:?}", r.alerts);
        assert_eq!((nd[0].run.as_str(), nd[0].step), ("seed7#2", 25));
    }
}
