//! `rank_straggler`: the ranks of one job compared with each other. A job-level
//! detector (not a per-run one): it is fed every rank's throughput and judges a
//! step once every rank has logged it, so the order in which the ranks' points
//! arrive does not matter. Speed is tokens/s when the ranks log it, else the
//! inverse of step time; each rank's speed is the median of its recent points, so
//! one slow step (a checkpoint) is not a straggler.
use std::collections::BTreeMap;

use super::{grade, Gate, Raised, Worse};
use crate::health::config::KindSettings;
use crate::health::stats::Window;
use crate::metrics::catalog;
use crate::report::format::{compact, percent};

/// Points of each rank needed before ranks are compared.
const MIN_POINTS: usize = 3;

/// How a job's speed is measured, fixed by the first point that has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measure {
    TokensPerS,
    StepTime,
}

#[derive(Debug)]
pub struct RankStraggler {
    s: KindSettings,
    measure: Option<Measure>,
    /// Each rank's recent speeds (higher is faster) and the last step it logged.
    ranks: BTreeMap<u32, (Window, u64)>,
    /// The newest step judged: every rank had logged it.
    judged_through: Option<u64>,
    gate: Gate,
}

impl RankStraggler {
    pub fn new(s: KindSettings) -> Self {
        RankStraggler { gate: Gate::new(&s, Worse::Higher), s, measure: None, ranks: BTreeMap::new(), judged_through: None }
    }

    /// One point of one rank: its tokens/s and step time, where logged.
    pub fn observe(&mut self, rank: u32, step: u64, tokens_per_s: Option<f64>, step_time_s: Option<f64>) -> Option<Raised> {
        let usable = |v: Option<f64>| v.filter(|v| v.is_finite() && *v > 0.0);
        let measure = *self.measure.get_or_insert(match usable(tokens_per_s) {
            Some(_) => Measure::TokensPerS,
            None => {
                usable(step_time_s)?;
                Measure::StepTime
            }
        });
        let speed = match measure {
            Measure::TokensPerS => usable(tokens_per_s)?,
            Measure::StepTime => 1.0 / usable(step_time_s)?,
        };
        let window = self.s.window.max(MIN_POINTS);
        let entry = self.ranks.entry(rank).or_insert_with(|| (Window::new(window), step));
        entry.0.push(speed);
        entry.1 = step;
        if self.ranks.len() < 2 {
            return None;
        }
        let complete = self.ranks.values().map(|(_, s)| *s).min()?;
        if self.judged_through.is_some_and(|j| complete <= j) {
            return None;
        }
        self.judged_through = Some(complete);
        if self.ranks.values().any(|(w, _)| w.len() < MIN_POINTS) || self.gate.warming() {
            return None;
        }
        let medians: Vec<(u32, f64)> = self.ranks.iter().filter_map(|(r, (w, _))| Some((*r, w.median()?))).collect();
        let spread = spread(&medians)?;
        let v = self.gate.pass(grade(spread.fraction, self.s.warn, self.s.critical, false), complete, spread.fraction)?;
        let (metric, slow, fast) = match measure {
            Measure::TokensPerS => (catalog::TOKENS_PER_S, spread.slow.1, spread.fast.1),
            Measure::StepTime => (catalog::STEP_TIME_S, 1.0 / spread.slow.1, 1.0 / spread.fast.1),
        };
        let message = format!(
            "rank {} is {} slower than rank {} since step {} (median {metric} {} vs {} over the last {window} steps)",
            spread.slow.0,
            percent(spread.fraction),
            spread.fast.0,
            v.step,
            compact(slow),
            compact(fast),
        );
        Some(v.raise(metric, message))
    }
}

/// The slowest and fastest of several ranks' speeds, and how much slower the
/// slowest is, as a fraction of the fastest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub slow: (u32, f64),
    pub fast: (u32, f64),
    pub fraction: f64,
}

/// `None` for fewer than two ranks or a fastest rank that does not move.
pub fn spread(speeds: &[(u32, f64)]) -> Option<Spread> {
    let finite = || speeds.iter().copied().filter(|(_, v)| v.is_finite());
    let slow = finite().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let fast = finite().max_by(|a, b| a.1.total_cmp(&b.1))?;
    (finite().count() >= 2 && fast.1 > 0.0).then(|| Spread { slow, fast, fraction: 1.0 - slow.1 / fast.1 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::config::defaults;
    use crate::health::{AlertKind, Severity};

    /// Two ranks for `steps` steps; rank 1 logs `slow` times rank 0's step time
    /// from step `from` on. Rank 1's points arrive first when `rank1_first`.
    fn run(steps: u64, from: u64, slow: f64, rank1_first: bool) -> Vec<(u64, Raised)> {
        let mut d = RankStraggler::new(defaults(AlertKind::RankStraggler));
        let mut out = Vec::new();
        for step in 1..=steps {
            let jitter = 1.0 + 0.01 * ((step as f64) * 1.3).sin();
            let t0 = 0.1 * jitter;
            let t1 = if step >= from { t0 * slow } else { t0 * 1.005 };
            let mut points = [(0u32, t0), (1u32, t1)];
            if rank1_first {
                points.reverse();
            }
            for (rank, t) in points {
                out.extend(d.observe(rank, step, None, Some(t)).map(|r| (step, r)));
            }
        }
        out
    }

    #[test]
    fn a_sustained_spread_names_the_slow_rank_once() {
        let raised = run(80, 30, 1.15, false);
        assert_eq!(raised.len(), 1, "{raised:?}");
        let (at, r) = &raised[0];
        assert_eq!(r.severity, Severity::Warn);
        assert_eq!(r.metric, catalog::STEP_TIME_S);
        assert!(r.message.starts_with("rank 1 is 1"), "{}", r.message);
        assert!((30..45).contains(at), "raised at step {at}");
        // The value is the spread where the event began (the medians still moving).
        assert!(r.value > 0.05 && r.value < 0.14, "spread {}", r.value);
        assert!(r.peak.is_some_and(|p| p.value >= r.value), "{:?}", r.peak);
    }

    #[test]
    fn arrival_order_does_not_matter() {
        let a: Vec<(u64, String)> = run(80, 30, 1.15, false).into_iter().map(|(s, r)| (s, r.message)).collect();
        let b: Vec<(u64, String)> = run(80, 30, 1.15, true).into_iter().map(|(s, r)| (s, r.message)).collect();
        assert_eq!(a, b);
    }

    #[test]
    fn ranks_within_five_percent_or_a_short_stall_raise_nothing() {
        assert!(run(120, 10, 1.03, false).is_empty(), "3% apart");
        // One rank slow for two steps (a checkpoint), then back.
        let mut d = RankStraggler::new(defaults(AlertKind::RankStraggler));
        for step in 1..=60u64 {
            let t1 = if (30..32).contains(&step) { 0.5 } else { 0.1 };
            assert!(d.observe(0, step, Some(1000.0), None).is_none());
            assert!(d.observe(1, step, Some(100.0 / t1), None).is_none(), "step {step}");
        }
    }

    #[test]
    fn one_rank_is_no_spread_and_bad_values_are_ignored() {
        let mut d = RankStraggler::new(defaults(AlertKind::RankStraggler));
        for step in 1..=50 {
            assert!(d.observe(0, step, Some(100.0), None).is_none());
            assert!(d.observe(1, step, Some(f64::NAN), Some(-1.0)).is_none());
        }
        assert_eq!(spread(&[(0, 100.0)]), None);
        let s = spread(&[(0, 100.0), (1, 80.0), (2, 90.0)]).unwrap();
        assert_eq!((s.slow.0, s.fast.0), (1, 0));
        assert!((s.fraction - 0.2).abs() < 1e-12);
    }
}
