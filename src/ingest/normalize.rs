//! One stream's records turned into canonical metric points: aliases renamed,
//! milliseconds scaled, cumulative counters differenced, missing steps numbered by
//! the log's only counter (an `epoch` of whole numbers) or else counted on,
//! times made relative to the stream's first, records of one step merged (an
//! evaluation logged apart from the training values of its step), and steps that
//! go backwards seen as a resumed job. Everything it decides is counted in a
//! [`StreamReport`], so a user can see what was read as what and what was not.
use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::{FieldName, Record};
use crate::metrics::catalog::{self, Conversion};
use crate::metrics::MetricName;

/// What became of one stream's input.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StreamReport {
    /// Steps with metrics.
    pub points: u64,
    /// Each input name and the metric it was read as.
    pub read: BTreeMap<String, String>,
    /// Names rlmon does not know, kept under their own name, with the known name
    /// they are close to (a likely typo or variant).
    pub unknown_close_to: BTreeMap<String, String>,
    /// Fields that were not numbers, with the known name closest to each, if any.
    pub ignored: BTreeMap<String, Option<String>>,
    /// Steps logged again with different values (the later value is kept).
    pub duplicate_steps: u64,
    /// Steps went backwards: the job was restarted from a checkpoint.
    pub resumed: Vec<Resume>,
    /// Values dropped because the stream already has [`MAX_METRICS`] distinct names.
    #[serde(skip_serializing_if = "is_zero")]
    pub over_metric_limit: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Distinct metric names one stream may bring (a MoE model with 64 layers of 64
/// experts is 4,096 loads): past it, new names are dropped and counted, so a log
/// that writes a fresh key on every line cannot grow rlmon without bound.
pub const MAX_METRICS: usize = 8192;
/// The rank of a memory read from its name's shape ([`catalog::memory_alias`]'s
/// rank added): after every name rlmon knows for it.
const MEMORY_BY_SHAPE_RANK: usize = 1000;

/// Spare values vectors a normalizer keeps ([`Normalizer::reuse`]).
const MAX_SPARE: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Resume {
    /// The first step logged again.
    pub at_step: u64,
    /// Steps logged before that are replaced by the resumed run's.
    pub discarded: u64,
}

/// One step's canonical values.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub step: u64,
    pub time_s: f64,
    pub values: Vec<(MetricName, f64)>,
}

/// Ascending steps, held as runs of a fixed stride (`first`, `first + stride`, ...):
/// a log's steps count up by one or by its logging interval, so a run of any
/// length takes a few runs' memory, not a word per step.
#[derive(Debug, Default)]
struct Steps {
    /// `(first, stride, count)`, ascending; `stride` is 0 while `count` is 1.
    runs: Vec<(u64, u64, u64)>,
}

impl Steps {
    fn last(&self) -> Option<u64> {
        self.runs.last().map(|(first, stride, count)| first + stride * (count - 1))
    }

    /// Appends `step`, above the last one.
    fn push(&mut self, step: u64) {
        if let Some((first, stride, count)) = self.runs.last_mut() {
            let gap = step.checked_sub(*first + *stride * (*count - 1)).filter(|g| *g > 0);
            if *count == 1 && gap.is_some() {
                *stride = step - *first;
                *count = 2;
                return;
            }
            if gap == Some(*stride) {
                *count += 1;
                return;
            }
        }
        self.runs.push((step, 0, 1));
    }

    /// Removes the steps from `step` on, returning how many there were.
    fn remove_from(&mut self, step: u64) -> u64 {
        let mut removed = 0;
        while let Some((first, stride, count)) = self.runs.last_mut() {
            if *first >= step {
                removed += *count;
                self.runs.pop();
                continue;
            }
            // Steps of this run below `step`: first + stride * i < step.
            let below = if *stride == 0 { 1 } else { ((step - *first - 1) / *stride + 1).min(*count) };
            removed += *count - below;
            *count = below;
            if *count == 1 {
                *stride = 0;
            }
            break;
        }
        removed
    }
}

/// What the normalizer hands on.
#[derive(Debug, Clone, PartialEq)]
pub enum Emit {
    Point(Point),
    /// Forget this stream's points from `at_step` on: they are logged again.
    Resumed(Resume),
}

/// A field that counts like a step (`epoch`, `iteration`) in a log that writes no
/// step of its own: its whole values number the steps (`epoch: 3451 loss: nan` is
/// step 3451, not the excerpt's ninth line).
#[derive(Debug, Default, Clone, PartialEq)]
enum Counter {
    /// No record without a step has carried a counter yet.
    #[default]
    Unseen,
    /// This field numbers the steps; a record without it is more of the step before.
    By(FieldName),
    /// The steps are counted: the counter was no whole number, went back before it
    /// numbered anything, or repeated its value with other values of the same
    /// metrics (a line per batch under one epoch).
    Not,
}

/// Names (any case) of fields that count like a step. A reader takes most of them
/// as the step itself when it can (`iter` in a text log); the rest reach the
/// normalizer as fields.
const COUNTER_FIELDS: &[&str] = &["epoch", "epochs", "iter", "iters", "iteration", "training_iteration", "step", "global_step"];

fn is_counter(name: &str) -> bool {
    COUNTER_FIELDS.iter().any(|c| c.eq_ignore_ascii_case(name))
}

/// A name with capitals in snake case: `KL` -> `kl`, `ClipFrac` -> `clip_frac`,
/// `AverageEpRet` -> `average_ep_ret`, `KLDiv` -> `kl_div` (a word starts at a
/// capital after a small letter or digit, or at the last capital of a run followed
/// by a small letter). `None` when it has no capital.
fn snake_case(name: &str) -> Option<String> {
    if !name.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let before = chars[i - 1];
            let after_small = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if before.is_ascii_lowercase() || before.is_ascii_digit() || (before.is_ascii_uppercase() && after_small) {
                out.push('_');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    Some(out)
}

/// A counter's value as a step: a whole, non-negative number.
/// One of 64 bits for a name, by its length and its first and last bytes: names
/// with different bits differ.
fn name_bit(name: &str) -> u64 {
    let b = name.as_bytes();
    let h = b.len().wrapping_mul(31).wrapping_add(b.first().map_or(0, |x| *x as usize)).wrapping_add(b.last().map_or(0, |x| 7 * *x as usize));
    1 << (h % 64)
}

fn whole(v: f64) -> Option<u64> {
    (v.fract() == 0.0 && (0.0..9.0e15).contains(&v)).then_some(v as u64)
}

#[derive(Debug, Default)]
pub struct Normalizer {
    /// The step being gathered (records of one step merge until another arrives).
    pending: Option<Point>,
    /// Values of records awaiting the step a later record names ([`Record::awaits_step`]).
    awaiting: Vec<(MetricName, f64)>,
    /// Steps handed on, ascending (for counting what a resume discards).
    emitted: Steps,
    /// The metrics handed on for the last step, while a part of it may still come
    /// (after a `flush`, a live stream's step goes out before its next one arrives).
    last_names: Vec<MetricName>,
    first_time: Option<f64>,
    cumulative: HashMap<FieldName, f64>,
    /// How each input name reads, worked out once per stream (the catalog lookups
    /// are linear scans, and a log repeats the same names on every line).
    names: HashMap<FieldName, Resolved>,
    /// The last record's names by position with their reading, each already in
    /// the report: a log writes the same names in the same order on every line, so
    /// most are known here by one comparison (of addresses, for a reader that
    /// shares its names) instead of a lookup by text.
    recent: Vec<(FieldName, Resolved)>,
    /// A record's renamed metrics and the rank of the name each came from (kept
    /// for its allocation).
    ranks: Vec<(&'static str, usize)>,
    /// Emptied values vectors handed back by the consumer of the points
    /// ([`Normalizer::reuse`]), for the next points.
    spare: Vec<Vec<(MetricName, f64)>>,
    /// What numbers the steps of records without a step of their own.
    counter: Counter,
    pub report: StreamReport,
}

/// An input name's reading: its conversion (none: kept under its own name), its rank
/// among names of one metric, and the name interned.
#[derive(Debug, Clone, Copy)]
struct Resolved {
    conversion: Option<Conversion>,
    rank: usize,
    interned: &'static str,
    /// The conversion is read from the name's shape, not from a name a preset
    /// knows (a trainer's own word for its memory): it holds for a preset's
    /// records too.
    by_shape: bool,
    /// A part of a loss logged only in parts ([`catalog::is_loss_part`]).
    loss_part: bool,
}

impl Normalizer {
    /// Takes one record; returns what is now complete.
    pub fn push(&mut self, rec: Record) -> Vec<Emit> {
        let mut out = Vec::new();
        self.push_into(rec, &mut out);
        out
    }

    /// Takes one record; appends what is now complete to `out`.
    pub fn push_into(&mut self, mut rec: Record, out: &mut Vec<Emit>) {
        let last = self.pending.as_ref().map(|p| p.step).or(self.emitted.last());
        let unnumbered = rec.step.is_none() || rec.counted;
        let counter = if unnumbered { self.take_counter(&mut rec, last) } else { None };
        let counted_step = match (rec.step, rec.continues) {
            (Some(s), _) => s,
            (None, true) => last.unwrap_or(0),
            (None, false) => last.map_or(0, |s| s + 1),
        };
        let mut step = match &counter {
            Some((s, _)) => *s,
            // Steps numbered by a counter: a record without it belongs to the step before.
            None if unnumbered && matches!(self.counter, Counter::By(_)) => last.unwrap_or(0),
            None => counted_step,
        };
        let time_s = match rec.time {
            Some(t) => t - *self.first_time.get_or_insert(t),
            None => 0.0,
        };
        for name in &rec.ignored {
            // Bounded like the metric names: the report lists the first ones.
            if self.report.ignored.len() < MAX_METRICS || self.report.ignored.contains_key(name) {
                self.report.ignored.entry(name.clone()).or_insert_with(|| catalog::closest(name).map(str::to_owned));
            }
        }
        let mut values = self.canonical(rec.fields, rec.canonical);
        // A record whose step a later one names waits for it; the next record with
        // a step (or without one that does not wait) takes the values waiting.
        if rec.awaits_step && rec.step.is_none() && counter.is_none() {
            for (name, v) in values {
                match self.awaiting.iter_mut().find(|(n, _)| *n == name) {
                    Some(slot) => slot.1 = v,
                    None => self.awaiting.push((name, v)),
                }
            }
            return;
        }
        if !self.awaiting.is_empty() {
            let mut waited = std::mem::take(&mut self.awaiting);
            waited.retain(|(n, _)| !values.iter().any(|(m, _)| m == n));
            waited.append(&mut values);
            values = waited;
        }
        if let Some((s, (name, v))) = counter {
            if self.clashes(s, &values) {
                // Not a step after all: counted from here on, the counter a metric again
                // (also of the step it numbered, still held).
                self.counter = Counter::Not;
                self.report.read.insert(name.to_string(), name.to_string());
                let metric = MetricName::Borrowed(catalog::intern(&name));
                if let Some(p) = self.pending.as_mut().filter(|p| p.step == s && !p.values.iter().any(|(n, _)| *n == metric)) {
                    p.values.push((metric.clone(), s as f64));
                }
                values.push((metric, v));
                step = counted_step;
            }
        }
        match &mut self.pending {
            Some(p) if p.step == step => {
                // One step logged in parts: merge; a value given twice is a duplicate,
                // the later kept, but a non-finite value stays: a trainer that writes its
                // last step again after the error that stopped it (detectron2's final
                // write after `Loss became infinite or NaN`) would hide the fault.
                let mut clashed = false;
                for (name, v) in values {
                    match p.values.iter_mut().find(|(n, _)| *n == name) {
                        Some(slot) => {
                            clashed |= slot.1.to_bits() != v.to_bits();
                            if slot.1.is_finite() || !v.is_finite() {
                                slot.1 = v;
                            }
                        }
                        None => p.values.push((name, v)),
                    }
                }
                p.time_s = p.time_s.max(time_s);
                self.report.duplicate_steps += u64::from(clashed);
                return;
            }
            _ => {}
        }
        if let Some(p) = self.pending.take() {
            self.emit(p, out);
        }
        if self.emitted.last() == Some(step) {
            // A late part of the step already handed on: its new metrics follow it;
            // a metric it already had is a duplicate, not a resume.
            let before = values.len();
            let values: Vec<(MetricName, f64)> = values.into_iter().filter(|(n, _)| !self.last_names.contains(n)).collect();
            self.report.duplicate_steps += u64::from(values.len() < before);
            if !values.is_empty() {
                self.last_names.extend(values.iter().map(|(n, _)| n.clone()));
                out.push(Emit::Point(Point { step, time_s, values }));
            }
            return;
        }
        if self.emitted.last().is_some_and(|l| step <= l) {
            let resume = Resume { at_step: step, discarded: self.emitted.remove_from(step) };
            self.report.points -= resume.discarded;
            self.report.resumed.push(resume);
            out.push(Emit::Resumed(resume));
        }
        self.pending = Some(Point { step, time_s, values });
    }

    /// The step a record without one takes from its counter field (removed from its
    /// fields, and returned with its step), when a counter numbers this stream's
    /// steps or this record's is the first: the only counter among its fields, a
    /// whole number, not below the steps before it.
    fn take_counter(&mut self, rec: &mut Record, last: Option<u64>) -> Option<(u64, (FieldName, f64))> {
        match &self.counter {
            Counter::Not => None,
            Counter::By(name) => {
                let at = rec.fields.iter().position(|(n, _)| n.same(name))?;
                let Some(step) = whole(rec.fields[at].1) else {
                    self.report.read.remove(&**name);
                    self.counter = Counter::Not;
                    return None;
                };
                Some((step, rec.fields.remove(at)))
            }
            Counter::Unseen => {
                let mut found = rec.fields.iter().enumerate().filter(|(_, (n, _))| is_counter(n));
                let (at, (_, v)) = found.next()?;
                if found.next().is_some() {
                    // Two counters (an epoch and its iteration): neither alone numbers the steps.
                    return None;
                }
                match whole(*v).filter(|s| last.is_none_or(|l| *s >= l)) {
                    Some(step) => {
                        let field = rec.fields.remove(at);
                        self.report.read.insert(field.0.to_string(), "step".into());
                        self.counter = Counter::By(field.0.clone());
                        Some((step, field))
                    }
                    None => {
                        self.counter = Counter::Not;
                        None
                    }
                }
            }
        }
    }

    /// Whether `values` at `step` give a metric of that step another value: a line per
    /// batch that repeats its epoch (a step already handed on: any metric again).
    fn clashes(&self, step: u64, values: &[(MetricName, f64)]) -> bool {
        match &self.pending {
            Some(p) if p.step == step => values.iter().any(|(n, v)| p.values.iter().any(|(m, w)| m == n && w.to_bits() != v.to_bits())),
            Some(_) => false,
            None => self.emitted.last() == Some(step) && values.iter().any(|(n, _)| self.last_names.contains(n)),
        }
    }

    /// Takes a point's values vector back once its values are used: its allocation
    /// holds a later point's (a consumer on another thread saves a free there and
    /// an allocation here).
    pub fn reuse(&mut self, mut values: Vec<(MetricName, f64)>) {
        if self.spare.len() < MAX_SPARE {
            values.clear();
            self.spare.push(values);
        }
    }

    /// Hands on the step being gathered now, rather than when the next one arrives:
    /// a live stream calls this when its input has nothing more for the moment, so
    /// the display is not a log interval behind. Parts of that step arriving later
    /// follow as their own point.
    pub fn flush(&mut self) -> Vec<Emit> {
        self.finish()
    }

    /// Forgets the step being gathered: its records were read in a format that was
    /// given up for another.
    pub fn drop_pending(&mut self) {
        self.pending = None;
        self.awaiting.clear();
    }

    /// The last step, once the input ends.
    pub fn finish(&mut self) -> Vec<Emit> {
        let mut out = Vec::new();
        // Values that waited for a step no line named: the step after the last.
        if !self.awaiting.is_empty() {
            let values = std::mem::take(&mut self.awaiting);
            let last = self.pending.as_ref().map(|p| p.step).or(self.emitted.last());
            if let Some(p) = self.pending.take() {
                self.emit(p, &mut out);
            }
            let time_s = out.iter().rev().find_map(|e| if let Emit::Point(p) = e { Some(p.time_s) } else { None }).unwrap_or(0.0);
            self.emit(Point { step: last.map_or(0, |s| s + 1), time_s, values }, &mut out);
        }
        if let Some(p) = self.pending.take() {
            self.emit(p, &mut out);
        }
        out
    }

    fn emit(&mut self, p: Point, out: &mut Vec<Emit>) {
        if p.values.is_empty() {
            return;
        }
        self.emitted.push(p.step);
        self.last_names.clear();
        self.last_names.extend(p.values.iter().map(|(n, _)| n.clone()));
        self.report.points += 1;
        out.push(Emit::Point(p));
    }

    /// How `name` reads (before a preset's `already`); `first` is its first value.
    fn resolve(&mut self, name: &FieldName, first: f64) -> Resolved {
        match self.names.get(name) {
            Some(r) => *r,
            None => {
                // A canonical name as written takes part in the ranking as a rename to itself.
                let itself = catalog::info(name).map(|m| m.pattern).filter(|p| *p == &**name).map(Conversion::Rename);
                let mut r = Resolved { conversion: catalog::conversion(name).or(itself), rank: catalog::alias_rank(name), interned: catalog::intern(name), by_shape: false, loss_part: false };
                // A known name in capitals or CamelCase (`KL`, `Entropy`, Spinning Up's
                // `ClipFrac`) is that name: its snake-case spelling.
                // A column headed in words (the HF Trainer's notebook table: `Training
                // Loss`, `Validation Loss`) is the name a text log would read from them.
                if r.conversion.is_none() {
                    let words = name.contains([' ', '-']).then(|| catalog::tidy_word(name).to_owned());
                    for spelled in snake_case(name).into_iter().chain(words).filter(|s| s != &**name) {
                        let itself = catalog::info(&spelled).map(|m| m.pattern).filter(|p| *p == spelled).map(Conversion::Rename);
                        if let Some(c) = catalog::conversion(&spelled).or(itself) {
                            r = Resolved { conversion: Some(c), rank: catalog::alias_rank(&spelled), ..r };
                            break;
                        }
                    }
                }
                // A MoE layer's metric under another trainer's name.
                if r.conversion.is_none() && catalog::info(name).is_none() {
                    if let Some(alias) = catalog::moe_alias(name) {
                        r.interned = catalog::intern(&alias);
                        let factor = catalog::moe_alias_factor(name);
                        if factor != 1.0 {
                            r = Resolved { conversion: Some(Conversion::Scale(r.interned, factor)), by_shape: true, ..r };
                        }
                    }
                }
                r.loss_part = r.conversion.is_none() && catalog::is_loss_part(name);
                // The memory in use under a trainer's own name, in bytes: by its
                // name's unit, else by its first value's size. It gives way to a
                // name rlmon knows for that memory in the same record.
                if r.conversion.is_none() && catalog::info(name).is_none() && r.interned == &**name {
                    if let Some((metric, unit, rank)) = catalog::memory_alias(name) {
                        let factor = unit.unwrap_or_else(|| catalog::memory_unit_of(first));
                        r = Resolved { conversion: Some(Conversion::Scale(metric, factor)), rank: MEMORY_BY_SHAPE_RANK + rank, by_shape: true, ..r };
                    }
                }
                self.names.insert(name.clone(), r);
                r
            }
        }
    }

    /// Canonical names and values of a record's fields.
    fn canonical(&mut self, fields: Vec<(FieldName, f64)>, already: bool) -> Vec<(MetricName, f64)> {
        let mut values: Vec<(MetricName, f64)> = self.spare.pop().unwrap_or_else(|| Vec::with_capacity(fields.len() + 2));
        let mut split_tokens = (None, None);
        // The loss's parts in this record, when it logs the loss only in parts.
        let (mut parts, mut parts_sum) = (0usize, 0.0);
        // The bits (`name_bit`) of the names in `values`: a name whose bit is not
        // there is not there, without a look along `values` or `ranks`.
        let mut seen = 0u64;
        let mut ranks = std::mem::take(&mut self.ranks);
        ranks.clear();
        // The fields are read in place and dropped together after the loop: a
        // name's release (an atomic decrement) between the stores of the values
        // would wait on each of them.
        for (slot, (name, v)) in fields.iter().enumerate() {
            let v = *v;
            let recent = self.recent.get(slot).filter(|(n, _)| n.same(&name)).map(|(_, r)| *r);
            let resolved = match recent {
                Some(r) => r,
                None => {
                    if self.names.len() >= MAX_METRICS && !self.names.contains_key(name) {
                        self.report.over_metric_limit += 1;
                        continue;
                    }
                    self.resolve(name, v)
                }
            };
            if resolved.loss_part {
                parts += 1;
                parts_sum += v;
            }
            // A preset's names are canonical as they stand.
            let resolved = if already && !resolved.by_shape { Resolved { conversion: None, ..resolved } } else { resolved };
            let read_as = match resolved.conversion {
                Some(conversion @ (Conversion::Rename(c) | Conversion::Scale(c, _))) => {
                    let v = if let Conversion::Scale(_, f) = conversion { v * f } else { v };
                    // Several names for one metric in a record: the strongest wins.
                    let rank = resolved.rank;
                    let bit = name_bit(c);
                    // `ranks` holds names of `values` only.
                    let maybe = seen & bit != 0;
                    let at = if maybe { ranks.iter().position(|(n, _)| *n == c) } else { None };
                    // The name as a preset wrote it, unranked, stands before one
                    // read from a name's shape.
                    let written = maybe && at.is_none() && values.iter().any(|(n, _)| *n == c);
                    match at {
                        Some(i) if ranks[i].1 <= rank => {}
                        _ if written => {}
                        found => {
                            // Most records name each metric once: nothing to take out.
                            if maybe && values.iter().any(|(n, _)| *n == c) {
                                values.retain(|(n, _)| *n != c);
                            }
                            values.push((MetricName::Borrowed(c), v));
                            seen |= bit;
                            match found {
                                Some(i) => ranks[i].1 = rank,
                                None => ranks.push((c, rank)),
                            }
                        }
                    }
                    c
                }
                Some(Conversion::Cumulative(c)) => {
                    if let Some(prev) = self.cumulative.insert(name.clone(), v) {
                        values.push((MetricName::Borrowed(c), v - prev));
                        seen |= name_bit(c);
                    }
                    c
                }
                None => match &**name {
                    catalog::TOKENS_IN => {
                        split_tokens.0 = Some(v);
                        catalog::TOKENS
                    }
                    catalog::TOKENS_OUT => {
                        split_tokens.1 = Some(v);
                        catalog::TOKENS
                    }
                    // A memory as a preset wrote it, after one read from a
                    // name's shape (a text line's `memory: 31GiB` after its `max_mem: 33`).
                    written if seen & name_bit(resolved.interned) != 0 && ranks.iter().any(|(n, r)| *n == written && *r >= MEMORY_BY_SHAPE_RANK) => {
                        ranks.retain(|(n, _)| *n != written);
                        values.retain(|(n, _)| *n != written);
                        values.push((MetricName::Borrowed(resolved.interned), v));
                        resolved.interned
                    }
                    // A name a record holds twice (a text line's `reward: -18, Avg.
                    // reward: -19.9`, both read as the reward): the first stands.
                    _ if seen & name_bit(resolved.interned) != 0 && values.iter().any(|(n, _)| *n == resolved.interned) => resolved.interned,
                    _ => {
                        values.push((MetricName::Borrowed(resolved.interned), v));
                        seen |= name_bit(resolved.interned);
                        resolved.interned
                    }
                },
            };
            if recent.is_none() {
                if !self.report.read.contains_key(&**name) {
                    if catalog::info(read_as).is_none() {
                        if let Some(close) = catalog::closest(name) {
                            self.report.unknown_close_to.insert(name.to_string(), close.to_owned());
                        }
                    }
                    self.report.read.insert(name.to_string(), read_as.to_owned());
                }
                let base = self.names[&**name];
                let entry = (name.clone(), base);
                match self.recent.get_mut(slot) {
                    Some(r) => *r = entry,
                    None => self.recent.push(entry),
                }
            }
        }
        self.ranks = ranks;
        if parts >= 2 && !values.iter().any(|(n, _)| n == catalog::LOSS) {
            values.push((MetricName::Borrowed(catalog::LOSS), parts_sum));
        }
        if let (Some(a), Some(b)) = split_tokens {
            if !values.iter().any(|(n, _)| n == catalog::TOKENS) {
                values.push((MetricName::Borrowed(catalog::TOKENS), a + b));
            }
        }
        values
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::{jsonl, Line};

    fn rec(line: &str) -> Record {
        match jsonl::parse(line) {
            Line::Metrics(r) => r,
            other => panic!("{other:?}"),
        }
    }

    fn points(emits: Vec<Emit>) -> Vec<Point> {
        emits.into_iter().filter_map(|e| if let Emit::Point(p) = e { Some(p) } else { None }).collect()
    }

    #[test]
    fn known_names_in_capitals_or_camel_case_are_read_as_themselves() {
        assert_eq!(snake_case("KL").as_deref(), Some("kl"));
        assert_eq!(snake_case("ClipFrac").as_deref(), Some("clip_frac"));
        assert_eq!(snake_case("AverageEpRet").as_deref(), Some("average_ep_ret"));
        assert_eq!(snake_case("KLDiv").as_deref(), Some("kl_div"));
        assert_eq!(snake_case("loss"), None);
        // Spinning Up's progress.txt header.
        let mut n = Normalizer::default();
        let mut rec = Record::default();
        rec.step = Some(1);
        rec.fields = ["AverageEpRet", "KL", "Entropy", "ClipFrac", "LossPi", "LossV", "MyMetric"].iter().map(|k| ((*k).into(), 1.0)).collect();
        n.push(rec);
        let out = n.finish();
        let Some(Emit::Point(p)) = out.first() else { panic!("{out:?}") };
        let names: Vec<&str> = p.values.iter().map(|(k, _)| &**k).collect();
        for want in ["reward", "kl", "entropy", "clip_frac", "policy_loss", "value_loss", "MyMetric"] {
            assert!(names.contains(&want), "{want} not in {names:?}");
        }
    }

    #[test]
    fn columns_headed_in_words_are_read_as_a_text_log_reads_the_words() {
        // The HF Trainer's notebook table, pasted as text.
        let mut n = Normalizer::default();
        let mut rec = Record::default();
        rec.step = Some(1);
        rec.fields = ["Training Loss", "Validation Loss", "Grad-Norm", "My Score"].iter().map(|k| ((*k).into(), 1.0)).collect();
        n.push(rec);
        let out = n.finish();
        let Some(Emit::Point(p)) = out.first() else { panic!("{out:?}") };
        let names: Vec<&str> = p.values.iter().map(|(k, _)| &**k).collect();
        assert_eq!(names, ["loss", "val_loss", "grad_norm", "My Score"]);
    }

    #[test]
    fn aliases_scales_and_cumulative_counters() {
        let mut n = Normalizer::default();
        assert!(n.push(rec(r#"{"step": 1, "timestamp": 100.0, "train/loss": 2.0, "wall_time_ms": 250, "num_tokens": 1000}"#)).is_empty(), "held until the step is complete");
        let p = points(n.push(rec(r#"{"timestamp": 101.5, "num_tokens": 1600, "objective/kl": 0.1, "moe/L0/load": [0.5, 0.5]}"#)));
        assert_eq!((p[0].step, p[0].time_s), (1, 0.0));
        assert_eq!(p[0].values, vec![("loss".into(), 2.0), ("step_time_s".into(), 0.25)]);
        let p = points(n.finish());
        assert_eq!((p[0].step, p[0].time_s), (2, 1.5), "a missing step counts on");
        assert!(p[0].values.contains(&("tokens".into(), 600.0)));
        assert!(p[0].values.contains(&("kl".into(), 0.1)));
        assert!(p[0].values.contains(&("moe/L0/load/E1".into(), 0.5)));
        assert_eq!(n.report.read["train/loss"], "loss");
        assert_eq!(n.report.read["num_tokens"], "tokens");
        assert_eq!(n.report.points, 2);
    }

    #[test]
    fn parts_of_one_step_merge_and_a_clash_is_a_duplicate() {
        let mut n = Normalizer::default();
        n.push(rec(r#"{"step": 10, "loss": 2.0}"#));
        n.push(rec(r#"{"step": 10, "eval_loss": 2.5}"#));
        n.push(rec(r#"{"step": 10, "loss": 2.1}"#));
        let p = points(n.finish());
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].values, vec![("loss".into(), 2.1), ("val_loss".into(), 2.5)]);
        assert_eq!(n.report.duplicate_steps, 1);
        // A step written again with finite values after its NaN keeps the NaN.
        let mut n = Normalizer::default();
        n.push(rec(r#"{"step": 10, "loss": NaN}"#));
        n.push(rec(r#"{"step": 10, "loss": 0.37}"#));
        let p = points(n.finish());
        assert!(p[0].values[0].1.is_nan(), "{:?}", p[0].values);
        assert_eq!(n.report.duplicate_steps, 1);
    }

    #[test]
    fn a_flushed_step_takes_its_late_parts_without_a_resume() {
        let mut n = Normalizer::default();
        n.push(rec(r#"{"step": 10, "loss": 2.0}"#));
        assert_eq!(points(n.flush()).len(), 1, "handed on at once");
        let late = points(n.push(rec(r#"{"step": 10, "eval_loss": 2.5, "loss": 2.0}"#)));
        assert_eq!(late.len(), 1);
        assert_eq!((late[0].step, late[0].values.clone()), (10, vec![("val_loss".into(), 2.5)]), "only what is new");
        assert!(n.report.resumed.is_empty());
        assert_eq!((n.report.points, n.report.duplicate_steps), (1, 1));
        n.push(rec(r#"{"step": 11, "loss": 1.9}"#));
        assert_eq!(points(n.finish())[0].step, 11);
    }

    #[test]
    fn steps_going_back_are_a_resume() {
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        for s in [1, 2, 3, 4, 5, 3, 4] {
            out.extend(n.push(rec(&format!(r#"{{"step": {s}, "loss": {s}}}"#))));
        }
        out.extend(n.finish());
        assert!(out.contains(&Emit::Resumed(Resume { at_step: 3, discarded: 3 })), "{out:?}");
        assert_eq!(n.report.resumed, vec![Resume { at_step: 3, discarded: 3 }]);
        assert_eq!(n.report.points, 4, "steps 1, 2, then 3, 4 again");
    }

    #[test]
    fn of_several_names_for_one_metric_the_strongest_wins() {
        let mut n = Normalizer::default();
        n.push(rec(r#"{"step": 1, "objective/entropy": 40.0, "policy/entropy_avg": 1.5}"#));
        n.push(rec(r#"{"step": 2, "policy/entropy_avg": 1.4, "objective/entropy": 41.0, "entropy": 1.2}"#));
        let mut p = points(n.finish());
        p.extend(points(n.finish()));
        let entropy = |p: &Point| p.values.iter().find(|(k, _)| k == "entropy").map(|(_, v)| *v);
        let mut n2 = Normalizer::default();
        let first = points(n2.push(rec(r#"{"step": 1, "objective/entropy": 40.0, "policy/entropy_avg": 1.5}"#)));
        assert!(first.is_empty());
        let first = points(n2.push(rec(r#"{"step": 2, "loss": 1.0}"#)));
        assert_eq!(entropy(&first[0]), Some(1.5), "the true entropy, not TRL's per-sequence proxy");
        assert_eq!(entropy(&p[0]), Some(1.2), "the canonical name first");
    }

    #[test]
    fn unknown_and_ignored_names_are_reported_with_the_closest_known_one() {
        let mut n = Normalizer::default();
        n.push(rec(r#"{"step": 1, "los": 2.0, "my_metric": 3.0, "lr": "warmup"}"#));
        n.finish();
        assert_eq!(n.report.unknown_close_to.get("los").map(String::as_str), Some("loss"));
        assert!(!n.report.unknown_close_to.contains_key("my_metric"));
        assert_eq!(n.report.ignored.get("lr"), Some(&None), "lr is itself known: no other name to suggest");
    }

    #[test]
    fn names_shared_by_the_reader_or_not_read_the_same() {
        let lines = [
            r#"{"step": 1, "loss": 2.0, "lr": 1e-4, "num_tokens": 100, "objective/kl": 0.1}"#,
            r#"{"step": 2, "loss": 1.9, "lr": 1e-4, "num_tokens": 250, "objective/kl": 0.2}"#,
            r#"{"step": 3, "lr": 1e-4, "loss": 1.8, "kl": 0.3, "objective/kl": 0.25, "wall_time_ms": 250}"#,
            r#"{"step": 4, "entropy": 1.2, "policy/entropy_avg": 1.4, "los": 1.7}"#,
            r#"{"step": 4, "tokens_in": 10, "tokens_out": 5, "eval_loss": 2.5}"#,
            r#"{"step": 5, "policy/entropy_avg": 1.3, "objective/entropy": 40.0, "loss": 1.6, "num_tokens": 400}"#,
            r#"{"step": 6, "loss": 1.5, "lr": "warmup", "x": [1, 2]}"#,
            r#"{"step": 3, "loss": 1.4, "lr": 1e-4}"#,
        ];
        let run = |records: Vec<Record>| {
            let mut n = Normalizer::default();
            let mut out: Vec<Emit> = records.into_iter().flat_map(|r| n.push(r)).collect();
            out.extend(n.finish());
            (format!("{out:?}"), n.report)
        };
        let mut reader = jsonl::Reader::default();
        let shared: Vec<Record> = lines.iter().map(|l| if let Line::Metrics(r) = reader.parse(l) { r } else { panic!("{l}") }).collect();
        let fresh: Vec<Record> = lines.iter().map(|l| rec(l)).collect();
        assert_eq!(run(shared), run(fresh));
    }


    fn steps_of(records: Vec<Record>) -> (Vec<(u64, Vec<(MetricName, f64)>)>, StreamReport) {
        let mut n = Normalizer::default();
        let mut out: Vec<Emit> = records.into_iter().flat_map(|r| n.push(r)).collect();
        out.extend(n.finish());
        (points(out).into_iter().map(|p| (p.step, p.values)).collect(), n.report)
    }

    #[test]
    fn a_logs_only_counter_numbers_its_steps() {
        // An excerpt of `epoch: N loss: x` lines: the NaN is at epoch 3451, not the third line.
        let (steps, report) = steps_of(vec![rec(r#"{"epoch": 3449, "loss": 0.2075}"#), rec(r#"{"epoch": 3450, "loss": 0.2106}"#), rec(r#"{"epoch": 3451, "loss": NaN}"#)]);
        assert_eq!(steps.iter().map(|s| s.0).collect::<Vec<_>>(), [3449, 3450, 3451]);
        assert_eq!(steps[2].1.len(), 1, "the epoch is the step, not a metric: {:?}", steps[2].1);
        assert!(steps[2].1[0].1.is_nan());
        assert_eq!(report.read["epoch"], "step");
        // A line without it (the epoch's time, its evaluation) is more of the step before.
        let (steps, _) = steps_of(vec![rec(r#"{"Epoch": 1, "cost": 29.9}"#), rec(r#"{"time_this_epoch": 1.7}"#), rec(r#"{"Epoch": 2, "cost": 7.9}"#), rec(r#"{"Epoch": 2, "val_cost": 8.1}"#)]);
        assert_eq!(steps, [(1, vec![("loss".into(), 29.9), ("time_this_epoch".into(), 1.7)]), (2, vec![("loss".into(), 7.9), ("val_cost".into(), 8.1)])]);
        // A CSV without a step column (Keras' CSVLogger): its epoch column, not the row.
        let row = |epoch: f64, loss: f64| Record { step: Some(epoch as u64 + 1), counted: true, fields: vec![("epoch".into(), epoch), ("loss".into(), loss)], ..Default::default() };
        assert_eq!(steps_of(vec![row(0.0, 0.9), row(1.0, 0.8)]).0.iter().map(|s| s.0).collect::<Vec<_>>(), [0, 1]);
        // A step the log writes wins: the epoch stays a metric.
        let (steps, report) = steps_of(vec![rec(r#"{"step": 10, "epoch": 1, "loss": 2}"#)]);
        assert_eq!((steps[0].0, steps[0].1.len(), report.read["epoch"].as_str()), (10, 2, "epoch"));
    }

    #[test]
    fn a_counter_that_is_no_step_leaves_the_steps_counted() {
        let counted = |lines: &[&str]| {
            let (steps, report) = steps_of(lines.iter().map(|l| rec(l)).collect());
            (steps.iter().map(|s| s.0).collect::<Vec<_>>(), steps.iter().map(|s| s.1.len()).sum::<usize>(), report)
        };
        // A line per batch under one epoch: every line a point, none lost, the epoch a metric.
        let (steps, values, report) = counted(&[r#"{"epoch": 1, "loss": 2.0}"#, r#"{"epoch": 1, "loss": 1.9}"#, r#"{"epoch": 1, "loss": 1.8}"#, r#"{"epoch": 2, "loss": 1.7}"#]);
        assert_eq!((steps, values), (vec![1, 2, 3, 4], 8));
        assert_eq!((report.read["epoch"].as_str(), report.duplicate_steps), ("epoch", 0));
        // Hugging Face's fractional epochs; two counters on a line.
        assert_eq!(counted(&[r#"{"epoch": 0.05, "loss": 2.0}"#, r#"{"epoch": 1.0, "loss": 1.9}"#]).0, [0, 1]);
        assert_eq!(counted(&[r#"{"epoch": 3, "iters": 7, "loss": 2.0}"#, r#"{"epoch": 3, "iters": 8, "loss": 1.9}"#]).0, [0, 1]);
    }

    #[test]
    fn steps_held_as_strided_runs_count_as_a_list_does() {
        let mut rng = crate::test_rng::Rng(0x2545_f491_4f6c_dd1d);
        let mut next = move |n: u64| rng.below(n);
        for _ in 0..200 {
            let (mut steps, mut list) = (Steps::default(), Vec::<u64>::new());
            let stride = 1 + next(10);
            for _ in 0..300 {
                let last = list.last().copied();
                assert_eq!(steps.last(), last);
                match next(10) {
                    // Back to an earlier step: what a resume does.
                    0 if last.is_some() => {
                        let at = next(last.unwrap() + 2);
                        let keep = list.partition_point(|s| *s < at);
                        assert_eq!(steps.remove_from(at), (list.len() - keep) as u64, "{list:?} from {at}");
                        list.truncate(keep);
                    }
                    k => {
                        let step = last.map_or(next(5), |l| l + if k < 7 { stride } else { 1 + next(30) });
                        steps.push(step);
                        list.push(step);
                    }
                }
            }
            assert!(steps.runs.len() <= list.len().max(1));
        }
        let mut steps = Steps::default();
        (1..=100_000).for_each(|s| steps.push(s * 10));
        assert_eq!((steps.runs.len(), steps.last()), (1, Some(1_000_000)), "a long run of one stride is one run");
    }

}
