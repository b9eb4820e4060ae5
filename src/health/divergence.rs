//! Where two runs of the same metric part ways. Two values agree when they are
//! within an absolute band or a relative one; the runs diverge at the first step of
//! `k` consecutive shared steps that all disagree, so a single noisy step is not a
//! divergence. Used by replicas (nondeterminism), baselines and `rlmon compare`.

use std::collections::VecDeque;

/// How far apart two values may be and still agree.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Agree when `|a - b| <= abs`.
    pub abs: f64,
    /// Agree when `|a - b| <= rel * max(|a|, |b|)`.
    pub rel: f64,
    /// Consecutive disagreeing steps needed to call it a divergence.
    pub k: usize,
}

impl Tolerance {
    pub fn new(abs: f64, rel: f64, k: usize) -> Self {
        Tolerance { abs, rel, k: k.max(1) }
    }

    /// Whether `a` and `b` agree. Two NaNs agree (both runs broke the same way);
    /// a finite value never agrees with a non-finite one.
    pub fn agree(&self, a: f64, b: f64) -> bool {
        if a.is_nan() || b.is_nan() {
            return a.is_nan() && b.is_nan();
        }
        if a.is_infinite() || b.is_infinite() {
            return a == b;
        }
        let diff = (a - b).abs();
        diff <= self.abs || diff <= self.rel * a.abs().max(b.abs())
    }
}

impl Default for Tolerance {
    /// Bitwise-repeatable runs agree exactly; these bands leave room for float
    /// reductions that differ in order while still catching real drift.
    fn default() -> Self {
        Tolerance::new(1e-6, 1e-4, 3)
    }
}

/// Streaming form: feed the two runs' values at each shared step, in step order.
#[derive(Debug, Clone)]
pub struct DivergenceTracker {
    tol: Tolerance,
    streak_start: Option<u64>,
    streak: usize,
    diverged_at: Option<u64>,
}

impl DivergenceTracker {
    pub fn new(tol: Tolerance) -> Self {
        DivergenceTracker { tol, streak_start: None, streak: 0, diverged_at: None }
    }

    /// Returns the divergence step the first time the streak reaches `k`; `None`
    /// before and after (one event, one report).
    pub fn observe(&mut self, step: u64, a: f64, b: f64) -> Option<u64> {
        if self.diverged_at.is_some() {
            return None;
        }
        if self.tol.agree(a, b) {
            self.streak = 0;
            self.streak_start = None;
            return None;
        }
        self.streak += 1;
        let start = *self.streak_start.get_or_insert(step);
        if self.streak >= self.tol.k {
            self.diverged_at = Some(start);
            return Some(start);
        }
        None
    }

    pub fn diverged_at(&self) -> Option<u64> {
        self.diverged_at
    }
}

/// Batch form over two step-sorted series: the first divergence step over the
/// steps both have, or `None` when they agree throughout.
pub fn first_divergence(a: &[(u64, f64)], b: &[(u64, f64)], tol: Tolerance) -> Option<u64> {
    let mut tracker = DivergenceTracker::new(tol);
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (sa, va) = a[i];
        let (sb, vb) = b[j];
        if sa < sb {
            i += 1;
        } else if sb < sa {
            j += 1;
        } else {
            if let Some(step) = tracker.observe(sa, va, vb) {
                return Some(step);
            }
            i += 1;
            j += 1;
        }
    }
    None
}

/// A run against its baseline: two runs of one recipe that differ by seed, and
/// often by how they log. Their points rarely share steps (one logs every 10
/// steps, the other every 25, or at other offsets), each has its own noise, and
/// a restart logs again steps it had logged. So a point of the run is compared
/// with the baseline's value at the same step, interpolated between the
/// baseline's points around it (not across a gap of several logging intervals);
/// and the runs part when the level of their relative difference (its median
/// over the newest [`LEVEL_POINTS`] compared points) is beyond the tolerance, and
/// beyond [`NOISE_Z`] times the spread that level has shown so far, on the same
/// side for `k` compared points in a row (at least [`LEVEL_POINTS`]). The step reported is the first point of
/// that stretch whose own difference was beyond the tolerance on that side.
#[derive(Debug, Clone)]
pub struct PartingTracker {
    tol: Tolerance,
    /// The baseline's newest points, in step order.
    reference: VecDeque<(u64, f64)>,
    /// The baseline's newest step gaps: an interpolation spans at most
    /// [`MAX_SPAN_GAPS`] of the usual one.
    gaps: VecDeque<u64>,
    /// Points of the run the baseline has not reached yet.
    waiting: VecDeque<(u64, f64)>,
    /// Compared points, newest last.
    judged: VecDeque<Judged>,
    /// Levels of the relative difference so far (the newest few left out when
    /// their spread is taken).
    levels: VecDeque<f64>,
    /// Consecutive parted levels and their side.
    streak: usize,
    side: f64,
    parted: bool,
}

/// One compared point: the run's step, the relative difference, and the two values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    pub step: u64,
    pub diff: f64,
    pub baseline: f64,
    pub run: f64,
}

/// Compared points whose median is the level of the difference: one noisy point
/// (a bump in either run) does not move it.
pub const LEVEL_POINTS: usize = 5;
/// The level must stand this many robust sigmas of its own past spread from zero:
/// two seeds of a noisy metric (a gradient norm) differ by more than any fixed
/// tolerance, point by point and level by level.
pub const NOISE_Z: f64 = 4.0;
/// Levels needed before their spread is trusted (and anything is judged), and the most kept.
const NOISE_MIN: usize = 20;
const NOISE_KEPT: usize = 200;
/// The widest baseline interval interpolated across, in usual gaps.
pub const MAX_SPAN_GAPS: u64 = 4;
const REFERENCE_KEPT: usize = 64;
const GAPS_KEPT: usize = 16;
const WAITING_KEPT: usize = 10_000;

impl PartingTracker {
    pub fn new(tol: Tolerance) -> Self {
        PartingTracker { tol, reference: VecDeque::new(), gaps: VecDeque::new(), waiting: VecDeque::new(), judged: VecDeque::new(), levels: VecDeque::new(), streak: 0, side: 0.0, parted: false }
    }

    /// A point of the baseline. The first parting, once, as the compared point it starts at.
    pub fn observe_baseline(&mut self, step: u64, value: f64) -> Option<Judged> {
        if self.parted || !value.is_finite() {
            return None;
        }
        // A restart logs its steps again from its checkpoint: the newer history wins.
        while self.reference.back().is_some_and(|(s, _)| *s >= step) {
            self.reference.pop_back();
        }
        if let Some(&(last, _)) = self.reference.back() {
            if self.gaps.len() == GAPS_KEPT {
                self.gaps.pop_front();
            }
            self.gaps.push_back(step - last);
        }
        if self.reference.len() == REFERENCE_KEPT {
            self.reference.pop_front();
        }
        self.reference.push_back((step, value));
        while self.waiting.front().is_some_and(|(s, _)| *s <= step) {
            let (s, v) = self.waiting.pop_front()?;
            if let Some(j) = self.judge(s, v) {
                return Some(j);
            }
        }
        None
    }

    /// A point of the run. The first parting, once.
    pub fn observe_run(&mut self, step: u64, value: f64) -> Option<Judged> {
        if self.parted || !value.is_finite() {
            return None;
        }
        while self.waiting.back().is_some_and(|(s, _)| *s >= step) {
            self.waiting.pop_back();
        }
        if self.reference.back().is_some_and(|(s, _)| *s >= step) {
            return self.judge(step, value);
        }
        if self.waiting.len() < WAITING_KEPT {
            self.waiting.push_back((step, value));
        }
        None
    }

    /// The baseline's value at `step`: its own, or interpolated between its
    /// points around it when they are no more than a few usual gaps apart.
    fn baseline_at(&self, step: u64) -> Option<f64> {
        let i = self.reference.partition_point(|(s, _)| *s < step);
        let &(s1, v1) = self.reference.get(i)?;
        if s1 == step {
            return Some(v1);
        }
        let &(s0, v0) = self.reference.get(i.checked_sub(1)?)?;
        let mut gaps: Vec<u64> = self.gaps.iter().copied().collect();
        gaps.sort_unstable();
        let usual = gaps.get(gaps.len() / 2).copied().unwrap_or(s1 - s0).max(1);
        (s1 - s0 <= MAX_SPAN_GAPS * usual).then(|| v0 + (v1 - v0) * (step - s0) as f64 / (s1 - s0) as f64)
    }

    fn judge(&mut self, step: u64, run: f64) -> Option<Judged> {
        let baseline = self.baseline_at(step)?;
        let gap = run - baseline;
        let diff = if gap.abs() <= self.tol.abs { 0.0 } else { gap / baseline.abs().max(run.abs()) };
        if self.judged.len() == 3 * LEVEL_POINTS + self.tol.k {
            self.judged.pop_front();
        }
        self.judged.push_back(Judged { step, diff, baseline, run });
        let n = self.judged.len().min(LEVEL_POINTS);
        let newest: Vec<f64> = self.judged.iter().rev().take(n).map(|j| j.diff).collect();
        let level = super::stats::median(&newest)?;
        // The spread of the level so far, the newest few left out (an event under
        // way is not its own noise).
        let past = self.levels.len().saturating_sub(LEVEL_POINTS + self.tol.k);
        let spread = if past >= NOISE_MIN {
            let older: Vec<f64> = self.levels.iter().take(past).copied().collect();
            super::stats::median_mad(&older).map_or(0.0, |(_, mad)| super::stats::MAD_TO_SIGMA * mad)
        } else {
            0.0
        };
        if self.levels.len() == NOISE_KEPT {
            self.levels.pop_front();
        }
        self.levels.push_back(level);
        // Until the level's spread is known, nothing parts: two seeds of a noisy
        // metric differ by more than the tolerance from their first points.
        let parted = past >= NOISE_MIN && level.abs() > self.tol.rel && level.abs() > NOISE_Z * spread;
        let side = level.signum();
        self.streak = if !parted { 0 } else if self.streak > 0 && side == self.side { self.streak + 1 } else { 1 };
        self.side = side;
        // Twice as many parted levels in a row as a level has points, so that two
        // disjoint sets of points agree: a level beyond the tolerance can rest on
        // three points of the five, and five overlapping levels on five points of
        // nine (heavy-tailed noise with memory in either seed); a run that has
        // parted keeps most of its points beyond it.
        if self.streak < self.tol.k.max(2 * LEVEL_POINTS) {
            return None;
        }
        self.parted = true;
        // The first compared point of the stretch beyond the tolerance on this side.
        let beyond = |j: &Judged| j.diff * side > self.tol.rel;
        let first = self.judged.iter().rev().take_while(|j| beyond(j)).last().or_else(|| self.judged.iter().rev().take(self.tol.k).find(|j| beyond(j))).or(self.judged.back())?;
        Some(*first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: &[f64]) -> Vec<(u64, f64)> {
        values.iter().enumerate().map(|(i, v)| (i as u64 + 1, *v)).collect()
    }

    #[test]
    fn identical_runs_never_diverge() {
        let a = series(&[3.0, 2.5, 2.0, f64::NAN]);
        assert_eq!(first_divergence(&a, &a, Tolerance::default()), None);
    }

    #[test]
    fn divergence_is_the_first_step_of_k_disagreeing_steps() {
        let a = series(&[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        // Step 2 is a lone blip; steps 5..7 disagree for good.
        let b = series(&[1.0, 1.5, 1.0, 1.0, 1.2, 1.3, 1.4]);
        assert_eq!(first_divergence(&a, &b, Tolerance::new(0.01, 0.0, 3)), Some(5));
        assert_eq!(first_divergence(&a, &b, Tolerance::new(0.01, 0.0, 1)), Some(2));
    }

    #[test]
    fn relative_band_scales_with_magnitude() {
        let tol = Tolerance::new(0.0, 0.01, 1);
        assert!(tol.agree(1000.0, 1005.0));
        assert!(!tol.agree(1.0, 1.05));
        assert!(!tol.agree(1.0, f64::INFINITY));
        assert!(!tol.agree(1.0, f64::NAN));
    }

    #[test]
    fn only_shared_steps_are_compared() {
        let a = vec![(1, 1.0), (2, 1.0), (4, 1.0)];
        let b = vec![(2, 1.0), (3, 9.0), (4, 1.0)];
        assert_eq!(first_divergence(&a, &b, Tolerance::new(0.0, 0.0, 1)), None);
    }

    /// A small seeded noise source for the tables below.
    fn noise(seed: u64) -> impl FnMut() -> f64 {
        let mut rng = crate::workload::rng::SplitMix64::new(seed);
        move || {
            // The sum of four uniforms, centred: close enough to a normal.
            (0..4).map(|_| rng.unit()).sum::<f64>() - 2.0
        }
    }

    /// Feeds a baseline logged every `every_a` steps from `phase_a` and a run
    /// every `every_b` from `phase_b`, in step order (a restart of the run at
    /// `restart` goes back 200 steps); returns the parting's first step, if any.
    #[allow(clippy::too_many_arguments)]
    fn parting(every_a: u64, phase_a: u64, every_b: u64, phase_b: u64, sigma: f64, run: impl Fn(u64) -> f64, end_a: u64, restart: Option<u64>) -> Option<u64> {
        let mut t = PartingTracker::new(Tolerance::new(1e-6, 0.05, 3));
        let (mut na, mut nb) = (noise(1), noise(2));
        let curve = |s: u64| 2.0 + 3.0 / (1.0 + s as f64 / 200.0);
        let mut b_steps: Vec<u64> = (0..).map(|k| phase_b + k * every_b).take_while(|s| *s <= 4000).collect();
        if let Some(at) = restart {
            let cut = b_steps.partition_point(|s| *s < at);
            let again: Vec<u64> = b_steps[..cut].iter().copied().filter(|s| *s + 200 >= at).collect();
            b_steps.splice(cut..cut, again);
        }
        let mut a = (0..).map(|k| phase_a + k * every_a).take_while(|s| *s <= end_a).peekable();
        for sb in b_steps {
            while let Some(sa) = a.next_if(|s| *s <= sb) {
                if let Some(j) = t.observe_baseline(sa, curve(sa) * (1.0 + sigma * na())) {
                    return Some(j.step);
                }
            }
            if let Some(j) = t.observe_run(sb, curve(sb) * (1.0 + sigma * nb()) * run(sb)) {
                return Some(j.step);
            }
        }
        None
    }

    /// Should part / should not: a run against its baseline, different seeds.
    #[test]
    fn a_run_parts_from_its_baseline_whatever_either_logs() {
        let same = |_: u64| 1.0;
        let shift = |s: u64| if s >= 2000 { 1.2 } else { 1.0 };
        let gradual = |s: u64| 1.0 + 0.3 * (s.saturating_sub(2000) as f64 / 500.0).min(1.0);
        let burst = |s: u64| if (2000..2060).contains(&s) { 1.2 } else { 1.0 };
        let cases: [(&str, Option<u64>); 13] = [
            ("six points 20% apart (a burst of noise with memory), no parting", parting(10, 0, 10, 0, 0.01, burst, 4000, None)),
            ("same steps, own noise, no parting", parting(10, 0, 10, 0, 0.01, same, 4000, None)),
            ("every 10 vs every 25 at other offsets, no parting", parting(10, 5, 25, 0, 0.01, same, 4000, None)),
            ("noisy metric (15% per point), no parting", parting(10, 0, 10, 0, 0.15, same, 4000, None)),
            ("a restart that logs 200 steps again, no parting", parting(10, 0, 10, 0, 0.01, same, 4000, Some(2500))),
            ("a baseline that ends first, no parting", parting(10, 0, 10, 0, 0.01, same, 2500, None)),
            ("level shift, same steps", parting(10, 0, 10, 0, 0.01, shift, 4000, None)),
            ("level shift, steps never shared", parting(10, 5, 25, 0, 0.01, shift, 4000, None)),
            ("level shift, the run logs more often", parting(50, 0, 10, 3, 0.01, shift, 4000, None)),
            ("gradual parting", parting(10, 0, 20, 7, 0.01, gradual, 4000, None)),
            ("level shift after a restart", parting(10, 0, 10, 0, 0.01, shift, 4000, Some(1500))),
            ("level shift, a noisy metric", parting(10, 0, 10, 0, 0.03, |s| if s >= 2000 { 1.5 } else { 1.0 }, 4000, None)),
            ("after the baseline ended: nothing to compare", parting(10, 0, 10, 0, 0.01, shift, 1900, None)),
        ];
        for (what, got) in cases {
            let want = match what {
                w if w.contains("no parting") || w.contains("nothing to compare") => None,
                w if w.contains("gradual") => Some(2000..2400),
                _ => Some(2000..2100),
            };
            match want {
                None => assert_eq!(got, None, "{what}"),
                Some(r) => assert!(got.is_some_and(|s| r.contains(&s)), "{what}: {got:?}"),
            }
        }
    }

    #[test]
    fn no_interpolation_across_a_gap_in_the_baseline() {
        let mut t = PartingTracker::new(Tolerance::new(0.0, 0.05, 1));
        // 40 agreeing points, the run halfway between the baseline's.
        for s in (0..400).step_by(10) {
            assert!(t.observe_baseline(s, 1.0).is_none() && t.observe_run(s + 5, 1.0).is_none());
        }
        // The baseline's next point is 1,000 steps on: step 900 is not judged.
        assert_eq!(t.observe_run(900, 9.0), None);
        assert_eq!(t.observe_baseline(1390, 1.0), None);
        // From there the run sits apart: the parting starts at the first point
        // compared after the gap, never at step 900.
        let mut parted = None;
        for s in (1395..1700).step_by(10) {
            parted = parted.or(t.observe_run(s, 9.0)).or(t.observe_baseline(s + 5, 1.0));
        }
        assert_eq!(parted.map(|j| (j.step, j.baseline, j.run)), Some((1395, 1.0, 9.0)));
    }

    #[test]
    fn tracker_reports_once() {
        let mut t = DivergenceTracker::new(Tolerance::new(0.0, 0.0, 2));
        assert_eq!(t.observe(1, 1.0, 2.0), None);
        assert_eq!(t.observe(2, 1.0, 2.0), Some(1));
        assert_eq!(t.observe(3, 1.0, 2.0), None);
        assert_eq!(t.diverged_at(), Some(1));
    }
}
