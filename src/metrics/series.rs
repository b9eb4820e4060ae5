//! One metric of one run over time, stored column-wise.
use crate::metrics::throughput::Ema;

/// EMA weight of each new point in a smoothed chart.
pub const SMOOTHING_ALPHA: f64 = 0.1;

/// Points between two saved states of the smoothed series.
const SMOOTH_EVERY: usize = 1024;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub steps: Vec<u64>,
    pub times: Vec<f64>,
    pub values: Vec<f64>,
    /// The smoothed series' state, kept on arrival, so a smoothed chart of a window
    /// starts there instead of smoothing everything before it each frame.
    smooth: SmoothMarks,
}

/// The EMA (at [`SMOOTHING_ALPHA`], over the finite values) before every
/// [`SMOOTH_EVERY`]th point, and after the last: 16 bytes per 1024 points.
#[derive(Debug, Clone)]
struct SmoothMarks {
    marks: Vec<Ema>,
    now: Ema,
}

impl Default for SmoothMarks {
    fn default() -> Self {
        SmoothMarks { marks: Vec::new(), now: Ema::new(SMOOTHING_ALPHA) }
    }
}

/// Derived from the values: two series with the same points are equal.
impl PartialEq for SmoothMarks {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Series {
    pub fn push(&mut self, step: u64, time_s: f64, value: f64) {
        if self.values.len() % SMOOTH_EVERY == 0 {
            self.smooth.marks.push(self.smooth.now);
        }
        if value.is_finite() {
            self.smooth.now.update(value);
        }
        self.steps.push(step);
        self.times.push(time_s);
        self.values.push(value);
    }

    /// The smoothing EMA (at [`SMOOTHING_ALPHA`]) having seen the finite values
    /// before index `i`, in O(SMOOTH_EVERY) whatever the series' length.
    pub fn smoothed_before(&self, i: usize) -> Ema {
        let i = i.min(self.len());
        let k = i / SMOOTH_EVERY;
        let Some(mark) = self.smooth.marks.get(k) else { return self.smooth.now };
        let mut ema = *mark;
        for v in &self.values[k * SMOOTH_EVERY..i] {
            if v.is_finite() {
                ema.update(*v);
            }
        }
        ema
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn last(&self) -> Option<f64> {
        self.values.last().copied()
    }

    /// Index of the point at `step`, if the series has one (steps ascend).
    pub fn index_of(&self, step: u64) -> Option<usize> {
        let i = self.steps.partition_point(|s| *s < step);
        (self.steps.get(i) == Some(&step)).then_some(i)
    }

    /// Drops the points at `step` and after (a job resumed from an earlier step).
    /// Returns how many were dropped.
    pub fn truncate_from(&mut self, step: u64) -> usize {
        let keep = self.steps.partition_point(|s| *s < step);
        let dropped = self.len() - keep;
        self.steps.truncate(keep);
        self.times.truncate(keep);
        self.values.truncate(keep);
        self.smooth.marks.truncate(keep.div_ceil(SMOOTH_EVERY));
        // The state after the kept points, from the last mark (at most SMOOTH_EVERY points back).
        let from = (self.smooth.marks.len().max(1) - 1) * SMOOTH_EVERY;
        let mut now = self.smooth.marks.last().copied().unwrap_or(Ema::new(SMOOTHING_ALPHA));
        for v in self.values[from.min(keep)..].iter().filter(|v| v.is_finite()) {
            now.update(*v);
        }
        self.smooth.now = now;
        dropped
    }

    /// The last `n` values (fewer when the series is shorter).
    pub fn tail(&self, n: usize) -> &[f64] {
        &self.values[self.values.len().saturating_sub(n)..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smoothed_state_anywhere_matches_smoothing_from_the_start() {
        let mut s = Series::default();
        for i in 0..5000u64 {
            s.push(i, i as f64, if i % 97 == 0 { f64::NAN } else { (i as f64 * 0.37).sin() });
        }
        let check = |s: &Series| {
            for i in [0, 1, 2, 1023, 1024, 1025, 2048, 3000, s.len()] {
                let i = i.min(s.len());
                let mut want = Ema::new(SMOOTHING_ALPHA);
                for v in s.values[..i].iter().filter(|v| v.is_finite()) {
                    want.update(*v);
                }
                // The next value smoothed from either state: the same bits.
                assert_eq!(s.smoothed_before(i).update(0.5).to_bits(), want.update(0.5).to_bits(), "at {i} of {}", s.len());
            }
        };
        check(&s);
        for keep in [4000u64, 3072, 1024, 1000, 1, 0] {
            s.truncate_from(keep);
            check(&s);
            let n = s.len() as u64;
            s.push(n, n as f64, 0.25);
            check(&s);
        }
    }
}
