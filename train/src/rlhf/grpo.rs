//! GRPO: each prompt is answered `group_size` times; a response's advantage is its
//! reward relative to its group, the same for all its tokens. No value head. The KL
//! penalty enters the loss per token (DeepSeekMath).
use tch::Tensor;

use super::kl;
use super::ppo::{clipped_surrogate, masked_mean, Surrogate};
use rlmon::config::KlEstimator;

/// Added to the group's standard deviation, as in TRL, so that near-identical rewards
/// do not blow up.
const STD_EPS: f64 = 1e-4;
/// A group whose rewards spread less than this carries no learning signal.
const ZERO_STD: f64 = 1e-8;

/// `(reward - group mean) / (group std + eps)` with the sample standard deviation;
/// consecutive runs of `group_size` rewards form a group. Also returns the fraction of
/// groups whose rewards are all equal.
pub fn group_advantages(rewards: &[f64], group_size: usize) -> (Vec<f64>, f64) {
    let mut advantages = Vec::with_capacity(rewards.len());
    let mut flat_groups = 0;
    let groups = rewards.chunks(group_size);
    let n_groups = groups.len();
    for group in groups {
        let n = group.len() as f64;
        let mean = group.iter().sum::<f64>() / n;
        let var = group.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        let std = var.sqrt();
        if std < ZERO_STD {
            flat_groups += 1;
        }
        advantages.extend(group.iter().map(|r| (r - mean) / (std + STD_EPS)));
    }
    (advantages, flat_groups as f64 / n_groups.max(1) as f64)
}

/// The KL term of the loss.
#[derive(Debug, Clone, Copy)]
pub struct KlPenalty {
    pub coef: f64,
    pub estimator: KlEstimator,
}

/// Surrogate with per-response advantages `[batch, 1]`, plus the penalty's
/// coefficient times the per-token KL of the current policy from the reference.
pub fn loss(logp: &Tensor, old_logp: &Tensor, ref_logp: &Tensor, advantages: &Tensor, mask: &Tensor, clip: f64, penalty: KlPenalty) -> Surrogate {
    let mut s = clipped_surrogate(logp, old_logp, advantages, mask, clip);
    if penalty.coef > 0.0 {
        s.loss += masked_mean(&kl::per_token(logp, ref_logp, penalty.estimator), mask) * penalty.coef;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advantages_are_relative_to_the_group() {
        // Group 1: mean 0.5, sample std sqrt(1/3); group 2: all equal.
        let (adv, flat) = group_advantages(&[0.0, 1.0, 0.0, 1.0, 0.3, 0.3, 0.3, 0.3], 4);
        let std = (1.0f64 / 3.0).sqrt() + STD_EPS;
        assert!((adv[0] + 0.5 / std).abs() < 1e-12 && (adv[1] - 0.5 / std).abs() < 1e-12, "{adv:?}");
        assert!(adv[4..].iter().all(|&a| a == 0.0), "no signal from a flat group");
        assert_eq!(flat, 0.5);
        let sum: f64 = adv[..4].iter().sum();
        assert!(sum.abs() < 1e-12, "advantages of a group sum to zero");
    }

    #[test]
    fn kl_term_is_added_only_with_a_coefficient() {
        let mask = Tensor::from_slice(&[1.0f32, 1.0]);
        let logp = Tensor::from_slice(&[-1.0f32, -2.0]);
        let ref_logp = Tensor::from_slice(&[-1.5f32, -1.0]);
        let adv = Tensor::from_slice(&[0.0f32, 0.0]);
        let penalty = |coef| KlPenalty { coef, estimator: KlEstimator::K1 };
        let without = loss(&logp, &logp, &ref_logp, &adv, &mask, 0.2, penalty(0.0));
        assert_eq!(without.loss.double_value(&[]), 0.0);
        let with = loss(&logp, &logp, &ref_logp, &adv, &mask, 0.2, penalty(2.0));
        // k1 = logp - ref_logp = (0.5, -1.0): mean -0.25, times 2.
        assert!((with.loss.double_value(&[]) + 0.5).abs() < 1e-6);
    }
}
