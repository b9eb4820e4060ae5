//! `rlmon check` on logs of other trainers and tools, without a converter
//! (tests/fixtures/logs holds small files in each format).
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/logs").join(name)
}

/// `rlmon check --json FILE [args]`: (exit code, report).
fn check(file: &Path, args: &[&str]) -> (i32, Value) {
    let out = Command::cargo_bin("rlmon").unwrap().arg("check").arg("--json").arg(file).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.code().unwrap(), report)
}

fn read_as<'a>(run: &'a Value, field: &str) -> Option<&'a str> {
    run["input"]["read"][field].as_str()
}

#[test]
fn a_wandb_csv_export_gives_one_stream_per_run() {
    let (code, r) = check(&fixture("wandb_export.csv"), &[]);
    assert_eq!((code, r["format"].as_str()), (0, Some("csv")));
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.iter().map(|r| r["name"].as_str().unwrap()).collect::<Vec<_>>(), vec!["big-run", "small-run"]);
    assert_eq!(read_as(&runs[0], "train/loss"), Some("loss"));
    assert_eq!((runs[0]["points"].as_u64(), runs[1]["points"].as_u64()), (Some(200), Some(100)), "empty cells are no points");
}

#[test]
fn a_trainer_state_json_is_read_with_its_evaluations() {
    let (code, r) = check(&fixture("trainer_state.json"), &[]);
    assert_eq!((code, r["format"].as_str()), (0, Some("trainer-state")));
    let run = &r["runs"][0];
    assert_eq!(run["points"], 50, "evaluations merge into their step");
    assert_eq!(read_as(run, "learning_rate"), Some("lr"));
    assert_eq!(read_as(run, "eval_loss"), Some("val_loss"));
    assert_eq!(run["last_step"], 500);
}

#[test]
fn a_megatron_log_is_read_and_its_grad_norm_jump_found() {
    let (_, r) = check(&fixture("megatron.log"), &[]);
    assert_eq!(r["format"], "megatron");
    let run = &r["runs"][0];
    assert_eq!(run["points"], 40);
    for (field, metric) in [("loss", "loss"), ("lr", "lr"), ("grad_norm", "grad_norm"), ("step_time_s", "step_time_s")] {
        assert_eq!(read_as(run, field), Some(metric), "{run}");
    }
    assert!(r["alerts"].as_array().unwrap().iter().any(|a| a["kind"] == "grad_explosion" && a["step"] == 300), "{r}");
}

#[test]
fn nanogpt_logs_are_read_and_a_nan_is_critical() {
    let (code, r) = check(&fixture("nanogpt.log"), &[]);
    assert_eq!((code, r["format"].as_str()), (1, Some("nanogpt")));
    let run = &r["runs"][0];
    assert_eq!(read_as(run, "val_loss"), Some("val_loss"));
    let nan = r["alerts"].as_array().unwrap().iter().find(|a| a["kind"] == "nonfinite").expect("the NaN loss");
    assert_eq!((nan["step"].as_u64(), nan["metric"].as_str()), (Some(200), Some("loss")));
    let (code, modded) = check(&fixture("modded_nanogpt.txt"), &[]);
    assert_eq!(code, 0, "its `step_avg:nanms` at step 0 is no broken run: {modded}");
    assert_eq!(modded["runs"][0]["points"], 501);
    assert_eq!(read_as(&modded["runs"][0], "loss"), Some("loss"));
}

#[test]
fn an_fp16_loss_scale_that_falls_away_is_a_gradient_explosion_and_a_skipped_step_is_not_critical() {
    let formats = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats");
    let (code, r) = check(&formats.join("apex_loss_scale_collapse.log"), &[]);
    assert_eq!(code, 0, "no critical: {r}");
    let alerts = r["alerts"].as_array().unwrap();
    let collapse = alerts.iter().find(|a| a["kind"] == "grad_explosion").expect("the scale's fall");
    assert_eq!((collapse["metric"].as_str(), collapse["severity"].as_str(), collapse["step"].as_u64()), (Some("loss_scale"), Some("warn"), Some(7898)));
    let skipped = alerts.iter().find(|a| a["kind"] == "nonfinite").expect("the first overflow");
    assert_eq!((skipped["severity"].as_str(), skipped["step"].as_u64()), (Some("info"), Some(7892)));
    let (code, r) = check(&formats.join("tacotron2.log"), &[]);
    assert_eq!(code, 0, "one overflow the scaler skips: {r}");
}

/// Several scaler messages between two metric lines (the skipped steps print no
/// line): the first goes to the step before, the last to the next line, so the
/// fall in one gap is seen.
#[test]
fn a_fall_of_the_loss_scale_between_two_metric_lines_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("amp.log");
    let mut text = String::new();
    for epoch in 1..=14u64 {
        text.push_str(&format!("Epoch: {epoch}\nValidation loss {}:  0.{:06}\nEpoch {epoch} time 30.1 lr 0.001\n", epoch * 500, 160_000 - epoch * 900));
    }
    for scale in [256, 128, 64, 32, 16, 8, 4, 2] {
        text.push_str(&format!("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to {scale}.0\n"));
    }
    text.push_str("Validation loss 7500:  0.711720\n");
    std::fs::write(&path, text).unwrap();
    let (_, r) = check(&path, &[]);
    assert_eq!(r["runs"][0]["input"]["duplicate_steps"], 0, "{r}");
    let alerts = r["alerts"].as_array().unwrap();
    let fall = alerts.iter().find(|a| a["kind"] == "grad_explosion").unwrap_or_else(|| panic!("the scale's fall: {r}"));
    assert_eq!((fall["metric"].as_str(), fall["step"].as_u64()), (Some("loss_scale"), Some(7500)));
}

#[test]
fn what_was_not_read_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.jsonl");
    let mut text = String::new();
    for step in 1..=10u64 {
        let grad = if step == 9 { 500.0 } else { 1.0 };
        text.push_str(&format!("{{\"step\": {step}, \"loss\": \"{}\", \"grad_norm\": {grad}, \"los\": 1.0, \"phase\": \"train\"}}\n", 3.0 - step as f64 * 0.1));
    }
    text.push_str("{\"step\": 11, \"loss\": \n");
    std::fs::write(&path, text).unwrap();
    let (code, r) = check(&path, &[]);
    assert_eq!(code, 0);
    let run = &r["runs"][0];
    assert_eq!(run["points"], 10, "\"loss\": \"2.9\" is a number");
    assert_eq!(run["input"]["unknown_close_to"]["los"], "loss");
    assert!(run["input"]["ignored"].as_object().unwrap().contains_key("phase"));
    assert_eq!(r["skipped"]["malformed"]["lines"], 1);
    assert_eq!(r["skipped"]["malformed"]["first_line"], 11);
    let not_judged = run["not_judged"].as_array().unwrap();
    assert!(not_judged.iter().any(|n| n["kind"] == "grad_explosion" && n["reason"].as_str().unwrap().contains("not enough points: 10 of grad_norm")), "{run}");
}

#[test]
fn a_resumed_job_replaces_the_steps_it_logs_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resumed.jsonl");
    let mut text = String::new();
    for step in (1..=60u64).chain(41..=80) {
        text.push_str(&format!("{{\"step\": {step}, \"loss\": {}}}\n", 3.0 / (1.0 + step as f64 / 50.0)));
    }
    std::fs::write(&path, text).unwrap();
    let (code, r) = check(&path, &[]);
    assert_eq!(code, 0, "the rewind is not a jump: {r}");
    let run = &r["runs"][0];
    assert_eq!(run["input"]["resumed"][0]["at_step"], 41);
    assert_eq!(run["input"]["resumed"][0]["discarded"], 20);
    assert_eq!((run["points"].as_u64(), run["last_step"].as_u64()), (Some(80), Some(80)));
    assert!(r["alerts"].as_array().unwrap().is_empty(), "{r}");
}

#[test]
fn a_users_pattern_and_a_forced_format() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("custom.log");
    std::fs::write(&path, (1..=30).map(|s| format!("epoch {s} | loss={:.3} | acc=91%\n", 2.0 - s as f64 * 0.01)).collect::<String>()).unwrap();
    let (code, r) = check(&path, &["--pattern", r"epoch (?P<step>\d+) \| loss=(?P<loss>\S+) \| acc=(?P<acc>\S+)"]);
    assert_eq!((code, r["runs"][0]["points"].as_u64()), (0, Some(30)));
    let out = Command::cargo_bin("rlmon").unwrap().args(["check", "--format", "bogus"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a format (one of: jsonl, csv"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = Command::cargo_bin("rlmon").unwrap().args(["check", "--pattern", "("]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_tensorboard_folder_written_by_torch_is_read_and_a_cut_short_file_waits() {
    // Written by torch.utils.tensorboard.SummaryWriter: train/loss and
    // train/learning_rate as simple values, grad_norm as a tensor (new_style).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tensorboard");
    let (code, r) = check(&dir, &[]);
    assert_eq!((code, r["format"].as_str()), (0, Some("tensorboard")));
    let run = &r["runs"][0];
    assert_eq!((run["name"].as_str(), run["points"].as_u64()), (Some("run1"), Some(40)));
    assert_eq!(read_as(run, "train/loss"), Some("loss"));
    assert_eq!(read_as(run, "train/learning_rate"), Some("lr"));
    assert_eq!(read_as(run, "grad_norm"), Some("grad_norm"), "a tensor-style scalar");
    // The same file cut in the middle of a record, as while it is being written.
    let file = std::fs::read_dir(dir.join("run1")).unwrap().next().unwrap().unwrap().path();
    let bytes = std::fs::read(&file).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cut = tmp.path().join("live").join(file.file_name().unwrap());
    std::fs::create_dir_all(cut.parent().unwrap()).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 7]).unwrap();
    let (code, r) = check(&cut, &[]);
    assert_eq!((code, r["runs"][0]["name"].as_str()), (0, Some("live")));
    let points = r["runs"][0]["points"].as_u64().unwrap();
    assert!((15..25).contains(&points), "the whole records of the first half: {points}");
    assert_eq!(r["skipped_lines"], 0, "a record still being written is no error");
}

#[test]
fn an_mlflow_store_is_read_run_by_run_with_its_metric_files_merged_by_step() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("mlruns");
    for (exp, run, jump) in [("0", "a1b2", false), ("3", "c3d4", true)] {
        let run_dir = store.join(exp).join(run);
        std::fs::create_dir_all(run_dir.join("metrics/train")).unwrap();
        std::fs::create_dir_all(run_dir.join("tags")).unwrap();
        std::fs::write(run_dir.join("meta.yaml"), format!("run_id: {run}\n")).unwrap();
        std::fs::write(run_dir.join("tags/mlflow.runName"), format!("run-{run}")).unwrap();
        let (mut loss, mut grad) = (String::new(), String::new());
        for s in 0..120u64 {
            let g = if jump && s >= 100 { 40.0 } else { 1.0 + 0.01 * (s % 7) as f64 };
            loss.push_str(&format!("{} {} {s}\n", 1_700_000_000_000 + s * 1000, 2.0 + 6.0 * (-(s as f64) / 30.0).exp()));
            grad.push_str(&format!("{} {g} {s}\n", 1_700_000_000_000 + s * 1000));
        }
        std::fs::write(run_dir.join("metrics/train/loss"), loss).unwrap();
        std::fs::write(run_dir.join("metrics/grad_norm"), grad).unwrap();
    }
    let (code, r) = check(&store, &[]);
    assert_eq!((code, r["format"].as_str()), (1, Some("mlflow")), "a critical alert fails the check: {r}");
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.iter().map(|r| r["name"].as_str().unwrap()).collect::<Vec<_>>(), ["run-a1b2", "run-c3d4"]);
    assert!(runs.iter().all(|r| r["points"] == 120 && r["last_step"] == 119), "{r}");
    assert_eq!(read_as(&runs[0], "train/loss"), Some("loss"));
    assert_eq!(runs[0]["alerts"], 0);
    let alerts = r["alerts"].as_array().unwrap();
    assert!(alerts.iter().any(|a| a["run"] == "run-c3d4" && a["kind"] == "grad_explosion" && a["step"] == 100), "{alerts:?}");
    // One run's folder alone.
    let (_, r) = check(&store.join("0/a1b2"), &[]);
    assert_eq!(r["runs"].as_array().unwrap().len(), 1);
}

#[test]
fn a_tensorboard_tag_export_is_named_after_its_run_and_tag() {
    // TensorBoard's "download CSV" names the file `run-RUN-tag-TAG.csv`.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run-ppo_7-tag-train_loss.csv");
    let rows: String = (0..60).map(|s| format!("{}.5,{s},{}\n", 1_700_000_000 + s, 2.0 - s as f64 * 0.01)).collect();
    std::fs::write(&path, format!("Wall time,Step,Value\n{rows}")).unwrap();
    let (code, r) = check(&path, &[]);
    assert_eq!((code, r["format"].as_str()), (0, Some("csv")), "{r}");
    let run = &r["runs"][0];
    assert_eq!((run["name"].as_str(), run["points"].as_u64()), (Some("ppo_7"), Some(60)), "{r}");
    assert_eq!(read_as(run, "train_loss"), Some("loss"), "{r}");
}

/// The public excerpts of tests/fixtures/real/ that format detection once misread.
fn real(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real").join(name)
}

#[test]
fn a_table_of_rows_under_names_between_bars_is_read_by_column() {
    // OpenAI Baselines' PPO prints a header row of names and a row per optimisation
    // epoch, cells between `|`: read as text, not refused as JSONL.
    let (_, r) = check(&real("baselines-975-ppo-kl.log"), &[]);
    assert_eq!(r["format"].as_str(), Some("text"), "{r}");
    let run = &r["runs"][0];
    assert_eq!(run["points"].as_u64(), Some(4), "{run}");
    // `vf_loss` and `pol_surr` are the value and policy losses.
    assert_eq!((read_as(run, "kl"), read_as(run, "value_loss"), read_as(run, "policy_loss")), (Some("kl"), Some("value_loss"), Some("policy_loss")), "{run}");
}

#[test]
fn litgpt_lines_per_micro_batch_are_each_a_point() {
    // `iter N step M: loss X, iter time: Tms`: the optimizer step repeats, the iter does not.
    let (_, r) = check(&real("litgpt-628-loss-spike.log"), &[]);
    let run = &r["runs"][0];
    assert_eq!((run["points"].as_u64(), run["last_step"].as_u64()), (Some(9), Some(1159)), "{run}");
    // `iter time` is the step time, not an unknown name.
    assert_eq!(read_as(run, "step_time_s"), Some("step_time_s"), "{run}");
    assert_eq!(run["input"]["unknown_close_to"].as_object().map(|o| o.len()), Some(0), "{run}");
}

#[test]
fn a_finished_trainer_state_json_skips_nothing() {
    // Its last `log_history` entry is the end-of-training summary: no step, no skip
    // (tests/fixtures/real/qwen-verifier-sft-trainer_state.json, the file as committed).
    let (code, r) = check(&real("qwen-verifier-sft-trainer_state.json"), &[]);
    assert_eq!((code, r["format"].as_str()), (0, Some("trainer-state")));
    assert_eq!((r["runs"][0]["points"].as_u64(), r["skipped_lines"].as_u64()), (Some(24), Some(0)), "{r}");
}

#[test]
fn pytorch_word_language_model_logs_number_their_batches_and_skip_the_arguments() {
    // `Namespace(...)` is the run's arguments, not a point; `  200/ 2983 batches` is the
    // counter (after the epoch's batches); `ms/batch` is the step time; the `end of
    // epoch` summary's validation loss belongs to the epoch's last batch, no point of its own.
    let (_, r) = check(&real("pytorch-wlm-lstm-healthy.log"), &[]);
    let run = &r["runs"][0];
    assert_eq!((run["points"].as_u64(), run["alerts"].as_u64()), (Some(140), Some(0)), "{run}");
    assert!(read_as(run, "batch_size").is_none() && read_as(run, "seed").is_none(), "{run}");
    assert_eq!(read_as(run, "step_time_s"), Some("step_time_s"), "{run}");
    assert_eq!(read_as(run, "val_loss"), Some("val_loss"), "{run}");
    assert!(read_as(run, "end_of_epoch").is_none(), "{run}");
    assert_eq!(run["last_step"].as_u64(), Some(9 * 2983 + 2800), "{run}");
}

// ------------------------------------------------------------- format gallery
// tests/fixtures/formats/: one small log per trainer as it prints (sources in its
// README). Each file's points are checked here, so a reader that regresses fails.

/// The points of one gallery file as `check` reads them: per stream (its run and
/// rank), the steps and each step's canonical values.
struct Gallery {
    format: &'static str,
    /// `(stream, points)`, streams in order of first appearance.
    streams: Vec<(String, Vec<rlmon::ingest::normalize::Point>)>,
}

impl Gallery {
    fn read(name: &str) -> Gallery {
        use rlmon::ingest::{self, normalize::Emit, normalize::Normalizer, Line, LineReader};
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats").join(name);
        let bytes = std::fs::read(&path).unwrap();
        let detected = ingest::detect(&path, &String::from_utf8_lossy(&bytes[..bytes.len().min(64 * 1024)]));
        // As `check` reads it: in another format when the detected one reads nothing.
        let (format, _) = ingest::settle(|| Ok(&bytes[..]), detected, None).unwrap();
        let mut reader = LineReader::new(format.clone(), None);
        let mut streams: Vec<(String, Normalizer, Vec<rlmon::ingest::normalize::Point>)> = Vec::new();
        ingest::read_all(&bytes, &mut reader, |_, line| {
            let Line::Metrics(rec) = line else { return };
            let key = format!("{}{}", rec.run.clone().unwrap_or_default(), rec.rank.map(|r| format!("/rank{r}")).unwrap_or_default());
            let at = streams.iter().position(|s| s.0 == key).unwrap_or_else(|| {
                streams.push((key, Normalizer::default(), Vec::new()));
                streams.len() - 1
            });
            let (_, norm, points) = &mut streams[at];
            for e in norm.push(rec) {
                if let Emit::Point(p) = e {
                    points.push(p);
                }
            }
        })
        .unwrap();
        let streams = streams
            .into_iter()
            .map(|(key, mut norm, mut points)| {
                for e in norm.finish() {
                    if let Emit::Point(p) = e {
                        points.push(p);
                    }
                }
                (key, points)
            })
            .collect();
        Gallery { format: format.name(), streams }
    }

    /// The points of the first stream.
    fn points(&self) -> &[rlmon::ingest::normalize::Point] {
        self.streams.first().map_or(&[], |s| &s.1)
    }

    fn steps(&self) -> Vec<u64> {
        self.points().iter().map(|p| p.step).collect()
    }

    /// The value of `metric` at `step` in the first stream.
    fn at(&self, step: u64, metric: &str) -> Option<f64> {
        self.points().iter().find(|p| p.step == step)?.values.iter().find(|(n, _)| n == metric).map(|(_, v)| *v)
    }

    /// Every metric name read in the first stream.
    fn names(&self) -> std::collections::BTreeSet<String> {
        self.points().iter().flat_map(|p| p.values.iter().map(|(n, _)| n.to_string())).collect()
    }
}

/// Prints what each gallery file reads (`cargo test --test ingest gallery_dump -- --ignored --nocapture`);
/// `GALLERY_DIR=/some/logs` prints another folder's logs, read the same way.
#[test]
#[ignore]
fn gallery_dump() {
    let dir = std::env::var_os("GALLERY_DIR").map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats"), Into::into);
    let mut names: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n != "README.md").collect();
    names.sort();
    for name in names {
        let g = Gallery::read(&dir.join(&name).to_string_lossy());
        println!("== {name} ({})", g.format);
        for (stream, points) in &g.streams {
            println!("  stream {stream:?}: {} points", points.len());
            for p in points {
                let values: Vec<String> = p.values.iter().map(|(n, v)| format!("{n}={v}")).collect();
                println!("    {} {}", p.step, values.join(" "));
            }
        }
    }
}

/// Each gallery file: its format, the number of streams (a rank of its own is one),
/// the first stream's points, first and last step, and a few values.
#[test]
fn every_trainer_of_the_gallery_is_read() {
    type Case = (&'static str, &'static str, usize, usize, u64, u64, &'static [(u64, &'static str, f64)]);
    let cases: &[Case] = &[
        ("accelerate.log", "text", 1, 3, 0, 2, &[(2, "val_loss", 3.0859)]),
        // Spinning Up's progress.txt: CamelCase names read as the catalog's (`KL`, `LossPi`, `AverageEpRet`).
        ("spinningup_progress.txt", "tsv", 1, 3, 0, 2, &[(1, "kl", 0.00934), (2, "policy_loss", -0.0109), (0, "reward", -181.3), (2, "entropy", 1.397), (1, "clip_frac", 0.101), (0, "value_loss", 512.4)]),
        // llm.c: `norm` beside `train loss` is the gradient norm; `val loss` before step 1 is step 0's; a keyless `N tok/s` is the throughput.
        ("llmc.log", "text", 1, 5, 0, 4, &[(0, "val_loss", 11.00986), (3, "grad_norm", 13.7201), (2, "tokens_per_s", 1291296.0), (4, "loss", 10.680283)]),
        // PyTorch's MNIST example: samples seen through the epochs; the test set's results join the epoch's last step.
        ("pytorch_mnist.log", "text", 1, 5, 0, 60640, &[(59520, "val_loss", 0.0335), (59520, "val_accuracy", 0.989), (59520, "loss", 0.012345), (60640, "loss", 0.046721)]),
        // ESPnet: counters glued to their words (`2epoch:train:1-100batch:`); the epoch's `[valid]` results join its last step.
        ("espnet.log", "text", 1, 5, 100, 500, &[(100, "loss", 136.54), (300, "val_loss", 101.163), (300, "val_acc", 0.212), (400, "loss", 95.806), (500, "lr", 2.304e-05)]),
        // Sample Factory: environment frames number the step; policy 0's reward from `[(0, '4.480')]`.
        ("sample_factory.log", "text", 1, 3, 16384, 57344, &[(16384, "reward", 3.887), (36864, "samples_per_s", 3686.4), (57344, "reward", 4.919)]),
        // Marian: ` : `-separated segments; `Up.` numbers the step, `Cost` is the loss; a validator's `ce-mean-words` the validation loss.
        ("marian.log", "text", 1, 3, 500, 1500, &[(500, "loss", 8.18542194), (500, "tokens_per_s", 3317.67), (1000, "grad_norm", 1.2013), (1000, "val_loss", 6.51234), (1000, "val_bleu", 1.23), (1500, "lr", 5.625e-05)]),
        // MMDetection 2.x: `Epoch [1][50/7330]`, its epochs counted from 1.
        ("mmdet_v2.log", "text", 1, 3, 50, 7380, &[(50, "loss", 1.8441), (100, "grad_norm", 5.1092), (7380, "loss", 0.9823)]),
        // Acme: `[Learner] Learner Steps = 100 | ... | Critic Loss = 4.5`; the learner's counter is the clock, the actor's and evaluator's lines join its step.
        ("acme.log", "text", 1, 4, 0, 300, &[(0, "reward", -312.54), (100, "value_loss", 4.512), (200, "reward", -280.115), (300, "val_reward", -251.004), (300, "policy_loss", -0.618)]),
        // Darknet (YOLO): `N: loss, avg avg loss, rate rate, s seconds, n images`; the per-layer `Region` lines are no steps; `-nan` read.
        ("darknet.log", "text", 1, 6, 0, 5, &[(1, "loss", 1383.298462), (2, "step_time_s", 3.981204), (4, "lr", 0.000001), (5, "loss", f64::NAN)]),
        // Caffe behind glog's prefix: `Iteration N, Testing net` announces the test net's outputs at N, as `val_*`.
        ("caffe.log", "text", 1, 4, 0, 300, &[(0, "val_loss", 2.30821), (0, "loss", 2.30259), (200, "val_accuracy", 0.9712), (200, "val_loss", 0.0891), (200, "loss", 0.15121), (300, "lr", 0.00978075)]),
        // Chainer's PrintReport table: `main/loss` the loss, `validation/main/loss` the validation loss.
        ("chainer.log", "text", 1, 4, 1, 4, &[(1, "loss", 0.191809), (3, "val_loss", 0.0713481), (4, "validation/main/accuracy", 0.9782)]),
        // gpt-2's fine-tuning script: `[1010 | 7.48] loss=3.44 avg=3.44`, the counter and the seconds so far.
        ("gpt2_finetune.log", "text", 1, 5, 1010, 1050, &[(1010, "loss", 3.44), (1050, "loss", 3.15)]),
        // PyTorch Ignite's examples: `Validation Results - Epoch: 1  Avg accuracy: ... Avg loss: ...` as `val_*`.
        ("ignite.log", "text", 1, 6, 10, 489, &[(460, "loss", 0.51), (461, "val_loss", 0.19), (461, "val_avg_accuracy", 0.94), (479, "loss", 0.40)]),
        // kohya's sd-scripts: the bar's `avr_loss` (a running mean, its only loss) is the loss.
        ("kohya.log", "text", 1, 3, 1, 3, &[(1, "loss", 0.0912), (3, "loss", 0.0871), (2, "step_time_s", 1.69)]),
        // minGPT: an `iter` line's `train loss` is the training loss (nanoGPT's `step` line evaluates it).
        ("mingpt.log", "nanogpt", 1, 4, 0, 3, &[(0, "loss", 4.17434), (3, "lr", 0.0006)]),
        // spaCy's training table: `E` the epoch, `#` the step, names of two words apart by two spaces.
        ("spacy.log", "text", 1, 4, 0, 600, &[(200, "loss_ner", 1845.59), (600, "score", 0.80), (400, "loss_tok2vec", 41.27)]),
        // YOLOv5's per-epoch rows under `Epoch  gpu_mem  box  obj  cls ...` (its `gpu_mem` in GiB); the validation table's `all` row is no epoch.
        ("yolov5.log", "text", 1, 2, 0, 1, &[(0, "box_loss", 0.1128), (1, "cls_loss", 0.03959), (1, "mem/gpu_bytes", 3.35 * 1073741824.0)]),
        // AllenNLP: the bar after `- Validating` is the evaluation of the epoch's last step, as `val_*`.
        ("allennlp.log", "text", 1, 2, 100, 200, &[(100, "loss", 0.6931), (100, "val_loss", 0.6631), (100, "val_accuracy", 0.6), (200, "loss", 0.5731)]),
        // A script's own prints: a line naming only the step, its metrics on the lines under it (not indented).
        ("step_header.log", "text", 1, 3, 100, 300, &[(100, "loss", 2.3012), (200, "grad_norm", 1.47), (300, "loss", f64::NAN), (300, "lr", 0.0003)]),
        // Dopamine behind glog's prefix: `Starting iteration N` numbers the lines under it; the return per training episode is the reward.
        ("dopamine.log", "text", 1, 2, 0, 1, &[(0, "reward", -20.51), (1, "reward", -19.8)]),
        // A script's own prints: a line naming only the epoch numbers the lines under it (the NaN at epoch 3).
        ("epoch_header.log", "text", 1, 3, 1, 3, &[(1, "loss", 2.3104), (2, "val_acc", 0.351), (3, "loss", f64::NAN)]),
        // TensorFlow Estimator: `Saving dict for global step 500: accuracy = ..., loss = ...` is the evaluation at 500.
        ("tf_estimator.log", "text", 1, 6, 1, 500, &[(401, "loss", 0.09928), (500, "val_loss", 0.0934), (500, "val_accuracy", 0.9712)]),
        // OpenNMT-py behind `[date time,ms INFO]`: `Validation perplexity: ...` and `Validation accuracy: ...` join the step before.
        ("opennmt_valid.log", "text", 1, 4, 50, 200, &[(50, "loss", 9.97), (150, "validation_perplexity", 901.12), (150, "validation_accuracy", 11.98), (200, "loss", 6.22)]),
        // MMSegmentation 1.x (mmengine): `Iter(val) [500/500]  aAcc: ...  mIoU: ...` joins the training iteration before.
        ("mmseg1_val.log", "text", 1, 3, 50, 150, &[(100, "loss", 1.9), (100, "val_miou", 56.78), (100, "val_aacc", 91.23), (150, "loss", 1.8)]),
        // The HF Trainer's notebook tables pasted as text: columns headed `Training Loss`, `Validation Loss`.
        ("hf_notebook_table.txt", "tsv", 1, 3, 1, 3, &[(1, "loss", 0.4123), (2, "val_loss", 0.341234), (3, "Accuracy", 0.858)]),
        ("unsloth_table.txt", "tsv", 1, 5, 1, 5, &[(1, "loss", 1.8154), (5, "loss", 1.2804)]),
        // ms-swift: the step printed as progress, `'global_step/max_steps': '5/300'`.
        ("ms_swift.log", "hf-log", 1, 3, 1, 10, &[(5, "loss", 1.61), (10, "val_loss", 1.502), (10, "grad_norm", 1.5011)]),
        // `[Iteration N]`, `Loss is X.`, `Throughput is X records/second.`; the validation after an epoch joins its last step.
        ("bigdl.log", "text", 1, 7, 1, 471, &[(2, "loss", 2.2981), (2, "samples_per_s", 1230.77), (2, "lr", 0.05), (469, "loss", 0.1623), (469, "val_loss", 0.14532), (470, "lr", 0.0499)]),
        // BOM, CRLF, `[rank0]:` prefixes, an evaluation dict, the run's summary.
        ("axolotl.log", "hf-log", 2, 5, 0, 4, &[(0, "loss", 1.4217), (2, "val_loss", 1.2801), (4, "grad_norm", 1.1875)]),
        ("cleanrl.log", "deepspeed", 1, 5, 196, 720, &[(308, "reward", 28.0), (308, "samples_per_s", 1523.0)]),
        ("deepspeed_chat.log", "text", 1, 3, 0, 2, &[(1, "policy_loss", -0.012), (1, "value_loss", 0.0981), (1, "reward", -0.9812)]),
        ("detectron2.log", "text", 1, 4, 19, 79, &[(19, "loss", 2.101), (79, "lr", 0.0015984)]),
        // The Trainer under DeepSpeed: the engine's `step=N` lines and the Trainer's dicts.
        ("deepspeed_hf_trainer.log", "deepspeed", 1, 2, 10, 20, &[(10, "loss", 2.345), (20, "loss", 2.101), (20, "lr", 9.998e-05)]),
        ("fairseq_json.log", "text", 1, 4, 100, 1600, &[(300, "val_loss", 8.912), (300, "loss", 9.251), (1600, "grad_norm", 0.951)]),
        ("fairseq_simple.log", "text", 1, 5, 100, 1600, &[(1563, "val_loss", 8.912), (200, "tokens_per_s", 45210.1)]),
        ("flax_clu.log", "text", 1, 3, 100, 300, &[(100, "loss", 7.8123), (300, "val_loss", 5.5012)]),
        // `epoch:  1, train_loss: ...`: the epoch is the only counter, so it is the step.
        ("flax_mnist.log", "text", 1, 3, 1, 3, &[(1, "loss", 0.2404)]),
        ("gpt_neox.log", "megatron", 1, 3, 10, 30, &[(20, "loss", 9.812345)]),
        ("hf_trainer_logging.log", "hf-log", 1, 5, 0, 4, &[(4, "grad_norm", f64::INFINITY)]),
        ("interleaved_ranks.log", "text", 2, 4, 1, 4, &[(2, "loss", 11.502), (2, "tokens_per_s", 7290.0)]),
        // Open MPI's `mpirun --tag-output`: `[1,0]<stdout>:` before each rank's line.
        ("mpirun_tag.log", "text", 2, 8, 1, 8, &[(1, "loss", 2.9), (8, "loss", 2.2)]),
        // Slurm's `srun --label`: `0: ` before each task's line; a rate named by its unit (`tok/s`).
        ("slurm_label.log", "text", 2, 8, 10, 80, &[(10, "loss", 3.1), (80, "tokens_per_s", 11880.0), (40, "grad_norm", 0.56)]),
        // PyTorch's ImageNet example: `Epoch: [0][  10/5005]` over its epochs; the `Test:` batches and the ` * Acc@1 ... Acc@5 ...` summary after them are the step before's `val_*`.
        ("imagenet_example.log", "text", 1, 12, 0, 5055, &[(10, "loss", 6.8), (50, "val_loss", 6.5), (50, "val_acc_1", 0.1), (5055, "val_acc_5", 0.5)]),
        // Ray Tune's progress.csv of an RLlib run: the learner's flattened stats (`info/learner/default_policy/learner_stats/kl`) are its `kl` and `entropy`.
        ("ray_progress.csv", "csv", 1, 7, 1, 7, &[(1, "kl", 0.01), (7, "entropy", 0.62), (7, "reward", 90.0)]),
        // DreamerV3's terminal output: a rule naming the step, then `name value` pairs apart by ` / `; `episode/score` is the reward.
        ("dreamerv3.log", "text", 1, 5, 10000, 50000, &[(10000, "reward", 62.3), (20000, "reward", 92.2), (10000, "grad_norm", 0.766)]),
        // PaddleNLP's Trainer: `interval_samples_per_second` is the throughput.
        ("paddlenlp.log", "text", 1, 5, 10, 50, &[(10, "loss", 2.4), (50, "samples_per_s", 25.93)]),
        // TorchRL's PPO tutorial: the bar's description (`average reward= 9.29 (init= 9.10), step count (max): 23, lr policy: 0.0003`), its frames the step.
        ("torchrl.log", "text", 1, 25, 1000, 25000, &[(1000, "reward", 9.2944), (2000, "eval_cumulative_reward", 93.3), (25000, "eval_step_count", 34.0)]),
        // Sockeye: the loss only as a perplexity (judged on its log); the speed's units each with their own number (`21000.50 tokens/sec 2.10 updates/sec`: 2.10 is no tokens/s).
        ("sockeye.log", "text", 1, 12, 50, 600, &[(50, "perplexity", 346.59269), (600, "perplexity", 62.134113), (50, "tokens_per_s", 21000.5), (50, "samples_per_s", 650.04)]),
        // DeepRM: `Iteration: \t N` then one `Key: \t value` a line, tabs padding the pairs, `+- std` after some values, names of its own.
        ("deeprm.log", "text", 1, 3, 0, 2, &[(0, "loss", 0.1269), (1, "meanrew", -261.05), (1, "meanlen", 164.49), (2, "numtimesteps", 32910.0), (2, "loss", f64::NAN)]),
        // keras-rl: each `Interval K` a pass whose bar counts to the same total; the episode results after the finished bar give the reward another value (the episode's, not the step's): the step after it.
        ("keras_rl.log", "text", 1, 7, 10000, 40000, &[(10000, "reward", -6.6935), (10001, "reward", -1338.704), (20001, "loss", 1.6), (30001, "mean_q", -74.608), (40000, "reward", f64::NAN)]),
        // Megatron-DeepSpeed: the newer `iteration=  N/ M | lm loss=x |` lines among the DeepSpeed engine's.
        ("megatron_deepspeed.log", "megatron", 1, 6, 1, 6, &[(1, "loss", 11.2088), (6, "loss", 10.9871), (2, "step_time_s", 16.0326), (3, "samples", 256.0)]),
        // OpenAI Baselines' ppo2 tables: `loss/approxkl`, `eprewmean` read; `misc/total_timesteps` in three figures is no step.
        ("openai_baselines.log", "text", 1, 4, 0, 3, &[(0, "reward", 836.0), (1, "approx_kl", 0.0041), (2, "entropy", 0.746), (3, "value_loss", f64::NAN)]),
        // garage (rllab's `tabulate` tables between rules apart by spaces): every row, the step from `TotalEnvSteps`.
        ("garage.log", "text", 1, 3, 193658, 214458, &[(193658, "evaluation/averagereturn", 190.0), (204058, "entropy", 0.498267), (214458, "policy/lossafter", -0.00815415)]),
        // rlpyt (rllab's logger): the time before every row and rule of its table; a NaN loss at iteration 3.
        ("rlpyt.log", "text", 1, 4, 0, 3, &[(0, "reward", -0.48), (2, "diagnostics/cumsteps", 150000.0), (3, "loss/average", f64::NAN), (1, "grad_norm/average", 39.2)]),
        // RL scripts numbered by the episode that opens each line.
        ("ppo_episodes.log", "text", 1, 12, 59, 70, &[(59, "actions", 2113.0), (59, "reward", -21.0), (70, "time", 3.0)]),
        ("reinforce_episodes.log", "pairs", 1, 10, 10, 100, &[(10, "last_length", 13.0), (100, "average_length", 34.29)]),
        // ChatGLM's fine-tuning under DeepSpeed: the script's `loss:x, global_step:N` joins the engine's step.
        ("chatglm_deepspeed.log", "deepspeed", 1, 5, 10, 50, &[(10, "loss", 2.28), (40, "loss", 7.68), (40, "lr", 1e-05)]),
        // PyMARL: `Recent Stats | t_env: N | Episode: M`, then rows of four `key:  value` pairs apart by tabs, all at t_env.
        ("pymarl.log", "text", 1, 4, 10050, 40422, &[(10050, "battle_won_mean", 0.0), (20137, "reward", 11.2696), (30261, "grad_norm", 95.7), (40422, "test_return_mean", 6.5935)]),
        // pix2pix and CycleGAN: `(epoch: 2, iters: 100, ...)` counts within each epoch, numbered on after the epochs before; names of no loss rlmon knows (`D_A`, `G_A`) read, their NaN from epoch 3.
        ("gan_epoch_iters.log", "text", 1, 10, 0, 900, &[(100, "d_a", 0.412), (400, "d_a", 0.231), (600, "idt_b", 0.719), (800, "g_b", f64::NAN)]),
        // Mozilla DeepSpeech: `Steps: 2950`, each epoch's bar total, the same every epoch; `| Validation |` lines are the epoch's evaluation, as `val_*`.
        ("deepspeech_epochs.log", "text", 1, 4, 2950, 11800, &[(2950, "loss", 142.117305), (2950, "val_loss", 131.552091), (11800, "val_loss", 123.108854)]),
        // LightGBM's callback: `[N]\tvalid_1's binary_logloss: x` numbered by its round, the possessive a part's name; its warnings hold no metrics.
        ("lightgbm.log", "pairs", 1, 6, 0, 5, &[(1, "training/binary_logloss", 0.598121), (5, "valid_1/binary_logloss", 0.501764)]),
        // Coqui TTS: ` --> STEP: 25/496 -- GLOBAL_STEP: 1525` over indented `| > loss: 3.63  (3.53)` lines (a running mean in brackets); `tensor(10.72, device='cuda:0')` is its number; `--> EVAL PERFORMANCE`'s lines the step before's `val_*`.
        ("coqui_tts.log", "text", 1, 3, 1500, 1550, &[(1525, "grad_norm", 10.7261), (1550, "loss", 3.4120877981185913), (1550, "loss_scale", 8192.0), (1550, "val_loss", 3.2231)]),
        // Tesseract's lstmtraining: `At iteration 100/100/100, mean rms=4.8%, ... BCER train=88.2%`, the first count the iteration; names of two words.
        ("tesseract.log", "pairs", 1, 7, 0, 400, &[(100, "bcer", 88.214), (200, "mean_rms", 4.503), (300, "bwer", 96.381), (400, "new_worst_bcer", 70.883)]),
        // TorchBeast: a bracket of level, process, source, date and time before each line is the logger's.
        ("torchbeast.log", "pairs", 1, 4, 0, 3, &[(0, "return", -21.0), (3, "return", -19.0)]),
        // icefall (k2): `Epoch 1, batch 0, loss[loss=0.25, over 2436.00 frames. ]`, batches from 0 without a total: each epoch after the last one's last batch; `over N frames` no metric.
        ("icefall.log", "text", 1, 6, 0, 41, &[(10, "val_loss", 0.9044), (21, "loss", 0.2519), (41, "val_loss", 0.07188)]),
        // NVIDIA's Tacotron 2: `Train loss 3 5.872210 Grad Norm 2.98 1.03s/it`, the iteration between the name and its value; `Validation loss 5:  4.71` at iteration 5.
        // Its overflow message (`Gradient overflow.  Skipping step, ... reducing loss scale to 32768.0`) gives the scale to the next iteration.
        ("tacotron2.log", "text", 1, 6, 0, 5, &[(0, "loss", 11.408722), (0, "val_loss", 5.903518), (3, "grad_norm", 2.981176), (5, "val_loss", 4.71264), (4, "loss_scale", 32768.0)]),
        // StyleGAN's `tick N  kimg X  time 1d 06h  sec/tick ...`: the tick is the step, a snapshot's metric (printed or as its JSON) the tick's before it.
        ("stylegan3.log", "text", 1, 6, 0, 5, &[(0, "fid50k_full", 412.5031), (4, "fid50k_full", 288.1174), (1, "step_time_s", 60.9), (1, "train_time_s", 511.0), (5, "augment", 0.022)]),
        ("stylegan2_tf.log", "text", 1, 5, 1, 5, &[(1, "fid50k", 321.4417), (4, "fid50k", 187.0921), (2, "train_time_s", 569.0), (4, "lod", 6.87), (4, "kimg", 561.2)]),
        // OpenAI's guided-diffusion logger, its first table's opening rule cut off (a pasted excerpt).
        ("guided_diffusion_cut.log", "text", 1, 4, 200, 230, &[(200, "grad_norm", 0.0895), (200, "lg_loss_scale", 18.2), (230, "lg_loss_scale", 18.23)]),
        // W&B's console `Run summary:` in a log that printed no step of its own: one point at its `train/global_step` row.
        ("wandb_summary.log", "text", 1, 1, 1200, 1200, &[(1200, "loss", 1.1021), (1200, "val_loss", 1.2345), (1200, "lr", 0.0)]),
        // Optuna's `Trial 4 finished with value: 0.8493 and parameters: {...}. Best is trial 1 with value: 0.8577.`: the trial is the step.
        ("optuna.log", "text", 1, 4, 0, 6, &[(0, "value", 0.8321), (4, "value", 0.8493), (4, "best_value", 0.8577), (6, "best_value", 0.8712)]),
        // ElegantRL's header of columns in groups set apart by bars, ending in `etc.` over more values than names; its rounded step counts on.
        ("elegantrl.log", "text", 1, 6, 0, 5, &[(0, "avgr", -212.33), (2, "maxr", -61.72), (4, "objc", 0.61), (5, "stds", 288.0)]),
        // YOLOv7's header adds `total`; YOLO's `box`/`obj`/`cls` columns are losses, so a NaN in them is critical from the start.
        ("yolov7.log", "text", 1, 4, 39, 42, &[(39, "box_loss", 0.04512), (40, "loss", 0.06026), (40, "obj_loss", 0.01529), (42, "labels", 1963.0)]),
        // Dreamer's `[5000] expl_amount 0.3 / model_grad_norm 61.2 / ...`: the bracket opening the line is the step.
        ("dreamer.log", "text", 1, 3, 5000, 7000, &[(5000, "model_grad_norm", 61.2), (6000, "image_loss", 11302.4), (7000, "actor_loss", -7.9)]),
        // Full-width colons and commas (`训练次数：100，Loss：1.98`); `训练次数` ("training count") is the step, the test set's loss its own name.
        ("fullwidth_cn.log", "text", 1, 6, 100, 600, &[(100, "loss", 2.2841), (300, "loss", 2.0114), (600, "loss", 1.773)]),
        // nolearn's table header with a ratio named `Train / Val`.
        ("nolearn.log", "text", 1, 4, 1, 4, &[(1, "loss", 2.118402), (2, "val_loss", 1.65509), (3, "train/val", 1.04333), (4, "valid_acc", 48.9)]),
        // scikit-learn's gradient boosting (`verbose=1`): a cell in a unit rlmon does not convert (`2.41m`) is no reason to drop the row; the remaining time is no metric.
        ("sklearn_gbrt.log", "text", 1, 15, 1, 100, &[(1, "loss", 0.9312), (5, "loss", 0.8207), (60, "loss", 0.5301), (100, "loss", 0.4868)]),
        // LitGPT's LoRA script: a qualifier in brackets after a key (`loss train (curr):`, `(avg)`), ` | `-separated segments, a config dict printed above.
        ("litgpt_lora.log", "text", 1, 10, 1, 12, &[(1, "loss", 1.712), (8, "iter_time", 0.11903), (10, "loss", 1.523), (10, "loss_mean", 1.641), (12, "loss", 1.498)]),
        // A DQN script's `episode: 3   score: 35.0   memory length: 85   epsilon: 0.96`: the episode numbers the line, its score is the reward.
        ("dqn_score.log", "text", 1, 6, 0, 5, &[(0, "reward", 14.0), (3, "reward", 35.0), (5, "epsilon", 0.9333), (5, "memory_length", 154.0)]),
        // TensorFlow Cookbook's CBOW: `Loss at step 100 : nan`, the counter after `at`, the value after the lone colon (a line of code pasted above).
        ("tf_cookbook_loss_at_step.log", "text", 1, 10, 100, 1000, &[(100, "loss", f64::NAN), (1000, "loss", f64::NAN)]),
        // An AlphaZero script's `  Entrenamiento: loss=2.0265 (value=0.2445, policy=1.3063) | Tiempo: 4.6s`: a label before pairs names none of them.
        ("alphazero_label_pairs.log", "text", 1, 5, 0, 4, &[(0, "loss", 2.0265), (0, "value", 0.2445), (0, "policy", 1.3063)]),
        // InternLM's `[training_internlm.py, line 413, in ...] - pid=6794 : tflops=63.3 step=0 loss=11.64 tgs (tokens/gpu/second)=1424.93 ... grad_norm={'0_default': 66.52} ... loss/cn=nan`: the source's line no metric, the rate from its unit, a one-entry dict its number.
        ("internlm.log", "text", 1, 6, 0, 5, &[(0, "loss", 11.641494750976562), (0, "tokens_per_s", 1424.93), (0, "grad_norm", 66.51907327507652), (0, "loss/cn", f64::NAN), (5, "loss", 9.215429306030273)]),
        // LeRobot's `step:2K smpl:58K ep:182 epch:4.56 loss:0.593 grdn:25.792`: steps rounded to thousands (`2K` for 1,600 to 2,400, logged every 200) are numbered on by the interval of the exact ones before; `grdn` is the grad norm.
        ("lerobot.log", "text", 1, 29, 400, 6000, &[(400, "grad_norm", 49.836), (1800, "loss", 0.593), (2000, "loss", 0.5), (6000, "grad_norm", 12.306)]),
        // ML-Agents' `[INFO] Striker. Step: 10000. Time Elapsed: 61.405 s. Mean Reward: -0.733. ...` beside `[INFO] Goalie. Step: 10000. ...`: a run per behaviour.
        ("mlagents_behaviours.log", "text", 2, 22, 10000, 220000, &[(10000, "reward", -0.733), (220000, "elo", 1286.333)]),
        ("apex_loss_scale_collapse.log", "text", 1, 20, 7880, 7899, &[(7891, "val_loss", 0.148049), (7892, "loss_scale", 256.0), (7899, "loss_scale", 2.0), (7899, "loss", 3.320754)]),
        // TorchBeast's training: `Steps 3200 @ 640.2 SPS. Loss 61.08. Stats:` then its stats dict, that step's; `mean_episode_return` NaN when no episode ended.
        ("torchbeast_train.log", "hf-log", 1, 4, 3200, 12800, &[(3200, "loss", 61.08), (6400, "reward", -21.0), (9600, "reward", f64::NAN), (12800, "policy_loss", 1.85)]),
        // fairseq2: `Train Metrics (step N) - NLL Loss: x | ...` in words; the loss is the NLL, `Elements per Second` the tokens/s; `Valid Metrics (step N)` its evaluation, as `val_*`.
        ("fairseq2.log", "text", 1, 10, 10, 100, &[(10, "nll_loss", 2.998), (30, "tokens_per_s", 11944.0), (30, "grad_norm", 1.44), (100, "lr", 2.0e-05), (100, "val_nll_loss", 2.305), (100, "nll_loss", 2.055)]),
        // A counter printed first (`500: train loss ...`): the log's own step, not the line's.
        ("step_first.log", "text", 1, 6, 500, 3000, &[(500, "loss", 2.8), (3000, "val_loss", 2.41)]),
        ("keras2.log", "text", 1, 3, 469, 1407, &[(938, "val_loss", 0.0951)]),
        ("keras3.log", "text", 1, 5, 1, 938, &[(469, "val_loss", 0.1345), (470, "loss", 0.152)]),
        // Keras' bar in a file with a terminal's backspaces: each state drawn over the one before.
        ("keras_backspace.log", "text", 1, 9, 1, 300, &[(50, "loss", 1.95), (100, "val_loss", 2.1), (150, "loss", 0.95), (300, "val_accuracy", 0.75)]),
        ("levanter.log", "text", 1, 3, 10, 30, &[(30, "loss", 9.02)]),
        ("lightning.log", "text", 1, 12, 1, 20, &[(1, "loss", 2.4), (20, "loss", 1.6), (20, "val_loss", 1.85)]),
        ("llamacpp_finetune.log", "text", 1, 5, 0, 4, &[(4, "loss", 6.512345)]),
        ("maxtext.log", "text", 1, 6, 0, 5, &[(5, "loss", 9.102), (1, "tokens_per_s", 11948.41)]),
        ("megatron_core.log", "megatron", 1, 3, 10, 30, &[(30, "val_loss", 8.912345), (30, "loss", 9.012345), (20, "grad_norm", 8.123)]),
        ("mlx.log", "text", 1, 5, 1, 40, &[(30, "val_loss", 1.65), (40, "loss", 1.552), (10, "tokens_per_s", 412.3)]),
        ("mmengine.log", "text", 1, 4, 50, 1050, &[(1050, "loss", 0.9823), (50, "grad_norm", 12.3456)]),
        ("nemo.log", "text", 1, 5, 0, 4, &[(4, "loss", 8.5), (4, "val_loss", 8.7)]),
        ("nemo2.log", "megatron", 1, 4, 0, 3, &[(1, "loss", 11.02), (3, "val_loss", 10.95), (2, "step_time_s", 5.1)]),
        ("openrlhf.log", "text", 1, 3, 1, 3, &[(2, "kl", 0.002), (3, "policy_loss", -0.03)]),
        ("pytorch_wlm.log", "text", 1, 5, 200, 3383, &[(600, "val_loss", 5.98), (600, "loss", 6.49)]),
        // `Training iteration 1:` numbers its lines, the nested learner stats included.
        ("rllib.log", "text", 1, 2, 1, 2, &[(1, "reward", 22.1), (2, "reward", 41.3), (1, "kl", 0.0201), (2, "policy_loss", -0.0301)]),
        // rsl_rl (Isaac Lab): a centred `Learning iteration 3/1500` over indented `Mean reward: 1.25` lines.
        ("rsl_rl.log", "text", 1, 4, 0, 3, &[(0, "value_loss", 0.0123), (1, "policy_loss", -0.0052), (2, "reward", 0.35), (3, "step_time_s", 2.13)]),
        // rsl_rl as it prints: the centred header in bold (`\x1b[1m Learning iteration 3/1500 \x1b[0m`).
        ("rsl_rl_bold.log", "text", 1, 4, 0, 3, &[(0, "value_loss", 0.0123), (1, "policy_loss", -0.0052), (2, "reward", 0.12), (3, "step_time_s", 2.13)]),
        // Tune's result.json: numbered by `training_iteration`, the learner stats of the policy read as the run's.
        ("rllib_result.json", "jsonl", 1, 5, 1, 5, &[(1, "reward", 22.37), (2, "kl", 0.0311), (3, "entropy", 0.6011), (4, "policy_loss", -0.0321), (5, "value_loss", 9.9456), (1, "kl_coef", 0.2), (1, "lr", 5e-05), (1, "grad_norm", 2.8)]),
        ("rllib_new_api_result.json", "jsonl", 1, 4, 1, 4, &[(1, "reward", 21.4), (2, "kl", 0.0152), (3, "entropy", 0.6207), (4, "policy_loss", -0.0152), (4, "value_loss", 9.788), (1, "lr", 3e-04), (1, "grad_norm", 0.8)]),
        ("timm.log", "text", 1, 6, 0, 1301, &[(1250, "loss", 6.712), (1250, "val_loss", 6.7969), (1251, "loss", 6.701)]),
        // Keras' `History.history` dumped with json.dump: a value per epoch, numbered from 0.
        ("keras_history.json", "json-doc", 1, 4, 0, 3, &[(0, "loss", 0.5123), (3, "val_loss", 0.2411), (2, "val_accuracy", 0.9312)]),
        // Sacred's `metrics.json`: a column per metric with its steps; `train.loss` the loss, a bare NaN read.
        ("sacred_metrics.json", "json-doc", 1, 4, 0, 3, &[(1, "loss", 2.1), (2, "train.accuracy", 0.3)]),
        // Lines indented with a tab, `cost` the loss, numbered by their epoch; the epoch's time, under its line, is its step's.
        ("tf1_tabbed_epochs.log", "text", 1, 15, 1, 15, &[(1, "loss", 29.860479714), (1, "time_this_epoch", 1.7), (15, "loss", 0.876128459)]),
        // No name rlmon knows: read as pairs, numbered by the log's `Step N:`.
        ("tf_gan.log", "pairs", 1, 11, 1, 10000, &[(1000, "generator_loss", 4.062009), (10000, "discriminator_loss", 0.301286)]),
        // `Epoch 47/100 - loss: nan`, an excerpt from epoch 41: numbered by the epoch.
        ("torch_loop_epochs.log", "text", 1, 12, 41, 52, &[(41, "loss", 0.6031), (46, "val_loss", 0.6161)]),
        ("torchtitan.log", "text", 1, 5, 1, 40, &[(10, "loss", 10.1042), (10, "tokens_per_s", 7334.0)]),
        ("torchtune.log", "text", 1, 5, 1, 5, &[(3, "loss", 1.6502)]),
        ("torchtune_disklogger.txt", "text", 1, 5, 1, 5, &[(2, "tokens_per_s", 1610.22)]),
        ("trl_dpo.log", "hf-log", 1, 3, 0, 2, &[(1, "val_loss", 0.6712), (2, "loss", 0.6534)]),
        ("trl_grpo.log", "hf-log", 1, 3, 0, 2, &[(2, "loss", -0.0008), (1, "kl", 0.0009)]),
        ("trl_ppo.log", "hf-log", 1, 3, 0, 2, &[(1, "kl", 0.4312), (1, "policy_loss", -0.0043)]),
        ("trlx.log", "text", 1, 3, 10, 30, &[(20, "reward", 0.5123), (20, "approx_kl", 0.0015)]),
        ("truncated_last_line.log", "nanogpt", 1, 5, 0, 4, &[(3, "loss", 8.7012)]),
        ("ultralytics.log", "text", 1, 3, 1, 3, &[(2, "cls_loss", 2.012), (3, "box_loss", 1.15)]),
        ("unsloth.log", "hf-log", 1, 5, 0, 4, &[(1, "loss", 2.2105)]),
        // tqdm states joined by `\r` under a `Steps:   0%|` label: numbered by the bar's count.
        ("diffusers.log", "text", 1, 5, 1, 5, &[(3, "loss", 0.118), (4, "loss", 0.109), (1, "lr", 0.0001)]),
        // `[INFO|DP=0|PP=0|TP=0]`: the ranks of the prefix are no metrics; `426K` tokens/s.
        ("nanotron.log", "text", 1, 3, 1, 3, &[(2, "loss", 10.2), (1, "tokens_per_s", 426000.0), (2, "grad_norm", 2.9)]),
        // `xent` the loss; the keyless `2345/2456 tok/s` after `lr` is no unit of it.
        ("opennmt.log", "text", 1, 4, 50, 200, &[(100, "loss", 7.20), (150, "lr", 0.00002), (50, "acc", 5.12)]),
        // Numbered by `env_step`; `rew` the reward; the test line's reward is a held-out score.
        // MXNet's Speedometer (`Epoch[1] Batch [100-200]`) behind Python logging's
        // `INFO:root:`: batches restart each epoch; the epoch's results join its last batch.
        ("mxnet.log", "text", 1, 6, 100, 600, &[(200, "accuracy", 0.912344), (300, "val_loss", 0.161234), (300, "loss", 0.238765), (400, "samples_per_s", 45999.45), (600, "validation_accuracy", 0.971234)]),
        // fastai's table: the epoch column numbers the rows.
        ("fastai.log", "text", 1, 4, 0, 3, &[(1, "val_loss", 0.012938), (3, "error_rate", 0.002706)]),
        ("tianshou.log", "text", 1, 4, 10000, 20001, &[(10000, "reward", 23.0), (10001, "test_reward", 45.23), (20000, "loss", 0.412)]),
        ("verl.jsonl", "jsonl", 1, 3, 1, 3, &[(2, "policy_loss", 0.0034), (3, "reward", 0.5101)]),
        ("verl_console.log", "nanogpt", 1, 3, 1, 3, &[(2, "approx_kl", 0.0002), (3, "entropy", 0.4987)]),
    ];
    let mut failures = Vec::new();
    for (file, format, streams, points, first, last, values) in cases {
        let g = Gallery::read(file);
        let steps = g.steps();
        let got = (g.format, g.streams.len(), steps.len(), steps.first().copied(), steps.last().copied());
        if got != (*format, *streams, *points, Some(*first), Some(*last)) {
            failures.push(format!("{file}: (format, streams, points, first, last) {got:?}, expected {:?}", (format, streams, points, first, last)));
        }
        for (step, metric, value) in *values {
            let v = g.at(*step, metric);
            if !v.is_some_and(|v| v == *value || (v.is_nan() && value.is_nan()) || (v - value).abs() <= 1e-9 * value.abs()) {
                failures.push(format!("{file}: {metric} at {step} is {v:?}, expected {value} (names: {:?})", g.names()));
            }
        }
    }
    // The second behaviour of an ML-Agents log is a run of its own, not a resume of the first.
    let behaviours = Gallery::read("mlagents_behaviours.log");
    let goalie = behaviours.streams.iter().find(|(name, _)| name == "Goalie").expect("a Goalie run");
    assert_eq!((goalie.1.len(), goalie.1[0].step, goalie.1[0].values.iter().find(|(n, _)| n == "reward").map(|(_, v)| *v)), (20, 10000, Some(0.713)));
    // A point holds each metric once: two printed values read under one name
    // (`reward: -18, Avg. reward: -19.9`, icefall's `loss[loss=...]` and
    // `tot_loss[loss=...]`) would make two values of one step.
    for (file, ..) in cases {
        for (stream, points) in &Gallery::read(file).streams {
            for p in points {
                let mut names: Vec<&str> = p.values.iter().map(|(n, _)| &**n).collect();
                names.sort_unstable();
                if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
                    failures.push(format!("{file} {stream}: {} twice at step {}", w[0], p.step));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The trainers' own names are read as rlmon's, and no line that is not a metric
    // line makes a name: source locations, bar labels, run summaries.
    for (file, absent) in [("flax_clu.log", "logging_writer_py"), ("flax_mnist.log", "train_py"), ("levanter.log", "train"), ("pytorch_wlm.log", "end_of_epoch"), ("maxtext.log", "completed_step"), ("axolotl.log", "train_runtime"), ("torchtune.log", "lr"), ("rllib_result.json", "pid"), ("rllib_result.json", "config/lr"), ("rllib_new_api_result.json", "config/lr"), ("mxnet.log", "epoch"), ("mxnet.log", "time_cost"), ("fastai.log", "epoch")] {
        assert!(!Gallery::read(file).names().contains(absent), "{file}: {absent}");
    }
}

#[test]
fn a_value_in_brackets_after_another_annotates_it_and_is_no_metric() {
    // TorchRL's bar: `average reward= 9.29 (init= 9.10)`, `(init:  91.3)` after the eval return.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/torchrl.log");
    let (code, r) = check(&path, &[]);
    assert_eq!(code, 0);
    let read = r["runs"][0]["input"]["read"].as_object().unwrap();
    assert!(read.contains_key("reward") && !read.contains_key("init"), "{read:?}");
}

#[test]
fn a_log_numbered_by_its_epochs_reports_a_nan_at_its_epoch() {
    // `epoch: 3442 loss: 0.21` ... `epoch: 3451 loss: nan`, read without a pattern.
    let (code, r) = check(&real("gradnorm-tf-17-nan.log"), &[]);
    assert_eq!((code, r["format"].as_str()), (1, Some("text")), "{r}");
    let run = &r["runs"][0];
    assert_eq!((run["points"].as_u64(), run["last_step"].as_u64(), read_as(run, "epoch")), (Some(17), Some(3458), Some("step")), "{run}");
    let nan = r["alerts"].as_array().unwrap().iter().find(|a| a["kind"] == "nonfinite").expect("a NaN alert");
    assert_eq!(nan["step"], 3451, "{nan}");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/torch_loop_epochs.log");
    let (_, r) = check(&path, &[]);
    assert_eq!(r["alerts"].as_array().unwrap().iter().find(|a| a["kind"] == "nonfinite").map(|a| a["step"].clone()), Some(47.into()), "{r}");
}

#[test]
fn when_the_detected_format_reads_nothing_the_others_are_tried_and_named() {
    // Lines indented with tabs are no JSON: read as text, its `cost` the loss.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/tf1_tabbed_epochs.log");
    let (code, r) = check(&path, &[]);
    assert_eq!((code, r["format"].as_str(), r["points"].as_u64(), read_as(&r["runs"][0], "loss")), (0, Some("text"), Some(15), Some("loss")), "{r}");
    // A GAN's losses, no name rlmon knows: the text reader reads nothing, pairs do.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/tf_gan.log");
    let (code, r) = check(&path, &[]);
    assert_eq!((code, r["format"].as_str(), r["tried"][0].as_str(), r["points"].as_u64()), (0, Some("pairs"), Some("text"), Some(11)), "{r}");
    let out = Command::cargo_bin("rlmon").unwrap().arg("check").arg(&path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with(&format!("{} (read as pairs; text, hf-log", path.display())), "{text}");
    // Nothing reads a Prometheus exposition: exit 2, naming every format tried.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/exporters/node_exporter.txt");
    let out = Command::cargo_bin("rlmon").unwrap().arg("check").arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no metric lines (read as text, nor as hf-log, megatron, nanogpt, deepspeed, jsonl, csv, tsv, pairs;"), "{err}");
}

#[test]
fn a_bigdl_log_is_read_without_a_pattern() {
    // BigDL's DistriOptimizer lines (ImageNet, epoch 64): `Loss is Infinity.` at iteration 45459.
    let (code, r) = check(&real("ipex-llm-1486-loss-inf.log"), &[]);
    assert_eq!((code, r["format"].as_str()), (1, Some("text")), "{r}");
    let run = &r["runs"][0];
    assert_eq!((run["points"].as_u64(), run["last_step"].as_u64()), (Some(4), Some(45460)), "{run}");
    assert_eq!((read_as(run, "loss"), read_as(run, "samples_per_s"), read_as(run, "lr")), (Some("loss"), Some("samples_per_s"), Some("lr")), "{run}");
    let nan = r["alerts"].as_array().unwrap().iter().find(|a| a["kind"] == "nonfinite").expect("an infinite loss alert");
    assert_eq!(nan["step"], 45459, "{nan}");
}

#[test]
fn an_rllib_result_json_is_numbered_by_its_iterations_and_read_under_rlmons_names() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/rllib_result.json");
    let (code, r) = check(&path, &[]);
    assert_eq!((code, r["format"].as_str()), (0, Some("jsonl")), "{r}");
    let run = &r["runs"][0];
    assert_eq!((run["points"].as_u64(), run["last_step"].as_u64()), (Some(5), Some(5)), "{run}");
    for (name, metric) in [("episode_reward_mean", "reward"), ("kl", "kl"), ("entropy", "entropy"), ("policy_loss", "policy_loss"), ("vf_loss", "value_loss"), ("cur_kl_coeff", "kl_coef"), ("cur_lr", "lr"), ("grad_gnorm", "grad_norm"), ("total_loss", "loss")] {
        assert_eq!(read_as(run, name), Some(metric), "{name}: {run}");
    }
    assert!(run["input"]["ignored"].get("config").is_some(), "{run}");
}

#[test]
fn a_log_of_two_ranks_is_a_run_and_a_rank_of_its_own() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/interleaved_ranks.log");
    let (code, r) = check(&path, &[]);
    assert_eq!(code, 1, "the NaN loss is critical: {r}");
    let names: Vec<&str> = r["runs"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["interleaved_ranks", "interleaved_ranks/rank0"], "{r}");
    assert!(r["runs"].as_array().unwrap().iter().all(|r| r["points"] == 4), "{r}");
}

/// `watch --attach` follows a log line by line, choosing its format from its first
/// lines as they come; `check` reads the whole file. Every log of the gallery, the
/// real-log set and tests/fixtures/logs must end at the same step both ways, with
/// as many points (a preamble that reads
/// as metrics, a comma in a comment, a table over several lines, a bar drawn over
/// with backspaces all once kept the followed log from being read).
#[test]
fn a_followed_log_reads_as_check_reads_it() {
    use rlmon::ingest::{detect, Format};
    use rlmon::workload::command::stream::{LineSplitter, MetricStream, StreamOut};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<PathBuf> = ["formats", "real", "logs"].iter().flat_map(|d| std::fs::read_dir(root.join(d)).unwrap()).map(|e| e.unwrap().path()).filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != "README.md")).collect();
    files.sort();
    let mut compared = 0;
    let mut wrong = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(64 * 1024)]);
        // Documents read whole are followed as documents, not line by line.
        if matches!(detect(path, &head), Format::TrainerState | Format::JsonDocument | Format::TensorBoard | Format::Wandb) {
            continue;
        }
        let (_, report) = check(path, &[]);
        let Some(runs) = report["runs"].as_array().filter(|r| r.len() == 1) else { continue };
        let (points, last) = (runs[0]["points"].as_u64().unwrap(), runs[0]["last_step"].as_u64().unwrap_or(0));
        let mut stream = MetricStream::new(path, None, false);
        let mut splitter = LineSplitter::default();
        let mut lines = splitter.push(&bytes);
        lines.extend(splitter.finish());
        let mut outs: Vec<StreamOut> = lines.into_iter().flat_map(|l| stream.line(l, 0.0)).collect();
        outs.extend(stream.finish(1.0));
        let steps: Vec<u64> = outs.iter().filter_map(|o| if let StreamOut::Point { step, .. } = o { Some(*step) } else { None }).collect();
        let resumed = outs.iter().any(|o| matches!(o, StreamOut::Resumed { .. }));
        compared += 1;
        let followed_last = steps.last().copied().unwrap_or(0);
        // A resume drops steps, so only the last step is compared then.
        if followed_last != last || (!resumed && steps.len() as u64 != points) {
            wrong.push(format!("{}: check {points} points to step {last}, followed {} to step {followed_last}", path.file_name().unwrap().to_string_lossy(), steps.len()));
        }
    }
    assert!(compared > 100, "{compared} logs compared");
    assert!(wrong.is_empty(), "{} of {compared} logs read otherwise when followed:\n{}", wrong.len(), wrong.join("\n"));
}
