//! Hugging Face Trainer logs: `trainer_state.json` (its `log_history`, one dict per
//! logging step, evaluation dicts at the same step merging with them), and the dicts
//! the Trainer prints on stdout (`{'loss': 2.1, 'grad_norm': 0.4, 'learning_rate':
//! 5e-05, 'epoch': 0.1}`, Python's repr, with no step: each counts on).
use serde_json::Value;

use super::{jsonl, number_in_text, progress_step, Line, Record, SkipKind};

/// The end-of-training summary (`train_runtime`, a mean `train_loss`) is not a step.
const SUMMARY_KEY: &str = "train_runtime";

/// The records of a `trainer_state.json` document.
pub fn trainer_state(text: &str) -> Result<Vec<Line>, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(history) = doc.get("log_history").and_then(Value::as_array) else {
        return Err("no `log_history` list: not a Hugging Face trainer_state.json".into());
    };
    Ok(history
        .iter()
        .map(|entry| match entry {
            // Every finished run has one: known and left out, not a line skipped.
            Value::Object(map) if map.contains_key(SUMMARY_KEY) => Line::Blank,
            Value::Object(map) => jsonl::object(map.clone()),
            _ => Line::Skip(SkipKind::Malformed, "a log_history entry that is not an object".into()),
        })
        .collect())
}

/// A dict of the Trainer's printed after a logger's prefix (`2024-05-01 12:00:00 -
/// INFO - {'loss': 2.1, ...}`): the dict alone.
pub fn after_prefix(line: &str) -> Option<&str> {
    let line = line.trim();
    let at = line.find("{'").filter(|&at| at > 0)?;
    (line.ends_with('}') && !line[..at].contains(['{', '}'])).then(|| &line[at..])
}

/// One printed line: a dict of the Trainer's, or other output.
pub fn parse_printed(line: &str) -> Line {
    let line = line.trim();
    let line = after_prefix(line).unwrap_or(line);
    let Some(inner) = line.strip_prefix('{').and_then(|l| l.strip_suffix('}')) else { return Line::Text };
    if !inner.trim_start().starts_with('\'') {
        // A JSON object printed by a callback reads as JSONL.
        return if inner.trim_start().starts_with('"') { jsonl::parse(line) } else { Line::Text };
    }
    let mut rec = Record::default();
    for (key, value) in entries(inner) {
        if key == SUMMARY_KEY {
            return Line::Text;
        }
        match python_number(value) {
            Some(v) if key == "step" => rec.step = (v.is_finite() && v >= 0.0 && v < 2f64.powi(63)).then_some(v as u64),
            Some(v) => rec.fields.push((key.into(), v)),
            // A step given as progress (`'global_step/max_steps': '70/100'`).
            None => match python_text(value).and_then(|t| progress_step(key, t)) {
                Some(step) if rec.step.is_none() => rec.step = Some(step),
                _ => rec.ignored.push(key.to_owned()),
            },
        }
    }
    if rec.fields.is_empty() {
        return Line::Skip(SkipKind::NoNumbers, "a printed dict without numbers".into());
    }
    // An evaluation's dict (`{'eval_loss': 1.2, ..., 'epoch': 0.5}`) is printed after
    // the training step it evaluates: it belongs to that step, not to a new one.
    rec.continues = rec.step.is_none() && rec.fields.iter().any(|(k, _)| k.starts_with("eval_")) && rec.fields.iter().all(|(k, _)| k.starts_with("eval_") || *k == "epoch");
    Line::Metrics(rec)
}

/// `'key': value` pairs of a dict's inside, split at top-level commas.
fn entries(inner: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0usize);
    let mut pieces = Vec::new();
    for (i, c) in inner.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                pieces.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    pieces.push(&inner[start..]);
    for piece in pieces {
        let Some((key, value)) = piece.split_once(':') else { continue };
        let key = key.trim().trim_matches(|c| c == '\'' || c == '"');
        if !key.is_empty() {
            out.push((key, value.trim()));
        }
    }
    out
}

/// A Python value's number: `2.5`, `nan`, `inf`, and wrapped ones such as
/// `tensor(2.5, device='cuda:0')` or `np.float64(2.5)`.
/// A Python string literal's text (`'70/100'`).
fn python_text(value: &str) -> Option<&str> {
    let v = value.trim();
    v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')).or_else(|| v.strip_prefix('"').and_then(|v| v.strip_suffix('"')))
}

fn python_number(value: &str) -> Option<f64> {
    let v = value.trim();
    if let Some(x) = number_in_text(v) {
        return Some(x);
    }
    let open = v.find('(')?;
    let args = v[open + 1..].strip_suffix(')')?;
    number_in_text(args.split(',').next()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(l: Line) -> Record {
        match l {
            Line::Metrics(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_step_given_as_progress_numbers_the_dict() {
        // ms-swift prints its step as `done/all` text.
        let r = rec(parse_printed("{'loss': 1.23, 'grad_norm': 0.5, 'epoch': 0.7, 'global_step/max_steps': '70/100', 'percentage': '70.00%', 'elapsed_time': '3m'}"));
        assert_eq!(r.step, Some(70));
        assert_eq!(r.fields.iter().map(|(k, _)| k.as_ref()).collect::<Vec<_>>(), ["loss", "grad_norm", "epoch"]);
        assert_eq!(r.ignored, ["percentage", "elapsed_time"]);
        // Progress under a name that is not a counter's, or past its total, is not a step.
        for line in ["{'loss': 1.0, 'done/all': '70/100'}", "{'loss': 1.0, 'step': '170/100'}", "{'loss': 1.0, 'step': '7.5/100'}"] {
            let r = rec(parse_printed(line));
            assert_eq!((r.step, r.ignored.len()), (None, 1), "{line}");
        }
    }

    #[test]
    fn printed_dicts_are_read() {
        let r = rec(parse_printed("{'loss': 2.1, 'grad_norm': tensor(0.4, device='cuda:0'), 'learning_rate': 5e-05, 'epoch': np.float64(0.1)}"));
        assert_eq!(r.step, None);
        assert_eq!(r.fields, vec![("loss".into(), 2.1), ("grad_norm".into(), 0.4), ("learning_rate".into(), 5e-05), ("epoch".into(), 0.1)]);
        assert_eq!(parse_printed("  0%|          | 0/100 [00:00<?, ?it/s]"), Line::Text);
        assert_eq!(parse_printed("{'train_runtime': 12.3, 'train_loss': 2.2, 'epoch': 1.0}"), Line::Text, "the summary is not a step");
        // After a logger's or launcher's prefix, the same.
        assert_eq!(rec(parse_printed("2024-05-01 12:00:00,123 - INFO - {'loss': 2.5, 'epoch': 0.1}")).fields, vec![("loss".into(), 2.5), ("epoch".into(), 0.1)]);
        assert_eq!(parse_printed("[INFO] {'train_runtime': 12.3, 'train_loss': 2.2}"), Line::Text);
        assert_eq!(parse_printed("config {'a': {'loss': 1}} done"), Line::Text, "not a dict that ends the line");
        // An evaluation's dict belongs to the training step printed before it.
        assert!(rec(parse_printed("{'eval_loss': 1.28, 'eval_runtime': 12.3, 'epoch': 0.03}")).continues);
        assert!(!rec(parse_printed("{'loss': 1.28, 'eval_loss': 1.3, 'epoch': 0.03}")).continues);
        let r = rec(parse_printed("{'eval_loss': nan, 'eval_note': 'x', 'step': 40}"));
        assert!(r.fields[0].1.is_nan());
        assert_eq!((r.step, r.ignored.clone()), (Some(40), vec!["eval_note".to_owned()]));
    }

    #[test]
    fn trainer_state_reads_its_log_history() {
        let text = r#"{"global_step": 20, "log_history": [
            {"epoch": 0.5, "grad_norm": 1.5, "learning_rate": 4e-05, "loss": 2.3, "step": 10},
            {"epoch": 0.5, "eval_loss": 2.4, "eval_runtime": 1.0, "step": 10},
            {"epoch": 1.0, "loss": 2.0, "step": 20},
            {"epoch": 1.0, "step": 20, "total_flos": 1e12, "train_loss": 2.15, "train_runtime": 30.0}
        ]}"#;
        let lines = trainer_state(text).unwrap();
        assert_eq!(lines.len(), 4);
        assert_eq!(rec(lines[0].clone()).step, Some(10));
        assert_eq!(lines[3], Line::Blank, "the end-of-training summary is no step, and no skipped line either");
        assert!(trainer_state("{\"a\": 1}").unwrap_err().contains("log_history"));
    }
}
