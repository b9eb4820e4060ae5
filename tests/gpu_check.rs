//! scripts/gpu-check.sh on a machine without a GPU, against the release binaries:
//! it says there is no GPU, runs what can run, skips the rest with a reason, writes
//! its report within the device tool's limits and exits 0.
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn has_gpu() -> bool {
    Command::new("nvidia-smi").arg("-L").output().is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("GPU "))
}

#[test]
fn without_a_gpu_the_check_runs_what_it_can_and_skips_the_rest() {
    if has_gpu() {
        eprintln!("skipped: a GPU is here; run scripts/gpu-check.sh REPORT_DIR itself (a few minutes)");
        return;
    }
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: python3 not installed (the check's verdicts need it)");
        return;
    }
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_rlmon")).parent().unwrap();
    let report = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gpu-check.sh"))
        .arg(report.path())
        .env("RLMON_BIN_DIR", bin_dir)
        .env("GPU_CHECK_LIVE_S", "4")
        .env_remove("PYTHON")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let log = std::fs::read_to_string(report.path().join("log.txt")).unwrap_or_default();
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}\n--- log.txt:\n{log}", String::from_utf8_lossy(&out.stderr));

    // One verdict line per step: `step STATUS phrase`.
    let verdicts: BTreeMap<&str, (&str, &str)> = stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let (step, status) = (words.next()?, words.next()?);
            ["PASS", "FAIL", "SKIP"].contains(&status).then(|| (step, (status, l)))
        })
        .collect();
    let status = |step: &str| verdicts.get(step).map(|v| v.0).unwrap_or_else(|| panic!("no verdict for {step}:\n{stdout}"));
    assert!(stdout.contains("GPU: none"), "{stdout}");
    for step in ["torch", "libraries", "doctor", "probe", "summary-cpu", "live"] {
        assert_eq!(status(step), "PASS", "{}\n--- log.txt:\n{log}", verdicts[step].1);
    }
    assert!(verdicts["doctor"].1.contains("no GPU"), "{}", verdicts["doctor"].1);
    for step in ["tiny", "moe", "rlhf", "moe-full", "rlhf-full", "attach", "nvml-vs-smi"] {
        assert_eq!(status(step), "SKIP", "{}", verdicts[step].1);
        assert!(verdicts[step].1.contains("no GPU"), "a skip says why: {}", verdicts[step].1);
    }
    assert!(verdicts["attach"].1.contains("followed"), "the attach plumbing ran: {}", verdicts["attach"].1);
    assert_ne!(status("cuda-tests"), "FAIL", "{}", verdicts["cuda-tests"].1);
    assert!(stdout.contains("0 FAIL"), "{stdout}");

    // The report: at most 8 plain files, no folders (what the device tool brings back).
    let entries: Vec<_> = std::fs::read_dir(report.path()).unwrap().map(|e| e.unwrap()).collect();
    assert!(entries.len() <= 8 && entries.iter().all(|e| e.file_type().unwrap().is_file()), "{entries:?}");
    let text = std::fs::read_to_string(report.path().join("report.txt")).unwrap();
    assert!(text.contains("summary-cpu") && text.contains("model TFLOP/s"), "{text}");
    let summaries: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report.path().join("summaries.json")).unwrap()).unwrap();
    let cpu = &summaries["tiny-cpu"]["runs"][0];
    assert_eq!(cpu["device"], "cpu", "{cpu}");
    assert!(cpu["model_flops_per_s"].as_f64().is_some_and(|f| f > 0.0), "{cpu}");
    assert!(cpu["mfu"].is_null(), "no MFU without a GPU's peak: {cpu}");
    assert!(summaries["attach"]["runs"][0]["steps"].as_u64().is_some_and(|s| s > 0), "{}", summaries["attach"]);
    let screen = std::fs::read_to_string(report.path().join("live-screen.txt")).unwrap();
    assert!(screen.contains("hardware") && screen.contains("NO GPU"), "{screen}");
}
