//! Remote telemetry: Prometheus exporters on other machines (node_exporter's CPU and
//! memory, dcgm-exporter's GPUs) scraped over HTTP and mapped through the metric
//! catalog to `HOST/host/...` and `HOST/gpuN/...`, sent to the hub like local
//! telemetry (so they are recorded, replayed and compared the same way).
//!
//! The mapping ([`Mapper`]) is a pure function of the page text (and, for CPU %, of
//! the previous page); fetching and timing live in [`spawn`]. A host that stops
//! answering is said once in the log and sends nothing: its series keep their last
//! sample and its age grows ([`remote_hosts`]), never a zero.
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::metrics::{catalog, MetricName};
use crate::session::{Event, LogLevel, SessionState};

/// An exporter's `/metrics` page scraped every `interval`, its figures recorded
/// under `host` (`node7/gpu0/util_pct`, `node7/host/cpu_pct`).
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeTarget {
    pub url: String,
    pub host: String,
    pub interval: std::time::Duration,
}

/// A page larger than this is refused (a big dcgm-exporter page is ~100 KiB).
pub const MAX_PAGE_BYTES: usize = 16 << 20;

/// A host whose newest sample is older than this is stale.
pub const STALE_AFTER_S: f64 = 10.0;

// The exporters' documented metric names (inputs, not rlmon names).
pub const NODE_CPU_SECONDS: &str = "node_cpu_seconds_total";
const NODE_MEM_TOTAL: &str = "node_memory_MemTotal_bytes";
const NODE_MEM_AVAILABLE: &str = "node_memory_MemAvailable_bytes";
const DCGM_GPU_UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
const DCGM_FB_USED: &str = "DCGM_FI_DEV_FB_USED";
const DCGM_FB_FREE: &str = "DCGM_FI_DEV_FB_FREE";
const DCGM_FB_RESERVED: &str = "DCGM_FI_DEV_FB_RESERVED";
const DCGM_POWER: &str = "DCGM_FI_DEV_POWER_USAGE";
const DCGM_TEMP: &str = "DCGM_FI_DEV_GPU_TEMP";
const DCGM_SM_CLOCK: &str = "DCGM_FI_DEV_SM_CLOCK";
// nvitop-exporter (prometheus_client gauges: the unit is appended to the name;
// GPUs by `index`, memory in MiB, power in W).
const NVITOP_GPU_UTIL: &str = "gpu_utilization_Percentage";
const NVITOP_MEM_USED: &str = "gpu_memory_used_MiB";
const NVITOP_MEM_TOTAL: &str = "gpu_memory_total_MiB";
const NVITOP_POWER: &str = "gpu_power_usage_W";
const NVITOP_TEMP: &str = "gpu_temperature_C";
const NVITOP_SM_CLOCK: &str = "gpu_clock_sm_MHz";
const NVITOP_HOST_CPU: &str = "host_cpu_percent_Percentage";
const NVITOP_HOST_MEM_TOTAL: &str = "host_virtual_memory_total_MiB";
const NVITOP_HOST_MEM_USED: &str = "host_virtual_memory_used_MiB";
/// Every exporter metric the mapper reads (what a Prometheus server is asked for).
pub const MAPPED_METRICS: &[&str] = &[
    NODE_CPU_SECONDS, NODE_MEM_TOTAL, NODE_MEM_AVAILABLE,
    DCGM_GPU_UTIL, DCGM_FB_USED, DCGM_FB_FREE, DCGM_FB_RESERVED, DCGM_POWER, DCGM_TEMP, DCGM_SM_CLOCK,
    NVITOP_GPU_UTIL, NVITOP_MEM_USED, NVITOP_MEM_TOTAL, NVITOP_POWER, NVITOP_TEMP, NVITOP_SM_CLOCK, NVITOP_HOST_CPU, NVITOP_HOST_MEM_TOTAL, NVITOP_HOST_MEM_USED,
];
/// dcgm-exporter reports framebuffer sizes in MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// Where a scrape URL points: `http://node7:9100/metrics`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    /// `host:port` as written, for the Host header.
    pub authority: String,
    /// The path and query, `/metrics` when the URL has none.
    pub path: String,
}

impl Endpoint {
    /// Parses a plain-HTTP URL (exporters inside a cluster speak HTTP).
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| format!("`{url}`: only http:// URLs can be scraped (e.g. http://node7:9100/metrics)"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/metrics"),
        };
        let (host, port) = host_and_port(authority, 80).map_err(|e| format!("`{url}`: {e}"))?;
        Ok(Endpoint { host: host.to_owned(), port, authority: authority.to_owned(), path: path.to_owned() })
    }
}

/// The host and port of a URL's authority (`node7:9100`, `[::1]:8080`, `host`),
/// checked: no credentials, a host name, a numeric port (`default_port` when none).
/// Shared by the scrape and notification URLs.
pub(crate) fn host_and_port(authority: &str, default_port: u16) -> Result<(&str, u16), String> {
    if authority.contains('@') {
        return Err("credentials in the URL are not supported".into());
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, p) = v6.split_once(']').ok_or("unclosed [ in the address")?;
        (h, p.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().map_err(|_| format!("`{p}` is not a port"))?,
        None => default_port,
    };
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("no host name".into());
    }
    Ok((host, port))
}

/// Turns exporter pages into rlmon telemetry for one host. Keeps the previous CPU
/// counters: node_exporter gives seconds per CPU and mode, and a percentage is the
/// difference between two pages.
#[derive(Debug, Default)]
pub struct Mapper {
    /// Idle and total CPU seconds of the previous page.
    cpu: Option<(f64, f64)>,
}

/// One GPU's figures on a dcgm-exporter or nvitop-exporter page.
#[derive(Debug, Default)]
struct GpuFigures {
    util: Option<f64>,
    fb_used: Option<f64>,
    fb_free: Option<f64>,
    fb_reserved: Option<f64>,
    /// nvitop-exporter gives the total itself (MiB).
    fb_total: Option<f64>,
    power: Option<f64>,
    temp: Option<f64>,
    sm_clock: Option<f64>,
}

impl Mapper {
    /// The figures of `page` (the Prometheus text format) under `host`. Exporter
    /// metrics rlmon does not map are skipped; a page that is not the text format
    /// gives nothing.
    pub fn map(&mut self, host: &str, page: &str) -> Vec<(MetricName, f64)> {
        let lines = page.lines().map(|l| Ok(l.to_owned()));
        let Ok(scrape) = prometheus_parse::Scrape::parse(lines) else { return Vec::new() };
        let mut out = Vec::new();
        let mut gpus: BTreeMap<usize, GpuFigures> = BTreeMap::new();
        let (mut idle, mut total, mut cpu_seen) = (0.0, 0.0, false);
        let (mut mem_total, mut mem_available) = (None, None);
        // nvitop-exporter's host figures: a percentage and MiB, used rather than available.
        let (mut nvitop_cpu, mut nvitop_mem_total, mut nvitop_mem_used) = (None, None, None);
        for s in &scrape.samples {
            let value = match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Gauge(v) | prometheus_parse::Value::Untyped(v) => v,
                _ => continue,
            };
            if !value.is_finite() {
                continue;
            }
            match s.metric.as_str() {
                NODE_CPU_SECONDS => {
                    cpu_seen = true;
                    total += value;
                    if s.labels.get("mode") == Some("idle") {
                        idle += value;
                    }
                }
                NODE_MEM_TOTAL => mem_total = Some(value),
                NODE_MEM_AVAILABLE => mem_available = Some(value),
                name if name.starts_with("DCGM_FI_DEV_") => {
                    let Some(gpu) = s.labels.get("gpu").and_then(|g| g.parse::<usize>().ok()) else { continue };
                    let g = gpus.entry(gpu).or_default();
                    let slot = match name {
                        DCGM_GPU_UTIL => &mut g.util,
                        DCGM_FB_USED => &mut g.fb_used,
                        DCGM_FB_FREE => &mut g.fb_free,
                        DCGM_FB_RESERVED => &mut g.fb_reserved,
                        DCGM_POWER => &mut g.power,
                        DCGM_TEMP => &mut g.temp,
                        DCGM_SM_CLOCK => &mut g.sm_clock,
                        _ => continue,
                    };
                    *slot = Some(value);
                }
                NVITOP_GPU_UTIL | NVITOP_MEM_USED | NVITOP_MEM_TOTAL | NVITOP_POWER | NVITOP_TEMP | NVITOP_SM_CLOCK => {
                    // A MIG instance's index is `0:1`: not a whole GPU, skipped.
                    let Some(gpu) = s.labels.get("index").and_then(|g| g.parse::<usize>().ok()) else { continue };
                    let g = gpus.entry(gpu).or_default();
                    let slot = match s.metric.as_str() {
                        NVITOP_GPU_UTIL => &mut g.util,
                        NVITOP_MEM_USED => &mut g.fb_used,
                        NVITOP_MEM_TOTAL => &mut g.fb_total,
                        NVITOP_POWER => &mut g.power,
                        NVITOP_TEMP => &mut g.temp,
                        _ => &mut g.sm_clock,
                    };
                    *slot = Some(value);
                }
                NVITOP_HOST_CPU => nvitop_cpu = Some(value),
                NVITOP_HOST_MEM_TOTAL => nvitop_mem_total = Some(value * MIB),
                NVITOP_HOST_MEM_USED => nvitop_mem_used = Some(value * MIB),
                _ => {}
            }
        }
        let mut push = |local: &str, value: f64| out.push((MetricName::Owned(catalog::remote(host, local)), value));
        if cpu_seen {
            if let Some((idle0, total0)) = self.cpu {
                let (d_idle, d_total) = (idle - idle0, total - total0);
                // A counter that went back (the exporter restarted) gives no figure this time.
                if d_total > 0.0 && d_idle >= 0.0 && d_idle <= d_total {
                    push(catalog::host::CPU_PCT, 100.0 * (1.0 - d_idle / d_total));
                }
            }
            self.cpu = Some((idle, total));
        }
        if let Some(t) = mem_total {
            push(catalog::host::MEM_TOTAL_BYTES, t);
            if let Some(a) = mem_available {
                push(catalog::host::MEM_USED_BYTES, (t - a).max(0.0));
            }
        } else if let Some(t) = nvitop_mem_total {
            push(catalog::host::MEM_TOTAL_BYTES, t);
            if let Some(u) = nvitop_mem_used {
                push(catalog::host::MEM_USED_BYTES, u.clamp(0.0, t));
            }
        }
        if let (false, Some(c)) = (cpu_seen, nvitop_cpu) {
            push(catalog::host::CPU_PCT, c);
        }
        for (i, g) in &gpus {
            let gpu = catalog::gpu(*i);
            let used = g.fb_used.map(|u| u * MIB);
            let total = match (g.fb_total, g.fb_used, g.fb_free) {
                (Some(t), _, _) => Some(t * MIB),
                (None, Some(u), Some(f)) => Some((u + f + g.fb_reserved.unwrap_or(0.0)) * MIB),
                _ => None,
            };
            let figures = [(gpu.util_pct(), g.util), (gpu.mem_used_bytes(), used), (gpu.mem_total_bytes(), total), (gpu.power_w(), g.power), (gpu.temp_c(), g.temp), (gpu.sm_clock_mhz(), g.sm_clock)];
            for (name, value) in figures {
                if let Some(v) = value {
                    push(&name, v);
                }
            }
        }
        out
    }
}

/// A remote host as the session last heard from it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteHost {
    pub host: String,
    /// Session time of its newest sample.
    pub last_s: f64,
    /// Seconds since then, at the session's time.
    pub age_s: f64,
    pub stale: bool,
}

/// Every remote host in the session's telemetry, by name, with the age of its
/// newest sample: a host that stopped answering keeps its last figures and ages.
pub fn remote_hosts(state: &SessionState) -> Vec<RemoteHost> {
    let mut newest: BTreeMap<&str, f64> = BTreeMap::new();
    for (name, series) in &state.telemetry {
        let (Some((host, _)), Some(t)) = (catalog::parse_remote(name), series.last_time()) else { continue };
        let e = newest.entry(host).or_insert(f64::NEG_INFINITY);
        *e = e.max(t);
    }
    newest
        .into_iter()
        .map(|(host, last_s)| {
            let age_s = (state.time_s - last_s).max(0.0);
            RemoteHost { host: host.to_owned(), last_s, age_s, stale: age_s > STALE_AFTER_S }
        })
        .collect()
}

/// One GET of `endpoint`, its body as text.
pub async fn fetch(endpoint: &Endpoint, timeout: Duration) -> Result<String, String> {
    let get = async {
        let stream = tokio::net::TcpStream::connect((endpoint.host.as_str(), endpoint.port)).await.map_err(|e| e.to_string())?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let request = hyper::Request::get(endpoint.path.as_str())
            .header(hyper::header::HOST, endpoint.authority.as_str())
            .header(hyper::header::ACCEPT, "text/plain;version=0.0.4")
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        let body = Limited::new(response.into_body(), MAX_PAGE_BYTES).collect().await.map_err(|e| e.to_string())?.to_bytes();
        String::from_utf8(body.to_vec()).map_err(|_| "the page is not UTF-8".to_owned())
    };
    tokio::time::timeout(timeout, get).await.map_err(|_| format!("no answer within {:.1} s", timeout.as_secs_f64()))?
}

/// Scrapes every target on its interval until `cancel` fires, one task each.
/// Samples go with `try_send` (dropped when the hub is behind, like local telemetry).
pub fn spawn(targets: &[ScrapeTarget], tx: &mpsc::Sender<Event>, cancel: &CancellationToken, session_start: Instant) -> Vec<tokio::task::JoinHandle<()>> {
    targets.iter().cloned().map(|target| tokio::spawn(scrape_until_cancelled(target, tx.clone(), cancel.clone(), session_start))).collect()
}

async fn scrape_until_cancelled(target: ScrapeTarget, tx: mpsc::Sender<Event>, cancel: CancellationToken, session_start: Instant) {
    let log = |level, message: String| {
        let _ = tx.try_send(Event::Log { run: None, level, message });
    };
    let endpoint = match Endpoint::parse(&target.url) {
        Ok(e) => e,
        Err(e) => return log(LogLevel::Warn, format!("telemetry from {}: {e}", target.host)),
    };
    let mut ticks = tokio::time::interval(target.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut mapper = Mapper::default();
    let mut answering = Answering::default();
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = cancel.cancelled() => return,
        }
        let page = tokio::select! {
            page = fetch(&endpoint, target.interval.max(Duration::from_secs(1))) => page,
            _ = cancel.cancelled() => return,
        };
        match page {
            Ok(page) => {
                let values = mapper.map(&target.host, &page);
                if answering.changed(true) {
                    log(LogLevel::Info, format!("telemetry from {}: reading {} ({} figures)", target.host, target.url, values.len()));
                }
                if !send_sample(&tx, session_start, values) {
                    return;
                }
            }
            Err(e) => {
                if answering.changed(false) {
                    log(LogLevel::Warn, format!("telemetry from {}: {} does not answer ({e}); its figures are stale until it does", target.host, target.url));
                }
            }
        }
    }
}

/// Whether a remote source answered its last poll: the log says so each time
/// that changes, not at every poll.
#[derive(Debug, Default)]
pub(super) struct Answering(Option<bool>);

impl Answering {
    /// Records this poll's answer; true when it differs from the last one.
    pub(super) fn changed(&mut self, answered: bool) -> bool {
        let changed = self.0 != Some(answered);
        self.0 = Some(answered);
        changed
    }
}

/// One remote telemetry sample to the hub, dropped when the hub is behind (like
/// local telemetry). False once the session has stopped listening.
pub(super) fn send_sample(tx: &mpsc::Sender<Event>, session_start: Instant, values: Vec<(MetricName, f64)>) -> bool {
    if values.is_empty() {
        return true;
    }
    let event = Event::Telemetry { time_s: session_start.elapsed().as_secs_f64(), values };
    !matches!(tx.try_send(event), Err(mpsc::error::TrySendError::Closed(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = include_str!("../../tests/fixtures/exporters/node_exporter.txt");
    const DCGM: &str = include_str!("../../tests/fixtures/exporters/dcgm_exporter.txt");
    const NVITOP: &str = include_str!("../../tests/fixtures/exporters/nvitop_exporter.txt");

    fn get(m: &[(MetricName, f64)], name: &str) -> Option<f64> {
        m.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    #[test]
    fn node_exporter_gives_memory_at_once_and_cpu_from_the_second_page() {
        let mut mapper = Mapper::default();
        let first = mapper.map("node7", NODE);
        assert_eq!(get(&first, "node7/host/mem_total_bytes"), Some(67_108_864_000.0));
        assert_eq!(get(&first, "node7/host/mem_used_bytes"), Some(67_108_864_000.0 - 41_943_040_000.0));
        assert_eq!(get(&first, "node7/host/cpu_pct"), None, "a percentage needs two pages");
        // 10 s later: each of the 2 CPUs idled 5 of 10 s more (20 s of CPU in all).
        let later = NODE.replace("cpu=\"0\",mode=\"idle\"} 10000", "cpu=\"0\",mode=\"idle\"} 10005").replace("cpu=\"1\",mode=\"idle\"} 12000", "cpu=\"1\",mode=\"idle\"} 12005").replace("cpu=\"0\",mode=\"user\"} 500", "cpu=\"0\",mode=\"user\"} 505").replace("cpu=\"1\",mode=\"user\"} 300", "cpu=\"1\",mode=\"user\"} 305");
        let second = mapper.map("node7", &later);
        assert_eq!(get(&second, "node7/host/cpu_pct"), Some(50.0));
        // An exporter restart (counters back to small values) gives no CPU figure.
        assert_eq!(get(&mapper.map("node7", &NODE.replace("10000", "1")), "node7/host/cpu_pct"), None);
    }

    #[test]
    fn dcgm_exporter_gives_each_gpu_under_its_index() {
        let m = Mapper::default().map("node3", DCGM);
        assert_eq!(get(&m, "node3/gpu0/util_pct"), Some(97.0));
        assert_eq!(get(&m, "node3/gpu1/util_pct"), Some(12.0));
        assert_eq!(get(&m, "node3/gpu0/mem_used_bytes"), Some(61_440.0 * MIB));
        assert_eq!(get(&m, "node3/gpu0/mem_total_bytes"), Some((61_440.0 + 19_855.0 + 264.0) * MIB));
        assert_eq!(get(&m, "node3/gpu0/power_w"), Some(412.5));
        assert_eq!(get(&m, "node3/gpu0/temp_c"), Some(64.0));
        assert_eq!(get(&m, "node3/gpu1/sm_clock_mhz"), Some(1410.0));
        for (name, _) in &m {
            let info = catalog::info(name).unwrap_or_else(|| panic!("{name} is not in the catalog"));
            assert_eq!(info.kind, catalog::SeriesKind::Telemetry);
        }
    }

    #[test]
    fn nvitop_exporter_gives_gpus_by_index_and_the_host() {
        let m = Mapper::default().map("node5", NVITOP);
        assert_eq!(get(&m, "node5/gpu0/util_pct"), Some(97.0));
        assert_eq!(get(&m, "node5/gpu1/util_pct"), Some(3.0));
        assert_eq!(get(&m, "node5/gpu0/mem_used_bytes"), Some(71_234.0 * MIB));
        assert_eq!(get(&m, "node5/gpu0/mem_total_bytes"), Some(81_559.0 * MIB));
        assert_eq!(get(&m, "node5/gpu0/power_w"), Some(512.774));
        assert_eq!(get(&m, "node5/gpu1/temp_c"), Some(33.0));
        assert_eq!(get(&m, "node5/gpu0/sm_clock_mhz"), Some(1980.0));
        assert_eq!(get(&m, "node5/host/cpu_pct"), Some(41.3), "a percentage on the first page");
        assert_eq!(get(&m, "node5/host/mem_total_bytes"), Some(2_063_720.5 * MIB));
        assert_eq!(get(&m, "node5/host/mem_used_bytes"), Some(412_330.25 * MIB));
        assert_eq!(get(&m, "node5/gpu1/power_w"), None, "N/A (NaN) is no figure");
        assert!(m.iter().all(|(n, _)| !n.contains("gpu2")), "a MIG index is not a GPU: {m:?}");
        for (name, _) in &m {
            assert_eq!(catalog::info(name).map(|i| i.kind), Some(catalog::SeriesKind::Telemetry), "{name}");
        }
    }

    #[test]
    fn bad_pages_give_nothing_and_never_panic() {
        for page in ["", "garbage", "{{{", "DCGM_FI_DEV_GPU_UTIL{gpu=\"x\"} 5", "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} NaN", "node_memory_MemTotal_bytes abc", "# TYPE x histogram\nx_bucket{le=\"1\"} 3\n", "\u{0}\u{1}=\"", "a{b=\"c} 1"] {
            let m = Mapper::default().map("h", page);
            assert!(m.is_empty(), "{page:?}: {m:?}");
        }
    }

    #[test]
    fn urls_parse_to_host_port_and_path() {
        let e = Endpoint::parse("http://node7:9400/metrics").unwrap();
        assert_eq!((e.host.as_str(), e.port, e.authority.as_str(), e.path.as_str()), ("node7", 9400, "node7:9400", "/metrics"));
        assert_eq!(Endpoint::parse("http://node7:9100").unwrap().path, "/metrics");
        assert_eq!(Endpoint::parse("http://[::1]:9100/metrics").unwrap().host, "::1");
        assert_eq!(Endpoint::parse("http://node7/metrics").unwrap().port, 80);
        for bad in ["https://node7:9100/metrics", "node7:9100", "http://:9100/", "http://node7:x/", "http://u:p@node7/"] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_host_that_stops_answering_ages_and_goes_stale_never_zero() {
        let mut state = SessionState::new("s".into(), vec![]);
        state.telemetry.entry("node7/host/cpu_pct".into()).or_default().push(0, 3.0, 40.0);
        state.telemetry.entry("node7/gpu0/util_pct".into()).or_default().push(0, 4.0, 90.0);
        state.telemetry.entry("node8/host/cpu_pct".into()).or_default().push(0, 19.0, 10.0);
        state.telemetry.entry("host/cpu_pct".into()).or_default().push(0, 20.0, 5.0);
        state.time_s = 20.0;
        let hosts = remote_hosts(&state);
        assert_eq!(hosts, vec![
            RemoteHost { host: "node7".into(), last_s: 4.0, age_s: 16.0, stale: true },
            RemoteHost { host: "node8".into(), last_s: 19.0, age_s: 1.0, stale: false },
        ]);
        assert_eq!(state.telemetry["node7/gpu0/util_pct"].last(), Some(90.0), "its last figure stays");
    }
}
