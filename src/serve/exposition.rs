//! The Prometheus text exposition (format 0.0.4, which every Prometheus and
//! OpenMetrics scraper reads) of a session: each run's latest value of every catalog
//! metric, the session's telemetry, each run's step and state, and one series per
//! open alert. A pure function over [`SessionState`], so it is tested without a socket.
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::metrics::catalog;
use crate::session::SessionState;

/// The exposition's content type (the Prometheus text format).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One family's help line and its samples (label text, value), in insertion order.
#[derive(Default)]
struct Family {
    help: String,
    samples: Vec<(String, f64)>,
}

/// The exposition text of `state`. Families are grouped (a family's samples are
/// contiguous, as the format requires) and sorted by name, so the text is stable.
pub fn render(state: &SessionState) -> String {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut add = |family: &str, help: &str, labels: String, value: f64| {
        let f = families.entry(family.to_owned()).or_default();
        if f.help.is_empty() {
            f.help = help.to_owned();
        }
        f.samples.push((labels, value));
    };
    for r in &state.runs {
        let run = [("run", r.name.as_str())];
        add("rlmon_step", "Last step the run reported", labels(&run, &[]), r.step as f64);
        add("rlmon_run_state", "The run's state (1 for its current state)", labels(&[("run", &r.name), ("state", r.state.as_str())], &[]), 1.0);
        // `time() - rlmon_last_step_timestamp_seconds` is how long the run has been silent.
        if let Some(t) = r.last_step_unix {
            add("rlmon_last_step_timestamp_seconds", "Unix time at which rlmon saw the run's newest step", labels(&run, &[]), t);
        }
        for (name, series) in &r.series {
            let (Some(om), Some(value)) = (catalog::openmetric(name), series.last()) else { continue };
            add(&om.family, om.info.label, labels(&run, &om.labels), value);
        }
    }
    for (name, series) in &state.telemetry {
        let (Some(om), Some(value)) = (catalog::openmetric(name), series.last()) else { continue };
        add(&om.family, om.info.label, labels(&[], &om.labels), value);
    }
    // A scraped host that stopped answering keeps its last figures; its age says so.
    for h in crate::telemetry::scrape::remote_hosts(state) {
        add("rlmon_remote_host_age_seconds", "Seconds since the scraped host's newest sample", labels(&[("host", &h.host)], &[]), h.age_s);
        add("rlmon_remote_host_stale", "1 when the scraped host has not answered for a while", labels(&[("host", &h.host)], &[]), if h.stale { 1.0 } else { 0.0 });
    }
    // One series per (run, kind, severity): a run with two loss spikes has one.
    let mut open = BTreeSet::new();
    for a in &state.alerts {
        open.insert((a.run.as_str(), a.kind.as_str(), a.severity.as_str()));
    }
    for (run, kind, severity) in open {
        add("rlmon_alert", "An alert rlmon raised (1 while it is open)", labels(&[("run", run), ("kind", kind), ("severity", severity)], &[]), 1.0);
    }
    let mut out = String::new();
    for (name, f) in &families {
        let _ = writeln!(out, "# HELP {name} {}", escape_help(&f.help));
        let _ = writeln!(out, "# TYPE {name} gauge");
        for (labels, value) in &f.samples {
            let _ = writeln!(out, "{name}{labels} {}", number(*value));
        }
    }
    out
}

/// `{a="x",b="y"}`, or nothing without labels.
fn labels(fixed: &[(&str, &str)], dims: &[(&'static str, String)]) -> String {
    let all: Vec<(&str, &str)> = fixed.iter().copied().chain(dims.iter().map(|(k, v)| (*k, v.as_str()))).collect();
    if all.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = all.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
    format!("{{{}}}", inner.join(","))
}

/// Label values escape backslash, double quote and line feed.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Help text escapes backslash and line feed.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// Values as Go's ParseFloat reads them: `NaN`, `+Inf`, `-Inf` for the non-finite.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::{Alert, AlertKind, Severity};
    use crate::session::{RunRecord, RunState};

    fn state() -> SessionState {
        let mut a = RunRecord::new("ppo \"a\"".into(), "command".into(), "cpu".into(), 10);
        a.state = RunState::Running;
        a.step = 7;
        a.last_step_unix = Some(1_800_000_000.5);
        for (name, v) in [("tokens_per_s", 1500.0), ("loss", f64::NAN), ("kl", 0.02), ("my_metric", 3.0), ("moe/L1/load/E2", 0.25)] {
            a.series.entry(name.into()).or_default().push(7, 1.0, v);
        }
        let b = RunRecord::new("b".into(), "lm".into(), "cpu".into(), 10);
        let mut s = SessionState::new("s".into(), vec![a, b]);
        s.telemetry.entry("gpu0/util_pct".into()).or_default().push(0, 1.0, 87.0);
        s.telemetry.entry("node7/host/cpu_pct".into()).or_default().push(0, 1.0, 12.5);
        let alert = |kind, severity| Alert { kind, severity, run: "ppo \"a\"".into(), metric: "loss".into(), step: 7, time_s: 1.0, value: f64::NAN, message: "m".into(), peak: None, escalated_at: None };
        s.alerts = vec![alert(AlertKind::Nonfinite, Severity::Critical), alert(AlertKind::Nonfinite, Severity::Critical), alert(AlertKind::LossSpike, Severity::Warn)];
        s
    }

    #[test]
    fn runs_telemetry_and_alerts_are_gauges_with_labels() {
        let text = render(&state());
        let has = |line: &str| assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
        has("# TYPE rlmon_tokens_per_second gauge");
        has(r#"rlmon_tokens_per_second{run="ppo \"a\""} 1500"#);
        has(r#"rlmon_loss{run="ppo \"a\""} NaN"#);
        has(r#"rlmon_kl{run="ppo \"a\""} 0.02"#);
        has(r#"rlmon_moe_load{run="ppo \"a\"",layer="1",expert="2"} 0.25"#);
        has(r#"rlmon_step{run="ppo \"a\""} 7"#);
        has(r#"rlmon_step{run="b"} 0"#);
        has(r#"rlmon_last_step_timestamp_seconds{run="ppo \"a\""} 1800000000.5"#);
        assert!(!text.contains(r#"rlmon_last_step_timestamp_seconds{run="b"}"#), "no step, no timestamp");
        has(r#"rlmon_run_state{run="b",state="pending"} 1"#);
        has(r#"rlmon_gpu_util_percent{gpu="0"} 87"#);
        has(r#"rlmon_host_cpu_percent{host="node7"} 12.5"#);
        has(r#"rlmon_remote_host_age_seconds{host="node7"} 0"#);
        has(r#"rlmon_remote_host_stale{host="node7"} 0"#);
        has(r#"rlmon_alert{run="ppo \"a\"",kind="nonfinite",severity="critical"} 1"#);
        has(r#"rlmon_alert{run="ppo \"a\"",kind="loss_spike",severity="warn"} 1"#);
        assert_eq!(text.matches("kind=\"nonfinite\"").count(), 1, "one series per run, kind and severity");
        assert!(!text.contains("my_metric"), "a user's own metric is not published");
    }

    #[test]
    fn every_family_is_contiguous_with_one_help_and_type() {
        let text = render(&state());
        let mut seen = BTreeSet::new();
        let mut current = String::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap().to_owned();
                assert!(seen.insert(name.clone()), "{name} declared twice");
                current = name;
            } else if !line.starts_with('#') {
                let name = line.split(['{', ' ']).next().unwrap();
                assert_eq!(name, current, "{line} outside its family");
                assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{name}");
            }
        }
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn an_empty_session_renders_nothing() {
        assert_eq!(render(&SessionState::new("s".into(), vec![])), "");
    }
}
