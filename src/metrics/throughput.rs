//! Throughput math: rates over windows, the whole-run rate after warm-up, and ETA.

/// Steps at the start of a run left out of its overall rate: allocator warm-up,
/// kernel selection and first-touch page faults make them unrepresentative.
pub fn warmup_steps(total_recorded: usize) -> usize {
    (total_recorded / 10).min(10)
}

/// Units processed per second over paired per-step counts and durations:
/// `sum(counts) / sum(seconds)`, which weights each step by its duration (a mean of
/// per-step rates would overweight fast steps). `None` without positive time.
pub fn rate(counts: &[f64], seconds: &[f64]) -> Option<f64> {
    let n = counts.len().min(seconds.len());
    let (c, s) = (&counts[counts.len() - n..], &seconds[seconds.len() - n..]);
    let total_s: f64 = s.iter().filter(|v| v.is_finite()).sum();
    let total_c: f64 = c.iter().filter(|v| v.is_finite()).sum();
    (total_s > 0.0).then(|| total_c / total_s)
}

/// The rate of a whole run, leaving out its warm-up steps when enough steps exist.
pub fn run_rate(counts: &[f64], seconds: &[f64]) -> Option<f64> {
    let skip = warmup_steps(counts.len().min(seconds.len()));
    rate(&counts[skip.min(counts.len())..], &seconds[skip.min(seconds.len())..])
}

/// Seconds left for `remaining_steps`, from the mean of recent step times.
pub fn eta_s(remaining_steps: u64, recent_step_times: &[f64]) -> Option<f64> {
    let finite: Vec<f64> = recent_step_times.iter().copied().filter(|v| v.is_finite() && *v >= 0.0).collect();
    if finite.is_empty() {
        return None;
    }
    let mean = finite.iter().sum::<f64>() / finite.len() as f64;
    Some(mean * remaining_steps as f64)
}

/// Exponential moving average, bias-corrected so early values are not pulled to 0.
#[derive(Debug, Clone, Copy)]
pub struct Ema {
    alpha: f64,
    acc: f64,
    weight: f64,
}

impl Ema {
    /// `alpha` in (0, 1]: the weight of each new point.
    pub fn new(alpha: f64) -> Self {
        Ema { alpha: alpha.clamp(f64::MIN_POSITIVE, 1.0), acc: 0.0, weight: 0.0 }
    }

    pub fn update(&mut self, x: f64) -> f64 {
        self.acc = (1.0 - self.alpha) * self.acc + self.alpha * x;
        self.weight = (1.0 - self.alpha) * self.weight + self.alpha;
        self.acc / self.weight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_weights_steps_by_duration() {
        // 100 tokens in 1 s then 100 tokens in 3 s: 200 / 4 = 50, not mean(100, 33.3).
        assert_eq!(rate(&[100.0, 100.0], &[1.0, 3.0]), Some(50.0));
        assert_eq!(rate(&[], &[]), None);
        assert_eq!(rate(&[5.0], &[0.0]), None);
    }

    #[test]
    fn run_rate_skips_warmup() {
        // The first slow step of 20 is dropped (20 / 10 = 2 warm-up steps).
        let mut secs = vec![1.0; 20];
        secs[0] = 10.0;
        secs[1] = 10.0;
        let counts = vec![10.0; 20];
        assert_eq!(run_rate(&counts, &secs), Some(10.0));
    }

    #[test]
    fn eta_uses_mean_recent_step_time() {
        assert_eq!(eta_s(10, &[0.5, 1.5]), Some(10.0));
        assert_eq!(eta_s(10, &[]), None);
    }

    #[test]
    fn ema_is_unbiased_at_start() {
        let mut e = Ema::new(0.1);
        assert!((e.update(4.0) - 4.0).abs() < 1e-12);
        let v = e.update(2.0);
        assert!(v > 2.0 && v < 4.0);
    }
}
