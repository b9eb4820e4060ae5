//! The detectors, one family per file. Each sees one run's points in step order,
//! keeps O(window) state, and returns what it raises at this point, if anything.
pub mod moe;
pub mod rl;
pub mod spike;
pub mod trend;

use crate::metrics::MetricName;

use super::config::KindSettings;
use super::stats::{Cooldown, Streak};
use super::Severity;

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
