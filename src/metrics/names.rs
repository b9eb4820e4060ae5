//! Canonical metric names (design.md, "Metric names") and the aliases accepted on input.

/// A metric name as `&'static str`, each distinct name stored once per process, so
/// replaying a recorded session (millions of points over a few dozen names) clones
/// names for free instead of allocating one per point.
pub fn intern(name: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

pub const LOSS: &str = "loss";
pub const LR: &str = "lr";
pub const GRAD_NORM: &str = "grad_norm";
pub const TOKENS: &str = "tokens";
pub const SAMPLES: &str = "samples";
pub const STEP_TIME_S: &str = "step_time_s";
pub const TOKENS_PER_S: &str = "tokens_per_s";
pub const SAMPLES_PER_S: &str = "samples_per_s";
pub const MOE_AUX_LOSS: &str = "moe/aux_loss";

// RL fine-tuning (workload `rlhf`).
pub const REWARD: &str = "reward";
pub const REWARD_STD: &str = "reward_std";
/// The configured reward while a `reward_gaming_at` fault trains on the length reward:
/// the held-out score that stalls while the proxy `reward` climbs.
pub const REWARD_GOLD: &str = "reward_gold";
pub const KL: &str = "kl";
pub const KL_COEF: &str = "kl_coef";
pub const ENTROPY: &str = "entropy";
pub const CLIP_FRAC: &str = "clip_frac";
pub const APPROX_KL: &str = "approx_kl";
pub const RESPONSE_LEN: &str = "response_len";
pub const POLICY_LOSS: &str = "policy_loss";
pub const VALUE_LOSS: &str = "value_loss";
pub const FRAC_REWARD_ZERO_STD: &str = "frac_reward_zero_std";

/// `(alias, canonical)`; matching is exact (names are case-sensitive in every logger
/// rlmon reads). Aliases that need a conversion (`wall_time_ms`, cumulative
/// `num_tokens`) are listed in [`conversion`].
const ALIASES: &[(&str, &str)] = &[
    ("train_loss", LOSS),
    ("train/loss", LOSS),
    ("lm_loss", LOSS),
    ("learning_rate", LR),
    ("step_time", STEP_TIME_S),
    ("objective/kl", "kl"),
    ("kl_mean", "kl"),
    ("beta", "kl_coef"),
    ("objective/scores", "reward"),
    ("reward_mean", "reward"),
    ("rewards", "reward"),
    ("objective/entropy", "entropy"),
    ("entropy_mean", "entropy"),
    ("policy/clipfrac_avg", "clip_frac"),
    ("clip_ratio/region_mean", "clip_frac"),
    ("policy/approxkl_avg", "approx_kl"),
    ("completions/mean_length", "response_len"),
];

/// How an input field turns into a canonical metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Conversion {
    /// Same value under the canonical name.
    Rename(&'static str),
    /// Value times a factor (milliseconds to seconds).
    Scale(&'static str, f64),
    /// A running total: the metric is the difference from the previous value.
    Cumulative(&'static str),
}

/// The conversion for an input name, or `None` when the name is canonical or unknown
/// (unknown names are kept as metrics under their own name).
pub fn conversion(name: &str) -> Option<Conversion> {
    match name {
        "wall_time_ms" => Some(Conversion::Scale(STEP_TIME_S, 1e-3)),
        "num_tokens" => Some(Conversion::Cumulative(TOKENS)),
        _ => ALIASES.iter().find(|(alias, _)| *alias == name).map(|(_, c)| Conversion::Rename(c)),
    }
}

/// The canonical name of a metric (itself when it is not an alias).
pub fn canonical(name: &str) -> &str {
    match conversion(name) {
        Some(Conversion::Rename(c) | Conversion::Scale(c, _) | Conversion::Cumulative(c)) => c,
        None => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_map_to_canonical_names() {
        assert_eq!(canonical("train/loss"), "loss");
        assert_eq!(canonical("objective/kl"), "kl");
        assert_eq!(canonical("policy/approxkl_avg"), "approx_kl");
        assert_eq!(canonical("loss"), "loss");
        assert_eq!(canonical("my_custom_metric"), "my_custom_metric");
    }

    #[test]
    fn conversions_carry_their_arithmetic() {
        assert_eq!(conversion("wall_time_ms"), Some(Conversion::Scale("step_time_s", 1e-3)));
        assert_eq!(conversion("num_tokens"), Some(Conversion::Cumulative("tokens")));
        assert_eq!(conversion("loss"), None);
    }
}
