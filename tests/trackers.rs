//! W&B run files and trackio projects written by the trackers' own Python
//! packages (`wandb` offline, `trackio` local), read by `rlmon check` and followed
//! by `rlmon watch --attach` as a user runs them. Tests skip, saying so, where the
//! project's virtualenv lacks the packages (scripts/setup.sh installs them).
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn rlmon() -> Command {
    Command::new(assert_cmd::cargo::cargo_bin("rlmon"))
}

/// The project's Python when it can import `module`.
fn python_with(module: &str) -> Option<PathBuf> {
    let python = Path::new(ROOT).join(".venv/bin/python");
    let ok = Command::new(&python).args(["-c", &format!("import {module}")]).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: the `{module}` Python package is not in {} (scripts/setup.sh installs it)", python.display());
        return None;
    }
    Some(python)
}

/// Runs `script` with the project's Python in `dir`, W&B offline and quiet.
fn run_python(python: &Path, dir: &Path, script: &str) {
    std::fs::write(dir.join("train.py"), script).unwrap();
    let out = python_command(python, dir).output().unwrap();
    assert!(out.status.success(), "train.py failed: {}", String::from_utf8_lossy(&out.stderr));
}

fn python_command(python: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg("train.py").current_dir(dir).env("WANDB_MODE", "offline").env("WANDB_SILENT", "true").env("WANDB_DIR", dir).env("TRACKIO_DIR", dir.join("trackio"));
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// `rlmon check ARG --json` in `dir`: its exit code and report.
fn check(dir: &Path, arg: &str) -> (Option<i32>, Value) {
    let out = rlmon().args(["check", arg, "--json"]).current_dir(dir).env("TRACKIO_DIR", dir.join("trackio")).output().unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), report)
}

/// The kinds and steps of a report's alerts.
fn alerts(report: &Value) -> Vec<(String, u64)> {
    report["alerts"].as_array().unwrap().iter().map(|a| (a["kind"].as_str().unwrap().to_owned(), a["step"].as_u64().unwrap())).collect()
}

/// A W&B script: `steps` steps, the loss NaN at step `nan_at`, a config, an alert
/// at step 200, and a failed exit (code 2).
fn wandb_script(steps: u64, nan_at: u64, sleep_s: f64) -> String {
    format!(
        r#"import math, time, wandb
run = wandb.init(project="rlmon-test", name="nan-run", config={{"lr": 0.001, "batch": 32, "model": {{"d": 64}}}})
for s in range({steps}):
    loss = float("nan") if s == {nan_at} else 2.0 * math.exp(-s / 100) + 0.1
    row = {{"train/loss": loss, "train/learning_rate": 0.001, "train/grad_norm": 0.5 + 0.01 * math.sin(s)}}
    row.update({{f"layers/{{i}}/grad_norm": 0.1 * i for i in range(12)}})
    wandb.log(row)
    if s == 200:
        wandb.alert(title="reward hacked", text="reward rose too fast", level=wandb.AlertLevel.WARN)
    if {sleep_s} > 0:
        time.sleep({sleep_s})
wandb.finish(exit_code=2)
"#
    )
}

/// The one W&B run file under `dir/wandb`.
fn wandb_file(dir: &Path) -> PathBuf {
    let run = dir.join("wandb/latest-run");
    std::fs::read_dir(&run).unwrap().flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|e| e == "wandb")).unwrap()
}

#[test]
fn an_offline_wandb_run_is_checked_point_by_point_with_its_nan_alert_and_failed_exit() {
    let Some(python) = python_with("wandb") else { return };
    let dir = tempfile::tempdir().unwrap();
    run_python(&python, dir.path(), &wandb_script(300, 123, 0.0));
    let (code, report) = check(dir.path(), "wandb/latest-run");
    assert_eq!(code, Some(1), "a failed run and a critical alert: {report}");
    assert_eq!(report["format"], "wandb");
    let run = &report["runs"][0];
    assert_eq!(run["name"], "nan-run");
    assert_eq!(run["points"], 300, "every step: {run}");
    assert_eq!(run["last_step"], 299);
    assert_eq!(run["input"]["read"]["train/loss"], "loss");
    assert_eq!(run["input"]["read"]["train/learning_rate"], "lr");
    let tracker = &run["tracker"];
    assert_eq!(tracker["exit_code"], 2, "{tracker}");
    assert_eq!(tracker["project"], "rlmon-test");
    assert_eq!((tracker["config"]["lr"].as_str(), tracker["config"]["model.d"].as_str()), (Some("0.001"), Some("64")), "{tracker}");
    assert_eq!((tracker["damaged_blocks"].as_u64(), tracker["cut_short"].as_bool()), (Some(0), Some(false)));
    let alerts = alerts(&report);
    assert!(alerts.contains(&("nonfinite".into(), 123)), "the NaN at its step: {alerts:?}");
    assert!(alerts.contains(&("user_alert".into(), 200)), "the script's alert after its step: {alerts:?}");
    // The folder of runs reads the same.
    let (_, whole) = check(dir.path(), "wandb");
    assert_eq!(whole["runs"][0]["points"], 300);

    // A run cut in the middle of its last record (killed while writing): the rest is read.
    let bytes = std::fs::read(wandb_file(dir.path())).unwrap();
    let cut = dir.path().join("cut.wandb");
    std::fs::write(&cut, &bytes[..bytes.len() - 5]).unwrap();
    let (code, report) = check(dir.path(), "cut.wandb");
    let run = &report["runs"][0];
    assert_eq!(run["points"], 300, "{run}");
    assert_eq!(run["tracker"]["cut_short"], true);
    assert!(run["tracker"]["exit_code"].is_null(), "the exit record was the one cut");
    assert_eq!(code, Some(1), "the NaN is still critical");
    // A damaged block: skipped and counted, the blocks after it read.
    let mut damaged = bytes.clone();
    damaged[32 * 1024 + 500] ^= 0x5a;
    std::fs::write(dir.path().join("damaged.wandb"), &damaged).unwrap();
    let (_, report) = check(dir.path(), "damaged.wandb");
    let run = &report["runs"][0];
    assert_eq!(run["tracker"]["damaged_blocks"], 1, "{run}");
    let points = run["points"].as_u64().unwrap();
    assert!(points < 300 && points > 200, "one block's rows lost: {points}");
    assert_eq!(run["last_step"], 299, "the blocks after it are read");
}

#[test]
fn a_wandb_run_is_followed_live_until_its_exit_record() {
    let Some(python) = python_with("wandb") else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.py"), wandb_script(300, 250, 0.02)).unwrap();
    std::fs::create_dir_all(dir.path().join("wandb")).unwrap();
    let mut job = python_command(&python, dir.path()).spawn().unwrap();
    // Attached before the run exists: the first run W&B makes in the folder.
    let watching = rlmon()
        .args(["watch", "--headless", "--json", "--attach", "wandb"])
        .current_dir(dir.path())
        .env("RLMON_SESSION_DIR", dir.path().join("sessions"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut watching = Some(watching);
    let out = loop {
        let w = watching.as_mut().unwrap();
        if w.try_wait().unwrap().is_some() {
            break watching.take().unwrap().wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = job.kill();
            let mut w = watching.take().unwrap();
            w.kill().unwrap();
            let out = w.wait_with_output().unwrap();
            panic!("rlmon did not end with the run's exit record: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let status = job.wait().unwrap();
    assert!(status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let run = &summary["runs"][0];
    assert_eq!(run["state"], "failed", "the exit record's code: {stderr}");
    assert!(run["error"].as_str().unwrap_or_default().contains("exited with code 2"), "{run}");
    assert_eq!(run["steps"], 299, "{stderr}");
    let kinds: Vec<&str> = run["alerts"].as_array().unwrap().iter().filter_map(|a| a["kind"].as_str()).collect();
    assert!(kinds.contains(&"nonfinite") && kinds.contains(&"user_alert"), "{kinds:?}");
}

#[test]
fn a_trackio_project_is_checked_run_by_run() {
    let Some(python) = python_with("trackio") else { return };
    let dir = tempfile::tempdir().unwrap();
    let script = r#"import math, trackio
for name, nan_at in (("run-a", 77), ("run-b", None)):
    trackio.init(project="rlmon-test", name=name, config={"lr": 0.001, "batch": 32})
    for s in range(300):
        loss = float("nan") if s == nan_at else 2.0 * math.exp(-s / 100) + 0.1
        trackio.log({"train/loss": loss, "train/learning_rate": 0.001})
        if s == 100 and name == "run-a":
            trackio.alert(title="eval dropped", text="accuracy fell", level=trackio.AlertLevel.ERROR)
    trackio.finish()
"#;
    run_python(&python, dir.path(), script);
    let db = dir.path().join("trackio/rlmon-test.db");
    assert!(db.is_file());
    let (code, report) = check(dir.path(), db.to_str().unwrap());
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(report["format"], "trackio");
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.iter().map(|r| r["name"].as_str().unwrap()).collect::<Vec<_>>(), ["run-a", "run-b"]);
    for run in runs {
        assert_eq!(run["points"], 300, "{run}");
        assert_eq!(run["tracker"]["config"]["lr"], "0.001");
    }
    let alerts: Vec<(String, String, u64)> = report["alerts"].as_array().unwrap().iter().map(|a| (a["run"].as_str().unwrap().into(), a["kind"].as_str().unwrap().into(), a["step"].as_u64().unwrap())).collect();
    assert!(alerts.contains(&("run-a".into(), "nonfinite".into(), 77)), "{alerts:?}");
    assert!(alerts.contains(&("run-a".into(), "user_alert".into(), 100)), "{alerts:?}");
    assert!(!alerts.iter().any(|a| a.0 == "run-b" && a.1 == "nonfinite"), "{alerts:?}");
    // By name in trackio's folder, one run.
    let (_, one) = check(dir.path(), "trackio:rlmon-test#run-b");
    assert_eq!(one["runs"].as_array().unwrap().len(), 1);
    assert_eq!(one["runs"][0]["name"], "run-b");
}

#[test]
fn a_command_run_follows_the_first_wandb_run_its_program_creates() {
    let Some(python) = python_with("wandb") else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.py"), wandb_script(250, 100, 0.0)).unwrap();
    // An earlier run in the folder is not the command's.
    run_python(&python, dir.path(), &wandb_script(20, 5, 0.0));
    let config = format!(
        "[[run]]\nname = \"wb\"\nworkload = \"command\"\ncommand = [\"{}\", \"train.py\"]\nenv = {{ WANDB_MODE = \"offline\", WANDB_SILENT = \"true\" }}\nmetrics = {{ wandb = \"wandb\" }}\n",
        python.display()
    );
    std::fs::write(dir.path().join("wb.toml"), config).unwrap();
    std::fs::write(dir.path().join("train.py"), wandb_script(250, 100, 0.0)).unwrap();
    let out = rlmon()
        .args(["watch", "--headless", "--json", "--config"])
        .arg(dir.path().join("wb.toml"))
        .current_dir(dir.path())
        .env("RLMON_SESSION_DIR", dir.path().join("sessions"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let run = &summary["runs"][0];
    assert_eq!(run["steps"], 249, "the new run's steps, not the earlier run's: {stderr}");
    let alerts: Vec<(&str, u64)> = run["alerts"].as_array().unwrap().iter().map(|a| (a["kind"].as_str().unwrap(), a["step"].as_u64().unwrap())).collect();
    assert!(alerts.contains(&("nonfinite", 100)) && alerts.contains(&("user_alert", 200)), "{alerts:?}");
}
