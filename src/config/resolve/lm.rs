//! `workload = "lm"`: the model, optimizer, data, MoE and dimensionality tables.
//! The model and optimizer resolvers serve rlhf too.
use std::path::Path;

use crate::config::checker::{Checker, Seg};
use crate::config::error::ConfigError;
use crate::config::raw::{RawData, RawDataSource, RawModel, RawMoe, RawNdt, RawOptimizer, RawRun};
use crate::config::resolved::lm::{
    DataSource, LmConfig, ModelConfig, MoeConfig, NdtConfig, OptimizerConfig, DEFAULT_AUX_LOSS_COEF, DEFAULT_CAPACITY_FACTOR, DEFAULT_MODEL,
    DEFAULT_MOE_TOP_K, DEFAULT_NDT_EVERY, DEFAULT_OPTIMIZER,
};

/// Routing to more experts than this is outside what the panes and tests cover.
const MAX_EXPERTS: u64 = 256;
/// Byte-level tokens need one id per byte value.
const MIN_VOCAB: usize = 256;

/// A run of `workload = "lm"`; `[run.rlhf]` is a mistake here. Takes the keys it
/// reads out of `raw`.
pub(super) fn resolve(c: &Checker, i: usize, raw: &mut RawRun, batch_size: usize, base_dir: &Path) -> Result<LmConfig, ConfigError> {
    if raw.rlhf.is_some() {
        return Err(c.err(&[Seg::Key("run"), Seg::Index(i), Seg::Key("rlhf")], "[run.rlhf] applies to workload = \"rlhf\", not \"lm\""));
    }
    let model = resolve_model(c, i, raw.model.take().unwrap_or_default())?;
    Ok(LmConfig {
        model,
        optimizer: resolve_optimizer(c, i, raw.optimizer.take().unwrap_or_default(), DEFAULT_OPTIMIZER)?,
        batch_size,
        data: resolve_data(c, i, raw.data.take(), base_dir)?,
        moe: raw.moe.take().map(|m| resolve_moe(c, i, m, &model)).transpose()?,
        ndt: raw.ndt.take().map(|n| resolve_ndt(c, i, n, &model)).transpose()?,
    })
}

pub(super) fn resolve_model(c: &Checker, i: usize, raw: RawModel) -> Result<ModelConfig, ConfigError> {
    let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key("model"), Seg::Key(key)];
    let d = DEFAULT_MODEL;
    let positive = |key: &'static str, v: Option<u64>, default: usize| -> Result<usize, ConfigError> {
        match v {
            None => Ok(default),
            Some(0) => Err(c.err(&at(key), format!("model.{key} must be at least 1"))),
            Some(v) => Ok(v as usize),
        }
    };
    let m = ModelConfig {
        layers: positive("layers", raw.layers, d.layers)?,
        d_model: positive("d_model", raw.d_model, d.d_model)?,
        heads: positive("heads", raw.heads, d.heads)?,
        seq_len: positive("seq_len", raw.seq_len, d.seq_len)?,
        vocab: positive("vocab", raw.vocab, d.vocab)?,
    };
    if !m.d_model.is_multiple_of(m.heads) {
        return Err(c.err(&at("heads"), format!("model.heads ({}) must divide model.d_model ({})", m.heads, m.d_model)));
    }
    if m.vocab < MIN_VOCAB {
        return Err(c.err(&at("vocab"), format!("model.vocab must be at least {MIN_VOCAB}: tokens are bytes")));
    }
    Ok(m)
}

/// `d` holds the workload's defaults for keys left out.
pub(super) fn resolve_optimizer(c: &Checker, i: usize, raw: RawOptimizer, d: OptimizerConfig) -> Result<OptimizerConfig, ConfigError> {
    let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key("optimizer"), Seg::Key(key)];
    let o = OptimizerConfig {
        lr: raw.lr.unwrap_or(d.lr),
        betas: raw.betas.unwrap_or(d.betas),
        weight_decay: raw.weight_decay.unwrap_or(d.weight_decay),
        warmup_steps: raw.warmup_steps.unwrap_or(d.warmup_steps),
        grad_clip: raw.grad_clip.unwrap_or(d.grad_clip),
        min_lr_ratio: raw.min_lr_ratio.unwrap_or(d.min_lr_ratio),
    };
    if !(o.lr.is_finite() && o.lr > 0.0) {
        return Err(c.err(&at("lr"), "optimizer.lr must be a positive number"));
    }
    if o.betas.iter().any(|b| !(0.0..1.0).contains(b)) {
        return Err(c.err(&at("betas"), "optimizer.betas must both be in [0, 1)"));
    }
    if !(o.weight_decay.is_finite() && o.weight_decay >= 0.0) {
        return Err(c.err(&at("weight_decay"), "optimizer.weight_decay must be zero or positive"));
    }
    if !(o.grad_clip.is_finite() && o.grad_clip > 0.0) {
        return Err(c.err(&at("grad_clip"), "optimizer.grad_clip must be a positive number"));
    }
    if !(0.0..=1.0).contains(&o.min_lr_ratio) {
        return Err(c.err(&at("min_lr_ratio"), "optimizer.min_lr_ratio must be in [0, 1]"));
    }
    Ok(o)
}

fn resolve_data(c: &Checker, i: usize, raw: Option<RawData>, base_dir: &Path) -> Result<DataSource, ConfigError> {
    let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key("data"), Seg::Key(key)];
    let Some(raw) = raw else { return Ok(DataSource::Synthetic) };
    match (raw.source, raw.path) {
        (RawDataSource::Synthetic, None) => Ok(DataSource::Synthetic),
        (RawDataSource::Synthetic, Some(_)) => {
            Err(c.err(&at("path"), "data.path is only used with source = \"text\""))
        }
        (RawDataSource::Text, None) => {
            Err(c.err(&at("source"), "source = \"text\" needs data.path (a text file or a folder of them)"))
        }
        (RawDataSource::Text, Some(p)) => {
            let resolved = base_dir.join(&p);
            if !resolved.exists() {
                return Err(c.err(&at("path"), format!("data.path `{}` does not exist", resolved.display())));
            }
            Ok(DataSource::Text(resolved))
        }
    }
}

fn resolve_moe(c: &Checker, i: usize, raw: RawMoe, model: &ModelConfig) -> Result<MoeConfig, ConfigError> {
    let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key("moe"), Seg::Key(key)];
    if !(2..=MAX_EXPERTS).contains(&raw.experts) {
        return Err(c.err(&at("experts"), format!("moe.experts must be between 2 and {MAX_EXPERTS}")));
    }
    let top_k = raw.top_k.unwrap_or(DEFAULT_MOE_TOP_K.min(raw.experts));
    if top_k == 0 || top_k > raw.experts {
        return Err(c.err(&at("top_k"), format!("moe.top_k must be between 1 and experts ({})", raw.experts)));
    }
    let non_negative = |key: &'static str, v: Option<f64>, default: f64| -> Result<f64, ConfigError> {
        match v.unwrap_or(default) {
            v if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(c.err(&at(key), format!("moe.{key} must be zero or positive"))),
        }
    };
    let capacity_factor = raw.capacity_factor.unwrap_or(DEFAULT_CAPACITY_FACTOR);
    if !(capacity_factor.is_finite() && capacity_factor > 0.0) {
        return Err(c.err(&at("capacity_factor"), "moe.capacity_factor must be positive (1.0 = exactly the fair share)"));
    }
    Ok(MoeConfig {
        experts: raw.experts as usize,
        top_k: top_k as usize,
        layers: layer_list(c, &at("layers"), "moe.layers", raw.layers, model.layers)?,
        capacity_factor,
        aux_loss_coef: non_negative("aux_loss_coef", raw.aux_loss_coef, DEFAULT_AUX_LOSS_COEF)?,
        z_loss_coef: non_negative("z_loss_coef", raw.z_loss_coef, 0.0)?,
        bias_balancing: non_negative("bias_balancing", raw.bias_balancing, 0.0)?,
    })
}

fn resolve_ndt(c: &Checker, i: usize, raw: RawNdt, model: &ModelConfig) -> Result<NdtConfig, ConfigError> {
    let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key("ndt"), Seg::Key(key)];
    let every = raw.every.unwrap_or(DEFAULT_NDT_EVERY);
    if every == 0 {
        return Err(c.err(&at("every"), "ndt.every must be at least 1"));
    }
    Ok(NdtConfig { every, layers: layer_list(c, &at("layers"), "ndt.layers", raw.layers, model.layers)? })
}

/// A list of layer indices: each below `layers`, no repeats; sorted.
fn layer_list(c: &Checker, segs: &[Seg], key: &str, list: Option<Vec<u64>>, layers: usize) -> Result<Vec<usize>, ConfigError> {
    let Some(mut list) = list else { return Ok((0..layers).collect()) };
    if list.is_empty() {
        return Err(c.err(segs, format!("{key} must name at least one layer")));
    }
    list.sort_unstable();
    if let Some(bad) = list.iter().find(|l| **l as usize >= layers) {
        return Err(c.err(segs, format!("{key}: layer {bad} does not exist (the model has {layers} layers, numbered from 0)")));
    }
    if list.windows(2).any(|w| w[0] == w[1]) {
        return Err(c.err(segs, format!("{key} names a layer twice")));
    }
    Ok(list.into_iter().map(|l| l as usize).collect())
}
