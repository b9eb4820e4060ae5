//! Where two runs of the same metric part ways. Two values agree when they are
//! within an absolute band or a relative one; the runs diverge at the first step of
//! `k` consecutive shared steps that all disagree, so a single noisy step is not a
//! divergence. Used by replicas (nondeterminism), baselines and `rlmon compare`.

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

    #[test]
    fn tracker_reports_once() {
        let mut t = DivergenceTracker::new(Tolerance::new(0.0, 0.0, 2));
        assert_eq!(t.observe(1, 1.0, 2.0), None);
        assert_eq!(t.observe(2, 1.0, 2.0), Some(1));
        assert_eq!(t.observe(3, 1.0, 2.0), None);
        assert_eq!(t.diverged_at(), Some(1));
    }
}
