//! One JSON object per line: `step`, numeric fields under canonical names or their
//! aliases, an optional `run`/`run_id` that splits streams and an optional
//! `time`/`timestamp`. Python's json module writes NaN, Infinity and -Infinity as
//! bare tokens: they are accepted. Lines that are not objects are the caller's to
//! count and skip.
use std::collections::BTreeMap;

use serde_json::Value;

use crate::metrics::catalog::{self, Conversion};
use crate::metrics::MetricName;

/// One parsed line, before aliases are resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub run: Option<String>,
    pub step: Option<u64>,
    pub time: Option<f64>,
    /// Numeric fields as written (vectors flattened to `name/E{i}`).
    pub fields: Vec<(String, f64)>,
}

const NONFINITE_TOKENS: [(&str, &str); 3] = [("-Infinity", "\"-Infinity\""), ("Infinity", "\"Infinity\""), ("NaN", "\"NaN\"")];

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
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

/// Parses one line; `Ok(None)` for a blank line, `Err` with the problem otherwise.
pub fn parse_line(line: &str) -> Result<Option<Record>, String> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(&quote_nonfinite(line)).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(map) = value else { return Err("not a JSON object".into()) };
    let mut rec = Record { run: None, step: None, time: None, fields: Vec::new() };
    for (key, v) in map {
        match key.as_str() {
            "run" | "run_id" => {
                rec.run = match v {
                    Value::String(s) => Some(s),
                    Value::Number(n) => Some(n.to_string()),
                    _ => return Err(format!("`{key}` must be a string")),
                }
            }
            "step" => {
                let s = number(&v).filter(|s| s.is_finite() && *s >= 0.0 && s.fract() == 0.0);
                rec.step = Some(s.ok_or_else(|| format!("`step` must be a non-negative integer, got {v}"))? as u64);
            }
            "time" | "timestamp" | "time_s" => rec.time = number(&v).filter(|t| t.is_finite()),
            _ => match &v {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Some(x) = number(item) {
                            rec.fields.push((format!("{key}/E{i}"), x));
                        }
                    }
                }
                _ => {
                    if let Some(x) = number(&v) {
                        rec.fields.push((key, x));
                    }
                }
            },
        }
    }
    Ok(Some(rec))
}

/// Turns one stream's records into canonical metric points: aliases renamed,
/// milliseconds scaled, cumulative counters differenced, missing steps counted
/// on, times made relative to the stream's first.
#[derive(Debug, Clone, Default)]
pub struct Normalizer {
    last_step: Option<u64>,
    first_time: Option<f64>,
    cumulative: BTreeMap<String, f64>,
}

impl Normalizer {
    /// (step, time_s, values) of a record.
    pub fn point(&mut self, rec: Record) -> (u64, f64, Vec<(MetricName, f64)>) {
        let step = rec.step.unwrap_or_else(|| self.last_step.map_or(0, |s| s + 1));
        self.last_step = Some(step);
        let time_s = match rec.time {
            Some(t) => t - *self.first_time.get_or_insert(t),
            None => 0.0,
        };
        let mut values: Vec<(MetricName, f64)> = Vec::with_capacity(rec.fields.len());
        let mut split_tokens = (None, None);
        for (name, v) in rec.fields {
            match catalog::conversion(&name) {
                Some(Conversion::Rename(c)) => values.push((MetricName::Borrowed(c), v)),
                Some(Conversion::Scale(c, f)) => values.push((MetricName::Borrowed(c), v * f)),
                Some(Conversion::Cumulative(c)) => {
                    if let Some(prev) = self.cumulative.insert(name.clone(), v) {
                        values.push((MetricName::Borrowed(c), v - prev));
                    }
                }
                None => match name.as_str() {
                    catalog::TOKENS_IN => split_tokens.0 = Some(v),
                    catalog::TOKENS_OUT => split_tokens.1 = Some(v),
                    _ => values.push((MetricName::Owned(name), v)),
                },
            }
        }
        if let (Some(a), Some(b)) = split_tokens {
            if !values.iter().any(|(n, _)| n == catalog::TOKENS) {
                values.push((MetricName::Borrowed(catalog::TOKENS), a + b));
            }
        }
        (step, time_s, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_nonfinite_tokens_are_numbers_and_strings_are_left_alone() {
        let r = parse_line(r#"{"step": 3, "loss": NaN, "grad_norm": Infinity, "kl": -Infinity, "note": "NaN here", "run": "a"}"#).unwrap().unwrap();
        assert_eq!(r.step, Some(3));
        assert_eq!(r.run.as_deref(), Some("a"));
        let get = |n: &str| r.fields.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert!(get("loss").unwrap().is_nan());
        assert_eq!(get("grad_norm"), Some(f64::INFINITY));
        assert_eq!(get("kl"), Some(f64::NEG_INFINITY));
        assert_eq!(get("note"), None);
    }

    #[test]
    fn malformed_lines_say_why() {
        assert!(parse_line("not json").unwrap_err().starts_with("not JSON"));
        assert_eq!(parse_line("[1, 2]").unwrap_err(), "not a JSON object");
        assert!(parse_line(r#"{"step": -1}"#).unwrap_err().contains("non-negative integer"));
        assert_eq!(parse_line("   ").unwrap(), None);
    }

    #[test]
    fn aliases_scales_and_cumulative_counters() {
        let mut n = Normalizer::default();
        let rec = |line: &str| parse_line(line).unwrap().unwrap();
        let (s, t, v) = n.point(rec(r#"{"step": 1, "timestamp": 100.0, "train/loss": 2.0, "wall_time_ms": 250, "num_tokens": 1000}"#));
        assert_eq!((s, t), (1, 0.0));
        assert_eq!(v, vec![("loss".into(), 2.0), ("step_time_s".into(), 0.25)]);
        let (s, t, v) = n.point(rec(r#"{"timestamp": 101.5, "num_tokens": 1600, "objective/kl": 0.1, "moe/L0/load": [0.5, 0.5]}"#));
        assert_eq!((s, t), (2, 1.5), "a missing step counts on");
        assert!(v.contains(&("tokens".into(), 600.0)));
        assert!(v.contains(&("kl".into(), 0.1)));
        assert!(v.contains(&("moe/L0/load/E1".into(), 0.5)));
    }
}
