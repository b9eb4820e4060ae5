//! `workload = "rlhf"`: the keys it shares with lm (RL's own optimizer defaults)
//! and the `[run.rlhf]` table.
use super::lm::{resolve_model, resolve_optimizer};
use crate::config::checker::{Checker, Seg};
use crate::config::error::ConfigError;
use crate::config::raw::{RawAlgorithm, RawKlEstimator, RawReward, RawRlhf, RawRun};
use crate::config::resolved::lm::{ModelConfig, OptimizerConfig};
use crate::config::resolved::rlhf::{AdaptiveKl, KlEstimator, RewardKind, RlAlgorithm, RlhfConfig, DEFAULT_RLHF, RLHF_OPTIMIZER};

/// A run of `workload = "rlhf"`; the lm-only tables are mistakes here. Takes the
/// keys it reads out of `raw`.
pub(super) fn resolve(c: &Checker, i: usize, raw: &mut RawRun, batch_size: usize) -> Result<RlhfConfig, ConfigError> {
    let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key(key)];
    if raw.data.is_some() {
        return Err(c.err(&at("data"), "workload = \"rlhf\" takes its prompts and pretraining text from the synthetic corpus: remove [run.data]"));
    }
    for (key, set) in [("moe", raw.moe.is_some()), ("ndt", raw.ndt.is_some())] {
        if set {
            return Err(c.err(&at(key), format!("[run.{key}] applies to workload = \"lm\", not \"rlhf\"")));
        }
    }
    let model = resolve_model(c, i, raw.model.take().unwrap_or_default())?;
    let optimizer = resolve_optimizer(c, i, raw.optimizer.take().unwrap_or_default(), RLHF_OPTIMIZER)?;
    resolve_table(c, i, raw.rlhf.take().unwrap_or_default(), model, optimizer, batch_size)
}

const MAX_EPOCHS: u64 = 64;

/// The `[run.rlhf]` table, for the already resolved model and optimizer.
fn resolve_table(
    c: &Checker,
    i: usize,
    raw: RawRlhf,
    model: ModelConfig,
    optimizer: OptimizerConfig,
    batch_size: usize,
) -> Result<RlhfConfig, ConfigError> {
    let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key("rlhf"), Seg::Key(key)];
    let err = |key: &'static str, msg: String| c.err(&at(key), msg);
    let d = DEFAULT_RLHF;
    let algorithm = match raw.algorithm {
        None | Some(RawAlgorithm::Ppo) => RlAlgorithm::Ppo,
        Some(RawAlgorithm::Grpo) => RlAlgorithm::Grpo,
    };
    let positive = |key: &'static str, v: Option<u64>, default: u64| -> Result<usize, ConfigError> {
        match v {
            Some(0) => Err(err(key, format!("rlhf.{key} must be at least 1"))),
            v => Ok(v.unwrap_or(default) as usize),
        }
    };
    let in_range = |key: &'static str, v: Option<f64>, default: f64, ok: fn(f64) -> bool, what: &str| {
        let v = v.unwrap_or(default);
        if v.is_finite() && ok(v) {
            Ok(v)
        } else {
            Err(err(key, format!("rlhf.{key} must be {what}")))
        }
    };
    // Keys that only one algorithm reads: setting them for the other is a mistake.
    let only_for = |key: &'static str, set: bool, needs: RlAlgorithm, name: &str| {
        if set && algorithm != needs {
            Err(err(key, format!("rlhf.{key} applies to algorithm = \"{name}\"")))
        } else {
            Ok(())
        }
    };
    only_for("group_size", raw.group_size.is_some(), RlAlgorithm::Grpo, "grpo")?;
    only_for("gamma", raw.gamma.is_some(), RlAlgorithm::Ppo, "ppo")?;
    only_for("lambda", raw.lambda.is_some(), RlAlgorithm::Ppo, "ppo")?;
    only_for("vf_coef", raw.vf_coef.is_some(), RlAlgorithm::Ppo, "ppo")?;

    let reward_kind = raw.reward.unwrap_or(RawReward::Target);
    if raw.target.is_some() && reward_kind != RawReward::Target {
        return Err(err("target", "rlhf.target is only used with reward = \"target\"".into()));
    }
    let reward = match reward_kind {
        RawReward::Target => {
            let target = raw.target.map_or_else(|| d.target.to_vec(), String::into_bytes);
            if target.is_empty() {
                return Err(err("target", "rlhf.target must not be empty".into()));
            }
            RewardKind::Target(target)
        }
        RawReward::Arithmetic => RewardKind::Arithmetic,
        RawReward::Length => RewardKind::Length,
    };
    let stop = match raw.stop.as_deref() {
        None => d.stop,
        Some(s) if s.len() == 1 => s.as_bytes()[0],
        Some(_) => return Err(err("stop", "rlhf.stop must be one ASCII character (the byte that ends a response)".into())),
    };
    let adaptive_kl = raw
        .adaptive_kl
        .map(|a| {
            let horizon = a.horizon.unwrap_or(d.adaptive_horizon);
            if !(a.target.is_finite() && a.target > 0.0) {
                Err(err("adaptive_kl", "rlhf.adaptive_kl.target must be a positive number".into()))
            } else if !(horizon.is_finite() && horizon >= 1.0) {
                Err(err("adaptive_kl", "rlhf.adaptive_kl.horizon must be at least 1".into()))
            } else {
                Ok(AdaptiveKl { target: a.target, horizon })
            }
        })
        .transpose()?;
    let epochs = positive("epochs", raw.epochs, d.epochs)?;
    if epochs as u64 > MAX_EPOCHS {
        return Err(err("epochs", format!("rlhf.epochs must be at most {MAX_EPOCHS}")));
    }
    let cfg = RlhfConfig {
        model,
        optimizer,
        batch_size,
        algorithm,
        reward,
        kl_coef: in_range("kl_coef", raw.kl_coef, d.kl_coef, |v| v >= 0.0, "zero or positive")?,
        kl_estimator: match raw.kl_estimator {
            None | Some(RawKlEstimator::K1) => KlEstimator::K1,
            Some(RawKlEstimator::K3) => KlEstimator::K3,
        },
        adaptive_kl,
        group_size: match algorithm {
            RlAlgorithm::Grpo => positive("group_size", raw.group_size, d.group_size)?,
            RlAlgorithm::Ppo => 1,
        },
        prompt_len: positive("prompt_len", raw.prompt_len, d.prompt_len)?,
        max_new_tokens: positive("max_new_tokens", raw.max_new_tokens, d.max_new_tokens)?,
        stop,
        temperature: in_range("temperature", raw.temperature, d.temperature, |v| v > 0.0, "a positive number")?,
        clip_range: in_range("clip_range", raw.clip_range, d.clip_range, |v| v > 0.0 && v <= 1.0, "in (0, 1]")?,
        gamma: in_range("gamma", raw.gamma, d.gamma, |v| (0.0..=1.0).contains(&v), "in [0, 1]")?,
        lambda: in_range("lambda", raw.lambda, d.lambda, |v| (0.0..=1.0).contains(&v), "in [0, 1]")?,
        vf_coef: in_range("vf_coef", raw.vf_coef, d.vf_coef, |v| v >= 0.0, "zero or positive")?,
        epochs,
        minibatches: positive("minibatches", raw.minibatches, d.minibatches)?,
        pretrain_steps: raw.pretrain_steps.unwrap_or(d.pretrain_steps),
        pretrain_lr: in_range("pretrain_lr", raw.pretrain_lr, d.pretrain_lr, |v| v > 0.0, "a positive number")?,
    };
    if cfg.algorithm == RlAlgorithm::Grpo {
        if cfg.group_size < 2 {
            return Err(err("group_size", "rlhf.group_size must be at least 2: advantages compare samples of one prompt".into()));
        }
        if !batch_size.is_multiple_of(cfg.group_size) {
            return Err(err(
                "group_size",
                format!("rlhf.group_size ({}) must divide batch_size ({batch_size}): each prompt gets a full group", cfg.group_size),
            ));
        }
    }
    if !batch_size.is_multiple_of(cfg.minibatches) {
        return Err(err("minibatches", format!("rlhf.minibatches ({}) must divide batch_size ({batch_size})", cfg.minibatches)));
    }
    let needed = cfg.prompt_bytes() + cfg.max_new_tokens;
    if needed > model.seq_len {
        let key = if raw.max_new_tokens.is_some() || raw.prompt_len.is_none() { "max_new_tokens" } else { "prompt_len" };
        return Err(err(
            key,
            format!("prompt ({}) + rlhf.max_new_tokens ({}) is {needed}, more than model.seq_len ({})", cfg.prompt_bytes(), cfg.max_new_tokens, model.seq_len),
        ));
    }
    Ok(cfg)
}
