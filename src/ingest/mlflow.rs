//! MLflow's local file store (`mlruns/<experiment>/<run>/metrics/<name>`): one file
//! per metric, a line per logged value as `timestamp_ms value step`. A name with
//! `/` (`train/loss`) is a sub-folder of `metrics/`; the run's name is its
//! `tags/mlflow.runName`, else its id.
//!
//! Pure text in, records out: the files of one run are merged into one record per
//! step, as a run's metrics are read everywhere else. Finding and reading the
//! files is the caller's (`rlmon check` walks a folder for runs).
use std::collections::BTreeMap;

use super::{Line, Record, SkipKind};

/// One logged value of a metric file.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Value {
    time_s: f64,
    value: f64,
    step: u64,
}

/// A line of a metric file: `timestamp_ms value step` (the step may be missing in
/// files of old versions: 0).
fn value_line(line: &str) -> Result<Value, String> {
    let mut words = line.split_whitespace();
    let (Some(ts), Some(value)) = (words.next(), words.next()) else { return Err("expected `timestamp value step`".into()) };
    let time_ms: f64 = ts.parse().map_err(|_| format!("timestamp `{ts}` is not a number"))?;
    let value = super::number_in_text(value).ok_or_else(|| format!("value `{value}` is not a number"))?;
    let step = match words.next() {
        None => 0,
        Some(s) => s.parse().map_err(|_| format!("step `{s}` is not a whole number"))?,
    };
    Ok(Value { time_s: time_ms / 1000.0, value, step })
}

/// How a metric file's values get their steps: as logged, except in a file whose
/// steps are all 0 so far (MLflow writes 0 when the script logs none), where the
/// order of logging numbers them.
#[derive(Debug, Clone, Default)]
pub struct FileSteps {
    count: u64,
    stepped: bool,
}

impl FileSteps {
    fn step_of(&mut self, logged: u64) -> u64 {
        self.stepped |= logged != 0;
        let step = if self.stepped { logged } else { self.count };
        self.count += 1;
        step
    }
}

/// One run's values gathered by step from its metric files, as they are read
/// (whole, or a few lines at a time while the run writes them).
#[derive(Debug, Default)]
pub struct RunMerge {
    files: BTreeMap<String, FileSteps>,
    steps: BTreeMap<u64, Record>,
    /// The newest step known at the last [`settled`](Self::settled) call.
    newest_before: Option<u64>,
    /// The last step given out by `settled`: a value for it or an earlier step
    /// comes too late to be shown.
    shown_through: Option<u64>,
}

impl RunMerge {
    /// One line of metric file `name`: a skip when it cannot be read.
    pub fn line(&mut self, name: &str, line: &str) -> Option<Line> {
        if line.trim().is_empty() {
            return None;
        }
        let v = match value_line(line) {
            Ok(v) => v,
            Err(why) => return Some(Line::Skip(SkipKind::Malformed, format!("{name}: {why}"))),
        };
        let step = match self.files.get_mut(name) {
            Some(f) => f.step_of(v.step),
            None => self.files.entry(name.to_owned()).or_default().step_of(v.step),
        };
        if self.shown_through.is_some_and(|shown| step <= shown) {
            return Some(Line::Skip(SkipKind::Late, format!("{name}: step {step} was logged after later steps were shown (`rlmon check` reads it in place)")));
        }
        let rec = self.steps.entry(step).or_insert_with(|| Record { step: Some(step), ..Default::default() });
        rec.time = Some(rec.time.map_or(v.time_s, |t| t.min(v.time_s)));
        // A value logged twice at one step: the later one stands.
        match rec.fields.iter_mut().find(|(n, _)| n == name) {
            Some(field) => field.1 = v.value,
            None => rec.fields.push((name.into(), v.value)),
        }
        None
    }

    /// The records of the steps before the newest one known at the last call, in
    /// step order. A run's files are written one after another and read one after
    /// another, so the newest step may still be filling, and a file read before
    /// another was written to may still get a value of an older step (an eval
    /// logged at step 100 just before the training loss of step 101): a step goes
    /// out one call after a newer one is seen.
    pub fn settled(&mut self) -> Vec<Line> {
        let Some(&newest) = self.steps.keys().next_back() else { return Vec::new() };
        let Some(cut) = self.newest_before.replace(newest) else { return Vec::new() };
        let kept = self.steps.split_off(&cut);
        let done = std::mem::replace(&mut self.steps, kept);
        if let Some(&last) = done.keys().next_back() {
            self.shown_through = Some(last);
        }
        done.into_values().map(Line::Metrics).collect()
    }

    /// Every record left, in step order (the files are read to their end).
    pub fn finish(&mut self) -> Vec<Line> {
        std::mem::take(&mut self.steps).into_values().map(Line::Metrics).collect()
    }
}

/// The records of one run from its metric files `(name, text)` read whole: one
/// record per step, in step order, holding every metric logged at that step.
/// Lines that cannot be read come first, as skips.
pub fn run_records(files: &[(String, String)]) -> Vec<Line> {
    let mut merge = RunMerge::default();
    let skips: Vec<Line> = files.iter().flat_map(|(name, text)| text.lines().filter_map(|l| merge.line(name, l)).collect::<Vec<_>>()).collect();
    skips.into_iter().chain(merge.finish()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::catalog;

    fn metrics(lines: &[Line]) -> Vec<(Option<u64>, Vec<(String, f64)>)> {
        lines.iter().filter_map(|l| if let Line::Metrics(r) = l { Some((r.step, r.fields.iter().map(|(n, v)| (n.to_string(), *v)).collect())) } else { None }).collect()
    }

    #[test]
    fn files_of_one_run_merge_into_one_record_per_step() {
        let files = vec![
            (catalog::LOSS.to_owned(), "1700000000000 2.5 0\n1700000001000 2.25 1\n1700000002000 NaN 2\n".to_owned()),
            (catalog::LR.to_owned(), "1700000000000 0.001 0\n1700000002000 0.0005 2\n".to_owned()),
        ];
        let lines = run_records(&files);
        let got = metrics(&lines);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], (Some(0), vec![(catalog::LOSS.to_owned(), 2.5), (catalog::LR.to_owned(), 0.001)]));
        assert_eq!(got[1], (Some(1), vec![(catalog::LOSS.to_owned(), 2.25)]));
        assert!(got[2].1[0].1.is_nan(), "NaN kept: the detectors want it");
        let Line::Metrics(first) = &lines[0] else { panic!() };
        assert_eq!(first.time, Some(1_700_000_000.0));
    }

    #[test]
    fn read_live_a_step_goes_out_once_a_newer_one_is_seen() {
        let mut merge = RunMerge::default();
        assert_eq!(merge.line(catalog::LOSS, "1 2.5 0"), None);
        assert_eq!(merge.line(catalog::LOSS, "2 2.4 1"), None);
        assert!(merge.settled().is_empty(), "step 0 may still get a value from a file not read yet");
        // The eval file, read after the loss file, gets step 0's value late.
        assert_eq!(merge.line(catalog::VAL_LOSS, "1 2.7 0"), None);
        let out = metrics(&merge.settled());
        assert_eq!(out, [(Some(0), vec![(catalog::LOSS.to_owned(), 2.5), (catalog::VAL_LOSS.to_owned(), 2.7)])], "step 1 may still be filling");
        merge.line(catalog::LR, "2 0.001 1");
        merge.line(catalog::LR, "3 0.001 2");
        assert!(merge.settled().is_empty(), "step 1 was the newest at the last call");
        let out = metrics(&merge.settled());
        assert_eq!(out, [(Some(1), vec![(catalog::LOSS.to_owned(), 2.4), (catalog::LR.to_owned(), 0.001)])]);
        // Later than that, a value of a step shown is named, not a step back (which
        // would read as a resume and drop the steps after it).
        assert!(matches!(merge.line(catalog::VAL_LOSS, "4 2.6 1"), Some(Line::Skip(SkipKind::Late, m)) if m.contains("step 1")));
        assert_eq!(metrics(&merge.finish()).len(), 1, "the newest at the end");
        assert!(merge.settled().is_empty());
    }

    #[test]
    fn a_run_logged_without_steps_is_numbered_by_order_and_bad_lines_are_named() {
        let files = vec![(catalog::LOSS.to_owned(), "1 3.0 0\n2 2.0 0\nnot a line\n3 1.0 0\n".to_owned())];
        let lines = run_records(&files);
        assert!(matches!(&lines[0], Line::Skip(SkipKind::Malformed, why) if why.starts_with("loss: ")), "{lines:?}");
        let got = metrics(&lines);
        assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), [Some(0), Some(1), Some(2)]);
        assert_eq!(got[2].1, vec![(catalog::LOSS.to_owned(), 1.0)]);
    }
}
