//! Runs that cannot take each other down: one session holds a healthy training run
//! beside runs that fail in every way a job fails (out of memory, NaN, a built-in
//! run whose process aborts or segfaults as libtorch can, killed by a signal,
//! flooding its output, never writing, writing half a line and hanging).
//! Each ends or marks only itself; the healthy run trains to its last step; the
//! session is recorded with every point.
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn command_run(name: &str, argv: &[&str]) -> String {
    format!("[[run]]\nname = \"{name}\"\nworkload = \"command\"\ncommand = {}\ngrace_s = 1\n", serde_json::to_string(argv).unwrap())
}

fn lm_run(name: &str, faults: &str) -> String {
    format!(
        "[[run]]\nname = \"{name}\"\nworkload = \"lm\"\ndevice = \"cpu\"\nsteps = 40\nbatch_size = 4\nintra_op_threads = 1\n[run.model]\nlayers = 1\nd_model = 32\nheads = 2\nseq_len = 16\n[run.faults]\n{faults}\n"
    )
}

#[test]
fn failing_runs_end_alone_while_the_healthy_run_trains_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let flood = "import json, sys, time\nend = time.time() + 3\ni = 0\nwhile time.time() < end:\n    sys.stdout.write(json.dumps({'step': i, 'loss': 1.0}) + '\\n')\n    i += 1";
    let config = [
        "session = \"isolation\"\n".to_owned(),
        lm_run("healthy", ""),
        lm_run("oom", "oom_at = 5"),
        lm_run("nan", "nan_at = 5"),
        lm_run("aborted", "abort_at = 5"),
        lm_run("segfault", "segfault_at = 5"),
        command_run("killed", &["sh", "-c", "echo '{\"step\": 1, \"loss\": 2.0}'; kill -9 $$"]),
        command_run("flood", &["python3", "-c", flood]),
        command_run("silent", &["sleep", "2"]),
        command_run("half-line", &["sh", "-c", "printf '{\"step\": 1, \"loss\": 2'; sleep 600"]),
    ]
    .concat();
    std::fs::write(dir.path().join("isolation.toml"), config).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlmon"))
        .args(["watch", "--headless", "--json", "--config", "isolation.toml", "--session-dir", "sessions"])
        .current_dir(dir.path())
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The log goes to stderr as it happens: wait for the healthy run's end there.
    let mut stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut log = String::new();
    let deadline = Instant::now() + Duration::from_secs(240);
    let ends = ["[healthy] finished", "[oom] error: failed", "[nan] error: failed", "[aborted] error: failed", "[segfault] error: failed", "[killed] error: failed", "[flood] finished", "[silent] finished"];
    while !ends.iter().all(|e| log.contains(e)) {
        assert!(Instant::now() < deadline, "not every run ended:\n{log}");
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(bytes) => log.push_str(&String::from_utf8_lossy(&bytes)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("rlmon ended early:\n{log}"),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    // Only the half-line run is left: it never ends by itself.
    assert!(!log.contains("[half-line] finished") && !log.contains("[half-line] error"), "{log}");
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    let status = child.wait().unwrap();
    while let Ok(bytes) = rx.recv_timeout(Duration::from_millis(500)) {
        log.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert!(!log.contains("panicked"), "{log}");
    assert_eq!(status.code(), Some(1), "failed and cancelled runs fail the session:\n{log}");
    let summary: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{log}"));
    let run = |name: &str| summary["runs"].as_array().unwrap().iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("no run {name}: {summary}")).clone();

    let healthy = run("healthy");
    assert_eq!((healthy["state"].as_str(), healthy["steps"].as_u64()), (Some("finished"), Some(40)), "{healthy}");
    let oom = run("oom");
    assert_eq!(oom["state"], "failed", "{oom}");
    let reason = oom["error"].as_str().unwrap().to_lowercase();
    assert!(reason.contains("allocate") || reason.contains("out of memory"), "the allocator's own words: {reason}");
    assert_eq!(run("nan")["state"], "failed");
    // Each built-in run trains in a process of its own: an abort in native code
    // ends that process and marks that run, with the process's last words.
    let aborted = run("aborted");
    assert_eq!(aborted["error"], "training process killed by signal 6 (SIGABRT): rlmon fault: abort_at = 5: aborting the training process", "{aborted}");
    assert_eq!(aborted["steps"], 4, "its points before the aborting step are kept: {aborted}");
    let segfault = run("segfault");
    assert!(segfault["error"].as_str().unwrap().starts_with("training process killed by signal 11 (SIGSEGV)"), "{segfault}");
    assert_eq!(run("killed")["error"], "killed by signal 9 (SIGKILL)");
    let flood = run("flood");
    assert_eq!(flood["state"], "finished", "{flood}");
    assert!(flood["steps"].as_u64().unwrap() > 1000, "a flood is read, not choked on: {flood}");
    assert_eq!(run("silent")["state"], "finished");
    assert_eq!(run("half-line")["state"], "cancelled");

    // Recorded: the snapshot replays with the healthy run's every step.
    let snapshot = summary["snapshot"].as_str().unwrap_or_else(|| panic!("no snapshot: {summary}"));
    let out = Command::new(env!("CARGO_BIN_EXE_rlmon")).args(["check", "--json", snapshot]).current_dir(dir.path()).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let recorded = report["runs"].as_array().unwrap().iter().find(|r| r["name"] == "healthy").unwrap().clone();
    assert_eq!(recorded["last_step"], 40, "{recorded}");
}
