//! AdamW as every built-in workload configures it, and global gradient-norm clipping.
use anyhow::{Context, Result};
use tch::nn::{self, OptimizerConfig as _};
use tch::{Kind, Tensor};

use super::model::NO_DECAY_GROUP;
use rlmon::config::OptimizerConfig;

const ADAM_EPS: f64 = 1e-8;

/// AdamW over `vs` at `o.lr`, with no weight decay on LayerNorm gains and biases.
pub fn adamw(vs: &nn::VarStore, o: &OptimizerConfig) -> Result<nn::Optimizer> {
    let mut opt = nn::AdamW { beta1: o.betas[0], beta2: o.betas[1], wd: o.weight_decay, eps: ADAM_EPS, amsgrad: false }
        .build(vs, o.lr)
        .context("building AdamW")?;
    opt.set_weight_decay_group(NO_DECAY_GROUP, 0.0);
    Ok(opt)
}

/// Scales gradients so that their global L2 norm is at most `max_norm`; returns the
/// norm before clipping.
pub fn clip_gradients(vs: &nn::VarStore, max_norm: f64) -> f64 {
    tch::no_grad(|| {
        let grads: Vec<Tensor> = vs.trainable_variables().iter().map(Tensor::grad).filter(Tensor::defined).collect();
        if grads.is_empty() {
            return 0.0;
        }
        let norms: Vec<Tensor> = grads.iter().map(|g| g.norm().to_kind(Kind::Float)).collect();
        let total = Tensor::stack(&norms, 0).norm().double_value(&[]);
        let coef = max_norm / (total + 1e-6);
        if total.is_finite() && coef < 1.0 {
            for mut g in grads {
                let _ = g.g_mul_scalar_(coef);
            }
        }
        total
    })
}
