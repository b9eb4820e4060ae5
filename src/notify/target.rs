//! Where notifications go and which ones: a webhook URL (json, slack, discord or
//! ntfy) or a command, with its filters. A URL is a secret (a Slack webhook's path
//! is its key, an ntfy topic its password): it is shown only as [`WebUrl::redacted`],
//! and [`redact_text`] takes it out of the config text a snapshot keeps.
use std::time::Duration;

use crate::health::{AlertKind, Severity};

/// The shape of the message a target receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// rlmon's alert object (design.md's fields, plus session, host and time).
    Json,
    /// A Slack incoming webhook: `{"text": ...}`.
    Slack,
    /// A Discord webhook: `{"content": ...}`.
    Discord,
    /// An ntfy topic: the text as the body, title, priority and tags as headers.
    Ntfy,
}

impl Format {
    pub const NAMES: [&'static str; 4] = ["json", "slack", "discord", "ntfy"];

    pub fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "json" => Format::Json,
            "slack" => Format::Slack,
            "discord" => Format::Discord,
            "ntfy" => Format::Ntfy,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Slack => "slack",
            Format::Discord => "discord",
            Format::Ntfy => "ntfy",
        }
    }

    /// The format a URL's service speaks, told from its host: Slack's and
    /// Discord's webhooks and ntfy.sh; anything else gets rlmon's JSON.
    pub fn guess(url: &WebUrl) -> Format {
        let host = url.host.to_ascii_lowercase();
        if host == "hooks.slack.com" {
            Format::Slack
        } else if (host == "discord.com" || host == "discordapp.com" || host.ends_with(".discord.com")) && url.path.starts_with("/api/webhooks/") {
            Format::Discord
        } else if host == "ntfy.sh" || host.starts_with("ntfy.") {
            Format::Ntfy
        } else {
            Format::Json
        }
    }
}

/// An `http://` or `https://` URL, taken apart for a client. Its `Debug` and
/// `Display` forms are redacted: the full URL never reaches a log.
#[derive(Clone, PartialEq, Eq)]
pub struct WebUrl {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// `host:port` as written, for the Host header.
    pub authority: String,
    /// The path and query, `/` when the URL has none.
    pub path: String,
    full: String,
}

impl WebUrl {
    pub fn parse(url: &str) -> Result<WebUrl, String> {
        let url = url.trim();
        let (tls, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err("a notification URL starts with http:// or https://".into());
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest[i..].starts_with('?') => (&rest[..i], format!("/{}", &rest[i..])),
            Some(i) => (&rest[..i], rest[i..].to_owned()),
            None => (rest, "/".to_owned()),
        };
        let (host, port) = crate::telemetry::scrape::host_and_port(authority, if tls { 443 } else { 80 }).map_err(|e| {
            // Webhook services put their token in the path; say so.
            if authority.contains('@') { format!("{e} (put a token in the path, as Slack and Discord do)") } else { format!("the URL: {e}") }
        })?;
        if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("the URL's path holds spaces or control characters".into());
        }
        Ok(WebUrl { tls, host: host.to_owned(), port, authority: authority.to_owned(), path, full: url.to_owned() })
    }

    /// The URL as written. Only the sender may use it.
    pub(crate) fn full(&self) -> &str {
        &self.full
    }

    /// What may be shown of it: scheme and host, the path hidden
    /// (`https://hooks.slack.com/…`).
    pub fn redacted(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        if self.path == "/" {
            format!("{scheme}://{}/", self.authority)
        } else {
            format!("{scheme}://{}/…", self.authority)
        }
    }
}

impl std::fmt::Debug for WebUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl std::fmt::Display for WebUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Where a target's messages go.
#[derive(Debug, Clone, PartialEq)]
pub enum Destination {
    Url(WebUrl),
    /// A program and its arguments (no shell): the notice in `RLMON_*` variables
    /// and as rlmon's JSON on its stdin.
    Command(Vec<String>),
}

/// Alerts that come within this of each other go out as one message.
pub const DEFAULT_GROUP: Duration = Duration::from_secs(2);
/// At most one message per target this often, critical alerts and run ends aside.
pub const DEFAULT_COOLDOWN: Duration = Duration::from_secs(30);

/// One `[[notify]]` table or `--notify URL`.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub dest: Destination,
    pub format: Format,
    /// Alerts below this are not sent (default warn).
    pub min_severity: Severity,
    /// Only these kinds, when given.
    pub kinds: Option<Vec<AlertKind>>,
    /// Also send each run's end (finished, failed, cancelled or stopped).
    pub on_end: bool,
    pub group: Duration,
    pub cooldown: Duration,
}

impl Target {
    /// A target with the defaults: warn and up, every kind, no run ends.
    pub fn new(dest: Destination, format: Format) -> Self {
        Target { dest, format, min_severity: Severity::Warn, kinds: None, on_end: false, group: DEFAULT_GROUP, cooldown: DEFAULT_COOLDOWN }
    }

    /// `--notify URL`: the format told from the host, or named before the URL
    /// (`slack+https://...`, `ntfy+http://...`).
    pub fn from_arg(arg: &str) -> Result<Target, String> {
        let (format, url) = match arg.split_once('+') {
            Some((name, url)) if Format::parse(name).is_some() => (Format::parse(name), url),
            _ => (None, arg),
        };
        let url = WebUrl::parse(url).map_err(|e| format!("--notify: {e} (e.g. http://127.0.0.1:9000/hook, https://ntfy.sh/TOPIC, or slack+https://...)"))?;
        let format = format.unwrap_or_else(|| Format::guess(&url));
        Ok(Target::new(Destination::Url(url), format))
    }

    /// The target as it may be shown: `slack https://hooks.slack.com/…`.
    pub fn describe(&self) -> String {
        match &self.dest {
            Destination::Url(url) => format!("{} {}", self.format.as_str(), url.redacted()),
            Destination::Command(argv) => format!("command `{}`", argv.first().map_or("", String::as_str)),
        }
    }

    /// Whether an alert of this kind and severity is sent here.
    pub fn wants(&self, kind: AlertKind, severity: Severity) -> bool {
        severity >= self.min_severity && self.kinds.as_ref().is_none_or(|k| k.contains(&kind))
    }
}

/// `text` with every target URL written in it replaced by its redacted form: the
/// config text a snapshot and its journal keep.
pub fn redact_text(text: &str, targets: &[Target]) -> String {
    let mut out = text.to_owned();
    for t in targets {
        if let Destination::Url(url) = &t.dest {
            if !url.full().is_empty() {
                out = out.replace(url.full(), &url.redacted());
            }
        }
    }
    out
}

/// A signal name (`USR1`, `SIGUSR1`, `TERM`) or number.
pub fn parse_signal(s: &str) -> Option<i32> {
    let name = s.trim().to_ascii_uppercase();
    let name = name.strip_prefix("SIG").unwrap_or(&name);
    Some(match name {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "TERM" => libc::SIGTERM,
        "KILL" => libc::SIGKILL,
        "CONT" => libc::SIGCONT,
        "STOP" => libc::SIGSTOP,
        "WINCH" => libc::SIGWINCH,
        n => n.parse::<i32>().ok().filter(|n| (1..=64).contains(n))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_never_show_their_path() {
        let u = WebUrl::parse("https://hooks.slack.com/services/T0/B0/secretkey").unwrap();
        assert_eq!((u.tls, u.host.as_str(), u.port, u.path.as_str()), (true, "hooks.slack.com", 443, "/services/T0/B0/secretkey"));
        assert_eq!(u.redacted(), "https://hooks.slack.com/…");
        assert!(!format!("{u:?} {u}").contains("secretkey"));
        let u = WebUrl::parse("http://127.0.0.1:9000").unwrap();
        assert_eq!((u.port, u.path.as_str(), u.redacted().as_str()), (9000, "/", "http://127.0.0.1:9000/"));
        assert_eq!(WebUrl::parse("http://h?token=x").unwrap().path, "/?token=x");
        for bad in ["ftp://x/", "http://", "http://u:p@h/", "https://h:99999/", "hooks.slack.com/x"] {
            assert!(WebUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_format_follows_the_service_or_its_name() {
        let f = |arg: &str| Target::from_arg(arg).unwrap().format;
        assert_eq!(f("https://hooks.slack.com/services/a/b/c"), Format::Slack);
        assert_eq!(f("https://discord.com/api/webhooks/1/x"), Format::Discord);
        assert_eq!(f("https://ntfy.sh/my-topic"), Format::Ntfy);
        assert_eq!(f("http://127.0.0.1:8080/"), Format::Json);
        assert_eq!(f("ntfy+http://10.0.0.5/jobs"), Format::Ntfy);
        assert!(Target::from_arg("slack+ftp://x").is_err());
        let t = Target::from_arg("http://h/").unwrap();
        assert!(t.wants(AlertKind::Nonfinite, Severity::Critical) && !t.wants(AlertKind::LossSpike, Severity::Info));
    }

    #[test]
    fn config_text_loses_its_secrets() {
        let t = Target::from_arg("https://hooks.slack.com/services/T0/B0/secretkey").unwrap();
        let text = "[[notify]]\nurl = \"https://hooks.slack.com/services/T0/B0/secretkey\"\n";
        let red = redact_text(text, &[t]);
        assert!(!red.contains("secretkey") && red.contains("https://hooks.slack.com/…"), "{red}");
    }

    #[test]
    fn signals_by_name_or_number() {
        assert_eq!(parse_signal("USR1"), Some(libc::SIGUSR1));
        assert_eq!(parse_signal("sigterm"), Some(libc::SIGTERM));
        assert_eq!(parse_signal("10"), Some(10));
        assert_eq!(parse_signal("NOPE"), None);
        assert_eq!(parse_signal("0"), None);
    }
}
