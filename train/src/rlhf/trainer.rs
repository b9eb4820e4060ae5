//! One RL step: sample responses, score them, measure KL to the reference, compute
//! advantages (PPO: GAE over per-token rewards; GRPO: relative to the group), then
//! `epochs` passes of `minibatches` updates each.
use anyhow::Result;
use tch::{Device, Kind, Tensor};

use super::policy::{Evaluation, Policy};
use super::rollout::{self, PromptSource, Rollout, SampleSettings};
use super::{grpo, kl, ppo, reward};
use rlmon::config::faults::FaultConfig;
use rlmon::config::{DataSource, OptimizerConfig, RewardKind, RlAlgorithm, RlhfConfig, DEFAULT_OPTIMIZER};
use rlmon::metrics::{catalog, flops, MetricName};
use crate::common::data::Corpus;
use crate::common::optim::{adamw, clip_gradients, AdamW};
use crate::common::schedule;
use crate::driver::{Setup, StepTiming, Trainer};
use crate::faults::FaultInjector;
use rlmon::workload::rng::SplitMix64;
/// Mixed into the seed for the pretraining data order, so it differs from prompts.
const PRETRAIN_STREAM: u64 = 0x7072_6574_7261_696e;

/// What one RL step measured.
#[derive(Debug, Clone, PartialEq)]
pub struct StepStats {
    /// Mean reward the policy was trained on.
    pub reward: f64,
    pub reward_std: f64,
    /// Mean of the configured reward (differs from `reward` under `reward_gaming_at`).
    pub reward_gold: f64,
    /// KL(policy ‖ reference) per response: per-token estimates summed over the
    /// response, mean over the batch.
    pub kl: f64,
    /// The coefficient in effect this step.
    pub kl_coef: f64,
    /// Mean per-token entropy of the sampling distribution.
    pub entropy: f64,
    pub clip_frac: f64,
    pub approx_kl: f64,
    /// Mean generated tokens per response.
    pub response_len: f64,
    pub policy_loss: f64,
    pub value_loss: Option<f64>,
    pub frac_reward_zero_std: Option<f64>,
    /// Mean over the step's updates of the gradient norm before clipping.
    pub grad_norm: f64,
    /// Total loss of the last update (non-finite means the run failed).
    pub loss: f64,
    pub tokens: usize,
    pub samples: usize,
    /// Model FLOPs of the step (`metrics::flops::rlhf_step`).
    pub model_flops: f64,
}

pub struct RlhfTrainer {
    cfg: RlhfConfig,
    device: Device,
    policy: Policy,
    reference: Policy,
    opt: AdamW,
    kl: kl::KlController,
    prompts: PromptSource,
    /// Prompts, sampling and minibatch order.
    rng: SplitMix64,
    seed: u64,
}

/// Advantages (and PPO's returns) for a batch, on the device.
struct Targets {
    advantages: Tensor,
    returns: Option<Tensor>,
    frac_reward_zero_std: Option<f64>,
}

impl Trainer for RlhfTrainer {
    type Config = RlhfConfig;
    /// Prompts and the pretraining corpus are generated, not read: nothing to prepare.
    type Prepared = ();
    type Stats = StepStats;

    fn prepare(_cfg: &RlhfConfig, _setup: &Setup) -> Result<()> {
        Ok(())
    }

    fn setup(cfg: &RlhfConfig, _prepared: (), setup: &Setup) -> Result<Self> {
        RlhfTrainer::new(cfg, setup.device, setup.seed, setup.deterministic)
    }

    fn before_steps(&mut self, cancelled: &dyn Fn() -> bool) -> Result<bool> {
        self.pretrain(cancelled)
    }

    fn optimizer(&self) -> &OptimizerConfig {
        &self.cfg.optimizer
    }

    fn step(&mut self, step: u64, lr: f64, faults: &FaultInjector) -> StepStats {
        let cfg = &self.cfg;
        faults.perturb_weights(step, &self.policy.vs);
        self.opt.set_lr(lr);
        let kl_coef = if FaultConfig::active(faults.cfg.kl_coef_zero_at, step) { 0.0 } else { self.kl.coef() };
        let trained_reward =
            if FaultConfig::active(faults.cfg.reward_gaming_at, step) { RewardKind::Length } else { cfg.reward.clone() };

        let prompts = self.prompts.draw_batch(&mut self.rng, cfg.batch_size, cfg.group_size);
        let settings = SampleSettings { max_new_tokens: cfg.max_new_tokens, stop: cfg.stop, temperature: cfg.temperature };
        let rollout = rollout::sample(&self.policy.lm, &prompts, settings, &mut self.rng, self.device);
        let score = |kind: &RewardKind| -> Vec<f64> {
            prompts.iter().enumerate().map(|(i, p)| reward::score(kind, p.answer, rollout.response(i), cfg.max_new_tokens)).collect()
        };
        let model_flops = flops::rlhf_step(
            &cfg.model,
            flops::RlhfStep {
                batch: rollout.lengths.len(),
                seq_len: rollout.prompt_len + cfg.max_new_tokens,
                generated: rollout.lengths.iter().copied().max().unwrap_or(0),
                epochs: cfg.epochs,
            },
        );
        let rewards = score(&trained_reward);
        let gold = score(&cfg.reward);

        let (old, reference) = tch::no_grad(|| {
            let old = self.policy.evaluate(&rollout.sequences, rollout.prompt_len, cfg.temperature);
            let reference = self.reference.evaluate(&rollout.sequences, rollout.prompt_len, cfg.temperature);
            (old, reference)
        });
        let mask = &rollout.mask;
        let kl_tokens = kl::per_token(&old.logp, &reference.logp, cfg.kl_estimator) * mask;
        // KL between response distributions: summed over a response's tokens (padding
        // is masked to 0), mean over responses, as TRL's PPO reports it.
        let kl_mean = kl_tokens.sum_dim_intlist(1, false, Kind::Float).mean(Kind::Float).double_value(&[]);
        let entropy = ppo::masked_mean(&old.entropy, mask).double_value(&[]);
        let targets = match cfg.algorithm {
            RlAlgorithm::Ppo => self.ppo_targets(&rollout, &rewards, &kl_tokens, kl_coef, &old),
            RlAlgorithm::Grpo => self.grpo_targets(&rewards),
        };

        let updates = self.update(step, &rollout, &old, &reference, &targets, kl_coef, faults);
        self.kl.update(kl_mean, self.cfg.batch_size);
        let (reward, reward_std) = mean_std(&rewards);
        StepStats {
            reward,
            reward_std,
            reward_gold: mean_std(&gold).0,
            kl: kl_mean,
            kl_coef,
            entropy,
            clip_frac: updates.clip_frac,
            approx_kl: updates.approx_kl,
            response_len: rollout.lengths.iter().sum::<usize>() as f64 / rollout.lengths.len() as f64,
            policy_loss: updates.policy_loss,
            value_loss: updates.value_loss,
            frac_reward_zero_std: targets.frac_reward_zero_std,
            grad_norm: updates.grad_norm,
            loss: updates.loss,
            tokens: rollout.tokens(),
            samples: rollout.lengths.len(),
            model_flops,
        }
    }

    fn loss(stats: &StepStats) -> f64 {
        stats.loss
    }

    fn metrics(&self, s: StepStats, timing: StepTiming) -> Vec<(MetricName, f64)> {
        let mut values: Vec<(MetricName, f64)> = vec![
            (catalog::REWARD.into(), s.reward),
            (catalog::REWARD_STD.into(), s.reward_std),
            (catalog::REWARD_GOLD.into(), s.reward_gold),
            (catalog::KL.into(), s.kl),
            (catalog::KL_COEF.into(), s.kl_coef),
            (catalog::ENTROPY.into(), s.entropy),
            (catalog::CLIP_FRAC.into(), s.clip_frac),
            (catalog::APPROX_KL.into(), s.approx_kl),
            (catalog::RESPONSE_LEN.into(), s.response_len),
            (catalog::POLICY_LOSS.into(), s.policy_loss),
            (catalog::GRAD_NORM.into(), s.grad_norm),
            (catalog::TOKENS.into(), s.tokens as f64),
            (catalog::SAMPLES.into(), s.samples as f64),
            (catalog::STEP_TIME_S.into(), timing.step_time_s),
            (catalog::LR.into(), timing.lr),
            (catalog::MODEL_FLOPS.into(), s.model_flops),
        ];
        if let Some(v) = s.value_loss {
            values.push((catalog::VALUE_LOSS.into(), v));
        }
        if let Some(f) = s.frac_reward_zero_std {
            values.push((catalog::FRAC_REWARD_ZERO_STD.into(), f));
        }
        values
    }
}

impl RlhfTrainer {
    /// Builds the policy and its reference copy: call under `determinism::seeded_init`.
    pub fn new(cfg: &RlhfConfig, device: Device, seed: u64, deterministic: bool) -> Result<Self> {
        let policy = Policy::new(device, &cfg.model, cfg.algorithm == RlAlgorithm::Ppo, deterministic);
        let reference = policy.frozen_copy(device, &cfg.model, deterministic);
        let opt = adamw(&policy.vs, &cfg.optimizer);
        Ok(RlhfTrainer {
            cfg: cfg.clone(),
            device,
            policy,
            reference,
            opt,
            kl: kl::KlController::new(cfg.kl_coef, cfg.adaptive_kl),
            prompts: PromptSource::new(cfg, seed),
            rng: SplitMix64::new(seed),
            seed,
        })
    }

    #[cfg(test)]
    pub fn policy_vars(&self) -> &tch::nn::VarStore {
        &self.policy.vs
    }

    /// `pretrain_steps` of next-byte prediction on the synthetic corpus (its own
    /// AdamW, warm-up then cosine from `pretrain_lr`); the reference then copies the
    /// result. Returns false when cancelled part-way.
    pub fn pretrain(&mut self, cancelled: impl Fn() -> bool) -> Result<bool> {
        let steps = self.cfg.pretrain_steps;
        if steps == 0 {
            return Ok(true);
        }
        let corpus = Corpus::load(&DataSource::Synthetic, self.seed)?;
        let o = OptimizerConfig { lr: self.cfg.pretrain_lr, ..DEFAULT_OPTIMIZER };
        let mut opt = adamw(&self.policy.vs, &o);
        let mut rng = SplitMix64::new(self.seed ^ PRETRAIN_STREAM);
        for step in 1..=steps {
            if cancelled() {
                return Ok(false);
            }
            opt.set_lr(schedule::lr_at(&o, step, steps));
            let (x, y) = corpus.batch(&mut rng, self.cfg.batch_size, self.cfg.model.seq_len, self.device);
            let loss = self.policy.lm.loss(&x, &y);
            opt.zero_grad();
            loss.backward();
            clip_gradients(&self.policy.vs, o.grad_clip);
            opt.step();
        }
        self.reference.reload_from(&self.policy);
        Ok(true)
    }

    /// Per-token rewards `-kl_coef * kl_t`, the score added on each response's last
    /// token; GAE against the old values; advantages whitened over the batch.
    fn ppo_targets(&self, rollout: &Rollout, rewards: &[f64], kl_tokens: &Tensor, kl_coef: f64, old: &Evaluation) -> Targets {
        let width = self.cfg.max_new_tokens;
        let mut token_rewards = host_f64(&(kl_tokens * -kl_coef));
        for (i, (&len, &r)) in rollout.lengths.iter().zip(rewards).enumerate() {
            token_rewards[i * width + len - 1] += r;
        }
        let values = host_f64(old.values.as_ref().expect("PPO has a value head"));
        let (advantages, returns) =
            ppo::gae_batch(&token_rewards, &values, &rollout.lengths, width, self.cfg.gamma, self.cfg.lambda);
        let shape = [rollout.lengths.len() as i64, width as i64];
        let advantages = ppo::whiten(&self.device_tensor(&advantages, shape), &rollout.mask);
        Targets { advantages, returns: Some(self.device_tensor(&returns, shape)), frac_reward_zero_std: None }
    }

    fn grpo_targets(&self, rewards: &[f64]) -> Targets {
        let (advantages, flat) = grpo::group_advantages(rewards, self.cfg.group_size);
        let advantages = self.device_tensor(&advantages, [rewards.len() as i64, 1]);
        Targets { advantages, returns: None, frac_reward_zero_std: Some(flat) }
    }

    fn device_tensor(&self, values: &[f64], shape: [i64; 2]) -> Tensor {
        Tensor::from_slice(values).view(shape).to_kind(Kind::Float).to_device(self.device)
    }

    /// `epochs` passes over the batch in `minibatches` shuffled parts, one optimizer
    /// step each; returns the means of the per-update diagnostics.
    #[allow(clippy::too_many_arguments)]
    fn update(
        &mut self,
        step: u64,
        rollout: &Rollout,
        old: &Evaluation,
        reference: &Evaluation,
        targets: &Targets,
        kl_coef: f64,
        faults: &FaultInjector,
    ) -> UpdateStats {
        let cfg = &self.cfg;
        let batch = cfg.batch_size;
        let part = batch / cfg.minibatches;
        let mut sums = UpdateStats::default();
        let mut count = 0.0;
        for _ in 0..cfg.epochs {
            let order = shuffled(batch, &mut self.rng);
            for chunk in order.chunks(part) {
                let idx = Tensor::from_slice(chunk).to_device(self.device);
                let pick = |t: &Tensor| t.index_select(0, &idx);
                let mask = pick(&rollout.mask);
                let new = self.policy.evaluate(&pick(&rollout.sequences), rollout.prompt_len, cfg.temperature);
                let (surrogate, value_loss) = match cfg.algorithm {
                    RlAlgorithm::Ppo => {
                        let s = ppo::clipped_surrogate(&new.logp, &pick(&old.logp), &pick(&targets.advantages), &mask, cfg.clip_range);
                        let v = ppo::value_loss(
                            new.values.as_ref().expect("PPO has a value head"),
                            &pick(old.values.as_ref().expect("PPO has a value head")),
                            &pick(targets.returns.as_ref().expect("PPO has returns")),
                            &mask,
                            cfg.clip_range,
                        );
                        (s, Some(v))
                    }
                    RlAlgorithm::Grpo => {
                        let penalty = grpo::KlPenalty { coef: kl_coef, estimator: cfg.kl_estimator };
                        let s = grpo::loss(&new.logp, &pick(&old.logp), &pick(&reference.logp), &pick(&targets.advantages), &mask, cfg.clip_range, penalty);
                        (s, None)
                    }
                };
                let policy_loss = surrogate.loss.double_value(&[]);
                let value = value_loss.as_ref().map(|v| v.double_value(&[]));
                let total = match &value_loss {
                    Some(v) => &surrogate.loss + v * cfg.vf_coef,
                    None => surrogate.loss,
                };
                let total = faults.loss(step, total);
                self.opt.zero_grad();
                total.backward();
                faults.scale_gradients(step, &self.policy.vs);
                let grad_norm = clip_gradients(&self.policy.vs, cfg.optimizer.grad_clip);
                self.opt.step();
                sums.policy_loss += policy_loss;
                sums.value_loss = value.map(|v| sums.value_loss.unwrap_or(0.0) + v);
                sums.clip_frac += surrogate.clip_frac;
                sums.approx_kl += surrogate.approx_kl;
                sums.grad_norm += grad_norm;
                sums.loss = total.double_value(&[]);
                count += 1.0;
            }
        }
        UpdateStats {
            policy_loss: sums.policy_loss / count,
            value_loss: sums.value_loss.map(|v| v / count),
            clip_frac: sums.clip_frac / count,
            approx_kl: sums.approx_kl / count,
            grad_norm: sums.grad_norm / count,
            loss: sums.loss,
        }
    }
}

#[derive(Debug, Default)]
struct UpdateStats {
    policy_loss: f64,
    value_loss: Option<f64>,
    clip_frac: f64,
    approx_kl: f64,
    grad_norm: f64,
    loss: f64,
}

/// A tensor's values on the host, row-major.
fn host_f64(t: &Tensor) -> Vec<f64> {
    Vec::<f64>::try_from(&t.to_device(Device::Cpu).to_kind(Kind::Double).reshape([-1])).expect("a float tensor")
}

/// Mean and population standard deviation.
pub fn mean_std(xs: &[f64]) -> (f64, f64) {
    let n = xs.len().max(1) as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// `0..n` in an order drawn from `rng` (Fisher-Yates).
fn shuffled(n: usize, rng: &mut SplitMix64) -> Vec<i64> {
    let mut order: Vec<i64> = (0..n as i64).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i + 1));
    }
    order
}
