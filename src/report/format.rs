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
}
