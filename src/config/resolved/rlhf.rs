//! `workload = "rlhf"`, resolved: the `[run.rlhf]` settings and their defaults.
//! The keys it shares with lm (`batch_size`, `[run.model]`, `[run.optimizer]`) use lm's types.
use super::lm::{ModelConfig, OptimizerConfig};

/// How the policy is updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RlAlgorithm {
    /// Clipped surrogate objective, value head, GAE; KL penalty in the per-token reward.
    Ppo,
    /// Group-relative advantages over `group_size` samples per prompt, no value head;
    /// KL penalty as a loss term.
    Grpo,
}

/// Estimator of KL(policy ‖ reference) per sampled token, with r = p_ref / p_policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
