//! One JSON object per line: `step`, numeric fields under canonical names or their
//! aliases, an optional `run`/`run_id` that splits streams and an optional
//! `time`/`timestamp`. Python's json module writes NaN, Infinity and -Infinity as
//! bare tokens, and some loggers write numbers as strings (`"loss": "1.2"`): both
//! are read as numbers. Other strings, booleans and objects are listed as ignored.
use std::borrow::Cow;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{number_in_text, Line, Record, SkipKind};

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
                Ok(Fields(in_map_order(fields)))
            }
        }
        d.deserialize_map(V)
    }
}

/// Sorted by key, the later of a repeated key kept: the order and content of a
/// `serde_json::Map` (a `BTreeMap`) built from the same fields.
fn in_map_order<'a>(mut fields: Vec<(Cow<'a, str>, Field<'a>)>) -> Vec<(Cow<'a, str>, Field<'a>)> {
    if fields.windows(2).all(|w| w[0].0 < w[1].0) {
        return fields;
    }
    fields.sort_by(|a, b| a.0.cmp(&b.0)); // stable: a repeated key's values stay in line order
    let mut out: Vec<(Cow<'a, str>, Field<'a>)> = Vec::with_capacity(fields.len());
    for f in fields {
        match out.last_mut() {
            Some(last) if last.0 == f.0 => *last = f,
            _ => out.push(f),
        }
    }
    out
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
    let line = line.trim();
    if !line.starts_with('{') {
        return Line::Text;
    }
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
        Ok(Fields(fields)) => record(fields),
        Err(e) => Line::Skip(SkipKind::Malformed, format!("not JSON: {e}")),
    }
}

/// One JSON object's record: its step, run, time and numeric fields.
pub fn object(map: serde_json::Map<String, Value>) -> Line {
    record(map.into_iter().map(|(k, v)| (Cow::Owned(k), Field::from_value(v))).collect())
}

/// The record of an object's fields, in `serde_json::Map` order.
fn record(fields: Vec<(Cow<'_, str>, Field<'_>)>) -> Line {
    let mut rec = Record::default();
    // The step came from one of `STEP_KEYS`, which outrank `OTHER_STEP_KEYS`.
    let mut step_named = false;
    let get = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    // One metric per line (`{"step": 3, "name": "reward_mean", "value": 0.5}`, as
    // RLDK's event writer emits): the pair is the metric.
    let long = match (get("name"), get("value").and_then(Field::number)) {
        (Some(Field::Str(name)), Some(value)) => Some((name.clone().into_owned(), value)),
        _ => None,
    };
    if let Some(field) = long.clone() {
        rec.fields.push(field);
    }
    for (key, v) in fields {
        if long.is_some() && (key == "name" || key == "value") {
            continue;
        }
        match key.as_ref() {
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
                let s = v.number().filter(|s| s.is_finite() && *s >= 0.0 && s.fract() == 0.0 && *s < 2f64.powi(63));
                match s {
                    Some(s) => rec.step = Some(s as u64),
                    None => return Line::Skip(SkipKind::Malformed, format!("`{key}` must be a non-negative integer, got {}", short(&v.into_value()))),
                }
                step_named |= STEP_KEYS.contains(&k);
            }
            // A step key of the second rank after the first: not a metric either.
            k if OTHER_STEP_KEYS.contains(&k) => {}
            "time" | "timestamp" | "time_s" | "_timestamp" => rec.time = v.number().filter(|t| t.is_finite()),
            // A wrapper of the metrics (RLDK's `metrics`/`data_slice`, verl's file
            // logger's `data`): its fields as if at the top; other objects' fields
            // under `key/`.
            _ => match v {
                Field::Nested(v @ Value::Object(_)) => {
                    let prefix = if WRAPPERS.contains(&key.as_ref()) { String::new() } else { format!("{key}/") };
                    flatten(&prefix, &v, 1, &mut rec);
                }
                Field::Nested(Value::Array(items)) => {
                    let before = rec.fields.len();
                    for (i, item) in items.iter().enumerate() {
                        if let Some(x) = number(item) {
                            rec.fields.push((format!("{key}/E{i}"), x));
                        }
                    }
                    if rec.fields.len() == before {
                        rec.ignored.push(key.into_owned());
                    }
                }
                other => match other.number() {
                    Some(x) => rec.fields.push((key.into_owned(), x)),
                    None => rec.ignored.push(key.into_owned()),
                },
            },
        }
    }
    if rec.fields.is_empty() {
        return Line::Skip(SkipKind::NoNumbers, "no numeric field".into());
    }
    Line::Metrics(rec)
}

/// Keys that name the step.
const STEP_KEYS: &[&str] = &["step", "_step", "global_step", "iteration", "train/global_step", "training/global_step", "trainer/global_step"];
/// Keys that name the step when none of `STEP_KEYS` does (an `iter` may count
/// micro-batches next to a `step`): nanoGPT's `iter`, LLaMA-Factory's
/// `current_steps`, fairseq's `num_updates`.
const OTHER_STEP_KEYS: &[&str] = &["iter", "current_steps", "num_updates", "global_steps"];

/// Keys whose object holds the metrics themselves.
const WRAPPERS: &[&str] = &["metrics", "data", "data_slice", "scalars"];

/// The numeric leaves of a nested object, named `prefix` + path, two levels deep.
fn flatten(prefix: &str, v: &Value, depth: usize, rec: &mut Record) {
    let Value::Object(map) = v else { return };
    for (k, inner) in map {
        let name = format!("{prefix}{k}");
        match inner {
            Value::Object(_) if depth < 2 => flatten(&format!("{name}/"), inner, depth + 1, rec),
            _ => match number(inner) {
                Some(x) => rec.fields.push((name, x)),
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
        assert_eq!(r.fields, vec![("loss".to_owned(), 1.2), ("lr".to_owned(), 3e-4)]);
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
        assert_eq!(rec(r#"{"step": 2, "data": {"actor/pg_loss": 0.1}}"#).fields, vec![("actor/pg_loss".to_owned(), 0.1)]);
        let r = rec(r#"{"time": "2025-01-01T00:00:00Z", "step": 3, "name": "reward_mean", "value": 0.7, "run_id": "a"}"#);
        assert_eq!((r.run.as_deref(), r.fields.clone()), (Some("a"), vec![("reward_mean".to_owned(), 0.7)]));
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
        assert_eq!((r.rank, r.fields.clone()), (Some(1), vec![("loss".to_owned(), 2.0)]));
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
}
