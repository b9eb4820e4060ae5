//! Model FLOPs and model FLOPs utilization (MFU): the arithmetic a training step
//! needs, counted from the model's shape, against the GPU's peak rate.
//!
//! Counted as PaLM's appendix B counts them (Chowdhery et al., 2022): a forward pass
//! costs 2 FLOPs per matmul weight per token, plus 4·T·d per layer per token for the
//! attention scores and their weighted sum (T the sequence length, d the model
//! width); a backward pass costs twice the forward. Embedding lookups, norms,
//! softmax and the optimizer are left out. Work a step repeats without need (the
//! rlhf sampler's re-reading of the prefix for each new token) is not counted: MFU
//! is the useful work over the peak, not the executed work.
use crate::config::{ModelConfig, MoeConfig};

/// FLOPs of one forward pass per token of a sequence of `seq_len` tokens through
/// rlmon's transformer (src/train/common/model.rs): per layer qkv (3d²) and the
/// output projection (d²), a dense 4d MLP (8d²) or, in an MoE layer, the router
/// (d·E) and `top_k` experts of width 4d/k each; the tied output head (d·V).
pub fn forward_per_token(model: &ModelConfig, moe: Option<&MoeConfig>, seq_len: usize) -> f64 {
    let d = model.d_model as f64;
    let mut weights = 0.0;
    for layer in 0..model.layers {
        weights += 4.0 * d * d;
        weights += match moe.filter(|m| m.layers.contains(&layer)) {
            Some(m) => {
                // The expert width of src/train/common/moe.rs.
                let hidden = (4 * model.d_model / m.top_k.max(1)).max(1) as f64;
                d * m.experts as f64 + m.top_k as f64 * 2.0 * d * hidden
            }
            None => 8.0 * d * d,
        };
    }
    weights += d * model.vocab as f64;
    2.0 * weights + 4.0 * model.layers as f64 * seq_len as f64 * d
}

/// Model FLOPs of one lm training step: forward and backward over
/// `batch_size` sequences of `model.seq_len` tokens.
pub fn lm_step(model: &ModelConfig, moe: Option<&MoeConfig>, batch_size: usize) -> f64 {
    let tokens = (batch_size * model.seq_len) as f64;
    3.0 * tokens * forward_per_token(model, moe, model.seq_len)
}

/// The shape of one rlhf step's work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RlhfStep {
    /// Sequences in the batch.
    pub batch: usize,
    /// Tokens per sequence, prompt and (padded) response.
    pub seq_len: usize,
    /// New tokens the sampler drew for each sequence (the longest response).
    pub generated: usize,
    /// Passes over the batch, each a forward and a backward.
    pub epochs: usize,
}

/// Model FLOPs of one rlhf step: sampling (one forward per drawn token), the
/// policy's and the reference's scoring of the sequences (a forward each), and
/// `epochs` training passes over them (forward and backward).
pub fn rlhf_step(model: &ModelConfig, s: RlhfStep) -> f64 {
    let per_token = forward_per_token(model, None, s.seq_len);
    let drawn = (s.batch * s.generated) as f64;
    let scored = (s.batch * s.seq_len) as f64;
    per_token * (drawn + 2.0 * scored + 3.0 * s.epochs as f64 * scored)
}

/// A GPU's peak float32 rate without tensor cores (dense, boost clock, FLOP/s), by
/// the name NVML gives it, from NVIDIA's datasheets. float32 because the training
/// worker computes in float32 and libtorch leaves TF32 off for matmuls by default.
/// `None` for a card not in the table.
pub fn peak_fp32_flops(gpu_name: &str) -> Option<f64> {
    // More specific names first: "A10" is in "A100", "L4" in "L40S", "H200" in "GH200".
    const PEAKS: &[(&str, f64)] = &[
        ("GH200", 67.0e12),
        ("H200", 66.9e12),
        ("H100 NVL", 60.0e12),
        ("H100 PCIe", 51.2e12),
        ("H100", 66.9e12),
        ("A100", 19.5e12),
        ("A10G", 31.2e12),
        ("A10", 31.2e12),
        ("L40S", 91.6e12),
        ("L40", 90.5e12),
        ("L4", 30.3e12),
        ("RTX 4090", 82.6e12),
        ("V100", 15.7e12),
        ("T4", 8.1e12),
    ];
    PEAKS.iter().find(|(key, _)| gpu_name.contains(key)).map(|(_, peak)| *peak)
}

/// Model FLOPs utilization: the fraction of `peak` that `model_flops_per_s` is.
pub fn mfu(model_flops_per_s: f64, peak: f64) -> Option<f64> {
    (model_flops_per_s.is_finite() && model_flops_per_s >= 0.0 && peak > 0.0).then(|| model_flops_per_s / peak)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(layers: usize, d_model: usize, seq_len: usize, vocab: usize) -> ModelConfig {
        ModelConfig { layers, d_model, heads: 4, seq_len, vocab }
    }

    #[test]
    fn a_dense_step_is_six_flops_per_weight_per_token_plus_attention() {
        // 2 layers of 12d² weights, head d·V: N = 2·12·128² + 128·256 = 425,984.
        let m = model(2, 128, 64, 256);
        let n = 2.0 * 12.0 * 128.0 * 128.0 + 128.0 * 256.0;
        let attention = 4.0 * 2.0 * 64.0 * 128.0;
        assert_eq!(forward_per_token(&m, None, 64), 2.0 * n + attention);
        assert_eq!(lm_step(&m, None, 16), 3.0 * 16.0 * 64.0 * (2.0 * n + attention));
    }

    #[test]
    fn an_moe_layer_counts_its_router_and_top_k_experts_only() {
        let m = model(2, 128, 64, 256);
        let moe = MoeConfig { experts: 8, top_k: 2, layers: vec![1], capacity_factor: 1.25, aux_loss_coef: 0.0, z_loss_coef: 0.0, bias_balancing: 0.0 };
        // Layer 1: router 128·8 and two experts of width 256 (2·128·256 each)
        // instead of the dense 8·128²: the same per-token work plus the router.
        let dense = forward_per_token(&m, None, 64);
        assert_eq!(forward_per_token(&m, Some(&moe), 64) - dense, 2.0 * 128.0 * 8.0);
        // Eight experts of which two run: the count does not grow with the experts.
        let wide = MoeConfig { experts: 64, ..moe.clone() };
        assert_eq!(forward_per_token(&m, Some(&wide), 64) - dense, 2.0 * 128.0 * 64.0);
    }

    #[test]
    fn an_rlhf_step_samples_scores_twice_and_trains_epochs_times() {
        let m = model(2, 64, 48, 256);
        let s = RlhfStep { batch: 32, seq_len: 40, generated: 24, epochs: 2 };
        let per_token = forward_per_token(&m, None, 40);
        assert_eq!(rlhf_step(&m, s), per_token * (32.0 * 24.0 + 2.0 * 32.0 * 40.0 + 6.0 * 32.0 * 40.0));
    }

    #[test]
    fn peaks_match_the_most_specific_name() {
        assert_eq!(peak_fp32_flops("NVIDIA H100 80GB HBM3"), Some(66.9e12));
        assert_eq!(peak_fp32_flops("NVIDIA H100 PCIe"), Some(51.2e12));
        assert_eq!(peak_fp32_flops("NVIDIA H200"), Some(66.9e12));
        assert_eq!(peak_fp32_flops("NVIDIA GH200 480GB"), Some(67.0e12));
        assert_eq!(peak_fp32_flops("NVIDIA A100-SXM4-80GB"), Some(19.5e12));
        assert_eq!(peak_fp32_flops("NVIDIA A10"), Some(31.2e12));
        assert_eq!(peak_fp32_flops("NVIDIA L40S"), Some(91.6e12));
        assert_eq!(peak_fp32_flops("NVIDIA L4"), Some(30.3e12));
        assert_eq!(peak_fp32_flops("Some Future GPU"), None);
    }

    #[test]
    fn mfu_is_the_fraction_of_the_peak() {
        assert_eq!(mfu(6.69e12, 66.9e12), Some(0.1));
        assert_eq!(mfu(1.0, 0.0), None);
        assert_eq!(mfu(f64::NAN, 1.0), None);
    }
}
