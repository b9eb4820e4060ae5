//! Representation dimensionality of an activation matrix A (tokens x features),
//! from its singular values s. Eigenvalues of AᵀA are l = s²; the participation
//! ratio here uses l (the covariance spectrum), not s.

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dimensionality {
    /// ||A||_F² / ||A||_2² = Σ s² / max s².
    pub stable_rank: f64,
    /// (Σ l)² / Σ l², l = s².
    pub participation_ratio: f64,
    /// Fewest components holding 90% of Σ s².
    pub cum_energy_90: f64,
    /// ||A||_* / (sqrt(rank) ||A||_F) = Σ s / (sqrt(rank) sqrt(Σ s²)); 1 when all
    /// non-zero singular values are equal.
    pub nuclear_norm_ratio: f64,
}

/// Singular values below this fraction of the largest count as zero for the rank.
const RANK_TOL: f64 = 1e-7;

impl Dimensionality {
    /// `None` for an all-zero (or empty) matrix.
    pub fn from_singular_values(s: &[f64]) -> Option<Self> {
        let max = s.iter().cloned().fold(0.0, f64::max);
        if !(max > 0.0 && max.is_finite()) {
            return None;
        }
        let energy: f64 = s.iter().map(|x| x * x).sum();
        let l2: f64 = s.iter().map(|x| x.powi(4)).sum();
        let mut sorted: Vec<f64> = s.to_vec();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let mut acc = 0.0;
        let mut k = 0;
        for x in &sorted {
            acc += x * x;
            k += 1;
            if acc >= 0.9 * energy {
                break;
            }
        }
        let rank = s.iter().filter(|x| **x > RANK_TOL * max).count().max(1);
        Some(Dimensionality {
            stable_rank: energy / (max * max),
            participation_ratio: energy * energy / l2,
            cum_energy_90: k as f64,
            nuclear_norm_ratio: s.iter().sum::<f64>() / ((rank as f64).sqrt() * energy.sqrt()),
        })
    }

    /// Each measure under its catalog name (`catalog::NDT_MEASURES`, in that order).
    pub fn named(&self) -> [(&'static str, f64); 4] {
        let [a, b, c, d] = super::catalog::NDT_MEASURES;
        [(a, self.stable_rank), (b, self.participation_ratio), (c, self.cum_energy_90), (d, self.nuclear_norm_ratio)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_like_matrix_uses_every_direction() {
        // A = I_4: s = [1, 1, 1, 1].
        let d = Dimensionality::from_singular_values(&[1.0; 4]).unwrap();
        assert_eq!(d.stable_rank, 4.0);
        assert_eq!(d.participation_ratio, 4.0);
        assert_eq!(d.cum_energy_90, 4.0);
        assert!((d.nuclear_norm_ratio - 1.0).abs() < 1e-12);
    }

    #[test]
    fn hand_computed_spectrum() {
        // A = diag(3, 1): Σs² = 10, max² = 9, Σs⁴ = 82, 90% of 10 = 9 reached by s = 3.
        let d = Dimensionality::from_singular_values(&[1.0, 3.0]).unwrap();
        assert!((d.stable_rank - 10.0 / 9.0).abs() < 1e-12);
        assert!((d.participation_ratio - 100.0 / 82.0).abs() < 1e-12);
        assert_eq!(d.cum_energy_90, 1.0);
        assert!((d.nuclear_norm_ratio - 4.0 / (2f64.sqrt() * 10f64.sqrt())).abs() < 1e-12);
    }

    #[test]
    fn rank_one_and_zero() {
        let d = Dimensionality::from_singular_values(&[5.0, 0.0, 0.0]).unwrap();
        assert_eq!((d.stable_rank, d.participation_ratio, d.cum_energy_90), (1.0, 1.0, 1.0));
        assert!((d.nuclear_norm_ratio - 1.0).abs() < 1e-12);
        assert!(Dimensionality::from_singular_values(&[0.0, 0.0]).is_none());
    }
}
