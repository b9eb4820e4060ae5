//! `rlmon watch --attach`: following files and folders written by a job rlmon did
//! not start, headless, as a user runs it. The test writes them as a job would;
//! a `sleep` process stands in for the job's process (`--attach-pid`), and its
//! exit ends the session.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// Longer than rlmon's polling period: what was written has been read.
const SETTLE: Duration = Duration::from_millis(600);

fn rlmon() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("rlmon"))
}

/// A stand-in for the training job's process.
fn job() -> Child {
    Command::new("sleep").arg("60").spawn().unwrap()
}

/// Starts `rlmon watch --headless --json --attach PATHS --attach-pid PID`.
fn attach(dir: &Path, paths: &[&Path], pid: u32) -> Child {
    let mut cmd = rlmon();
    cmd.args(["watch", "--headless", "--json", "--attach"]).args(paths).arg("--attach-pid").arg(pid.to_string());
    cmd.env("RLMON_SESSION_DIR", dir.join("sessions")).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.spawn().unwrap()
}

/// Ends the job and waits for rlmon: its exit code, summary and stderr.
fn end(mut job: Child, rlmon: Child) -> (Option<i32>, Value, String) {
    job.kill().unwrap();
    job.wait().unwrap();
    let out = wait_with_timeout(rlmon, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: stderr {stderr}"));
    (out.status.code(), summary, stderr)
}

fn wait_with_timeout(mut child: Child, limit: Duration) -> std::process::Output {
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!("rlmon did not end when the job did: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap().write_all(text.as_bytes()).unwrap();
}

/// The session's snapshot.
fn snapshot(dir: &Path) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir.join("sessions")).unwrap().flatten().map(|e| e.path()).filter(|p| p.to_string_lossy().ends_with(".rlmon.parquet")).collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

/// `(step, loss)` of every point the snapshot recorded for its first run.
fn recorded_losses(snapshot: &Path) -> Vec<(u64, f64)> {
    let out = rlmon().args(["export", "--format", "jsonl"]).arg(snapshot).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|v| Some((v["step"].as_u64()?, v["loss"].as_f64()?)))
        .collect()
}

#[test]
fn a_jsonl_file_is_followed_live_and_a_rewind_replaces_the_earlier_steps() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("metrics.jsonl");
    std::fs::write(&log, "").unwrap();
    let job = job();
    let watching = attach(dir.path(), &[&log], job.id());
    for step in 1..=6 {
        append(&log, &format!("{{\"step\": {step}, \"loss\": {}}}\n", 3.0 - 0.1 * step as f64));
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(SETTLE);
    // The job restarts from its checkpoint at step 4 and logs 4.. again.
    for step in 4..=8 {
        append(&log, &format!("{{\"step\": {step}, \"loss\": {}}}\n", 1.0 - 0.01 * step as f64));
    }
    append(&log, "{\"step\": 9, \"lo");
    std::thread::sleep(SETTLE);
    append(&log, "ss\": 0.5}\n");
    std::thread::sleep(SETTLE);
    let (code, summary, stderr) = end(job, watching);
    assert_eq!(code, Some(0), "the job's exit finishes the run: {stderr}");
    let run = &summary["runs"][0];
    assert_eq!((run["name"].as_str(), run["workload"].as_str(), run["device"].as_str()), (Some("metrics"), Some("attach"), Some("attached")));
    assert_eq!(run["state"], "finished");
    assert_eq!(run["steps"], 9);
    assert_eq!(run["final_loss"], 0.5, "a line cut short is read once it is whole");
    assert!(stderr.contains("resumed at step 4 (3 steps discarded)"), "{stderr}");
    assert!(stderr.contains("exited: the job is over"), "{stderr}");

    // The recording holds the resumed history only, and a replay tells the same story.
    let snap = snapshot(dir.path());
    let losses = recorded_losses(&snap);
    let steps: Vec<u64> = losses.iter().map(|p| p.0).collect();
    assert_eq!(steps, (1..=9).collect::<Vec<_>>(), "{losses:?}");
    assert!((losses[3].1 - 0.96).abs() < 1e-9, "step 4 is the resumed one: {losses:?}");
    let out = rlmon().args(["replay", "--headless", "--json", "--speed", "max"]).arg(&snap).output().unwrap();
    let replayed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let replay_err = String::from_utf8_lossy(&out.stderr);
    assert!(replay_err.contains("resumed at step 4 (3 steps discarded)"), "{replay_err}");
    assert_eq!(replayed["runs"][0]["metrics"], run["metrics"]);
    assert_eq!(replayed["runs"][0]["steps"], run["steps"]);
}

#[test]
fn a_json_document_rewritten_whole_is_read_again_as_it_grows() {
    // Sacred's metrics.json: every heartbeat rewrites the whole file with the
    // series so far; a file caught half written is read at the next change.
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("metrics.json");
    let write = |steps: u64| {
        let list = |f: &dyn Fn(u64) -> String| (1..=steps).map(f).collect::<Vec<_>>().join(", ");
        let text = format!(
            "{{\n  \"train.loss\": {{\"steps\": [{}], \"values\": [{}], \"timestamps\": [{}]}}\n}}\n",
            list(&|s| s.to_string()),
            list(&|s| format!("{}", 3.0 - 0.1 * s as f64)),
            list(&|s| format!("\"2024-05-01T12:00:{s:02}.000000\"")),
        );
        std::fs::write(&doc, text).unwrap();
    };
    write(3);
    let job = job();
    let watching = attach(dir.path(), &[&doc], job.id());
    std::thread::sleep(SETTLE);
    std::fs::write(&doc, "{\n  \"train.loss\": {\"steps\": [1, 2").unwrap();
    std::thread::sleep(SETTLE);
    write(7);
    std::thread::sleep(SETTLE);
    let (code, summary, stderr) = end(job, watching);
    assert_eq!(code, Some(0), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["name"], "metrics");
    assert_eq!(run["steps"], 7, "{stderr}");
    assert!((run["final_loss"].as_f64().unwrap() - 2.3).abs() < 1e-9, "{run}");
    let losses = recorded_losses(&snapshot(dir.path()));
    assert_eq!(losses.iter().map(|p| p.0).collect::<Vec<_>>(), (1..=7).collect::<Vec<_>>(), "each step once: {losses:?}");
}

#[test]
fn a_tensorboard_folder_is_followed_record_by_record() {
    let fixture_dir = Path::new(ROOT).join("tests/fixtures/tensorboard/run1");
    let fixture = std::fs::read_dir(&fixture_dir).unwrap().flatten().map(|e| e.path()).next().unwrap();
    let bytes = std::fs::read(&fixture).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs/x");
    std::fs::create_dir_all(&runs).unwrap();
    let job = job();
    let watching = attach(dir.path(), &[&runs], job.id());
    std::thread::sleep(SETTLE);
    // The writer's file appears after rlmon started, and grows in pieces that cut
    // records in two: a half record waits for its end.
    let path = runs.join(fixture.file_name().unwrap());
    let pieces = bytes.chunks(bytes.len() / 5 + 3);
    for piece in pieces {
        append(&path, "");
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(piece).unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }
    std::thread::sleep(SETTLE);
    let (code, summary, stderr) = end(job, watching);
    assert_eq!(code, Some(0), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["name"], "x");
    assert_eq!(run["steps"], 40, "{stderr}");
    for metric in ["loss", "lr", "grad_norm"] {
        assert!(run["metrics"][metric].is_number(), "{metric}: {}", run["metrics"]);
    }
    assert!(!stderr.contains("skipped"), "no record was cut and dropped: {stderr}");
    let steps: Vec<u64> = recorded_losses(&snapshot(dir.path())).iter().map(|p| p.0).collect();
    assert_eq!(steps.len(), 40, "each record once: {steps:?}");
}

#[test]
fn an_mlflow_store_is_followed_run_by_run_as_its_metric_files_grow() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("mlruns");
    let runs: Vec<PathBuf> = ["a1b2", "c3d4"].iter().map(|id| store.join("0").join(id)).collect();
    for (i, run) in runs.iter().enumerate() {
        // As MLflow makes a run: its meta.yaml and empty folders.
        for folder in ["metrics", "params", "tags"] {
            std::fs::create_dir_all(run.join(folder)).unwrap();
        }
        std::fs::write(run.join("meta.yaml"), "run_id: x\n").unwrap();
        if i == 0 {
            std::fs::write(run.join("tags/mlflow.runName"), "baseline").unwrap();
        }
    }
    let job = job();
    let watching = attach(dir.path(), &[&store], job.id());
    std::thread::sleep(SETTLE);
    // MLflow appends one line per logged value to the metric's file; the metrics
    // folder appears with the first value.
    for step in 0..30u64 {
        for run in &runs {
            std::fs::create_dir_all(run.join("metrics/train")).unwrap();
            append(&run.join("metrics/train/loss"), &format!("{} {} {step}\n", 1_700_000_000_000 + step * 100, 3.0 - 0.05 * step as f64));
            append(&run.join("metrics/lr"), &format!("{} 0.001 {step}\n", 1_700_000_000_000 + step * 100));
        }
        if step % 10 == 9 {
            std::thread::sleep(SETTLE);
        }
    }
    std::thread::sleep(SETTLE);
    let (code, summary, stderr) = end(job, watching);
    assert_eq!(code, Some(0), "{stderr}");
    let runs = summary["runs"].as_array().unwrap();
    assert_eq!(runs.iter().map(|r| r["name"].as_str().unwrap()).collect::<Vec<_>>(), ["baseline", "c3d4"], "{stderr}");
    for run in runs {
        assert_eq!(run["steps"], 29, "{stderr}");
        assert!((run["metrics"]["loss"].as_f64().unwrap() - 1.55).abs() < 1e-9, "{}", run["metrics"]);
        assert!(run["metrics"]["lr"].is_number(), "{}", run["metrics"]);
    }
    assert!(!stderr.contains("skipped"), "{stderr}");
}

#[test]
fn attach_errors_are_usage_errors() {
    let out = rlmon().args(["watch", "--headless", "--attach", "/no/such/run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--attach /no/such/run: no such file or folder"));
    let dir = tempfile::tempdir().unwrap();
    let out = rlmon().args(["watch", "--headless", "--attach"]).arg(dir.path()).args(["--attach-pid", "4294967295"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such running process"));
    let out = rlmon().args(["watch", "--headless"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "neither --config nor --attach");
}
