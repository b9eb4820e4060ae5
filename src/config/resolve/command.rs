//! `workload = "command"`: the program, its directory and environment, and where
//! its metrics come from. The built-in workloads' tables mean nothing here and
//! are refused rather than ignored.
use std::path::Path;
use std::time::Duration;

use crate::config::checker::{Checker, Seg};
use crate::config::error::ConfigError;
use crate::config::raw::{RawMetrics, RawRun};
use crate::config::resolved::command::{CommandConfig, MetricsSource, DEFAULT_GRACE};
use crate::ingest::{Format, FORMAT_NAMES};

/// Longer than this between SIGTERM and SIGKILL is a typo (milliseconds?).
const MAX_GRACE_S: f64 = 3600.0;

/// The keys of `(key, present)` pairs that are present, in order.
fn keys_present<const N: usize>(pairs: [(&'static str, bool); N]) -> Vec<&'static str> {
    pairs.into_iter().filter(|(_, p)| *p).map(|(k, _)| k).collect()
}

/// The keys of the built-in workloads, which a command run does not read.
pub(super) fn built_in_keys(raw: &RawRun) -> Vec<&'static str> {
    let present = [
        ("device", raw.device.is_some()),
        ("seed", raw.seed.is_some()),
        ("batch_size", raw.batch_size.is_some()),
        ("intra_op_threads", raw.intra_op_threads.is_some()),
        ("model", raw.model.is_some()),
        ("optimizer", raw.optimizer.is_some()),
        ("data", raw.data.is_some()),
        ("replicas", raw.replicas.is_some()),
        ("deterministic", raw.deterministic.is_some()),
        ("faults", raw.faults.is_some()),
        ("rlhf", raw.rlhf.is_some()),
        ("moe", raw.moe.is_some()),
        ("ndt", raw.ndt.is_some()),
    ];
    keys_present(present)
}

/// The keys only a command run reads.
pub(super) fn command_keys(raw: &RawRun) -> Vec<&'static str> {
    let present = [
        ("command", raw.command.is_some()),
        ("cwd", raw.cwd.is_some()),
        ("env", raw.env.is_some()),
        ("metrics", raw.metrics.is_some()),
        ("format", raw.format.is_some()),
        ("grace_s", raw.grace_s.is_some()),
    ];
    keys_present(present)
}

pub(super) fn resolve(c: &Checker, i: usize, raw: &mut RawRun, base_dir: &Path) -> Result<CommandConfig, ConfigError> {
    let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key(key)];
    if let Some(key) = built_in_keys(raw).first() {
        return Err(c.err(&at(key), format!("`{key}` applies to the built-in workloads (lm, rlhf), not to workload = \"command\"")));
    }
    let argv = match raw.command.take() {
        None => return Err(c.err(&[Seg::Key("run"), Seg::Index(i)], "workload = \"command\" needs `command`: the program and its arguments, e.g. [\"python3\", \"train.py\"]")),
        Some(argv) if argv.first().is_none_or(|p| p.trim().is_empty()) => {
            return Err(c.err(&at("command"), "command must not be empty: its first item is the program to run"))
        }
        Some(argv) => argv,
    };
    let cwd = match raw.cwd.take() {
        None => base_dir.to_path_buf(),
        Some(dir) => {
            let resolved = base_dir.join(&dir);
            if !resolved.is_dir() {
                return Err(c.err(&at("cwd"), format!("cwd `{}` is not a folder", resolved.display())));
            }
            resolved
        }
    };
    let env: Vec<(String, String)> = raw.env.take().unwrap_or_default().into_iter().collect();
    if let Some((bad, _)) = env.iter().find(|(k, v)| k.is_empty() || k.contains(['=', '\0']) || v.contains('\0')) {
        return Err(c.err(&at("env"), format!("env: `{bad}` is not a usable variable (names must be non-empty, without `=`; no NUL bytes)")));
    }
    let metrics = match raw.metrics.take() {
        None => MetricsSource::Stdout,
        Some(RawMetrics::Named(n)) if n == "stdout" => MetricsSource::Stdout,
        Some(RawMetrics::Named(n)) if n == "stderr" => MetricsSource::Stderr,
        Some(RawMetrics::Named(n)) => {
            return Err(c.err(&at("metrics"), format!("metrics = \"{n}\": expected \"stdout\", \"stderr\" or a table {{ file = \"path\" }}, {{ tensorboard = \"dir\" }}, {{ glob = \"pattern\" }}, {{ mlflow = \"mlruns\" }}, {{ wandb = \"wandb\" }} or {{ trackio = \"project\" }}")))
        }
        Some(RawMetrics::File(f)) if f.trim().is_empty() => return Err(c.err(&at("metrics"), "metrics.file must name a file")),
        Some(RawMetrics::File(f)) => MetricsSource::File(base_dir.join(f)),
        Some(RawMetrics::TensorBoard(d)) if d.trim().is_empty() => return Err(c.err(&at("metrics"), "metrics.tensorboard must name a folder")),
        Some(RawMetrics::TensorBoard(d)) => MetricsSource::TensorBoard(base_dir.join(d)),
        Some(RawMetrics::MlFlow(d)) if d.trim().is_empty() => return Err(c.err(&at("metrics"), "metrics.mlflow must name the MLflow store's folder (mlruns)")),
        Some(RawMetrics::MlFlow(d)) => MetricsSource::MlFlowStore(base_dir.join(d)),
        Some(RawMetrics::Wandb(d)) if d.trim().is_empty() => return Err(c.err(&at("metrics"), "metrics.wandb must name the folder W&B writes its runs to (wandb)")),
        Some(RawMetrics::Wandb(d)) => MetricsSource::WandbDir(base_dir.join(d)),
        Some(RawMetrics::Trackio(p)) if p.trim().is_empty() => return Err(c.err(&at("metrics"), "metrics.trackio must name the project (or its .db file)")),
        Some(RawMetrics::Trackio(p)) => match crate::workload::command::trackio_db::project_db(&p, base_dir) {
            Ok(db) => MetricsSource::Trackio { db, run: None },
            Err(why) => return Err(c.err(&at("metrics"), format!("metrics.trackio `{p}`: {why}"))),
        },
        Some(RawMetrics::Glob(g)) => {
            let pattern = base_dir.join(&g);
            match crate::workload::command::glob::FileGlob::new(&pattern) {
                Ok(_) => MetricsSource::Glob(pattern),
                Err(why) => return Err(c.err(&at("metrics"), format!("metrics.glob `{g}`: {why}"))),
            }
        }
    };
    let format = match raw.format.take() {
        None => None,
        Some(name) => match Format::from_name(&name) {
            Some(Format::TrainerState) => {
                return Err(c.err(&at("format"), "trainer_state.json is rewritten whole, not appended to: it cannot be followed as a stream"))
            }
            Some(Format::JsonDocument) => return Err(c.err(&at("format"), "a JSON document is rewritten whole, not appended to: it cannot be followed as a stream")),
            Some(f) => Some(f.name().to_owned()),
            None => {
                let names: Vec<&str> = FORMAT_NAMES.iter().copied().filter(|n| !["trainer-state", "json-doc"].contains(n)).collect();
                return Err(c.err(&at("format"), format!("unknown format `{name}` (one of: {})", names.join(", "))));
            }
        },
    };
    let grace = match raw.grace_s.take() {
        None => DEFAULT_GRACE,
        Some(s) if s.is_finite() && (0.0..=MAX_GRACE_S).contains(&s) => Duration::from_secs_f64(s),
        Some(_) => return Err(c.err(&at("grace_s"), format!("grace_s must be between 0 and {MAX_GRACE_S} seconds"))),
    };
    Ok(CommandConfig { argv, cwd, env, metrics, format, grace })
}
