//! rlmon's Python client (python/rlmon): its own tests (tests/python, standard
//! library unittest), and its runs as rlmon reads them: `rlmon check` on a run
//! folder, `rlmon watch` with no arguments following a running script, the
//! script's own alerts beside the detectors', and the framework examples (each
//! skipped, saying so, where its framework is not installed).
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn skip(why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

/// The project's virtualenv's Python when there is one (the framework examples
/// need its torch and transformers), else python3: the client is standard library only.
fn python() -> PathBuf {
    let venv = Path::new(ROOT).join(".venv/bin/python");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    }
}

/// `python ARGS` in `dir`, importing the client from this checkout's python/.
fn py(dir: &Path) -> Command {
    let mut c = Command::new(python());
    c.current_dir(dir).env("PYTHONPATH", Path::new(ROOT).join("python")).env_remove("RLMON_DIR");
    c
}

fn importable(module: &str) -> bool {
    Command::new(python()).args(["-c", &format!("import {module}")]).output().is_ok_and(|o| o.status.success())
}

fn rlmon(dir: &Path) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("rlmon"));
    c.current_dir(dir).env("RLMON_SESSION_DIR", dir.join("sessions")).env_remove("RLMON_DIR");
    c
}

fn example(name: &str) -> PathBuf {
    Path::new(ROOT).join("examples").join(name)
}

/// The one run folder under `dir/rlmon-runs`.
fn the_run(dir: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(dir.join("rlmon-runs")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs.into_iter().next().unwrap()
}

fn check_json(dir: &Path, run: &Path) -> (Option<i32>, Value) {
    let out = rlmon(dir).args(["check", "--json"]).arg(run).output().unwrap();
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), report)
}

#[test]
fn the_python_clients_own_tests_pass() {
    let out = py(Path::new(ROOT)).args(["-m", "unittest", "discover", "-s", "tests/python", "-v"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Its skips show in cargo's output too.
    for line in stderr.lines().filter(|l| l.starts_with("skipped:")) {
        skip(line);
    }
    assert!(stderr.contains("Ran ") && stderr.contains("OK"), "{stderr}");
}

/// A script's run, judged afterwards: every logged step is a point under the run's
/// name, a loss spike is found, and the script's own alert is listed beside it.
#[test]
fn rlmon_check_judges_a_client_run_with_its_points_and_alerts() {
    let dir = tempfile::tempdir().unwrap();
    let out = py(dir.path()).arg(example("client_minimal.py")).args(["--steps", "200", "--sleep", "0", "--spike-at", "150"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = the_run(dir.path());
    let (code, report) = check_json(dir.path(), &run);
    assert_eq!(report["format"], "rlmon-client");
    assert_eq!(report["points"], 200, "{report}");
    assert_eq!(report["runs"][0]["name"], "minimal");
    assert_eq!(report["runs"][0]["last_step"], 199);
    assert_eq!(report["runs"][0]["input"]["read"]["lr"], "lr");
    let alerts = report["alerts"].as_array().unwrap();
    let kinds: Vec<&str> = alerts.iter().map(|a| a["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"loss_spike"), "{kinds:?}");
    let script = alerts.iter().find(|a| a["kind"] == "user_alert").unwrap_or_else(|| panic!("{report}"));
    assert_eq!((script["severity"].as_str(), script["step"].as_u64()), (Some("info"), Some(100)));
    assert!(script["message"].as_str().unwrap().starts_with("halfway: loss "), "{script}");
    assert_eq!(code, Some(if alerts.iter().any(|a| a["severity"] == "critical") { 1 } else { 0 }));
    // The text report names the run folder and its points.
    let text = rlmon(dir.path()).arg("check").arg(&run).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("(rlmon-client): 200 points"), "{}", String::from_utf8_lossy(&text.stdout));
}

/// `rlmon watch` alone, in the folder a script runs in, follows the script's run
/// live and ends it with the script's outcome; the script's alert is raised in the
/// session beside the detectors' and recorded with it.
#[test]
fn rlmon_watch_alone_follows_a_running_script_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    for (fail, state) in [(false, "finished"), (true, "failed")] {
        let _ = std::fs::remove_dir_all(dir.path().join("rlmon-runs"));
        let mut script = py(dir.path());
        script.arg(example("client_minimal.py")).args(["--steps", "120", "--sleep", "0.02"]).stdout(Stdio::null()).stderr(Stdio::piped());
        if fail {
            script.arg("--fail");
        }
        let mut child = script.spawn().unwrap();
        // rlmon is started once the run exists (watch takes the runs there at start).
        let start = Instant::now();
        while !std::fs::read_dir(dir.path().join("rlmon-runs")).is_ok_and(|mut d| d.next().is_some()) {
            assert!(start.elapsed() < Duration::from_secs(30), "the script made no run folder");
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = rlmon(dir.path()).args(["watch", "--headless", "--json"]).output().unwrap();
        let _ = child.wait();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        let run = &summary["runs"][0];
        assert_eq!((run["name"].as_str(), run["state"].as_str(), run["workload"].as_str()), (Some("minimal"), Some(state), Some("attach")), "{summary}\n{stderr}");
        assert_eq!(out.status.code(), Some(if fail { 1 } else { 0 }), "{stderr}");
        let script_alert = run["alerts"].as_array().unwrap().iter().find(|a| a["kind"] == "user_alert").cloned().unwrap_or_else(|| panic!("{summary}"));
        assert_eq!(script_alert["severity"], "info");
        if fail {
            assert_eq!(run["steps"], 60, "the last step logged: {run}");
            assert!(run["error"].as_str().unwrap().contains("exit status 1: RuntimeError: the data loader ran dry"), "{run}");
        } else {
            assert_eq!(run["steps"], 119, "every step, the last ones included: {run}");
            // Recorded like rlmon's own alerts: the session's snapshot has it.
            let snapshot = summary["snapshot"].as_str().unwrap_or_else(|| panic!("{summary}"));
            let (_, report) = check_json(dir.path(), Path::new(snapshot));
            assert!(report["alerts"].as_array().unwrap().iter().any(|a| a["kind"] == "user_alert" && a["message"] == script_alert["message"]), "{report}");
        }
    }
}

#[test]
fn rlmon_watch_alone_with_no_recent_run_says_what_it_takes() {
    let dir = tempfile::tempdir().unwrap();
    let out = rlmon(dir.path()).args(["watch", "--headless"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("rlmon-runs") && stderr.contains("--config") && stderr.contains("--attach"), "{stderr}");
}

/// The Hugging Face Trainer with the callback: its logs arrive under rlmon's names.
#[test]
fn the_hf_trainer_example_logs_under_canonical_names() {
    if !importable("transformers") || !importable("accelerate") {
        skip("transformers or accelerate is not installed in .venv (./scripts/setup.sh installs them)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = py(dir.path()).arg(example("client_hf_trainer.py")).args(["--steps", "12", "--out"]).arg(dir.path().join("out")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = the_run(dir.path());
    let (_, report) = check_json(dir.path(), &run);
    assert_eq!(report["runs"][0]["name"], "hf-tiny");
    assert_eq!(report["points"], 12, "{report}");
    let read = &report["runs"][0]["input"]["read"];
    assert_eq!((read["loss"].as_str(), read["learning_rate"].as_str(), read["grad_norm"].as_str()), (Some("loss"), Some("lr"), Some("grad_norm")), "{report}");
}

/// PyTorch Lightning with the logger.
#[test]
fn the_lightning_example_logs_its_steps() {
    if !importable("lightning") && !importable("pytorch_lightning") {
        skip("lightning is not installed in .venv: the Lightning logger example is not run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = py(dir.path()).arg(example("client_lightning.py")).args(["--steps", "20"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = the_run(dir.path());
    let (_, report) = check_json(dir.path(), &run);
    assert_eq!(report["runs"][0]["name"], "lightning-tiny");
    assert!(report["points"].as_u64().unwrap() >= 10, "{report}");
}
