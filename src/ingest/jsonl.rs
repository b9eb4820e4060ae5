//! One JSON object per line: `step`, numeric fields under canonical names or their
//! aliases, an optional `run`/`run_id` that splits streams and an optional
//! `time`/`timestamp`. Python's json module writes NaN, Infinity and -Infinity as
//! bare tokens, and some loggers write numbers as strings (`"loss": "1.2"`): both
//! are read as numbers. Other strings, booleans and objects are listed as ignored.
use std::borrow::Cow;
use std::collections::HashSet;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{number_in_text, progress_step, FieldName, Line, Record, SkipKind};

const NONFINITE_TOKENS: [(&str, &str); 3] = [("-Infinity", "\"-Infinity\""), ("Infinity", "\"Infinity\""), ("NaN", "\"NaN\"")];

/// JSON nested deeper than this is refused before parsing (serde_json's own limit
/// is 128; this keeps the message ours).
const MAX_DEPTH: usize = 64;
/// Quotes the bare NaN / Infinity / -Infinity tokens outside strings so that a
/// strict JSON parser accepts the line; they are read back as numbers.
fn quote_nonfinite(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 8);
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if c == '"' {
            in_string = true;
            out.push(c);
            rest = &rest[1..];
            continue;
        }
        if let Some((token, quoted)) = NONFINITE_TOKENS.iter().find(|(t, _)| rest.starts_with(t)) {
            out.push_str(quoted);
            rest = &rest[token.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `text` with its bare NaN / Infinity tokens quoted, when it holds any.
pub(super) fn quote_nonfinite_if_any(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains("NaN") || text.contains("Infinity") {
        quote_nonfinite(text).into()
    } else {
        text.into()
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => number_in_text(s),
        _ => None,
    }
}

/// A top-level field's value as read from the line: numbers and strings without
/// building a [`Value`] tree (the common case, read at every line of a long log);
/// objects and arrays, which are rare, as their `Value`.
#[derive(Debug, Clone, PartialEq)]
pub enum Field<'a> {
    U64(u64),
    I64(i64),
    F64(f64),
    Str(Cow<'a, str>),
    Bool(bool),
    Null,
    /// An object or an array.
    Nested(Value),
}

impl Field<'_> {
    /// The number a field holds, as `serde_json`'s `Number::as_f64` reads it, or
    /// the number written in a string.
    fn number(&self) -> Option<f64> {
        match self {
            Field::U64(n) => Some(*n as f64),
            Field::I64(n) => Some(*n as f64),
            Field::F64(f) => Some(*f),
            Field::Str(s) => number_in_text(s),
            Field::Bool(_) | Field::Null | Field::Nested(_) => None,
        }
    }

    fn into_value(self) -> Value {
        match self {
            Field::U64(n) => Value::from(n),
            Field::I64(n) => Value::from(n),
            Field::F64(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
            Field::Str(s) => Value::String(s.into_owned()),
            Field::Bool(b) => Value::Bool(b),
            Field::Null => Value::Null,
            Field::Nested(v) => v,
        }
    }

    fn from_value(v: Value) -> Field<'static> {
        match v {
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Field::U64(u),
                (None, Some(i)) => Field::I64(i),
                _ => n.as_f64().map_or(Field::Null, Field::F64),
            },
            Value::String(s) => Field::Str(Cow::Owned(s)),
            Value::Bool(b) => Field::Bool(b),
            Value::Null => Field::Null,
            nested => Field::Nested(nested),
        }
    }
}

impl<'de> Deserialize<'de> for Field<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Field<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_u64<E>(self, n: u64) -> Result<Field<'de>, E> {
                Ok(Field::U64(n))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Field<'de>, E> {
                Ok(Field::I64(n))
            }
            fn visit_f64<E>(self, f: f64) -> Result<Field<'de>, E> {
                Ok(Field::F64(f))
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Field<'de>, E> {
                Ok(Field::Str(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Field<'de>, E> {
                Ok(Field::Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Field<'de>, E> {
                Ok(Field::Str(Cow::Owned(s)))
            }
            fn visit_bool<E>(self, b: bool) -> Result<Field<'de>, E> {
                Ok(Field::Bool(b))
            }
            fn visit_unit<E>(self) -> Result<Field<'de>, E> {
                Ok(Field::Null)
            }
            fn visit_none<E>(self) -> Result<Field<'de>, E> {
                Ok(Field::Null)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Field<'de>, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(Field::Nested)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Field<'de>, A::Error> {
                Value::deserialize(SeqAccessDeserializer::new(seq)).map(Field::Nested)
            }
        }
        d.deserialize_any(V)
    }
}

/// A key, borrowed from the line unless it holds escapes.
#[derive(serde::Deserialize)]
struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

/// A JSON object's fields in the order `serde_json::Map` iterates them (by key; of
/// a key given twice, the later value), read without a `Value` per field.
struct Fields<'a>(Vec<(Cow<'a, str>, Field<'a>)>);

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut fields: Vec<(Cow<'de, str>, Field<'de>)> = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(Key(k)) = map.next_key()? {
                    let v: Field<'de> = map.next_value()?;
                    fields.push((k, v));
                }
                in_map_order(&mut fields);
                Ok(Fields(fields))
            }
        }
        d.deserialize_map(V)
    }
}

/// Sorted by key, the later of a repeated key kept: the order and content of a
/// `serde_json::Map` (a `BTreeMap`) built from the same fields.
fn in_map_order<K: AsRef<str>>(fields: &mut Vec<(K, Field<'_>)>) {
    if fields.windows(2).all(|w| w[0].0.as_ref() < w[1].0.as_ref()) {
        return;
    }
    fields.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref())); // stable: a repeated key's values stay in line order
    // Of each run of one key, its last.
    let mut kept = 0;
    for i in 0..fields.len() {
        if i + 1 < fields.len() && fields[i].0.as_ref() == fields[i + 1].0.as_ref() {
            continue;
        }
        fields.swap(kept, i);
        kept += 1;
    }
    fields.truncate(kept);
}

/// The order the last flat line's fields were put in: its keys as they came
/// (all distinct) and the swaps that sorted them. A log writes the same keys in
/// the same order on every line: those lines are sorted by the same swaps,
/// found once, with one comparison per key instead of a sort.
#[derive(Debug, Default)]
struct LastOrder {
    keys: Vec<Box<str>>,
    swaps: Vec<(usize, usize)>,
}

impl LastOrder {
    /// [`in_map_order`]: by the last line's swaps where its keys come in the
    /// same order (`true`), else sorted afresh (and the swaps kept when no key
    /// repeats; `self.keys` is empty when one does).
    /// `same`: the caller knows the keys are the last line's.
    fn sort<K: AsRef<str>>(&mut self, fields: &mut Vec<(K, Field<'_>)>, same: bool) -> bool {
        if same || (!self.keys.is_empty() && self.keys.len() == fields.len() && self.keys.iter().zip(fields.iter()).all(|(k, f)| **k == *f.0.as_ref())) {
            for &(a, b) in &self.swaps {
                fields.swap(a, b);
            }
            return true;
        }
        self.keys.clear();
        self.swaps.clear();
        let mut perm: Vec<usize> = (0..fields.len()).collect();
        perm.sort_by(|&a, &b| fields[a].0.as_ref().cmp(fields[b].0.as_ref()));
        if perm.windows(2).any(|w| fields[w[0]].0.as_ref() == fields[w[1]].0.as_ref()) {
            in_map_order(fields);
            return false;
        }
        self.keys.extend(fields.iter().map(|f| Box::from(f.0.as_ref())));
        // The swaps that bring field `perm[j]` to place `j`, place by place:
        // `pos` is where each field is now, `at` which field is in each place.
        let n = fields.len();
        let (mut pos, mut at): (Vec<usize>, Vec<usize>) = ((0..n).collect(), (0..n).collect());
        for (j, &want) in perm.iter().enumerate() {
            let from = pos[want];
            if from != j {
                fields.swap(j, from);
                self.swaps.push((j, from));
                let displaced = at[j];
                at[from] = displaced;
                pos[displaced] = from;
                at[j] = want;
                pos[want] = j;
            }
        }
        false
    }
}

/// How a key of a flat line reads in [`record`], where the line's keys have
/// nothing else in them: no key that names a run, a rank, a long-format pair, a
/// step of the second rank or a Ray result's parts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Plan {
    Step,
    Time,
    Metric,
}

impl Plan {
    /// The reading of each of `fields`' keys (sorted, distinct), or `None` where
    /// one needs [`record`]'s whole look.
    fn of<K: AsRef<str>>(fields: &[(K, Field<'_>)]) -> Option<Vec<Plan>> {
        fields
            .iter()
            .map(|(key, _)| match key.as_ref() {
                k if STEP_KEYS.contains(&k) => Some(Plan::Step),
                k if OTHER_STEP_KEYS.contains(&k) => None,
                "name" | "value" | "run" | "run_id" | "rank" | "global_rank" | "local_rank" | "config" | "pid" | "info" | "learners" => None,
                "time" | "timestamp" | "time_s" | "_timestamp" => Some(Plan::Time),
                _ => Some(Plan::Metric),
            })
            .collect()
    }
}

/// [`record`] of fields whose keys read as `plan` says, when every value is
/// what the plan expects (a step a whole number, a metric a number); else `None`
/// (and `fields` untouched), for `record` to say what it is.
fn planned<K: AsRef<str>>(fields: &[(K, Field<'_>)], plan: &[Plan], mut name: impl FnMut(usize, &str) -> FieldName) -> Option<Line> {
    let mut rec = Record { fields: Vec::with_capacity(fields.len()), ..Record::default() };
    for ((key, v), kind) in fields.iter().zip(plan) {
        match kind {
            Plan::Step => {
                rec.step = Some(v.number().and_then(super::whole_step)?);
            }
            Plan::Time => rec.time = v.number().filter(|t| t.is_finite()),
            Plan::Metric => {
                if matches!(v, Field::Nested(_)) {
                    return None;
                }
                let x = v.number()?;
                rec.fields.push((name(rec.fields.len(), key.as_ref()), x));
            }
        }
    }
    if rec.fields.is_empty() {
        return None;
    }
    Some(Line::Metrics(rec))
}

fn too_deep(line: &str) -> bool {
    let mut depth = 0usize;
    for b in line.bytes() {
        match b {
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Parses one line (not blank).
pub fn parse(line: &str) -> Line {
    Reader::default().parse(line)
}

/// Reads the lines of one JSONL input, keeping what it can reuse from line to line:
/// the buffer a flat line's fields are scanned into, and the field names met.
#[derive(Debug, Default)]
pub struct Reader {
    names: Names,
    /// Empty between lines: only its allocation is kept.
    scanned: Vec<(&'static str, Field<'static>)>,
    order: LastOrder,
    /// How each of the last sorted keys reads (see [`Plan`]), while every one is a
    /// plain metric, a step or a time.
    plan: Option<Vec<Plan>>,
    /// The names of the plan's metric keys, in order, once a line was read by
    /// it (empty until then, and from a change of keys): a line with the same
    /// keys takes them again, without a look in `names`.
    plan_names: Vec<FieldName>,
    /// The plan in line order, for [`Reader::read_planned`]: each key's reading
    /// and, for a metric, its place among the record's fields. Empty while the
    /// plan's names are not known, or where it has several step or time keys.
    line_plan: Vec<(Plan, usize)>,
    /// A line's metric values by place (kept for its allocation).
    values: Vec<f64>,
}

impl Reader {
    /// Parses one line (not blank): a flat object (numbers, plain strings, literals)
    /// in one pass over its bytes; anything else (nesting, escapes, unusual numbers,
    /// malformed text) by serde_json, as before. Both give the same [`Line`].
    pub fn parse(&mut self, line: &str) -> Line {
        let line = line.trim();
        if !line.starts_with('{') {
            return Line::Text;
        }
        if let Some(read) = self.read_planned(line) {
            return read;
        }
        let mut fields = recycle(std::mem::take(&mut self.scanned));
        let parsed = if let Some(hinted) = scan_flat(line, &mut fields, &self.order.keys) {
            // Every key the last line's, in its order: no need to compare them again.
            let same = hinted > 0 && hinted == fields.len() && hinted == self.order.keys.len();
            if !self.order.sort(&mut fields, same) {
                self.plan = if self.order.keys.is_empty() { None } else { Plan::of(&fields) };
                self.plan_names.clear();
                self.line_plan.clear();
            }
            let read = match self.plan.as_deref() {
                // The keys the plan's (`sort` kept the order): the names are the last ones.
                Some(plan) if !self.plan_names.is_empty() => planned(&fields, plan, |slot, key| self.plan_names.get(slot).cloned().unwrap_or_else(|| self.names.get(slot, key))),
                Some(plan) => {
                    let read = planned(&fields, plan, |slot, key| self.names.get(slot, key));
                    if let Some(Line::Metrics(rec)) = &read {
                        self.plan_names.extend(rec.fields.iter().map(|(name, _)| name.clone()));
                        self.line_plan = line_plan(plan, &self.order.swaps);
                    }
                    read
                }
                None => None,
            };
            match read {
                Some(line) => line,
                None => record(&mut fields, &mut self.names),
            }
        } else {
            parse_by_serde(line, &mut self.names)
        };
        self.scanned = recycle(fields);
        parsed
    }
}

impl Reader {
    /// A line (trimmed, starting with `{`) with the keys of the last line read by
    /// the plan, in their order, every value a JSON number: its record, read in
    /// one pass straight into the values, as the scan, the sort and [`planned`]
    /// read it (the same grammar: `scan_flat`'s whitespace, keys and numbers).
    /// `None` for anything else, which the general path reads.
    fn read_planned(&mut self, line: &str) -> Option<Line> {
        let keys = &self.order.keys;
        if self.line_plan.is_empty() || self.line_plan.len() != keys.len() {
            return None;
        }
        let b = line.as_bytes();
        self.values.clear();
        self.values.resize(self.plan_names.len(), 0.0);
        let (mut step, mut time) = (None, None);
        let mut i = skip_ws(b, 1);
        for (k, (key, &(kind, slot))) in keys.iter().zip(&self.line_plan).enumerate() {
            if k > 0 {
                if b.get(i) != Some(&b',') {
                    return None;
                }
                i = skip_ws(b, i + 1);
            }
            let from = i + 1;
            let to = from + key.len();
            if b.get(i) != Some(&b'"') || !b.get(from..to).is_some_and(|got| crate::metrics::same_bytes(got, key.as_bytes())) || b.get(to) != Some(&b'"') {
                return None;
            }
            i = skip_ws(b, to + 1);
            if b.get(i) != Some(&b':') {
                return None;
            }
            i = skip_ws(b, i + 1);
            if !matches!(b.get(i), Some(b'-' | b'0'..=b'9')) {
                return None;
            }
            let (field, next) = scan_number(b, i)?;
            let x = field.number()?;
            i = skip_ws(b, next);
            match kind {
                Plan::Step => step = Some(super::whole_step(x)?),
                Plan::Time => time = Some(x).filter(|t| t.is_finite()),
                Plan::Metric => *self.values.get_mut(slot)? = x,
            }
        }
        if b.get(i) != Some(&b'}') || skip_ws(b, i + 1) != b.len() {
            return None;
        }
        let mut fields = Vec::with_capacity(keys.len());
        fields.extend(self.plan_names.iter().cloned().zip(self.values.iter().copied()));
        Some(Line::Metrics(Record { fields, step, time, ..Record::default() }))
    }
}

/// The plan of sorted keys `plan` in line order, where `swaps` sort the line's
/// keys: each key's reading and, for a metric, its place among the record's
/// fields (its rank among the plan's metrics). Empty with several step or time
/// keys (the last in sorted order wins there: read by the general path).
fn line_plan(plan: &[Plan], swaps: &[(usize, usize)]) -> Vec<(Plan, usize)> {
    let several = |kind: Plan| plan.iter().filter(|p| **p == kind).count() > 1;
    if several(Plan::Step) || several(Plan::Time) {
        return Vec::new();
    }
    // `at[j]`: the line place of sorted key `j`, from the same swaps.
    let mut at: Vec<usize> = (0..plan.len()).collect();
    for &(a, b) in swaps {
        at.swap(a, b);
    }
    let mut in_line = vec![(Plan::Metric, 0); plan.len()];
    let mut slot = 0;
    for (j, kind) in plan.iter().enumerate() {
        in_line[at[j]] = (*kind, slot);
        slot += usize::from(*kind == Plan::Metric);
    }
    in_line
}

/// A line (not blank) read as [`Reader::parse`] reads it and by serde_json alone,
/// for the fuzz target that compares them.
pub fn both_ways(line: &str) -> (Line, Line) {
    let trimmed = line.trim();
    let serde = if trimmed.starts_with('{') { parse_by_serde(trimmed, &mut Names::default()) } else { Line::Text };
    (Reader::default().parse(line), serde)
}

/// A vector's allocation, emptied, for items of another lifetime.
fn recycle<'a, 'b>(mut v: Vec<(&'a str, Field<'a>)>) -> Vec<(&'b str, Field<'b>)> {
    v.clear();
    // In-place collection: the same allocation, no item to map.
    v.into_iter().map(|_| unreachable!("emptied")).collect()
}

/// The serde_json reading of a line already trimmed and starting with `{`.
fn parse_by_serde(line: &str, names: &mut Names) -> Line {
    if too_deep(line) {
        return Line::Skip(SkipKind::Malformed, format!("JSON nested deeper than {MAX_DEPTH} levels"));
    }
    // Most lines hold no bare NaN / Infinity: they are parsed in place.
    let quoted;
    let text = if line.contains("NaN") || line.contains("Infinity") {
        quoted = quote_nonfinite(line);
        quoted.as_str()
    } else {
        line
    };
    match serde_json::from_str::<Fields>(text) {
        Ok(Fields(mut fields)) => record(&mut fields, names),
        Err(e) => Line::Skip(SkipKind::Malformed, format!("not JSON: {e}")),
    }
}

/// JSON's whitespace (serde_json's: not Unicode's).
#[inline(always)]
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    // Whitespace is at most a space: a byte above it ends the run at once.
    while i < b.len() && b[i] <= b' ' && matches!(b[i], b' ' | b'\n' | b'\t' | b'\r') {
        i += 1;
    }
    i
}

/// A flat JSON object's top-level fields, in line order, read in one pass: keys
/// and strings borrowed, numbers parsed in place exactly as serde_json parses them
/// (the same `U64`/`I64`/`F64` and the same value), the bare NaN / Infinity /
/// -Infinity tokens as the strings the serde path quotes them into. `None` (with
/// `out` in any state) for whatever this does not read exactly as serde_json would:
/// nested values, strings with escapes, control characters or brackets (which
/// the nesting check counts), numbers with more than 19 significant digits or a
/// power of ten beyond 22, and anything malformed; the serde path reads those.
///
/// `hint`: keys (each read by [`scan_str`] before) likely at the same places: a
/// key that is the hint's at its place is taken as it is, as `scan_str` would read
/// it, with one comparison. Returns how many keys were the hint's.
fn scan_flat<'a>(line: &'a str, out: &mut Vec<(&'a str, Field<'a>)>, hint: &[Box<str>]) -> Option<usize> {
    let b = line.as_bytes();
    let mut i = skip_ws(b, 1);
    let mut hinted = 0;
    if b.get(i) == Some(&b'}') {
        return (skip_ws(b, i + 1) == b.len()).then_some(hinted);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let from = i + 1;
        let (key, next) = match hint.get(out.len()) {
            // No byte of the hint's key stops `scan_str`; the quote after it does.
            Some(k) if b.get(from..from + k.len()).is_some_and(|got| crate::metrics::same_bytes(got, k.as_bytes())) && b.get(from + k.len()) == Some(&b'"') => {
                hinted += 1;
                (&line[from..from + k.len()], from + k.len() + 1)
            }
            _ => scan_str(line, from)?,
        };
        i = skip_ws(b, next);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let (value, next) = scan_value(line, i)?;
        out.push((key, value));
        i = skip_ws(b, next);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return (skip_ws(b, i + 1) == b.len()).then_some(hinted),
            _ => return None,
        }
    }
}

/// A string's text from just after its opening quote, and the index after its
/// closing one; `None` for escapes, control characters and brackets.
fn scan_str(line: &str, from: usize) -> Option<(&str, usize)> {
    let b = line.as_bytes();
    let mut i = from;
    // One table lookup a byte for the common case (a plain character).
    while i < b.len() && !STR_STOP[b[i] as usize] {
        i += 1;
    }
    match *b.get(i)? {
        // The quote is ASCII: `from..i` lies on character boundaries.
        b'"' => Some((&line[from..i], i + 1)),
        _ => None,
    }
}

/// The bytes that end a plain string's scan: its closing quote, and what sends
/// the line to serde_json (escapes, control characters, brackets).
static STR_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = true;
        c += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'{' as usize] = true;
    t[b'[' as usize] = true;
    t[b'}' as usize] = true;
    t[b']' as usize] = true;
    t
};

/// A value starting at `i` (not nested) and the index after it.
fn scan_value(line: &str, i: usize) -> Option<(Field<'_>, usize)> {
    let b = line.as_bytes();
    let rest = &b[i..];
    let token = |t: &str, f: Field<'static>| rest.starts_with(t.as_bytes()).then(|| (f, i + t.len()));
    match *rest.first()? {
        b'"' => scan_str(line, i + 1).map(|(s, next)| (Field::Str(Cow::Borrowed(s)), next)),
        b'-' | b'0'..=b'9' => scan_number(b, i),
        b't' => token("true", Field::Bool(true)),
        b'f' => token("false", Field::Bool(false)),
        b'n' => token("null", Field::Null),
        // Python's bare tokens: the serde path quotes them into these strings.
        b'N' => token("NaN", Field::Str(Cow::Borrowed("NaN"))),
        b'I' => token("Infinity", Field::Str(Cow::Borrowed("Infinity"))),
        _ => None,
    }
    .or_else(|| rest.starts_with(b"-Infinity").then(|| (Field::Str(Cow::Borrowed("-Infinity")), i + 9)))
}

/// Exact powers of ten, as serde_json's table holds them.
const POW10: [f64; 23] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];

/// A JSON number at `i`, as serde_json (without `float_roundtrip`) reads it: an
/// integer as `U64`, a negative one as `I64` (`-0` as `F64(-0.0)`), anything with
/// a fraction or an exponent as the significand's digits times or over a power of
/// ten. `None` where serde_json would take another path (a significand beyond
/// `u64`, a power beyond 10^22) or refuse the number.
fn scan_number(b: &[u8], at: usize) -> Option<(Field<'static>, usize)> {
    let mut i = at;
    let positive = b[i] != b'-';
    if !positive {
        i += 1;
    }
    // The digits from `i` on, added to `significand`: the index after them.
    let digits = |mut i: usize, significand: &mut u64| {
        while let Some(d) = b.get(i).map(|c| c.wrapping_sub(b'0')).filter(|d| *d < 10) {
            *significand = significand.wrapping_mul(10).wrapping_add(u64::from(d));
            i += 1;
        }
        i
    };
    let mut significand = 0u64;
    let int_start = i;
    i = digits(i, &mut significand);
    let int_len = i - int_start;
    // None, or a leading zero.
    if int_len == 0 || (int_len > 1 && b[int_start] == b'0') {
        return None;
    }
    let mut frac_len = 0;
    if b.get(i) == Some(&b'.') {
        let from = i + 1;
        i = digits(from, &mut significand);
        frac_len = i - from;
        if frac_len == 0 {
            return None;
        }
    }
    // Up to 19 digits fit a u64 whatever they are: read as the checked reading
    // reads them. More may not: that reading, digit by digit.
    if int_len + frac_len > 19 {
        return scan_number_checked(b, at);
    }
    if !matches!(b.get(i), Some(b'e' | b'E')) {
        if frac_len == 0 {
            return Some((integer_field(significand, positive), i));
        }
        let f = significand as f64 / POW10[frac_len];
        return Some((Field::F64(if positive { f } else { -f }), i));
    }
    scan_number_checked(b, at)
}

/// An integer as written, its sign apart: unsigned when positive, else signed,
/// or a float past `i64`'s range.
fn integer_field(significand: u64, positive: bool) -> Field<'static> {
    if positive {
        return Field::U64(significand);
    }
    let neg = (significand as i64).wrapping_neg();
    if neg >= 0 {
        Field::F64(-(significand as f64))
    } else {
        Field::I64(neg)
    }
}

/// [`scan_number`], digit by digit with checked arithmetic: numbers of more than
/// 19 digits, and those with an exponent.
fn scan_number_checked(b: &[u8], mut i: usize) -> Option<(Field<'static>, usize)> {
    let positive = b[i] != b'-';
    if !positive {
        i += 1;
    }
    let digit = |i: usize| b.get(i).filter(|c| c.is_ascii_digit()).map(|c| u64::from(c - b'0'));
    let mut significand = digit(i)?;
    i += 1;
    if significand != 0 {
        while let Some(d) = digit(i) {
            significand = significand.checked_mul(10)?.checked_add(d)?;
            i += 1;
        }
    } else if digit(i).is_some() {
        return None; // a leading zero
    }
    let mut exponent: i32 = 0;
    let mut float = false;
    if b.get(i) == Some(&b'.') {
        i += 1;
        digit(i)?;
        while let Some(d) = digit(i) {
            significand = significand.checked_mul(10)?.checked_add(d)?;
            exponent -= 1;
            i += 1;
        }
        float = true;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        let positive_exp = match b.get(i) {
            Some(b'-') => {
                i += 1;
                false
            }
            Some(b'+') => {
                i += 1;
                true
            }
            _ => true,
        };
        let mut exp = i32::try_from(digit(i)?).ok()?;
        i += 1;
        while let Some(d) = digit(i) {
            exp = exp * 10 + d as i32;
            if exp > 1000 {
                return None;
            }
            i += 1;
        }
        exponent += if positive_exp { exp } else { -exp };
        float = true;
    }
    if !float {
        return Some((integer_field(significand, positive), i));
    }
    let pow = *POW10.get(exponent.unsigned_abs() as usize)?;
    let mut f = significand as f64;
    if exponent >= 0 {
        f *= pow;
    } else {
        f /= pow;
    }
    Some((Field::F64(if positive { f } else { -f }), i))
}

/// One JSON object's record: its step, run, time and numeric fields.
pub fn object(map: serde_json::Map<String, Value>) -> Line {
    record(&mut map.into_iter().map(|(k, v)| (k, Field::from_value(v))).collect(), &mut Names::default())
}

/// The record of an object's fields, in `serde_json::Map` order (taken out of
/// `fields`, whose allocation the caller may reuse).
fn record<K: AsRef<str>>(fields: &mut Vec<(K, Field<'_>)>, names: &mut Names) -> Line {
    let mut rec = Record { fields: Vec::with_capacity(fields.len()), ..Record::default() };
    // The step came from one of `STEP_KEYS`, which outrank `OTHER_STEP_KEYS`.
    let mut step_named = false;
    let get = |name: &str| fields.iter().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v);
    // One metric per line (`{"step": 3, "name": "reward_mean", "value": 0.5}`, as
    // RLDK's event writer emits): the pair is the metric.
    let long = match (get("name"), get("value").and_then(Field::number)) {
        (Some(Field::Str(name)), Some(value)) => Some((names.get(0, name), value)),
        _ => None,
    };
    if let Some(field) = long.clone() {
        rec.fields.push(field);
    }
    // A Ray Tune result (`result.json`, a line per training iteration, RLlib's among
    // them): its `config` and process id are the trial's, not metrics, and RLlib's
    // learner stats are read under their own names (see `ray_learners`).
    let ray = get("training_iteration").and_then(Field::number).is_some();
    let mut learners: Vec<LearnerStat> = Vec::new();
    for (key, v) in fields.drain(..) {
        let key = key.as_ref();
        if long.is_some() && (key == "name" || key == "value") {
            continue;
        }
        match key {
            "run" | "run_id" => {
                rec.run = match v {
                    Field::Str(s) => Some(s.into_owned()),
                    Field::U64(_) | Field::I64(_) | Field::F64(_) => Some(v.into_value().to_string()),
                    _ => return Line::Skip(SkipKind::Malformed, format!("`{key}` must be a string")),
                }
            }
            // A global rank wins over a node-local one (which repeats across nodes).
            "rank" | "global_rank" | "local_rank" => {
                let r = v.number().filter(|r| r.is_finite() && *r >= 0.0 && r.fract() == 0.0 && *r <= f64::from(u32::MAX));
                match r {
                    Some(r) if key != "local_rank" || rec.rank.is_none() => rec.rank = Some(r as u32),
                    Some(_) => {}
                    None => return Line::Skip(SkipKind::Malformed, format!("`{key}` must be a non-negative integer, got {}", short(&v.into_value()))),
                }
            }
            k if STEP_KEYS.contains(&k) || (OTHER_STEP_KEYS.contains(&k) && !step_named) => {
                match v.number().and_then(super::whole_step) {
                    Some(s) => rec.step = Some(s),
                    None => return Line::Skip(SkipKind::Malformed, format!("`{key}` must be a non-negative integer, got {}", short(&v.into_value()))),
                }
                step_named |= STEP_KEYS.contains(&k);
            }
            // A step key of the second rank after the first: not a metric either.
            k if OTHER_STEP_KEYS.contains(&k) => {}
            "time" | "timestamp" | "time_s" | "_timestamp" => rec.time = v.number().filter(|t| t.is_finite()),
            "config" | "pid" if ray => rec.ignored.push(key.to_owned()),
            "info" | "learners" if ray && matches!(v, Field::Nested(Value::Object(_))) => {
                if let Field::Nested(Value::Object(map)) = v {
                    ray_learners(key, map, &mut learners, &mut rec, names);
                }
            }
            // A wrapper of the metrics (RLDK's `metrics`/`data_slice`, verl's file
            // logger's `data`): its fields as if at the top; other objects' fields
            // under `key/`.
            _ => match v {
                Field::Nested(v @ Value::Object(_)) => {
                    let prefix = if WRAPPERS.contains(&key) { String::new() } else { format!("{key}/") };
                    flatten(&prefix, &v, 1, &mut rec, names);
                }
                Field::Nested(Value::Array(items)) => {
                    let before = rec.fields.len();
                    for (i, item) in items.iter().enumerate() {
                        if let Some(x) = number(item) {
                            rec.fields.push((names.get(rec.fields.len(), &format!("{key}/E{i}")), x));
                        }
                    }
                    if rec.fields.len() == before {
                        rec.ignored.push(key.to_owned());
                    }
                }
                other => match other.number() {
                    Some(x) => rec.fields.push((names.get(rec.fields.len(), key), x)),
                    // A step given as progress (`"global_step/max_steps": "70/100"`),
                    // when no step key numbers the line.
                    None => match (&other, rec.step) {
                        (Field::Str(text), None) => match progress_step(key, text) {
                            Some(step) => rec.step = Some(step),
                            None => rec.ignored.push(key.to_owned()),
                        },
                        _ => rec.ignored.push(key.to_owned()),
                    },
                },
            },
        }
    }
    for stat in learners {
        // A name the record already has at its top keeps the stat's whole path.
        let name = if rec.fields.iter().any(|(n, _)| **n == *stat.name) { stat.path } else { stat.name };
        rec.fields.push((names.get(rec.fields.len(), &name), stat.value));
    }
    if rec.fields.is_empty() {
        return Line::Skip(SkipKind::NoNumbers, "no numeric field".into());
    }
    Line::Metrics(rec)
}

/// One of RLlib's learner stats: the name it is read under, its whole path in the
/// result, its value.
struct LearnerStat {
    name: String,
    path: String,
    value: f64,
}

/// RLlib's learner results in a Ray result's `info` (the old API stack: each
/// policy's `info/learner/<policy>/learner_stats/`) or `learners` (the new one:
/// `learners/<module>/`, with `__all_modules__` for the totals). With one policy
/// its stats are the run's own (`policy_loss`, `vf_loss`, `kl`, `entropy`, `cur_lr`:
/// the catalog maps them), with several each policy's under its name
/// (`<policy>/kl`); whatever else the object holds keeps its path, as elsewhere.
fn ray_learners(key: &str, mut map: serde_json::Map<String, Value>, learners: &mut Vec<LearnerStat>, rec: &mut Record, names: &mut Names) {
    let (policies, base) = if key == "info" {
        match map.remove("learner") {
            Some(Value::Object(policies)) => (policies, "info/learner/"),
            Some(other) => {
                map.insert("learner".into(), other);
                (serde_json::Map::new(), "")
            }
            None => (serde_json::Map::new(), ""),
        }
    } else {
        (std::mem::take(&mut map), "learners/")
    };
    flatten(&format!("{key}/"), &Value::Object(map), 1, rec, names);
    let several = policies.keys().filter(|p| !p.starts_with("__")).count() > 1;
    for (policy, results) in policies {
        let path = format!("{base}{policy}/");
        let Value::Object(mut results) = results else {
            rec.ignored.push(format!("{base}{policy}"));
            continue;
        };
        if policy.starts_with("__") {
            flatten(&path, &Value::Object(results), 2, rec, names);
            continue;
        }
        let (stats, stats_path) = match results.remove("learner_stats") {
            Some(Value::Object(stats)) => (stats, format!("{path}learner_stats/")),
            Some(other) => {
                results.insert("learner_stats".into(), other);
                (std::mem::take(&mut results), path.clone())
            }
            None => (std::mem::take(&mut results), path.clone()),
        };
        flatten(&path, &Value::Object(results), 2, rec, names);
        let prefix = if several { format!("{policy}/") } else { String::new() };
        for (stat, v) in stats {
            let leaves: Vec<(String, &Value)> = match &v {
                Value::Object(inner) => inner.iter().map(|(k, x)| (format!("{stat}/{k}"), x)).collect(),
                _ => vec![(stat.clone(), &v)],
            };
            for (name, x) in leaves {
                match number(x) {
                    Some(value) => learners.push(LearnerStat { name: format!("{prefix}{name}"), path: format!("{stats_path}{name}"), value }),
                    None => rec.ignored.push(format!("{stats_path}{name}")),
                }
            }
        }
    }
}

/// Distinct field names one input's table keeps (past it, a name is allocated
/// where it is met, as before): a log that writes a fresh key on every line
/// cannot grow the table without bound.
const MAX_NAMES: usize = 8192;

/// The field names of one input, each allocated once, not once per line.
#[derive(Debug, Default)]
struct Names {
    /// The last record's names by position: a log writes the same keys in the same
    /// order on every line, so most names are found here with one comparison.
    recent: Vec<FieldName>,
    known: HashSet<FieldName>,
}

impl Names {
    /// The name `name`, to be the record's field number `slot`.
    fn get(&mut self, slot: usize, name: &str) -> FieldName {
        if let Some(recent) = self.recent.get(slot) {
            if crate::metrics::same_bytes(recent.as_bytes(), name.as_bytes()) {
                return recent.clone();
            }
        }
        let found = match self.known.get(name) {
            Some(known) => known.clone(),
            None => {
                let new = FieldName::from(name);
                if self.known.len() < MAX_NAMES {
                    self.known.insert(new.clone());
                }
                new
            }
        };
        match self.recent.get_mut(slot) {
            Some(recent) => *recent = found.clone(),
            None => self.recent.push(found.clone()),
        }
        found
    }
}

/// Keys that name the step.
const STEP_KEYS: &[&str] = &["step", "_step", "global_step", "iteration", "train/global_step", "training/global_step", "trainer/global_step"];
/// Keys that name the step when none of `STEP_KEYS` does (an `iter` may count
/// micro-batches next to a `step`): nanoGPT's `iter`, LLaMA-Factory's
/// `current_steps`, fairseq's `num_updates`, Ray Tune's `training_iteration`.
const OTHER_STEP_KEYS: &[&str] = &["iter", "current_steps", "num_updates", "global_steps", "training_iteration"];

/// Keys whose object holds the metrics themselves.
const WRAPPERS: &[&str] = &["metrics", "data", "data_slice", "scalars"];

/// The numeric leaves of a nested object, named `prefix` + path, two levels deep.
fn flatten(prefix: &str, v: &Value, depth: usize, rec: &mut Record, names: &mut Names) {
    let Value::Object(map) = v else { return };
    for (k, inner) in map {
        let name = format!("{prefix}{k}");
        match inner {
            Value::Object(_) if depth < 2 => flatten(&format!("{name}/"), inner, depth + 1, rec, names),
            _ => match number(inner) {
                Some(x) => rec.fields.push((names.get(rec.fields.len(), &name), x)),
                None => rec.ignored.push(name),
            },
        }
    }
}


/// A JSON value for a message, cut short.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(line: &str) -> Record {
        match parse(line) {
            Line::Metrics(r) => r,
            other => panic!("{line}: {other:?}"),
        }
    }

    fn skip(line: &str) -> String {
        match parse(line) {
            Line::Skip(_, why) => why,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn a_step_given_as_progress_numbers_the_line() {
        let r = rec(r#"{"loss": 1.5, "global_step/max_steps": "70/100", "percentage": "70.00%"}"#);
        assert_eq!(r.step, Some(70));
        // A step key wins over progress.
        let r = rec(r#"{"step": 12, "loss": 1.5, "global_step/max_steps": "70/100"}"#);
        assert_eq!(r.step, Some(12));
    }

    #[test]
    fn bare_nonfinite_tokens_are_numbers_and_strings_are_left_alone() {
        let r = rec(r#"{"step": 3, "loss": NaN, "grad_norm": Infinity, "kl": -Infinity, "note": "NaN here", "run": "a"}"#);
        assert_eq!(r.step, Some(3));
        assert_eq!(r.run.as_deref(), Some("a"));
        let get = |n: &str| r.fields.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert!(get("loss").unwrap().is_nan());
        assert_eq!(get("grad_norm"), Some(f64::INFINITY));
        assert_eq!(get("kl"), Some(f64::NEG_INFINITY));
        assert_eq!(get("note"), None);
        assert_eq!(r.ignored, vec!["note".to_owned()]);
    }

    #[test]
    fn numbers_written_as_strings_are_numbers() {
        let r = rec(r#"{"step": "7", "loss": "1.2", "lr": "3e-4", "tag": "warmup"}"#);
        assert_eq!(r.step, Some(7));
        assert_eq!(r.fields, vec![("loss".into(), 1.2), ("lr".into(), 3e-4)]);
        assert_eq!(r.ignored, vec!["tag".to_owned()]);
    }

    #[test]
    fn nested_and_long_formats() {
        // RLDK's event: metrics and data slice wrapped; other objects prefixed.
        let r = rec(r#"{"step": 4, "wall_time": 12.5, "metrics": {"reward_mean": 0.5, "kl_mean": 0.02}, "data_slice": {"tokens_in": 100, "tokens_out": 50}, "model_info": {"run_id": "x", "phase": "train"}}"#);
        assert_eq!(r.step, Some(4));
        assert!(r.fields.contains(&("reward_mean".into(), 0.5)) && r.fields.contains(&("tokens_out".into(), 50.0)), "{:?}", r.fields);
        assert!(r.ignored.contains(&"model_info/phase".to_owned()));
        // verl's file logger, and one metric per line.
        assert_eq!(rec(r#"{"step": 2, "data": {"actor/pg_loss": 0.1}}"#).fields, vec![("actor/pg_loss".into(), 0.1)]);
        let r = rec(r#"{"time": "2025-01-01T00:00:00Z", "step": 3, "name": "reward_mean", "value": 0.7, "run_id": "a"}"#);
        assert_eq!((r.run.as_deref(), r.fields.clone()), (Some("a"), vec![("reward_mean".into(), 0.7)]));
    }

    #[test]
    fn a_ray_result_is_numbered_by_its_iteration_and_rllib_learner_stats_are_read() {
        let value = |r: &Record, name: &str| r.fields.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        // The old API stack: stats of one policy under `info/learner/<policy>/learner_stats`.
        let r = rec(r#"{"episode_reward_mean": 22.4, "info": {"learner": {"default_policy": {"learner_stats": {"kl": 0.027, "entropy": 0.665, "policy_loss": -0.041, "vf_loss": 8.6, "cur_lr": 5e-05, "grad_gnorm": 2.8}, "model": {}, "num_grad_updates_lifetime": 465.0}}, "num_env_steps_sampled": 4000}, "epoch": 3, "training_iteration": 7, "timesteps_total": 28000, "timestamp": 1710165720, "pid": 48213, "config": {"lr": 5e-05, "gamma": 0.99}}"#);
        assert_eq!((r.step, r.time), (Some(7), Some(1710165720.0)), "the iteration, over an `epoch` the trainable reports");
        for (name, v) in [("kl", 0.027), ("entropy", 0.665), ("policy_loss", -0.041), ("vf_loss", 8.6), ("cur_lr", 5e-05), ("grad_gnorm", 2.8), ("episode_reward_mean", 22.4), ("info/num_env_steps_sampled", 4000.0), ("info/learner/default_policy/num_grad_updates_lifetime", 465.0), ("epoch", 3.0)] {
            assert_eq!(value(&r, name), Some(v), "{name}: {:?}", r.fields);
        }
        assert!(value(&r, "pid").is_none() && !r.fields.iter().any(|(k, _)| k.starts_with("config")), "{:?}", r.fields);
        assert!(r.ignored.contains(&"config".to_owned()) && r.ignored.contains(&"pid".to_owned()), "{:?}", r.ignored);
        // Several policies: each one's stats under its name.
        let r = rec(r#"{"training_iteration": 2, "info": {"learner": {"p0": {"learner_stats": {"kl": 0.1}}, "p1": {"learner_stats": {"kl": 0.2}}}}}"#);
        assert_eq!((value(&r, "p0/kl"), value(&r, "p1/kl"), value(&r, "kl")), (Some(0.1), Some(0.2), None));
        // The new API stack: `learners/<module>/`, the totals under `__all_modules__`;
        // a name the result has at its top keeps the stat's path.
        let r = rec(r#"{"env_runners": {"episode_return_mean": 21.4}, "learners": {"__all_modules__": {"num_env_steps_trained": 4000}, "default_policy": {"mean_kl_loss": 0.0094, "entropy": 0.685, "vf_loss": 7.8, "curr_kl_coeff": 0.2}}, "entropy": 1.0, "training_iteration": 1}"#);
        for (name, v) in [("mean_kl_loss", 0.0094), ("learners/default_policy/entropy", 0.685), ("entropy", 1.0), ("curr_kl_coeff", 0.2), ("learners/__all_modules__/num_env_steps_trained", 4000.0), ("env_runners/episode_return_mean", 21.4)] {
            assert_eq!(value(&r, name), Some(v), "{name}: {:?}", r.fields);
        }
        // Its evaluation's results keep their path (a held-out return beside the training one).
        let r = rec(r#"{"training_iteration": 3, "env_runners": {"episode_return_mean": 21.4}, "evaluation": {"env_runners": {"episode_return_mean": 30.5}}}"#);
        assert_eq!((value(&r, "evaluation/env_runners/episode_return_mean"), value(&r, "env_runners/episode_return_mean")), (Some(30.5), Some(21.4)));
        // Outside a Ray result, `info`, `learners`, `config` and `pid` read as any object.
        let r = rec(r#"{"step": 3, "info": {"learner": {"kl": 0.1}}, "config": {"lr": 0.1}, "pid": 7}"#);
        assert_eq!((value(&r, "info/learner/kl"), value(&r, "config/lr"), value(&r, "pid")), (Some(0.1), Some(0.1), Some(7.0)));
    }

    #[test]
    fn a_rank_field_names_the_process_and_is_not_a_metric() {
        assert_eq!(rec(r#"{"iter": 7, "train/loss": 2.0}"#).step, Some(7), "nanoGPT's iter");
        assert_eq!(rec(r#"{"current_steps": 15, "total_steps": 100, "loss": 2.0}"#).step, Some(15), "LLaMA-Factory's trainer_log.jsonl");
        for both in [r#"{"iter": 40, "step": 10, "loss": 2.0}"#, r#"{"step": 10, "iter": 40, "loss": 2.0}"#] {
            let r = rec(both);
            assert_eq!((r.step, r.fields.len()), (Some(10), 1), "a step outranks an iter, in either order: {both}");
        }
        let r = rec(r#"{"step": 1, "rank": 1, "loss": 2.0}"#);
        assert_eq!((r.rank, r.fields.clone()), (Some(1), vec![("loss".into(), 2.0)]));
        assert_eq!(rec(r#"{"step": 1, "global_rank": "3", "local_rank": 1, "loss": 2.0}"#).rank, Some(3), "the global rank wins");
        assert_eq!(rec(r#"{"step": 1, "local_rank": 1, "loss": 2.0}"#).rank, Some(1));
        assert!(skip(r#"{"step": 1, "rank": -2, "loss": 1}"#).contains("non-negative integer"));
    }

    #[test]
    fn reading_fields_in_place_gives_the_record_of_a_parsed_object() {
        for line in [
            r#"{"step": 2, "loss": 1.5, "loss": 1.25, "b\u0061d": 3, "run": 7, "lr": -2, "big": 18446744073709551615, "x": [1, "2", true], "tag": null}"#,
            r#"{"z": 1e300, "step": "3", "a": {"b": {"c": 1, "d": {"e": 2}}}, "metrics": {"kl": 0.1}, "name": "reward_mean", "value": "0.5"}"#,
            r#"{"run": 1.5, "step": 1, "ok": false, "loss": 2}"#,
        ] {
            let map: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
            assert_eq!(parse(line), object(map), "{line}");
        }
        assert!(skip(r#"{"step": 1, "loss": 1e400}"#).contains("number out of range"));
    }

    #[test]
    fn malformed_lines_say_why() {
        assert!(skip("{not json").starts_with("not JSON"));
        assert_eq!(parse("[1, 2]"), Line::Text);
        assert!(skip(r#"{"step": -1, "loss": 1}"#).contains("non-negative integer"));
        assert!(skip(r#"{"step": 9.3e18, "loss": 1}"#).contains("non-negative integer"), "beyond 2^63");
        assert_eq!(skip(r#"{"step": 1, "note": "x"}"#), "no numeric field");
        let deep = format!("{{\"a\": {}1{}}}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(skip(&deep).contains("nested deeper"));
    }

    /// The scanner's reading of a line and serde_json's, and whether the scanner
    /// read it itself.
    fn scanned_and_serde(line: &str) -> (Line, Line, bool) {
        let trimmed = line.trim();
        let scanned = trimmed.starts_with('{') && scan_flat(trimmed, &mut Vec::new(), &[]).is_some();
        let serde = if trimmed.starts_with('{') { parse_by_serde(trimmed, &mut Names::default()) } else { Line::Text };
        (Reader::default().parse(line), serde, scanned)
    }

    /// Equal, NaNs included (`Line`'s `PartialEq` has NaN != NaN).
    fn same(a: &Line, b: &Line) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn a_reader_sorts_each_line_as_a_fresh_one_whatever_came_before() {
        // The same keys in the same order (sorted by the swaps kept from the line
        // before), in another order, with a key repeated, one more or one fewer,
        // one renamed, already in order, and back.
        let lines = [
            r#"{"step": 1, "timestamp": 17.5, "loss": 2.5, "lr": 3e-4, "grad_norm": 0.5, "tokens": 4096, "kl": 0.02}"#,
            r#"{"step": 2, "timestamp": 18.5, "loss": 2.4, "lr": 3e-4, "grad_norm": 0.6, "tokens": 4096, "kl": 0.03}"#,
            r#"{"step": 3, "timestamp": 19.5, "loss": 2.3, "lr": 3e-4, "grad_norm": 0.7, "tokens": 4096, "kl": 0.04}"#,
            r#"{"kl": 0.05, "step": 4, "loss": 2.2, "timestamp": 20.5, "lr": 3e-4, "grad_norm": 0.8, "tokens": 4096}"#,
            r#"{"kl": 0.06, "step": 5, "loss": 2.1, "timestamp": 21.5, "lr": 3e-4, "grad_norm": 0.9, "tokens": 4096}"#,
            r#"{"step": 6, "loss": 2.0, "loss": 1.9, "lr": 3e-4, "kl": 0.07, "lr": 2e-4, "tokens": 4096}"#,
            r#"{"step": 7, "loss": 2.0, "loss": 1.9, "lr": 3e-4, "kl": 0.07, "lr": 2e-4, "tokens": 4096}"#,
            r#"{"step": 8, "timestamp": 23.5, "loss": 1.8, "lr": 3e-4, "grad_norm": 1.0, "tokens": 4096, "kl": 0.08, "entropy": 1.5}"#,
            r#"{"step": 9, "timestamp": 24.5, "loss": 1.7, "lr": 3e-4, "grad_norm": 1.1, "tokens": 4096}"#,
            r#"{"step": 10, "timestamp": 25.5, "loss": 1.6, "lr": 3e-4, "grad_nrm": 1.2, "tokens": 4096}"#,
            r#"{"a": 1, "b": 2, "loss": 1.5, "step": 11}"#,
            r#"{"a": 1, "b": 2, "loss": 1.4, "step": 12}"#,
            r#"{}"#,
            r#"{"step": 13, "timestamp": 26.5, "loss": 1.3, "lr": 3e-4, "grad_norm": 1.3, "tokens": 4096, "kl": 0.09}"#,
            r#"{"step": 14, "timestamp": 27.5, "loss": 1.2, "lr": 3e-4, "grad_norm": 1.4, "tokens": 4096, "kl": 0.1}"#,
        ];
        let mut reader = Reader::default();
        for line in lines {
            let (kept, fresh) = (reader.parse(line), Reader::default().parse(line));
            assert!(same(&kept, &fresh), "{line}\n{kept:?}\n{fresh:?}");
            let serde = parse_by_serde(line, &mut Names::default());
            assert!(same(&kept, &serde), "{line}\n{kept:?}\n{serde:?}");
        }
    }

    #[test]
    fn the_scanner_reads_flat_lines_as_serde_json_does() {
        let flat = [
            r#"{"step": 1, "timestamp": 1700000000.255, "loss": 2.134567, "lr": 3e-05, "grad_norm": 0.52345, "tokens": 4096}"#,
            r#"{"step": 2, "loss": -0.0, "a": -0, "b": 0, "c": 0.0, "d": -1, "e": 1e-5, "f": 1E5, "g": 2.5e+3, "h": -1.5E-7}"#,
            r#"{"step": 3, "big": 18446744073709551615, "neg": -9223372036854775808, "x": 9007199254740993, "y": 1.0000000000000002}"#,
            r#"{"step": 4, "loss": NaN, "grad_norm": Infinity, "kl": -Infinity, "note": "NaN here", "run": "a"}"#,
            r#"{"step": 5, "loss": 2.3, "loss": 2.2, "loss": 2.1, "a": 1, "a": "x"}"#,
            r#"{"step": 6, "ünï": 1.5, "emoji😀": 2, "é": "ü", "": 3, "a b": 4}"#,
            r#"{"step": 7, "ok": true, "no": false, "z": null, "loss": "2.0", "lr": " 3e-4 ", "tag": "warm"}"#,
            r#"{ "step" : 8 ,"loss":1.7,	"kl" :0.2 }"#,
            r#"{"run": 7, "step": 9, "loss": 1}"#,
            r#"{"run": -0.0, "step": 10, "loss": 1}"#,
            r#"{"run": 1e2, "step": 11, "loss": 1}"#,
            r#"{"run": -3, "step": 12, "loss": 1}"#,
            r#"{"step": 13, "rank": 1, "global_rank": "2", "local_rank": 0, "loss": 1.0}"#,
            r#"{"step": 14, "name": "reward_mean", "value": 0.7, "run_id": "a"}"#,
            r#"{"iter": 15, "step": 15, "loss": 0.9}"#,
            r#"{"step": -1, "loss": 1}"#,
            r#"{"step": 1e3, "loss": 1}"#,
            r#"{"step": 1000.5, "loss": 1}"#,
            r#"{"step": 9.3e18, "loss": 1}"#,
            r#"{"step": 1, "rank": -2, "loss": 1}"#,
            r#"{"step": 1, "rank": 1.5, "loss": 1}"#,
            r#"{"step": 1, "note": "x"}"#,
            r#"{"step": 16, "eps": 1e-22, "m": 1e22, "n": 123456789.123456789, "o": 0.1e-2}"#,
            r#"{}"#,
            "  {\"step\": 17, \"loss\": 1.5}\r ",
        ];
        for line in flat {
            let (scanned, serde, fast) = scanned_and_serde(line);
            assert!(fast, "read by the scanner: {line}");
            assert!(same(&scanned, &serde), "{line}\n{scanned:?}\n{serde:?}");
        }
        // Read by serde_json (the scanner declines them), with the same result as before.
        let declined = [
            r#"{"step": 1, "lo\u0073s": 2.4, "l\"r": 3}"#,
            r#"{"step": 1, "tag": "a\nb", "loss": 1}"#,
            r#"{"step": 5, "loss": 2.1, "metrics": {"kl": 0.1}, "x": [1, 2, "3"]}"#,
            r#"{"step": 1, "deep": {"a": {"b": {"c": {"d": 1}}}}, "loss": 1}"#,
            r#"{"step": 7, "big": 123456789012345678901234567890, "neg": -18446744073709551616}"#,
            r#"{"step": 8, "eps": 5e-324, "huge": 1.7976931348623157e308, "tiny": 1e-23, "e": 1e400}"#,
            r#"{"step": 8, "x": 1e-99999999999}"#,
            r#"{"step": 10, "loss": 01.5}"#,
            r#"{"step": 11, "loss": 1.5,}"#,
            r#"{"step": 12, "loss": .5}"#,
            r#"{"step": 14, "loss": -}"#,
            r#"{"step": 15, "loss": 1.4} trailing"#,
            r#"{"step": 16, "loss": 1.3}{"step": 17}"#,
            r#"{"step": 33, "loss": -NaN}"#,
            r#"{"step": 34, "loss": +1}"#,
            r#"{"step": 35, "loss": 1.}"#,
            r#"{"step": 36, "loss": 1e}"#,
            r#"{"step": 37, "loss": 0x10}"#,
            r#"{"step": 39, "loss": 00}"#,
            r#"{"step": 42 "loss": 1}"#,
            r#"{"step": 43, loss: 1}"#,
            "{'step': 44, 'loss': 1}",
            r#"{"step": 54, "loss": Infinityx}"#,
            r#"{"step": 55, "loss": NaNa, "b": 1}"#,
            r#"{"step": 56, "loss": [NaN, Infinity]}"#,
            r#"{"step": 1, "note": "{{{{", "loss": 1}"#,
            "{\"step\": 1, \"ctl\": \"a\tb\", \"loss\": 1}",
            "{\"step\": 1,\u{a0}\"loss\": 1}",
            r#"{"step": 1, "loss": 1"#,
            r#"{"step": 1, "loss": "#,
            r#"{"step": 1, "lo"#,
            r#"{"#,
            r#"{"step": 1, "loss": tru}"#,
            r#"{"step": 1, "loss": nul"#,
        ];
        for line in declined {
            let (scanned, serde, fast) = scanned_and_serde(line);
            assert!(!fast, "declined by the scanner: {line}");
            assert!(same(&scanned, &serde), "{line}\n{scanned:?}\n{serde:?}");
        }
        let deep = format!("{{\"a{}\": 1}}", "{".repeat(100));
        assert!(skip(&deep).contains("nested deeper"), "brackets in a key count as before");
    }

    use crate::test_rng::Rng;

    /// A random number as a logger might write it (or a JSON extension, or a near miss).
    fn random_number(rng: &mut Rng) -> String {
        let digits = |rng: &mut Rng, most: usize| {
            let n = 1 + rng.index(most);
            (0..n).map(|_| char::from(b'0' + rng.index(10) as u8)).collect::<String>()
        };
        let sign = if rng.index(3) == 0 { "-" } else { "" };
        match rng.index(8) {
            0 => format!("{sign}{}", rng.next() >> rng.index(64)),
            1 => format!("{sign}{}", digits(rng, 25)),
            2 => format!("{sign}{}.{}", rng.index(1000), digits(rng, 22)),
            3 => format!("{sign}{}.{}{}{}", rng.index(10), digits(rng, 8), rng.pick(&["e", "E"]), rng.pick(&["", "+", "-"])) + &rng.index(400).to_string(),
            4 => format!("{:e}", f64::from_bits(rng.next())),
            5 => format!("{}", f64::from_bits(rng.next())),
            6 => rng.pick(&["NaN", "Infinity", "-Infinity", "-0.0", "0", "-0", "1e-5", "1E5", "0.0", "00", "1.", ".5", "-", "1e", "+1"]).to_owned(),
            _ => format!("{sign}{:.6}", (rng.next() % 20_000_000) as f64 / 1e6),
        }
    }

    #[test]
    fn random_flat_objects_read_the_same_scanned_and_serde() {
        let keys = ["step", "loss", "lr", "kl", "entropy", "grad_norm", "reward_mean", "val_loss", "tokens", "time", "timestamp", "run", "run_id", "rank", "local_rank", "iter", "name", "value", "x/y", "é", "a\\u0041", "", "metrics"];
        let others = ["true", "false", "null", "\"a\"", "\"1.5\"", "\"nan\"", "\" -inf \"", "\"x\\ny\"", "[1, 2]", "{\"a\": 1}", "{}", "[]"];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut scanned_lines = 0;
        for _ in 0..20_000 {
            let n = rng.index(9);
            let mut parts = Vec::new();
            for _ in 0..n {
                let value = if rng.index(5) == 0 { rng.pick(&others).to_owned() } else { random_number(&mut rng) };
                let (ws1, ws2) = (rng.pick(&["", " ", "  ", "\t"]), rng.pick(&["", " "]));
                parts.push(format!("\"{}\"{ws1}:{ws2}{value}", rng.pick(&keys)));
            }
            let line = format!("{{{}}}", parts.join(rng.pick(&[", ", ",", " , "])));
            let (scanned, serde, fast) = scanned_and_serde(&line);
            scanned_lines += usize::from(fast);
            assert!(same(&scanned, &serde), "{line}\n{scanned:?}\n{serde:?}");
        }
        assert!(scanned_lines > 3_000, "most random objects are flat: {scanned_lines}");
    }

    #[test]
    fn a_truncated_last_line_is_malformed_either_way() {
        let text = b"{\"step\": 1, \"loss\": 2.5}\n{\"step\": 2, \"loss\": 1.";
        let mut got = Vec::new();
        crate::ingest::read_all(text, &mut crate::ingest::LineReader::new(crate::ingest::Format::Jsonl, None), |no, l| got.push((no, l))).unwrap();
        assert!(matches!(got[0].1, Line::Metrics(_)));
        assert_eq!(got[1], (2, Line::Skip(SkipKind::Malformed, "not JSON: EOF while parsing a value at line 1 column 22".into())));
    }

}
