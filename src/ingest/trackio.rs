//! trackio projects: one SQLite database per project (`TRACKIO_DIR/<project>.db`),
//! whose `metrics` table holds a row per logged step (`run_name`, `step`,
//! `timestamp`, and the step's metrics as one JSON object), `configs` each run's
//! config as JSON, and `alerts` what the script raised with `trackio.alert`.
//!
//! Pure text in, records out: the rows themselves are read by the caller
//! (`workload::command::trackio_db`).
use std::collections::BTreeMap;

use super::{Line, Record, SkipKind};
use crate::health::Severity;

/// A row's `timestamp` (ISO 8601 with its offset, as trackio writes it) in
/// seconds since the epoch.
pub fn time_of(timestamp: &str) -> Option<f64> {
    let t = chrono::DateTime::parse_from_rfc3339(timestamp.trim()).ok()?;
    Some(t.timestamp() as f64 + f64::from(t.timestamp_subsec_nanos()) * 1e-9)
}

/// One row of the `metrics` table as a record of run `run`: its numbers (and the
/// `"NaN"`, `"Infinity"` strings trackio writes for non-finite values) are its
/// fields; strings, media and tables are ignored by name; `_` keys are trackio's own.
pub fn metrics_row(run: &str, step: i64, timestamp: &str, metrics: &[u8]) -> Line {
    let object = match serde_json::from_slice::<serde_json::Value>(metrics) {
        Ok(serde_json::Value::Object(map)) => map,
        Ok(_) => return Line::Skip(SkipKind::Malformed, format!("run {run} step {step}: metrics are not a JSON object")),
        Err(e) => return Line::Skip(SkipKind::Malformed, format!("run {run} step {step}: metrics are not JSON: {e}")),
    };
    let mut rec = Record { run: Some(run.to_owned()), step: u64::try_from(step).ok(), time: time_of(timestamp), ..Default::default() };
    for (key, value) in object {
        if key.starts_with('_') {
            continue;
        }
        let number = match &value {
            serde_json::Value::Number(n) => n.as_f64(),
            serde_json::Value::String(s) => super::number_in_text(s),
            _ => None,
        };
        match number {
            Some(v) => rec.fields.push((key.into(), v)),
            None => rec.ignored.push(key),
        }
    }
    if rec.fields.is_empty() {
        return Line::Skip(SkipKind::NoNumbers, format!("run {run} step {step}: no numeric value"));
    }
    Line::Metrics(rec)
}

/// A run's config row, flattened (`model.d`), without trackio's own `_` keys.
pub fn config(json: &[u8]) -> BTreeMap<String, String> {
    fn walk(key: String, v: &serde_json::Value, out: &mut BTreeMap<String, String>, depth: usize) {
        match v {
            serde_json::Value::Object(map) if depth < 8 => {
                for (k, v) in map {
                    walk(if key.is_empty() { k.clone() } else { format!("{key}.{k}") }, v, out, depth + 1);
                }
            }
            v => {
                out.insert(key, v.to_string());
            }
        }
    }
    let mut out = BTreeMap::new();
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_slice::<serde_json::Value>(json) {
        for (k, v) in map.iter().filter(|(k, _)| !k.starts_with('_')) {
            walk(k.clone(), v, &mut out, 1);
        }
    }
    out
}

/// An alert's level (`info`, `warn`, `error`) as a severity.
pub fn severity(level: &str) -> Severity {
    match level.to_ascii_lowercase().as_str() {
        "info" => Severity::Info,
        "error" => Severity::Critical,
        _ => Severity::Warn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metrics_row_reads_as_a_record() {
        let Line::Metrics(r) = metrics_row("run-a", 10, "2026-11-27T16:00:29.5+00:00", br#"{"train/loss":"NaN","lr":0.001,"sample":{"_type":"image"},"_ts":1}"#) else { panic!() };
        assert_eq!((r.run.as_deref(), r.step), (Some("run-a"), Some(10)));
        let get = |n: &str| r.fields.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert!(get("train/loss").is_some_and(f64::is_nan));
        assert_eq!(get("lr"), Some(0.001));
        assert_eq!(r.ignored, ["sample"]);
        assert_eq!(r.time, Some(1_795_795_229.5));
        assert!(matches!(metrics_row("a", 1, "", b"[1]"), Line::Skip(SkipKind::Malformed, _)));
        assert!(matches!(metrics_row("a", 1, "", b"{not json"), Line::Skip(SkipKind::Malformed, _)));
        assert!(matches!(metrics_row("a", 1, "", br#"{"note":"hi"}"#), Line::Skip(SkipKind::NoNumbers, _)));
    }

    #[test]
    fn configs_and_levels() {
        let c = config(br#"{"lr":0.001,"model":{"d":64},"_Username":null}"#);
        assert_eq!(c.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>(), [("lr", "0.001"), ("model.d", "64")]);
        assert_eq!((severity("ERROR"), severity("info"), severity("warn")), (Severity::Critical, Severity::Info, Severity::Warn));
        assert_eq!(time_of("nonsense"), None);
    }
}
