//! The pure part of following a command: bytes cut into bounded lines, lines read
//! as metrics (format given or detected from the first lines) or as text for the
//! events pane, and how the program's end becomes the run's outcome. No I/O here.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::ingest::normalize::{Emit, Normalizer, Resume};
use crate::ingest::{self, Format, Line, LineReader, SkipKind, MAX_LINE_BYTES};
use crate::metrics::catalog::Preset;
use crate::metrics::MetricName;
use crate::session::RunOutcome;

/// A line shown in the events pane is cut to this many bytes: the pane keeps
/// thousands of lines, and a flood of long ones must not grow memory.
pub const LOG_LINE_BYTES: usize = 4096;

/// Lines held back while the format is not yet known; then the format is chosen
/// from what was seen.
const DETECT_LINES: usize = 64;

/// One line as cut from a stream: its first bytes and its true length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawLine {
    /// At most `MAX_LINE_BYTES + 1` bytes, without the line break.
    pub bytes: Vec<u8>,
    pub len: usize,
    /// Ended by a carriage return alone: a progress bar's state that the next one
    /// is drawn over. Only its metrics count (tqdm's postfix `loss=2.31`).
    pub overwritten: bool,
}

impl RawLine {
    pub fn too_long(&self) -> bool {
        self.len > MAX_LINE_BYTES
    }
}

/// Cuts a byte stream into lines, and a progress bar's states drawn over each
/// other with carriage returns into lines of their own, so a bar's metrics show
/// as it moves rather than when its line ends. Only the first `MAX_LINE_BYTES + 1`
/// bytes of a line are kept, so one endless line costs bounded memory.
#[derive(Debug, Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
    partial_len: usize,
    /// The chunk before ended with `\r`: a line break of its own unless `\n` follows.
    pending_cr: bool,
}

impl LineSplitter {
    pub fn push(&mut self, mut bytes: &[u8]) -> Vec<RawLine> {
        let mut out = Vec::new();
        if std::mem::take(&mut self.pending_cr) && bytes.first().is_some_and(|b| *b != b'\n') {
            out.push(self.take(true));
        }
        while let Some(at) = bytes.iter().position(|b| matches!(b, b'\n' | b'\r')) {
            self.keep(&bytes[..at]);
            let rest = &bytes[at + 1..];
            if bytes[at] == b'\r' {
                match rest.first() {
                    // Held until the next chunk tells `\r\n` from a bar's `\r`.
                    None => {
                        self.pending_cr = true;
                        return out;
                    }
                    Some(b'\n') => {
                        out.push(self.take(false));
                        bytes = &rest[1..];
                        continue;
                    }
                    Some(_) => out.push(self.take(true)),
                }
            } else {
                out.push(self.take(false));
            }
            bytes = rest;
        }
        self.keep(bytes);
        out
    }

    /// What is left when the stream ends (a last line without a line break).
    pub fn finish(&mut self) -> Option<RawLine> {
        self.pending_cr = false;
        (self.partial_len > 0).then(|| self.take(false))
    }

    /// Forgets a partial line (the file it came from was truncated or replaced).
    pub fn reset(&mut self) {
        self.partial.clear();
        self.partial_len = 0;
        self.pending_cr = false;
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = (MAX_LINE_BYTES + 1).saturating_sub(self.partial.len());
        self.partial.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.partial_len += bytes.len();
    }

    fn take(&mut self, overwritten: bool) -> RawLine {
        let len = std::mem::take(&mut self.partial_len);
        RawLine { bytes: std::mem::take(&mut self.partial), len, overwritten }
    }
}

/// What a stream's line became.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamOut {
    /// One step's canonical metrics, `time_s` on the run's clock; `rank`: the
    /// process of a multi-process job that logged it (a record's `rank` field, or
    /// the stream's own rank).
    Point { rank: Option<u32>, step: u64, time_s: f64, values: Vec<(MetricName, f64)> },
    /// The stream (its rank's lane, when ranks are told apart) went back to an earlier step.
    Resumed { rank: Option<u32>, resume: Resume },
    /// Not a metric line: for the events pane, already cut to `LOG_LINE_BYTES`.
    Text(String),
    /// A line of a metrics file that could not be read (a metrics file holds
    /// metric lines; stdout mixes them with everything else).
    Skipped(SkipKind, String),
    /// Telemetry of the job's machine that its tracker recorded (W&B's system
    /// metrics), named as a remote host's (`node7/gpu0/util_pct`).
    Telemetry(Vec<(MetricName, f64)>),
    /// An alert the job's script raised itself (`wandb.alert`, `trackio.alert`).
    Alert(crate::health::Alert),
}

/// One stream's metric lines, read in order.
pub struct MetricStream {
    /// Used to detect the format (a file's name tells CSV from JSONL).
    origin: PathBuf,
    /// A one-value CSV's metric, from the file's name.
    default_metric: Option<String>,
    /// `None` while the format is being detected from `head`.
    reader: Option<LineReader>,
    head: Vec<RawLine>,
    /// Lines shown as output while the format was undecided, the newest
    /// `DETECT_LINES` of them, and a text reader that has read every undecided
    /// line in order: a record spread over several lines (a Stable-Baselines3
    /// table, a Composer block) reads only with the lines before it, which may
    /// each have been shown as output.
    shown: std::collections::VecDeque<RawLine>,
    context: LineReader,
    context_read: bool,
    /// A detected format on probation: chosen from a few records, it gives way to
    /// another that reads more of the lines after (a config line `TrainingArguments(
    /// learning_rate=5e-05, ...)` read as text, then the Trainer's dicts).
    probation: Option<Probation>,
    /// One lane per rank seen (records of different ranks never merge into one step).
    lanes: BTreeMap<Option<u32>, Lane>,
    /// The rank of records without their own (a glob's file of one rank).
    rank: Option<u32>,
    /// Whether other lines are expected between metric lines (stdout).
    mixed: bool,
}

/// A detected format's first lines: how many records it read, and every line
/// since it was chosen, for the format the lines as a whole tell to take over
/// and read again.
#[derive(Default)]
struct Probation {
    read: usize,
    lines: Vec<RawLine>,
    strays: usize,
}

/// A detected format is on probation until it has read this many records, or
/// this many lines have come since it was chosen.
const PROBATION_RECORDS: usize = 8;
const PROBATION_LINES: usize = DETECT_LINES;
/// Lines it did not read but another format reads on its own that it takes
/// before the lines as a whole are looked at again.
const STRAYS_TO_SWITCH: usize = 3;

/// The steps of one rank being gathered.
#[derive(Default)]
struct Lane {
    normalizer: Normalizer,
    /// Run time at which the step being gathered last got a record, and whether
    /// its records carry their own time.
    pending_arrival: f64,
    pending_has_time: bool,
}

impl MetricStream {
    /// `mixed`: lines that are not metrics are ordinary output (stdout), not
    /// skipped metric lines (a metrics file).
    pub fn new(origin: &Path, format: Option<Format>, mixed: bool) -> Self {
        let default_metric = origin.file_stem().map(|s| s.to_string_lossy().into_owned());
        let default_metric = if mixed { None } else { default_metric };
        let reader = format.map(|f| {
            let mut reader = LineReader::new(f, default_metric.clone());
            reader.learn_as_it_goes(b"");
            reader
        });
        MetricStream {
            origin: origin.to_path_buf(),
            reader,
            default_metric,
            head: Vec::new(),
            shown: Default::default(),
            context: LineReader::new(Format::Text(Preset::Generic), None),
            context_read: false,
            probation: None,
            lanes: BTreeMap::new(),
            rank: None,
            mixed,
        }
    }

    /// Records without a rank of their own are this rank's.
    pub fn with_rank(mut self, rank: Option<u32>) -> Self {
        self.rank = rank;
        self
    }

    /// The format in use, once known.
    pub fn format(&self) -> Option<&Format> {
        self.reader.as_ref().map(LineReader::format)
    }

    /// One line, arrived at `now_s` on the run's clock.
    pub fn line(&mut self, raw: RawLine, now_s: f64) -> Vec<StreamOut> {
        let mut out = Vec::new();
        if self.reader.is_some() {
            self.take(raw, now_s, &mut out);
            return out;
        }
        if raw.bytes.iter().all(u8::is_ascii_whitespace) && !raw.too_long() {
            return out;
        }
        // A bar's state drawn over by the next: kept only when it reads as metrics.
        if raw.overwritten && (raw.too_long() || !self.reads_alone(&raw)) {
            return out;
        }
        // Only a CSV header needs lines after it to be recognised; any other line
        // that is not a metric line on its own is output, shown at once.
        let could_be_header = raw.bytes.contains(&b'\t') || ingest::csv::could_be_header(&String::from_utf8_lossy(&raw.bytes), b',');
        let shown_now = self.head.is_empty() && !could_be_header && !raw.too_long();
        if !raw.too_long() {
            self.context_read |= matches!(self.context.line(&raw.bytes), Line::Metrics(_));
        }
        self.head.push(raw);
        // A metrics file decides by its first lines, those shown among them.
        let seen = self.head.len() + if self.mixed { 0 } else { self.shown.len() };
        self.detect(seen >= DETECT_LINES, now_s, &mut out);
        if shown_now && self.reader.is_none() {
            if let Some(line) = self.head.pop() {
                out.push(StreamOut::Text(log_text(&line)));
                self.remember_shown([line]);
            }
        }
        out
    }

    /// The input has nothing more for now: the step being gathered goes out, so the
    /// display shows it without waiting for the next one (the format, if still
    /// undecided, keeps waiting for more lines).
    pub fn flush(&mut self) -> Vec<StreamOut> {
        let mut out = Vec::new();
        if self.reader.is_some() {
            for (rank, lane) in &mut self.lanes {
                let emits = lane.normalizer.flush();
                emit(*rank, emits, lane.pending_arrival, lane.pending_has_time, &mut out);
            }
        }
        out
    }

    /// The input ended: what is still held back.
    pub fn finish(&mut self, now_s: f64) -> Vec<StreamOut> {
        let mut out = Vec::new();
        if self.reader.is_none() {
            self.detect(true, now_s, &mut out);
        }
        for (rank, lane) in &mut self.lanes {
            let emits = lane.normalizer.finish();
            emit(*rank, emits, lane.pending_arrival, lane.pending_has_time, &mut out);
        }
        out
    }

    /// Chooses the format once a held-back line reads as metrics in it, or when
    /// `force`d. Three guesses: from every held-back line (a CSV needs its header),
    /// from the newest line alone (a program's first lines are often not metrics),
    /// and text when the lines shown so far, read in order, made a record.
    fn detect(&mut self, force: bool, now_s: f64, out: &mut Vec<StreamOut>) {
        let all = followed_format(&self.origin, &self.head.iter().collect::<Vec<_>>());
        let all_reads = reads_any(&all, self.default_metric.clone(), &self.head.iter().collect::<Vec<_>>());
        let head = std::mem::take(&mut self.head);
        let (format, as_text) = if all_reads {
            (all, 0)
        } else {
            let newest = head.last().map(|l| followed_format(&self.origin, &[l])).unwrap_or(Format::Jsonl);
            match head.last() {
                Some(l) if reads_any(&newest, self.default_metric.clone(), &[l]) => (newest, head.len() - 1),
                // A record over several lines, the first of them already shown
                // (a Stable-Baselines3 table): text, read with them.
                _ if self.context_read => (Format::Text(Preset::Generic), 0),
                // Output with no metric line so far is shown; detection goes on.
                _ if force && self.mixed => {
                    out.extend(head.iter().map(|l| StreamOut::Text(log_text(l))));
                    self.remember_shown(head);
                    return;
                }
                // A metrics file: read as its best guess from every line so far
                // (those shown too), or when that reads none of them, as the first
                // other format that reads one; bad lines counted.
                _ if force => {
                    let lines: Vec<&RawLine> = self.shown.iter().chain(&head).collect();
                    let reads = |format: &Format| reads_any(format, self.default_metric.clone(), &lines);
                    let best = followed_format(&self.origin, &lines);
                    let format = if reads(&best) { best } else { ingest::fallbacks(&best).into_iter().find(reads).unwrap_or(best) };
                    (format, 0)
                }
                _ => {
                    self.head = head;
                    return;
                }
            }
        };
        // Every line is read in the format chosen, as `check` reads a file: those
        // shown as output before (a step's header, an epoch's, a table's start)
        // and the ones before the line that told the format are shown, then read.
        let mut before: Vec<RawLine> = std::mem::take(&mut self.shown).into();
        let mut head = head.into_iter();
        for raw in head.by_ref().take(as_text) {
            out.push(StreamOut::Text(log_text(&raw)));
            before.push(raw);
        }
        self.read_shown_with(format, before, now_s, out);
        for raw in head {
            self.take(raw, now_s, out);
        }
    }

    /// Reads in `format` from now on, starting with lines already shown as output
    /// (only the records they make go out: their text is not shown twice).
    fn read_shown_with(&mut self, format: Format, shown: Vec<RawLine>, now_s: f64, out: &mut Vec<StreamOut>) {
        self.reader = Some(self.replayed(format, &shown, now_s, out));
        self.probation = Some(Probation::default());
    }

    /// A reader of `format` that has read `lines`, already shown as output: only
    /// the records they make go out. (What only a whole file tells, a launcher's
    /// rank labels, is learned from the lines as they are read.)
    fn replayed(&mut self, format: Format, lines: &[RawLine], now_s: f64, out: &mut Vec<StreamOut>) -> LineReader {
        let mut reader = LineReader::new(format, self.default_metric.clone());
        reader.learn_as_it_goes(b"");
        for raw in lines.iter().filter(|l| !l.too_long()) {
            let line = reader.line(&raw.bytes);
            if matches!(line, Line::Metrics(_)) {
                self.parsed(line, String::new, now_s, out);
            }
        }
        reader
    }

    /// Keeps the newest lines shown while the format is undecided, for a record
    /// that they begin.
    fn remember_shown(&mut self, lines: impl IntoIterator<Item = RawLine>) {
        for line in lines {
            if self.shown.len() == DETECT_LINES {
                self.shown.pop_front();
            }
            self.shown.push_back(line);
        }
    }

    /// Whether a line reads as metrics in the format guessed from it alone.
    fn reads_alone(&self, raw: &RawLine) -> bool {
        reads_as_metrics_in(&self.origin, self.default_metric.clone(), raw)
    }

    fn take(&mut self, raw: RawLine, now_s: f64, out: &mut Vec<StreamOut>) {
        let Some(reader) = &mut self.reader else { return };
        let line = if raw.too_long() {
            Line::Skip(SkipKind::TooLong, format!("line of {} bytes (at most {MAX_LINE_BYTES})", raw.len))
        } else {
            // A bar's states drawn over each other with backspaces (Keras' in a
            // file): each with metrics is a record, the line's text shown once.
            // (Most lines are one state: nothing is gathered for them.)
            let (mut last, mut earlier) = (None, Vec::new());
            reader.segments(&raw.bytes, |l| earlier.extend(last.replace(l)));
            for state in earlier {
                self.parsed(state, String::new, now_s, out);
            }
            last.unwrap_or(Line::Blank)
        };
        if raw.overwritten && !matches!(line, Line::Metrics(_)) {
            return;
        }
        if self.on_probation(&raw, &line, now_s, out) {
            return;
        }
        self.parsed(line, || log_text(&raw), now_s, out);
    }

    /// Counts a line for or against a detected format still on probation. Once
    /// other formats have read a few lines it did not, and when its probation
    /// ends, the format is told again from every line since it was chosen (as
    /// `check` tells a file's from its first lines); when that names another
    /// format that reads one of them, it takes over and reads
    /// every line since again (their text, already shown, is not shown twice; steps
    /// the first format sent again are a resume, which drops what it read), then
    /// this one. Returns whether it read this line.
    fn on_probation(&mut self, raw: &RawLine, line: &Line, now_s: f64, out: &mut Vec<StreamOut>) -> bool {
        let current = self.format().map(Format::name);
        let Some(p) = &mut self.probation else { return false };
        let read = matches!(line, Line::Metrics(_));
        p.read += usize::from(read);
        p.lines.push(raw.clone());
        let ends = p.read >= PROBATION_RECORDS || p.lines.len() >= PROBATION_LINES;
        let stray = !read && !raw.too_long() && !matches!(line, Line::Blank) && self.reads_alone(raw);
        let Some(p) = &mut self.probation else { return false };
        p.strays += usize::from(stray);
        if !ends && !(stray && p.strays >= STRAYS_TO_SWITCH) {
            return false;
        }
        let lines: Vec<&RawLine> = p.lines.iter().collect();
        let told = followed_format(&self.origin, &lines);
        if Some(told.name()) == current || !reads_any(&told, self.default_metric.clone(), &lines) {
            if ends {
                self.probation = None;
            }
            return false;
        }
        let p = self.probation.take().unwrap_or_default();
        for lane in self.lanes.values_mut() {
            lane.normalizer.drop_pending();
        }
        let (_, earlier) = p.lines.split_last().expect("this line");
        let mut reader = self.replayed(told, earlier, now_s, out);
        let line = reader.line(&raw.bytes);
        self.reader = Some(reader);
        self.parsed(line, || log_text(raw), now_s, out);
        true
    }

    /// One input already parsed (a TensorBoard record, which is not a line),
    /// arrived at `now_s`. Text it holds is not shown: an event file's
    /// non-scalar records (graphs, images) are not output.
    pub fn record(&mut self, line: Line, now_s: f64) -> Vec<StreamOut> {
        let mut out = Vec::new();
        let line = if matches!(line, Line::Text) { Line::Blank } else { line };
        self.parsed(line, String::new, now_s, &mut out);
        out
    }

    fn parsed(&mut self, line: Line, text: impl FnOnce() -> String, now_s: f64, out: &mut Vec<StreamOut>) {
        match line {
            Line::Blank => {}
            Line::Metrics(rec) => {
                let has_time = rec.time.is_some();
                let rank = rec.rank.or(self.rank);
                let lane = self.lanes.entry(rank).or_default();
                // A point leaves the normalizer when the next step begins: it carries
                // the arrival time of its own last record, not of this one.
                let (arrival, had_time) = (lane.pending_arrival, lane.pending_has_time);
                let emits = lane.normalizer.push(rec);
                emit(rank, emits, arrival, had_time, out);
                lane.pending_arrival = now_s;
                lane.pending_has_time = has_time;
            }
            Line::Text => out.push(StreamOut::Text(text())),
            Line::Skip(_, _) if self.mixed => out.push(StreamOut::Text(text())),
            Line::Skip(kind, reason) => out.push(StreamOut::Skipped(kind, reason)),
        }
    }

}

fn emit(rank: Option<u32>, emits: Vec<Emit>, arrival: f64, has_time: bool, out: &mut Vec<StreamOut>) {
    for e in emits {
        out.push(match e {
            Emit::Point(p) => StreamOut::Point { rank, step: p.step, time_s: if has_time { p.time_s } else { arrival }, values: p.values },
            Emit::Resumed(resume) => StreamOut::Resumed { rank, resume },
        });
    }
}

/// The format a followed input's lines tell, as `check` tells a file's from its
/// head (a document read whole cannot be followed line by line: its records are
/// read as JSON lines).
fn followed_format(origin: &Path, lines: &[&RawLine]) -> Format {
    let text = lines.iter().map(|l| String::from_utf8_lossy(&l.bytes)).collect::<Vec<_>>().join("\n");
    match ingest::detect(origin, &text) {
        Format::TrainerState | Format::JsonDocument => Format::Jsonl,
        f => f,
    }
}

/// Whether `format` reads a record from any of `lines`, read in order.
fn reads_any(format: &Format, default_metric: Option<String>, lines: &[&RawLine]) -> bool {
    let mut probe = LineReader::new(format.clone(), default_metric);
    lines.iter().filter(|l| !l.too_long()).any(|l| matches!(probe.line(&l.bytes), Line::Metrics(_)))
}

/// Whether a line of a program's output reads as metrics on its own (in the
/// format guessed from it alone): a JSON object, a trainer's line, `key: value`
/// pairs with a metric rlmon knows.
pub fn reads_as_metrics(raw: &RawLine) -> bool {
    reads_as_metrics_in(Path::new("output"), None, raw)
}

fn reads_as_metrics_in(origin: &Path, default_metric: Option<String>, raw: &RawLine) -> bool {
    let text = String::from_utf8_lossy(&raw.bytes);
    let mut probe = LineReader::new(ingest::detect(origin, &text), default_metric);
    matches!(probe.line(&raw.bytes), Line::Metrics(_))
}

/// The rank a file of a glob stands for: the last number in its name
/// (`rank3.jsonl`, `log_1.csv`), or `None` when it has none.
pub fn rank_of_file(path: &Path) -> Option<u32> {
    let stem = path.file_stem()?.to_string_lossy();
    let digits: String = stem.chars().rev().skip_while(|c| !c.is_ascii_digit()).take_while(char::is_ascii_digit).collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

/// A line for the events pane: lossy UTF-8, at most `LOG_LINE_BYTES`; an
/// over-long line is named, not shown.
pub fn log_text(raw: &RawLine) -> String {
    if raw.too_long() {
        return format!("(a line of {} bytes, not shown)", raw.len);
    }
    let text = String::from_utf8_lossy(&raw.bytes);
    let text = text.trim_end_matches('\r');
    if text.len() <= LOG_LINE_BYTES {
        return text.to_owned();
    }
    let mut cut = LOG_LINE_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes)", &text[..cut], raw.len)
}

/// How the program's end becomes the run's outcome. `code`: its exit status when
/// it exited; `signal`: the signal that killed it; `cancelled`: rlmon stopped it.
pub fn outcome(code: Option<i32>, signal: Option<i32>, cancelled: bool) -> RunOutcome {
    if cancelled {
        return RunOutcome::Cancelled;
    }
    match (code, signal) {
        (Some(0), _) => RunOutcome::Finished,
        (Some(code), _) => RunOutcome::Failed(format!("exited with status {code}")),
        (None, Some(sig)) => match signal_name(sig) {
            Some(name) => RunOutcome::Failed(format!("killed by signal {sig} ({name})")),
            None => RunOutcome::Failed(format!("killed by signal {sig}")),
        },
        (None, None) => RunOutcome::Failed("ended without an exit status".into()),
    }
}

/// The usual name of a signal number.
pub fn signal_name(sig: i32) -> Option<&'static str> {
    use libc::*;
    Some(match sig {
        SIGHUP => "SIGHUP",
        SIGINT => "SIGINT",
        SIGQUIT => "SIGQUIT",
        SIGILL => "SIGILL",
        SIGTRAP => "SIGTRAP",
        SIGABRT => "SIGABRT",
        SIGBUS => "SIGBUS",
        SIGFPE => "SIGFPE",
        SIGKILL => "SIGKILL",
        SIGUSR1 => "SIGUSR1",
        SIGSEGV => "SIGSEGV",
        SIGUSR2 => "SIGUSR2",
        SIGPIPE => "SIGPIPE",
        SIGALRM => "SIGALRM",
        SIGTERM => "SIGTERM",
        SIGXCPU => "SIGXCPU",
        SIGXFSZ => "SIGXFSZ",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::catalog;

    fn raw(s: &str) -> RawLine {
        RawLine { bytes: s.as_bytes().to_vec(), len: s.len(), overwritten: false }
    }

    fn feed(stream: &mut MetricStream, lines: &[&str]) -> Vec<StreamOut> {
        let mut out: Vec<StreamOut> = lines.iter().enumerate().flat_map(|(i, l)| stream.line(raw(l), i as f64)).collect();
        out.extend(stream.finish(99.0));
        out
    }

    fn steps(out: &[StreamOut]) -> Vec<(u64, f64)> {
        out.iter().filter_map(|o| if let StreamOut::Point { step, time_s, .. } = o { Some((*step, *time_s)) } else { None }).collect()
    }

    fn texts(out: &[StreamOut]) -> Vec<&str> {
        out.iter().filter_map(|o| if let StreamOut::Text(t) = o { Some(t.as_str()) } else { None }).collect()
    }

    #[test]
    fn a_flush_shows_the_latest_step_without_waiting_for_the_next() {
        let mut m = MetricStream::new(Path::new("stdout"), None, true);
        let mut out = m.line(raw(r#"{"step": 1, "loss": 2.0}"#), 0.5);
        out.extend(m.line(raw(r#"{"step": 2, "loss": 1.9}"#), 0.6));
        assert_eq!(steps(&out), vec![(1, 0.5)], "step 2 is still being gathered");
        assert_eq!(steps(&m.flush()), vec![(2, 0.6)], "the input paused: step 2 goes out");
        assert!(m.flush().is_empty());
    }

    #[test]
    fn lines_are_cut_at_breaks_and_bounded_in_length() {
        let mut s = LineSplitter::default();
        assert_eq!(s.push(b"ab\ncd"), vec![raw("ab")]);
        assert_eq!(s.push(b"e\n\n"), vec![raw("cde"), raw("")]);
        assert_eq!(s.finish(), None);
        let long = vec![b'x'; MAX_LINE_BYTES + 10];
        assert!(s.push(&long).is_empty());
        let lines = s.push(b"y\nz");
        assert_eq!(lines[0].len, MAX_LINE_BYTES + 11);
        assert_eq!(lines[0].bytes.len(), MAX_LINE_BYTES + 1, "only the first bytes are kept");
        assert!(lines[0].too_long());
        assert_eq!(s.finish(), Some(raw("z")));
        s.push(b"partial");
        s.reset();
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn a_progress_bar_drawn_over_itself_is_cut_at_each_state() {
        let bar = |s: &str| RawLine { overwritten: true, ..raw(s) };
        let mut s = LineSplitter::default();
        assert_eq!(s.push(b"\r 1/9 [loss=2.5]\r 2/9 [loss=2.4]"), vec![bar(""), bar(" 1/9 [loss=2.5]")]);
        assert_eq!(s.push(b"\r"), vec![], "a `\\r` at a chunk's end waits for what follows");
        assert_eq!(s.push(b"\r\ndone\r"), vec![bar(" 2/9 [loss=2.4]"), raw("")]);
        assert_eq!(s.push(b"\nnext"), vec![raw("done")], "`\\r\\n` split across chunks is one line break");
        assert_eq!(s.finish(), Some(raw("next")));
        // Live: every state with metrics is a point; a bar's other states are not shown.
        let mut m = MetricStream::new(Path::new("stdout"), None, true);
        let mut out = Vec::new();
        let mut s = LineSplitter::default();
        for (i, line) in s.push(b"Training\n\r  0%|          | 0/300 [00:00<?, ?it/s]\r  1%|          | 3/300 [00:01<01:39, 3.0it/s, loss=2.5]\r  2%|          | 6/300 [00:02<01:38, 3.0it/s, loss=2.4]\r").into_iter().enumerate() {
            out.extend(m.line(line, i as f64));
        }
        out.extend(m.flush());
        assert_eq!(steps(&out).iter().map(|p| p.0).collect::<Vec<_>>(), [3], "{out:?}");
        assert_eq!(texts(&out), ["Training"], "{out:?}");
        for line in s.push(b"\r  3%|          | 9/300 [00:03<01:37, 3.0it/s, loss=2.3]\n") {
            out.extend(m.line(line, 9.0));
        }
        out.extend(m.finish(10.0));
        assert_eq!(steps(&out).iter().map(|p| p.0).collect::<Vec<_>>(), [3, 6, 9], "{out:?}");
    }

    #[test]
    fn stdout_text_before_the_first_metric_line_is_shown_and_jsonl_detected() {
        let mut m = MetricStream::new(Path::new("stdout"), None, true);
        let out = feed(&mut m, &["loading model", "", r#"{"step": 1, "loss": 2.0}"#, "epoch done", r#"{"step": 2, "train/loss": 1.5}"#]);
        assert_eq!(m.format().map(Format::name), Some("jsonl"));
        assert_eq!(texts(&out), ["loading model", "epoch done"]);
        // No time in the records: each point carries the arrival time of its line.
        assert_eq!(steps(&out), [(1, 2.0), (2, 4.0)]);
        let StreamOut::Point { values, .. } = out.iter().rfind(|o| matches!(o, StreamOut::Point { .. })).unwrap() else { unreachable!() };
        assert_eq!(values, &vec![(MetricName::from(catalog::LOSS), 1.5)], "read under the canonical name");
    }

    #[test]
    fn a_csv_header_is_kept_for_detection_and_a_text_preset_is_found() {
        let mut m = MetricStream::new(Path::new("stdout"), None, true);
        let out = feed(&mut m, &["step,loss", "1,2.5", "2,2.4"]);
        assert_eq!(m.format().map(Format::name), Some("csv"));
        assert_eq!(steps(&out).len(), 2);
        let mut m = MetricStream::new(Path::new("stdout"), None, true);
        let out = feed(&mut m, &["compiling", "iter 1: loss 4.2, time 120.0ms", "iter 2: loss 4.0, time 110.0ms"]);
        assert_eq!(m.format().map(Format::name), Some("nanogpt"));
        assert_eq!(texts(&out), ["compiling"]);
        assert_eq!(steps(&out).len(), 2);
    }

    #[test]
    fn output_without_metrics_is_all_text_in_order() {
        let mut m = MetricStream::new(Path::new("stdout"), None, true);
        let out = feed(&mut m, &["a", "b, c", "{not json"]);
        assert_eq!(texts(&out), ["a", "b, c", "{not json"]);
        assert!(steps(&out).is_empty());
    }

    #[test]
    fn a_line_that_cannot_be_a_header_is_shown_before_the_format_is_known() {
        let mut m = MetricStream::new(Path::new("stdout"), None, true);
        assert_eq!(m.line(raw("loading the model"), 0.0), [StreamOut::Text("loading the model".into())]);
        assert!(m.line(raw("epoch,loss"), 1.0).is_empty(), "perhaps a CSV header: held");
        assert!(m.format().is_none());
        assert_eq!(steps(&m.line(raw(r#"{"loss": 2}"#), 2.0)), [], "the format is known; the point waits for its step to end");
        assert_eq!(m.format().map(Format::name), Some("jsonl"));
    }

    #[test]
    fn a_followed_file_that_its_guess_reads_nothing_of_is_read_in_a_format_that_does() {
        // A GAN's losses, no name rlmon knows: `pairs`, numbered by the log's steps.
        let mut m = MetricStream::new(Path::new("logs/train.log"), None, false);
        let out = feed(&mut m, &["Extracting /tmp/data/train-images-idx3-ubyte.gz", "Step 1: Generator Loss: 0.774581, Discriminator Loss: 1.300602", "Step 1000: Generator Loss: 4.062009, Discriminator Loss: 0.055117"]);
        assert_eq!(m.format().map(Format::name), Some("pairs"));
        assert_eq!(steps(&out).iter().map(|p| p.0).collect::<Vec<_>>(), [1, 1000], "{out:?}");
        // Lines indented with tabs, `cost` the loss: text, numbered by the epoch.
        let mut m = MetricStream::new(Path::new("logs/train.log"), None, false);
        let out = feed(&mut m, &["Start training...", "\tEpoch: 0001 cost= 29.86", "\ttime this epoch= 1.7", "\tEpoch: 0002 cost= 7.91", "\ttime this epoch= 1.6"]);
        assert_eq!(m.format().map(Format::name), Some("text"));
        assert_eq!(steps(&out).iter().map(|p| p.0).collect::<Vec<_>>(), [1, 2], "{out:?}");
    }

    /// Stable-Baselines3 prints a table of rows between dashed rules: no row reads
    /// alone, so each is shown as it comes; the closing rule makes the record.
    #[test]
    fn a_record_over_lines_already_shown_reads_with_them() {
        let table = |it: u64| {
            let rows = [("rollout/", String::new()), ("   ep_rew_mean", format!("{}", 20 + it)), ("time/", String::new()), ("   iterations", it.to_string()), ("   total_timesteps", (2048 * it).to_string()), ("train/", String::new()), ("   approx_kl", "0.012".into()), ("   entropy_loss", "-0.69".into())];
            let mut lines = vec!["-----------------------------".to_string()];
            lines.extend(rows.iter().map(|(k, v)| format!("| {k:<18} | {v:<6} |")));
            lines.push("-----------------------------".into());
            lines
        };
        let mut lines = vec!["Using cpu device".to_string()];
        (1..=3).for_each(|it| lines.extend(table(it)));
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        for (origin, mixed) in [("stdout", true), ("logs/ppo.log", false)] {
            let mut m = MetricStream::new(Path::new(origin), None, mixed);
            let out = feed(&mut m, &lines);
            assert_eq!(m.format().map(Format::name), Some("text"), "{origin}");
            assert_eq!(steps(&out).len(), 3, "{origin}: {out:?}");
            let shown = texts(&out);
            assert_eq!(shown.iter().filter(|t| t.contains("ep_rew_mean")).count(), 1, "{origin}: the first table's lines shown once: {shown:?}");
        }
    }

    /// A Trainer's arguments printed first read as text metrics; the dicts after
    /// read in another format, which takes over (from its third dict).
    #[test]
    fn a_format_chosen_from_a_config_line_gives_way_to_the_records_after() {
        let mut lines = vec!["Training/evaluation parameters TrainingArguments(learning_rate=5e-05, logging_steps=10, num_train_epochs=3.0)".to_string(), "***** Running training *****".into()];
        lines.extend((1..=6).map(|i| format!("{{'loss': {:.2}, 'grad_norm': 1.5, 'learning_rate': 4e-05, 'epoch': 0.{i}}}", 3.0 - 0.1 * i as f64)));
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        for mixed in [true, false] {
            let mut m = MetricStream::new(Path::new("train.log"), None, mixed);
            let out = feed(&mut m, &lines);
            assert_eq!(m.format().map(Format::name), Some("hf-log"), "{out:?}");
            let losses = out.iter().filter(|o| matches!(o, StreamOut::Point { values, .. } if values.iter().any(|(n, _)| **n == MetricName::from(catalog::LOSS)))).count();
            assert_eq!(losses, 6, "every dict read, the first two again: {out:?}");
            assert_eq!(texts(&out).iter().filter(|t| t.contains("'loss'")).count(), 2, "{out:?}");
        }
        // A format given is kept.
        let mut m = MetricStream::new(Path::new("train.log"), Some(Format::Text(Preset::Generic)), true);
        feed(&mut m, &lines);
        assert_eq!(m.format().map(Format::name), Some("text"));
    }

    /// nanoGPT prints its config first; a comment there holds a number with a
    /// thousands comma, which is no CSV header to wait on.
    #[test]
    fn a_config_printed_first_does_not_decide_the_format() {
        let mut lines = vec!["Overriding config with config/train_gpt2.py:", "# 12 batch size * 1024 block size * 5 gradaccum * 8 GPUs = 491,520", "batch_size = 12", "max_iters = 640", "tokens per iteration will be: 491,520", "compiling the model... (takes a ~minute)"];
        let iters: Vec<String> = (0..30).map(|i| format!("iter {i}: loss {:.4}, time 250.00ms, mfu 32.00%", 10.0 - 0.1 * i as f64)).collect();
        lines.extend(iters.iter().map(String::as_str));
        let mut m = MetricStream::new(Path::new("logs/train.log"), None, false);
        let out = feed(&mut m, &lines);
        assert_eq!(m.format().map(Format::name), Some("nanogpt"));
        assert_eq!(steps(&out).iter().map(|p| p.0).collect::<Vec<_>>(), (0..30).collect::<Vec<u64>>(), "{out:?}");
    }

    #[test]
    fn a_metrics_file_skips_bad_lines_and_sees_resumes() {
        let mut m = MetricStream::new(Path::new("logs/m.jsonl"), Some(Format::Jsonl), false);
        let out = feed(&mut m, &[r#"{"step": 1, "loss": 2}"#, "garbage", r#"{"step": 2, "loss": 1.9}"#, r#"{"step": 1, "loss": 2.1}"#]);
        assert!(out.iter().any(|o| matches!(o, StreamOut::Skipped(SkipKind::NotMetrics, _))));
        assert!(out.contains(&StreamOut::Resumed { rank: None, resume: Resume { at_step: 1, discarded: 2 } }), "{out:?}");
        assert_eq!(steps(&out).iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2, 1]);
    }

    #[test]
    fn ranks_are_gathered_apart_and_a_file_gives_its_rank() {
        let ranks = |out: &[StreamOut]| out.iter().filter_map(|o| if let StreamOut::Point { rank, step, .. } = o { Some((*rank, *step)) } else { None }).collect::<Vec<_>>();
        let mut m = MetricStream::new(Path::new("logs/all.jsonl"), Some(Format::Jsonl), false);
        let out = feed(&mut m, &[r#"{"step": 1, "rank": 0, "loss": 2}"#, r#"{"step": 1, "rank": 1, "loss": 2.1}"#, r#"{"step": 2, "rank": 0, "loss": 1.9}"#]);
        let mut got = ranks(&out);
        got.sort();
        assert_eq!(got, [(Some(0), 1), (Some(0), 2), (Some(1), 1)], "no step merges two ranks");
        // Rank 1 going back is its own resume; rank 0's steps are not touched.
        let out = feed(&mut m, &[r#"{"step": 2, "rank": 1, "loss": 2}"#, r#"{"step": 3, "rank": 0, "loss": 1.8}"#, r#"{"step": 1, "rank": 1, "loss": 2.2}"#]);
        let resumes: Vec<_> = out.iter().filter(|o| matches!(o, StreamOut::Resumed { .. })).collect();
        assert_eq!(resumes, [&StreamOut::Resumed { rank: Some(1), resume: Resume { at_step: 1, discarded: 2 } }], "{out:?}");
        let mut m = MetricStream::new(Path::new("logs/rank3.jsonl"), Some(Format::Jsonl), false).with_rank(Some(3));
        assert_eq!(ranks(&feed(&mut m, &[r#"{"step": 1, "loss": 2}"#])), [(Some(3), 1)]);
        assert_eq!(rank_of_file(Path::new("logs/rank12.jsonl")), Some(12));
        assert_eq!(rank_of_file(Path::new("logs/worker_2_log.csv")), Some(2));
        assert_eq!(rank_of_file(Path::new("logs/main.jsonl")), None);
    }

    /// A job under `srun --label` that prints metrics from its first line: the
    /// labels are known as ranks by the third line, and every line after is its
    /// task's (the first two, read before, are rank 0's as they stand).
    #[test]
    fn slurm_labels_from_the_first_line_are_ranks_once_three_lines_tell() {
        let ranks = |out: &[StreamOut]| out.iter().filter_map(|o| if let StreamOut::Point { rank, step, .. } = o { Some((*rank, *step)) } else { None }).collect::<Vec<_>>();
        let lines: Vec<String> = (1..=6).flat_map(|s| (0..2).map(move |r| format!("{r}: step {s} | loss {:.2} | lr 3.0e-04", 3.0 - 0.1 * s as f64 + 0.01 * r as f64))).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        for format in [None, Some(Format::Text(Preset::Generic))] {
            let mut m = MetricStream::new(Path::new("stdout"), format.clone(), true);
            let got = ranks(&feed(&mut m, &lines));
            let of = |rank: Option<u32>| got.iter().filter(|(r, _)| *r == rank).map(|(_, s)| *s).collect::<Vec<u64>>();
            assert_eq!(of(Some(1)), [2, 3, 4, 5, 6], "{format:?}: {got:?}");
            assert!(of(None).ends_with(&[2, 3, 4, 5, 6]), "{format:?}: {got:?}");
        }
    }

    #[test]
    fn log_lines_are_bounded() {
        let long = "é".repeat(LOG_LINE_BYTES);
        let shown = log_text(&raw(&long));
        assert!(shown.len() < LOG_LINE_BYTES + 32 && shown.ends_with(&format!("({} bytes)", long.len())), "{}", &shown[shown.len() - 20..]);
        let huge = RawLine { bytes: vec![b'x'; 8], len: MAX_LINE_BYTES + 1, overwritten: false };
        assert_eq!(log_text(&huge), format!("(a line of {} bytes, not shown)", MAX_LINE_BYTES + 1));
        assert_eq!(log_text(&raw("dos\r")), "dos");
    }

    #[test]
    fn exit_statuses_become_outcomes() {
        assert_eq!(outcome(Some(0), None, false), RunOutcome::Finished);
        assert_eq!(outcome(Some(3), None, false), RunOutcome::Failed("exited with status 3".into()));
        assert_eq!(outcome(None, Some(9), false), RunOutcome::Failed("killed by signal 9 (SIGKILL)".into()));
        assert_eq!(outcome(None, Some(15), true), RunOutcome::Cancelled, "we stopped it");
        assert_eq!(outcome(Some(1), None, true), RunOutcome::Cancelled);
        assert_eq!(outcome(None, Some(77), false), RunOutcome::Failed("killed by signal 77".into()));
    }
}
