//! Alerts that leave the terminal: `--notify` and `[[notify]]` deliver to a local
//! HTTP receiver (127.0.0.1, an ephemeral port) in each format; a receiver that
//! fails or never answers does not hold the runs up; webhook secrets stay out of
//! the recording; `stalled` and `on_critical` on command runs. Python scripts
//! stand in for training jobs; nothing needs a GPU or the network.
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// One request as the receiver read it.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Ok,
    Error500,
    Never,
}

/// An HTTP receiver on 127.0.0.1 that records every request and answers as told.
struct Receiver {
    addr: String,
    got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    fn start(answer: Answer) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let got = Arc::new(Mutex::new(Vec::new()));
        let record = got.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                if let Some(r) = read_request(&mut stream) {
                    record.lock().unwrap().push(r);
                }
                match answer {
                    Answer::Ok => {
                        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
                    }
                    Answer::Error500 => {
                        let _ = stream.write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                    }
                    // Keeps the connection open and never answers.
                    Answer::Never => held.push(stream),
                }
            }
        });
        Receiver { addr, got }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn received(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }
}

fn read_request(stream: &mut TcpStream) -> Option<Received> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let len: usize = headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("content-length")).and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Received { path, headers, body })
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("session.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A `[[run]]` running `python3 -c SCRIPT ARGS...`, plus `extra` keys.
fn python_run(script: &str, args: &[&str], extra: &str) -> String {
    let mut argv = vec!["python3".to_owned(), "-c".to_owned(), script.to_owned()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let argv = serde_json::to_string(&argv).unwrap();
    format!("[[run]]\nname = \"job\"\nworkload = \"command\"\ncommand = {argv}\n{extra}\n")
}

fn watch(dir: &Path, args: &[&str]) -> (Option<i32>, Value, String) {
    let out: Output = Command::new(assert_cmd::cargo::cargo_bin("rlmon"))
        .args(["watch", "--headless", "--json"])
        .args(args)
        .current_dir(ROOT)
        .env("RLMON_SESSION_DIR", dir.join("sessions"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: stdout {:?}, stderr {stderr}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code(), summary, stderr)
}

/// Five steps, a NaN loss at step 6 (a critical nonfinite alert), then `wait`
/// seconds and two more steps.
const NAN_SCRIPT: &str = r#"
import json, sys, time
for s in range(1, 6):
    print(json.dumps({"step": s, "loss": 2.0 - s / 10}), flush=True)
print('{"step": 6, "loss": NaN}', flush=True)
time.sleep(float(sys.argv[1]))
for s in range(7, 9):
    print(json.dumps({"step": s, "loss": 1.0}), flush=True)
"#;

#[test]
fn the_nan_demo_delivers_one_json_message() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(Answer::Ok);
    let url = receiver.url("/");
    let (code, summary, stderr) = watch(dir.path(), &["--config", "workloads/faults/nan.toml", "--max-steps", "260", "--notify", &url]);
    assert_eq!(code, Some(1), "the run fails at its NaN: {stderr}");
    assert_eq!(summary["runs"][0]["state"], "failed", "{stderr}");
    // One message for the NaN. A machine busy enough to slow training may also
    // raise a throughput_regression warning, which is sent on its own.
    let got = receiver.received();
    let messages: Vec<Value> = got.iter().map(Received::json).collect();
    let mut notices: Vec<Value> = Vec::new();
    for m in &messages {
        notices.push(m.clone());
        notices.extend(m.get("more").and_then(Value::as_array).cloned().unwrap_or_default());
    }
    let nan: Vec<&Value> = messages.iter().filter(|m| m["kind"] == "nonfinite").collect();
    assert_eq!(nan.len(), 1, "one message for the NaN: {messages:?}\n{stderr}");
    assert_eq!(notices.iter().filter(|n| n["kind"] == "nonfinite").count(), 1, "sent once: {notices:?}");
    assert!(notices.iter().all(|n| n["kind"] == "nonfinite" || n["kind"] == "throughput_regression"), "{notices:?}\n{stderr}");
    assert!(got.iter().all(|r| r.header("content-type") == Some("application/json")));
    let m = nan[0];
    assert_eq!((m["kind"].as_str(), m["severity"].as_str(), m["run"].as_str(), m["event"].as_str()), (Some("nonfinite"), Some("critical"), Some("nan"), Some("alert")), "{m}");
    assert_eq!(m["step"], 250, "{m}");
    assert_eq!(m["session"], "fault-nan");
    for key in ["metric", "value", "message", "moved", "host", "time"] {
        assert!(m.get(key).is_some(), "{key} in {m}");
    }
    assert!(stderr.contains("alerts are sent to json http://127.0.0.1:"), "{stderr}");
}

#[test]
fn each_format_gets_its_shape_and_the_secret_stays_out_of_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(Answer::Ok);
    let out = dir.path().join("command-got.txt");
    let hook = format!(
        "[[notify]]\nurl = \"{}\"\non_end = true\n\n[[notify]]\nurl = \"{}\"\nformat = \"slack\"\n\n[[notify]]\nurl = \"{}\"\nformat = \"discord\"\n\n[[notify]]\nurl = \"{}\"\nformat = \"ntfy\"\n\n[[notify]]\ncommand = {}\n",
        receiver.url("/json/secret-token-4711"),
        receiver.url("/slack"),
        receiver.url("/discord"),
        receiver.url("/ntfy"),
        serde_json::to_string(&["python3", "-c", "import os, sys; open(sys.argv[1], 'w').write(os.environ['RLMON_KIND'] + ' ' + os.environ['RLMON_SEVERITY'] + '\\n' + sys.stdin.read())", out.to_str().unwrap()]).unwrap(),
    );
    let config = write_config(dir.path(), &format!("{hook}\n{}", python_run(NAN_SCRIPT, &["0.5"], "")));
    let (code, summary, stderr) = watch(dir.path(), &["--config", config.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(summary["runs"][0]["state"], "finished");
    let got = receiver.received();
    let at = |path: &str| -> Vec<Received> { got.iter().filter(|r| r.path == path).cloned().collect() };
    // json: the alert and the run's end (asked for with on_end), in one message
    // (the worst at the top, the other under `more`) or two, as they came.
    let json = at("/json/secret-token-4711");
    let mut notices: Vec<Value> = Vec::new();
    for m in &json {
        let mut v = m.json();
        let more = v.as_object_mut().unwrap().remove("more");
        notices.push(v);
        notices.extend(more.map(|m| m.as_array().unwrap().clone()).unwrap_or_default());
    }
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert_eq!((notices[0]["kind"].as_str(), notices[0]["event"].as_str()), (Some("nonfinite"), Some("alert")), "the worst first");
    let end = notices[1].clone();
    assert_eq!((end["event"].as_str(), end["state"].as_str(), end["run"].as_str()), (Some("run_end"), Some("finished"), Some("job")), "{end}");
    assert!(end["message"].as_str().unwrap().starts_with("8 steps on external"), "{end}");
    // Slack: {"text"} only; Discord: {"content"} with no mentions.
    let slack = at("/slack");
    assert_eq!(slack.len(), 1, "{got:?}");
    let s = slack[0].json();
    assert_eq!(s.as_object().unwrap().keys().collect::<Vec<_>>(), ["text"]);
    assert!(s["text"].as_str().unwrap().contains("CRITICAL nonfinite on run job at step 6"), "{s}");
    let discord = at("/discord");
    assert_eq!(discord.len(), 1);
    let d = discord[0].json();
    assert!(d["content"].as_str().unwrap().contains("nonfinite") && d["allowed_mentions"]["parse"] == serde_json::json!([]), "{d}");
    // ntfy: plain text, with title, priority and tags as headers.
    let ntfy = at("/ntfy");
    assert_eq!(ntfy.len(), 1);
    assert_eq!(ntfy[0].header("Priority"), Some("5"));
    assert_eq!(ntfy[0].header("Tags"), Some("rotating_light"));
    assert!(ntfy[0].header("Title").unwrap().contains("critical nonfinite on job"), "{:?}", ntfy[0].headers);
    assert!(String::from_utf8_lossy(&ntfy[0].body).starts_with("CRITICAL nonfinite on run job"));
    // The command: the alert in variables and as JSON on stdin.
    let text = std::fs::read_to_string(&out).unwrap();
    let (vars, stdin) = text.split_once('\n').unwrap();
    assert_eq!(vars, "nonfinite critical");
    assert_eq!(serde_json::from_str::<Value>(stdin).unwrap()["kind"], "nonfinite");
    // The webhook's secret path is nowhere in what rlmon wrote or printed.
    assert!(!stderr.contains("secret-token-4711"), "{stderr}");
    let mut files = Vec::new();
    walk(&dir.path().join("sessions"), &mut files);
    assert!(files.iter().any(|f| f.to_string_lossy().ends_with(".rlmon.parquet")), "{files:?}");
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        assert!(!bytes.windows(17).any(|w| w == b"secret-token-4711"), "{} holds the webhook's secret", f.display());
    }
    let snapshot = files.iter().find(|f| f.to_string_lossy().ends_with(".rlmon.parquet")).unwrap();
    let bytes = std::fs::read(snapshot).unwrap();
    assert!(bytes.windows(9).any(|w| w == b"[[notify]"), "the config text is kept, redacted");
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn a_receiver_that_fails_or_never_answers_does_not_hold_the_run_up() {
    for answer in [Answer::Error500, Answer::Never] {
        let dir = tempfile::tempdir().unwrap();
        let receiver = Receiver::start(answer);
        let config = write_config(dir.path(), &python_run(NAN_SCRIPT, &["3"], ""));
        let url = receiver.url("/hook");
        let (code, summary, stderr) = watch(dir.path(), &["--config", config.to_str().unwrap(), "--notify", &url]);
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(summary["runs"][0]["state"], "finished");
        assert_eq!(summary["runs"][0]["steps"], 8, "every step was read: {stderr}");
        let failures = stderr.lines().filter(|l| l.contains("later failures of this target are not shown")).count();
        assert_eq!(failures, 1, "the failure is said once:\n{stderr}");
        assert!(!receiver.received().is_empty(), "it was tried");
    }
}

/// Steps every 0.1 s, silent for `pause` seconds (alive, sleeping), then steps again.
const PAUSE_SCRIPT: &str = r#"
import json, sys, time
for s in range(1, 11):
    print(json.dumps({"step": s, "loss": 2.0}), flush=True)
    time.sleep(0.1)
time.sleep(float(sys.argv[1]))
for s in range(11, 14):
    print(json.dumps({"step": s, "loss": 2.0}), flush=True)
    time.sleep(0.1)
"#;

#[test]
fn a_silent_run_is_stalled_and_clears_when_it_steps_again() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &python_run(PAUSE_SCRIPT, &["6"], "[run.health.stalled]\nk = 5\nfloor_s = 2"));
    let (code, summary, stderr) = watch(dir.path(), &["--config", config.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    let alerts = summary["runs"][0]["alerts"].as_array().unwrap();
    let stalls: Vec<&Value> = alerts.iter().filter(|a| a["kind"] == "stalled").collect();
    assert_eq!(stalls.len(), 1, "{alerts:?}\n{stderr}");
    assert_eq!(stalls[0]["step"], 10);
    assert_eq!(stalls[0]["severity"], "warn", "no GPU telemetry: a warning");
    let message = stalls[0]["message"].as_str().unwrap();
    assert!(message.starts_with("no new step for ") && message.contains("since step 10") && message.contains("alive (sleeping"), "{message}");
    assert!(stderr.contains("[job] stalled cleared: steps resumed at step 11 after"), "{stderr}");
}

#[test]
fn a_frozen_script_armed_for_stalls_is_stopped_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let script = r#"
import json, subprocess, sys, time
child = subprocess.Popen(["sleep", "300"])
open(sys.argv[1], "w").write(f"{child.pid}\n")
for s in range(1, 6):
    print(json.dumps({"step": s, "loss": 2.0}), flush=True)
    time.sleep(0.1)
time.sleep(300)
"#;
    let extra = "on_critical = [\"stalled\"]\ngrace_s = 2\n[run.health.stalled]\nfloor_s = 2";
    let config = write_config(dir.path(), &python_run(script, &[pids.to_str().unwrap()], extra));
    let started = std::time::Instant::now();
    let (code, summary, stderr) = watch(dir.path(), &["--config", config.to_str().unwrap()]);
    assert!(started.elapsed() < std::time::Duration::from_secs(200), "stopped, not waited for");
    assert_eq!(code, Some(1), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["state"], "stopped", "{stderr}");
    assert!(run["error"].as_str().unwrap().contains("stalled at step 5"), "{run}");
    assert!(stderr.contains("stopping the run (on_critical)"), "{stderr}");
    let child: u32 = std::fs::read_to_string(&pids).unwrap().trim().parse().unwrap();
    assert!(!alive(child), "the job's child process {child} is gone too");
}

/// Whether `pid` is a running process (not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
}

#[test]
fn on_critical_stop_ends_a_diverging_run_and_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let script = r#"
import json, os, sys, time
open(sys.argv[1], "w").write(f"{os.getpid()}\n")
s = 0
while True:
    s += 1
    print(json.dumps({"step": s, "loss": float("nan") if s >= 6 else 2.0}), flush=True)
    time.sleep(0.1)
"#;
    let config = write_config(dir.path(), &python_run(script, &[pids.to_str().unwrap()], "on_critical = \"stop\"\ngrace_s = 2"));
    let (code, summary, stderr) = watch(dir.path(), &["--config", config.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["state"], "stopped", "{stderr}");
    assert!(run["error"].as_str().unwrap().starts_with("critical nonfinite at step 6"), "{run}");
    let pid: u32 = std::fs::read_to_string(&pids).unwrap().trim().parse().unwrap();
    assert!(!alive(pid), "the program is gone");
}

#[test]
fn bad_notify_settings_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let run = python_run("print(1)", &[], "");
    for (text, want) in [
        ("[[notify]]\nurl = \"ftp://x/\"\n", "starts with http:// or https://"),
        ("[[notify]]\nurl_env = \"RLMON_TEST_UNSET_HOOK\"\n", "RLMON_TEST_UNSET_HOOK is not set"),
        ("[[notify]]\nurl = \"http://h/\"\nformat = \"teams\"\n", "unknown format `teams`"),
        ("[[notify]]\nurl = \"http://h/\"\nkinds = [\"nope\"]\n", "unknown alert kind `nope`"),
    ] {
        let config = write_config(dir.path(), &format!("{text}\n{run}"));
        let out = Command::new(assert_cmd::cargo::cargo_bin("rlmon")).args(["watch", "--headless", "--config"]).arg(&config).env("RLMON_SESSION_DIR", dir.path().join("s")).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        assert!(stderr.contains(want), "{text}: {stderr}");
    }
    let bad = format!("{run}on_critical = \"explode\"\n");
    let config = write_config(dir.path(), &bad);
    let out = Command::new(assert_cmd::cargo::cargo_bin("rlmon")).args(["watch", "--headless", "--config"]).arg(&config).env("RLMON_SESSION_DIR", dir.path().join("s")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("on_critical = \"explode\""));
    let config = write_config(dir.path(), &run);
    let out = Command::new(assert_cmd::cargo::cargo_bin("rlmon")).args(["watch", "--headless", "--notify", "mailto:me"]).arg("--config").arg(&config).env("RLMON_SESSION_DIR", dir.path().join("s")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--notify: a notification URL starts with http:// or https://"));
}
