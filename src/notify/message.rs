//! What a notice looks like in each format: pure functions from notices to a
//! request body (and, for ntfy, headers), tested without a network.
use serde_json::{json, Value};

use super::target::Format;
use super::Notice;
use crate::health::Severity;
use crate::report::format::compact;

/// Discord refuses a `content` longer than this.
const DISCORD_MAX: usize = 2000;
/// Lines of a grouped message before the rest is counted.
const GROUP_LINES: usize = 10;

/// Where and when the notices come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    pub session: String,
    pub host: String,
    /// RFC 3339, UTC.
    pub time: String,
}

/// A request body and its extra headers.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// One line of text for a notice.
pub fn line(n: &Notice) -> String {
    match n {
        Notice::Alert { alert: a, escalated, moved } => {
            let mut s = if *escalated {
                format!("{} {} on run {} escalated to {} at step {}: {}", a.severity.as_str().to_uppercase(), a.kind, a.run, a.severity.as_str(), a.escalated_at.unwrap_or(a.step), a.message)
            } else {
                format!("{} {} on run {} at step {}: {}", a.severity.as_str().to_uppercase(), a.kind, a.run, a.step, a.message)
            };
            if !moved.is_empty() {
                let m: Vec<String> = moved.iter().take(3).map(|m| m.short()).collect();
                s += &format!(" (moved: {})", m.join(", "));
            }
            s
        }
        Notice::Cleared { run, kind, message, .. } => format!("CLEARED {kind} on run {run}: {message}"),
        Notice::RunEnded { run, state, summary, .. } => format!("run {run} {state}: {summary}"),
    }
}

/// How bad a notice is: an alert's severity; a run that did not finish is a warning.
pub fn severity(n: &Notice) -> Severity {
    match n {
        Notice::Alert { alert, .. } => alert.severity,
        Notice::Cleared { .. } => Severity::Info,
        Notice::RunEnded { state, .. } => if state == "finished" { Severity::Info } else { Severity::Warn },
    }
}

/// The notice rlmon's JSON format sends, with where it comes from.
pub fn object(n: &Notice, o: &Origin) -> Value {
    let mut v = match n {
        Notice::Alert { alert, escalated, moved } => {
            let mut v = serde_json::to_value(alert).unwrap_or(Value::Null);
            v["event"] = json!(if *escalated { "escalated" } else { "alert" });
            v["moved"] = serde_json::to_value(moved.iter().take(3).collect::<Vec<_>>()).unwrap_or(Value::Null);
            v
        }
        Notice::Cleared { run, kind, step, message } => json!({"event": "cleared", "kind": kind, "run": run, "step": step, "message": message}),
        Notice::RunEnded { run, state, step, summary, error } => json!({"event": "run_end", "run": run, "state": state, "step": step, "error": error, "message": summary}),
    };
    v["session"] = json!(o.session);
    v["host"] = json!(o.host);
    v["time"] = json!(o.time);
    v
}

/// The title of a group of notices: what the worst one is.
fn title(notices: &[Notice], o: &Origin) -> String {
    let worst = notices.iter().max_by_key(|n| severity(n));
    let what = match (notices.len(), worst) {
        (1, Some(Notice::Alert { alert, .. })) => format!("{} {} on {}", alert.severity.as_str(), alert.kind, alert.run),
        (1, Some(Notice::Cleared { run, kind, .. })) => format!("{kind} cleared on {run}"),
        (1, Some(Notice::RunEnded { run, state, .. })) => format!("run {run} {state}"),
        (n, Some(w)) => format!("{n} notices, worst {}", severity(w).as_str()),
        (_, None) => String::new(),
    };
    format!("rlmon {} on {}: {what}", o.session, o.host)
}

/// The text of a group: one line per notice (the first [`GROUP_LINES`]).
fn text(notices: &[Notice]) -> String {
    let mut lines: Vec<String> = notices.iter().take(GROUP_LINES).map(line).collect();
    if notices.len() > GROUP_LINES {
        lines.push(format!("… and {} more", notices.len() - GROUP_LINES));
    }
    lines.join("\n")
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut t: String = s.chars().take(max - 1).collect();
    t.push('…');
    t
}

/// A header value of visible ASCII (ntfy reads headers as ASCII).
fn header_text(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_graphic() || c == ' ' { c } else if c == '…' { '.' } else { '?' }).collect()
}

/// The body (and headers) one message of `notices` is sent as. `notices` is
/// never empty.
pub fn render(format: Format, notices: &[Notice], o: &Origin) -> Payload {
    let json_payload = |v: Value| Payload { content_type: "application/json", headers: Vec::new(), body: serde_json::to_vec(&v).unwrap_or_default() };
    match format {
        Format::Json => {
            // The worst notice at the top level (a receiver written for one alert
            // reads it), the others of the group under `more`.
            let worst = notices.iter().enumerate().max_by_key(|(i, n)| (severity(n), std::cmp::Reverse(*i))).map_or(0, |(i, _)| i);
            let mut v = object(&notices[worst], o);
            let more: Vec<Value> = notices.iter().enumerate().filter(|(i, _)| *i != worst).map(|(_, n)| object(n, o)).collect();
            if !more.is_empty() {
                v["more"] = Value::Array(more);
            }
            json_payload(v)
        }
        // Slack's incoming webhooks take `text` (mrkdwn).
        Format::Slack => json_payload(json!({"text": format!("*{}*\n{}", title(notices, o), text(notices))})),
        // Discord's take `content`, at most 2,000 characters; no @mentions.
        Format::Discord => json_payload(json!({
            "username": "rlmon",
            "content": truncate(&format!("**{}**\n{}", title(notices, o), text(notices)), DISCORD_MAX),
            "allowed_mentions": {"parse": []},
        })),
        // ntfy: the message is the body; title, priority (1-5) and tags are headers.
        Format::Ntfy => {
            let worst = notices.iter().map(severity).max().unwrap_or(Severity::Info);
            let ended_well = notices.iter().all(|n| matches!(n, Notice::RunEnded { state, .. } if state == "finished"));
            let (priority, tags) = match worst {
                Severity::Critical => ("5", "rotating_light"),
                Severity::Warn => ("4", "warning"),
                Severity::Info if ended_well => ("3", "white_check_mark"),
                Severity::Info => ("3", "information_source"),
            };
            Payload {
                content_type: "text/plain; charset=utf-8",
                headers: vec![("Title", header_text(&title(notices, o))), ("Priority", priority.into()), ("Tags", tags.into())],
                body: text(notices).into_bytes(),
            }
        }
    }
}

/// The `RLMON_*` variables a notify command gets for the worst notice of a group.
pub fn env(notices: &[Notice], o: &Origin) -> Vec<(String, String)> {
    let Some(worst) = notices.iter().max_by_key(|n| severity(n)) else { return Vec::new() };
    let v = object(worst, o);
    let mut env = vec![("RLMON_TEXT".to_owned(), text(notices)), ("RLMON_TITLE".to_owned(), title(notices, o)), ("RLMON_COUNT".to_owned(), notices.len().to_string())];
    for key in ["event", "kind", "severity", "run", "metric", "step", "value", "message", "state", "session", "host", "time"] {
        let value = match &v[key] {
            Value::Null => continue,
            Value::String(s) => s.clone(),
            Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), |f| if n.is_f64() { compact(f) } else { n.to_string() }),
            other => other.to_string(),
        };
        env.push((format!("RLMON_{}", key.to_uppercase()), value));
    }
    if let Notice::RunEnded { .. } = worst {
        env.push(("RLMON_SEVERITY".into(), severity(worst).as_str().into()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::{Alert, AlertKind};

    fn origin() -> Origin {
        Origin { session: "fault-nan".into(), host: "gpu7".into(), time: "2026-11-27T16:00:00Z".into() }
    }

    fn alert(kind: AlertKind, severity: Severity) -> Notice {
        let a = Alert { kind, severity, run: "nan".into(), metric: "loss".into(), step: 250, time_s: 12.5, value: f64::NAN, message: "loss is NaN at step 250".into(), peak: None, escalated_at: None };
        Notice::Alert { alert: a, escalated: false, moved: Vec::new() }
    }

    #[test]
    fn json_is_the_alert_object_with_where_and_when() {
        let p = render(Format::Json, &[alert(AlertKind::Nonfinite, Severity::Critical)], &origin());
        assert_eq!(p.content_type, "application/json");
        let v: Value = serde_json::from_slice(&p.body).unwrap();
        for (k, want) in [("kind", json!("nonfinite")), ("severity", json!("critical")), ("run", json!("nan")), ("metric", json!("loss")), ("step", json!(250)), ("value", Value::Null), ("session", json!("fault-nan")), ("host", json!("gpu7")), ("time", json!("2026-11-27T16:00:00Z")), ("event", json!("alert"))] {
            assert_eq!(v[k], want, "{k}: {v}");
        }
        assert_eq!(v["message"], "loss is NaN at step 250");
        assert!(v["moved"].is_array() && v.get("more").is_none());
    }

    #[test]
    fn a_group_puts_the_worst_first_and_the_rest_under_more() {
        let group = [alert(AlertKind::LossSpike, Severity::Warn), alert(AlertKind::Nonfinite, Severity::Critical), alert(AlertKind::GradExplosion, Severity::Warn)];
        let v: Value = serde_json::from_slice(&render(Format::Json, &group, &origin()).body).unwrap();
        assert_eq!(v["kind"], "nonfinite");
        let more: Vec<&str> = v["more"].as_array().unwrap().iter().map(|m| m["kind"].as_str().unwrap()).collect();
        assert_eq!(more, ["loss_spike", "grad_explosion"]);
    }

    #[test]
    fn slack_and_discord_get_their_own_shapes() {
        let n = [alert(AlertKind::Nonfinite, Severity::Critical)];
        let slack: Value = serde_json::from_slice(&render(Format::Slack, &n, &origin()).body).unwrap();
        let keys: Vec<&String> = slack.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["text"]);
        let t = slack["text"].as_str().unwrap();
        assert!(t.starts_with("*rlmon fault-nan on gpu7: critical nonfinite on nan*\nCRITICAL nonfinite on run nan at step 250: loss is NaN"), "{t}");
        let long: Vec<Notice> = (0..200).map(|_| alert(AlertKind::LossSpike, Severity::Warn)).collect();
        let discord: Value = serde_json::from_slice(&render(Format::Discord, &long, &origin()).body).unwrap();
        assert!(discord["content"].as_str().unwrap().chars().count() <= DISCORD_MAX);
        assert_eq!(discord["allowed_mentions"]["parse"], json!([]));
        assert!(discord["content"].as_str().unwrap().contains("… and 190 more"));
    }

    #[test]
    fn ntfy_gets_text_with_title_priority_and_tags() {
        let end = Notice::RunEnded { run: "nan".into(), state: "failed".into(), step: 250, summary: "nan failed 250/600 steps".into(), error: Some("loss is NaN".into()) };
        let p = render(Format::Ntfy, &[alert(AlertKind::Nonfinite, Severity::Critical), end], &origin());
        assert!(p.content_type.starts_with("text/plain"));
        let h = |k: &str| p.headers.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(h("Priority"), "5");
        assert_eq!(h("Tags"), "rotating_light");
        assert_eq!(h("Title"), "rlmon fault-nan on gpu7: 2 notices, worst critical");
        let body = String::from_utf8(p.body).unwrap();
        assert_eq!(body.lines().count(), 2);
        assert!(body.lines().nth(1).unwrap().starts_with("run nan failed:"), "{body}");
        assert_eq!(header_text("ü…x"), "?.x");
    }

    #[test]
    fn a_command_gets_the_worst_notice_in_variables() {
        let env = env(&[alert(AlertKind::Nonfinite, Severity::Critical)], &origin());
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("RLMON_KIND"), Some("nonfinite"));
        assert_eq!(get("RLMON_SEVERITY"), Some("critical"));
        assert_eq!(get("RLMON_STEP"), Some("250"));
        assert_eq!(get("RLMON_VALUE"), None, "NaN is left out");
        assert_eq!(get("RLMON_COUNT"), Some("1"));
    }
}
