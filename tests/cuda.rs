//! The CUDA path for real where a GPU exists, through the binaries a user runs:
//! the worker's probe, then `rlmon watch` training an lm run with MoE on cuda:0.
//! Elsewhere each test says it skipped. (The trainer-level CUDA test is in
//! train/src/lm.)
use std::process::Command;

use serde_json::Value;

fn cuda_available() -> Option<bool> {
    let out = Command::new(assert_cmd::cargo::cargo_bin("rlmon-train")).arg("probe").output().unwrap();
    assert!(out.status.success(), "probe failed: {}", String::from_utf8_lossy(&out.stderr));
    let probe: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(probe["cuda_library_loaded"], true, "libtorch_cuda.so is linked into the worker, not dropped");
    probe["cuda_available"].as_bool()
}

#[test]
fn a_watched_lm_run_trains_on_cuda_when_available() {
    if cuda_available() != Some(true) {
        eprintln!("skipped: CUDA not available on this machine (libtorch_cuda loaded, no GPU or driver)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("cuda.toml");
    std::fs::write(
        &config,
        "[[run]]\nname = \"gpu\"\nworkload = \"lm\"\ndevice = \"cuda:0\"\nsteps = 40\n\
         [run.model]\nlayers = 1\nd_model = 64\nheads = 4\nseq_len = 32\n\
         [run.moe]\nexperts = 4\ntop_k = 2\nlayers = [0]\n",
    )
    .unwrap();
    // Found at run time (CARGO_BIN_EXE_rlmon, else beside deps/), so the built test
    // binary also runs where it was copied (scripts/gpu-check.sh on a GPU machine).
    let out = Command::new(assert_cmd::cargo::cargo_bin("rlmon"))
        .args(["watch", "--headless", "--json", "--config"])
        .arg(&config)
        .arg("--session-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &summary["runs"][0];
    assert_eq!(run["device"], "cuda:0", "{run}");
    assert_eq!(run["steps"], 40, "{run}");
}
