//! NaN and infinite values: always critical, at the step they happen.
use std::collections::BTreeMap;

use super::{Detector, Point, Raised};
use crate::health::config::KindSettings;
use crate::health::stats::Cooldown;
use crate::health::{AlertKind, Severity};

/// Every metric that turns NaN/Inf at a step, in one alert: loss and gradients
/// usually break together, and that is one event. Each metric has its own
/// cooldown, so a value that stays NaN is reported once.
#[derive(Debug, Clone)]
pub struct NonfiniteValues {
    cooldown: u32,
    gates: BTreeMap<String, Cooldown>,
}

impl NonfiniteValues {
    pub fn new(s: KindSettings) -> Self {
        NonfiniteValues { cooldown: s.cooldown, gates: BTreeMap::new() }
    }

    /// Passes `firing` through `name`'s cooldown. Looked up before inserting: one
    /// allocation per metric, not one per point.
    fn gate(&mut self, name: &str, firing: Option<Severity>) -> Option<Severity> {
        match self.gates.get_mut(name) {
            Some(gate) => gate.gate(firing),
            None => {
                let mut gate = Cooldown::new(self.cooldown);
                let passed = gate.gate(firing);
                self.gates.insert(name.to_owned(), gate);
                passed
            }
        }
    }

    pub fn check(&mut self, p: &Point) -> Option<Raised> {
        let mut broken: Vec<(&str, f64)> = Vec::new();
        for (name, v) in p.values {
            if self.gate(name, (!v.is_finite()).then_some(Severity::Critical)).is_some() {
                broken.push((name, *v));
            }
        }
        let &(first, value) = broken.first()?;
        let what = |v: f64| if v.is_nan() { "NaN" } else { "infinite" };
        let list: Vec<String> = broken.iter().map(|(n, v)| format!("{n} is {}", what(*v))).collect();
        let message = format!("{} at step {}", list.join(", "), p.step);
        Some(Raised { severity: Severity::Critical, metric: first.to_owned(), step: p.step, value, message })
    }
}

impl Detector for NonfiniteValues {
    fn kind(&self) -> AlertKind {
        AlertKind::Nonfinite
    }

    fn observe(&mut self, p: &Point) -> Vec<Raised> {
        self.check(p).into_iter().collect()
    }
}
