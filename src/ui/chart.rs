//! Chart data for a pane: a window of a series reduced to at most two points per
//! terminal column (the minimum and maximum in that column, in step order), so a
//! frame costs O(points in the window) to reduce and O(width) to draw, whatever the
//! series length; optional EMA smoothing and log scale.
use crate::metrics::throughput::Ema;
use crate::metrics::series::Reading;
use crate::metrics::Series;

/// The step range a chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    All,
    /// The last N steps.
    Last(u64),
    /// `AROUND_HALF_SPAN` steps either side of a step (an alert's).
    Around(u64),
}

/// Steps shown either side of the step a `Window::Around` centres on.
pub const AROUND_HALF_SPAN: u64 = 50;

/// Windows that `+` / `-` step through, widest last.
pub const WINDOWS: [Window; 6] =
    [Window::Last(100), Window::Last(500), Window::Last(2_000), Window::Last(10_000), Window::Last(100_000), Window::All];

impl Window {
    pub fn label(&self) -> String {
        match self {
            Window::All => "all steps".into(),
            Window::Last(n) => format!("last {} steps", crate::report::format::si(*n as f64)),
            Window::Around(step) => format!("around step {step}"),
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Transform {
    /// EMA weight of each new point; `None` for raw values.
    pub ema_alpha: Option<f64>,
    /// Plot log10 of the value (non-positive values are left out).
    pub log10: bool,
}

/// A reduced series ready for a ratatui `Dataset`, with its bounds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reduced {
    pub points: Vec<(f64, f64)>,
    pub x_bounds: [f64; 2],
    pub y_bounds: [f64; 2],
}

/// The step range shown for `window` ending at `last_step`.
pub fn x_range(window: Window, first_step: u64, last_step: u64) -> (u64, u64) {
    match window {
        Window::All => (first_step, last_step.max(first_step + 1)),
        Window::Last(n) => (last_step.saturating_sub(n).max(first_step), last_step.max(first_step + 1)),
        Window::Around(step) => {
            let from = step.saturating_sub(AROUND_HALF_SPAN).max(first_step);
            (from, (step + AROUND_HALF_SPAN).max(from + 1))
        }
    }
}

/// Reduces the part of `series` inside `window` to at most `2 * columns` points.
/// EMA smoothing runs over the points before the window too, so panning does not
/// change a smoothed value.
pub fn reduce(series: &Series, window: Window, columns: usize, t: Transform) -> Reduced {
    let (Some(first), Some(last)) = (series.first_step(), series.last_step()) else { return Reduced::default() };
    let (x0, x1) = x_range(window, first, last);
    let start = series.first_at_or_after(x0);
    let end = series.first_at_or_after(x1.saturating_add(1)).max(start);
    let columns = columns.max(1);
    match t.ema_alpha {
        // The series keeps the smoothing's state and per-column extremes as points
        // arrive: a frame reads them, whatever the run's length.
        None => reduce_from_columns(series, start..end, (x0, x1), columns, Reading { smoothed: false, positive_only: t.log10 }),
        Some(alpha) if alpha == crate::metrics::series::SMOOTHING_ALPHA => {
            reduce_from_columns(series, start..end, (x0, x1), columns, Reading { smoothed: true, positive_only: t.log10 })
        }
        Some(alpha) => {
            let mut e = Ema::new(alpha);
            for v in series.values(0..start).iter().filter(|v| v.is_finite()) {
                e.update(*v);
            }
            reduce_by_column(series, start..end, (x0, x1), columns, t.log10, Some(e))
        }
    }
}

/// The index where each column of the chart starts, and the end of the last:
/// column `col` holds the steps that round to it, x < x0 + (col + 0.5) * span / (columns - 1).
/// When a column spans [`SNAP_BLOCKS`] blocks or more, its edges move to the nearest
/// block edge (by at most a quarter column), so the series answers from block
/// summaries without decoding: the extremes drawn stay exact for the columns drawn.
/// A column of two chunks or more ends at a chunk edge the same way, and reads the
/// chunks' extremes the series keeps once read.
fn column_bounds(series: &Series, range: std::ops::Range<usize>, (x0, x1): (u64, u64), columns: usize) -> Vec<usize> {
    let span = (x1 - x0).max(1) as f64;
    let per_column = range.len() / columns;
    let snap = |i: usize| {
        if per_column >= SNAP_BLOCKS * crate::metrics::series::BLOCK {
            series.nearest_block_edge(i)
        } else if per_column >= SNAP_BLOCKS * crate::metrics::series::CHUNK {
            series.nearest_chunk_edge(i)
        } else {
            i
        }
    };
    let mut bounds = Vec::with_capacity(columns + 1);
    bounds.push(range.start);
    for col in 0..columns {
        let to = if col + 1 == columns {
            range.end
        } else {
            let edge = x0 as f64 + (col as f64 + 0.5) * span / (columns - 1).max(1) as f64;
            let to = series.partition_point(|s| (s as f64) < edge);
            snap(to).clamp(range.start, range.end)
        };
        bounds.push(to.max(*bounds.last().unwrap_or(&range.start)));
    }
    bounds
}

/// Points per column, in blocks, from which a chart's columns end at block edges.
const SNAP_BLOCKS: usize = 2;

/// Each column's lowest and highest reading, in step order: at most two points per
/// column. Non-finite points are left out (the health view reports them), and so
/// are non-positive ones on a log scale.
fn reduce_from_columns(series: &Series, range: std::ops::Range<usize>, (x0, x1): (u64, u64), columns: usize, reading: Reading) -> Reduced {
    let bounds = column_bounds(series, range, (x0, x1), columns);
    let mut points = Vec::with_capacity(2 * columns);
    let (mut y_min, mut y_max) = (f64::INFINITY, f64::NEG_INFINITY);
    let y = |v: f64| if reading.positive_only { v.log10() } else { v };
    for col in series.columns(&bounds, reading).into_iter().flatten() {
        let (a, b) = if col.min.index <= col.max.index { (col.min, col.max) } else { (col.max, col.min) };
        let (a, b) = ((a.step as f64, y(a.value)), (b.step as f64, y(b.value)));
        points.push(a);
        if b != a {
            points.push(b);
        }
        y_min = y_min.min(a.1.min(b.1));
        y_max = y_max.max(a.1.max(b.1));
    }
    let y_bounds = if points.is_empty() { [0.0, 1.0] } else { pad_bounds(y_min, y_max) };
    Reduced { points, x_bounds: [x0 as f64, x1 as f64], y_bounds }
}

/// The reduction for any smoothing weight, from the window's points: columns are
/// contiguous slices (steps are increasing), found by binary search and scanned
/// with a tight min/max loop. With `ema` (its state before the range), the values
/// are smoothed in passing: columns are visited in step order.
fn reduce_by_column(series: &Series, range: std::ops::Range<usize>, (x0, x1): (u64, u64), columns: usize, log10: bool, mut ema: Option<Ema>) -> Reduced {
    let steps = series.steps(range.clone());
    let values = series.values(range);
    let span = (x1 - x0).max(1) as f64;
    let mut points = Vec::with_capacity(2 * columns);
    let (mut y_min, mut y_max) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut from = 0;
    for col in 0..columns {
        // Steps that round to this column: x < x0 + (col + 0.5) * span / (columns - 1).
        let edge = if col + 1 == columns { f64::INFINITY } else { x0 as f64 + (col as f64 + 0.5) * span / (columns - 1).max(1) as f64 };
        let to = from + steps[from..].partition_point(|s| (*s as f64) < edge);
        let (mut lo, mut hi) = ((f64::INFINITY, 0usize), (f64::NEG_INFINITY, 0usize));
        for (i, &raw) in values[from..to].iter().enumerate() {
            // Non-finite points are left out (the health view reports them), and so
            // are non-positive ones on a log scale.
            if !raw.is_finite() {
                continue;
            }
            let v = match ema.as_mut() {
                Some(e) => e.update(raw),
                None => raw,
            };
            if log10 && v <= 0.0 {
                continue;
            }
            if v < lo.0 {
                lo = (v, i);
            }
            if v > hi.0 {
                hi = (v, i);
            }
        }
        if lo.0.is_finite() || hi.0.is_finite() {
            let y = |v: f64| if log10 { v.log10() } else { v };
            let point = |(v, i): (f64, usize)| (steps[from + i] as f64, y(v));
            let (a, b) = if lo.1 <= hi.1 { (lo, hi) } else { (hi, lo) };
            let (a, b) = (point(a), point(b));
            points.push(a);
            if b != a {
                points.push(b);
            }
            y_min = y_min.min(a.1.min(b.1));
            y_max = y_max.max(a.1.max(b.1));
        }
        from = to;
    }
    let y_bounds = if points.is_empty() { [0.0, 1.0] } else { pad_bounds(y_min, y_max) };
    Reduced { points, x_bounds: [x0 as f64, x1 as f64], y_bounds }
}

/// The part of `series` inside `window` as `columns` means, for a strip of cells
/// (one per column, left to right): the window's points are split into `columns`
/// runs of consecutive points; with fewer points than columns a point spans several
/// columns, so no column is empty. Returns the means (`None` where every point was
/// non-finite) and the first and last step shown.
pub fn column_means(series: &Series, window: Window, columns: usize) -> (Vec<Option<f64>>, Option<(u64, u64)>) {
    let (Some(first), Some(last)) = (series.first_step(), series.last_step()) else { return (Vec::new(), None) };
    let (x0, x1) = x_range(window, first, last);
    let start = series.first_at_or_after(x0);
    let end = series.first_at_or_after(x1.saturating_add(1)).max(start);
    let n = end - start;
    if n == 0 || columns == 0 {
        return (Vec::new(), None);
    }
    // Cells of two blocks or more end at block edges, as chart columns do, so the
    // series answers from its block summaries.
    let snap = n / columns >= SNAP_BLOCKS * crate::metrics::series::BLOCK;
    let edge = |k: usize| if snap { series.nearest_block_edge(start + k).clamp(start, end) } else { start + k };
    let cells: Vec<std::ops::Range<usize>> = (0..columns)
        .map(|c| {
            let from = edge(c * n / columns);
            from..edge(((c + 1) * n / columns).max(c * n / columns + 1)).max(from + 1)
        })
        .collect();
    let means = series.sums(&cells).into_iter().map(|(sum, count)| (count > 0).then(|| sum / count as f64)).collect();
    (means, series.step_at(start).zip(series.step_at(end - 1)))
}

/// Y bounds with a little headroom, never empty. The headroom never crosses
/// zero: a series that never goes negative (a rate, a memory) is not drawn on an
/// axis that says it could.
pub fn pad_bounds(lo: f64, hi: f64) -> [f64; 2] {
    if !(lo.is_finite() && hi.is_finite()) {
        return [0.0, 1.0];
    }
    let span = hi - lo;
    let d = if span <= f64::EPSILON * hi.abs().max(1.0) {
        if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 }
    } else {
        span * 0.05
    };
    let below = if lo > 0.0 && lo - d < 0.0 { 0.0 } else { lo - d };
    let above = if hi < 0.0 && hi + d > 0.0 { 0.0 } else { hi + d };
    [below, above]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(n: u64, f: impl Fn(u64) -> f64) -> Series {
        let mut s = Series::default();
        for i in 1..=n {
            s.push(i, i as f64, f(i));
        }
        s
    }

    #[test]
    fn headroom_does_not_cross_zero() {
        assert_eq!(pad_bounds(10.0, 200.0), [0.5, 209.5]);
        assert_eq!(pad_bounds(1.0, 200.0)[0], 0.0);
        assert_eq!(pad_bounds(-200.0, -1.0)[1], 0.0);
        assert_eq!(pad_bounds(-1.0, 1.0), [-1.1, 1.1]);
        // A constant zero still gets a visible band.
        assert_eq!(pad_bounds(0.0, 0.0), [-1.0, 1.0]);
    }

    #[test]
    fn long_series_reduce_to_two_points_per_column() {
        let s = series(1_000_000, |i| (i % 1000) as f64);
        let r = reduce(&s, Window::All, 100, Transform::default());
        assert!(r.points.len() <= 200, "{}", r.points.len());
        // Extremes survive the reduction.
        assert!(r.points.iter().any(|p| p.1 == 999.0));
        assert!(r.points.iter().any(|p| p.1 == 0.0));
        assert!(r.points.windows(2).all(|w| w[0].0 <= w[1].0), "x stays ordered");
    }

    #[test]
    fn window_keeps_the_last_steps() {
        let s = series(1000, |i| i as f64);
        let r = reduce(&s, Window::Last(100), 50, Transform::default());
        assert_eq!(r.x_bounds, [900.0, 1000.0]);
        assert!(r.points.iter().all(|p| p.0 >= 900.0));
    }

    #[test]
    fn around_window_centres_on_a_step_and_clips_both_sides() {
        let s = series(1000, |i| i as f64);
        let r = reduce(&s, Window::Around(500), 50, Transform::default());
        assert_eq!(r.x_bounds, [450.0, 550.0]);
        assert!(r.points.iter().all(|p| (450.0..=550.0).contains(&p.0)), "{:?}", r.points);
        let r = reduce(&s, Window::Around(500), 50, Transform { ema_alpha: Some(0.5), log10: false });
        assert!(r.points.iter().all(|p| (450.0..=550.0).contains(&p.0)));
    }

    #[test]
    fn log_scale_drops_non_positive_and_takes_log10() {
        let s = series(3, |i| [0.0, 10.0, 100.0][i as usize - 1]);
        let r = reduce(&s, Window::All, 10, Transform { log10: true, ema_alpha: None });
        assert_eq!(r.points, vec![(2.0, 1.0), (3.0, 2.0)]);
    }

    #[test]
    fn smoothing_uses_points_before_the_window() {
        let s = series(200, |i| if i <= 100 { 0.0 } else { 10.0 });
        let r = reduce(&s, Window::Last(50), 50, Transform { ema_alpha: Some(0.1), log10: false });
        // Still catching up from the zeros before the window: below 10 at its start.
        assert!(r.points.first().unwrap().1 < 10.0 && r.points.first().unwrap().1 > 9.0);
    }

    #[test]
    fn smoothing_from_the_kept_state_matches_smoothing_from_the_start() {
        let s = series(5000, |i| if i % 89 == 0 { f64::NAN } else { (i as f64 * 0.21).sin() + i as f64 * 1e-3 });
        let alpha = crate::metrics::series::SMOOTHING_ALPHA;
        for window in [Window::All, Window::Last(100), Window::Last(2000), Window::Around(3100)] {
            let kept = reduce(&s, window, 60, Transform { ema_alpha: Some(alpha), log10: false });
            let (x0, x1) = x_range(window, 1, 5000);
            let start = s.first_at_or_after(x0);
            let end = s.first_at_or_after(x1 + 1);
            let mut e = Ema::new(alpha);
            s.values(0..start).iter().filter(|v| v.is_finite()).for_each(|v| {
                e.update(*v);
            });
            assert_eq!(kept, reduce_by_column(&s, start..end, (x0, x1), 60, false, Some(e)), "{window:?}");
            assert!(!kept.points.is_empty());
        }
        assert_eq!(crate::metrics::series::SMOOTHING_ALPHA, crate::ui::view::SMOOTHING_ALPHA, "the chart's smoothing is the one series keep");
    }

    #[test]
    fn column_means_split_the_window_without_gaps() {
        let s = series(10, |i| i as f64);
        let (means, range) = column_means(&s, Window::All, 5);
        assert_eq!(means, vec![Some(1.5), Some(3.5), Some(5.5), Some(7.5), Some(9.5)]);
        assert_eq!(range, Some((1, 10)));
        let (means, range) = column_means(&s, Window::Last(3), 8);
        assert_eq!(range, Some((7, 10)));
        let expected = [7.0, 7.0, 8.0, 8.0, 9.0, 9.0, 10.0, 10.0].map(Some);
        assert_eq!(means, expected, "fewer points than columns: each spans two");
        let (means, _) = column_means(&series(4, |i| if i < 3 { f64::NAN } else { 1.0 }), Window::All, 2);
        assert_eq!(means, vec![None, Some(1.0)]);
        assert_eq!(column_means(&Series::default(), Window::All, 10), (Vec::new(), None));
    }

    #[test]
    fn nan_points_are_skipped_and_flat_series_get_bounds() {
        let s = series(10, |i| if i == 5 { f64::NAN } else { 2.0 });
        let r = reduce(&s, Window::All, 20, Transform::default());
        assert_eq!(r.points.len(), 9);
        assert!(r.y_bounds[0] < 2.0 && r.y_bounds[1] > 2.0);
    }
}
