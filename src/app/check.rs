//! `rlmon check FILE`: the live detectors over a JSONL metrics log, fed through the
//! same hub as a live session, or over a recorded session (snapshot or journal),
//! replayed with its own detector settings. Exit 0 when no alert reaches --fail-on,
//! 1 when one does, 2 when the file cannot be read or holds no metrics.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::cli::{CheckArgs, FailOn};
use crate::error::{Result, RlmonError, EXIT_FAILURE};
use crate::health::{Alert, HealthConfig, Severity};
use crate::ingest::jsonl::{parse_line, Normalizer};
use crate::session::{Event, Hub, RunRecord, SessionState};

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub runs: Vec<CheckedRun>,
    pub alerts: Vec<Alert>,
    /// Metric lines read.
    pub points: u64,
    /// Lines that were not metric objects, skipped.
    pub skipped_lines: u64,
    /// The first skipped line and why, for the text report.
    #[serde(skip)]
    pub first_skipped: Option<(usize, String)>,
}

#[derive(Debug, Serialize)]
pub struct CheckedRun {
    pub name: String,
    pub points: u64,
    pub last_step: u64,
    /// The worst alert severity of the run, or null.
    pub worst: Option<Severity>,
    pub alerts: usize,
}

/// Analyses log text; `default_run` names lines without a `run` field.
pub fn analyse(text: &[u8], default_run: &str) -> CheckReport {
    let mut hub = Hub::new(SessionState::new(default_run.to_owned(), Vec::new()));
    let mut streams: BTreeMap<String, (usize, Normalizer, u64)> = BTreeMap::new();
    let (mut points, mut skipped, mut first_skipped) = (0u64, 0u64, None);
    for (i, raw) in text.split(|b| *b == b'\n').enumerate() {
        let parsed = std::str::from_utf8(raw).map_err(|_| "not UTF-8 text".to_owned()).and_then(parse_line);
        let rec = match parsed {
            Ok(Some(rec)) => rec,
            Ok(None) => continue,
            Err(why) => {
                skipped += 1;
                first_skipped.get_or_insert((i + 1, why));
                continue;
            }
        };
        let name = rec.run.clone().unwrap_or_else(|| default_run.to_owned());
        let (run, norm, count) = streams.entry(name.clone()).or_insert_with(|| {
            let id = hub.add_run(RunRecord::new(name.clone(), "log".into(), "-".into(), 0), &HealthConfig::default());
            (id, Normalizer::default(), 0)
        });
        let (step, time_s, values) = norm.point(rec);
        *count += 1;
        points += 1;
        hub.apply(Event::Metrics { run: *run, step, time_s, values }, time_s);
    }
    let state = hub.state;
    let runs = state
        .runs
        .iter()
        .map(|r| CheckedRun {
            name: r.name.clone(),
            points: streams.get(&r.name).map_or(0, |s| s.2),
            last_step: r.step,
            worst: r.worst_alert(&state.alerts, |_| true),
            alerts: r.alerts.len(),
        })
        .collect();
    CheckReport { runs, alerts: state.alerts, points, skipped_lines: skipped, first_skipped }
}

impl CheckReport {
    pub fn worst(&self) -> Option<Severity> {
        self.alerts.iter().map(|a| a.severity).max()
    }

    pub fn to_text(&self, path: &Path) -> String {
        let mut out = format!("{}: {} points, {} run(s)", path.display(), self.points, self.runs.len());
        if self.skipped_lines > 0 {
            let _ = write!(out, ", {} line(s) skipped", self.skipped_lines);
            if let Some((line, why)) = &self.first_skipped {
                let _ = write!(out, " (first: line {line}: {why})");
            }
        }
        out.push('\n');
        for r in &self.runs {
            let worst = r.worst.map_or("ok", Severity::as_str);
            let _ = writeln!(out, "  {:<20} {:>7} points, last step {:>7}, {} alert(s), worst: {worst}", r.name, r.points, r.last_step, r.alerts);
        }
        for a in &self.alerts {
            let _ = writeln!(out, "  {:<8} {:<20} step {:>7}  {:<21} {}", a.severity.as_str(), a.run, a.step, a.kind.as_str(), a.message);
        }
        out
    }
}

/// The report of a recorded session: its runs replayed through the hub (alerts as
/// live, baseline alerts included); a run's points are its logged steps.
pub fn analyse_recording(rec: &crate::record::Recording) -> CheckReport {
    let state = crate::record::replayed_state(rec);
    let mut steps = vec![0u64; state.runs.len()];
    for (_, e) in rec.events() {
        if let Event::Metrics { run, .. } = e {
            steps[run] += 1;
        }
    }
    let runs = state
        .runs
        .iter()
        .zip(&steps)
        .map(|(r, n)| CheckedRun { name: r.name.clone(), points: *n, last_step: r.step, worst: r.worst_alert(&state.alerts, |_| true), alerts: r.alerts.len() })
        .collect();
    CheckReport { runs, alerts: state.alerts, points: steps.iter().sum(), skipped_lines: 0, first_skipped: None }
}

pub fn check(args: CheckArgs) -> Result<u8> {
    let path = &args.file;
    let report = if path.is_dir() || crate::record::snapshot::looks_like_parquet(path) {
        analyse_recording(&crate::record::load(path)?)
    } else {
        let text = std::fs::read(path).map_err(|e| RlmonError::Usage(format!("{}: cannot read: {e}", path.display())))?;
        let default_run = path.file_stem().map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned());
        analyse(&text, &default_run)
    };
    if report.points == 0 {
        let why = match &report.first_skipped {
            Some((line, why)) => format!("{}:{line}: {why} (no metric lines in the file)", path.display()),
            None => format!("{}: no metric lines (expected one JSON object per line)", path.display()),
        };
        return Err(RlmonError::Usage(why));
    }
    if args.json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(&mut out, &report).map_err(anyhow::Error::from)?;
        writeln!(out).ok();
    } else {
        crate::out!("{}", report.to_text(path));
    }
    let threshold = match args.fail_on {
        FailOn::Warn => Severity::Warn,
        FailOn::Critical => Severity::Critical,
    };
    Ok(if report.worst().is_some_and(|w| w >= threshold) { EXIT_FAILURE } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_split_by_run_and_bad_lines_are_counted() {
        let mut log = String::new();
        for step in 1..=30 {
            log.push_str(&format!("{{\"run\": \"a\", \"step\": {step}, \"loss\": 2.0}}\n"));
            let loss = if step == 20 { "NaN".to_owned() } else { "2.0".to_owned() };
            log.push_str(&format!("{{\"run_id\": \"b\", \"step\": {step}, \"train_loss\": {loss}}}\n"));
        }
        log.push_str("garbage\n");
        let r = analyse(log.as_bytes(), "x");
        assert_eq!((r.points, r.skipped_lines), (60, 1));
        assert_eq!(r.first_skipped.as_ref().unwrap().0, 61);
        assert_eq!(r.runs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(r.alerts.len(), 1);
        assert_eq!((r.alerts[0].run.as_str(), r.alerts[0].step), ("b", 20));
        assert_eq!(r.worst(), Some(Severity::Critical));
    }

    #[test]
    fn replicas_in_a_log_report_their_first_differing_step() {
        let mut log = String::new();
        for step in 1..=40 {
            let drift = if step >= 25 { 0.01 } else { 0.0 };
            log.push_str(&format!("{{\"run\": \"seed7#1\", \"step\": {step}, \"loss\": 2.0}}\n"));
            log.push_str(&format!("{{\"run\": \"seed7#2\", \"step\": {step}, \"loss\": {}}}\n", 2.0 + drift));
        }
        let r = analyse(log.as_bytes(), "x");
        let nd: Vec<&Alert> = r.alerts.iter().filter(|a| a.kind == crate::health::AlertKind::Nondeterminism).collect();
        assert_eq!(nd.len(), 1, "{:?}", r.alerts);
        assert_eq!((nd[0].run.as_str(), nd[0].step), ("seed7#2", 25));
    }
}
