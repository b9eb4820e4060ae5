//! PPO: generalised advantage estimation over response tokens, the clipped surrogate
//! objective (shared with GRPO) and the clipped value loss. The per-token reward is
//! `-kl_coef * kl_t`, plus the response's score on its last token.
use tch::{Kind, Tensor};

/// GAE for one response of `rewards.len()` tokens. `values[t]` is the value of the
/// state before token t; the response ends after its last token (value 0 there).
/// Returns (advantages, returns = advantages + values).
pub fn gae(rewards: &[f64], values: &[f64], gamma: f64, lambda: f64) -> (Vec<f64>, Vec<f64>) {
    let n = rewards.len();
    let mut advantages = vec![0.0; n];
    let mut running = 0.0;
    for t in (0..n).rev() {
        let next_value = if t + 1 < n { values[t + 1] } else { 0.0 };
        let delta = rewards[t] + gamma * next_value - values[t];
        running = delta + gamma * lambda * running;
        advantages[t] = running;
    }
    let returns = advantages.iter().zip(values).map(|(a, v)| a + v).collect();
    (advantages, returns)
}

/// GAE for a padded batch: row-major `[rows, width]` rewards and values, each row
/// valid for its first `lengths[row]` tokens; padding gets advantage and return 0.
pub fn gae_batch(rewards: &[f64], values: &[f64], lengths: &[usize], width: usize, gamma: f64, lambda: f64) -> (Vec<f64>, Vec<f64>) {
    let mut advantages = vec![0.0; rewards.len()];
    let mut returns = vec![0.0; rewards.len()];
    for (row, &len) in lengths.iter().enumerate() {
        let span = row * width..row * width + len;
        let (a, r) = gae(&rewards[span.clone()], &values[span.clone()], gamma, lambda);
        advantages[span.clone()].copy_from_slice(&a);
        returns[span].copy_from_slice(&r);
    }
    (advantages, returns)
}

/// Mean of `x` over the positions where `mask` is 1.
pub fn masked_mean(x: &Tensor, mask: &Tensor) -> Tensor {
    (x * mask).sum(Kind::Float) / mask.sum(Kind::Float).clamp_min(1.0)
}

/// Zero mean, unit variance over the masked positions (padding stays 0).
pub fn whiten(x: &Tensor, mask: &Tensor) -> Tensor {
    let mean = masked_mean(x, mask);
    let var = masked_mean(&(x - &mean).square(), mask);
    (x - mean) * (var + 1e-8).rsqrt() * mask
}

/// Clipped surrogate loss and its diagnostics, over masked tokens.
pub struct Surrogate {
    pub loss: Tensor,
    /// Fraction of tokens where the clipped term is the one in effect.
    pub clip_frac: f64,
    /// KL between the policy that sampled and the current one: 0.5 mean (log ratio)^2.
    pub approx_kl: f64,
}

pub fn clipped_surrogate(logp: &Tensor, old_logp: &Tensor, advantages: &Tensor, mask: &Tensor, clip: f64) -> Surrogate {
    let log_ratio = logp - old_logp;
    let ratio = log_ratio.exp();
    let unclipped = -advantages * &ratio;
    let clipped = -advantages * ratio.clamp(1.0 - clip, 1.0 + clip);
    let loss = masked_mean(&unclipped.maximum(&clipped), mask);
    let (clip_frac, approx_kl) = tch::no_grad(|| {
        let frac = masked_mean(&clipped.gt_tensor(&unclipped).to_kind(Kind::Float), mask);
        let akl = masked_mean(&log_ratio.square(), mask) * 0.5;
        (frac.double_value(&[]), akl.double_value(&[]))
    });
    Surrogate { loss, clip_frac, approx_kl }
}

/// 0.5 (V - R)^2, with the new value kept within `clip` of the old one (whichever
/// loss is larger counts), over masked tokens.
pub fn value_loss(values: &Tensor, old_values: &Tensor, returns: &Tensor, mask: &Tensor, clip: f64) -> Tensor {
    let clipped = old_values + (values - old_values).clamp(-clip, clip);
    let loss = (values - returns).square().maximum(&(clipped - returns).square());
    masked_mean(&loss, mask) * 0.5
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn gae_matches_a_hand_computed_example() {
        // gamma 0.9, lambda 0.5, three tokens:
        // delta2 = 1 - 0.3 = 0.7                  A2 = 0.7
        // delta1 = 0 + 0.9*0.3 - 0.2 = 0.07       A1 = 0.07 + 0.45*0.7 = 0.385
        // delta0 = 0.5 + 0.9*0.2 - 0.1 = 0.58     A0 = 0.58 + 0.45*0.385 = 0.75325
        let (adv, ret) = gae(&[0.5, 0.0, 1.0], &[0.1, 0.2, 0.3], 0.9, 0.5);
        assert!(close(&adv, &[0.75325, 0.385, 0.7]), "{adv:?}");
        assert!(close(&ret, &[0.85325, 0.585, 1.0]), "{ret:?}");
        // lambda = 1, gamma = 1, zero values: the advantage is the reward-to-go.
        let (adv, _) = gae(&[1.0, 2.0, 3.0], &[0.0; 3], 1.0, 1.0);
        assert!(close(&adv, &[6.0, 5.0, 3.0]));
    }

    #[test]
    fn gae_batch_leaves_padding_at_zero() {
        let rewards = [0.5, 0.0, 1.0, 9.0, 2.0, 9.0, 9.0, 9.0];
        let values = [0.1, 0.2, 0.3, 9.0, 0.5, 9.0, 9.0, 9.0];
        let (adv, ret) = gae_batch(&rewards, &values, &[3, 1], 4, 0.9, 0.5);
        assert!(close(&adv[..4], &[0.75325, 0.385, 0.7, 0.0]));
        assert!(close(&adv[4..], &[1.5, 0.0, 0.0, 0.0]));
        assert!(close(&ret[4..], &[2.0, 0.0, 0.0, 0.0]));
    }

    #[test]
    fn surrogate_clips_large_ratios() {
        let mask = Tensor::from_slice(&[1.0f32, 1.0, 1.0, 0.0]);
        let old = Tensor::from_slice(&[0.0f32; 4]);
        // Ratios e^0, e^0.5, e^-0.5, (padding).
        let new = Tensor::from_slice(&[0.0f32, 0.5, -0.5, 3.0]);
        let adv = Tensor::from_slice(&[1.0f32, 1.0, -1.0, 1.0]);
        let s = clipped_surrogate(&new, &old, &adv, &mask, 0.2);
        // Token 1: min(1.6487, 1.2) = 1.2; token 2: -max(0.6065, 0.8) = -0.8.
        let want = -(1.0 + 1.2 - 0.8) / 3.0;
        assert!((s.loss.double_value(&[]) - want).abs() < 1e-5, "{}", s.loss.double_value(&[]));
        assert!((s.clip_frac - 2.0 / 3.0).abs() < 1e-6);
        assert!((s.approx_kl - 0.5 * 0.5 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn whitened_values_have_zero_mean_over_the_mask() {
        let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 100.0]);
        let mask = Tensor::from_slice(&[1.0f32, 1.0, 1.0, 0.0]);
        let w = Vec::<f32>::try_from(&whiten(&x, &mask)).unwrap();
        assert!((w[0] + w[2]).abs() < 1e-5 && w[1].abs() < 1e-5 && w[3] == 0.0, "{w:?}");
        let v = value_loss(&x, &x, &Tensor::from_slice(&[0.0f32; 4]), &mask, 0.2);
        assert!((v.double_value(&[]) - 0.5 * 14.0 / 3.0).abs() < 1e-4);
    }
}
