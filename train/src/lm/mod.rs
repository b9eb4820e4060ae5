//! Workload `lm`: a small decoder-only transformer trained on bytes with AdamW,
//! linear warm-up then cosine decay, and global gradient-norm clipping.
use anyhow::{Context, Result};
use tch::nn;
use tch::{Kind, Tensor};

use rlmon::config::faults::FaultConfig;
use rlmon::config::{LmConfig, OptimizerConfig};
use rlmon::metrics::dimensionality::Dimensionality;
use rlmon::metrics::flops;
use rlmon::metrics::{catalog, MetricName};
use crate::common::data::Corpus;
use crate::common::model::{ForwardOptions, TransformerLm};
use crate::common::moe;
use crate::common::optim::{adamw, clip_gradients, AdamW};
use crate::driver::{Setup, StepTiming, Trainer};
use crate::faults::FaultInjector;
use rlmon::workload::rng::SplitMix64;

/// One optimisation step's observations.
#[derive(Debug, Clone)]
pub struct StepStats {
    pub loss: f64,
    /// Global L2 norm of the gradients before clipping.
    pub grad_norm: f64,
    /// MoE routing and representation metrics, when the run has them.
    pub extra: Vec<(MetricName, f64)>,
}

/// Model, parameters, optimizer and data of one run.
pub struct LmTrainer {
    cfg: LmConfig,
    // Keeps the parameters alive; the optimizer and model refer to them.
    vs: nn::VarStore,
    model: TransformerLm,
    opt: AdamW,
    corpus: Corpus,
    /// The order of training windows, fixed by the seed.
    data_rng: SplitMix64,
}

impl Trainer for LmTrainer {
    type Config = LmConfig;
    type Prepared = Corpus;
    type Stats = StepStats;

    fn prepare(cfg: &LmConfig, setup: &Setup) -> Result<Corpus> {
        let corpus = Corpus::load(&cfg.data, setup.seed).context("loading training text")?;
        corpus.check_fits(cfg.model.seq_len)?;
        Ok(corpus)
    }

    fn setup(cfg: &LmConfig, corpus: Corpus, setup: &Setup) -> Result<Self> {
        let vs = nn::VarStore::new(setup.device);
        let model = TransformerLm::new(&vs.root(), &cfg.model, cfg.moe.as_ref()).deterministic(setup.deterministic);
        let opt = adamw(&vs, &cfg.optimizer);
        Ok(LmTrainer { cfg: cfg.clone(), vs, model, opt, corpus, data_rng: SplitMix64::new(setup.seed) })
    }

    fn optimizer(&self) -> &OptimizerConfig {
        &self.cfg.optimizer
    }

    /// The next window batch, then forward, backward, clip, update.
    fn step(&mut self, step: u64, lr: f64, faults: &FaultInjector) -> StepStats {
        let (inputs, targets) =
            self.corpus.batch(&mut self.data_rng, self.cfg.batch_size, self.cfg.model.seq_len, self.vs.device());
        self.step_on(&inputs, &targets, lr, step, faults)
    }

    fn loss(stats: &StepStats) -> f64 {
        stats.loss
    }

    fn metrics(&self, stats: StepStats, timing: StepTiming) -> Vec<(MetricName, f64)> {
        let tokens = (self.cfg.batch_size * self.cfg.model.seq_len) as f64;
        let mut values: Vec<(MetricName, f64)> = vec![
            (catalog::LOSS.into(), stats.loss),
            (catalog::LR.into(), timing.lr),
            (catalog::GRAD_NORM.into(), stats.grad_norm),
            (catalog::TOKENS.into(), tokens),
            (catalog::SAMPLES.into(), self.cfg.batch_size as f64),
            (catalog::STEP_TIME_S.into(), timing.step_time_s),
            (catalog::MODEL_FLOPS.into(), flops::lm_step(&self.cfg.model, self.cfg.moe.as_ref(), self.cfg.batch_size)),
        ];
        values.extend(stats.extra);
        values
    }
}

impl LmTrainer {
    #[cfg(test)]
    pub fn parameter_count(&self) -> i64 {
        self.vs.trainable_variables().iter().map(Tensor::numel).map(|n| n as i64).sum()
    }

    /// Forward, backward, clip, update on one batch at learning rate `lr` (faults
    /// already applied to it), with the run's other faults.
    fn step_on(&mut self, inputs: &Tensor, targets: &Tensor, lr: f64, step: u64, faults: &FaultInjector) -> StepStats {
        faults.perturb_weights(step, &self.vs);
        self.opt.set_lr(lr);
        let collapse = FaultConfig::active(faults.cfg.router_collapse_at, step);
        let keep_hidden: &[usize] = match &self.cfg.ndt {
            Some(n) if step % n.every == 0 => &n.layers,
            _ => &[],
        };
        let out = self.model.forward_with(inputs, ForwardOptions { collapse_router: collapse, keep_hidden });
        let lm_loss = faults.loss(step, self.model.cross_entropy(&out.logits, targets));
        let mut extra = Vec::new();
        let mut objective = lm_loss.shallow_clone();
        if let (Some(moe), false) = (&self.cfg.moe, out.routing.is_empty()) {
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
        let grad_norm = clip_gradients(&self.vs, self.cfg.optimizer.grad_clip);
        self.opt.step();
        if !collapse {
            for ((_, moe), (_, routing)) in self.model.moe_layers().zip(&out.routing) {
                moe.update_bias(&routing.loads);
            }
        }
        extra.extend(dimensionality_metrics(&out.hidden));
        StepStats { loss: lm_loss.double_value(&[]), grad_norm, extra }
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
    use rlmon::config::{DataSource, ModelConfig, MoeConfig, NdtConfig, DEFAULT_OPTIMIZER};
    use crate::common::schedule;
    use crate::determinism;
    use tch::Device;

    fn tiny() -> LmConfig {
        LmConfig {
            model: ModelConfig { layers: 1, d_model: 32, heads: 2, seq_len: 16, vocab: 256 },
            optimizer: rlmon::config::OptimizerConfig { warmup_steps: 2, ..DEFAULT_OPTIMIZER },
            batch_size: 8,
            data: DataSource::Synthetic,
            moe: None,
            ndt: None,
        }
    }

    /// A trainer on the CPU whose data order and (seeded) weights follow `seed`, set
    /// up as the driver does it.
    fn cpu_trainer(cfg: &LmConfig, seed: u64, deterministic: bool) -> LmTrainer {
        let setup = Setup { device: Device::Cpu, seed, deterministic };
        let corpus = LmTrainer::prepare(cfg, &setup).unwrap();
        let _init = determinism::seeded_init(seed);
        LmTrainer::setup(cfg, corpus, &setup).unwrap()
    }

    #[test]
    fn the_counted_flops_are_two_per_matmul_weight_of_the_built_model() {
        // The weights a token's forward pass multiplies by: every trainable tensor
        // but the position embedding (a lookup) and the LayerNorms' gains and biases
        // (the tied token embedding is the output head). The MoE layer holds four
        // experts of which top_k = 2 run for each token.
        for cfg in [tiny(), moe_cfg()] {
            let trainer = cpu_trainer(&cfg, 0, false);
            let m = cfg.model;
            let norms = (2 * m.layers + 1) * 2 * m.d_model;
            let mut weights = (trainer.parameter_count() as usize - m.seq_len * m.d_model - norms) as f64;
            if let Some(moe) = &cfg.moe {
                let expert = 2 * m.d_model * (4 * m.d_model / moe.top_k);
                weights -= ((moe.experts - moe.top_k) * expert * moe.layers.len()) as f64;
            }
            let attention = 4.0 * (m.layers * m.seq_len * m.d_model) as f64;
            assert_eq!(flops::forward_per_token(&m, cfg.moe.as_ref(), m.seq_len), 2.0 * weights + attention, "{cfg:?}");
        }
    }

    #[test]
    fn a_few_steps_on_cpu_lower_the_loss() {
        tch::set_num_threads(1);
        let cfg = tiny();
        let mut trainer = cpu_trainer(&cfg, 0, false);
        assert!(trainer.parameter_count() > 10_000);
        let mut losses = vec![];
        for step in 1..=40 {
            let stats = trainer.step(step, schedule::lr_at(&cfg.optimizer, step, 40), &FaultInjector::none());
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
        let mut trainer = cpu_trainer(cfg, 3, deterministic);
        (1..=steps).map(|step| trainer.step(step, 1e-3, &FaultInjector::none())).collect()
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
        let run = rlmon::config::SessionConfig::from_str(&text, std::path::Path::new("f.toml")).unwrap().runs.remove(0);
        let mut trainer = cpu_trainer(cfg, 3, true);
        let injector = FaultInjector::new(&run);
        (1..=steps).map(|step| trainer.step(step, injector.lr(step, 1e-3), &injector)).collect()
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

    /// The CUDA path for real where a GPU exists (tests/cuda.rs runs it through
    /// rlmon too); elsewhere it says it skipped.
    #[test]
    fn lm_trains_on_cuda_when_available() {
        if !tch::Cuda::is_available() {
            eprintln!("skipped: CUDA not available on this machine (libtorch_cuda loaded, no GPU or driver)");
            return;
        }
        let cfg = LmConfig {
            model: ModelConfig { layers: 1, d_model: 64, heads: 4, seq_len: 32, vocab: 256 },
            optimizer: DEFAULT_OPTIMIZER,
            batch_size: 8,
            data: DataSource::Synthetic,
            // MoE routing and the dimensionality SVD run on the GPU too.
            moe: Some(MoeConfig { experts: 4, top_k: 2, layers: vec![0], capacity_factor: 1.25, aux_loss_coef: 0.01, z_loss_coef: 0.001, bias_balancing: 0.0 }),
            ndt: Some(NdtConfig { every: 10, layers: vec![0] }),
        };
        let setup = Setup { device: Device::Cuda(0), seed: 0, deterministic: true };
        let corpus = LmTrainer::prepare(&cfg, &setup).unwrap();
        let mut trainer = LmTrainer::setup(&cfg, corpus, &setup).unwrap();
        let mut first = None;
        let mut last = 0.0;
        let faults = FaultInjector::none();
        for step in 1..=30 {
            let stats = trainer.step(step, 3e-3, &faults);
            assert!(stats.extra.iter().any(|(n, _)| n == "moe/L0/load/E0"));
            last = stats.loss;
            first.get_or_insert(last);
        }
        assert!(last < first.unwrap() - 0.5, "loss fell on CUDA: {first:?} -> {last}");
    }
}
