//! Workload `lm`: a small decoder-only transformer trained on bytes with AdamW,
//! linear warm-up then cosine decay, and global gradient-norm clipping.
pub mod data;
pub mod model;
pub mod schedule;

use std::time::Instant;

use anyhow::{Context, Result};
use tch::nn::{self, OptimizerConfig as _};
use tch::{Device, Kind, Tensor};

use crate::config::LmConfig;
use crate::metrics::{names, MetricName};
use crate::session::RunOutcome;
use crate::workload::rng::SplitMix64;
use crate::workload::faults::FaultInjector;
use crate::workload::{determinism, device, RunContext};
use data::Corpus;
use model::{TransformerLm, NO_DECAY_GROUP};

const ADAM_EPS: f64 = 1e-8;

pub fn train(ctx: &RunContext, cfg: &LmConfig) -> Result<RunOutcome> {
    // OpenMP's thread count is per calling thread: set it on the training thread.
    tch::set_num_threads(ctx.threads as i32);
    let device = match device::resolve(ctx.config.device) {
        Ok(d) => d,
        Err(reason) => return Ok(RunOutcome::Failed(reason)),
    };
    let seed = ctx.config.seed;
    determinism::apply(ctx.config.deterministic);
    let corpus = Corpus::load(&cfg.data, seed).context("loading training text")?;
    corpus.check_fits(cfg.model.seq_len)?;
    let mut trainer = {
        let _init = determinism::seeded_init(seed);
        Trainer::new(cfg, device)?
    };
    let mut faults = FaultInjector::new(&ctx.config);
    let mut data_rng = SplitMix64::new(seed);
    if ctx.started(device::name(device)).is_err() {
        return Ok(RunOutcome::Cancelled);
    }

    let total = ctx.config.steps;
    for step in 1..=total {
        if ctx.is_cancelled() {
            return Ok(RunOutcome::Cancelled);
        }
        let t0 = Instant::now();
        let lr = faults.lr(step, schedule::lr_at(&cfg.optimizer, step, total));
        let (inputs, targets) = corpus.batch(&mut data_rng, cfg.batch_size, cfg.model.seq_len, device);
        let stats = trainer.step(&inputs, &targets, lr, step, &faults);
        faults.after_step(step, device, t0.elapsed());
        let step_time = t0.elapsed().as_secs_f64();
        let tokens = (cfg.batch_size * cfg.model.seq_len) as f64;
        let values: Vec<(MetricName, f64)> = vec![
            (names::LOSS.into(), stats.loss),
            (names::LR.into(), lr),
            (names::GRAD_NORM.into(), stats.grad_norm),
            (names::TOKENS.into(), tokens),
            (names::SAMPLES.into(), cfg.batch_size as f64),
            (names::STEP_TIME_S.into(), step_time),
        ];
        if ctx.emit(step, values).is_err() {
            return Ok(RunOutcome::Cancelled);
        }
        if !stats.loss.is_finite() {
            return Ok(RunOutcome::Failed(format!("loss became {} at step {step}", stats.loss)));
        }
    }
    Ok(RunOutcome::Finished)
}

/// One optimisation step's observations.
#[derive(Debug, Clone, Copy)]
pub struct StepStats {
    pub loss: f64,
    /// Global L2 norm of the gradients before clipping.
    pub grad_norm: f64,
}

/// Model, parameters and optimizer of one run.
pub struct Trainer {
    // Keeps the parameters alive; the optimizer and model refer to them.
    vs: nn::VarStore,
    model: TransformerLm,
    opt: nn::Optimizer,
    grad_clip: f64,
}

impl Trainer {
    pub fn new(cfg: &LmConfig, device: Device) -> Result<Self> {
        let vs = nn::VarStore::new(device);
        let model = TransformerLm::new(&vs.root(), &cfg.model);
        let o = &cfg.optimizer;
        let mut opt = nn::AdamW { beta1: o.betas[0], beta2: o.betas[1], wd: o.weight_decay, eps: ADAM_EPS, amsgrad: false }
            .build(&vs, o.lr)
            .context("building AdamW")?;
        opt.set_weight_decay_group(NO_DECAY_GROUP, 0.0);
        Ok(Trainer { vs, model, opt, grad_clip: o.grad_clip })
    }

    pub fn parameter_count(&self) -> i64 {
        self.vs.trainable_variables().iter().map(Tensor::numel).map(|n| n as i64).sum()
    }

    /// Forward, backward, clip, update at learning rate `lr` (faults already
    /// applied to it), with the run's other faults.
    pub fn step(&mut self, inputs: &Tensor, targets: &Tensor, lr: f64, step: u64, faults: &FaultInjector) -> StepStats {
        faults.perturb_weights(step, &self.vs);
        self.opt.set_lr(lr);
        let loss = faults.loss(step, self.model.loss(inputs, targets));
        self.opt.zero_grad();
        loss.backward();
        faults.scale_gradients(step, &self.vs);
        let grad_norm = self.clip_gradients();
        self.opt.step();
        StepStats { loss: loss.double_value(&[]), grad_norm }
    }

    /// Scales gradients so their global norm is at most `grad_clip`; returns the norm
    /// before clipping.
    fn clip_gradients(&self) -> f64 {
        tch::no_grad(|| {
            let grads: Vec<Tensor> =
                self.vs.trainable_variables().iter().map(Tensor::grad).filter(Tensor::defined).collect();
            if grads.is_empty() {
                return 0.0;
            }
            let norms: Vec<Tensor> = grads.iter().map(|g| g.norm().to_kind(Kind::Float)).collect();
            let total = Tensor::stack(&norms, 0).norm().double_value(&[]);
            let coef = self.grad_clip / (total + 1e-6);
            if total.is_finite() && coef < 1.0 {
                for mut g in grads {
                    let _ = g.g_mul_scalar_(coef);
                }
            }
            total
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DataSource, ModelConfig, DEFAULT_OPTIMIZER};

    fn tiny() -> LmConfig {
        LmConfig {
            model: ModelConfig { layers: 1, d_model: 32, heads: 2, seq_len: 16, vocab: 256 },
            optimizer: crate::config::OptimizerConfig { warmup_steps: 2, ..DEFAULT_OPTIMIZER },
            batch_size: 8,
            data: DataSource::Synthetic,
        }
    }

    #[test]
    fn a_few_steps_on_cpu_lower_the_loss() {
        tch::set_num_threads(1);
        tch::manual_seed(0);
        let cfg = tiny();
        let corpus = Corpus::load(&cfg.data, 0).unwrap();
        let mut trainer = Trainer::new(&cfg, Device::Cpu).unwrap();
        assert!(trainer.parameter_count() > 10_000);
        let mut rng = SplitMix64::new(0);
        let mut losses = vec![];
        for step in 1..=40 {
            let (x, y) = corpus.batch(&mut rng, cfg.batch_size, cfg.model.seq_len, Device::Cpu);
            let stats = trainer.step(&x, &y, schedule::lr_at(&cfg.optimizer, step, 40), step, &FaultInjector::none());
            assert!(stats.grad_norm.is_finite() && stats.grad_norm > 0.0);
            losses.push(stats.loss);
        }
        // Uniform over 256 bytes is ln 256 = 5.55; a model that learned byte
        // frequencies is far below it.
        assert!((losses[0] - 256f64.ln()).abs() < 0.5, "starts near uniform: {}", losses[0]);
        let last: f64 = losses[35..].iter().sum::<f64>() / 5.0;
        assert!(last < losses[0] - 1.5, "loss fell from {} to {last}", losses[0]);
    }
}
