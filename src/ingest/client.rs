//! A run folder written by rlmon's Python client (`rlmon.init`, `rlmon.log`,
//! `rlmon.alert`, `rlmon.finish`; python/rlmon/_run.py writes the same names): its
//! files, and the start, alert and finish records. Pure: the folder is looked at
//! by the callers (workload::client_run). The metrics file is plain rlmon JSONL.
use serde::Deserialize;

use crate::health::{Alert, AlertKind, Severity};

/// The start record; its presence makes a folder a client run.
pub const RUN_FILE: &str = "rlmon-run.json";
/// One JSON object per `log()`: `step`, `timestamp` and the numbers.
pub const METRICS_FILE: &str = "metrics.jsonl";
/// One JSON object per `alert()`.
pub const ALERTS_FILE: &str = "alerts.jsonl";
/// Written by `finish()` (or at the script's exit): how the run ended.
pub const FINISH_FILE: &str = "finish.json";
/// Where the client puts its runs unless `RLMON_DIR` (or `init(dir=...)`) says otherwise.
pub const DEFAULT_DIR: &str = "rlmon-runs";
/// The variable that moves the client's runs.
pub const DIR_ENV: &str = "RLMON_DIR";

/// What `rlmon-run.json` says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Start {
    pub name: String,
    #[serde(default)]
    pub project: Option<String>,
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub started_unix: Option<f64>,
}

/// Reads a start record.
pub fn start(text: &str) -> Result<Start, String> {
    serde_json::from_str(text).map_err(|e| format!("not an rlmon client start record: {e}"))
}

/// How the script ended: `finish.json`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Finish {
    /// `finished`, `failed` or `cancelled`.
    pub state: String,
    #[serde(default)]
    pub exit_code: i64,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub last_step: Option<u64>,
}

/// How a client run ended, as rlmon says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Finished,
    Cancelled,
    Failed(String),
}

impl Finish {
    pub fn ended(&self) -> Ended {
        match (self.state.as_str(), self.exit_code) {
            ("finished", 0) => Ended::Finished,
            ("cancelled", _) => Ended::Cancelled,
            (_, code) => {
                let why = self.error.as_deref().map_or(String::new(), |e| format!(": {e}"));
                Ended::Failed(format!("the script ended with exit status {code}{why}"))
            }
        }
    }
}

/// Reads a finish record.
pub fn finish(text: &str) -> Result<Finish, String> {
    serde_json::from_str(text).map_err(|e| format!("not an rlmon client finish record: {e}"))
}

/// One line of `alerts.jsonl`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ClientAlert {
    pub title: String,
    #[serde(default)]
    pub text: String,
    #[serde(default = "default_level")]
    pub level: String,
    /// The step of the last `log()` before it; none before the first.
    #[serde(default)]
    pub step: Option<u64>,
    #[serde(default)]
    pub timestamp: Option<f64>,
}

fn default_level() -> String {
    "warn".into()
}

/// Reads one line of `alerts.jsonl`.
pub fn alert_line(line: &str) -> Result<ClientAlert, String> {
    serde_json::from_str(line.trim()).map_err(|e| format!("not an rlmon client alert: {e}"))
}

impl ClientAlert {
    pub fn severity(&self) -> Severity {
        match self.level.to_ascii_lowercase().as_str() {
            "info" => Severity::Info,
            "error" | "critical" => Severity::Critical,
            _ => Severity::Warn,
        }
    }

    /// The alert as rlmon's own are: kind `script`, no metric, the title and text
    /// as its message; `time_s` is session time.
    pub fn to_alert(&self, run: &str, time_s: f64) -> Alert {
        let message = match self.text.trim() {
            "" => self.title.clone(),
            text => format!("{}: {text}", self.title),
        };
        Alert {
            kind: AlertKind::UserAlert,
            severity: self.severity(),
            run: run.to_owned(),
            metric: String::new(),
            step: self.step.unwrap_or(0),
            time_s,
            value: f64::NAN,
            message,
            peak: None,
            escalated_at: None,
        }
    }
}

/// The client alerts in the text of an alerts file, with the lines that are not
/// alerts (1-based line number, why).
pub fn alerts(text: &str) -> (Vec<ClientAlert>, Vec<(usize, String)>) {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        match alert_line(line) {
            Ok(a) => good.push(a),
            Err(e) => bad.push((i + 1, e)),
        }
    }
    (good, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_finish_and_alert_records_read_as_the_client_writes_them() {
        let s = start(r#"{"rlmon_client": 1, "name": "lr-3e-4", "project": "demo", "started_unix": 1764000000.5, "pid": 4242, "host": "n1", "argv": ["train.py"]}"#).unwrap();
        assert_eq!((s.name.as_str(), s.project.as_deref(), s.pid), ("lr-3e-4", Some("demo"), Some(4242)));
        assert!(start("{}").is_err(), "a start record names its run");

        let ok = finish(r#"{"state": "finished", "exit_code": 0, "last_step": 99}"#).unwrap();
        assert_eq!(ok.ended(), Ended::Finished);
        let failed = finish(r#"{"state": "failed", "exit_code": 1, "error": "ValueError: bad batch"}"#).unwrap();
        assert_eq!(failed.ended(), Ended::Failed("the script ended with exit status 1: ValueError: bad batch".into()));
        assert_eq!(finish(r#"{"state": "cancelled", "exit_code": 130}"#).unwrap().ended(), Ended::Cancelled);

        let text = "{\"timestamp\": 1.5, \"step\": 40, \"title\": \"eval regressed\", \"text\": \"acc 0.41\", \"level\": \"critical\"}\n\nnot json\n{\"title\": \"note\", \"level\": \"info\", \"step\": null}\n";
        let (good, bad) = alerts(text);
        assert_eq!(good.len(), 2);
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].0, 3);
        let a = good[0].to_alert("demo", 2.0);
        assert_eq!((a.kind, a.severity, a.step, a.message.as_str()), (AlertKind::UserAlert, Severity::Critical, 40, "eval regressed: acc 0.41"));
        let b = good[1].to_alert("demo", 3.0);
        assert_eq!((b.severity, b.step, b.message.as_str()), (Severity::Info, 0, "note"));
        assert_eq!(alert_line(r#"{"title": "x", "level": "whatever"}"#).unwrap().severity(), Severity::Warn);
    }
}
