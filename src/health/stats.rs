//! Small streaming statistics the detectors share: a bounded window of recent
//! values with robust summaries (median, MAD), least-squares slope, and a
//! persistence counter. Each update is O(1); each summary is O(window).
use std::collections::VecDeque;

/// Scale that makes the MAD estimate the standard deviation of normal noise.
pub const MAD_TO_SIGMA: f64 = 1.4826;

/// The last `capacity` finite values, oldest first.
#[derive(Debug, Clone)]
pub struct Window {
    capacity: usize,
    values: VecDeque<f64>,
}

impl Window {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Window { capacity, values: VecDeque::with_capacity(capacity) }
    }

    pub fn push(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        if self.values.len() == self.capacity {
            self.values.pop_front();
        }
        self.values.push_back(v);
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.values.len() == self.capacity
    }

    pub fn clear(&mut self) {
        self.values.clear();
    }

    pub fn last(&self) -> Option<f64> {
        self.values.back().copied()
    }

    /// The newest `n` values (fewer if the window holds fewer), oldest first.
    pub fn newest(&self, n: usize) -> Vec<f64> {
        let skip = self.values.len().saturating_sub(n);
        self.values.iter().skip(skip).copied().collect()
    }

    /// Values from `from` (0 = oldest) up to, not including, `to`.
    pub fn range(&self, from: usize, to: usize) -> Vec<f64> {
        self.values.iter().skip(from).take(to.saturating_sub(from)).copied().collect()
    }

    pub fn to_vec(&self) -> Vec<f64> {
        self.values.iter().copied().collect()
    }

    pub fn median(&self) -> Option<f64> {
        median(&self.to_vec())
    }

    pub fn max(&self) -> Option<f64> {
        self.values.iter().copied().reduce(f64::max)
    }
}

/// Median of the values (NaN-free input), `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    // Selection, not a sort: detectors take a window's median at every step, and a
    // replay or `rlmon check` of a long run does that millions of times.
    let mut v = values.to_vec();
    let n = v.len();
    let (lower, upper, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *upper;
    Some(if n % 2 == 1 { upper } else { 0.5 * (lower.iter().copied().max_by(f64::total_cmp).unwrap_or(upper) + upper) })
}

/// Median and the median absolute deviation around it.
pub fn median_mad(values: &[f64]) -> Option<(f64, f64)> {
    let m = median(values)?;
    let dev: Vec<f64> = values.iter().map(|v| (v - m).abs()).collect();
    Some((m, median(&dev)?))
}

pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

pub fn std_dev(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    (values.len() > 1).then(|| (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64).sqrt())
}

/// Least-squares fit of `ys` against `xs`: (slope, r²). `None` with fewer than
/// three points or no spread in x.
pub fn linear_fit(xs: &[f64], ys: &[f64]) -> Option<(f64, f64)> {
    let n = xs.len().min(ys.len());
    if n < 3 {
        return None;
    }
    let mx = xs[..n].iter().sum::<f64>() / n as f64;
    let my = ys[..n].iter().sum::<f64>() / n as f64;
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let (dx, dy) = (xs[i] - mx, ys[i] - my);
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = if syy > 0.0 { (sxy * sxy) / (sxx * syy) } else { 0.0 };
    Some((slope, r2))
}

/// Slope of values against their index (one step apart).
pub fn index_slope(ys: &[f64]) -> Option<(f64, f64)> {
    let xs: Vec<f64> = (0..ys.len()).map(|i| i as f64).collect();
    linear_fit(&xs, ys)
}

/// A Theil-Sen slope in O(n): the median of the slopes between each point of the
/// first half and its partner half the series later (one step apart per index),
/// with the fraction of those slopes that are positive. Robust to outliers and to
/// the steps of a staircase; `None` with fewer than four points.
pub fn half_lag_slope(ys: &[f64]) -> Option<(f64, f64)> {
    let lag = ys.len() / 2;
    if lag < 2 {
        return None;
    }
    let slopes: Vec<f64> = (0..ys.len() - lag).map(|i| (ys[i + lag] - ys[i]) / lag as f64).collect();
    let positive = slopes.iter().filter(|s| **s > 0.0).count() as f64 / slopes.len() as f64;
    Some((median(&slopes)?, positive))
}

/// Counts consecutive points for which a condition held.
#[derive(Debug, Clone, Default)]
pub struct Streak {
    pub count: u32,
    /// The step the current streak started at.
    pub start: u64,
}

impl Streak {
    /// Records one point; returns the streak length.
    pub fn update(&mut self, holds: bool, step: u64) -> u32 {
        if holds {
            if self.count == 0 {
                self.start = step;
            }
            self.count += 1;
        } else {
            self.count = 0;
        }
        self.count
    }
}

/// One alert per event: after an alert, the detector stays quiet until its
/// condition has been clear for `cooldown` consecutive points; a worse severity
/// during the same event still goes through once.
#[derive(Debug, Clone)]
pub struct Cooldown {
    cooldown: u32,
    raised: Option<super::Severity>,
    clear_for: u32,
}

impl Cooldown {
    pub fn new(cooldown: u32) -> Self {
        Cooldown { cooldown, raised: None, clear_for: 0 }
    }

    /// Call once per point with whether the condition holds now and the severity
    /// it would have; returns the severity to raise, if any.
    pub fn gate(&mut self, firing: Option<super::Severity>) -> Option<super::Severity> {
        match firing {
            None => {
                self.clear_for += 1;
                if self.clear_for >= self.cooldown {
                    self.raised = None;
                }
                None
            }
            Some(sev) => {
                self.clear_for = 0;
                match self.raised {
                    Some(prev) if prev >= sev => None,
                    _ => {
                        self.raised = Some(sev);
                        Some(sev)
                    }
                }
            }
        }
    }

    /// The severity last raised in the open event, if one is open.
    pub fn raised(&self) -> Option<super::Severity> {
        self.raised
    }

    /// Whether an event is open (an alert was raised and has not cleared yet).
    pub fn open(&self) -> bool {
        self.raised.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::Severity;

    #[test]
    fn median_by_selection_equals_median_by_sorting() {
        let mut rng = crate::workload::rng::SplitMix64::new(7);
        for n in 1..60 {
            // Ties and signed zeros included.
            let values: Vec<f64> = (0..n).map(|_| ((rng.next_u64() % 9) as f64 - 4.0) * 0.5).chain([0.0, -0.0]).collect();
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            let m = sorted.len();
            let expect = if m % 2 == 1 { sorted[m / 2] } else { 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]) };
            assert_eq!(median(&values).map(f64::to_bits), Some(expect.to_bits()), "{values:?}");
        }
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0]), Some(2.0));
    }

    #[test]
    fn window_keeps_the_newest_finite_values() {
        let mut w = Window::new(3);
        for v in [1.0, f64::NAN, 2.0, 3.0, 4.0] {
            w.push(v);
        }
        assert_eq!(w.to_vec(), vec![2.0, 3.0, 4.0]);
        assert_eq!(w.median(), Some(3.0));
        assert_eq!(w.newest(2), vec![3.0, 4.0]);
    }

    #[test]
    fn robust_summaries_and_fit() {
        assert_eq!(median_mad(&[1.0, 2.0, 3.0, 100.0]), Some((2.5, 1.0)));
        let (slope, r2) = index_slope(&[1.0, 3.0, 5.0, 7.0]).unwrap();
        assert!((slope - 2.0).abs() < 1e-12 && (r2 - 1.0).abs() < 1e-12);
        assert_eq!(index_slope(&[1.0, 2.0]), None);
        // One wild point and a staircase: the robust slope holds.
        let mut stairs: Vec<f64> = (0..40).map(|i| (i / 5) as f64 * 5.0).collect();
        stairs[7] = 1e9;
        let (slope, positive) = half_lag_slope(&stairs).unwrap();
        assert!((slope - 1.0).abs() < 1e-12 && positive >= 0.9, "{slope} {positive}");
        assert_eq!(half_lag_slope(&[1.0, 2.0, 3.0]), None);
    }

    #[test]
    fn cooldown_gives_one_alert_per_event_and_lets_escalation_through() {
        let mut c = Cooldown::new(3);
        assert_eq!(c.gate(Some(Severity::Warn)), Some(Severity::Warn));
        assert_eq!(c.gate(Some(Severity::Warn)), None);
        assert_eq!(c.gate(Some(Severity::Critical)), Some(Severity::Critical));
        assert_eq!(c.gate(None), None);
        assert_eq!(c.gate(Some(Severity::Warn)), None, "not clear long enough: same event");
        for _ in 0..3 {
            c.gate(None);
        }
        assert_eq!(c.gate(Some(Severity::Warn)), Some(Severity::Warn), "a new event");
    }
}
