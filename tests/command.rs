//! `workload = "command"`: the user's own program under rlmon, as users run it
//! (headless, --json). Python scripts stand in for training jobs; nothing needs a GPU.
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use rlmon::config::{CommandConfig, MetricsSource, SessionConfig, WorkloadConfig};
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("session.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn rlmon(dir: &Path, config: &Path) -> StdCommand {
    let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin("rlmon"));
    cmd.args(["watch", "--headless", "--json", "--config"]).arg(config).current_dir(ROOT).env("RLMON_SESSION_DIR", dir.join("sessions"));
    cmd
}

/// Runs rlmon on `config`; returns its exit code, summary and stderr.
fn watch(dir: &Path, config: &Path) -> (Option<i32>, Value, String) {
    let out = rlmon(dir, config).output().unwrap();
    summary_of(out)
}

fn summary_of(out: Output) -> (Option<i32>, Value, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: stdout {:?}, stderr {stderr}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code(), summary, stderr)
}

/// A shipped config of `workloads/` running examples/train_minimal.py, shortened to
/// `steps` steps of 10 ms, with its folder made absolute for the copy in `dir`.
fn shipped_config(dir: &Path, name: &str, steps: u32) -> PathBuf {
    let text = std::fs::read_to_string(Path::new(ROOT).join("workloads").join(name)).unwrap();
    assert!(text.contains("\"--steps\", \"400\"") && text.contains("cwd = \"..\""), "the test edits these: {text}");
    let text = text
        .replace("\"400\"", &format!("\"{steps}\""))
        .replace("steps = 400", &format!("steps = {steps}"))
        .replace("\"0.05\"", "\"0.01\"")
        .replace("cwd = \"..\"", &format!("cwd = {:?}", ROOT));
    write_config(dir, &text)
}

/// A `[[run]]` running `python3 -c SCRIPT ARGS...`, plus `extra` keys.
fn python_run(script: &str, args: &[&str], extra: &str) -> String {
    let mut argv = vec!["python3".to_owned(), "-c".to_owned(), script.to_owned()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let argv = serde_json::to_string(&argv).unwrap();
    format!("[[run]]\nname = \"job\"\nworkload = \"command\"\ncommand = {argv}\n{extra}\n")
}

#[test]
fn the_external_python_workload_shows_its_metrics_under_canonical_names() {
    let dir = tempfile::tempdir().unwrap();
    let (code, summary, stderr) = watch(dir.path(), &shipped_config(dir.path(), "external-python.toml", 12));
    assert_eq!(code, Some(0), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["workload"], "command");
    assert_eq!(run["device"], "external");
    assert_eq!(run["state"], "finished");
    assert_eq!(run["steps"], 12);
    assert_eq!(run["total_steps"], 12);
    for metric in ["loss", "lr", "tokens", "step_time_s"] {
        assert!(run["metrics"][metric].is_number(), "{metric}: {}", run["metrics"]);
    }
    assert!(run["final_loss"].as_f64().unwrap() < 5.0);
    assert!(stderr.contains("[train-minimal] training for 12 steps"), "plain stdout lines are shown: {stderr}");
}

#[test]
fn a_program_exiting_3_fails_the_run_and_rlmon_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let script = format!("{ROOT}/examples/train_minimal.py");
    let text = format!("[[run]]\nname = \"bad\"\nworkload = \"command\"\ncommand = [\"python3\", {script:?}, \"--steps\", \"3\", \"--sleep\", \"0\", \"--exit-code\", \"3\"]\n");
    let (code, summary, stderr) = watch(dir.path(), &write_config(dir.path(), &text));
    assert_eq!(code, Some(1), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["state"], "failed");
    assert_eq!(run["error"], "exited with status 3");
    assert_eq!(run["steps"], 3, "its metrics were read before it failed");
}

#[test]
fn a_program_killed_by_a_signal_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = python_run("import os, signal; print('{\"step\": 1, \"loss\": 1}', flush=True); os.kill(os.getpid(), signal.SIGKILL)", &[], "");
    let (code, summary, _) = watch(dir.path(), &write_config(dir.path(), &text));
    assert_eq!(code, Some(1));
    assert_eq!(summary["runs"][0]["error"], "killed by signal 9 (SIGKILL)");
}

#[test]
fn other_output_and_stderr_go_to_the_log_and_the_format_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"
import sys
print("hello from the job", flush=True)
print("iter 1: loss 4.25, time 100.0ms", flush=True)
print("oops on stderr", file=sys.stderr, flush=True)
print("iter 2: loss 4.0, time 90.0ms", flush=True)
"#;
    let (code, summary, stderr) = watch(dir.path(), &write_config(dir.path(), &python_run(script, &[], "")));
    assert_eq!(code, Some(0), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["steps"], 2);
    assert_eq!(run["metrics"]["loss"], 4.0);
    assert_eq!(run["metrics"]["step_time_s"], 0.09, "nanoGPT's milliseconds, scaled");
    assert!(stderr.contains("[job] hello from the job"), "{stderr}");
    assert!(stderr.contains("[job] warning: oops on stderr"), "{stderr}");
    assert!(!stderr.contains("iter 1: loss"), "metric lines are read, not shown: {stderr}");
    assert!(stderr.contains(" 2 steps on external"), "no total: the steps alone: {stderr}");
}

#[test]
fn a_progress_bar_on_stderr_is_read_with_metrics_stderr_and_named_without() {
    let dir = tempfile::tempdir().unwrap();
    // tqdm's way: each state drawn over the last with `\r`, on stderr; a line break per epoch.
    let script = r#"
import sys
print("loading", flush=True)
for epoch in range(2):
    for i in range(1, 21):
        sys.stderr.write(f"\rEpoch {epoch}: {5 * i:3d}%| {i}/20 [00:01<00:01, 9.9it/s, loss={3.0 - 0.05 * (20 * epoch + i):.3f}]")
        sys.stderr.flush()
    sys.stderr.write("\n")
"#;
    let (code, summary, stderr) = watch(dir.path(), &write_config(dir.path(), &python_run(script, &[], "metrics = \"stderr\"")));
    assert_eq!(code, Some(0), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["steps"], 40, "every state of the bar, the second epoch numbered on: {stderr}");
    assert_eq!(run["metrics"]["loss"], 1.0);
    assert!(stderr.contains("[job] loading"), "{stderr}");
    assert!(!stderr.contains("stderr has metric lines"), "{stderr}");
    // Without it: no steps, one line saying where the metrics are, and no line per state.
    let (code, summary, stderr) = watch(dir.path(), &write_config(dir.path(), &python_run(script, &[], "")));
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(summary["runs"][0]["steps"], 0);
    assert_eq!(stderr.matches("stderr has metric lines").count(), 1, "{stderr}");
    assert!(stderr.contains("set metrics = \"stderr\""), "{stderr}");
    assert_eq!(stderr.matches("Epoch 0:").count(), 2, "the hint's excerpt and the bar's last state only: {stderr}");
}

#[test]
fn the_shipped_progress_bar_workload_reads_the_bar_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let (code, summary, stderr) = watch(dir.path(), &shipped_config(dir.path(), "progress-bar.toml", 30));
    assert_eq!(code, Some(0), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["steps"], 30, "{stderr}");
    for metric in ["loss", "lr", "step_time_s"] {
        assert!(run["metrics"][metric].is_number(), "{metric}: {}", run["metrics"]);
    }
}

#[test]
fn a_tailed_metrics_file_survives_truncation() {
    let dir = tempfile::tempdir().unwrap();
    // Three steps, then the file is cut and written again from step 1 (a restart),
    // with pauses longer than rlmon's poll so that it sees both versions.
    let script = r#"
import json, sys, time
path = sys.argv[1]
def write(mode, steps, base):
    with open(path, mode) as f:
        for s in steps:
            f.write(json.dumps({"step": s, "loss": base - s / 10}) + "\n")
print("writing metrics", flush=True)
write("w", [1, 2, 3], 3.0)
time.sleep(1.0)
write("w", [1, 2], 2.0)
time.sleep(1.0)
write("a", [3], 2.0)
"#;
    let file = dir.path().join("logs/m.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = python_run(script, &[file.to_str().unwrap()], "metrics = { file = \"logs/m.jsonl\" }\nformat = \"jsonl\"");
    let (code, summary, stderr) = watch(dir.path(), &write_config(dir.path(), &text));
    assert_eq!(code, Some(0), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["metrics"]["loss"], 1.7, "the last line written: {}", run["metrics"]);
    assert_eq!(run["steps"], 3);
    assert!(stderr.contains("was truncated: reading it from the start"), "{stderr}");
    assert!(stderr.contains("resumed at step 1 (3 steps discarded)"), "{stderr}");
    assert!(stderr.contains("[job] writing metrics"), "stdout goes to the log when metrics come from a file: {stderr}");
}

#[test]
fn a_tensorboard_folder_is_read_as_the_program_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::fs::read_dir(Path::new(ROOT).join("tests/fixtures/tensorboard/run1")).unwrap().flatten().next().unwrap().path();
    // The program creates its event file late and writes it in pieces that cut records.
    let script = r#"
import os, sys, time
src, out = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
time.sleep(0.5)
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, os.path.basename(src)), "wb") as f:
    for i in range(0, len(data), 333):
        f.write(data[i:i + 333])
        f.flush()
        time.sleep(0.05)
"#;
    let out = dir.path().join("runs/x/train");
    let text = python_run(script, &[fixture.to_str().unwrap(), out.to_str().unwrap()], "metrics = { tensorboard = \"runs/x\" }");
    let (code, summary, stderr) = watch(dir.path(), &write_config(dir.path(), &text));
    assert_eq!(code, Some(0), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["steps"], 40, "{stderr}");
    assert!(run["metrics"]["loss"].is_number(), "train/ + train/loss still reads as loss: {}", run["metrics"]);
    assert!(!stderr.contains("skipped"), "{stderr}");
}

#[test]
fn an_mlflow_run_the_program_creates_is_followed_and_an_earlier_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    // An earlier program's run, already in the store.
    let old = dir.path().join("mlruns/0/old1");
    std::fs::create_dir_all(old.join("metrics")).unwrap();
    std::fs::write(old.join("meta.yaml"), "run_id: old1\n").unwrap();
    std::fs::write(old.join("metrics/loss"), "1700000000000 9.0 0\n").unwrap();
    // As MLflow's file store writes a run: meta.yaml, the runName tag, then one
    // line `timestamp value step` per logged value, appended as training goes.
    let script = r#"
import os, sys, time
run = os.path.join(sys.argv[1], "0", "a1b2c3")
time.sleep(0.3)
for d in ("metrics/train", "params", "tags"):
    os.makedirs(os.path.join(run, d), exist_ok=True)
open(os.path.join(run, "meta.yaml"), "w").write("run_id: a1b2c3\n")
open(os.path.join(run, "tags", "mlflow.runName"), "w").write("bright-owl-7")
for step in range(40):
    for name, value in (("train/loss", 3.0 - 0.05 * step), ("lr", 0.001)):
        with open(os.path.join(run, "metrics", name), "a") as f:
            f.write(f"{1700000000000 + step * 100} {value} {step}\n")
    time.sleep(0.01)
"#;
    let store = dir.path().join("mlruns");
    let text = python_run(script, &[store.to_str().unwrap()], &format!("metrics = {{ mlflow = {:?} }}", store.to_str().unwrap()));
    let (code, summary, stderr) = watch(dir.path(), &write_config(dir.path(), &text));
    assert_eq!(code, Some(0), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["steps"], 39, "{stderr}");
    assert!((run["metrics"]["loss"].as_f64().unwrap() - 1.05).abs() < 1e-9, "the new run's loss, not the old one's: {}", run["metrics"]);
    assert!(stderr.contains("following MLflow run bright-owl-7"), "{stderr}");
    // A program that never logs to the store is told apart from one that logs nothing.
    let text = python_run("print('no mlflow here')", &[], &format!("metrics = {{ mlflow = {:?} }}", store.to_str().unwrap()));
    let (code, summary, stderr) = watch(dir.path(), &write_config(dir.path(), &text));
    assert_eq!((code, summary["runs"][0]["steps"].as_u64()), (Some(0), Some(0)), "{stderr}");
    assert!(stderr.contains("no new MLflow run appeared under"), "{stderr}");
}

#[test]
fn a_metrics_file_that_never_appears_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let text = python_run("print('no metrics here')", &[], "metrics = { file = \"nowhere.jsonl\" }");
    let (code, summary, stderr) = watch(dir.path(), &write_config(dir.path(), &text));
    assert_eq!(code, Some(0), "the program's exit status decides: {stderr}");
    assert_eq!(summary["runs"][0]["steps"], 0);
    assert!(stderr.contains("nowhere.jsonl never appeared"), "{stderr}");
}

#[test]
fn a_missing_program_fails_with_its_name_and_the_os_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[[run]]\nname = \"ghost\"\nworkload = \"command\"\ncommand = [\"rlmon-no-such-program\", \"--x\"]\n";
    let (code, summary, _) = watch(dir.path(), &write_config(dir.path(), text));
    assert_eq!(code, Some(1));
    let error = summary["runs"][0]["error"].as_str().unwrap();
    assert!(error.contains("rlmon-no-such-program") && error.contains("No such file"), "{error}");
}

#[test]
fn interrupting_rlmon_stops_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    // The job ignores SIGTERM (so does its child: an ignored signal stays ignored
    // across exec), so only the SIGKILL after the grace period ends them.
    let script = r#"
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(["sleep", "60"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(f"{os.getpgid(0)} {child.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
step = 0
while True:
    step += 1
    print('{"step": %d, "loss": 1.0}' % step, flush=True)
    time.sleep(0.05)
"#;
    let marker = dir.path().join("pgid");
    let text = python_run(script, &[marker.to_str().unwrap()], "grace_s = 1");
    let config = write_config(dir.path(), &text);
    let child = rlmon(dir.path(), &config).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the job never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let ids: Vec<i32> = std::fs::read_to_string(&marker).unwrap().split_whitespace().map(|s| s.parse().unwrap()).collect();
    let (pgid, grandchild) = (ids[0], ids[1]);
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    // SAFETY: signals to processes this test started.
    unsafe {
        assert_eq!(libc::kill(child.id() as i32, libc::SIGINT), 0);
    }
    let (code, summary, stderr) = summary_of(child.wait_with_output().unwrap());
    assert_eq!(code, Some(1), "{stderr}");
    let run = &summary["runs"][0];
    assert_eq!(run["state"], "cancelled", "{stderr}");
    assert!(run["steps"].as_u64().unwrap() > 0);
    assert!(started.elapsed() >= Duration::from_millis(900), "SIGTERM was ignored: SIGKILL came after the grace period");
    // No process of the group is left (a zombie would still answer kill 0).
    // SAFETY: kill with signal 0 only asks whether the group exists.
    let alive = unsafe { libc::kill(-pgid, 0) };
    let errno = std::io::Error::last_os_error().raw_os_error();
    assert!(alive == -1 && errno == Some(libc::ESRCH), "the job's group {pgid} is still there");
    assert!(!Path::new(&format!("/proc/{grandchild}")).exists() || std::fs::read_to_string(format!("/proc/{grandchild}/stat")).is_ok_and(|s| !s.contains("sleep")), "the job's child {grandchild} is still there");
}

#[test]
fn a_glob_follows_one_file_per_rank_including_files_that_appear_later() {
    let dir = tempfile::tempdir().unwrap();
    // Rank 0's file at once; rank 1's a second later (after rlmon's first look).
    let script = r#"
import json, os, sys, time
d = sys.argv[1]
def write(name):
    with open(os.path.join(d, name), "w") as f:
        for s in range(1, 4):
            rec = {"step": s, "loss": 2.0 - s / 10}
            f.write(json.dumps(rec) + "\n")
write("rank0.jsonl")
time.sleep(1.0)
write("rank1.jsonl")
time.sleep(0.5)
"#;
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    // An earlier run's file of a third rank: not this run's, never read.
    std::fs::write(logs.join("rank2.jsonl"), "{\"step\": 1, \"loss\": 9}\n").unwrap();
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(logs.join("rank2.jsonl")).unwrap().set_modified(old).unwrap();
    let text = python_run(script, &[logs.to_str().unwrap()], "metrics = { glob = \"logs/rank*.jsonl\" }");
    let (code, summary, stderr) = watch(dir.path(), &write_config(dir.path(), &text));
    assert_eq!(code, Some(0), "{stderr}");
    let names: Vec<&str> = summary["runs"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["job", "job/rank0", "job/rank1"], "{stderr}");
    for r in &summary["runs"].as_array().unwrap()[1..] {
        assert_eq!((r["steps"].as_u64(), r["state"].as_str()), (Some(3), Some("finished")), "{r}");
    }
    assert_eq!(summary["runs"][0]["steps"], 3, "the job: as far as its slowest rank");
    assert!(stderr.contains("rank 1: following"), "{stderr}");
    assert!(stderr.contains("rank2.jsonl was written before this run"), "{stderr}");
}

// Config: the shape of a command run, and its errors with file:line:col.

fn config(text: &str) -> Result<SessionConfig, String> {
    SessionConfig::from_str(text, Path::new("/work/cfg/session.toml")).map_err(|e| e.to_string())
}

fn command_of(cfg: &SessionConfig) -> &CommandConfig {
    let WorkloadConfig::Command(c) = &cfg.runs[0].workload else { panic!("a command run") };
    c
}

#[test]
fn a_command_run_resolves_with_defaults_and_paths_from_the_config_folder() {
    let cfg = config("[[run]]\nname = \"m\"\nworkload = \"command\"\ncommand = [\"python3\", \"train.py\"]\nenv = { A = \"1\" }\nmetrics = { file = \"logs/m.jsonl\" }\n").unwrap();
    let c = command_of(&cfg);
    assert_eq!(c.argv, ["python3", "train.py"]);
    assert_eq!(c.cwd, Path::new("/work/cfg"));
    assert_eq!(c.env, [("A".to_owned(), "1".to_owned())]);
    assert_eq!(c.metrics, MetricsSource::File("/work/cfg/logs/m.jsonl".into()));
    assert_eq!(c.format, None);
    assert_eq!(c.grace, Duration::from_secs(5));
    assert_eq!(cfg.runs[0].steps, 0, "no total unless given");
    let cfg = config("[[run]]\nname = \"m\"\nworkload = \"command\"\ncommand = [\"x\"]\nmetrics = \"stdout\"\nformat = \"csv\"\ngrace_s = 0.5\nsteps = 10\n").unwrap();
    let c = command_of(&cfg);
    assert_eq!((c.metrics.clone(), c.format.as_deref(), c.grace), (MetricsSource::Stdout, Some("csv"), Duration::from_millis(500)));
    assert_eq!(cfg.runs[0].steps, 10);
    let cfg = config("[[run]]\nname = \"m\"\nworkload = \"command\"\ncommand = [\"x\"]\nmetrics = { tensorboard = \"runs/x\" }\n").unwrap();
    assert_eq!(command_of(&cfg).metrics, MetricsSource::TensorBoard("/work/cfg/runs/x".into()));
    let cfg = config("[[run]]\nname = \"m\"\nworkload = \"command\"\ncommand = [\"x\"]\nmetrics = { glob = \"logs/rank*.jsonl\" }\n").unwrap();
    assert_eq!(command_of(&cfg).metrics, MetricsSource::Glob("/work/cfg/logs/rank*.jsonl".into()));
}

#[test]
fn command_config_errors_point_at_the_key() {
    let run = "[[run]]\nname = \"m\"\nworkload = \"command\"\n";
    let cases = [
        ("command = []\n", "4:11", "command must not be empty"),
        ("command = [\"\"]\n", "4:11", "command must not be empty"),
        ("command = [\"x\"]\nmetrics = 5\n", "5:11", "\"stdout\", \"stderr\" or a table"),
        ("command = [\"x\"]\nmetrics = \"stdin\"\n", "5:11", "expected \"stdout\""),
        ("command = [\"x\"]\nmetrics = { path = \"m\" }\n", "5:", "unknown field `path`"),
        ("command = [\"x\"]\nmetrics = { file = \"m\", tensorboard = \"d\" }\n", "5:", "one of `file`, `tensorboard`, `glob`, `mlflow`, `wandb` or `trackio`"),
        ("command = [\"x\"]\nmetrics = { tensorboard = \" \" }\n", "5:11", "must name a folder"),
        ("command = [\"x\"]\nmetrics = { mlflow = \"\" }\n", "5:11", "must name the MLflow store"),
        ("command = [\"x\"]\nmetrics = { wandb = \"\" }\n", "5:11", "must name the folder W&B writes"),
        ("command = [\"x\"]\nmetrics = { trackio = \" \" }\n", "5:11", "must name the project"),
        ("command = [\"x\"]\nmetrics = { file = \"a\", glob = \"b*\" }\n", "5:", "one of `file`, `tensorboard`, `glob`, `mlflow`, `wandb` or `trackio`"),
        ("command = [\"x\"]\nmetrics = { glob = \"logs/*/rank0.jsonl\" }\n", "5:11", "in the file name only"),
        ("command = [\"x\"]\nformat = \"xml\"\n", "5:10", "unknown format `xml`"),
        ("command = [\"x\"]\nformat = \"trainer-state\"\n", "5:10", "cannot be followed"),
        ("command = [\"x\"]\ngrace_s = -1\n", "5:11", "grace_s must be between"),
        ("command = [\"x\"]\ncwd = \"no/such/dir\"\n", "5:7", "is not a folder"),
        ("command = [\"x\"]\nsteps = 0\n", "5:9", "steps must be at least 1"),
        ("command = [\"x\"]\ncomand = 1\n", "5:1", "unknown field `comand`"),
        ("command = \"python3 train.py\"\n", "4:11", "invalid type"),
        ("command = [\"x\"]\n[run.model]\nlayers = 1\n", "5:1", "applies to the built-in workloads"),
        ("", "1:1", "needs `command`"),
    ];
    for (extra, at, message) in cases {
        let err = config(&format!("{run}{extra}")).expect_err(extra);
        assert!(err.starts_with(&format!("/work/cfg/session.toml:{at}")) && err.contains(message), "{extra:?} gave: {err}");
    }
    let err = config("[[run]]\nname = \"m\"\nworkload = \"lm\"\nsteps = 5\ncommand = [\"x\"]\n").unwrap_err();
    assert!(err.contains(":5:11: `command` applies to workload = \"command\""), "{err}");
    let err = config("[[run]]\nname = \"m\"\nworkload = \"lm\"\n").unwrap_err();
    assert!(err.contains(":1:1: missing field `steps`"), "{err}");
}

#[test]
fn config_errors_exit_2_naming_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, at) in [("command = []\n", ":4:11:"), ("command = [\"x\"]\nmetrics = 5\n", ":5:11:")] {
        let path = write_config(dir.path(), &format!("[[run]]\nname = \"m\"\nworkload = \"command\"\n{extra}"));
        let out = rlmon(dir.path(), &path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("session.toml{at}")), "{stderr}");
    }
}

#[test]
fn a_config_named_without_a_folder_runs_its_command_in_the_current_folder() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("here.toml"), python_run("print('{\"step\": 1, \"loss\": 2.0}')", &[], "")).unwrap();
    let out = StdCommand::new(assert_cmd::cargo::cargo_bin("rlmon"))
        .args(["watch", "--headless", "--json", "--config", "here.toml"])
        .current_dir(dir.path())
        .env("RLMON_SESSION_DIR", dir.path().join("sessions"))
        .output()
        .unwrap();
    let (code, summary, stderr) = summary_of(out);
    assert_eq!(code, Some(0), "{summary}\n{stderr}");
    assert_eq!(summary["runs"][0]["state"], "finished", "{summary}");
}
