//! `rlmon watch --serve ADDR`: Prometheus text on /metrics and a JSON feed on
//! /api/points, fetched over plain TCP while a command run trains; Debian's
//! `prometheus` scrapes it when installed. Without --serve no port is open.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A command run that trains 5 steps (1000 tokens in 0.5 s: 2000 tokens/s), logs a
/// NaN loss at step 6 (a critical nonfinite alert), then waits for `release` to exist.
fn config(dir: &Path) -> (PathBuf, PathBuf) {
    let release = dir.join("release");
    let script = r#"
import json, os, sys, time
for s in range(1, 6):
    print(json.dumps({"step": s, "loss": 2.0 - s / 10, "tokens": 1000, "step_time_s": 0.5}), flush=True)
print('{"step": 6, "loss": NaN, "tokens": 1000, "step_time_s": 0.5}', flush=True)
deadline = time.time() + 120
while not os.path.exists(sys.argv[1]) and time.time() < deadline:
    time.sleep(0.05)
"#;
    let argv = serde_json::to_string(&["python3", "-c", script, release.to_str().unwrap()]).unwrap();
    let path = dir.join("session.toml");
    std::fs::write(&path, format!("[[run]]\nname = \"job\"\nworkload = \"command\"\ncommand = {argv}\n")).unwrap();
    (path, release)
}

/// rlmon watching `config` headless, its stderr lines sent to the receiver.
fn start(dir: &Path, config: &Path, extra: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("rlmon"))
        .args(["watch", "--headless", "--config"])
        .arg(config)
        .args(extra)
        .current_dir(ROOT)
        .env("RLMON_SESSION_DIR", dir.join("sessions"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// The address rlmon says it serves on.
fn served_addr(lines: &mpsc::Receiver<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Ok(line) = lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        if let Some(rest) = line.strip_prefix("rlmon: serving http://") {
            return rest.split('/').next().unwrap().to_owned();
        }
    }
    panic!("rlmon never said where it serves");
}

/// GET over plain TCP: (status line, body). Chunked bodies are decoded.
fn get(addr: &str, path: &str) -> std::io::Result<(String, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("").to_owned();
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_owned() };
    Ok((status, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// The value of the sample line starting with `series` (name and labels) in an exposition.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Polls `check` on /metrics until it holds or 60 s pass.
fn wait_for_metrics(addr: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Ok((status, body)) = get(addr, "/metrics") {
            assert!(status.contains("200"), "{status}");
            if check(&body) {
                return body;
            }
            last = body;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("/metrics never showed what was expected:\n{last}");
}

fn finish(mut child: Child, release: &Path) {
    std::fs::write(release, "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "rlmon did not exit after the run ended");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Debian's Prometheus on a free local port, scraping `target` every second as
/// job `job`, its data under `dir`; returns the process and its address.
fn start_prometheus(dir: &Path, job: &str, target: &str) -> (Child, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let config = dir.join("prometheus.yml");
    std::fs::write(&config, format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("tsdb").display()))
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (child, addr)
}

/// The example Alertmanager rules (rlmon's alerts, stalls, silent runs) are
/// valid Prometheus rules: checked with Debian's `promtool` where it is installed.
#[test]
fn the_example_alert_rules_pass_promtool() {
    let rules = Path::new(ROOT).join("examples/prometheus/rlmon-alerts.yml");
    let text = std::fs::read_to_string(&rules).unwrap();
    for series in ["rlmon_alert", "rlmon_last_step_timestamp_seconds", "rlmon_run_state", "kind=\"stalled\""] {
        assert!(text.contains(series), "the rules use {series}");
    }
    let out = match Command::new("promtool").arg("check").arg("rules").arg(&rules).output() {
        Ok(out) => out,
        Err(_) => {
            eprintln!("skipped: promtool is not installed (Debian package `prometheus`)");
            return;
        }
    };
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{said}");
    assert!(said.contains("SUCCESS"), "{said}");
}

#[test]
fn metrics_and_alerts_are_served_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let (config, release) = config(dir.path());
    let (child, lines) = start(dir.path(), &config, &["--serve", "127.0.0.1:0"]);
    let addr = served_addr(&lines);
    let alert = r#"rlmon_alert{run="job",kind="nonfinite",severity="critical"}"#;
    let text = wait_for_metrics(&addr, |t| sample(t, alert).is_some() && sample(t, r#"rlmon_step{run="job"}"#) == Some(6.0));
    assert_eq!(sample(&text, alert), Some(1.0), "{text}");
    assert_eq!(sample(&text, r#"rlmon_tokens_per_second{run="job"}"#), Some(2000.0), "{text}");
    assert!(sample(&text, r#"rlmon_loss{run="job"}"#).is_some_and(f64::is_nan), "{text}");
    assert!(text.contains("# TYPE rlmon_tokens_per_second gauge"), "{text}");
    assert!(sample(&text, r#"rlmon_host_cpu_percent"#).is_some(), "local telemetry too: {text}");
    // When the newest step was seen, in Unix seconds: Prometheus alerts on its age.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let last = sample(&text, r#"rlmon_last_step_timestamp_seconds{run="job"}"#).unwrap_or_else(|| panic!("{text}"));
    assert!(last <= now + 1.0 && last > now - 300.0, "{last} vs now {now}");

    let (status, body) = get(&addr, "/api/points?since=0").unwrap();
    assert!(status.contains("200"), "{status}");
    let feed: serde_json::Value = serde_json::from_str(&body).unwrap();
    let points = feed["points"].as_array().unwrap();
    let losses: Vec<&serde_json::Value> = points.iter().filter(|p| p["run"] == "job" && p["metric"] == "loss").map(|p| &p["value"]).collect();
    assert_eq!(losses.len(), 6, "{body}");
    assert!(losses[5].is_null(), "NaN is null: {body}");
    let next = feed["next"].as_u64().unwrap();
    let (_, later) = get(&addr, &format!("/api/points?since={next}")).unwrap();
    let later: serde_json::Value = serde_json::from_str(&later).unwrap();
    assert!(later["points"].as_array().unwrap().iter().all(|p| p["seq"].as_u64().unwrap() >= next));
    assert_eq!(get(&addr, "/nothing").unwrap().0.split(' ').nth(1), Some("404"));
    finish(child, &release);
}

/// Inodes of the sockets listening on TCP (IPv4 and IPv6) in this network namespace.
fn listening_inodes() -> Vec<String> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9 && f[3] == "0A" {
                inodes.push(f[9].to_owned());
            }
        }
    }
    inodes
}

/// The socket inodes process `pid` holds open.
fn socket_inodes(pid: u32) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|link| Some(link.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned()))
        .collect()
}

#[test]
fn no_port_is_open_without_serve_and_one_is_with_it() {
    for serve in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (config, release) = config(dir.path());
        let extra: &[&str] = if serve { &["--serve", "127.0.0.1:0"] } else { &[] };
        let (child, lines) = start(dir.path(), &config, extra);
        // Wait until the run is under way (its alert is logged), so rlmon is fully up.
        let deadline = Instant::now() + Duration::from_secs(60);
        while let Ok(line) = lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            if line.contains("nonfinite") {
                break;
            }
        }
        let listening = listening_inodes();
        let held = socket_inodes(child.id());
        let listens = held.iter().any(|i| listening.contains(i));
        assert_eq!(listens, serve, "--serve given: {serve}; rlmon's sockets {held:?}, listening {listening:?}");
        finish(child, &release);
    }
}

/// A port free now on 127.0.0.1 (for a program that must be told one).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn installed(program: &str) -> bool {
    Command::new(program).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// A PromQL instant query's result vector, once it is not empty (60 s at most).
fn query(prom: &str, promql: &str) -> Vec<serde_json::Value> {
    let encoded: String = promql.bytes().map(|b| if b.is_ascii_alphanumeric() || b == b'_' { (b as char).to_string() } else { format!("%{b:02X}") }).collect();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Ok((_, body)) = get(prom, &format!("/api/v1/query?query={encoded}")) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) {
                if let Some(result) = v["data"]["result"].as_array().filter(|r| !r.is_empty()) {
                    return result.clone();
                }
            }
            last = body;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("Prometheus never answered {promql}: {last}");
}

#[test]
fn prometheus_scrapes_tokens_per_second_and_the_alert() {
    if !installed("prometheus") {
        eprintln!("skipped: Debian's `prometheus` is not installed (apt-get install prometheus)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (config, release) = config(dir.path());
    let (child, lines) = start(dir.path(), &config, &["--serve", "127.0.0.1:0"]);
    let addr = served_addr(&lines);
    let (mut prometheus, prom_addr) = start_prometheus(dir.path(), "rlmon", &addr);
    let tokens = query(&prom_addr, r#"rlmon_tokens_per_second{run="job"}"#);
    let alert = query(&prom_addr, r#"rlmon_alert{severity="critical"}"#);
    let _ = prometheus.kill();
    let _ = prometheus.wait();
    assert_eq!(tokens[0]["value"][1], "2000", "{tokens:?}");
    assert_eq!(alert[0]["metric"]["kind"], "nonfinite", "{alert:?}");
    assert_eq!(alert[0]["metric"]["run"], "job", "{alert:?}");
    finish(child, &release);
}

/// A stand-in exporter: answers every request with `page` until `stop` is set.
fn fake_exporter(page: &'static str) -> (String, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopped = stop.clone();
    std::thread::spawn(move || {
        while !stopped.load(std::sync::atomic::Ordering::SeqCst) {
            match listener.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf);
                    let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}", page.len());
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        // Dropping the listener: connections are refused from now on.
    });
    (addr, stop)
}

#[test]
fn scraped_hosts_are_served_under_their_name_and_go_stale_when_they_stop() {
    let dir = tempfile::tempdir().unwrap();
    let (config, release) = config(dir.path());
    let (node, stop_node) = fake_exporter(include_str!("fixtures/exporters/node_exporter.txt"));
    let (dcgm, _keep) = fake_exporter(include_str!("fixtures/exporters/dcgm_exporter.txt"));
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[[telemetry.scrape]]\nurl = \"http://{node}/metrics\"\nhost = \"node7\"\ninterval_s = 0.5\n\n[[telemetry.scrape]]\nurl = \"http://{dcgm}/metrics\"\nhost = \"node3\"\ninterval_s = 0.5\n"
    ));
    std::fs::write(&config, text).unwrap();
    let (child, lines) = start(dir.path(), &config, &["--serve", "127.0.0.1:0"]);
    let addr = served_addr(&lines);
    let metrics = wait_for_metrics(&addr, |t| sample(t, r#"rlmon_host_mem_total_bytes{host="node7"}"#).is_some() && sample(t, r#"rlmon_gpu_util_percent{host="node3",gpu="1"}"#).is_some());
    assert_eq!(sample(&metrics, r#"rlmon_host_mem_total_bytes{host="node7"}"#), Some(67_108_864_000.0), "{metrics}");
    assert_eq!(sample(&metrics, r#"rlmon_gpu_util_percent{host="node3",gpu="0"}"#), Some(97.0), "{metrics}");
    assert_eq!(sample(&metrics, r#"rlmon_gpu_mem_used_bytes{host="node3",gpu="0"}"#), Some(61_440.0 * 1024.0 * 1024.0), "{metrics}");
    assert_eq!(sample(&metrics, r#"rlmon_remote_host_stale{host="node7"}"#), Some(0.0), "{metrics}");
    // node7 stops answering: it goes stale with its last figures kept, and the session goes on.
    stop_node.store(true, std::sync::atomic::Ordering::SeqCst);
    let metrics = wait_for_metrics(&addr, |t| sample(t, r#"rlmon_remote_host_stale{host="node7"}"#) == Some(1.0));
    assert_eq!(sample(&metrics, r#"rlmon_host_mem_total_bytes{host="node7"}"#), Some(67_108_864_000.0), "never zero: {metrics}");
    assert_eq!(sample(&metrics, r#"rlmon_remote_host_stale{host="node3"}"#), Some(0.0), "{metrics}");
    finish(child, &release);
}

#[test]
fn a_real_node_exporter_is_scraped_when_installed() {
    if !installed("prometheus-node-exporter") {
        eprintln!("skipped: Debian's `prometheus-node-exporter` is not installed (apt-get install prometheus-node-exporter)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (config, release) = config(dir.path());
    let exporter_addr = format!("127.0.0.1:{}", free_port());
    let mut exporter = Command::new("prometheus-node-exporter")
        .arg(format!("--web.listen-address={exporter_addr}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("\n[[telemetry.scrape]]\nurl = \"http://{exporter_addr}/metrics\"\nhost = \"local\"\ninterval_s = 0.5\n"));
    std::fs::write(&config, text).unwrap();
    let (child, lines) = start(dir.path(), &config, &["--serve", "127.0.0.1:0"]);
    let addr = served_addr(&lines);
    let metrics = wait_for_metrics(&addr, |t| sample(t, r#"rlmon_host_cpu_percent{host="local"}"#).is_some());
    let _ = exporter.kill();
    let _ = exporter.wait();
    let total = sample(&metrics, r#"rlmon_host_mem_total_bytes{host="local"}"#).unwrap_or(0.0);
    let used = sample(&metrics, r#"rlmon_host_mem_used_bytes{host="local"}"#).unwrap_or(-1.0);
    assert!(total > 1e8 && (0.0..=total).contains(&used), "{metrics}");
    let cpu = sample(&metrics, r#"rlmon_host_cpu_percent{host="local"}"#).unwrap();
    assert!((0.0..=100.0).contains(&cpu), "{metrics}");
    finish(child, &release);
}

#[test]
fn an_address_that_cannot_be_bound_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (config, _release) = config(dir.path());
    let out = Command::new(assert_cmd::cargo::cargo_bin("rlmon"))
        .args(["watch", "--headless", "--serve", "not-an-address", "--config"])
        .arg(&config)
        .env("RLMON_SESSION_DIR", dir.path().join("sessions"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot serve on not-an-address"), "{stderr}");
}

#[test]
fn an_attached_rlmon_follows_a_served_one_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let (config, release) = config(dir.path());
    let (remote, lines) = start(dir.path(), &config, &["--serve", "127.0.0.1:0"]);
    let addr = served_addr(&lines);
    // Wait for the remote's run to be listed (its feed lists runs from the start).
    let (_, runs) = get(&addr, "/api/runs").unwrap();
    assert!(runs.contains(r#""name":"job""#), "{runs}");
    let follower_dir = dir.path().join("follower");
    std::fs::create_dir_all(&follower_dir).unwrap();
    let mut follower = Command::new(assert_cmd::cargo::cargo_bin("rlmon"))
        .args(["watch", "--headless", "--json", "--attach", &format!("http://{addr}/")])
        .current_dir(ROOT)
        .env("RLMON_SESSION_DIR", follower_dir.join("sessions"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The follower raises the remote run's alert from its points as they come.
    let stderr = follower.stderr.take().unwrap();
    let (tx, follower_lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    while let Ok(line) = follower_lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        let alerted = line.contains("nonfinite") || line.contains("non-finite");
        seen.push(line);
        if alerted {
            break;
        }
    }
    assert!(seen.iter().any(|l| l.contains("following job on 127.0.0.1")), "{seen:#?}");
    // The remote's run ends: the follower sees it end and summarises.
    finish(remote, &release);
    let out = follower.wait_with_output().unwrap();
    let rest: Vec<String> = follower_lines.try_iter().collect();
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {seen:#?} {rest:#?}"));
    let run = &summary["runs"][0];
    assert_eq!(run["name"], "127.0.0.1:job", "{summary:#}");
    assert_eq!(run["state"], "finished", "{summary:#} {rest:#?}");
    assert_eq!(run["steps"], 6, "{summary:#}");
    assert_eq!(run["tokens_per_s"], 2000.0, "derived again from the remote's tokens and step times: {summary:#}");
    assert!(run["alerts"].as_array().unwrap().iter().any(|a| a["kind"] == "nonfinite"), "{summary:#}");
    assert!(summary["runs"].as_array().unwrap().len() == 1, "{summary:#}");
}

#[test]
fn a_followed_machine_that_goes_silent_is_stale_then_failed() {
    let dir = tempfile::tempdir().unwrap();
    let (config, release) = config(dir.path());
    let (mut remote, lines) = start(dir.path(), &config, &["--serve", "127.0.0.1:0"]);
    let addr = served_addr(&lines);
    let (_, runs) = get(&addr, "/api/runs").unwrap();
    assert!(runs.contains(r#""name":"job""#), "{runs}");
    let follower_dir = dir.path().join("follower");
    std::fs::create_dir_all(&follower_dir).unwrap();
    let follower = Command::new(assert_cmd::cargo::cargo_bin("rlmon"))
        .args(["watch", "--headless", "--json", "--attach", &format!("http://{addr}/")])
        .current_dir(ROOT)
        .env("RLMON_SESSION_DIR", follower_dir.join("sessions"))
        .env("RLMON_GONE_AFTER_S", "3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the follower has read some of the run, then the machine vanishes.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_dir(follower_dir.join("sessions")).map(|d| d.count() > 0).unwrap_or(false) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    remote.kill().unwrap();
    let _ = remote.wait();
    let started = Instant::now();
    let out = follower.wait_with_output().unwrap();
    std::fs::write(&release, "").unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(started.elapsed() < Duration::from_secs(30), "the follower ends soon after the machine is gone: {stderr}");
    assert!(stderr.contains("does not answer"), "the machine is reported stale first: {stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let run = &summary["runs"][0];
    assert_eq!(run["state"], "failed", "{summary:#}");
    assert!(run["error"].as_str().unwrap_or("").contains("stopped answering"), "{summary:#}");
    assert!(run["steps"].as_u64().unwrap_or(0) >= 1, "what was read before is kept: {summary:#}");
}

#[test]
fn attaching_a_machine_that_does_not_answer_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let started = Instant::now();
    let out = Command::new(assert_cmd::cargo::cargo_bin("rlmon"))
        .args(["watch", "--headless", "--attach", &format!("http://127.0.0.1:{port}/")])
        .env("RLMON_SESSION_DIR", dir.path().join("sessions"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is `rlmon watch --serve` running there?"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn a_prometheus_server_gives_the_same_host_figures_with_history() {
    if !installed("prometheus") || !installed("prometheus-node-exporter") {
        eprintln!("skipped: Debian's `prometheus` and `prometheus-node-exporter` are not both installed (apt-get install prometheus prometheus-node-exporter)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (config, release) = config(dir.path());
    let exporter_addr = format!("127.0.0.1:{}", free_port());
    let mut exporter = Command::new("prometheus-node-exporter").arg(format!("--web.listen-address={exporter_addr}")).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let (mut prometheus, prom_addr) = start_prometheus(dir.path(), "node", &exporter_addr);
    // rlmon starts late: Prometheus already holds a few seconds of the node.
    query(&prom_addr, r#"node_memory_MemTotal_bytes{job="node"}"#);
    std::thread::sleep(Duration::from_secs(3));
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("\n[telemetry.prometheus]\nserver = \"http://{prom_addr}\"\nselector = '{{job=\"node\"}}'\ninterval_s = 0.5\nhistory_s = 60\n"));
    std::fs::write(&config, text).unwrap();
    let (child, lines) = start(dir.path(), &config, &["--serve", "127.0.0.1:0"]);
    let addr = served_addr(&lines);
    let metrics = wait_for_metrics(&addr, |t| sample(t, r#"rlmon_host_cpu_percent{host="127.0.0.1"}"#).is_some() && sample(t, r#"rlmon_host_mem_total_bytes{host="127.0.0.1"}"#).is_some());
    let (_, feed) = get(&addr, "/api/points?since=0").unwrap();
    let _ = prometheus.kill();
    let _ = prometheus.wait();
    let _ = exporter.kill();
    let _ = exporter.wait();
    let total = sample(&metrics, r#"rlmon_host_mem_total_bytes{host="127.0.0.1"}"#).unwrap();
    let used = sample(&metrics, r#"rlmon_host_mem_used_bytes{host="127.0.0.1"}"#).unwrap_or(-1.0);
    assert!(total > 1e8 && (0.0..=total).contains(&used), "{metrics}");
    assert!((0.0..=100.0).contains(&sample(&metrics, r#"rlmon_host_cpu_percent{host="127.0.0.1"}"#).unwrap()), "{metrics}");
    // The history read at start lies before the session began.
    let feed: serde_json::Value = serde_json::from_str(&feed).unwrap();
    let past = feed["points"].as_array().unwrap().iter().filter(|p| p["metric"] == "127.0.0.1/host/mem_total_bytes" && p["time_s"].as_f64().unwrap() < 0.0).count();
    assert!(past >= 2, "history from query_range: {feed}");
    finish(child, &release);
}
