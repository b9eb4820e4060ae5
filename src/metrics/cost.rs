//! What a run costs, from the hardware's price per hour.

/// Price of 1,000 samples at `samples_per_s`.
pub fn per_1k_samples(price_per_hour: f64, samples_per_s: f64) -> Option<f64> {
    (samples_per_s > 0.0 && price_per_hour.is_finite()).then(|| price_per_hour / 3600.0 / samples_per_s * 1000.0)
}

/// Price of `seconds` of wall time.
pub fn so_far(price_per_hour: f64, seconds: f64) -> f64 {
    price_per_hour * seconds.max(0.0) / 3600.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_follows_the_hourly_price() {
        // $3.60/h at 10 samples/s: 1,000 samples take 100 s and cost $0.10.
        assert!((per_1k_samples(3.6, 10.0).unwrap() - 0.1).abs() < 1e-12);
        assert_eq!(per_1k_samples(3.6, 0.0), None);
        assert!((so_far(3.6, 1800.0) - 1.8).abs() < 1e-12);
    }
}
