//! KL(policy ‖ reference) estimated from sampled tokens, and the adaptive controller
//! of the penalty coefficient. With r = p_ref / p_policy on tokens drawn from the
//! policy (Schulman, "Approximating KL divergence"): k1 = -log r, k3 = (r - 1) - log r.
//! Both are unbiased; k3 has lower variance and is never negative.
use tch::Tensor;

use rlmon::config::rlhf::AdaptiveKl;
use rlmon::config::KlEstimator;

/// Per-token estimates, same shape as the log-probabilities of the sampled tokens.
pub fn per_token(logp: &Tensor, ref_logp: &Tensor, estimator: KlEstimator) -> Tensor {
    let log_r = ref_logp - logp;
    match estimator {
        KlEstimator::K1 => -log_r,
        KlEstimator::K3 => log_r.exp() - 1.0 - log_r,
    }
}

/// Largest relative error the controller acts on (Ziegler et al., 2019).
const MAX_PROPORTIONAL_ERROR: f64 = 0.2;

/// The KL coefficient: fixed, or adapted towards a target KL.
#[derive(Debug, Clone)]
pub struct KlController {
    coef: f64,
    adaptive: Option<AdaptiveKl>,
}

impl KlController {
    pub fn new(coef: f64, adaptive: Option<AdaptiveKl>) -> Self {
        KlController { coef, adaptive }
    }

    pub fn coef(&self) -> f64 {
        self.coef
    }

    /// After a step that measured `kl` on `samples` responses: raise the coefficient
    /// when KL is above target, lower it when below.
    pub fn update(&mut self, kl: f64, samples: usize) {
        let Some(a) = self.adaptive else { return };
        if !kl.is_finite() {
            return;
        }
        let error = (kl / a.target - 1.0).clamp(-MAX_PROPORTIONAL_ERROR, MAX_PROPORTIONAL_ERROR);
        self.coef *= 1.0 + error * samples as f64 / a.horizon;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    /// Expectation over every outcome of p, weighted by p: equals the exact KL for an
    /// unbiased estimator.
    fn expectation(p: &[f64], q: &[f64], estimator: KlEstimator) -> (f64, Vec<f64>) {
        let logp = Tensor::from_slice(p).log();
        let logq = Tensor::from_slice(q).log();
        let k = per_token(&logp, &logq, estimator);
        let values = Vec::<f64>::try_from(&k).unwrap();
        let mean = values.iter().zip(p).map(|(k, p)| k * p).sum();
        (mean, values)
    }

    #[test]
    fn k1_and_k3_are_unbiased_on_a_known_distribution() {
        let p = [0.5, 0.3, 0.2];
        let q = [0.2, 0.3, 0.5];
        let exact: f64 = p.iter().zip(&q).map(|(p, q): (&f64, &f64)| p * (p / q).ln()).sum();
        assert!((exact - 0.2749).abs() < 1e-4, "KL = {exact}");
        let (k1, k1_values) = expectation(&p, &q, KlEstimator::K1);
        let (k3, k3_values) = expectation(&p, &q, KlEstimator::K3);
        assert!((k1 - exact).abs() < 1e-12, "k1 {k1} vs {exact}");
        assert!((k3 - exact).abs() < 1e-12, "k3 {k3} vs {exact}");
        assert!(k1_values.iter().any(|&v| v < 0.0), "k1 is negative where q > p");
        assert!(k3_values.iter().all(|&v| v >= 0.0), "k3 never is");
        // Outcome 0: r = 0.4, k3 = (0.4 - 1) - ln 0.4.
        assert!((k3_values[0] - (-0.6 - 0.4f64.ln())).abs() < 1e-12);
    }

    #[test]
    fn identical_distributions_have_zero_kl() {
        let logp = Tensor::from_slice(&[0.1f32, 0.9]).log();
        for estimator in [KlEstimator::K1, KlEstimator::K3] {
            assert_eq!(per_token(&logp, &logp, estimator).abs().sum(Kind::Float).double_value(&[]), 0.0);
        }
    }

    #[test]
    fn adaptive_controller_follows_the_target() {
        let mut fixed = KlController::new(0.1, None);
        fixed.update(10.0, 64);
        assert_eq!(fixed.coef(), 0.1);
        let mut c = KlController::new(0.1, Some(AdaptiveKl { target: 0.05, horizon: 100.0 }));
        c.update(1.0, 10);
        assert!((c.coef() - 0.1 * 1.02).abs() < 1e-12, "error clipped to +20%, times 10/100");
        c.update(0.0, 10);
        assert!((c.coef() - 0.1 * 1.02 * 0.98).abs() < 1e-12, "lowered when KL is below target");
        c.update(f64::NAN, 10);
        assert!(c.coef().is_finite());
    }
}
