//! Metrics files written whole as one JSON document rather than a line per step:
//! Sacred's `metrics.json` (`{"train.loss": {"steps": [..], "values": [..],
//! "timestamps": [..]}}`), a Keras `History.history` dump (`{"loss": [..],
//! "val_loss": [..]}`: the i-th value is epoch i's), and a JSON list of records
//! (`[{"step": 1, "loss": 2.3}, ...]`). Each becomes one record per step, read as a
//! JSONL line holding the same fields would be.
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{jsonl, Line, SkipKind};

/// Columns whose values number the steps of the others, when a dump holds one.
const STEP_COLUMNS: &[&str] = &["step", "steps", "global_step", "epoch", "epochs"];

/// The records of a whole-file JSON document, in step order.
pub fn records(text: &str) -> Result<Vec<Line>, String> {
    let text = jsonl::quote_nonfinite_if_any(text);
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    match doc {
        Value::Array(items) => Ok(items
            .into_iter()
            .map(|item| match item {
                Value::Object(map) => jsonl::object(map),
                _ => Line::Skip(SkipKind::Malformed, "a list item that is not an object".into()),
            })
            .collect()),
        Value::Object(map) => columns(map),
        _ => Err("not a JSON object or list of objects".into()),
    }
}

/// One metric's values and the steps they were logged at (`None`: by position).
struct Column {
    steps: Option<Vec<Value>>,
    values: Vec<Value>,
}

/// What a document's value under a metric's name holds, if it is a column.
fn column(value: Value) -> Option<Column> {
    match value {
        // Sacred: `{"steps": [..], "values": [..], "timestamps": [..]}`.
        Value::Object(mut fields) => {
            let Some(Value::Array(values)) = fields.remove("values") else { return None };
            let steps = match fields.remove("steps") {
                Some(Value::Array(steps)) if steps.len() == values.len() => Some(steps),
                _ => None,
            };
            Some(Column { steps, values })
        }
        // Keras' history: a value per epoch.
        Value::Array(values) if values.iter().all(|v| matches!(v, Value::Number(_) | Value::String(_) | Value::Null)) => Some(Column { steps: None, values }),
        _ => None,
    }
}

/// The records of an object of metric columns, or an error when it holds none.
fn columns(map: Map<String, Value>) -> Result<Vec<Line>, String> {
    let mut named: Vec<(String, Column)> = map.into_iter().filter_map(|(name, v)| column(v).map(|c| (name, c))).collect();
    if named.is_empty() {
        return Err("a JSON object without metric columns (neither `name: [values]` nor `name: {steps, values}`)".into());
    }
    // A column of step numbers (`"epoch": [1, 2, 3]`) numbers the columns logged by position.
    let shared_steps = STEP_COLUMNS.iter().find_map(|s| named.iter().position(|(n, c)| n == s && c.steps.is_none())).map(|i| named.remove(i).1.values);
    let as_step = |v: &Value| v.as_f64().and_then(super::whole_step);
    let mut by_step: BTreeMap<u64, Map<String, Value>> = BTreeMap::new();
    for (name, col) in named {
        for (i, value) in col.values.into_iter().enumerate() {
            let step = match (&col.steps, &shared_steps) {
                (Some(steps), _) => as_step(&steps[i]),
                (None, Some(steps)) => steps.get(i).and_then(as_step),
                (None, None) => Some(i as u64),
            };
            if let (Some(step), false) = (step, value.is_null()) {
                by_step.entry(step).or_default().insert(name.clone(), value);
            }
        }
    }
    Ok(by_step
        .into_iter()
        .map(|(step, mut fields)| {
            fields.insert("step".into(), Value::from(step));
            jsonl::object(fields)
        })
        .collect())
}

/// Whether a file's start reads as a document [`records`] can read: a JSON list,
/// a pretty-printed object (`{` alone on the first line), or a `.json` file whose
/// single-line object holds a metric column.
pub fn looks_like(name: &str, head: &str) -> bool {
    let first = head.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    // (A logger's `[rank0]:` or `[INFO]` prefix is no list: a list's first item is.)
    if first == "{" || first.strip_prefix('[').is_some_and(|rest| rest.is_empty() || rest.trim_start().starts_with('{')) {
        return true;
    }
    if !name.ends_with(".json") || !first.starts_with('{') {
        return false;
    }
    let text = jsonl::quote_nonfinite_if_any(first);
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => map.into_iter().any(|(_, v)| matches!(&v, Value::Array(a) if !a.is_empty()) && column(v).is_some()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps_and(lines: &[Line], name: &str) -> Vec<(Option<u64>, Option<f64>)> {
        lines
            .iter()
            .filter_map(|l| match l {
                Line::Metrics(r) => Some((r.step, r.fields.iter().find(|(n, _)| n == name).map(|(_, v)| *v))),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn sacreds_metrics_are_read_at_their_steps() {
        let doc = r#"{
  "train.loss": {"steps": [0, 10, 20], "timestamps": ["2021-01-01T00:00:00.000000", "2021-01-01T00:00:01.000000", "2021-01-01T00:00:02.000000"], "values": [2.3, 2.1, NaN]},
  "val.accuracy": {"steps": [10], "timestamps": ["2021-01-01T00:00:01.000000"], "values": [0.4]}
}"#;
        let lines = records(doc).unwrap();
        assert_eq!(lines.len(), 3);
        let loss = steps_and(&lines, "train.loss");
        assert_eq!((loss[0], loss[1]), ((Some(0), Some(2.3)), (Some(10), Some(2.1))));
        assert!(loss[2].0 == Some(20) && loss[2].1.is_some_and(f64::is_nan));
        assert_eq!(steps_and(&lines, "val.accuracy")[1], (Some(10), Some(0.4)));
        assert!(looks_like("metrics.json", doc));
    }

    #[test]
    fn a_keras_history_is_a_value_per_epoch() {
        let doc = r#"{"loss": [0.51, 0.31, 0.24], "val_loss": [0.31, 0.26, null], "accuracy": [0.85, 0.91, 0.93]}"#;
        assert!(looks_like("history.json", doc));
        let lines = records(doc).unwrap();
        assert_eq!(steps_and(&lines, "val_loss"), [(Some(0), Some(0.31)), (Some(1), Some(0.26)), (Some(2), None)]);
        // A column of epochs numbers the others.
        let lines = records(r#"{"epoch": [5, 6], "loss": [0.5, 0.4]}"#).unwrap();
        assert_eq!(steps_and(&lines, "loss"), [(Some(5), Some(0.5)), (Some(6), Some(0.4))]);
    }

    #[test]
    fn a_list_of_records_is_read_record_by_record() {
        let doc = "[\n  {\"step\": 1, \"loss\": 2.3},\n  {\"step\": 2, \"loss\": Infinity},\n  3\n]";
        assert!(looks_like("log.json", doc));
        let lines = records(doc).unwrap();
        assert_eq!(steps_and(&lines, "loss")[0], (Some(1), Some(2.3)));
        assert!(matches!(lines[2], Line::Skip(SkipKind::Malformed, _)));
    }

    #[test]
    fn other_json_is_no_metrics_document() {
        // A line of a JSONL log, a config.
        assert!(!looks_like("log.json", r#"{"step": 1, "loss": 2.3}"#));
        assert!(!looks_like("metrics.jsonl", r#"{"loss": [1, 2]}"#));
        assert!(!looks_like("train.log", "[rank0]:[titan] step: 1 loss: 2.0"));
        assert!(records(r#"{"model": {"layers": 2}, "name": "x"}"#).is_err());
        assert!(records("{\"a\": [1, 2]} trailing").is_err());
    }
}
