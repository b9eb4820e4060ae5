//! Config files: every valid fixture resolves; every invalid fixture fails with the
//! location and message its first line (`# expect: LINE:COL: TEXT`) names.
use std::path::{Path, PathBuf};

use rlmon::config::{DataSource, DeviceRequest, SessionConfig, Threads, WorkloadConfig};

fn fixtures(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs").join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

#[test]
fn invalid_configs_name_line_column_and_problem() {
    let files = fixtures("invalid");
    assert!(files.len() >= 10);
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let expect = text.lines().next().and_then(|l| l.strip_prefix("# expect: ")).expect("fixture states its expectation");
        let (loc, message) = expect.split_once(": ").unwrap_or((expect.trim_end_matches(':'), ""));
        let err = SessionConfig::load(&path).expect_err(&format!("{} must be rejected", path.display()));
        let want_loc = (!loc.is_empty()).then(|| {
            let (l, c) = loc.split_once(':').unwrap();
            (l.parse::<usize>().unwrap(), c.parse::<usize>().unwrap())
        });
        assert_eq!(err.location, want_loc, "{}: {}", path.display(), err);
        assert!(err.message.contains(message.trim()), "{}: message was: {}", path.display(), err.message);
        let shown = err.to_string();
        assert!(shown.starts_with(&path.display().to_string()), "message names the file: {shown}");
    }
}

#[test]
fn minimal_config_gets_documented_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs/valid/minimal.toml");
    let cfg = SessionConfig::load(&path).unwrap();
    assert_eq!(cfg.name, "minimal", "session name defaults to the file stem");
    let run = &cfg.runs[0];
    assert_eq!((run.device, run.seed, run.steps, run.threads), (DeviceRequest::Auto, 0, 3, Threads::Auto));
    let WorkloadConfig::Lm(lm) = &run.workload else { panic!("an lm run") };
    assert_eq!(lm.model, rlmon::config::DEFAULT_MODEL);
    assert_eq!(lm.optimizer, rlmon::config::DEFAULT_OPTIMIZER);
    assert_eq!(lm.data, DataSource::Synthetic);
}

#[test]
fn relative_data_paths_resolve_against_the_config_folder() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs/valid");
    let mut cfg = SessionConfig::load(&dir.join("two_runs_text.toml")).unwrap();
    assert_eq!(cfg.name, "pair");
    assert_eq!(cfg.runs.len(), 2);
    assert_eq!(cfg.runs[1].device, DeviceRequest::Cuda(0));
    assert_eq!(cfg.runs[0].threads, Threads::Fixed(1));
    let WorkloadConfig::Lm(lm) = &cfg.runs[1].workload else { panic!("an lm run") };
    assert_eq!(lm.data, DataSource::Text(dir.join("corpus.txt")));
    cfg.cap_steps(4);
    assert!(cfg.runs.iter().all(|r| r.steps == 4));
}

#[test]
fn shipped_workloads_and_examples_are_valid() {
    let mut checked = 0;
    for folder in ["workloads", "examples"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                match SessionConfig::load(&path) {
                    Ok(_) => {}
                    Err(e) => panic!("{e}"),
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 3);
}

#[test]
fn config_is_found_under_workloads() {
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).unwrap();
    assert_eq!(rlmon::config::find_config(Path::new("tiny.toml")).unwrap(), Path::new("workloads/tiny.toml"));
    assert_eq!(rlmon::config::find_config(Path::new("tiny")).unwrap(), Path::new("workloads/tiny.toml"));
    let err = rlmon::config::find_config(Path::new("nope.toml")).unwrap_err();
    assert!(err.message.contains("workloads/nope.toml"), "{}", err.message);
}

/// Alert kinds of the design's alert format; every fault demo names one.
const ALERT_KINDS: &[&str] = &[
    "loss_spike", "loss_divergence", "nonfinite", "grad_explosion", "grad_vanishing", "kl_spike", "kl_runaway",
    "reward_hacking", "reward_saturation", "entropy_collapse", "memory_leak", "expert_collapse",
    "throughput_regression", "nondeterminism", "run_divergence",
];

#[test]
fn fault_demos_are_valid_and_name_their_alert() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/faults");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let kind = text.lines().next().and_then(|l| l.strip_prefix("# expect-alert: ")).unwrap_or_else(|| {
            panic!("{}: first line must be `# expect-alert: KIND`", path.display())
        });
        assert!(ALERT_KINDS.contains(&kind.trim()), "{}: unknown alert kind {kind}", path.display());
        let cfg = SessionConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(cfg.runs.iter().any(|r| r.faults.any()), "{}: sets no fault", path.display());
        checked += 1;
    }
    assert!(checked >= 7, "one demo per fault");
}

#[test]
fn replicas_expand_into_named_copies() {
    let text = "[[run]]\nname = \"r\"\nworkload = \"lm\"\nsteps = 5\nreplicas = 3\ndeterministic = true\n";
    let cfg = SessionConfig::from_str(text, Path::new("r.toml")).unwrap();
    let names: Vec<&str> = cfg.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["r#1", "r#2", "r#3"]);
    assert!(cfg.runs.iter().all(|r| r.deterministic && r.seed == cfg.runs[0].seed));
    assert_eq!(cfg.runs[2].replica.as_ref().map(|r| (r.index, r.count)), Some((3, 3)));
}

#[test]
fn health_overrides_apply_per_kind() {
    use rlmon::health::AlertKind;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs/valid/health.toml");
    let cfg = SessionConfig::load(&path).unwrap();
    let run = &cfg.runs[0];
    assert_eq!(run.price_per_hour, Some(2.5));
    let spike = run.health.get(AlertKind::LossSpike);
    assert_eq!((spike.warn, spike.persistence, spike.metric.as_deref()), (2.0, 3, Some("val_loss")));
    assert_eq!(spike.critical, rlmon::health::config::defaults(AlertKind::LossSpike).critical, "unset keys keep defaults");
    assert!(!run.health.get(AlertKind::MemoryLeak).enabled);
    assert!(run.health.get(AlertKind::KlSpike).enabled);
}

#[test]
fn rlhf_runs_get_their_own_defaults() {
    use rlmon::config::{KlEstimator, RewardKind, RlAlgorithm};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs/valid");
    let cfg = SessionConfig::load(&dir.join("rlhf_minimal.toml")).unwrap();
    assert_eq!(cfg.runs[0].workload.kind(), "rlhf");
    let WorkloadConfig::Rlhf(rl) = &cfg.runs[0].workload else { panic!("an rlhf run") };
    assert_eq!((rl.algorithm, rl.kl_estimator, rl.adaptive_kl), (RlAlgorithm::Ppo, KlEstimator::K1, None));
    assert_eq!(rl.reward, RewardKind::Target(b"e".to_vec()));
    assert_eq!(rl.optimizer.weight_decay, 0.0, "RL fine-tuning defaults, not the lm ones");
    let cfg = SessionConfig::load(&dir.join("rlhf_grpo.toml")).unwrap();
    let WorkloadConfig::Rlhf(rl) = &cfg.runs[0].workload else { panic!("an rlhf run") };
    assert_eq!((rl.algorithm, rl.group_size, rl.epochs, rl.minibatches), (RlAlgorithm::Grpo, 4, 3, 3));
    assert_eq!(rl.adaptive_kl.map(|a| (a.target, a.horizon)), Some((2.0, 500.0)));
    assert_eq!(cfg.runs[0].faults.reward_gaming_at, Some(7));
}

#[test]
fn a_login_nodes_config_may_hold_only_telemetry_from_prometheus() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("login.toml");
    std::fs::write(&path, "[telemetry.prometheus]\nserver = \"http://prom:9090\"\nselector = ' {job=\"train-42\"} '\n").unwrap();
    let cfg = SessionConfig::load(&path).unwrap();
    assert!(cfg.runs.is_empty(), "its runs come with --attach http://");
    let p = cfg.prometheus.expect("[telemetry.prometheus]");
    assert_eq!((p.server.as_str(), p.matchers.as_str()), ("http://prom:9090", r#"job="train-42""#));
    assert_eq!((p.interval.as_secs_f64(), p.history.as_secs_f64()), (2.0, 300.0), "documented defaults");
}

#[test]
fn notify_targets_on_critical_and_stall_settings_resolve() {
    use rlmon::config::CriticalAction;
    use rlmon::health::{AlertKind, Severity};
    use rlmon::notify::{Destination, Format};
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs/valid/notify.toml");
    let cfg = SessionConfig::load(&path).unwrap();
    assert_eq!(cfg.notify.len(), 2);
    let slack = &cfg.notify[0];
    assert_eq!((slack.format, slack.min_severity, slack.on_end), (Format::Slack, Severity::Critical, true), "slack told from the host");
    assert_eq!(slack.kinds.as_deref(), Some(&[AlertKind::Nonfinite, AlertKind::Stalled][..]));
    assert_eq!(slack.cooldown.as_secs(), 60);
    assert!(!format!("{slack:?}").contains("secret"), "the URL's path is never shown");
    assert!(matches!(&cfg.notify[1].dest, Destination::Command(argv) if argv[0] == "notify-send"));
    let job = cfg.runs[0].on_critical.as_ref().unwrap();
    assert_eq!(job.action, CriticalAction::Stop);
    assert!(job.acts_on(AlertKind::Stalled, Severity::Warn) && !job.acts_on(AlertKind::LossSpike, Severity::Critical));
    assert_eq!(job.describe(), "stop on nonfinite, stalled");
    let lm = cfg.runs[1].on_critical.as_ref().unwrap();
    assert!(lm.acts_on(AlertKind::LossSpike, Severity::Critical) && !lm.acts_on(AlertKind::LossSpike, Severity::Warn));
    let stalled = cfg.runs[0].health.get(AlertKind::Stalled);
    assert_eq!((stalled.warn, stalled.critical), (5.0, 30.0), "k and floor_s");
    assert_eq!(cfg.runs[1].health.get(AlertKind::Stalled).critical, 60.0, "the default floor");
}
