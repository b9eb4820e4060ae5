//! `workload = "rlhf"`: the `[run.rlhf]` table as written and as resolved. The
//! shared keys (`batch_size`, `[run.model]`, `[run.optimizer]`) are resolved by the
//! caller and passed in.
use serde::Deserialize;

use super::resolve::{Checker, Seg};
use super::{ConfigError, ModelConfig, OptimizerConfig};

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawRlhf {
    pub algorithm: Option<RlAlgorithm>,
    pub reward: Option<RawReward>,
    /// The text `reward = "target"` counts.
    pub target: Option<String>,
    pub kl_coef: Option<f64>,
    pub kl_estimator: Option<KlEstimator>,
    pub adaptive_kl: Option<RawAdaptiveKl>,
    pub group_size: Option<u64>,
    pub prompt_len: Option<u64>,
    pub max_new_tokens: Option<u64>,
    /// One character that ends a response.
    pub stop: Option<String>,
    pub temperature: Option<f64>,
    pub clip_range: Option<f64>,
    pub gamma: Option<f64>,
    pub lambda: Option<f64>,
    pub vf_coef: Option<f64>,
    pub epochs: Option<u64>,
    pub minibatches: Option<u64>,
    pub pretrain_steps: Option<u64>,
    pub pretrain_lr: Option<f64>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RawReward {
    Target,
    Arithmetic,
    Length,
}

#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct RawAdaptiveKl {
    pub target: f64,
    pub horizon: Option<f64>,
}

/// How the policy is updated.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RlAlgorithm {
    /// Clipped surrogate objective, value head, GAE; KL penalty in the per-token reward.
    Ppo,
    /// Group-relative advantages over `group_size` samples per prompt, no value head;
    /// KL penalty as a loss term.
    Grpo,
}

/// Estimator of KL(policy ‖ reference) per sampled token, with r = p_ref / p_policy.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum KlEstimator {
    /// -log r: unbiased, high variance, can be negative per token.
    K1,
    /// (r - 1) - log r: unbiased, low variance, never negative.
    K3,
}

/// The programmatic reward of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewardKind {
    /// Bytes covered by occurrences of this text, over `max_new_tokens`.
    Target(Vec<u8>),
    /// Prompts are `a + b = ` (two-digit numbers); the reward is the fraction of the
    /// sum's digits the response gets right, in place.
    Arithmetic,
    /// Response length over `max_new_tokens`: easy to game by never stopping.
    Length,
}

/// Ziegler et al.'s proportional controller: the coefficient moves towards the value
/// that keeps `kl` at `target`, by at most 20% per `horizon` samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveKl {
    /// In the units of the `kl` metric (nats per response: summed over its tokens).
    pub target: f64,
    /// Samples over which the coefficient can change by the maximum step.
    pub horizon: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RlhfConfig {
    pub model: ModelConfig,
    pub optimizer: OptimizerConfig,
    /// Responses sampled per step (for GRPO, prompts x group_size).
    pub batch_size: usize,
    pub algorithm: RlAlgorithm,
    pub reward: RewardKind,
    pub kl_coef: f64,
    pub kl_estimator: KlEstimator,
    pub adaptive_kl: Option<AdaptiveKl>,
    pub group_size: usize,
    /// Bytes of corpus text per prompt (arithmetic prompts are always `ARITHMETIC_PROMPT_LEN`).
    pub prompt_len: usize,
    pub max_new_tokens: usize,
    pub stop: u8,
    pub temperature: f64,
    pub clip_range: f64,
    pub gamma: f64,
    pub lambda: f64,
    pub vf_coef: f64,
    /// Passes over each batch, each split into `minibatches` updates.
    pub epochs: usize,
    pub minibatches: usize,
    /// Supervised steps on the synthetic corpus before RL (the reference copies the result).
    pub pretrain_steps: u64,
    pub pretrain_lr: f64,
}

impl RlhfConfig {
    /// Prompt length in bytes for this reward.
    pub fn prompt_bytes(&self) -> usize {
        match self.reward {
            RewardKind::Arithmetic => ARITHMETIC_PROMPT_LEN,
            _ => self.prompt_len,
        }
    }
}

/// `"12 + 34 = "`: the synthetic corpus's addition format with two-digit operands.
pub const ARITHMETIC_PROMPT_LEN: usize = 10;

/// RL fine-tuning wants a small constant learning rate and no weight decay.
pub const RLHF_OPTIMIZER: OptimizerConfig =
    OptimizerConfig { lr: 3e-4, betas: [0.9, 0.95], weight_decay: 0.0, warmup_steps: 0, grad_clip: 1.0, min_lr_ratio: 1.0 };

pub const DEFAULT_RLHF: RlhfDefaults = RlhfDefaults {
    kl_coef: 0.05,
    adaptive_horizon: 10_000.0,
    group_size: 4,
    prompt_len: 16,
    max_new_tokens: 24,
    stop: b'.',
    temperature: 1.0,
    clip_range: 0.2,
    gamma: 1.0,
    lambda: 0.95,
    vf_coef: 0.1,
    epochs: 2,
    minibatches: 1,
    pretrain_steps: 0,
    pretrain_lr: 3e-3,
    target: b"e",
};

/// Values used when a key of `[run.rlhf]` is left out.
pub struct RlhfDefaults {
    pub kl_coef: f64,
    pub adaptive_horizon: f64,
    pub group_size: u64,
    pub prompt_len: u64,
    pub max_new_tokens: u64,
    pub stop: u8,
    pub temperature: f64,
    pub clip_range: f64,
    pub gamma: f64,
    pub lambda: f64,
    pub vf_coef: f64,
    pub epochs: u64,
    pub minibatches: u64,
    pub pretrain_steps: u64,
    pub pretrain_lr: f64,
    pub target: &'static [u8],
}

const MAX_EPOCHS: u64 = 64;

pub(super) fn resolve(
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
    let algorithm = raw.algorithm.unwrap_or(RlAlgorithm::Ppo);
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
        kl_estimator: raw.kl_estimator.unwrap_or(KlEstimator::K1),
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
