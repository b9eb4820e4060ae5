//! One metric of one run over time, behind an API that says what callers read
//! (points by index or step, ranges, the tail, per-column extremes), so the storage
//! underneath can be compact.
use std::borrow::Cow;
use std::ops::Range;

use crate::metrics::throughput::Ema;

/// EMA weight of each new point in a smoothed chart.
pub const SMOOTHING_ALPHA: f64 = 0.1;

/// Points between two saved states of the smoothed series.
const SMOOTH_EVERY: usize = 1024;

#[derive(Debug, Clone, Default)]
pub struct Series {
    steps: Vec<u64>,
    times: Vec<f64>,
    values: Vec<f64>,
    /// The smoothed series' state, kept on arrival, so a smoothed chart of a window
    /// starts there instead of smoothing everything before it each frame.
    smooth: SmoothMarks,
}

/// Which readings of a column's points [`Series::columns`] takes the extremes of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// The EMA at [`SMOOTHING_ALPHA`] of the finite values (from the run's start)
    /// instead of the raw values.
    pub smoothed: bool,
    /// Only readings above zero (a log scale).
    pub positive_only: bool,
}

/// One reading of a series: where it is and what it reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Extreme {
    pub index: usize,
    pub step: u64,
    pub value: f64,
}

/// A column's smallest, largest and last reading: the first point holding the
/// extreme when several do. Non-finite points are never read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    pub min: Extreme,
    pub max: Extreme,
    pub last: Extreme,
}

impl Column {
    fn of(e: Extreme) -> Column {
        Column { min: e, max: e, last: e }
    }

    /// Adds a reading after those already in the column.
    fn push(&mut self, e: Extreme) {
        if e.value < self.min.value {
            self.min = e;
        }
        if e.value > self.max.value {
            self.max = e;
        }
        self.last = e;
    }
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

/// Two series with the same points are equal (the smoothing state derives from them).
impl PartialEq for Series {
    fn eq(&self, other: &Self) -> bool {
        self.steps == other.steps && self.times == other.times && self.values == other.values
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

    /// The last value.
    pub fn last(&self) -> Option<f64> {
        self.values.last().copied()
    }

    pub fn first_step(&self) -> Option<u64> {
        self.steps.first().copied()
    }

    pub fn last_step(&self) -> Option<u64> {
        self.steps.last().copied()
    }

    pub fn last_time(&self) -> Option<f64> {
        self.times.last().copied()
    }

    pub fn step_at(&self, i: usize) -> Option<u64> {
        self.steps.get(i).copied()
    }

    pub fn time_at(&self, i: usize) -> Option<f64> {
        self.times.get(i).copied()
    }

    pub fn value_at(&self, i: usize) -> Option<f64> {
        self.values.get(i).copied()
    }

    /// Index of the point at `step`, if the series has one (steps ascend).
    pub fn index_of(&self, step: u64) -> Option<usize> {
        let i = self.first_at_or_after(step);
        (self.step_at(i) == Some(step)).then_some(i)
    }

    /// Index of the first point at or after `step` (`len()` when none is).
    pub fn first_at_or_after(&self, step: u64) -> usize {
        self.partition_point(|s| s < step)
    }

    /// Index of the first point whose step fails `before` (steps ascend, so
    /// `before` holds for a prefix).
    pub fn partition_point(&self, before: impl FnMut(u64) -> bool) -> usize {
        let mut before = before;
        self.steps.partition_point(|s| before(*s))
    }

    /// The steps of the points in `range` (clipped to the series).
    pub fn steps(&self, range: Range<usize>) -> Cow<'_, [u64]> {
        Cow::Borrowed(&self.steps[self.clip(range)])
    }

    /// The times of the points in `range` (clipped to the series).
    pub fn times(&self, range: Range<usize>) -> Cow<'_, [f64]> {
        Cow::Borrowed(&self.times[self.clip(range)])
    }

    /// The values of the points in `range` (clipped to the series).
    pub fn values(&self, range: Range<usize>) -> Cow<'_, [f64]> {
        Cow::Borrowed(&self.values[self.clip(range)])
    }

    /// The points in `range` (clipped to the series) as (step, time, value), in order.
    pub fn points(&self, range: Range<usize>) -> impl Iterator<Item = (u64, f64, f64)> + '_ {
        let r = self.clip(range);
        self.steps[r.clone()].iter().zip(&self.times[r.clone()]).zip(&self.values[r]).map(|((s, t), v)| (*s, *t, *v))
    }

    /// The last `n` values (fewer when the series is shorter).
    pub fn tail(&self, n: usize) -> Cow<'_, [f64]> {
        self.values(self.len().saturating_sub(n)..self.len())
    }

    /// The sum of the finite values in `range` (clipped to the series).
    pub fn finite_sum(&self, range: Range<usize>) -> f64 {
        self.values(range).iter().filter(|v| v.is_finite()).sum()
    }

    /// Smallest, largest and last reading of each column, where column `c` holds
    /// the points `bounds[c]..bounds[c + 1]` (`bounds` ascends; the series' ends
    /// clip it). `None` for a column without a reading.
    pub fn columns(&self, bounds: &[usize], reading: Reading) -> Vec<Option<Column>> {
        let Some(&first) = bounds.first() else { return Vec::new() };
        let mut ema = self.smoothed_before(first);
        bounds
            .windows(2)
            .map(|w| {
                let mut col: Option<Column> = None;
                let r = self.clip(w[0]..w[1]);
                let from = r.start;
                for (k, raw) in self.values(r).iter().enumerate() {
                    if !raw.is_finite() {
                        continue;
                    }
                    let value = if reading.smoothed { ema.update(*raw) } else { *raw };
                    if reading.positive_only && value <= 0.0 {
                        continue;
                    }
                    let index = from + k;
                    let e = Extreme { index, step: self.steps[index], value };
                    match col.as_mut() {
                        Some(c) => c.push(e),
                        None => col = Some(Column::of(e)),
                    }
                }
                col
            })
            .collect()
    }

    /// Smallest, largest and last finite value of the whole series.
    pub fn extent(&self) -> Option<Column> {
        self.columns(&[0, self.len()], Reading::default()).pop().flatten()
    }

    /// Drops the points at `step` and after (a job resumed from an earlier step).
    /// Returns how many were dropped.
    pub fn truncate_from(&mut self, step: u64) -> usize {
        let keep = self.first_at_or_after(step);
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

    fn clip(&self, r: Range<usize>) -> Range<usize> {
        let end = r.end.min(self.len());
        r.start.min(end)..end
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
                for v in s.values(0..i).iter().filter(|v| v.is_finite()) {
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
