//! Remote telemetry from a central Prometheus server (`[telemetry.prometheus]`):
//! the exporters' series that rlmon maps (node_exporter's CPU and memory,
//! dcgm-exporter's GPUs), picked by the config's selector, read through its HTTP
//! API: an instant query on every interval, and once at start a `query_range` over
//! the recent past (rlmon started after the job). Each instance's samples are
//! written back as an exporter page and mapped by the same [`Mapper`] as a direct
//! scrape, under the instance's host name (`node7:9100` → `node7`), so the figures
//! are the same whichever way they come.
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::scrape::{fetch, send_sample, Answering, Endpoint, Mapper, MAPPED_METRICS, NODE_CPU_SECONDS};
use crate::metrics::MetricName;
use crate::session::{Event, LogLevel};

/// A Prometheus server queried every `interval` for the exporters `selector` picks;
/// `history` of the past is read once at start (rlmon started after the job).
#[derive(Debug, Clone, PartialEq)]
pub struct PrometheusSource {
    pub server: String,
    /// The label matchers inside the braces (`job="train-42"`), or empty.
    pub matchers: String,
    pub interval: std::time::Duration,
    pub history: std::time::Duration,
}

/// The PromQL query for every mapped series the matchers pick. node_exporter's CPU
/// counters come summed per machine and mode (the mapper sums them anyway): a
/// 128-core node has a thousand of them, which would be most of every answer.
pub fn selector(matchers: &str) -> String {
    let names: Vec<&str> = MAPPED_METRICS.iter().copied().filter(|m| *m != NODE_CPU_SECONDS).collect();
    let names = names.join("|");
    let sep = if matchers.is_empty() { "" } else { "," };
    format!("{{__name__=~\"{names}\"{sep}{matchers}}} or sum by (__name__, instance, mode) ({NODE_CPU_SECONDS}{{{matchers}}})")
}

/// `s` percent-encoded for a query string.
fn encode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

/// The API's answer (`/api/v1/query` or `/api/v1/query_range`).
#[derive(Debug, Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<Data>,
}

#[derive(Debug, Deserialize)]
struct Data {
    #[serde(default)]
    result: Vec<SeriesResult>,
}

/// One series: its labels and its value (instant) or values (range), each
/// `[unix seconds, "number"]`.
#[derive(Debug, Deserialize)]
struct SeriesResult {
    metric: BTreeMap<String, String>,
    #[serde(default)]
    value: Option<(f64, String)>,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

/// The host an instance label names: `node7:9100` → `node7`, `[::1]:9100` → `::1`.
pub fn host_of(instance: &str) -> String {
    if let Some(v6) = instance.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6).to_owned();
    }
    match instance.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) && !h.is_empty() => h.to_owned(),
        _ => instance.to_owned(),
    }
    .replace('/', "_")
}

/// Exporter pages, one per (time, host), from an API answer: samples are grouped by
/// the host of their `instance` label and by timestamp, oldest first.
fn pages(body: &str) -> Result<BTreeMap<(i64, String), String>, String> {
    let answer: Answer = serde_json::from_str(body).map_err(|e| format!("not a Prometheus API answer ({e})"))?;
    if answer.status != "success" {
        return Err(answer.error.unwrap_or(answer.status));
    }
    let mut pages: BTreeMap<(i64, String), String> = BTreeMap::new();
    for series in answer.data.map(|d| d.result).unwrap_or_default() {
        let Some(name) = series.metric.get("__name__") else { continue };
        let host = series.metric.get("instance").map_or_else(|| "prometheus".to_owned(), |i| host_of(i));
        let labels: Vec<String> = series.metric.iter().filter(|(k, _)| *k != "__name__").map(|(k, v)| format!("{k}=\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"))).collect();
        for (t, v) in series.value.into_iter().chain(series.values) {
            // Milliseconds: samples of one evaluation share their timestamp.
            let page = pages.entry(((t * 1000.0).round() as i64, host.clone())).or_default();
            let _ = writeln!(page, "{name}{{{}}} {v}", labels.join(","));
        }
    }
    Ok(pages)
}

/// Maps API answers to telemetry, keeping one [`Mapper`] per host (CPU % needs the
/// previous page of the same host).
#[derive(Debug, Default)]
pub struct Reader {
    mappers: BTreeMap<String, Mapper>,
}

impl Reader {
    /// The telemetry of an answer: per timestamp (unix milliseconds, oldest first),
    /// every host's figures.
    pub fn read(&mut self, body: &str) -> Result<Vec<(i64, Vec<(MetricName, f64)>)>, String> {
        let mut out: Vec<(i64, Vec<(MetricName, f64)>)> = Vec::new();
        for ((t, host), page) in pages(body)? {
            let values = self.mappers.entry(host.clone()).or_default().map(&host, &page);
            if values.is_empty() {
                continue;
            }
            match out.last_mut() {
                Some((last, v)) if *last == t => v.extend(values),
                _ => out.push((t, values)),
            }
        }
        out.sort_by_key(|(t, _)| *t);
        Ok(out)
    }
}

/// Seconds since the epoch now.
fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Reads `source` until `cancel` fires: the history once, then an instant query on
/// every interval. Samples go with `try_send`, like local telemetry; the history
/// with `send` (it is read once and small).
pub fn spawn(source: &PrometheusSource, tx: &mpsc::Sender<Event>, cancel: &CancellationToken, session_start: Instant) -> tokio::task::JoinHandle<()> {
    tokio::spawn(query_until_cancelled(source.clone(), tx.clone(), cancel.clone(), session_start))
}

async fn query_until_cancelled(source: PrometheusSource, tx: mpsc::Sender<Event>, cancel: CancellationToken, session_start: Instant) {
    let log = |level, message: String| {
        let _ = tx.try_send(Event::Log { run: None, level, message });
    };
    let server = match Endpoint::parse(&source.server) {
        Ok(e) => e,
        Err(e) => return log(LogLevel::Warn, format!("telemetry from Prometheus: {e}")),
    };
    let at = |path: String| Endpoint { path, ..server.clone() };
    let query = encode(&selector(&source.matchers));
    let timeout = source.interval.max(Duration::from_secs(2));
    // Session time of a unix time: the history is before the session (negative).
    let session_time = |unix_s: f64| session_start.elapsed().as_secs_f64() - (unix_now() - unix_s);
    let mut reader = Reader::default();
    if !source.history.is_zero() {
        let end = unix_now();
        let start = end - source.history.as_secs_f64();
        let step = source.interval.as_secs_f64().max(1.0);
        let path = format!("/api/v1/query_range?query={query}&start={start:.3}&end={end:.3}&step={step}");
        let range = at(path);
        let answer = tokio::select! {
            a = fetch(&range, timeout.max(Duration::from_secs(10))) => a,
            _ = cancel.cancelled() => return,
        };
        match answer.and_then(|body| reader.read(&body)) {
            Ok(history) => {
                let hosts = history.iter().flat_map(|(_, v)| v.iter().filter_map(|(n, _)| crate::metrics::catalog::parse_remote(n).map(|(h, _)| h.to_owned()))).collect::<std::collections::BTreeSet<_>>();
                log(LogLevel::Info, format!("telemetry from Prometheus {}: {} samples of history for {} host(s)", source.server, history.len(), hosts.len()));
                for (t, values) in history {
                    if tx.send(Event::Telemetry { time_s: session_time(t as f64 / 1000.0), values }).await.is_err() {
                        return;
                    }
                }
            }
            Err(e) => log(LogLevel::Warn, format!("telemetry from Prometheus {}: no history ({e})", source.server)),
        }
    }
    let mut ticks = tokio::time::interval(source.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut answering = Answering::default();
    let instant = at(format!("/api/v1/query?query={query}"));
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = cancel.cancelled() => return,
        }
        let answer = tokio::select! {
            a = fetch(&instant, timeout) => a,
            _ = cancel.cancelled() => return,
        };
        match answer.and_then(|body| reader.read(&body)) {
            Ok(samples) => {
                if answering.changed(true) {
                    log(LogLevel::Info, format!("telemetry from Prometheus {}: reading {} figures", source.server, samples.iter().map(|(_, v)| v.len()).sum::<usize>()));
                }
                let values: Vec<(MetricName, f64)> = samples.into_iter().flat_map(|(_, v)| v).collect();
                if !send_sample(&tx, session_start, values) {
                    return;
                }
            }
            Err(e) => {
                if answering.changed(false) {
                    log(LogLevel::Warn, format!("telemetry from Prometheus {} does not answer ({e}); its hosts are stale until it does", source.server));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(m: &[(MetricName, f64)], name: &str) -> Option<f64> {
        m.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    #[test]
    fn the_selector_asks_for_the_mapped_series_of_the_job() {
        let s = selector(r#"job="train-42""#);
        assert!(s.starts_with(r#"{__name__=~"node_memory_MemTotal_bytes|"#), "{s}");
        assert!(s.contains(r#"",job="train-42"} or sum by (__name__, instance, mode) (node_cpu_seconds_total{job="train-42"})"#), "{s}");
        assert!(s.contains("DCGM_FI_DEV_GPU_UTIL") && s.contains("gpu_utilization_Percentage"), "{s}");
        assert!(!selector("").contains(",}"));
        assert!(selector("").ends_with("(node_cpu_seconds_total{})"));
        assert_eq!(encode(r#"{a="b c"}"#), "%7Ba%3D%22b%20c%22%7D");
    }

    #[test]
    fn instances_become_hosts() {
        assert_eq!(host_of("node7:9100"), "node7");
        assert_eq!(host_of("10.0.0.5:9400"), "10.0.0.5");
        assert_eq!(host_of("[::1]:9100"), "::1");
        assert_eq!(host_of("node7"), "node7");
        assert_eq!(host_of("a/b:1"), "a_b");
    }

    #[test]
    fn instant_answers_map_like_a_scrape_and_ranges_give_cpu_over_time() {
        let instant = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"node_memory_MemTotal_bytes","instance":"node7:9100","job":"x"},"value":[1700000000.5,"1000"]},
            {"metric":{"__name__":"node_memory_MemAvailable_bytes","instance":"node7:9100","job":"x"},"value":[1700000000.5,"400"]},
            {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","instance":"node7:9400","gpu":"3","job":"x"},"value":[1700000000.5,"88"]}]}}"#;
        let out = Reader::default().read(instant).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(get(&out[0].1, "node7/host/mem_used_bytes"), Some(600.0));
        assert_eq!(get(&out[0].1, "node7/gpu3/util_pct"), Some(88.0), "a machine's exporters share its name");
        // Two evaluations 10 s apart: CPU % from the second, as from two scrapes.
        let range = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"__name__":"node_cpu_seconds_total","instance":"n1:9100","cpu":"0","mode":"idle"},"values":[[100,"50"],[110,"55"]]},
            {"metric":{"__name__":"node_cpu_seconds_total","instance":"n1:9100","cpu":"0","mode":"user"},"values":[[100,"10"],[110,"15"]]}]}}"#;
        let out = Reader::default().read(range).unwrap();
        assert_eq!(out.len(), 1, "the first evaluation gives no percentage: {out:?}");
        assert_eq!(out[0].0, 110_000);
        assert_eq!(get(&out[0].1, "n1/host/cpu_pct"), Some(50.0));
    }

    #[test]
    fn errors_and_bad_answers_never_panic() {
        assert_eq!(Reader::default().read(r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#).unwrap_err(), "parse error");
        for bad in ["", "{", "[]", r#"{"status":"success"}"#, r#"{"status":"success","data":{"result":[{"metric":{},"value":[1,"x"]}]}}"#, r#"{"status":"success","data":{"result":[{"metric":{"__name__":"node_memory_MemTotal_bytes"},"value":[1,"NaN"]}]}}"#] {
            let r = Reader::default().read(bad);
            assert!(r.as_ref().map_or(true, |v| v.is_empty()), "{bad}: {r:?}");
        }
    }
}
