//! Reading metrics written by other programs: JSONL, CSV/TSV exports, Hugging Face
//! `trainer_state.json` and its printed log dicts, the text logs of common trainers
//! (Megatron-LM, nanoGPT, DeepSpeed), any other trainer's `key: value` lines, a
//! user's own pattern, TensorBoard event files, MLflow's file store, W&B run files
//! or trackio projects.
//!
//! Every parser is a pure function of the text it is given: a line in, a [`Line`]
//! out (metrics, plain text, or a line skipped with its reason). Reading files,
//! tailing and retries live with the callers; what each stream read and ignored is
//! counted by [`normalize::Normalizer`].
pub mod client;
pub mod csv;
pub mod hf;
pub mod jsondoc;
pub mod jsonl;
pub mod kv;
pub mod mlflow;
pub mod normalize;
pub mod tensorboard;
pub mod text;
pub mod trackio;
pub mod wandb;

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::metrics::catalog::Preset;

/// A line longer than this is skipped unread: what one line may cost is bounded.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// One parsed record, before names are made canonical.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Record {
    pub run: Option<String>,
    /// The process of a multi-process job that wrote it (`rank`, `global_rank`,
    /// `local_rank`): each rank is its own run under the job.
    pub rank: Option<u32>,
    pub step: Option<u64>,
    /// `step` is the reader's count of rows (a CSV without a step column), not a
    /// number the log wrote: a counter among the fields numbers the steps instead
    /// (see [`normalize::Normalizer`]).
    pub counted: bool,
    pub time: Option<f64>,
    /// Numeric fields as written (vectors flattened to `name/E{i}`).
    pub fields: Vec<(FieldName, f64)>,
    /// Fields that were present but not numbers (strings, objects, booleans).
    pub ignored: Vec<String>,
    /// The names in `fields` are already canonical (a preset mapped them).
    pub canonical: bool,
    /// Belongs to the step before it (a line that completes the previous one).
    pub continues: bool,
    /// Has no step yet: a later line of its block names the step it belongs to
    /// (a nested result dump whose `training_iteration` comes near its end).
    pub awaits_step: bool,
}

/// A field's name as read. Shared: a reader that meets one name on every line
/// (JSONL's) hands out the same name each time instead of a fresh string, and a
/// normalizer recognises it at a glance ([`FieldName::same`]).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FieldName(Arc<str>);

impl FieldName {
    /// The same name: the same allocation, or equal text.
    pub fn same(&self, other: &FieldName) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl std::ops::Deref for FieldName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for FieldName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for FieldName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for FieldName {
    fn from(s: &str) -> Self {
        FieldName(s.into())
    }
}

impl From<String> for FieldName {
    fn from(s: String) -> Self {
        FieldName(s.into())
    }
}

impl PartialEq<str> for FieldName {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for FieldName {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl std::fmt::Display for FieldName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Debug for FieldName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

/// What one line of input is.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// Nothing on it.
    Blank,
    Metrics(Record),
    /// Not a metric line: a live command's output goes to the events pane.
    Text,
    /// Meant as a metric line but unusable.
    Skip(SkipKind, String),
}

/// Why a line was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipKind {
    /// Not valid in the format (bad JSON, wrong column count, ...).
    Malformed,
    /// A record without a single numeric value.
    NoNumbers,
    /// Longer than [`MAX_LINE_BYTES`].
    TooLong,
    /// Not UTF-8 text.
    NotText,
    /// Not a metric line in a file that should hold only metric lines.
    NotMetrics,
    /// A value for a step already shown live (read in place by `check`).
    Late,
}

impl SkipKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SkipKind::Malformed => "malformed",
            SkipKind::NoNumbers => "no numeric value",
            SkipKind::TooLong => "over-long",
            SkipKind::NotText => "not UTF-8",
            SkipKind::NotMetrics => "not a metric line",
            SkipKind::Late => "logged after later steps",
        }
    }
}

/// The input formats, chosen from the file (see [`detect`]) or by `--format`.
#[derive(Debug, Clone)]
pub enum Format {
    Jsonl,
    /// Delimited text with a header row (`,` or tab).
    Csv(u8),
    /// Hugging Face `trainer_state.json`: its `log_history`.
    TrainerState,
    /// Another metrics file written whole as one JSON document (Sacred's
    /// `metrics.json`, a Keras history dump, a list of records): see [`jsondoc`].
    JsonDocument,
    /// The dicts the Hugging Face Trainer prints (`{'loss': 2.1, 'epoch': 0.5}`).
    HfLog,
    /// A trainer's text log.
    Text(Preset),
    /// A user's regex with named groups: `step` and metric names.
    Pattern(text::Pattern),
    /// TensorBoard event files (records, not lines).
    TensorBoard,
    /// MLflow's file store: a folder of runs, a file per metric (read whole).
    MlFlow,
    /// Any text's `key: value` pairs, every one a metric, known to rlmon or not:
    /// what is left to try when no other format reads a log (its names are its own).
    Pairs,
    /// W&B run files (`.wandb`): records, not lines.
    Wandb,
    /// A trackio project's SQLite database: rows, not lines.
    Trackio,
}

/// Names accepted by `--format`.
pub const FORMAT_NAMES: &[&str] = &["jsonl", "csv", "tsv", "trainer-state", "json-doc", "hf-log", "megatron", "nanogpt", "deepspeed", "text", "pairs", "tensorboard"];

impl Format {
    pub fn name(&self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Csv(b'\t') => "tsv",
            Format::Csv(_) => "csv",
            Format::TrainerState => "trainer-state",
            Format::JsonDocument => "json-doc",
            Format::HfLog => "hf-log",
            Format::Text(Preset::Megatron) => "megatron",
            Format::Text(Preset::NanoGpt) => "nanogpt",
            Format::Text(Preset::DeepSpeed) => "deepspeed",
            Format::Text(Preset::Generic) => "text",
            Format::Pattern(_) => "pattern",
            Format::TensorBoard => "tensorboard",
            Format::MlFlow => "mlflow",
            Format::Pairs => "pairs",
            Format::Wandb => "wandb",
            Format::Trackio => "trackio",
        }
    }

    /// `--format NAME`; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<Format> {
        Some(match name {
            "jsonl" | "json" => Format::Jsonl,
            "csv" => Format::Csv(b','),
            "tsv" => Format::Csv(b'\t'),
            "trainer-state" | "trainer_state" => Format::TrainerState,
            "json-doc" => Format::JsonDocument,
            "hf-log" | "hf" => Format::HfLog,
            "megatron" => Format::Text(Preset::Megatron),
            "nanogpt" => Format::Text(Preset::NanoGpt),
            "deepspeed" => Format::Text(Preset::DeepSpeed),
            "text" | "generic" | "kv" => Format::Text(Preset::Generic),
            "pairs" => Format::Pairs,
            "tensorboard" => Format::TensorBoard,
            _ => return None,
        })
    }

    /// Whether the format is a JSON document written whole, not line by line
    /// (read again whole when followed).
    pub fn is_document(&self) -> bool {
        matches!(self, Format::TrainerState | Format::JsonDocument)
    }

    /// Whether every line of such a file should be a metric line (others are
    /// skipped and counted), rather than a log where metric lines are mixed with
    /// other output.
    pub fn strict(&self) -> bool {
        matches!(self, Format::Jsonl | Format::Csv(_) | Format::TrainerState | Format::JsonDocument)
    }
}

/// Chooses the format from the file name and its first lines.
pub fn detect(path: &Path, head: &str) -> Format {
    let name = path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let first = head.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if tensorboard::is_event_file(&name) {
        return Format::TensorBoard;
    }
    if wandb::is_run_file(&name) {
        return Format::Wandb;
    }
    if name.ends_with("trainer_state.json") || (first.starts_with('{') && head.contains("\"log_history\"")) {
        return Format::TrainerState;
    }
    if jsondoc::looks_like(&name, head) {
        return Format::JsonDocument;
    }
    if name.ends_with(".jsonl") || name.ends_with(".ndjson") {
        return Format::Jsonl;
    }
    if name.ends_with(".tsv") {
        return Format::Csv(b'\t');
    }
    if name.ends_with(".csv") {
        return Format::Csv(b',');
    }
    // A progress bar's states drawn over each other (`\r`, or Keras' backspaces)
    // are lines of their own; a launcher's rank prefix (`[rank0]:`) is not part of
    // the trainer's line.
    let lines = || head.lines().take(200).flat_map(|l| l.split(REWRITES)).map(|l| launcher_rank(l).map_or(l, |(_, rest)| rest));
    // A preset whose lines are a few among many a generic reading reads is not the
    // log's dialect (TensorFlow's `global step 201: accuracy = 0.61` summary among
    // its `loss = 1.9, step = 101` lines is no nanoGPT log).
    // (A progress bar alone, a count and its rate, is drawn in any log: it is
    // no line of the dialect's.)
    let generic_lines = || {
        let mut progress = text::Progress::default();
        lines().filter(|l| matches!(text::parse_generic(l, &mut progress), Line::Metrics(_)) && !text::is_plain_bar(l)).count()
    };
    let mut generic_read = None;
    for preset in [Preset::Megatron, Preset::NanoGpt, Preset::DeepSpeed] {
        let read = lines().filter(|l| matches!(text::parse(preset, l), Line::Metrics(_))).count();
        if read > 0 && 2 * read >= *generic_read.get_or_insert_with(generic_lines) {
            return Format::Text(preset);
        }
    }
    // Printed dicts are the log's records unless they are a few among many lines
    // a generic reading reads (a config dict printed above a text log's lines).
    if lines().any(|l| l.trim_start().starts_with("{'") || hf::after_prefix(l).is_some()) {
        let dicts = lines().filter(|l| matches!(hf::parse_printed(l), Line::Metrics(_))).count();
        if dicts == 0 || 2 * dicts >= *generic_read.get_or_insert_with(generic_lines) {
            return Format::HfLog;
        }
    }
    // JSON records with a few text lines among them (an evaluation's summary
    // printed between them) are a JSONL log, its other lines counted as skipped.
    let json_lines = lines().filter(|l| l.trim_start().starts_with('{') && serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(l.trim()).is_ok()).count();
    if json_lines > 0 && json_lines >= *generic_read.get_or_insert_with(generic_lines) {
        return Format::Jsonl;
    }
    // Read in order: a table's rows make a record only together.
    let mut progress = text::Progress::default();
    if lines().any(|l| matches!(text::parse_generic(l, &mut progress), Line::Metrics(_))) {
        return Format::Text(Preset::Generic);
    }
    if !first.starts_with('{') && first.contains('\t') {
        return Format::Csv(b'\t');
    }
    if csv::could_be_header(first, b',') {
        return Format::Csv(b',');
    }
    // JSON objects among the first lines: a metrics file, its bad lines counted.
    // Otherwise a text log none of whose first lines names a metric rlmon knows
    // (lines indented with tabs are no table without a header row of cells).
    if lines().any(|l| l.trim_start().starts_with('{')) {
        return Format::Jsonl;
    }
    Format::Text(Preset::Generic)
}

/// The formats to try, in order, when `tried` read no metric from an input whose
/// format was detected: every line format but `tried`, the text presets first and
/// [`Format::Pairs`] (which reads any number as a metric) last.
pub fn fallbacks(tried: &Format) -> Vec<Format> {
    let all = [
        Format::Text(Preset::Generic),
        Format::HfLog,
        Format::Text(Preset::Megatron),
        Format::Text(Preset::NanoGpt),
        Format::Text(Preset::DeepSpeed),
        Format::Jsonl,
        Format::Csv(b','),
        Format::Csv(b'\t'),
        Format::Pairs,
    ];
    all.into_iter().filter(|f| f.name() != tried.name()).collect()
}

/// The format to read a line input in: `detected` when it reads a metric line of
/// it, else the first of its [`fallbacks`] that does, with the names of the formats
/// that read none before it (`detected` first); when none reads one, `detected` and
/// the names of the others. `open` opens the input at its start.
pub fn settle<R: std::io::Read>(mut open: impl FnMut() -> std::io::Result<R>, detected: Format, default_metric: Option<String>) -> std::io::Result<(Format, Vec<&'static str>)> {
    // A document read whole (a JSON document, TensorBoard's records) has no lines to try.
    if matches!(detected, Format::TrainerState | Format::JsonDocument | Format::TensorBoard | Format::MlFlow | Format::Wandb | Format::Trackio) {
        return Ok((detected, Vec::new()));
    }
    let mut tried = Vec::new();
    for format in std::iter::once(detected.clone()).chain(fallbacks(&detected)) {
        if reads_metrics(open()?, format.clone(), default_metric.clone())? {
            return Ok((format, tried));
        }
        tried.push(format.name());
    }
    tried.remove(0);
    Ok((detected, tried))
}

/// Whether `format` reads a metric line from `input`: read up to the chunk that
/// holds the first one.
pub fn reads_metrics(input: impl std::io::Read, format: Format, default_metric: Option<String>) -> std::io::Result<bool> {
    struct UntilFound<'a, R> {
        input: R,
        found: &'a std::cell::Cell<bool>,
    }
    impl<R: std::io::Read> std::io::Read for UntilFound<'_, R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.found.get() {
                return Ok(0);
            }
            self.input.read(buf)
        }
    }
    let found = std::cell::Cell::new(false);
    let mut reader = LineReader::new(format, default_metric);
    read_lines(UntilFound { input, found: &found }, &mut reader, |_, line| found.set(found.get() || matches!(line, Line::Metrics(_))))?;
    Ok(found.get())
}

/// Turns the lines of one input into [`Line`]s, keeping what a format needs across
/// lines (a CSV header).
pub struct LineReader {
    format: Format,
    csv: csv::Columns,
    /// What a text log carries from line to line (a generic log's progress counters, the step seen so far).
    progress: text::Progress,
    /// What a JSONL input reuses from line to line.
    jsonl: jsonl::Reader,
    /// The first rank a launcher's prefix named (`[rank0]:`): its lines are the
    /// run's; another rank's lines are a run of their own under it.
    first_rank: Option<u32>,
    /// What the text log of each other rank carries from line to line (their
    /// lines interleave, and each counts its own progress).
    other_ranks: Vec<(u32, text::Progress)>,
    /// Whether a line's leading `N: ` is a task's label (Slurm's `srun --label`),
    /// decided once from the input's first lines (see [`rank_labels`]).
    rank_labels: Option<bool>,
    /// A stream's lines so far while they cannot tell that yet (see
    /// [`LineReader::learn_as_it_goes`]).
    learning: Option<String>,
}

/// What draws a progress bar's next state over the one before: a carriage
/// return, or backspaces (Keras).
const REWRITES: [char; 2] = ['\r', '\x08'];

impl LineReader {
    /// `default_metric`: the metric a one-value CSV (TensorBoard's export:
    /// `Wall time,Step,Value`) holds, from its file name.
    pub fn new(format: Format, default_metric: Option<String>) -> Self {
        let progress = text::Progress::new(matches!(format, Format::Pairs));
        LineReader { csv: csv::Columns::new(default_metric), format, progress, jsonl: jsonl::Reader::default(), first_rank: None, other_ranks: Vec::new(), rank_labels: None, learning: None }
    }

    pub fn format(&self) -> &Format {
        &self.format
    }

    /// Learns from an input's first lines what only a whole file tells (whether
    /// its lines carry Slurm's task labels); the first call counts. The readers
    /// of whole inputs call it with their head; a stream's owner calls it when it
    /// has seen enough lines to settle the format.
    pub fn learn_head(&mut self, head: &[u8]) {
        if self.rank_labels.is_none() && !self.format.strict() {
            self.rank_labels = Some(rank_labels(&String::from_utf8_lossy(&head[..head.len().min(HEAD_BYTES)])));
        }
    }

    /// [`Self::learn_head`] for a stream, which may not have seen enough lines
    /// yet: what `head` cannot tell is learned from the lines read after it,
    /// until they can ([`rank_labels_settled`]). A job under `srun --label` that
    /// prints metrics from its first line is known by its third.
    pub fn learn_as_it_goes(&mut self, head: &[u8]) {
        if self.rank_labels.is_none() && !self.format.strict() {
            self.learning = Some(String::from_utf8_lossy(&head[..head.len().min(HEAD_BYTES)]).into_owned());
            self.settle_labels();
        }
    }

    /// Decides [`Self::rank_labels`] once the lines learned from can tell.
    fn settle_labels(&mut self) {
        if let Some(decided) = self.learning.as_deref().and_then(rank_labels_settled) {
            self.rank_labels = Some(decided);
            self.learning = None;
        }
    }

    /// One line of input as a terminal would have shown it: the states of a
    /// progress bar rewritten in place with carriage returns (`\r 10/100 [..,
    /// loss=2.3]\r 20/100 [.., loss=2.1]`) or backspaces over the state before
    /// (Keras' bar in a file: `50/100 [...] - loss: 2.1\x08\x08...100/100 [...]`)
    /// are each a record when they hold metrics (a bar's postfix at every update);
    /// of the rest only the last state counts. Files of records (JSONL, CSV), where
    /// `\r` is never a bar's, are read by line alone: no extra pass over every
    /// line of a long log.
    pub fn segments(&mut self, raw: &[u8], mut f: impl FnMut(Line)) {
        if self.format.strict() {
            return f(self.line(raw));
        }
        let mut end = raw.len();
        while end > 0 && raw[end - 1] == b'\r' {
            end -= 1;
        }
        if raw.len() > MAX_LINE_BYTES || memchr::memchr2(REWRITES[0] as u8, REWRITES[1] as u8, &raw[..end]).is_none() {
            return f(self.line(raw));
        }
        // A run of backspaces is one rewrite: the empty states between them are blank.
        let mut states = raw[..end].split(|b| REWRITES.contains(&char::from(*b))).peekable();
        while let Some(state) = states.next() {
            let line = self.line(state);
            if states.peek().is_none() || matches!(line, Line::Metrics(_)) {
                f(line);
            }
        }
    }

    /// One line of input, without its line break.
    pub fn line(&mut self, raw: &[u8]) -> Line {
        if raw.len() > MAX_LINE_BYTES {
            return too_long(raw.len());
        }
        let Ok(line) = std::str::from_utf8(raw) else { return Line::Skip(SkipKind::NotText, "not UTF-8 text".into()) };
        // A byte-order mark (Windows editors and PowerShell write one) is no text.
        let line = line.trim_end_matches('\r').trim_start_matches('\u{feff}');
        if line.trim().is_empty() {
            return Line::Blank;
        }
        if let Some(learning) = &mut self.learning {
            learning.push('\n');
            learning.push_str(line);
            self.settle_labels();
        }
        if !self.format.strict() {
            let labelled = || if self.rank_labels == Some(true) { task_label(line) } else { None };
            if let Some((rank, rest)) = launcher_rank(line).or_else(labelled) {
                return self.ranked_line(rank, rest);
            }
        }
        self.text_line(line)
    }

    /// One line's text, without a launcher's prefix, as the format reads it.
    fn text_line(&mut self, line: &str) -> Line {
        if line.trim().is_empty() {
            return Line::Blank;
        }
        let read_as_text = matches!(self.format, Format::HfLog | Format::Text(_) | Format::Pairs);
        if read_as_text {
            if let Some(scale) = text::loss_scale_message(line) {
                return self.progress.note_loss_scale(scale);
            }
        }
        let parsed = match &mut self.format {
            Format::Jsonl => self.jsonl.parse(line),
            Format::Csv(delimiter) => self.csv.line(line, *delimiter),
            Format::TrainerState | Format::JsonDocument | Format::TensorBoard | Format::MlFlow | Format::Wandb | Format::Trackio => Line::Skip(SkipKind::Malformed, "this format is read whole, not by lines".into()),
            Format::HfLog => text::parse_printed_in_order(line, &mut self.progress),
            Format::Text(preset) => text::parse_in_order(*preset, line, &mut self.progress),
            Format::Pairs => text::parse_generic(line, &mut self.progress),
            Format::Pattern(p) => p.parse(line),
        };
        let parsed = if read_as_text {
            let scaled = self.progress.with_loss_scale(parsed);
            self.progress.with_messages(line, scaled)
        } else {
            parsed
        };
        match parsed {
            Line::Text if matches!(self.format, Format::Jsonl) => Line::Skip(SkipKind::NotMetrics, "not JSON (expected one JSON object per line)".into()),
            Line::Text if self.format.strict() => Line::Skip(SkipKind::NotMetrics, "not a metric line".into()),
            other => other,
        }
    }
}

impl LineReader {
    /// A line after a launcher's rank prefix: parsed as the format's, with the
    /// progress of its own rank, and its record given the rank unless it is the
    /// first rank met with metrics (whose lines are the run itself, as in a log of
    /// one rank; every rank's warnings come first in many jobs).
    fn ranked_line(&mut self, rank: u32, rest: &str) -> Line {
        // (Read once: a prefix inside the rest is text, however many there are.)
        if self.first_rank == Some(rank) {
            return self.text_line(rest);
        }
        let at = self.other_ranks.iter().position(|(r, _)| *r == rank).unwrap_or_else(|| {
            self.other_ranks.push((rank, text::Progress::new(matches!(self.format, Format::Pairs))));
            self.other_ranks.len() - 1
        });
        std::mem::swap(&mut self.progress, &mut self.other_ranks[at].1);
        let parsed = self.text_line(rest);
        if self.first_rank.is_none() && matches!(parsed, Line::Metrics(_)) {
            // This rank is the run: its progress stays the reader's own.
            self.first_rank = Some(rank);
            self.other_ranks.remove(at);
            return parsed;
        }
        std::mem::swap(&mut self.progress, &mut self.other_ranks[at].1);
        match parsed {
            Line::Metrics(mut rec) => {
                rec.rank = rec.rank.or(Some(rank));
                Line::Metrics(rec)
            }
            other => other,
        }
    }
}

/// The rank in a launcher's prefix and the line after it: torchrun's `[rank1]:`
/// (and `[default1]:` of older versions), Open MPI's `--tag-output`
/// `[1,3]<stdout>:` (job, rank), which every line of a rank's output carries
/// when their outputs are merged.
pub fn launcher_rank(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix('[')?;
    if let Some(((job, rank), after)) = rest.split_once(']').and_then(|(ids, after)| Some((ids.split_once(',')?, after))) {
        job.parse::<u32>().ok()?;
        let after = after.strip_prefix("<stdout>:").or_else(|| after.strip_prefix("<stderr>:"))?;
        return Some((rank.parse().ok()?, after));
    }
    let digits_at = rest.find(|c: char| c.is_ascii_digit())?;
    if !matches!(&rest[..digits_at], "rank" | "default") {
        return None;
    }
    let (number, rest) = rest[digits_at..].split_once("]:")?;
    Some((number.parse().ok()?, rest))
}

/// Slurm's task label (`srun --label`): `0: ` or, padded to the widest task id,
/// ` 3: ` before each line of a task's output, and the line after it. Alone, the
/// shape is also a step printed first (`100: loss 2.3`) or Darknet's iteration:
/// [`rank_labels`] tells them apart over a whole input.
pub fn task_label(line: &str) -> Option<(u32, &str)> {
    let t = line.trim_start_matches(' ');
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let rest = t[digits..].strip_prefix(": ")?;
    if digits == 0 || digits > 9 || rest.trim().is_empty() {
        return None;
    }
    Some((t[..digits].parse().ok()?, rest))
}

/// Whether the task labels of an input's first lines are ranks, not steps: most
/// of its lines carry one, and they go back (tasks interleave: `0:`, `1:`, `0:`)
/// or stay one number over three lines and more (one task's output). A counter
/// printed first only goes up (`100: ...`, `200: ...`; or holds over a step's
/// few lines).
pub fn rank_labels(head: &str) -> bool {
    let lines: Vec<&str> = head.lines().filter(|l| !l.trim().is_empty()).take(HEAD_LINES).collect();
    let labels: Vec<u32> = lines.iter().filter_map(|l| task_label(l)).map(|(n, _)| n).collect();
    if labels.len() < 3 || 2 * labels.len() < lines.len() {
        return false;
    }
    labels.windows(2).any(|w| w[1] < w[0]) || labels.iter().all(|n| *n == labels[0])
}

/// [`rank_labels`] of a stream's first lines once they can tell: three
/// labelled lines, or six lines of which under half carry a label, or a whole
/// head; `None` before.
pub fn rank_labels_settled(head: &str) -> Option<bool> {
    let lines: Vec<&str> = head.lines().filter(|l| !l.trim().is_empty()).take(HEAD_LINES).collect();
    let labelled = lines.iter().filter(|l| task_label(l).is_some()).count();
    let enough = labelled >= 3 || (lines.len() >= 6 && 2 * labelled < lines.len()) || lines.len() >= HEAD_LINES || head.len() >= HEAD_BYTES;
    enough.then(|| rank_labels(head))
}

/// The lines and bytes of an input's head that decide what a whole file tells.
const HEAD_LINES: usize = 200;
const HEAD_BYTES: usize = 64 * 1024;

/// Reads a whole input, calling `f` with each line's number (from 1) and what it
/// holds. Formats read as one document (trainer_state.json) number their records.
pub fn read_all(text: &[u8], reader: &mut LineReader, mut f: impl FnMut(usize, Line)) -> Result<(), String> {
    if matches!(reader.format, Format::TensorBoard) {
        tensorboard::read_all(text, f);
        return Ok(());
    }
    if matches!(reader.format, Format::Wandb) {
        let (outs, _) = wandb::read_all(text)?;
        for (i, out) in outs.into_iter().enumerate() {
            if let wandb::Out::Line(line) = out {
                f(i + 1, line);
            }
        }
        return Ok(());
    }
    if reader.format.is_document() {
        let text = std::str::from_utf8(text).map_err(|_| "not UTF-8 text".to_owned())?;
        for (i, rec) in document_records(&reader.format, text).unwrap_or_else(|| Ok(Vec::new()))?.into_iter().enumerate() {
            f(i + 1, rec);
        }
        return Ok(());
    }
    reader.learn_head(text);
    for (i, raw) in text.split(|b| *b == b'\n').enumerate() {
        reader.segments(raw, |line| f(i + 1, line));
    }
    Ok(())
}

/// The records of a document format read whole (`None` for any other format).
pub fn document_records(format: &Format, text: &str) -> Option<Result<Vec<Line>, String>> {
    match format {
        Format::TrainerState => Some(hf::trainer_state(text)),
        Format::JsonDocument => Some(jsondoc::records(text)),
        _ => None,
    }
}

fn too_long(bytes: usize) -> Line {
    Line::Skip(SkipKind::TooLong, format!("line of {bytes} bytes (at most {MAX_LINE_BYTES})"))
}

/// Bytes read from a stream at a time by [`read_lines`].
const CHUNK_BYTES: usize = 1 << 20;

/// Reads the lines of a stream a chunk at a time, calling `f` as [`read_all`] does
/// (the same lines, numbers and [`Line`]s): memory holds one chunk and the line
/// being read, however long the input (an over-long line is counted, not kept).
/// For line formats only (not TensorBoard or trainer_state.json).
pub fn read_lines(mut input: impl std::io::Read, reader: &mut LineReader, mut f: impl FnMut(usize, Line)) -> std::io::Result<()> {
    // The bytes held are `buf[..len]`; the rest of `buf` is room to read into,
    // zeroed once when the buffer grows, not again for every chunk.
    let mut buf: Vec<u8> = vec![0; 2 * CHUNK_BYTES];
    let mut len = 0;
    let mut line_no = 0;
    // Bytes of a line already past MAX_LINE_BYTES, dropped from `buf`.
    let mut overlong: Option<usize> = None;
    loop {
        let start = len;
        if buf.len() < start + CHUNK_BYTES {
            buf.resize(start + CHUNK_BYTES, 0);
        }
        let n = loop {
            match input.read(&mut buf[start..start + CHUNK_BYTES]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        len = start + n;
        if n == 0 {
            break;
        }
        reader.learn_head(&buf);
        let mut from = 0;
        while let Some(i) = memchr::memchr(b'\n', &buf[from..len]) {
            let end = from + i;
            line_no += 1;
            match overlong.take() {
                Some(dropped) => f(line_no, too_long(dropped + end - from)),
                None => reader.segments(&buf[from..end], |line| f(line_no, line)),
            }
            from = end + 1;
        }
        buf.copy_within(from..len, 0);
        len -= from;
        if len > MAX_LINE_BYTES {
            *overlong.get_or_insert(0) += len;
            len = 0;
        }
    }
    let buf = &buf[..len];
    // The last line, or the empty piece after a final line break (as `split` gives it).
    line_no += 1;
    match overlong {
        Some(dropped) => f(line_no, too_long(dropped + buf.len())),
        None => reader.segments(buf, |line| f(line_no, line)),
    }
    Ok(())
}

/// The step of a progress field, `'global_step/max_steps': '70/100'` (ms-swift)
/// or `"step": "70/100"`: a field named for a step counter (its name, or the
/// part before a `/`) whose text is the step done over the steps in all.
pub fn progress_step(key: &str, text: &str) -> Option<u64> {
    const COUNTERS: &[&str] = &["step", "steps", "global_step", "global_steps", "iter", "iters", "iteration", "iterations", "train_step"];
    let counter = key.split('/').next().unwrap_or(key);
    if !COUNTERS.iter().any(|c| c.eq_ignore_ascii_case(counter)) {
        return None;
    }
    let (done, all) = text.trim().split_once('/')?;
    let digits = |t: &str| !t.is_empty() && t.len() <= 18 && t.bytes().all(|b| b.is_ascii_digit());
    let (done, all) = (done.trim(), all.trim());
    if !digits(done) || !digits(all) {
        return None;
    }
    let done: u64 = done.parse().ok()?;
    (done <= all.parse().ok()?).then_some(done)
}

/// A number written as a string (`"1.2"`, `"nan"`, `"-inf"`), as some loggers do.
/// A value as a step number: a whole number from 0 up to below 2^63 (not NaN or infinite).
#[inline]
pub fn whole_step(v: f64) -> Option<u64> {
    (v >= 0.0 && v.fract() == 0.0 && v < 2f64.powi(63)).then_some(v as u64)
}

pub fn number_in_text(s: &str) -> Option<f64> {
    let t = s.trim();
    match t.to_ascii_lowercase().as_str() {
        // (YAML's spellings too: RLlib's `pretty_print` writes `kl: .nan`.)
        "nan" | ".nan" => Some(f64::NAN),
        "inf" | "infinity" | "+inf" | "+infinity" | ".inf" | "+.inf" => Some(f64::INFINITY),
        "-inf" | "-infinity" | "-.inf" => Some(f64::NEG_INFINITY),
        _ if t.is_empty() || t.len() > 64 => None,
        _ => t.parse::<f64>().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_of_a_progress_bar_with_metrics_is_a_record() {
        let log = "\r  1%|          | 1/100 [00:01<01:39, loss=2.5]\r  2%|          | 2/100 [00:02<01:38, loss=2.4]\r  3%|          | 3/100 [00:03<01:37]\r\n";
        let mut reader = LineReader::new(Format::Text(Preset::Generic), None);
        let mut got = Vec::new();
        read_all(log.as_bytes(), &mut reader, |no, line| got.push((no, line))).unwrap();
        let steps: Vec<_> = got.iter().filter_map(|(no, l)| if let Line::Metrics(r) = l { Some((*no, r.step)) } else { None }).collect();
        assert_eq!(steps, [(1, Some(1)), (1, Some(2))], "{got:?}");
        // The last state, without metrics, is the line's text; the states before it are gone.
        assert_eq!(got.iter().filter(|(_, l)| matches!(l, Line::Text)).count(), 1, "{got:?}");
        // Streamed in chunks: the same.
        let mut reader = LineReader::new(Format::Text(Preset::Generic), None);
        let mut streamed = Vec::new();
        read_lines(log.as_bytes(), &mut reader, |no, line| streamed.push((no, line))).unwrap();
        assert_eq!(streamed, got);
        // Keras draws each state over the one before with backspaces.
        let first = " 50/100 [==============>...............] - ETA: 1s - loss: 2.1000";
        let log = format!("Epoch 1/2\n{first}{}100/100 [==============================] - 2s 20ms/step - loss: 1.9000 - val_loss: 2.2000\n", "\x08".repeat(first.len()));
        let mut reader = LineReader::new(Format::Text(Preset::Generic), None);
        let mut got = Vec::new();
        read_all(log.as_bytes(), &mut reader, |_, line| got.push(line)).unwrap();
        let records: Vec<_> = got.iter().filter_map(|l| if let Line::Metrics(r) = l { Some((r.step, r.fields.len())) } else { None }).collect();
        assert_eq!(records, [(Some(50), 1), (Some(100), 2)], "{got:?}");
    }

    #[test]
    fn formats_are_told_from_names_and_first_lines() {
        let d = |name: &str, head: &str| detect(Path::new(name), head).name();
        assert_eq!(d("m.jsonl", "{\"step\": 1, \"loss\": 2}\n"), "jsonl");
        // The Trainer's dict printed after its progress bar's states, on one line.
        assert_eq!(d("train.log", "***** Running training *****\n\r 5%|#   | 5/100 [00:10<03:20]\r        \r{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.05}\n"), "hf-log");
        assert_eq!(d("x/trainer_state.json", "{\n  \"best_metric\": null,\n"), "trainer-state");
        assert_eq!(d("export.csv", "Step,loss\n1,2\n"), "csv");
        assert_eq!(d("log.txt", "Step,run - loss\n1,2\n"), "csv");
        assert_eq!(d("log.txt", "step\tloss\n1\t2\n"), "tsv");
        assert_eq!(d("train.log", "building model\n iteration        1/     100 | lm loss: 1.0E+01 |\n"), "megatron");
        assert_eq!(d("train.log", "step 0: train loss 10.9, val loss 10.9\niter 0: loss 10.9, time 100.0ms, mfu -100.00%\n"), "nanogpt");
        assert_eq!(d("out.txt", "Loading\n{'loss': 2.1, 'grad_norm': 0.4, 'learning_rate': 5e-05, 'epoch': 0.1}\n"), "hf-log");
        assert_eq!(d("train.log", "[rank0]:[titan] 2025-01-10 12:00:01,123 - root - INFO - step:  1  loss:  7.1234  memory: 31.21GiB(39.49%)  tps: 7,334\n"), "text");
        assert_eq!(d("train.log", "Iter 1: Val loss 2.086, Val took 17.177s\nIter 25: Train loss 1.593, Learning Rate 7.000e-05, It/sec 0.999\n"), "text");
        assert_eq!(d("fit.log", "Epoch 0:  12%|█▏  | 120/1000 [00:10<01:20, 11.02it/s, v_num=0, train_loss=2.310]\n"), "text");
        assert_eq!(d("metrics.txt", "step,loss\n1,2.3\n"), "csv");
        // Records over several lines: Composer's header and indented lines, a table of rows.
        assert_eq!(d("train.log", "[batch=1/100]:\n\t Train time/batch: 0\n\t Train loss/train/total: 7.1\n"), "text");
        assert_eq!(d("ppo.log", "Using cpu device\n------------------\n| train/    |     |\n|    loss   | 1.2 |\n|    total_timesteps | 2048 |\n------------------\n"), "text");
        assert_eq!(d("noise", "hello\n"), "text");
        assert_eq!(d("metrics", "starting\n{\"step\": 1, \"loss\": 2}\n"), "jsonl");
        assert_eq!(d("train.log", "{\"step\": 1, \"loss\": 2}\neval step 1 val_loss 2.5\n{\"step\": 2, \"loss\": 1.9}\n"), "jsonl", "JSON records among text lines");
        // A config dict printed above a text log's lines: the lines make the format.
        assert_eq!(d("train.log", "{'name': 'tiny', 'block_size': 2048}\nstep 1 loss: 2.1\nstep 2 loss: 2.0\nstep 3 loss: 1.9\n"), "text");
        // Lines indented with tabs, no metric rlmon knows: a text log, not JSON.
        assert_eq!(d("train.log", "\tEpoch: 0001 cost= 29.9\n\ttime this epoch= 1.7\n"), "text");
    }

    #[test]
    fn when_the_detected_format_reads_nothing_the_first_other_that_reads_is_used() {
        // TensorFlow-Examples' GAN: names rlmon does not know.
        let log = "Extracting /tmp/data/train-images-idx3-ubyte.gz\nStep 1: Generator Loss: 0.774581, Discriminator Loss: 1.300602\nStep 1000: Generator Loss: 4.062009, Discriminator Loss: 0.055117\n";
        let detected = detect(Path::new("train.log"), log);
        let (format, tried) = settle(|| Ok(log.as_bytes()), detected, None).unwrap();
        assert_eq!((format.name(), tried[0]), ("pairs", "text"), "{tried:?}");
        assert!(tried.contains(&"jsonl") && !tried.contains(&"pairs"), "{tried:?}");
        // Every pair with a written `:` or `=` is a metric, the step the log's.
        let mut n = normalize::Normalizer::default();
        let mut reader = LineReader::new(format, None);
        read_all(log.as_bytes(), &mut reader, |_, line| {
            if let Line::Metrics(rec) = line {
                n.push(rec);
            }
        })
        .unwrap();
        n.finish();
        assert_eq!(n.report.points, 2);
        let read: Vec<(&str, &str)> = n.report.read.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(read, [("discriminator_loss", "discriminator_loss"), ("generator_loss", "generator_loss")]);
        // The detected format when it reads; when none does, it and the others tried.
        let jsonl = "{\"step\": 1, \"loss\": 2}\n";
        assert_eq!(settle(|| Ok(jsonl.as_bytes()), Format::Jsonl, None).unwrap().1, Vec::<&str>::new());
        let (format, tried) = settle(|| Ok(&b"nothing here\nat all\n"[..]), Format::Text(Preset::Generic), None).unwrap();
        assert_eq!((format.name(), tried.len()), ("text", fallbacks(&format).len()));
        // Bare `word 12` pairs are no metrics there: a Prometheus exposition reads nothing.
        let prometheus = "# TYPE node_load1 gauge\nnode_load1 0.21\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\",modelName=\"NVIDIA H100 80GB HBM3\"} 97\n";
        assert!(!reads_metrics(prometheus.as_bytes(), Format::Pairs, None).unwrap());
    }

    #[test]
    fn a_launchers_rank_prefix_names_the_rank_and_a_bom_is_no_text() {
        assert_eq!(launcher_rank("[rank1]:[titan] step: 1"), Some((1, "[titan] step: 1")));
        assert_eq!(launcher_rank("[default0]: {'loss': 2}"), Some((0, " {'loss': 2}")));
        assert_eq!(launcher_rank("[1,3]<stdout>:step 7 loss=2.5"), Some((3, "step 7 loss=2.5")));
        assert_eq!(launcher_rank("[1,0]<stderr>:warning"), Some((0, "warning")));
        assert_eq!(launcher_rank("[1, 2] step 3"), None);
        assert_eq!(task_label(" 3: step 7 loss 2.5"), Some((3, "step 7 loss 2.5")));
        assert_eq!(task_label("12:30:01 step 7"), None);
        assert_eq!(task_label("0 : compute_capability = 750"), None);
        for line in ["[Rank 0] step=1", "[rank]: x", "[rankx]: y", "[2024-05-01] rank0"] {
            assert_eq!(launcher_rank(line), None, "{line}");
        }
        let log = "\u{feff}[rank0]: {'loss': 2.5, 'epoch': 0.1}\r\n[rank1]: {'loss': 2.6, 'epoch': 0.1}\r\n[rank0]: {'loss': 2.4, 'epoch': 0.2}\r\n";
        assert_eq!(detect(Path::new("train.log"), log).name(), "hf-log");
        let mut reader = LineReader::new(Format::HfLog, None);
        let mut got = Vec::new();
        read_all(log.as_bytes(), &mut reader, |_, line| {
            if let Line::Metrics(r) = line {
                got.push((r.rank, r.fields[0].1));
            }
        })
        .unwrap();
        // The first rank met is the run; another is a run of its own.
        assert_eq!(got, [(None, 2.5), (Some(1), 2.6), (None, 2.4)]);
        // Every rank's warnings first: the run is the first rank with metrics.
        let log = "[rank3]: UserWarning: deprecated\n[rank0]: {'loss': 2.5, 'epoch': 0.1}\n[rank3]: {'loss': 2.6, 'epoch': 0.1}\n[rank0]: {'loss': 2.4, 'epoch': 0.2}\n";
        let mut got = Vec::new();
        read_all(log.as_bytes(), &mut LineReader::new(Format::HfLog, None), |_, line| {
            if let Line::Metrics(r) = line {
                got.push((r.rank, r.fields[0].1));
            }
        })
        .unwrap();
        assert_eq!(got, [(None, 2.5), (Some(3), 2.6), (None, 2.4)]);
        // A prefix repeated along a long line is read once, not once per copy.
        assert!(matches!(LineReader::new(Format::Text(Preset::Generic), None).line("[rank0]:".repeat(100_000).as_bytes()), Line::Text));
        // Strict formats are read as ever.
        assert!(matches!(LineReader::new(Format::Jsonl, None).line("\u{feff}{\"step\": 1, \"loss\": 2}".as_bytes()), Line::Metrics(_)));
    }

    #[test]
    fn slurm_task_labels_are_ranks_only_where_they_go_back_or_hold() {
        // Two tasks interleaved, and one task alone: ranks.
        assert!(rank_labels("0: start\n1: start\n0: step 1 loss 2\n1: step 1 loss 2\n"));
        assert!(rank_labels("0: step 1 loss 2\n0: step 2 loss 1.9\n0: step 3 loss 1.8\n"));
        // A step printed first only goes up (two lines a step at most holds it).
        assert!(!rank_labels("100: loss 2.3\n200: loss 2.2\n300: loss 2.1\n"));
        assert!(!rank_labels("100: loss 2.3\n100: val_loss 2.4\n200: loss 2.2\n200: val_loss 2.3\n"));
        // Labelled lines a few among many (Darknet's iterations between its layers' lines).
        assert!(!rank_labels("Region 82 Avg IOU: 0.2\nRegion 94 Avg IOU: 0.3\nRegion 106 Avg IOU: 0.1\n1: 697.4, 697.4 avg, 0.0 rate, 3.4 seconds, 64 images\nRegion 82 Avg IOU: 0.2\n"));
        // Read so: each task a run of its own, the first with metrics the run.
        let log = "0: step 1 loss 2.0\n1: step 1 loss 2.1\n0: step 2 loss 1.9\n1: step 2 loss 2.0\n";
        let mut got = Vec::new();
        read_all(log.as_bytes(), &mut LineReader::new(Format::Text(Preset::Generic), None), |_, line| {
            if let Line::Metrics(rec) = line {
                got.push((rec.rank, rec.step));
            }
        })
        .unwrap();
        assert_eq!(got, vec![(None, Some(1)), (Some(1), Some(1)), (None, Some(2)), (Some(1), Some(2))]);
    }

    #[test]
    fn numbers_in_text() {
        assert_eq!(number_in_text(" 1.5e-3 "), Some(1.5e-3));
        assert!(number_in_text("NaN").unwrap().is_nan());
        assert_eq!(number_in_text("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(number_in_text("1.2.3"), None);
        assert_eq!(number_in_text(""), None);
    }

    #[test]
    fn reading_in_chunks_gives_the_lines_of_reading_whole() {
        let mut text = b"{\"step\": 1, \"loss\": 2}\r\n\nnot json\n".to_vec();
        text.extend(vec![b'x'; MAX_LINE_BYTES + CHUNK_BYTES + 5]);
        text.extend(b"\n{\"step\": 2, \"loss\": 1.5}\n");
        for text in [&text[..], b"", b"{\"step\": 3, \"loss\": 1}"] {
            let (mut whole, mut chunked) = (Vec::new(), Vec::new());
            read_all(text, &mut LineReader::new(Format::Jsonl, None), |i, l| whole.push((i, l))).unwrap();
            read_lines(text, &mut LineReader::new(Format::Jsonl, None), |i, l| chunked.push((i, l))).unwrap();
            assert_eq!(whole, chunked);
        }
    }

    #[test]
    fn long_and_binary_lines_are_skipped_with_a_reason() {
        let mut r = LineReader::new(Format::Jsonl, None);
        assert!(matches!(r.line(&vec![b'{'; MAX_LINE_BYTES + 1]), Line::Skip(SkipKind::TooLong, _)));
        assert!(matches!(r.line(&[0xff, 0xfe, b'{']), Line::Skip(SkipKind::NotText, _)));
        assert!(matches!(r.line(b"plain words"), Line::Skip(SkipKind::NotMetrics, _)), "a JSONL file holds only metric lines");
        assert_eq!(r.line(b"  \r"), Line::Blank);
    }
}
