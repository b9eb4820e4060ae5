//! The examples/ scripts, each run as its workloads/ config runs it (shortened).
//! Python comes from the project's virtualenv (.venv, made by scripts/setup.sh);
//! the TRL test skips, saying so, when TRL is not installed.
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Says a test (or part of one) is skipped, where `cargo test` shows it: straight to
/// stderr (the test harness captures only the print macros).
fn skip(why: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
}

fn venv_python() -> PathBuf {
    Path::new(ROOT).join(".venv/bin/python")
}

/// Whether the virtualenv's Python imports `module`.
fn importable(module: &str) -> bool {
    Command::new(venv_python()).args(["-c", &format!("import {module}")]).output().is_ok_and(|o| o.status.success())
}

/// A shipped config with `edits` applied (each must apply: the test follows the
/// file), written into `dir`.
fn config(dir: &Path, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut text = std::fs::read_to_string(Path::new(ROOT).join("workloads").join(name)).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{name} no longer has {from:?}: {text}");
        text = text.replace(from, to);
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `rlmon watch --headless --json` on `config`: exit code, summary, stderr.
fn watch(dir: &Path, config: &Path) -> (Option<i32>, Value, String) {
    let out = Command::new(assert_cmd::cargo::cargo_bin("rlmon"))
        .args(["watch", "--headless", "--json", "--config"])
        .arg(config)
        .current_dir(ROOT)
        .env("RLMON_SESSION_DIR", dir.join("sessions"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: stderr {stderr}"));
    (out.status.code(), summary, stderr)
}

fn run<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["runs"].as_array().unwrap().iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("no run {name}: {summary}"))
}

#[test]
fn the_two_rank_torchrun_example_shows_both_ranks_and_the_straggler() {
    if !importable("torch.distributed") {
        skip(format!("torch is not importable from {} (run scripts/setup.sh)", venv_python().display()));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let glob = format!("metrics = {{ glob = {:?} }}", format!("{}/rank*.jsonl", logs.display()));
    let cfg = config(
        dir.path(),
        "torchrun-two-ranks.toml",
        &[
            ("\"--steps\", \"300\"", "\"--steps\", \"40\""),
            ("steps = 300", "steps = 40"),
            ("\"--sleep\", \"0.05\"", "\"--sleep\", \"0.02\""),
            // A clear straggler on a loaded machine: rank 1 takes about twice as long.
            ("\"--straggle\", \"0.01\"", "\"--straggle\", \"0.02\""),
            ("\"--out\", \"logs/two-ranks\"", &format!("\"--out\", {:?}", logs.display().to_string())),
            ("cwd = \"..\"", &format!("cwd = {ROOT:?}")),
            ("metrics = { glob = \"../logs/two-ranks/rank*.jsonl\" }", &glob),
        ],
    );
    let (code, summary, stderr) = watch(dir.path(), &cfg);
    assert_eq!(code, Some(0), "{stderr}");
    let job = run(&summary, "two-ranks");
    assert_eq!(job["state"], "finished", "{stderr}");
    for rank in ["two-ranks/rank0", "two-ranks/rank1"] {
        let r = run(&summary, rank);
        assert_eq!(r["state"], "finished");
        assert_eq!(r["steps"], 40, "{rank}");
        for metric in ["loss", "grad_norm", "tokens", "step_time_s", "tokens_per_s"] {
            assert!(r["metrics"][metric].is_number(), "{rank} {metric}: {}", r["metrics"]);
        }
    }
    assert_eq!(job["steps"], 40, "the job is as far as its slowest rank");
    let alerts = job["alerts"].as_array().unwrap();
    let straggler = alerts.iter().find(|a| a["kind"] == "rank_straggler").unwrap_or_else(|| panic!("{alerts:?}\n{stderr}"));
    assert_eq!(straggler["severity"], "warn");
    assert!(straggler["message"].as_str().unwrap().starts_with("rank 1 is "), "{straggler}");
}

#[test]
fn the_trl_callback_writes_jsonl_rlmon_reads_under_canonical_names() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("grpo.jsonl");
    let cfg = config(
        dir.path(),
        "trl-callback.toml",
        &[
            ("\"--steps\", \"200\"", "\"--steps\", \"25\", \"--sleep\", \"0.01\""),
            ("steps = 200", "steps = 25"),
            ("\"--out\", \"logs/trl/grpo.jsonl\"", &format!("\"--out\", {:?}", file.display().to_string())),
            ("cwd = \"..\"", &format!("cwd = {ROOT:?}")),
            ("metrics = { file = \"../logs/trl/grpo.jsonl\" }", &format!("metrics = {{ file = {:?} }}", file.display().to_string())),
        ],
    );
    let (code, summary, stderr) = watch(dir.path(), &cfg);
    assert_eq!(code, Some(0), "{stderr}");
    let r = run(&summary, "grpo");
    assert_eq!(r["steps"], 25, "{stderr}");
    // TRL's names, read through the catalog's: reward, kl, completions/mean_length, num_tokens.
    for metric in ["reward", "kl", "entropy", "response_len", "lr", "grad_norm", "tokens"] {
        assert!(r["metrics"][metric].is_number(), "{metric}: {}", r["metrics"]);
    }

    // The callback class itself, fed a PPO logs dict as TRL's trainer would.
    let script = r#"
import sys
sys.path.insert(0, sys.argv[1])
from trl_callback import RlmonCallback
class State:
    global_step = 7
    is_world_process_zero = True
cb = RlmonCallback(sys.argv[2])
cb.on_log(None, State(), None, logs={"objective/kl": 0.03, "objective/scores": 1.5, "policy/entropy_avg": 2.0, "note": "x", "flag": True, "nan": float("nan")})
State.is_world_process_zero = False
cb.on_log(None, State(), None, logs={"objective/kl": 9.0})
cb.on_train_end(None, State(), None)
"#;
    let out_file = dir.path().join("ppo.jsonl");
    let status = Command::new("python3").args(["-c", script, &format!("{ROOT}/examples")]).arg(&out_file).status().unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(&out_file).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1, "only the main process writes: {text}");
    assert_eq!(lines[0]["step"], 7);
    assert_eq!(lines[0]["objective/kl"], 0.03);
    assert_eq!(lines[0]["nan"], "nan", "a non-finite number as JSON can carry it");
    assert!(lines[0].get("note").is_none() && lines[0].get("flag").is_none(), "numbers only: {text}");
    let check = Command::new(assert_cmd::cargo::cargo_bin("rlmon")).args(["check", "--json"]).arg(&out_file).output().unwrap();
    let report: Value = serde_json::from_slice(&check.stdout).unwrap();
    let read = &report["runs"][0]["input"]["read"];
    for (from, to) in [("objective/kl", "kl"), ("objective/scores", "reward"), ("policy/entropy_avg", "entropy")] {
        assert_eq!(read[from], to, "{read}");
    }

    if !importable("trl") {
        skip(format!("the TRL part of the callback test: trl is not importable from {} (pip install trl into it to run it)", venv_python().display()));
        return;
    }
    let script = format!("import sys; sys.path.insert(0, {:?}); import transformers; from trl_callback import RlmonCallback; assert issubclass(RlmonCallback, transformers.TrainerCallback)", format!("{ROOT}/examples"));
    assert!(Command::new(venv_python()).args(["-c", &script]).status().unwrap().success(), "a TRL trainer takes it as a callback");
}

#[test]
fn the_tensorboard_example_writes_event_files_rlmon_reads() {
    if !importable("torch.utils.tensorboard") {
        skip(format!("torch.utils.tensorboard is not importable from {} (run scripts/setup.sh)", venv_python().display()));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let logdir = dir.path().join("tb");
    // The shipped config runs this command (its `metrics = { tensorboard = ... }`
    // follows the folder live); here the folder is checked once written.
    let shipped = std::fs::read_to_string(Path::new(ROOT).join("workloads/tensorboard-python.toml")).unwrap();
    assert!(shipped.contains("\"examples/train_tensorboard.py\"") && shipped.contains("metrics = { tensorboard = "), "{shipped}");
    let status = Command::new(venv_python())
        .args(["examples/train_tensorboard.py", "--steps", "25", "--sleep", "0", "--logdir"])
        .arg(&logdir)
        .current_dir(ROOT)
        .env("OMP_NUM_THREADS", "1")
        .status()
        .unwrap();
    assert!(status.success());
    let out = Command::new(assert_cmd::cargo::cargo_bin("rlmon")).args(["check", "--json"]).arg(&logdir).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(report["format"], "tensorboard");
    assert_eq!(report["runs"][0]["points"], 25);
    let read = &report["runs"][0]["input"]["read"];
    for (from, to) in [("train/loss", "loss"), ("train/grad_norm", "grad_norm"), ("train/learning_rate", "lr")] {
        assert_eq!(read[from], to, "{read}");
    }

    // Live, as the shipped config runs it: rlmon follows the folder while it is written.
    let python = serde_json::to_string(&venv_python().display().to_string()).unwrap();
    let script = serde_json::to_string(&Path::new(ROOT).join("examples/train_tensorboard.py").display().to_string()).unwrap();
    let config = format!(
        "[[run]]\nname = \"tb\"\nworkload = \"command\"\ncommand = [{python}, {script}, \"--steps\", \"25\", \"--sleep\", \"0.02\", \"--logdir\", \"live\"]\nenv = {{ OMP_NUM_THREADS = \"1\" }}\nmetrics = {{ tensorboard = \"live\" }}\n"
    );
    std::fs::write(dir.path().join("tb.toml"), config).unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("rlmon"))
        .args(["watch", "--headless", "--json", "--config", "tb.toml", "--session-dir", "sessions"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(0), "{summary}");
    assert_eq!((summary["runs"][0]["state"].as_str(), summary["runs"][0]["steps"].as_u64()), (Some("finished"), Some(25)), "{summary}");
    assert!(summary["runs"][0]["metrics"]["loss"].as_f64().is_some(), "{summary}");
}
