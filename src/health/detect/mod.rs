//! The detectors, one family per file. Each sees one run's points in step order,
//! keeps O(window) state, and returns what it raises at this point, if anything.
//! [`for_run`] is the one place that lists them.
pub mod moe;
pub mod nonfinite;
pub mod rl;
pub mod spike;
pub mod trend;

use crate::metrics::MetricName;

use super::config::{HealthConfig, KindSettings};
use super::stats::{Cooldown, Streak};
use super::{AlertKind, Severity};
use moe::ExpertCollapse;
use nonfinite::NonfiniteValues;
use rl::{EntropyCollapse, RewardHacking, RewardSaturation};
use spike::{Direction, Spike};
use trend::{KlRunaway, LossDivergence, ThroughputRegression, KL_FLOOR};

/// One alert kind's detector for one run.
pub trait Detector: std::fmt::Debug + Send {
    fn kind(&self) -> AlertKind;
    /// What this point raises, in a stable order: at most one alert for most
    /// kinds, one per MoE layer for expert collapse.
    fn observe(&mut self, p: &Point) -> Vec<Raised>;
}

/// The per-point detectors of one run, in the order their alerts come out of a
/// step; a disabled kind is left out. Memory leaks (fed by telemetry as well) and
/// the pair kinds (two runs) are watched by the monitors instead.
pub fn for_run(config: &HealthConfig) -> Vec<Box<dyn Detector>> {
    use AlertKind as K;
    let s = |kind| config.get(kind).clone();
    let all: Vec<Box<dyn Detector>> = vec![
        Box::new(NonfiniteValues::new(s(K::Nonfinite))),
        Box::new(Spike::new(K::LossSpike, s(K::LossSpike), Direction::Up, 0.0, "jumped")),
        Box::new(Spike::new(K::GradExplosion, s(K::GradExplosion), Direction::Up, 0.0, "exploded")),
        Box::new(Spike::new(K::KlSpike, s(K::KlSpike), Direction::Up, KL_FLOOR, "spiked")),
        Box::new(Spike::new(K::GradVanishing, s(K::GradVanishing), Direction::Down, 0.0, "vanished")),
        Box::new(LossDivergence::new(s(K::LossDivergence))),
        Box::new(KlRunaway::new(s(K::KlRunaway))),
        Box::new(RewardHacking::new(s(K::RewardHacking))),
        Box::new(RewardSaturation::new(s(K::RewardSaturation))),
        Box::new(EntropyCollapse::new(s(K::EntropyCollapse))),
        Box::new(ThroughputRegression::new(s(K::ThroughputRegression))),
        Box::new(ExpertCollapse::new(s(K::ExpertCollapse))),
    ];
    all.into_iter().filter(|d| config.get(d.kind()).enabled).collect()
}

/// One step's values, as detectors read them.
#[derive(Debug, Clone, Copy)]
pub struct Point<'a> {
    pub step: u64,
    pub time_s: f64,
    pub values: &'a [(MetricName, f64)],
}

impl Point<'_> {
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// What a detector raises; the run monitor adds the run, kind and time.
#[derive(Debug, Clone, PartialEq)]
pub struct Raised {
    pub severity: Severity,
    pub metric: String,
    pub step: u64,
    pub value: f64,
    pub message: String,
}

/// Severity for a value past `warn` (and `critical`), where "past" means below
/// the thresholds when `lower_is_worse`.
pub fn grade(value: f64, warn: f64, critical: f64, lower_is_worse: bool) -> Option<Severity> {
    let past = |t: f64| if lower_is_worse { value <= t } else { value >= t };
    if past(critical) {
        Some(Severity::Critical)
    } else if past(warn) {
        Some(Severity::Warn)
    } else {
        None
    }
}

/// Shared bookkeeping: points seen, warm-up, persistence and cooldown.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    seen: u64,
    pub(crate) streak: Streak,
    cooldown: Cooldown,
    persistence: u32,
    warmup: u32,
}

impl Gate {
    pub(crate) fn new(s: &KindSettings) -> Self {
        Gate { seen: 0, streak: Streak::default(), cooldown: Cooldown::new(s.cooldown), persistence: s.persistence, warmup: s.warmup }
    }

    pub(crate) fn warming(&mut self) -> bool {
        self.seen += 1;
        self.seen <= self.warmup as u64
    }

    pub(crate) fn pass(&mut self, severity: Option<Severity>, step: u64) -> Option<Severity> {
        let count = self.streak.update(severity.is_some(), step);
        self.cooldown.gate(if count >= self.persistence { severity } else { None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::KindOverride;

    #[test]
    fn a_disabled_kind_is_not_in_the_list_and_the_order_is_fixed() {
        use AlertKind as K;
        let mut config = HealthConfig::default();
        config.apply(K::KlSpike, &KindOverride { enabled: Some(false), ..Default::default() });
        let kinds: Vec<AlertKind> = for_run(&config).iter().map(|d| d.kind()).collect();
        assert_eq!(
            kinds,
            [
                K::Nonfinite,
                K::LossSpike,
                K::GradExplosion,
                K::GradVanishing,
                K::LossDivergence,
                K::KlRunaway,
                K::RewardHacking,
                K::RewardSaturation,
                K::EntropyCollapse,
                K::ThroughputRegression,
                K::ExpertCollapse,
            ]
        );
    }
}
