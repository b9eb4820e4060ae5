//! `[[notify]]` tables and a run's `on_critical`: checked here, with the key that
//! is wrong named. A webhook from `url_env` is read from the environment now, so
//! a missing variable stops the session before anything starts.
use crate::config::checker::{Checker, Seg};
use crate::config::error::ConfigError;
use crate::config::raw::{RawNotify, RawOnCritical};
use crate::config::resolved::{CriticalAction, OnCritical};
use crate::health::{AlertKind, Severity};
use crate::notify::{Destination, Format, Target, WebUrl};

/// Longest cooldown or grouping window, in seconds.
const MAX_WAIT_S: f64 = 86_400.0;

fn kind_list(c: &Checker, at: &[Seg], names: &[String]) -> Result<Vec<AlertKind>, ConfigError> {
    names
        .iter()
        .map(|n| {
            AlertKind::parse(n).ok_or_else(|| {
                let known: Vec<&str> = AlertKind::ALL.iter().map(|k| k.as_str()).collect();
                c.err(at, format!("unknown alert kind `{n}`, expected one of {}", known.join(", ")))
            })
        })
        .collect()
}

pub(super) fn targets(c: &Checker, raw: Vec<RawNotify>, env: impl Fn(&str) -> Option<String>) -> Result<Vec<Target>, ConfigError> {
    let mut out = Vec::with_capacity(raw.len());
    for (i, n) in raw.into_iter().enumerate() {
        let at = |key: &'static str| [Seg::Key("notify"), Seg::Index(i), Seg::Key(key)];
        let table = [Seg::Key("notify"), Seg::Index(i)];
        let url = match (&n.url, &n.url_env, &n.command) {
            (Some(url), None, None) => Some(WebUrl::parse(url).map_err(|e| c.err(&at("url"), e))?),
            (None, Some(var), None) => {
                let value = env(var).filter(|v| !v.trim().is_empty()).ok_or_else(|| c.err(&at("url_env"), format!("the environment variable {var} is not set: it should hold the webhook URL")))?;
                // The value is a secret: the error does not quote it.
                Some(WebUrl::parse(&value).map_err(|e| c.err(&at("url_env"), format!("{var} does not hold a URL rlmon can send to: {e}")))?)
            }
            (None, None, Some(_)) => None,
            _ => return Err(c.err(&table, "give one of `url`, `url_env` or `command`")),
        };
        let dest = match (url, n.command) {
            (Some(url), _) => Destination::Url(url),
            (None, Some(argv)) if argv.first().is_some_and(|p| !p.trim().is_empty()) => Destination::Command(argv),
            (None, _) => return Err(c.err(&at("command"), "command must not be empty: its first item is the program to run")),
        };
        let format = match (&n.format, &dest) {
            (Some(f), Destination::Url(_)) => Format::parse(f).ok_or_else(|| c.err(&at("format"), format!("unknown format `{f}`, expected one of {}", Format::NAMES.join(", "))))?,
            (Some(_), Destination::Command(_)) => return Err(c.err(&at("format"), "a command gets rlmon's JSON on stdin and RLMON_* variables: `format` applies to a url")),
            (None, Destination::Url(url)) => Format::guess(url),
            (None, Destination::Command(_)) => Format::Json,
        };
        let mut target = Target::new(dest, format);
        if let Some(s) = &n.min_severity {
            target.min_severity = match s.as_str() {
                "info" => Severity::Info,
                "warn" => Severity::Warn,
                "critical" => Severity::Critical,
                _ => return Err(c.err(&at("min_severity"), format!("unknown severity `{s}`, expected info, warn or critical"))),
            };
        }
        if let Some(kinds) = &n.kinds {
            target.kinds = Some(kind_list(c, &at("kinds"), kinds)?);
        }
        target.on_end = n.on_end.unwrap_or(false);
        for (key, v, slot) in [("cooldown_s", n.cooldown_s, &mut target.cooldown), ("group_s", n.group_s, &mut target.group)] {
            if let Some(v) = v {
                if !(v.is_finite() && (0.0..=MAX_WAIT_S).contains(&v)) {
                    return Err(c.err(&at(key), format!("{key} must be between 0 and {MAX_WAIT_S} seconds")));
                }
                *slot = std::time::Duration::from_secs_f64(v);
            }
        }
        out.push(target);
    }
    Ok(out)
}

/// A run's `on_critical`. `builtin`: a built-in run (lm, rlhf), which stops itself
/// and takes no signal.
pub(super) fn on_critical(c: &Checker, i: usize, raw: Option<RawOnCritical>, builtin: bool) -> Result<Option<OnCritical>, ConfigError> {
    let at = [Seg::Key("run"), Seg::Index(i), Seg::Key("on_critical")];
    let Some(raw) = raw else { return Ok(None) };
    let oc = match raw {
        RawOnCritical::Word(w) if w == "stop" => OnCritical { action: CriticalAction::Stop, kinds: None },
        RawOnCritical::Word(w) if w == "off" || w == "none" => return Ok(None),
        RawOnCritical::Word(w) => return Err(c.err(&at, format!("on_critical = \"{w}\": expected \"stop\", a list of alert kinds, or {{ signal = \"USR1\" }}"))),
        RawOnCritical::Kinds(k) if k.is_empty() => return Err(c.err(&at, "on_critical lists no alert kind")),
        RawOnCritical::Kinds(k) => OnCritical { action: CriticalAction::Stop, kinds: Some(kind_list(c, &at, &k)?) },
        RawOnCritical::Table { signal, stop, kinds } => {
            let kinds = kinds.map(|k| kind_list(c, &at, &k)).transpose()?;
            let action = match (signal, stop) {
                (Some(_), Some(true)) => return Err(c.err(&at, "on_critical: give `signal` or `stop = true`, not both")),
                (Some(s), _) => CriticalAction::Signal(crate::notify::parse_signal(&s).ok_or_else(|| c.err(&at, format!("on_critical: unknown signal `{s}` (e.g. \"USR1\", \"TERM\")")))?),
                (None, Some(true)) => CriticalAction::Stop,
                (None, _) => return Err(c.err(&at, "on_critical: give `signal = \"USR1\"` or `stop = true`")),
            };
            OnCritical { action, kinds }
        }
    };
    if builtin && matches!(oc.action, CriticalAction::Signal(_)) {
        return Err(c.err(&at, "a built-in run (lm, rlhf) takes no signal: it stops itself with on_critical = \"stop\""));
    }
    Ok(Some(oc))
}
