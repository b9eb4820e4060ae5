//! Detector settings: built-in defaults that work without tuning, and per-run
//! overrides from the config's `[run.health.<kind>]` tables.
use std::collections::BTreeMap;

use super::AlertKind;
use crate::metrics::catalog;

/// The settings of one alert kind. `warn` and `critical` are in the kind's own
/// unit (see [`defaults`]); `warmup` counts points before the detector may alert,
/// `persistence` consecutive anomalous points before it does, `cooldown` clear
/// points before it may alert again.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KindSettings {
    pub enabled: bool,
    pub warn: f64,
    pub critical: f64,
    pub warmup: u32,
    pub persistence: u32,
    pub cooldown: u32,
    /// Points the detector's reference window holds.
    pub window: usize,
    /// The metric watched, when the kind watches one (`loss` for loss_spike).
    pub metric: Option<String>,
}

/// Overrides as written in a config; `None` keeps the default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KindOverride {
    pub enabled: Option<bool>,
    pub warn: Option<f64>,
    pub critical: Option<f64>,
    pub warmup: Option<u32>,
    pub persistence: Option<u32>,
    pub cooldown: Option<u32>,
    pub window: Option<usize>,
    pub metric: Option<String>,
}

fn k(warn: f64, critical: f64, warmup: u32, persistence: u32, cooldown: u32, window: usize, metric: Option<&str>) -> KindSettings {
    KindSettings { enabled: true, warn, critical, warmup, persistence, cooldown, window, metric: metric.map(str::to_owned) }
}

/// The built-in settings of a kind, with the meaning of its thresholds.
pub fn defaults(kind: AlertKind) -> KindSettings {
    use AlertKind::*;
    match kind {
        // Ratio of the value to its trailing median (on top of a robust z-score of 4
        // on the log scale). Two anomalous steps in a row: a one-step bump that
        // recovers is reported as info only.
        LossSpike => k(1.4, 3.0, 20, 2, 20, 100, Some(catalog::LOSS)),
        GradExplosion => k(2.5, 10.0, 20, 2, 20, 100, Some(catalog::GRAD_NORM)),
        KlSpike => k(3.0, 10.0, 20, 2, 20, 100, Some(catalog::KL)),
        // Ratio of the recent median to the trailing median, below which gradients vanish.
        GradVanishing => k(0.01, 1e-4, 20, 5, 20, 100, Some(catalog::GRAD_NORM)),
        // Smoothed loss over its best smoothed value since warm-up, while rising.
        LossDivergence => k(1.5, 3.0, 50, 5, 50, 20, Some(catalog::LOSS)),
        // Recent KL level over its median of the last `window` points, while rising.
        KlRunaway => k(2.0, 5.0, 50, 5, 50, 200, Some(catalog::KL)),
        // Growth of response length between the two halves of the window, while
        // reward rises, entropy falls and KL accelerates.
        RewardHacking => k(1.15, 1.5, 60, 5, 60, 60, Some(catalog::REWARD)),
        // Recent reward_std over its trailing median, with reward at its ceiling.
        RewardSaturation => k(0.15, 0.03, 40, 5, 50, 100, Some(catalog::REWARD)),
        // Recent entropy over its level `window` points ago.
        EntropyCollapse => k(0.3, 0.1, 30, 3, 50, 150, Some(catalog::ENTROPY)),
        // Points until the memory trend reaches the total.
        MemoryLeak => k(5000.0, 500.0, 60, 5, 200, 60, None),
        // Effective experts exp(H)/N of one MoE layer. A fresh router is unbalanced
        // for tens of steps (the lm MoE workload: 40-55% effective experts around
        // step 20) before its balancing (aux loss or bias) takes hold: the detector
        // also waits out `moe::ROUTER_WARMUP_STEPS` training steps.
        ExpertCollapse => k(0.5, 0.25, 20, 5, 50, 0, None),
        // Recent throughput over its trailing median.
        ThroughputRegression => k(0.7, 0.4, 20, 2, 30, 100, Some(catalog::TOKENS_PER_S)),
        // Always critical, at the step it happens.
        Nonfinite => k(0.0, 0.0, 0, 1, 50, 0, None),
        // Consecutive disagreeing steps between two runs (divergence.rs's `k`);
        // `warn` is the relative tolerance.
        Nondeterminism => k(1e-4, 1e-2, 0, 3, u32::MAX, 0, None),
        RunDivergence => k(0.05, 0.2, 0, 3, u32::MAX, 0, None),
        // A loss (and the reward) drifting the wrong way over the long horizon
        // (detect/drift.rs): `warn` is the rise of a positive loss's level over its
        // best (0.1 = 10%), or for a reward or signed loss the share of its
        // improvement lost; `critical` the share of the improvement undone.
        SlowDrift => k(0.1, 0.5, 50, 1, 1000, 0, Some(catalog::LOSS)),
        // How much slower a job's slowest rank is than its fastest (1 - slow/fast
        // of their median speeds over `window` points), judged per step all ranks
        // logged; a straggler is a warning (`critical` 1.0: never reached).
        RankStraggler => k(0.05, 1.0, 5, 5, 20, 10, Some(catalog::TOKENS_PER_S)),
        // Not a detector: the script's own alerts, raised as the script says.
        Script => k(0.0, 0.0, 0, 1, 0, 0, None),
    }
}

/// Every kind's settings for one run. Serialized into a snapshot's metadata, so a
/// replay judges with the settings the live session had.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(from = "BTreeMap<AlertKind, KindSettings>", into = "BTreeMap<AlertKind, KindSettings>")]
pub struct HealthConfig {
    kinds: BTreeMap<AlertKind, KindSettings>,
}

/// A recorded map may lack kinds added since it was written: those get defaults.
impl From<BTreeMap<AlertKind, KindSettings>> for HealthConfig {
    fn from(recorded: BTreeMap<AlertKind, KindSettings>) -> Self {
        let mut c = HealthConfig::default();
        c.kinds.extend(recorded);
        c
    }
}

impl From<HealthConfig> for BTreeMap<AlertKind, KindSettings> {
    fn from(c: HealthConfig) -> Self {
        c.kinds
    }
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig { kinds: AlertKind::ALL.into_iter().map(|k| (k, defaults(k))).collect() }
    }
}

impl HealthConfig {
    pub fn get(&self, kind: AlertKind) -> &KindSettings {
        &self.kinds[&kind]
    }

    pub fn apply(&mut self, kind: AlertKind, o: &KindOverride) {
        let s = self.kinds.get_mut(&kind).expect("every kind has settings");
        if let Some(v) = o.enabled {
            s.enabled = v;
        }
        if let Some(v) = o.warn {
            s.warn = v;
        }
        if let Some(v) = o.critical {
            s.critical = v;
        }
        if let Some(v) = o.warmup {
            s.warmup = v;
        }
        if let Some(v) = o.persistence {
            s.persistence = v.max(1);
        }
        if let Some(v) = o.cooldown {
            s.cooldown = v;
        }
        if let Some(v) = o.window {
            s.window = v;
        }
        if let Some(v) = &o.metric {
            s.metric = Some(v.clone());
        }
    }
}
