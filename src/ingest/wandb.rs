//! Weights & Biases run files (`wandb/run-*/run-*.wandb`, online and offline runs
//! alike): a file header (`:W&B`, magic 0xBEE1, version 0), then the LevelDB log
//! format: 32 KiB blocks of records, each a 7-byte header (checksum u32, length
//! u16, type u8, little-endian) and its data; a record longer than what is left of
//! a block is cut into FIRST, MIDDLE... and LAST pieces, and a block's last bytes,
//! too few for a header, are zero padding. The checksum is the CRC-32 (zlib's, as
//! W&B's writers compute it) of the type byte and the data. Each whole record is a
//! protobuf `Record` of wandb's `wandb_internal.proto` (MIT licensed); only the
//! fields rlmon reads are declared here, by their numbers in that file.
//!
//! Pure bytes in, items out: [`Decoder`] frames records from bytes as they are
//! read (a record cut short at the end is waited for; a damaged block is skipped
//! to the next, counted), [`parse_record`] reads one record, and [`RunReader`]
//! keeps what a run's records say across records (its name, config, summary,
//! last step, exit). Finding and following the files is the caller's.
use std::collections::BTreeMap;

use prost::Message;

use super::{Line, Record, SkipKind};
use crate::health::Severity;
use crate::metrics::catalog;

/// LevelDB log blocks.
pub const BLOCK_LEN: u64 = 32 * 1024;
/// A record's header: checksum, length, type.
const HEADER_LEN: usize = 7;
/// The file's own header: `:W&B`, magic, version.
const FILE_HEADER_LEN: usize = 7;
const IDENT: &[u8; 4] = b":W&B";
const MAGIC: u16 = 0xBEE1;
const VERSION: u8 = 0;
const FULL: u8 = 1;
const FIRST: u8 = 2;
const MIDDLE: u8 = 3;
const LAST: u8 = 4;
/// A record assembled from pieces longer than this is not one rlmon reads (a
/// history row of a wide run is a few KiB): dropped, counted.
const MAX_RECORD: usize = 64 << 20;

/// Whether a file name is a W&B run file's.
pub fn is_run_file(name: &str) -> bool {
    name.ends_with(".wandb")
}

/// The header's checksum: CRC-32 of the type byte, then the data.
fn checksum(kind: u8, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&[kind]);
    h.update(data);
    h.finalize()
}

/// What the framing yields.
#[derive(Debug, Clone, PartialEq)]
pub enum Framed {
    /// One whole record's data.
    Record(Vec<u8>),
    /// A damaged block (a checksum that fails, a length past the block's end, an
    /// unknown type, pieces out of order): the rest of its block is skipped.
    Damaged(String),
}

/// Frames the records of a run file from its bytes, fed in order as they are read
/// (all at once, or a little at a time while the run writes the file).
#[derive(Debug, Default)]
pub struct Decoder {
    /// Bytes read and not yet framed.
    buf: Vec<u8>,
    /// The file offset of `buf[0]` (blocks are counted from the file's start).
    at: u64,
    /// Bytes still to skip: the rest of a damaged block not read yet.
    skip: u64,
    header: bool,
    /// The pieces of a record being put together.
    pieces: Option<Vec<u8>>,
    /// After a damaged block: the pieces that end a record begun in it are
    /// dropped without another report, until a record begins.
    resync: bool,
}

impl Decoder {
    /// Frames what `bytes` completes. An error when the file is not a W&B run file
    /// (its header is not W&B's): nothing in it can be read.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Framed>, String> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut used = 0usize;
        let result = self.frame(&mut used, &mut out);
        self.buf.drain(..used);
        self.at += used as u64;
        result.map(|()| out)
    }

    fn frame(&mut self, used: &mut usize, out: &mut Vec<Framed>) -> Result<(), String> {
        if !self.header {
            if self.buf.len() < FILE_HEADER_LEN {
                return Ok(());
            }
            let h = &self.buf[..FILE_HEADER_LEN];
            if &h[..4] != IDENT || u16::from_le_bytes([h[4], h[5]]) != MAGIC {
                return Err("not a W&B run file (no `:W&B` header)".into());
            }
            if h[6] != VERSION {
                return Err(format!("a W&B run file of version {} (rlmon reads version {VERSION})", h[6]));
            }
            self.header = true;
            *used = FILE_HEADER_LEN;
        }
        loop {
            let rest = &self.buf[*used..];
            if self.skip > 0 {
                let n = (self.skip as usize).min(rest.len());
                self.skip -= n as u64;
                *used += n;
                if self.skip > 0 {
                    return Ok(());
                }
                continue;
            }
            let offset = (self.at + *used as u64) % BLOCK_LEN;
            let left = (BLOCK_LEN - offset) as usize;
            if left < HEADER_LEN {
                // The block's trailer: padding.
                self.skip = left as u64;
                continue;
            }
            if rest.len() < HEADER_LEN {
                return Ok(());
            }
            let crc = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]);
            let len = usize::from(u16::from_le_bytes([rest[4], rest[5]]));
            let kind = rest[6];
            if !(FULL..=LAST).contains(&kind) || HEADER_LEN + len > left {
                let why = if (FULL..=LAST).contains(&kind) { format!("a record of {len} bytes runs past its block") } else { format!("a record of unknown type {kind}") };
                self.damaged(why, left, out);
                continue;
            }
            if rest.len() < HEADER_LEN + len {
                // Cut short: the rest is still being written.
                return Ok(());
            }
            let data = &rest[HEADER_LEN..HEADER_LEN + len];
            if checksum(kind, data) != crc {
                self.damaged("a record fails its checksum".into(), left, out);
                continue;
            }
            let data = data.to_vec();
            *used += HEADER_LEN + len;
            if self.resync && matches!(kind, MIDDLE | LAST) {
                continue;
            }
            self.resync = false;
            match kind {
                FULL => {
                    if self.pieces.take().is_some() {
                        out.push(Framed::Damaged("a record's pieces end without their last".into()));
                    }
                    out.push(Framed::Record(data));
                }
                FIRST => {
                    if self.pieces.replace(data).is_some() {
                        out.push(Framed::Damaged("a record's pieces end without their last".into()));
                    }
                }
                MIDDLE | LAST => match self.pieces.as_mut() {
                    None => out.push(Framed::Damaged("a record's piece without its first".into())),
                    Some(p) if p.len() + data.len() > MAX_RECORD => {
                        self.pieces = None;
                        out.push(Framed::Damaged(format!("a record over {} MiB", MAX_RECORD >> 20)));
                    }
                    Some(p) => {
                        p.extend_from_slice(&data);
                        if kind == LAST {
                            out.extend(self.pieces.take().map(Framed::Record));
                        }
                    }
                },
                // Other types were skipped above.
                _ => {}
            }
        }
    }

    /// A damaged record: the rest of its block (`left` bytes from it) is skipped,
    /// with any record being put together.
    fn damaged(&mut self, why: String, left: usize, out: &mut Vec<Framed>) {
        self.pieces = None;
        self.resync = true;
        self.skip = left as u64;
        out.push(Framed::Damaged(why));
    }

    /// Whether bytes are waiting for the rest of their record (the file ends in
    /// the middle of one): at the file's end, a record cut short.
    pub fn cut_short(&self) -> bool {
        self.pieces.is_some() || (self.skip == 0 && !self.buf.is_empty()) || (!self.header && !self.buf.is_empty())
    }

    /// Bytes framed or skipped so far (the file offset reached).
    pub fn offset(&self) -> u64 {
        self.at
    }
}

// ------------------------------------------------------------ the records read
// Field numbers from wandb's wandb_internal.proto.

#[derive(Clone, PartialEq, Message)]
struct WbRecord {
    #[prost(message, optional, tag = "2")]
    history: Option<HistoryRecord>,
    #[prost(message, optional, tag = "3")]
    summary: Option<ItemsRecord>,
    #[prost(message, optional, tag = "5")]
    config: Option<ItemsRecord>,
    #[prost(message, optional, tag = "7")]
    stats: Option<StatsRecord>,
    #[prost(message, optional, tag = "10")]
    alert: Option<AlertRecord>,
    #[prost(message, optional, tag = "17")]
    run: Option<RunRecord>,
    #[prost(message, optional, tag = "18")]
    exit: Option<RunExitRecord>,
}

#[derive(Clone, PartialEq, Message)]
struct HistoryRecord {
    #[prost(message, repeated, tag = "1")]
    item: Vec<Item>,
    #[prost(message, optional, tag = "2")]
    step: Option<HistoryStep>,
}

#[derive(Clone, PartialEq, Message)]
struct HistoryStep {
    #[prost(int64, tag = "1")]
    num: i64,
}

/// HistoryItem, SummaryItem, ConfigItem and StatsItem share these fields.
#[derive(Clone, PartialEq, Message)]
struct Item {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(string, repeated, tag = "2")]
    nested_key: Vec<String>,
    #[prost(string, tag = "16")]
    value_json: String,
}

/// SummaryRecord and ConfigRecord: items updated (`remove` is not read).
#[derive(Clone, PartialEq, Message)]
struct ItemsRecord {
    #[prost(message, repeated, tag = "1")]
    update: Vec<Item>,
}

#[derive(Clone, PartialEq, Message)]
struct Timestamp {
    #[prost(int64, tag = "1")]
    seconds: i64,
    #[prost(int32, tag = "2")]
    nanos: i32,
}

#[derive(Clone, PartialEq, Message)]
struct StatsRecord {
    #[prost(message, optional, tag = "2")]
    timestamp: Option<Timestamp>,
    #[prost(message, repeated, tag = "3")]
    item: Vec<Item>,
}

#[derive(Clone, PartialEq, Message)]
struct AlertRecord {
    #[prost(string, tag = "1")]
    title: String,
    #[prost(string, tag = "2")]
    text: String,
    #[prost(string, tag = "3")]
    level: String,
}

#[derive(Clone, PartialEq, Message)]
struct RunRecord {
    #[prost(string, tag = "1")]
    run_id: String,
    #[prost(string, tag = "2")]
    entity: String,
    #[prost(string, tag = "3")]
    project: String,
    #[prost(message, optional, tag = "4")]
    config: Option<ItemsRecord>,
    #[prost(string, tag = "8")]
    display_name: String,
    #[prost(string, tag = "13")]
    host: String,
}

#[derive(Clone, PartialEq, Message)]
struct RunExitRecord {
    #[prost(int32, tag = "1")]
    exit_code: i32,
}

/// The run a file is about, from its run record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunInfo {
    pub id: String,
    /// The run's display name (`wandb.init(name=...)`); W&B makes one up when none is given.
    pub name: String,
    pub project: String,
    pub entity: String,
    /// The machine the run ran on.
    pub host: String,
}

/// An alert the script raised (`wandb.alert`).
#[derive(Debug, Clone, PartialEq)]
pub struct RaisedAlert {
    pub title: String,
    pub text: String,
    pub severity: Severity,
}

/// What one record is, as rlmon reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Run(RunInfo, Vec<(String, String)>),
    /// Config items set: `(key, JSON value)`.
    Config(Vec<(String, String)>),
    /// A history row: its metrics, step and time.
    History(Record),
    /// Summary items set: `(key, JSON value)`.
    Summary(Vec<(String, String)>),
    /// System metrics of the run's machine, as rlmon's telemetry names them
    /// (`gpu0/util_pct`, `host/cpu_pct`), with the sample's time.
    Stats { time: Option<f64>, values: Vec<(String, f64)> },
    Alert(RaisedAlert),
    /// The run's end, with the script's exit code.
    Exit(i32),
    /// Another kind of record (output lines, files, telemetry of W&B itself).
    Other,
    Malformed(String),
}

/// An item's key: `key`, or the nested keys joined with `.` as W&B shows them
/// (`wandb.log({"eval": {"acc": 1}})` is `eval.acc`).
fn item_key(item: &Item) -> String {
    if !item.key.is_empty() {
        return item.key.clone();
    }
    item.nested_key.join(".")
}

/// A JSON value as a number: numbers, and the `NaN`, `Infinity` and `-Infinity`
/// W&B writes for non-finite values (JSON has none).
pub fn json_number(value: &str) -> Option<f64> {
    if let Some(v) = super::number_in_text(value) {
        return Some(v);
    }
    match serde_json::from_str::<serde_json::Value>(value).ok()? {
        serde_json::Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// Names of a trainer's own step counter, which rlmon steps by when a row has one
/// (the Hugging Face Trainer logs `train/global_step` with every row); else W&B's `_step`.
const TRAINER_STEP_KEYS: &[&str] = &["train/global_step", "trainer/global_step", "global_step"];

/// One record's data.
pub fn parse_record(data: &[u8]) -> Parsed {
    let Ok(rec) = WbRecord::decode(data) else { return Parsed::Malformed("a record that is not a W&B Record".into()) };
    if let Some(h) = rec.history {
        return Parsed::History(history(h));
    }
    if let Some(s) = rec.stats {
        let time = s.timestamp.map(|t| t.seconds as f64 + f64::from(t.nanos) * 1e-9).filter(|t| t.is_finite() && *t > 0.0);
        let items: Vec<(String, f64)> = s.item.iter().filter_map(|i| Some((item_key(i), json_number(&i.value_json)?))).collect();
        return Parsed::Stats { time, values: system_metrics(&items) };
    }
    if let Some(s) = rec.summary {
        return Parsed::Summary(s.update.iter().map(|i| (item_key(i), i.value_json.clone())).collect());
    }
    if let Some(c) = rec.config {
        return Parsed::Config(c.update.iter().map(|i| (item_key(i), i.value_json.clone())).collect());
    }
    if let Some(r) = rec.run {
        let config = r.config.map(|c| c.update.iter().map(|i| (item_key(i), i.value_json.clone())).collect()).unwrap_or_default();
        let info = RunInfo { id: r.run_id, name: r.display_name, project: r.project, entity: r.entity, host: r.host };
        return Parsed::Run(info, config);
    }
    if let Some(a) = rec.alert {
        let severity = match a.level.to_ascii_uppercase().as_str() {
            "INFO" => Severity::Info,
            "ERROR" => Severity::Critical,
            _ => Severity::Warn,
        };
        return Parsed::Alert(RaisedAlert { title: a.title, text: a.text, severity });
    }
    if let Some(e) = rec.exit {
        return Parsed::Exit(e.exit_code);
    }
    Parsed::Other
}

/// A history row as a record: `_step` (or a trainer's step) its step,
/// `_timestamp` its time, W&B's other `_` keys left out, numbers its fields,
/// everything else (media, tables, strings) ignored by name.
fn history(h: HistoryRecord) -> Record {
    let mut rec = Record::default();
    let mut step = None;
    let mut trainer_step = None;
    for item in &h.item {
        let key = item_key(item);
        let value = json_number(&item.value_json);
        match key.as_str() {
            "_step" => step = value.filter(|v| *v >= 0.0 && v.is_finite()).map(|v| v as u64),
            "_timestamp" => rec.time = value.filter(|t| t.is_finite() && *t > 0.0),
            k if k.starts_with('_') => {}
            k if TRAINER_STEP_KEYS.contains(&k) => trainer_step = value.filter(|v| *v >= 0.0 && v.is_finite()).map(|v| v as u64),
            _ => match value {
                Some(v) => rec.fields.push((key.into(), v)),
                None => rec.ignored.push(key),
            },
        }
    }
    rec.step = trainer_step.or(step).or_else(|| h.step.and_then(|s| u64::try_from(s.num).ok()));
    rec
}

/// W&B's system metrics (`gpu.0.gpu`, `system.gpu.0.memoryAllocatedBytes`,
/// `cpu.3.cpu_percent`, `memory_percent`...) as rlmon's telemetry names; the others
/// are left out.
pub fn system_metrics(items: &[(String, f64)]) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut cores = (0.0, 0usize);
    let (mut mem_pct, mut available_mb) = (None, None);
    // Per GPU: memory allocated as a percentage, and the total W&B reports.
    let mut gpu_mem: BTreeMap<usize, (Option<f64>, Option<f64>, Option<f64>)> = BTreeMap::new();
    for (key, v) in items {
        let key = key.strip_prefix("system.").unwrap_or(key);
        if let Some((index, measure)) = key.strip_prefix("gpu.").and_then(|r| r.split_once('.')) {
            let Ok(i) = index.parse::<usize>() else { continue };
            let gpu = catalog::gpu(i);
            let mem = gpu_mem.entry(i).or_default();
            match measure {
                "gpu" => out.push((gpu.util_pct(), *v)),
                "memoryAllocatedBytes" => {
                    mem.0 = Some(*v);
                    out.push((gpu.mem_used_bytes(), *v));
                }
                "memoryAllocated" => mem.1 = Some(*v),
                "memoryTotal" => mem.2 = Some(*v),
                "powerWatts" => out.push((gpu.power_w(), *v)),
                "temp" => out.push((gpu.temp_c(), *v)),
                "smClock" => out.push((gpu.sm_clock_mhz(), *v)),
                _ => {}
            }
        } else if let Some(core) = key.strip_prefix("cpu.").and_then(|r| r.strip_suffix(".cpu_percent")) {
            if core.parse::<usize>().is_ok() {
                cores.0 += v;
                cores.1 += 1;
            }
        } else if key == "memory_percent" {
            mem_pct = Some(*v);
        } else if key == "proc.memory.availableMB" {
            available_mb = Some(*v);
        }
    }
    for (i, (used, pct, total)) in gpu_mem {
        // The total in bytes, else from the share allocated.
        let total = total.filter(|t| *t >= (1u64 << 20) as f64).or_else(|| Some(used? * 100.0 / pct.filter(|p| *p > 0.0)?));
        if let Some(t) = total {
            out.push((catalog::gpu(i).mem_total_bytes(), t));
        }
    }
    if cores.1 > 0 {
        out.push((catalog::host::CPU_PCT.into(), cores.0 / cores.1 as f64));
    }
    if let (Some(pct), Some(avail)) = (mem_pct, available_mb) {
        if (0.0..100.0).contains(&pct) {
            let total = avail * (1u64 << 20) as f64 / (1.0 - pct / 100.0);
            out.push((catalog::host::MEM_USED_BYTES.into(), total * pct / 100.0));
            out.push((catalog::host::MEM_TOTAL_BYTES.into(), total));
        }
    }
    out
}

/// How a run ended, from its exit record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    pub code: i32,
}

impl Exit {
    pub fn failed(self) -> bool {
        self.code != 0
    }

    /// In a sentence: `finished` or `failed with exit code 1`.
    pub fn describe(self) -> String {
        if self.failed() {
            format!("failed with exit code {}", self.code)
        } else {
            "finished".into()
        }
    }
}

/// What a run's records, read so far, hand on.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// A history row (a metric line) or a record skipped, as other formats give them.
    Line(Line),
    /// System metrics of the run's machine.
    Telemetry { time: Option<f64>, values: Vec<(String, f64)> },
    /// An alert the script raised, after the step it came at.
    Alert { step: u64, alert: RaisedAlert },
    /// The run's exit record.
    Exit(Exit),
}

/// What a run file says about its run beyond its metrics, gathered as it is read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    pub info: Option<RunInfo>,
    /// The config, flattened (`model.d`), values as JSON.
    pub config: BTreeMap<String, String>,
    /// The summary's values, as JSON.
    pub summary: BTreeMap<String, String>,
    pub exit: Option<Exit>,
    pub alerts: u64,
    pub records: u64,
    /// Damaged blocks skipped, records that did not decode, a record cut short at the end.
    pub damaged: u64,
    pub malformed: u64,
    pub cut_short: bool,
    pub last_step: Option<u64>,
}

/// A config or summary item: nested objects flattened to `a.b` keys (the config
/// of `wandb.init(config={"model": {"d": 64}})` is one item `model` = `{"d":64}`).
fn flatten_into(key: &str, json: &str, out: &mut BTreeMap<String, String>) {
    fn walk(key: String, v: &serde_json::Value, out: &mut BTreeMap<String, String>, depth: usize) {
        match v {
            serde_json::Value::Object(map) if depth < 8 && !map.contains_key("_type") => {
                for (k, v) in map {
                    walk(format!("{key}.{k}"), v, out, depth + 1);
                }
            }
            v => {
                out.insert(key, v.to_string());
            }
        }
    }
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(v) => walk(key.to_owned(), &v, out, 0),
        Err(_) => {
            out.insert(key.to_owned(), json.to_owned());
        }
    }
}

/// A run file read from its start: frames, parses and gathers, handing on what
/// each piece of the file completes.
#[derive(Debug, Default)]
pub struct RunReader {
    decoder: Decoder,
    pub run: RunSummary,
}

impl RunReader {
    /// The next bytes of the file. An error when it is not a W&B run file.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Out>, String> {
        let framed = self.decoder.push(bytes)?;
        Ok(framed.into_iter().filter_map(|f| self.framed(f)).collect())
    }

    /// The file ends here (the run is over, or `rlmon check` read it whole): a
    /// record cut short stays unread, and is counted.
    pub fn finish(&mut self) -> Vec<Out> {
        if self.decoder.cut_short() && !self.run.cut_short {
            self.run.cut_short = true;
            return vec![Out::Line(Line::Skip(SkipKind::Malformed, format!("the file ends inside a record (at byte {}): the rest was never written", self.decoder.offset())))];
        }
        Vec::new()
    }

    /// Bytes framed so far.
    pub fn offset(&self) -> u64 {
        self.decoder.offset()
    }

    fn framed(&mut self, framed: Framed) -> Option<Out> {
        let data = match framed {
            Framed::Record(data) => data,
            Framed::Damaged(why) => {
                self.run.damaged += 1;
                return Some(Out::Line(Line::Skip(SkipKind::Malformed, format!("damaged block skipped: {why}"))));
            }
        };
        self.run.records += 1;
        match parse_record(&data) {
            Parsed::History(rec) => {
                if rec.step.is_some() {
                    self.run.last_step = rec.step;
                }
                let line = if rec.fields.is_empty() { Line::Skip(SkipKind::NoNumbers, format!("a history row without numbers ({})", rec.ignored.join(", "))) } else { Line::Metrics(rec) };
                Some(Out::Line(line))
            }
            Parsed::Stats { time, values } => (!values.is_empty()).then_some(Out::Telemetry { time, values }),
            Parsed::Run(info, config) => {
                for (k, v) in config {
                    if !k.starts_with('_') {
                        flatten_into(&k, &v, &mut self.run.config);
                    }
                }
                self.run.info = Some(info);
                None
            }
            Parsed::Config(items) => {
                for (k, v) in items {
                    if !k.starts_with('_') {
                        flatten_into(&k, &v, &mut self.run.config);
                    }
                }
                None
            }
            Parsed::Summary(items) => {
                for (k, v) in items {
                    if !k.starts_with('_') {
                        self.run.summary.insert(k, v);
                    }
                }
                None
            }
            Parsed::Alert(alert) => {
                self.run.alerts += 1;
                Some(Out::Alert { step: self.run.last_step.unwrap_or(0), alert })
            }
            Parsed::Exit(code) => {
                let exit = Exit { code };
                self.run.exit = Some(exit);
                Some(Out::Exit(exit))
            }
            Parsed::Other => None,
            Parsed::Malformed(why) => {
                self.run.malformed += 1;
                Some(Out::Line(Line::Skip(SkipKind::Malformed, why)))
            }
        }
    }
}

/// A whole file's bytes read at once: what it hands on, and what it says of its run.
pub fn read_all(bytes: &[u8]) -> Result<(Vec<Out>, RunSummary), String> {
    let mut reader = RunReader::default();
    let mut out = reader.push(bytes)?;
    out.extend(reader.finish());
    Ok((out, reader.run))
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Run files built by hand, as W&B's writer frames them.
    use super::*;

    /// The file header.
    pub fn header() -> Vec<u8> {
        let mut out = IDENT.to_vec();
        out.extend(MAGIC.to_le_bytes());
        out.push(VERSION);
        out
    }

    /// Appends `data` as one record, cut into pieces at block ends as the writer does.
    pub fn append(file: &mut Vec<u8>, data: &[u8]) {
        let mut rest = data;
        let mut first = true;
        loop {
            let left = (BLOCK_LEN - file.len() as u64 % BLOCK_LEN) as usize;
            if left < HEADER_LEN {
                file.extend(std::iter::repeat_n(0u8, left));
                continue;
            }
            let room = left - HEADER_LEN;
            let (piece, last) = if rest.len() <= room { (rest, true) } else { (&rest[..room], false) };
            let kind = match (first, last) {
                (true, true) => FULL,
                (true, false) => FIRST,
                (false, true) => LAST,
                (false, false) => MIDDLE,
            };
            file.extend(checksum(kind, piece).to_le_bytes());
            file.extend((piece.len() as u16).to_le_bytes());
            file.push(kind);
            file.extend(piece);
            rest = &rest[piece.len()..];
            first = false;
            if last {
                return;
            }
        }
    }

    fn item(key: &str, json: &str) -> Item {
        // The writer puts every key in `nested_key`, split at dicts.
        Item { key: String::new(), nested_key: key.split('.').map(str::to_owned).collect(), value_json: json.into() }
    }

    pub fn run(id: &str, name: &str, config: &[(&str, &str)]) -> Vec<u8> {
        let config = ItemsRecord { update: config.iter().map(|(k, v)| Item { key: (*k).into(), nested_key: vec![], value_json: (*v).into() }).collect() };
        let run = RunRecord { run_id: id.into(), entity: String::new(), project: "demo".into(), config: Some(config), display_name: name.into(), host: "node7".into() };
        WbRecord { run: Some(run), ..Default::default() }.encode_to_vec()
    }

    pub fn history(step: u64, values: &[(&str, &str)]) -> Vec<u8> {
        let mut items = vec![item("_step", &step.to_string()), item("_timestamp", "1.7e9"), item("_runtime", "0.5")];
        items.extend(values.iter().map(|(k, v)| item(k, v)));
        WbRecord { history: Some(HistoryRecord { item: items, step: Some(HistoryStep { num: step as i64 }) }), ..Default::default() }.encode_to_vec()
    }

    pub fn stats(values: &[(&str, &str)]) -> Vec<u8> {
        let items = values.iter().map(|(k, v)| Item { key: (*k).into(), nested_key: vec![], value_json: (*v).into() }).collect();
        WbRecord { stats: Some(StatsRecord { timestamp: Some(Timestamp { seconds: 1_700_000_000, nanos: 0 }), item: items }), ..Default::default() }.encode_to_vec()
    }

    pub fn alert(title: &str, level: &str) -> Vec<u8> {
        WbRecord { alert: Some(AlertRecord { title: title.into(), text: "look".into(), level: level.into() }), ..Default::default() }.encode_to_vec()
    }

    pub fn exit(code: i32) -> Vec<u8> {
        WbRecord { exit: Some(RunExitRecord { exit_code: code }), ..Default::default() }.encode_to_vec()
    }

    pub fn summary(key: &str, json: &str) -> Vec<u8> {
        WbRecord { summary: Some(ItemsRecord { update: vec![item(key, json)] }), ..Default::default() }.encode_to_vec()
    }

    /// A small run: its record, `steps` history rows (loss NaN at `nan_at`), a
    /// stats record, an alert after step 2, a summary and an exit.
    pub fn small_run(steps: u64, nan_at: Option<u64>, exit_code: i32) -> Vec<u8> {
        let mut file = header();
        append(&mut file, &run("abc123", "ppo-small", &[("lr", "0.001"), ("model", "{\"d\":64}"), ("_wandb", "{}")]));
        for s in 0..steps {
            let loss = if Some(s) == nan_at { "NaN".to_owned() } else { format!("{}", 2.0 / (s as f64 + 1.0)) };
            append(&mut file, &history(s, &[("train/loss", &loss), ("train/learning_rate", "0.001"), ("eval.acc", "0.5"), ("samples", "{\"_type\":\"table\"}")]));
            if s == 2 {
                append(&mut file, &alert("reward hacked", "WARN"));
                append(&mut file, &stats(&[("gpu.0.gpu", "87"), ("gpu.0.memoryAllocatedBytes", "1073741824"), ("gpu.0.memoryAllocated", "25"), ("cpu.0.cpu_percent", "50"), ("cpu.1.cpu_percent", "30")]));
            }
        }
        append(&mut file, &summary("best", "0.5"));
        append(&mut file, &exit(exit_code));
        file
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{append, header, history, small_run};
    use super::*;

    fn metrics(out: &[Out]) -> Vec<&Record> {
        out.iter().filter_map(|o| if let Out::Line(Line::Metrics(r)) = o { Some(r) } else { None }).collect()
    }

    #[test]
    fn a_run_file_reads_as_its_rows_config_alerts_and_exit() {
        let file = small_run(5, Some(3), 1);
        let (out, run) = read_all(&file).unwrap();
        let rows = metrics(&out);
        assert_eq!(rows.iter().map(|r| r.step).collect::<Vec<_>>(), [0, 1, 2, 3, 4].map(Some));
        assert_eq!(rows[0].fields, vec![("train/loss".into(), 2.0), ("train/learning_rate".into(), 0.001), ("eval.acc".into(), 0.5)]);
        assert_eq!(rows[0].ignored, ["samples"], "media and tables are named, not read");
        assert_eq!(rows[0].time, Some(1.7e9));
        assert!(rows[3].fields[0].1.is_nan(), "the NaN at its step");
        let info = run.info.as_ref().unwrap();
        assert_eq!((info.id.as_str(), info.name.as_str(), info.project.as_str(), info.host.as_str()), ("abc123", "ppo-small", "demo", "node7"));
        assert_eq!(run.config.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>(), [("lr", "0.001"), ("model.d", "64")]);
        assert_eq!(run.summary.get("best").map(String::as_str), Some("0.5"));
        assert_eq!(run.exit, Some(Exit { code: 1 }));
        assert!(run.exit.unwrap().failed() && run.exit.unwrap().describe().contains("exit code 1"));
        let alerts: Vec<_> = out.iter().filter_map(|o| if let Out::Alert { step, alert } = o { Some((*step, alert.title.as_str(), alert.severity)) } else { None }).collect();
        assert_eq!(alerts, [(2, "reward hacked", Severity::Warn)], "after the step it came at");
        let telemetry: Vec<_> = out.iter().filter_map(|o| if let Out::Telemetry { values, .. } = o { Some(values.clone()) } else { None }).collect();
        let t = &telemetry[0];
        let get = |n: &str| t.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!(get("gpu0/util_pct"), Some(87.0));
        assert_eq!(get("gpu0/mem_used_bytes"), Some(1073741824.0));
        assert_eq!(get("gpu0/mem_total_bytes"), Some(4.0 * 1073741824.0), "from the share allocated");
        assert_eq!(get("host/cpu_pct"), Some(40.0), "the cores' mean");
        assert_eq!((run.damaged, run.malformed, run.cut_short), (0, 0, false));
    }

    #[test]
    fn records_spanning_blocks_are_put_together() {
        let mut file = header();
        let wide: Vec<(String, String)> = (0..3000).map(|i| (format!("layer{i}/grad_norm"), format!("{i}.5"))).collect();
        let wide: Vec<(&str, &str)> = wide.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let row = history(7, &wide);
        assert!(row.len() > 2 * BLOCK_LEN as usize, "a row of three blocks and more: {}", row.len());
        append(&mut file, &history(6, &[("loss", "1")]));
        append(&mut file, &row);
        append(&mut file, &history(8, &[("loss", "0.5")]));
        let (out, run) = read_all(&file).unwrap();
        let rows = metrics(&out);
        assert_eq!(rows.iter().map(|r| r.step).collect::<Vec<_>>(), [Some(6), Some(7), Some(8)]);
        assert_eq!(rows[1].fields.len(), 3000);
        assert_eq!(run.damaged, 0);
        // Fed a few bytes at a time (a file read while it is written): the same.
        let mut reader = RunReader::default();
        let mut fed = Vec::new();
        for chunk in file.chunks(997) {
            fed.extend(reader.push(chunk).unwrap());
        }
        fed.extend(reader.finish());
        assert_eq!(fed, out);
    }

    #[test]
    fn a_record_cut_short_waits_and_is_counted_only_at_the_end() {
        let file = small_run(4, None, 0);
        let whole = read_all(&file).unwrap().0;
        let mut reader = RunReader::default();
        let cut = file.len() - 5;
        let first = reader.push(&file[..cut]).unwrap();
        assert!(!first.iter().any(|o| matches!(o, Out::Exit(_))), "the exit record is not whole yet");
        assert!(!first.iter().any(|o| matches!(o, Out::Line(Line::Skip(..)))), "nothing skipped while waiting");
        let rest = reader.push(&file[cut..]).unwrap();
        assert_eq!([first, rest].concat(), whole);
        // A file that stops for good inside a record: one skip, at the end.
        let (out, run) = read_all(&file[..cut]).unwrap();
        assert!(run.cut_short && run.exit.is_none());
        assert!(matches!(out.last(), Some(Out::Line(Line::Skip(SkipKind::Malformed, why))) if why.contains("ends inside a record")), "{:?}", out.last());
        assert_eq!(metrics(&out).len(), 4);
    }

    #[test]
    fn a_damaged_block_is_skipped_and_the_rest_read() {
        let mut file = header();
        let mut step = 0;
        // Rows enough for three blocks.
        while file.len() < 3 * BLOCK_LEN as usize {
            append(&mut file, &history(step, &[("loss", "1.5")]));
            step += 1;
        }
        let clean = metrics(&read_all(&file).unwrap().0).len() as u64;
        assert_eq!(clean, step);
        // A byte of the second block's data flipped.
        file[BLOCK_LEN as usize + 100] ^= 0x55;
        let (out, run) = read_all(&file).unwrap();
        assert_eq!(run.damaged, 1);
        let read = metrics(&out).len() as u64;
        assert!(read < clean && read > clean / 2, "only the damaged block's rows are lost: {read} of {clean}");
        let last = metrics(&out).last().unwrap().step;
        assert_eq!(last, Some(step - 1), "the blocks after it are read");
        // Not a W&B file at all: said plainly.
        assert!(read_all(b"{\"loss\": 1}\n").unwrap_err().contains("not a W&B run file"));
        assert!(read_all(b"").unwrap().0.is_empty());
        // A record that is not a Record, and a row without numbers.
        let mut file = header();
        append(&mut file, &[0xff, 0xff, 0xff]);
        append(&mut file, &history(1, &[("caption", "\"a cat\"")]));
        let (out, run) = read_all(&file).unwrap();
        assert_eq!(run.malformed, 1);
        assert!(matches!(&out[1], Out::Line(Line::Skip(SkipKind::NoNumbers, why)) if why.contains("caption")), "{out:?}");
    }

    #[test]
    fn system_metrics_become_telemetry_names() {
        let items: Vec<(String, f64)> = [
            ("system.gpu.1.gpu", 55.0),
            ("gpu.1.memoryAllocatedBytes", 2e9),
            ("gpu.1.memoryTotal", 8e10),
            ("gpu.1.powerWatts", 300.0),
            ("gpu.1.temp", 61.0),
            ("gpu.1.smClock", 1980.0),
            ("gpu.process.1.gpu", 10.0),
            ("memory_percent", 25.0),
            ("proc.memory.availableMB", 3072.0),
            ("disk./.usagePercent", 18.0),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), *v))
        .collect();
        let got = system_metrics(&items);
        let get = |n: &str| got.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!(get("gpu1/util_pct"), Some(55.0));
        assert_eq!(get("gpu1/mem_total_bytes"), Some(8e10));
        assert_eq!((get("gpu1/power_w"), get("gpu1/temp_c"), get("gpu1/sm_clock_mhz")), (Some(300.0), Some(61.0), Some(1980.0)));
        assert_eq!(get("host/mem_total_bytes"), Some(4096.0 * (1u64 << 20) as f64));
        assert_eq!(get("host/mem_used_bytes"), Some(1024.0 * (1u64 << 20) as f64));
        assert_eq!(got.len(), 8, "{got:?}");
    }

    #[test]
    fn values_as_w_and_b_writes_them() {
        assert!(json_number("NaN").unwrap().is_nan());
        assert_eq!(json_number("Infinity"), Some(f64::INFINITY));
        assert_eq!(json_number("-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(json_number("1.795795127011341e+09"), Some(1.795795127011341e9));
        assert_eq!(json_number("true"), None);
        assert_eq!(json_number("\"x\""), None);
        assert_eq!(json_number("{\"_type\": \"image-file\"}"), None);
    }
}
