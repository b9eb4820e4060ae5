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
}
