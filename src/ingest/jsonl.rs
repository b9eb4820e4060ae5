//! One JSON object per line: `step`, numeric fields under canonical names or their
//! aliases, an optional `run`/`run_id` that splits streams and an optional
//! `time`/`timestamp`. Python's json module writes NaN, Infinity and -Infinity as
//! bare tokens, and some loggers write numbers as strings (`"loss": "1.2"`): both
//! are read as numbers. Other strings, booleans and objects are listed as ignored.
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
    let value: Value = match serde_json::from_str(&quote_nonfinite(line)) {
        Ok(v) => v,
        Err(e) => return Line::Skip(SkipKind::Malformed, format!("not JSON: {e}")),
    };
    let Value::Object(map) = value else { return Line::Skip(SkipKind::Malformed, "not a JSON object".into()) };
    object(map)
}

/// One JSON object's record: its step, run, time and numeric fields.
pub fn object(map: serde_json::Map<String, Value>) -> Line {
    let mut rec = Record::default();
    // One metric per line (`{"step": 3, "name": "reward_mean", "value": 0.5}`, as
    // RLDK's event writer emits): the pair is the metric.
    let long = match (map.get("name"), map.get("value").and_then(number)) {
        (Some(Value::String(name)), Some(value)) => Some((name.clone(), value)),
        _ => None,
    };
    if let Some(field) = long.clone() {
        rec.fields.push(field);
    }
    for (key, v) in map {
        if long.is_some() && (key == "name" || key == "value") {
            continue;
        }
        match key.as_str() {
            "run" | "run_id" => {
                rec.run = match v {
                    Value::String(s) => Some(s),
                    Value::Number(n) => Some(n.to_string()),
                    _ => return Line::Skip(SkipKind::Malformed, format!("`{key}` must be a string")),
                }
            }
            // A global rank wins over a node-local one (which repeats across nodes).
            "rank" | "global_rank" | "local_rank" => {
                let r = number(&v).filter(|r| r.is_finite() && *r >= 0.0 && r.fract() == 0.0 && *r <= f64::from(u32::MAX));
                match r {
                    Some(r) if key != "local_rank" || rec.rank.is_none() => rec.rank = Some(r as u32),
                    Some(_) => {}
                    None => return Line::Skip(SkipKind::Malformed, format!("`{key}` must be a non-negative integer, got {}", short(&v))),
                }
            }
            "step" | "_step" | "global_step" | "iteration" | "train/global_step" | "training/global_step" => {
                let s = number(&v).filter(|s| s.is_finite() && *s >= 0.0 && s.fract() == 0.0 && *s < 2f64.powi(63));
                match s {
                    Some(s) => rec.step = Some(s as u64),
                    None => return Line::Skip(SkipKind::Malformed, format!("`{key}` must be a non-negative integer, got {}", short(&v))),
                }
            }
            "time" | "timestamp" | "time_s" | "_timestamp" => rec.time = number(&v).filter(|t| t.is_finite()),
            // A wrapper of the metrics (RLDK's `metrics`/`data_slice`, verl's file
            // logger's `data`): its fields as if at the top; other objects' fields
            // under `key/`.
            _ if v.is_object() => {
                let prefix = if WRAPPERS.contains(&key.as_str()) { String::new() } else { format!("{key}/") };
                flatten(&prefix, &v, 1, &mut rec);
            }
            _ => match &v {
                Value::Array(items) => {
                    let before = rec.fields.len();
                    for (i, item) in items.iter().enumerate() {
                        if let Some(x) = number(item) {
                            rec.fields.push((format!("{key}/E{i}"), x));
                        }
                    }
                    if rec.fields.len() == before {
                        rec.ignored.push(key);
                    }
                }
                _ => match number(&v) {
                    Some(x) => rec.fields.push((key, x)),
                    None => rec.ignored.push(key),
                },
            },
        }
    }
    if rec.fields.is_empty() {
        return Line::Skip(SkipKind::NoNumbers, "no numeric field".into());
    }
    Line::Metrics(rec)
}

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
        let r = rec(r#"{"step": 1, "rank": 1, "loss": 2.0}"#);
        assert_eq!((r.rank, r.fields.clone()), (Some(1), vec![("loss".to_owned(), 2.0)]));
        assert_eq!(rec(r#"{"step": 1, "global_rank": "3", "local_rank": 1, "loss": 2.0}"#).rank, Some(3), "the global rank wins");
        assert_eq!(rec(r#"{"step": 1, "local_rank": 1, "loss": 2.0}"#).rank, Some(1));
        assert!(skip(r#"{"step": 1, "rank": -2, "loss": 1}"#).contains("non-negative integer"));
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
