//! Recording end to end with the binary: a headless run writes a snapshot that
//! replays to the same summary; export, compare, crash recovery after kill -9, and
//! bad input. Tiny CPU runs only; no test needs a GPU.
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::Value;

fn rlmon(session_dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("rlmon").unwrap();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).env("RLMON_SESSION_DIR", session_dir);
    cmd
}

fn config(dir: &Path, name: &str, seed: u64, steps: u64) -> PathBuf {
    let text = format!(
        "session = \"{name}\"\n[[run]]\nname = \"small\"\nworkload = \"lm\"\ndevice = \"cpu\"\nseed = {seed}\nsteps = {steps}\nbatch_size = 4\nintra_op_threads = 1\n[run.model]\nlayers = 1\nd_model = 32\nheads = 2\nseq_len = 16\n"
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs a headless session and returns its JSON summary.
fn watch(dir: &Path, config: &Path) -> Value {
    let out = rlmon(dir).args(["watch", "--headless", "--json", "--config"]).arg(config).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn snapshot_of(summary: &Value) -> PathBuf {
    PathBuf::from(summary["snapshot"].as_str().expect("snapshot path in the summary"))
}

#[test]
fn a_headless_run_writes_a_snapshot_that_replays_to_the_same_summary() {
    let dir = tempfile::tempdir().unwrap();
    let live = watch(dir.path(), &config(dir.path(), "rec", 0, 30));
    let snapshot = snapshot_of(&live);
    assert!(snapshot.exists());
    let name = snapshot.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with("rec-") && name.ends_with("Z.rlmon.parquet"), "{name}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).filter(|n| n.to_string_lossy().contains("journal")).collect();
    assert!(leftovers.is_empty(), "a finished session leaves no journal: {leftovers:?}");

    let out = rlmon(dir.path()).args(["replay", "--headless", "--json", "--speed", "max"]).arg(&snapshot).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let replayed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(replayed["runs"], live["runs"], "same steps, same final values, same rates");
    assert_eq!(replayed["session"], "rec");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[small] finished at step 30"), "{stderr}");
    assert!(stderr.contains(&format!("snapshot: {}", snapshot.display())), "the text summary says where the session is: {stderr}");

    // Export: CSV has one row per point; JSONL one object per step.
    let out = rlmon(dir.path()).args(["export", "--format", "csv"]).arg(&snapshot).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let csv = String::from_utf8(out.stdout).unwrap();
    assert!(csv.starts_with("run,step,time_s,metric,value\n"));
    assert_eq!(csv.lines().filter(|l| l.starts_with("small,") && l.contains(",loss,")).count(), 30);
    let jsonl = dir.path().join("out.jsonl");
    let out = rlmon(dir.path()).args(["export", "--format", "jsonl", "-o"]).arg(&jsonl).arg(&snapshot).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = std::fs::read_to_string(&jsonl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 30);
    assert_eq!(lines[29]["step"], 30);
    assert_eq!(lines[29]["loss"], live["runs"][0]["metrics"]["loss"]);

    // rlmon check reads the snapshot and its JSONL export alike: same steps, same alerts.
    let checked = |file: &Path| -> Value {
        let out = rlmon(dir.path()).args(["check", "--json", "--fail-on", "critical"]).arg(file).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (from_snapshot, from_jsonl) = (checked(&snapshot), checked(&jsonl));
    assert_eq!(from_snapshot["points"], 30);
    assert_eq!(from_jsonl["points"], 30);
    assert_eq!(from_jsonl["skipped_lines"], 0);
    assert_eq!(from_snapshot["runs"][0]["name"], "small");
    assert_eq!(from_jsonl["runs"][0]["name"], "small");
    assert_eq!(from_snapshot["runs"][0]["last_step"], from_jsonl["runs"][0]["last_step"]);
    assert_eq!(from_snapshot["alerts"].as_array().map(Vec::len), from_jsonl["alerts"].as_array().map(Vec::len));
}

#[test]
fn compare_finds_no_divergence_for_one_seed_and_a_step_for_another() {
    let dir = tempfile::tempdir().unwrap();
    let a = snapshot_of(&watch(dir.path(), &config(dir.path(), "a", 7, 20)));
    let b = snapshot_of(&watch(dir.path(), &config(dir.path(), "b", 7, 20)));
    let c = snapshot_of(&watch(dir.path(), &config(dir.path(), "c", 8, 20)));

    // A generous tolerance: two CPU runs on a shared machine differ in speed.
    let same = rlmon(dir.path()).args(["compare", "--json", "--tolerance", "0.9"]).arg(&a).arg(&b).output().unwrap();
    let report: Value = serde_json::from_slice(&same.stdout).unwrap();
    assert!(report["first_divergence"].is_null(), "{report}");
    assert_eq!(same.status.code(), Some(0), "{report}");
    let loss = report["runs"][0]["metrics"].as_array().unwrap().iter().find(|m| m["metric"] == "loss").unwrap().clone();
    assert_eq!(loss["final_a"], loss["final_b"]);
    assert!(report["throughput"]["ratio"].as_f64().unwrap() > 0.0);

    let other = rlmon(dir.path()).args(["compare", "--json", "--tolerance", "0.9"]).arg(&a).arg(&c).output().unwrap();
    assert_eq!(other.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&other.stdout).unwrap();
    assert_eq!(report["first_divergence"]["run"], "small");
    assert!(report["first_divergence"]["step"].as_u64().unwrap() >= 1, "{report}");

    let text = rlmon(dir.path()).args(["compare"]).arg(&a).arg(&c).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("B diverges from A: run small"), "{}", String::from_utf8_lossy(&text.stdout));
}

#[test]
fn a_killed_rlmon_leaves_a_journal_that_replays_and_is_recovered_on_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(dir.path(), "killed", 0, 1_000_000);
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("rlmon"))
        .args(["watch", "--headless", "--config"])
        .arg(&path)
        .env("RLMON_SESSION_DIR", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let journal = || std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.path()).find(|p| p.to_string_lossy().ends_with(".rlmon.journal"));
    // Wait until the journal holds some steps (it is synced every second).
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut seen_bytes = 0;
    while Instant::now() < deadline && seen_bytes < 20_000 {
        std::thread::sleep(Duration::from_millis(200));
        seen_bytes = journal().and_then(|j| std::fs::metadata(j.join("segment-000001.log")).ok()).map_or(0, |m| m.len());
    }
    assert!(seen_bytes >= 20_000, "the journal grows while the run trains");
    child.kill().unwrap(); // SIGKILL: no snapshot, no cleanup
    child.wait().unwrap();
    let journal = journal().expect("the journal is left behind");

    let out = rlmon(dir.path()).args(["replay", "--headless", "--json", "--speed", "max"]).arg(&journal).output().unwrap();
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = summary["runs"][0]["steps"].as_u64().unwrap();
    assert!(steps > 0, "the steps seen before the kill are there");
    assert_eq!(summary["runs"][0]["state"], "failed", "the run never ended");
    assert!(summary["runs"][0]["error"].as_str().unwrap().starts_with("interrupted: rlmon stopped"), "{summary}");
    assert_eq!(out.status.code(), Some(1), "an unfinished run is not a success");

    // The next start finds the journal and turns it into a snapshot.
    let out = rlmon(dir.path()).args(["watch", "--headless", "--config"]).arg(config(dir.path(), "next", 0, 2)).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("found an interrupted session"), "{stderr}");
    assert!(!journal.exists(), "converted");
    let recovered = journal.with_extension("parquet");
    assert!(recovered.exists(), "{stderr}");
    let out = rlmon(dir.path()).args(["replay", "--headless", "--json", "--speed", "max"]).arg(&recovered).output().unwrap();
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["runs"][0]["steps"].as_u64().unwrap(), steps);
}

#[test]
fn a_live_baseline_raises_divergence_alerts_that_the_snapshot_replays() {
    let dir = tempfile::tempdir().unwrap();
    let base = snapshot_of(&watch(dir.path(), &config(dir.path(), "base", 7, 30)));
    // Another seed departs from the baseline at once.
    let path = config(dir.path(), "other", 8, 30);
    let out = rlmon(dir.path()).args(["watch", "--headless", "--json", "--baseline"]).arg(&base).arg("--config").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warn run_divergence at step"), "{stderr}");
    let live: Value = serde_json::from_slice(&out.stdout).unwrap();
    let alerts = live["runs"][0]["alerts"].as_array().unwrap();
    let first = alerts.iter().find(|a| a["kind"] == "run_divergence" && a["severity"] == "warn").expect("a run_divergence warning");
    assert!(first["message"].as_str().unwrap().contains("diverges from the baseline"), "{first}");
    assert_eq!(first["metric"], "loss", "when metrics part at once, the loss names it: {first}");

    // The snapshot names its baseline: a replay reads it again and the hub raises
    // the same alerts; `check` and `compare` judge it with the same code.
    let snapshot = snapshot_of(&live);
    let replay = |snapshot: &std::path::Path| -> Value {
        let out = rlmon(dir.path()).args(["replay", "--headless", "--json", "--speed", "max"]).arg(snapshot).output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(replay(&snapshot)["runs"][0]["alerts"], live["runs"][0]["alerts"]);
    let out = rlmon(dir.path()).args(["check", "--json"]).arg(&snapshot).output().unwrap();
    let mut checked: Value = serde_json::from_slice(&out.stdout).unwrap();
    // check adds each alert's context (`moved`); the alerts are otherwise the same.
    for a in checked["alerts"].as_array_mut().unwrap() {
        let moved = a.as_object_mut().unwrap().remove("moved");
        assert!(moved.is_some_and(|m| m.is_array()), "{a}");
    }
    assert_eq!(checked["alerts"], live["runs"][0]["alerts"], "check of the snapshot");
    let out = rlmon(dir.path()).args(["compare", "--json"]).arg(&base).arg(&snapshot).output().unwrap();
    let compared: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(compared["first_divergence"]["metric"], first["metric"], "{compared}");
    assert_eq!(compared["first_divergence"]["step"], first["step"], "{compared}");
    // Without the baseline file, the replay raises the alerts recorded against it.
    let moved = dir.path().join("moved.rlmon.parquet");
    std::fs::rename(&base, &moved).unwrap();
    assert_eq!(replay(&snapshot)["runs"][0]["alerts"], live["runs"][0]["alerts"], "from the recorded alerts");
    std::fs::rename(&moved, &base).unwrap();
    let out = rlmon(dir.path()).args(["export", "--format", "jsonl"]).arg(&snapshot).output().unwrap();
    assert_eq!(out.status.code(), Some(0));

    // A run the baseline does not have is named, not silently left unchecked.
    let renamed = dir.path().join("renamed.toml");
    std::fs::write(&renamed, std::fs::read_to_string(config(dir.path(), "renamed", 7, 3)).unwrap().replace("name = \"small\"", "name = \"other\"")).unwrap();
    let two = format!("{}\n[[run]]\nname = \"second\"\nworkload = \"lm\"\ndevice = \"cpu\"\nsteps = 3\nbatch_size = 4\nintra_op_threads = 1\n[run.model]\nlayers = 1\nd_model = 32\nheads = 2\nseq_len = 16\n", std::fs::read_to_string(&renamed).unwrap());
    std::fs::write(&renamed, two).unwrap();
    let out = rlmon(dir.path()).args(["watch", "--headless", "--baseline"]).arg(&base).arg("--config").arg(&renamed).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the baseline has no run named other, second (its runs: small)"), "{stderr}");

    // The same seed as the baseline: no divergence alert.
    let same = config(dir.path(), "same", 7, 30);
    let out = rlmon(dir.path()).args(["watch", "--headless", "--json", "--baseline"]).arg(&base).arg("--config").arg(&same).output().unwrap();
    let quiet: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!quiet["runs"][0]["alerts"].as_array().unwrap().iter().any(|a| a["kind"] == "run_divergence"), "{quiet}");
}

#[test]
fn bad_recordings_exit_2_saying_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = snapshot_of(&watch(dir.path(), &config(dir.path(), "ok", 0, 3)));
    let bytes = std::fs::read(&snapshot).unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "step,loss\n1,2\n").unwrap();
    let truncated = dir.path().join("truncated.rlmon.parquet");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let empty_journal = dir.path().join("empty.rlmon.journal");
    std::fs::create_dir(&empty_journal).unwrap();
    let cases: [(&Path, &str); 4] = [
        (&text, "neither an rlmon snapshot"),
        (&truncated, "truncated or corrupted"),
        (&empty_journal, "no session header"),
        (Path::new("no-such.rlmon.parquet"), "no such file"),
    ];
    for (path, needle) in cases {
        for args in [vec!["replay", "--headless"], vec!["export", "--format", "csv"]] {
            let out = rlmon(dir.path()).args(&args).arg(path).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?} {}: {stderr}", path.display());
            assert!(stderr.contains(needle) && stderr.contains(&*path.to_string_lossy()), "{stderr}");
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
        let out = rlmon(dir.path()).arg("compare").arg(&snapshot).arg(path).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
    }
}
