//! The worker executable as rlmon starts it. (Having an integration test also makes
//! `cargo test` build `target/<profile>/rlmon-train`, which the monitor's own tests
//! start for built-in runs.)
use std::io::Write;
use std::process::{Command, Stdio};

use rlmon::workload::protocol::Probe;

/// `target/<profile>/rlmon-train`, beside this test's `deps/` folder.
fn worker() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = profile.join("rlmon-train");
    assert!(path.is_file(), "{} is not built", path.display());
    path
}

/// `rlmon-train probe` loads libtorch through its runpath (no LD_LIBRARY_PATH) and
/// says which one, for `rlmon doctor`.
#[test]
fn the_worker_finds_libtorch_through_its_runpath() {
    let out = Command::new(worker()).arg("probe").env_remove("LD_LIBRARY_PATH").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let probe: Probe = serde_json::from_slice(&out.stdout).unwrap();
    let path = probe.path.expect("libtorch_cpu.so is loaded");
    assert!(path.join("libtorch_cpu.so").is_file(), "{}", path.display());
    assert!(probe.version.is_some_and(|v| v.starts_with("2.")), "torch's version.py beside it");
    assert!(probe.default_threads >= 1);
}

/// A job line that is not a job is refused with a message, not a crash.
#[test]
fn a_bad_job_is_refused_with_a_message() {
    let mut child = Command::new(worker())
        .arg("run")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"{\"not\": \"a job\"}\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not one rlmon wrote"), "{}", String::from_utf8_lossy(&out.stderr));
}
