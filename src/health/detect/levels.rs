//! A whole run's history in a few levels: block medians, the blocks growing with
//! the run (neighbours merge and the block length doubles when [`MAX_LEVELS`] are
//! held), so O(1) memory spans any length. Detectors whose trailing window is a
//! fixed number of points use it as a reference that does not move with a slow
//! event: a climb or a collapse that takes longer than the window drags the
//! window's median along with it, never the run's settled level.
use crate::health::stats::{median, median_mad, MAD_TO_SIGMA};

/// Levels held before neighbours merge.
pub const MAX_LEVELS: usize = 32;
/// Levels needed before a settled level is given.
pub const MIN_LEVELS: usize = 8;

#[derive(Debug, Clone)]
pub struct RunLevels {
    block_len: usize,
    block: Vec<f64>,
    levels: Vec<f64>,
    /// [`Self::settled`] and [`Self::settled_spread`] of `levels`, kept from one
    /// change of the levels to the next: detectors ask at every point, the levels
    /// change once a block.
    settled: Option<f64>,
    spread: Option<f64>,
}

impl RunLevels {
    /// Blocks of `first_block` points at first.
    pub fn new(first_block: usize) -> Self {
        let block_len = first_block.max(1);
        RunLevels { block_len, block: Vec::with_capacity(block_len), levels: Vec::with_capacity(MAX_LEVELS), settled: None, spread: None }
    }

    pub fn push(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        self.block.push(x);
        if self.block.len() < self.block_len {
            return;
        }
        if let Some(level) = median(&self.block) {
            self.levels.push(level);
        }
        self.block.clear();
        if self.levels.len() >= MAX_LEVELS {
            self.levels = self.levels.chunks(2).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect();
            self.block_len *= 2;
        }
        (self.settled, self.spread) = self.second_quarter().map_or((None, None), |q| (median(q), median_mad(q).map(|(_, mad)| MAD_TO_SIGMA * mad)));
    }

    /// The levels of the second quarter of the run so far, once [`MIN_LEVELS`] are held.
    fn second_quarter(&self) -> Option<&[f64]> {
        let n = self.levels.len();
        (n >= MIN_LEVELS).then(|| &self.levels[n / 4..n / 2])
    }

    /// The run's settled level: the median of the levels of the second quarter of
    /// the run so far (its first quarter is the start: a KL's early ramp, a
    /// fresh policy's spread). `None` until [`MIN_LEVELS`] are held.
    pub fn settled(&self) -> Option<f64> {
        self.settled
    }

    /// [`Self::settled`], only when those levels lie within `range` of each
    /// other, with how much they rose across that quarter (its last level minus
    /// its first): a start still under way (a KL still ramping up at a quarter of
    /// the run so far) is not a settled level, and a rise that goes on at the
    /// same pace since is the same slow start, not a climb from a plateau.
    pub fn plateau(&self, range: f64) -> Option<(f64, f64)> {
        let n = self.levels.len();
        let quarter = self.levels.get(n / 4..n / 2)?;
        let (lo, hi) = quarter.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), l| (lo.min(*l), hi.max(*l)));
        let rise = quarter.last()? - quarter.first()?;
        self.settled().filter(|_| hi - lo <= range).map(|s| (s, rise))
    }

    /// The robust spread (sigmas) of the levels [`Self::settled`] is taken from:
    /// how far a level wanders by noise alone (heavy tails and memory in a
    /// series move whole blocks).
    pub fn settled_spread(&self) -> Option<f64> {
        self.spread
    }

    /// The newest closed levels, oldest first.
    pub fn levels(&self) -> &[f64] {
        &self.levels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settled_level_skips_the_start_and_ignores_the_newest_half() {
        let mut l = RunLevels::new(5);
        assert_eq!(l.settled(), None);
        // A ramp over the first 50 points, a plateau at 1, then a climb to 10.
        for i in 0..2000 {
            let x = if i < 50 { i as f64 / 50.0 } else if i < 1000 { 1.0 } else { 1.0 + 9.0 * (i - 1000) as f64 / 1000.0 };
            l.push(x);
        }
        assert_eq!(l.settled(), Some(1.0));
        assert_eq!(l.plateau(0.1), Some((1.0, 0.0)));
        // Still ramping at a quarter of the run so far: no plateau.
        let mut ramp = RunLevels::new(5);
        (0..400).for_each(|i| ramp.push((i as f64 / 100.0).min(3.0)));
        assert!(ramp.settled().is_some() && ramp.plateau(0.4).is_none());
        assert!(l.levels().len() >= MAX_LEVELS / 2 && l.levels().len() < MAX_LEVELS);
        // The settled levels' spread: none on a flat plateau, some on a noisy one.
        assert_eq!(l.settled_spread(), Some(0.0));
        let mut noisy = RunLevels::new(5);
        (0..200).for_each(|i| noisy.push(0.9 + 0.1 * ((i / 10) % 3) as f64));
        assert!(noisy.settled_spread().is_some_and(|s| s > 0.1), "{:?}", noisy.settled_spread());
        l.push(f64::NAN);
    }

    /// The kept settled level and spread are those of the levels held, at every
    /// point: while they fill up, across merges, and between block ends.
    #[test]
    fn the_kept_level_and_spread_follow_the_levels() {
        let mut l = RunLevels::new(3);
        let mut rng = crate::workload::rng::SplitMix64::new(17);
        for i in 0..3000 {
            l.push(if i % 97 == 0 { f64::NAN } else { rng.unit() + (i / 500) as f64 });
            let n = l.levels().len();
            let quarter = (n >= MIN_LEVELS).then(|| &l.levels()[n / 4..n / 2]);
            let bits = |v: Option<f64>| v.map(f64::to_bits);
            assert_eq!(bits(l.settled()), bits(quarter.and_then(median)), "point {i}");
            assert_eq!(bits(l.settled_spread()), bits(quarter.and_then(median_mad).map(|(_, mad)| MAD_TO_SIGMA * mad)), "point {i}");
        }
        assert!(l.settled().is_some());
    }
}
