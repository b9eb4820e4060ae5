//! Turns the raw file into checked settings, filling defaults: the session and run
//! keys here, each workload's and each run table's in its own file. Every check
//! that fails points at the key that caused it.
mod command;
mod faults;
mod health;
mod lm;
mod notify;
mod rlhf;

use std::path::Path;

use super::checker::{Checker, Seg};
use super::error::ConfigError;
use super::raw::{RawConfig, RawRun, RawThreads, RawWorkload};
use super::resolved::{DeviceRequest, PrometheusSource, Replica, RunConfig, ScrapeTarget, SessionConfig, Threads, WorkloadConfig, DEFAULT_BATCH_SIZE, DEFAULT_PROMETHEUS_HISTORY_S, DEFAULT_SCRAPE_INTERVAL_S};

const MAX_THREADS: u64 = 1024;
/// More copies of one run than this is a typo, not an experiment.
const MAX_REPLICAS: u64 = 64;

/// A whole config file.
pub(super) fn session(raw: RawConfig, text: &str, path: &Path) -> Result<SessionConfig, ConfigError> {
    let checker = Checker::new(path, text);
    let name = match raw.session {
        Some(name) if name.trim().is_empty() => {
            return Err(checker.err(&[Seg::Key("session")], "session name must not be empty"))
        }
        Some(name) => name,
        None => path.file_stem().map_or_else(|| "session".into(), |s| s.to_string_lossy().into_owned()),
    };
    // A login node's config may hold only other machines' telemetry: its runs come
    // with `--attach http://...` (watch refuses a session left without runs).
    if raw.runs.is_empty() && raw.telemetry.is_none() && raw.notify.is_empty() {
        return Err(checker.err_file("no runs: add at least one [[run]] table"));
    }
    // `rlmon watch --config x.toml` has the empty path as its parent: the current folder.
    let base_dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut runs: Vec<RunConfig> = Vec::with_capacity(raw.runs.len());
    for (i, raw_run) in raw.runs.into_iter().enumerate() {
        let copies = resolve_run(&checker, i, raw_run, base_dir)?;
        for run in copies {
            if runs.iter().any(|r| r.name == run.name) {
                return Err(checker.err(&[Seg::Key("run"), Seg::Index(i), Seg::Key("name")], format!("duplicate run name `{}`", run.name)));
            }
            runs.push(run);
        }
    }
    let baseline = raw.baseline.map(|b| base_dir.join(b));
    let (scrape, prometheus) = match raw.telemetry {
        Some(t) => (t.scrape, t.prometheus),
        None => (Vec::new(), None),
    };
    let scrape = scrape_targets(&checker, scrape)?;
    let prometheus = prometheus.map(|p| prometheus_source(&checker, p)).transpose()?;
    let notify = notify::targets(&checker, raw.notify, |var| std::env::var(var).ok())?;
    Ok(SessionConfig { name, path: path.to_path_buf(), text: text.to_owned(), runs, baseline, scrape, prometheus, notify })
}

/// `[telemetry.prometheus]`: a plain-HTTP server, a selector in braces, a positive
/// interval and a bounded history.
fn prometheus_source(c: &Checker, raw: super::raw::RawPrometheus) -> Result<PrometheusSource, ConfigError> {
    let at = |key: &'static str| [Seg::Key("telemetry"), Seg::Key("prometheus"), Seg::Key(key)];
    crate::telemetry::scrape::Endpoint::parse(&raw.server).map_err(|e| c.err(&at("server"), e))?;
    let matchers = match raw.selector.as_deref().map(str::trim) {
        None | Some("") => String::new(),
        Some(s) => s
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .map(|s| s.trim().to_owned())
            .ok_or_else(|| c.err(&at("selector"), "selector must be label matchers in braces, e.g. '{job=\"train-42\"}'"))?,
    };
    let interval_s = raw.interval_s.unwrap_or(DEFAULT_SCRAPE_INTERVAL_S);
    if !(interval_s.is_finite() && (0.1..=3600.0).contains(&interval_s)) {
        return Err(c.err(&at("interval_s"), "interval_s must be between 0.1 and 3600 seconds"));
    }
    let history_s = raw.history_s.unwrap_or(DEFAULT_PROMETHEUS_HISTORY_S);
    if !(history_s.is_finite() && (0.0..=86_400.0).contains(&history_s)) {
        return Err(c.err(&at("history_s"), "history_s must be between 0 and 86400 seconds"));
    }
    let secs = std::time::Duration::from_secs_f64;
    Ok(PrometheusSource { server: raw.server, matchers, interval: secs(interval_s), history: secs(history_s) })
}

/// `[[telemetry.scrape]]` tables: a plain-HTTP URL, a positive interval, and a host
/// name of one path segment. The exporters of one machine (node_exporter and
/// dcgm-exporter) share its name; two machines behind one address need `host`.
fn scrape_targets(c: &Checker, raw: Vec<super::raw::RawScrape>) -> Result<Vec<ScrapeTarget>, ConfigError> {
    let mut targets: Vec<ScrapeTarget> = Vec::with_capacity(raw.len());
    for (i, s) in raw.into_iter().enumerate() {
        let at = |key: &'static str| [Seg::Key("telemetry"), Seg::Key("scrape"), Seg::Index(i), Seg::Key(key)];
        let endpoint = crate::telemetry::scrape::Endpoint::parse(&s.url).map_err(|e| c.err(&at("url"), e))?;
        let interval_s = s.interval_s.unwrap_or(DEFAULT_SCRAPE_INTERVAL_S);
        if !(interval_s.is_finite() && (0.1..=3600.0).contains(&interval_s)) {
            return Err(c.err(&at("interval_s"), "interval_s must be between 0.1 and 3600 seconds"));
        }
        let host = s.host.unwrap_or(endpoint.host);
        if host.is_empty() || host.contains('/') || host.chars().any(char::is_control) || host == "host" || crate::metrics::catalog::Gpu::parse(&format!("{host}/x")).is_some() {
            return Err(c.err(&at("host"), format!("`{host}` cannot name a host: it must be non-empty, without `/`, and not `host` or `gpuN`")));
        }
        targets.push(ScrapeTarget { url: s.url, host, interval: std::time::Duration::from_secs_f64(interval_s) });
    }
    Ok(targets)
}

/// One `[[run]]` table: one run, or its replicas.
fn resolve_run(c: &Checker, i: usize, mut raw: RawRun, base_dir: &Path) -> Result<Vec<RunConfig>, ConfigError> {
    let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key(key)];
    let name = raw.name.trim().to_owned();
    if name.is_empty() || name.contains('#') || name.chars().any(char::is_control) {
        return Err(c.err(&at("name"), "run name must be non-empty and must not contain `#` (used for replicas) or control characters"));
    }
    let device = match raw.device.as_deref() {
        None => DeviceRequest::Auto,
        Some(s) => DeviceRequest::parse(s).ok_or_else(|| {
            c.err(&at("device"), format!("unknown device `{s}`: expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\""))
        })?,
    };
    let steps = match (raw.steps, raw.workload) {
        (Some(0), _) => return Err(c.err(&at("steps"), "steps must be at least 1")),
        (Some(n), _) => n,
        // A command run's total is what its program does; unknown unless given.
        (None, RawWorkload::Command) => 0,
        (None, _) => return Err(c.err(&[Seg::Key("run"), Seg::Index(i)], "missing field `steps`: how many steps the run trains")),
    };
    if raw.workload == RawWorkload::Command {
        return resolve_command_run(c, i, raw, name, steps, base_dir);
    }
    if let Some(key) = command::command_keys(&raw).first() {
        return Err(c.err(&at(key), format!("`{key}` applies to workload = \"command\"")));
    }
    let threads = match raw.intra_op_threads {
        None | Some(RawThreads::Auto) => Threads::Auto,
        Some(RawThreads::Fixed(n)) if n > MAX_THREADS => {
            return Err(c.err(&at("intra_op_threads"), format!("intra_op_threads must be at most {MAX_THREADS}")))
        }
        Some(RawThreads::Fixed(n)) => Threads::Fixed(n as usize),
    };
    let batch_size = raw.batch_size.unwrap_or(DEFAULT_BATCH_SIZE);
    if batch_size == 0 {
        return Err(c.err(&at("batch_size"), "batch_size must be at least 1"));
    }
    let workload = match raw.workload {
        RawWorkload::Lm => WorkloadConfig::Lm(lm::resolve(c, i, &mut raw, batch_size as usize, base_dir)?),
        RawWorkload::Rlhf => WorkloadConfig::Rlhf(rlhf::resolve(c, i, &mut raw, batch_size as usize)?),
        RawWorkload::Command => unreachable!("command runs are resolved above"),
    };
    let replicas = match raw.replicas {
        None => 1,
        Some(n) if (1..=MAX_REPLICAS).contains(&n) => n as usize,
        Some(_) => return Err(c.err(&at("replicas"), format!("replicas must be between 1 and {MAX_REPLICAS}"))),
    };
    let faults = faults::resolve(c, i, raw.faults.unwrap_or_default(), replicas, &workload)?;
    let health = health::resolve(c, i, raw.health.unwrap_or_default())?;
    let price_per_hour = match raw.price_per_hour {
        Some(p) if !(p.is_finite() && p >= 0.0) => return Err(c.err(&at("price_per_hour"), "price_per_hour must be zero or positive")),
        p => p,
    };
    let on_critical = notify::on_critical(c, i, raw.on_critical.take(), true)?;
    let run = RunConfig {
        name,
        device,
        seed: raw.seed.unwrap_or(0),
        steps,
        threads,
        workload,
        replica: None,
        deterministic: raw.deterministic.unwrap_or(false),
        faults,
        health,
        price_per_hour,
        on_critical,
    };
    if raw.replicas.is_none() {
        return Ok(vec![run]);
    }
    Ok((1..=replicas)
        .map(|index| RunConfig {
            name: format!("{}#{index}", run.name),
            replica: Some(Replica { of: run.name.clone(), index, count: replicas }),
            ..run.clone()
        })
        .collect())
}

/// A `[[run]]` of `workload = "command"`: one run (no replicas), the keys of the
/// built-in workloads refused.
fn resolve_command_run(c: &Checker, i: usize, mut raw: RawRun, name: String, steps: u64, base_dir: &Path) -> Result<Vec<RunConfig>, ConfigError> {
    let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key(key)];
    let workload = WorkloadConfig::Command(command::resolve(c, i, &mut raw, base_dir)?);
    let on_critical = notify::on_critical(c, i, raw.on_critical.take(), false)?;
    let health = health::resolve(c, i, raw.health.unwrap_or_default())?;
    let price_per_hour = match raw.price_per_hour {
        Some(p) if !(p.is_finite() && p >= 0.0) => return Err(c.err(&at("price_per_hour"), "price_per_hour must be zero or positive")),
        p => p,
    };
    Ok(vec![RunConfig {
        name,
        device: DeviceRequest::Auto,
        seed: 0,
        steps,
        threads: Threads::Auto,
        workload,
        replica: None,
        deterministic: false,
        faults: Default::default(),
        health,
        price_per_hour,
        on_critical,
    }])
}
