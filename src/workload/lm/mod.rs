//! Workload `lm`: a small decoder-only transformer trained on bytes with AdamW,
//! linear warm-up then cosine decay, and global gradient-norm clipping.
pub mod data;
pub mod model;
pub mod moe;
pub mod schedule;

use std::time::Instant;

use anyhow::{Context, Result};
use tch::nn::{self, OptimizerConfig as _};
use tch::{Device, Kind, Tensor};

use crate::config::faults::FaultConfig;
use crate::config::{LmConfig, MoeConfig, NdtConfig};
use crate::metrics::dimensionality::Dimensionality;
use crate::metrics::{catalog, MetricName};
use crate::session::RunOutcome;
use crate::workload::rng::SplitMix64;
use crate::workload::faults::FaultInjector;
use crate::workload::{determinism, device, RunContext};
use data::Corpus;
use model::{ForwardOptions, TransformerLm, NO_DECAY_GROUP};

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
        Trainer::new(cfg, device, ctx.config.deterministic)?
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
        let mut values: Vec<(MetricName, f64)> = vec![
            (catalog::LOSS.into(), stats.loss),
            (catalog::LR.into(), lr),
            (catalog::GRAD_NORM.into(), stats.grad_norm),
            (catalog::TOKENS.into(), tokens),
            (catalog::SAMPLES.into(), cfg.batch_size as f64),
            (catalog::STEP_TIME_S.into(), step_time),
        ];
        values.extend(stats.extra);
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
#[derive(Debug, Clone)]
pub struct StepStats {
    pub loss: f64,
    /// Global L2 norm of the gradients before clipping.
    pub grad_norm: f64,
    /// MoE routing and representation metrics, when the run has them.
    pub extra: Vec<(MetricName, f64)>,
}

/// Model, parameters and optimizer of one run.
pub struct Trainer {
    // Keeps the parameters alive; the optimizer and model refer to them.
    vs: nn::VarStore,
    model: TransformerLm,
    opt: nn::Optimizer,
    grad_clip: f64,
    moe: Option<MoeConfig>,
    ndt: Option<NdtConfig>,
}

impl Trainer {
    pub fn new(cfg: &LmConfig, device: Device, deterministic: bool) -> Result<Self> {
        let vs = nn::VarStore::new(device);
        let model = TransformerLm::new(&vs.root(), &cfg.model, cfg.moe.as_ref()).deterministic(deterministic);
        let o = &cfg.optimizer;
        let mut opt = nn::AdamW { beta1: o.betas[0], beta2: o.betas[1], wd: o.weight_decay, eps: ADAM_EPS, amsgrad: false }
            .build(&vs, o.lr)
            .context("building AdamW")?;
        opt.set_weight_decay_group(NO_DECAY_GROUP, 0.0);
        Ok(Trainer { vs, model, opt, grad_clip: o.grad_clip, moe: cfg.moe.clone(), ndt: cfg.ndt.clone() })
    }

    pub fn parameter_count(&self) -> i64 {
        self.vs.trainable_variables().iter().map(Tensor::numel).map(|n| n as i64).sum()
    }

    /// Forward, backward, clip, update at learning rate `lr` (faults already
    /// applied to it), with the run's other faults.
    pub fn step(&mut self, inputs: &Tensor, targets: &Tensor, lr: f64, step: u64, faults: &FaultInjector) -> StepStats {
        faults.perturb_weights(step, &self.vs);
        self.opt.set_lr(lr);
        let collapse = FaultConfig::active(faults.cfg.router_collapse_at, step);
        let keep_hidden: &[usize] = match &self.ndt {
            Some(n) if step % n.every == 0 => &n.layers,
            _ => &[],
        };
        let out = self.model.forward_with(inputs, ForwardOptions { collapse_router: collapse, keep_hidden });
        let lm_loss = faults.loss(step, self.model.cross_entropy(&out.logits, targets));
        let mut extra = Vec::new();
        let mut objective = lm_loss.shallow_clone();
        if let (Some(moe), false) = (&self.moe, out.routing.is_empty()) {
            let aux = Tensor::stack(&out.routing.iter().map(|(_, r)| r.aux_loss.shallow_clone()).collect::<Vec<_>>(), 0).sum(Kind::Float);
            let z = Tensor::stack(&out.routing.iter().map(|(_, r)| r.z_loss.shallow_clone()).collect::<Vec<_>>(), 0).sum(Kind::Float);
            // The collapse fault also turns balancing off, as a broken config would.
            if !collapse {
                objective = objective + &aux * moe.aux_loss_coef + &z * moe.z_loss_coef;
            }
            extra.push((catalog::MOE_AUX_LOSS.into(), aux.double_value(&[]) / out.routing.len() as f64));
            extra.extend(routing_metrics(&out.routing));
        }
        self.opt.zero_grad();
        objective.backward();
        faults.scale_gradients(step, &self.vs);
        let grad_norm = self.clip_gradients();
        self.opt.step();
        if !collapse {
            for ((_, moe), (_, routing)) in self.model.moe_layers().zip(&out.routing) {
                moe.update_bias(&routing.loads);
            }
        }
        extra.extend(dimensionality_metrics(&out.hidden));
        StepStats { loss: lm_loss.double_value(&[]), grad_norm, extra }
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

/// `moe/L{l}/load/E{e}` and `moe/L{l}/dropped_frac` for each MoE layer.
fn routing_metrics(routing: &[(usize, moe::Routing)]) -> Vec<(MetricName, f64)> {
    let mut out = Vec::new();
    for (layer, r) in routing {
        let loads = Vec::<f64>::try_from(r.loads.to_kind(Kind::Double)).unwrap_or_default();
        for (e, load) in loads.into_iter().enumerate() {
            out.push((catalog::moe(*layer).load(e).into(), load));
        }
        out.push((catalog::moe(*layer).dropped_frac().into(), r.dropped_frac.double_value(&[])));
    }
    out
}

/// `ndt/L{l}/{stable_rank, ...}` from the eigenvalues of each kept layer output's
/// Gram matrix (s² of the activations), in double precision.
fn dimensionality_metrics(hidden: &[(usize, Tensor)]) -> Vec<(MetricName, f64)> {
    let mut out = Vec::new();
    for (layer, h) in hidden {
        let h = h.to_kind(Kind::Double);
        let gram = h.tr().matmul(&h);
        let eig = Vec::<f64>::try_from(gram.linalg_eigvalsh("L")).unwrap_or_default();
        let s: Vec<f64> = eig.into_iter().map(|l| l.max(0.0).sqrt()).collect();
        if let Some(d) = Dimensionality::from_singular_values(&s) {
            for (name, value) in d.named() {
                out.push((catalog::ndt(*layer).measure(name).into(), value));
            }
        }
    }
    out
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
            moe: None,
            ndt: None,
        }
    }

    #[test]
    fn a_few_steps_on_cpu_lower_the_loss() {
        tch::set_num_threads(1);
        tch::manual_seed(0);
        let cfg = tiny();
        let corpus = Corpus::load(&cfg.data, 0).unwrap();
        let mut trainer = Trainer::new(&cfg, Device::Cpu, false).unwrap();
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

    fn moe_cfg() -> LmConfig {
        LmConfig {
            moe: Some(MoeConfig { experts: 4, top_k: 2, layers: vec![0], capacity_factor: 1.25, aux_loss_coef: 0.01, z_loss_coef: 0.001, bias_balancing: 0.0 }),
            ndt: Some(NdtConfig { every: 2, layers: vec![0] }),
            ..tiny()
        }
    }

    fn losses(cfg: &LmConfig, steps: u64, deterministic: bool) -> Vec<StepStats> {
        let corpus = Corpus::load(&cfg.data, 3).unwrap();
        let mut trainer = {
            let _init = determinism::seeded_init(3);
            Trainer::new(cfg, Device::Cpu, deterministic).unwrap()
        };
        let mut rng = SplitMix64::new(3);
        (1..=steps)
            .map(|step| {
                let (x, y) = corpus.batch(&mut rng, cfg.batch_size, cfg.model.seq_len, Device::Cpu);
                trainer.step(&x, &y, 1e-3, step, &FaultInjector::none())
            })
            .collect()
    }

    #[test]
    fn moe_steps_report_routing_and_dimensionality() {
        tch::set_num_threads(1);
        let stats = losses(&moe_cfg(), 4, false);
        let get = |s: &StepStats, n: &str| s.extra.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        let loads: f64 = (0..4).map(|e| get(&stats[0], &format!("moe/L0/load/E{e}")).unwrap()).sum();
        assert!((loads - 1.0).abs() < 1e-6);
        assert!(get(&stats[0], "moe/aux_loss").unwrap() >= 1.0 - 1e-6);
        assert!(get(&stats[0], "moe/L0/dropped_frac").is_some());
        assert!(get(&stats[0], "ndt/L0/stable_rank").is_none(), "measured every 2 steps");
        let rank = get(&stats[1], "ndt/L0/stable_rank").unwrap();
        assert!(rank >= 1.0 && rank <= 32.0, "stable rank within [1, d_model]: {rank}");
    }

    #[test]
    fn same_seed_deterministic_runs_are_bitwise_equal() {
        tch::set_num_threads(1);
        let a = losses(&moe_cfg(), 5, true);
        let b = losses(&moe_cfg(), 5, true);
        let bits = |s: &[StepStats]| s.iter().map(|s| (s.loss.to_bits(), s.grad_norm.to_bits())).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b));
    }

    /// The same seeded steps with faults from a config's `[run.faults]` table.
    fn faulty(cfg: &LmConfig, faults_toml: &str, steps: u64) -> Vec<StepStats> {
        let text = format!("[[run]]\nname = \"a\"\nworkload = \"lm\"\nsteps = 10\n[run.moe]\nexperts = 4\nlayers = [0]\n[run.faults]\n{faults_toml}\n");
        let run = crate::config::SessionConfig::from_str(&text, std::path::Path::new("f.toml")).unwrap().runs.remove(0);
        let corpus = Corpus::load(&cfg.data, 3).unwrap();
        let mut trainer = {
            let _init = determinism::seeded_init(3);
            Trainer::new(cfg, Device::Cpu, true).unwrap()
        };
        let injector = FaultInjector::new(&run);
        let mut rng = SplitMix64::new(3);
        (1..=steps)
            .map(|step| {
                let (x, y) = corpus.batch(&mut rng, cfg.batch_size, cfg.model.seq_len, Device::Cpu);
                trainer.step(&x, &y, injector.lr(step, 1e-3), step, &injector)
            })
            .collect()
    }

    #[test]
    fn fault_knobs_change_the_metrics_they_target() {
        tch::set_num_threads(1);
        let cfg = moe_cfg();
        let clean = losses(&cfg, 3, true);
        let scaled = faulty(&cfg, "grad_scale = { at = 3, factor = 1000.0 }", 3);
        assert_eq!(scaled[1].grad_norm.to_bits(), clean[1].grad_norm.to_bits(), "nothing before the onset");
        let ratio = scaled[2].grad_norm / clean[2].grad_norm;
        assert!((ratio - 1000.0).abs() < 1.0, "grad norm x1000: {ratio}");
        let nan = faulty(&cfg, "nan_at = 2", 2);
        assert!(nan[0].loss.is_finite() && nan[1].loss.is_nan());
        let collapsed = faulty(&cfg, "router_collapse_at = 2", 2);
        let load = |s: &StepStats, e: usize| s.extra.iter().find(|(k, _)| *k == format!("moe/L0/load/E{e}")).unwrap().1;
        assert!(load(&collapsed[0], 0) < 0.9);
        assert!((load(&collapsed[1], 0) + load(&collapsed[1], 1) - 1.0).abs() < 1e-6, "every choice on experts 0 and 1");
    }
}
