//! Number and duration formatting shared by text outputs.

/// A compact count or rate: 950, 12.3k, 4.56M.
pub fn si(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        format!("{v}")
    } else if a >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// `h:mm:ss` or `m:ss`.
pub fn duration(secs: f64) -> String {
    if !secs.is_finite() || secs < 0.0 {
        return "--".into();
    }
    let s = secs.round() as u64;
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// A metric value with four significant figures, `nan`/`inf` as such.
pub fn value(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v}");
    }
    let a = v.abs();
    if (1e-3..1e5).contains(&a) {
        let decimals = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.3e}")
    }
}

/// A number for a message: at most about eight characters (four significant
/// figures, scientific notation at 1e6 and above or below 1e-3), so that no
/// value, however wild, makes a message unreadable.
pub fn compact(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if (1e-3..1e6).contains(&a) {
        let decimals = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.2e}")
    }
}

/// Past this, a ratio says more about its base (at or near zero) than about the
/// value: alert messages write it capped, never as a number no one can read.
pub const RATIO_CAP: f64 = 1000.0;
/// The same cap for a share written in percent and for a distance in sigmas.
pub const PERCENT_CAP: f64 = 100.0 * RATIO_CAP;
pub const SIGMAS_CAP: f64 = RATIO_CAP;

/// A ratio for an alert message, the one way every detector writes one:
/// "3.2x", and ">1000x" past [`RATIO_CAP`] (a ratio over a base at or near
/// zero, or an infinite one).
pub fn times(ratio: f64) -> String {
    capped(ratio, RATIO_CAP, "x")
}

/// A share (0.42) for an alert message in percent: "42%", ">100000%" past
/// [`PERCENT_CAP`] (a share of an improvement that hardly exists).
pub fn percent(share: f64) -> String {
    capped(100.0 * share, PERCENT_CAP, "%")
}

/// A distance in (robust or noise) sigmas for an alert message: "9.5",
/// ">1000" past [`SIGMAS_CAP`] (a spread at or near zero).
pub fn sigmas(z: f64) -> String {
    capped(z, SIGMAS_CAP, "")
}

/// `v` as [`compact`] writes it with `unit`, or ">cap" when its size is past
/// `cap` (an infinity included); NaN stays "NaN".
fn capped(v: f64, cap: f64, unit: &str) -> String {
    if v.is_nan() {
        return format!("NaN{unit}");
    }
    if v.abs() > cap {
        let sign = if v < 0.0 { "<-" } else { ">" };
        return format!("{sign}{}{unit}", compact(cap));
    }
    format!("{}{unit}", compact(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_scales() {
        assert_eq!(si(950.0), "950");
        assert_eq!(si(12_345.0), "12.3k");
        assert_eq!(si(4_560_000.0), "4.56M");
        assert_eq!(si(3.25), "3.2");
        assert_eq!(si(0.0), "0");
    }

    #[test]
    fn durations() {
        assert_eq!(duration(42.0), "0:42");
        assert_eq!(duration(3725.0), "1:02:05");
        assert_eq!(duration(f64::NAN), "--");
    }

    #[test]
    fn values_keep_four_significant_figures() {
        assert_eq!(value(2.134567), "2.135");
        assert_eq!(value(0.0003), "3.000e-4");
        assert_eq!(value(123.456), "123.5");
        assert_eq!(value(f64::NAN), "NaN");
    }

    #[test]
    fn compact_numbers_stay_short() {
        let cases = [(2.134567, "2.135"), (-0.0412, "-0.04120"), (123456.7, "123457"), (0.0, "0"), (3e-5, "3.00e-5"), (1.5e300, "1.50e300"), (-2e-300, "-2.00e-300")];
        for (v, want) in cases {
            assert_eq!(compact(v), want, "{v}");
        }
        assert_eq!((compact(f64::NAN).as_str(), compact(f64::NEG_INFINITY).as_str()), ("NaN", "-inf"));
        for e in -320..=308 {
            for m in [1.0, -9.99999, 5.5] {
                let v = m * 10f64.powi(e);
                assert!(compact(v).len() <= 10, "{v}: {}", compact(v));
            }
        }
    }

    #[test]
    fn ratios_shares_and_sigmas_are_capped_for_messages() {
        assert_eq!(times(3.2), "3.200x");
        assert_eq!(times(999.0), "999.0x");
        assert_eq!(times(1000.0), "1000x");
        // A ratio over a base at or near zero: 2.1 / 1e-300, or over exactly zero.
        assert_eq!(times(2.1 / 1e-300), ">1000x");
        assert_eq!(times(2.1 / 0.0), ">1000x");
        assert_eq!(times(f64::NAN), "NaNx");
        assert_eq!(percent(0.42), "42.00%");
        assert_eq!(percent(3.0e8), ">100000%");
        assert_eq!(percent(-3.0e8), "<-100000%");
        assert_eq!(sigmas(9.5), "9.500");
        assert_eq!(sigmas(1e12), ">1000");
        for e in -320..=308 {
            let v = 10f64.powi(e);
            for s in [times(v), percent(v), sigmas(v), times(-v)] {
                assert!(s.len() <= 12, "{v}: {s}");
            }
        }
    }
}
