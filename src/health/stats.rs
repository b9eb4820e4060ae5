//! Small streaming statistics the detectors share: a bounded window of recent
//! values with robust summaries (median, MAD), least-squares slope, and a
//! persistence counter. Each update is O(1); each summary is O(window), except
//! [`SortedSeries`]'s, which keeps its windows sorted as values arrive.
use std::collections::VecDeque;

/// Scale that makes the MAD estimate the standard deviation of normal noise.
pub const MAD_TO_SIGMA: f64 = 1.4826;

/// The last `capacity` finite values, oldest first.
#[derive(Debug, Clone)]
pub struct Window {
    capacity: usize,
    values: VecDeque<f64>,
}

impl Window {
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Window { capacity, values: VecDeque::with_capacity(capacity) }
    }

    pub fn push(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        if self.values.len() == self.capacity {
            self.values.pop_front();
        }
        self.values.push_back(v);
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.values.len() == self.capacity
    }

    pub fn clear(&mut self) {
        self.values.clear();
    }

    pub fn last(&self) -> Option<f64> {
        self.values.back().copied()
    }

    /// The newest `n` values (fewer if the window holds fewer), oldest first.
    pub fn newest(&self, n: usize) -> Vec<f64> {
        let skip = self.values.len().saturating_sub(n);
        self.values.iter().skip(skip).copied().collect()
    }

    /// Values from `from` (0 = oldest) up to, not including, `to`.
    pub fn range(&self, from: usize, to: usize) -> Vec<f64> {
        self.values.iter().skip(from).take(to.saturating_sub(from)).copied().collect()
    }

    pub fn to_vec(&self) -> Vec<f64> {
        self.values.iter().copied().collect()
    }

    /// The values, oldest first, without a copy.
    pub fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        self.values.iter().copied()
    }

    /// [`median`] of the values, bit for bit: selected over the scratch buffer
    /// filled straight from the window, without a copy of its own.
    pub fn median(&self) -> Option<f64> {
        if self.values.is_empty() {
            return None;
        }
        Some(with_scratch(self.values.iter().copied(), select_median))
    }

    /// [`mean`] of values `from..to` (0 = oldest), bit for bit: the same sum, left
    /// to right, without a copy.
    pub fn mean_of(&self, from: usize, to: usize) -> Option<f64> {
        let to = to.min(self.values.len());
        let from = from.min(to);
        (to > from).then(|| self.values.range(from..to).sum::<f64>() / (to - from) as f64)
    }

    pub fn max(&self) -> Option<f64> {
        self.values.iter().copied().reduce(f64::max)
    }
}

/// The last `capacity` values of a [`SortedSeries`] span, sorted (by
/// `f64::total_cmp`), so that order statistics (median, MAD, quantiles) are read
/// in O(1) or O(log w) instead of selecting over a copy at every point. A push is
/// a binary search for the leaving value's place (the series hands it in: the
/// window keeps no copy of the values in arrival order), one for the new value's
/// and a shift of the values between the two (in a short window, a step-by-step
/// shift that finds the new place as it goes).
#[derive(Debug, Clone)]
struct SortedWindow {
    capacity: usize,
    sorted: Vec<f64>,
    /// NaNs among the values: while there are none, a search for a value that
    /// is neither a zero nor a NaN compares as floats (see `push`).
    nans: usize,
}

impl SortedWindow {
    fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        SortedWindow { capacity, sorted: Vec::with_capacity(capacity), nans: 0 }
    }

    /// Adds `v`; `leaving`, when the window is full, is its oldest value, which
    /// leaves it.
    fn push(&mut self, v: f64, leaving: Option<f64>) {
        let Some(old) = leaving.filter(|_| self.is_full()) else {
            let at = self.sorted.partition_point(|p| p.total_cmp(&v).is_le());
            self.sorted.insert(at, v);
            self.nans += usize::from(v.is_nan());
            return;
        };
        // A value that replaces its own bits (a constant series: a token count,
        // a learning rate after its warm-up) leaves the window as it was.
        if old.to_bits() == v.to_bits() {
            return;
        }
        // Against a value that is neither a zero nor a NaN, in a window without
        // NaNs, the float order answers every comparison as total_cmp does (a
        // zero of either sign lies on the same side of it, and equal values are
        // equal bits): the same places, with cheaper comparisons.
        let plain = |x: f64| !x.is_nan() && x != 0.0;
        if self.nans == 0 && plain(v) && plain(old) {
            self.replace_counted(old, v);
        } else {
            self.replace(old, v, |a, b| a.total_cmp(&b).is_lt());
        }
        self.nans = self.nans - usize::from(old.is_nan()) + usize::from(v.is_nan());
    }

    /// Replaces `old`, a value of the window, by `v` (not the same bits), where
    /// `less` is the window's order for comparisons of its values with either.
    /// Values equal in that order are the same bits, so wherever among its
    /// equals `v` lands, the window holds the same sequence.
    #[inline(always)]
    fn replace(&mut self, old: f64, v: f64, less: impl Fn(f64, f64) -> bool) {
        let s = &mut self.sorted[..];
        // The first value not below the old one: the old one.
        let i = s.partition_point(|p| less(*p, old));
        debug_assert!(i < s.len() && s[i].to_bits() == old.to_bits());
        let down = less(v, old);
        if s.len() <= SMALL_WINDOW {
            // A short window: the values between the old place and the new one
            // step over one at a time, without a search or a move call.
            let mut j = i;
            if down {
                while j > 0 && less(v, s[j - 1]) {
                    s[j] = s[j - 1];
                    j -= 1;
                }
            } else {
                while j + 1 < s.len() && less(s[j + 1], v) {
                    s[j] = s[j + 1];
                    j += 1;
                }
            }
            s[j] = v;
        } else if down {
            // The values between the new one's place and the old one shift up
            // by one: a single move instead of a remove and an insert.
            let at = s[..i].partition_point(|p| !less(v, *p));
            s.copy_within(at..i, at + 1);
            s[at] = v;
        } else {
            let at = i + 1 + s[i + 1..].partition_point(|p| less(*p, v));
            s.copy_within(i + 1..at, i);
            s[at - 1] = v;
        }
    }

    /// [`SortedWindow::replace`] where the float order is the window's (see
    /// `push`): the same places, found by
    /// counting. The values below a value of the window, or at or below it, are
    /// its place (the window is sorted), so the places come from one pass of
    /// independent comparisons (vectorised) instead of two binary searches, each
    /// step of which waits on the load before it.
    fn replace_counted(&mut self, old: f64, v: f64) {
        let s = &mut self.sorted[..];
        let n = s.len();
        // `i`: the first value not below the old one, the old one.
        if v < old {
            // Every value from the old one's place on is above `v`: the values at
            // or below it all lie before that place, and `at` is the new one's.
            let (i, at) = count2(s, |p| p < old, |p| p <= v);
            debug_assert!(i < n && s[i].to_bits() == old.to_bits());
            s.copy_within(at..i, at + 1);
            s[at] = v;
        } else {
            // Every value up to the old one's place is below `v`.
            let (i, at) = count2(s, |p| p < old, |p| p < v);
            debug_assert!(i < n && s[i].to_bits() == old.to_bits());
            s.copy_within(i + 1..at, i);
            s[at - 1] = v;
        }
    }

    /// Empties the window.
    fn clear(&mut self) {
        self.sorted.clear();
        self.nans = 0;
    }

    fn len(&self) -> usize {
        self.sorted.len()
    }

    fn is_full(&self) -> bool {
        self.sorted.len() == self.capacity
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    /// The values in `total_cmp` order.
    fn sorted(&self) -> &[f64] {
        &self.sorted
    }
}

/// How many of `values` pass each test, in one pass without a branch per value.
#[inline(always)]
fn count2(values: &[f64], a: impl Fn(f64) -> bool, b: impl Fn(f64) -> bool) -> (usize, usize) {
    values.iter().fold((0, 0), |(x, y), p| (x + usize::from(a(*p)), y + usize::from(b(*p))))
}

/// Windows at most this long, compared by `total_cmp` (a NaN or a zero in play),
/// replace a value by stepping the values between its old and new places over
/// one at a time (see `SortedWindow::replace`); compared as floats, every window
/// counts (`SortedWindow::replace_counted`).
const SMALL_WINDOW: usize = 32;

/// The last `capacity` values pushed, in arrival order, with sorted windows over
/// chosen spans of them (`(length, lag)`: the `length` values that end `lag`
/// before the newest), so that a detector reads the order statistics of its
/// reference, newest points or older part without copying and selecting at every
/// point. [`SortedSeries::sorted_range`] gives any span sorted: borrowed when a
/// kept window holds exactly that span, else a sorted copy (while the series
/// fills up, or for a span no window keeps). Either way the same values in the
/// same order: statistics read from it are bit-identical to selecting.
#[derive(Debug, Clone)]
pub struct SortedSeries {
    capacity: usize,
    /// The values are `buf[start..]`: one slice, moved to the front of the
    /// buffer (twice the capacity) when it fills up, every `capacity` pushes.
    buf: Vec<f64>,
    start: usize,
    kept: Vec<(usize, SortedWindow)>,
    /// Whether the windows are kept up to date (always, unless
    /// [`SortedSeries::lazy`]); whether a span was read since the last push;
    /// pushes since one was, and since a read close to the one before it.
    live: bool,
    lazy: bool,
    read: std::cell::Cell<bool>,
    unread: usize,
    since_near: usize,
}

/// A lazy series keeps its windows from a read that comes within this many
/// pushes of the one before (reads in a row: a detector's condition that now
/// holds at every point)...
const LAZY_NEAR: usize = 8;
/// ...and drops them after this many pushes without such a read.
const LAZY_IDLE: usize = 1_000;

impl SortedSeries {
    /// `spans` are `(length, lag)` pairs; one that does not fit in `capacity`
    /// values, is empty or repeats another is left out.
    pub fn new(capacity: usize, spans: &[(usize, usize)]) -> Self {
        let capacity = capacity.max(1);
        let mut kept: Vec<(usize, SortedWindow)> = Vec::new();
        for &(len, lag) in spans {
            if len > 0 && len + lag <= capacity && !kept.iter().any(|(l, w)| *l == lag && w.capacity() == len) {
                kept.push((lag, SortedWindow::new(len)));
            }
        }
        SortedSeries { capacity, buf: Vec::with_capacity(2 * capacity), start: 0, kept, live: true, lazy: false, read: std::cell::Cell::new(false), unread: usize::MAX, since_near: 0 }
    }

    /// [`SortedSeries::new`] for spans seldom read (a detector's condition
    /// checked only past its other ones): a read sorts a copy, and the windows
    /// are kept only while reads come close together (see [`LAZY_NEAR`]). The
    /// same spans either way.
    pub fn lazy(capacity: usize, spans: &[(usize, usize)]) -> Self {
        SortedSeries { live: false, lazy: true, ..SortedSeries::new(capacity, spans) }
    }

    pub fn push(&mut self, v: f64) {
        if self.lazy {
            self.follow_reads();
        }
        if self.live {
            // The windows first, from the values before this one (m of them): a
            // window `lag` back takes the value that then comes `lag` before the
            // newest, and when full lets its oldest go, `len` before that.
            let values = &self.buf[self.start..];
            let m = values.len();
            for (lag, w) in &mut self.kept {
                let lag = *lag;
                if m >= lag {
                    let entering = if lag == 0 { v } else { values[m - lag] };
                    let leaving = w.is_full().then(|| values[m - lag - w.capacity()]);
                    w.push(entering, leaving);
                }
            }
        }
        if self.len() == self.capacity {
            self.start += 1;
        }
        if self.buf.len() == 2 * self.capacity {
            self.buf.copy_within(self.start.., 0);
            self.buf.truncate(self.buf.len() - self.start);
            self.start = 0;
        }
        self.buf.push(v);
    }

    /// A lazy series' windows, before a push: kept from a read close to the one
    /// before it, filled from the values as if kept all along (they hold only
    /// the newest values, sorted); dropped after [`LAZY_IDLE`] pushes without
    /// another such read.
    fn follow_reads(&mut self) {
        self.since_near = self.since_near.saturating_add(1);
        if self.read.replace(false) {
            if self.unread < LAZY_NEAR {
                self.since_near = 0;
                if !self.live {
                    let spans: Vec<(usize, usize)> = self.kept.iter().map(|(lag, w)| (w.capacity(), *lag)).collect();
                    let mut filled = SortedSeries::new(self.capacity, &spans);
                    self.values().iter().for_each(|x| filled.push(*x));
                    self.kept = filled.kept;
                    self.live = true;
                }
            }
            self.unread = 0;
        } else {
            self.unread = self.unread.saturating_add(1);
        }
        if self.live && self.since_near > LAZY_IDLE {
            self.kept.iter_mut().for_each(|(_, w)| w.clear());
            self.live = false;
        }
    }

    pub fn len(&self) -> usize {
        self.buf.len() - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_full(&self) -> bool {
        self.len() == self.capacity
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The values in arrival order, oldest first.
    pub fn values(&self) -> &[f64] {
        &self.buf[self.start..]
    }

    /// Values `from..to` (0 = oldest) in `total_cmp` order. A kept window of
    /// lag `l` holds the newest of the values that end `l` before the newest, as
    /// many as it has taken: exactly the span when it ends there and is as long.
    pub fn sorted_range(&self, from: usize, to: usize) -> std::borrow::Cow<'_, [f64]> {
        let n = self.len();
        let to = to.min(n);
        let from = from.min(to);
        self.read.set(true);
        match self.kept.iter().filter(|_| self.live).find(|(lag, w)| to + lag == n && w.len() == to - from) {
            Some((_, w)) => std::borrow::Cow::Borrowed(w.sorted()),
            None => std::borrow::Cow::Owned(sorted_copy(self.values()[from..to].iter().copied())),
        }
    }
}

/// `values` in `total_cmp` order.
pub fn sorted_copy(values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    v
}

/// [`median`] of values already in `total_cmp` order: the same value, bit for bit.
pub fn sorted_median(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    Some(if n % 2 == 1 { sorted[n / 2] } else { 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]) })
}

/// [`median_mad`] of values already in `total_cmp` order, bit for bit: the
/// deviations |v - m| fall with the index below the median's split and rise
/// above it (rounding is monotone), so the k-th smallest deviation is found by
/// merging the two runs outward from the split, without a copy.
pub fn sorted_median_mad(sorted: &[f64]) -> Option<(f64, f64)> {
    let m = sorted_median(sorted)?;
    let n = sorted.len();
    // Below `split` the values are under m (deviations growing leftwards); from it
    // on, at or above m (deviations growing rightwards).
    let split = sorted.partition_point(|v| *v < m);
    let (lower, upper) = kth_deviations(sorted, split, m, n / 2);
    Some((m, if n % 2 == 1 { upper } else { 0.5 * (lower + upper) }))
}

/// A robust sigma of values already in `total_cmp` order around their median
/// `m` whose MAD is `mad`: `MAD_TO_SIGMA * mad`, or, where half the values or
/// more tie at the median (MAD zero: a GRPO policy loss that is exactly 0 on
/// most steps), the same of the values off the median, which are the series'
/// moves. A scale of zero makes no sigma: `None` when every value ties.
pub fn sorted_sigma(sorted: &[f64], m: f64, mad: f64) -> Option<f64> {
    if mad > 0.0 {
        return Some(MAD_TO_SIGMA * mad);
    }
    let mut off: Vec<f64> = sorted.iter().filter(|v| **v != m).map(|v| (v - m).abs()).collect();
    off.sort_unstable_by(f64::total_cmp);
    sorted_median(&off).filter(|d| *d > 0.0).map(|d| MAD_TO_SIGMA * d)
}

/// The `k - 1`-th and `k`-th smallest (0-based) of |v - m| over `sorted` (the
/// `k`-th twice when k is 0), where the values below `split` are under m: two
/// runs of deviations, rising leftwards from `split` and rightwards from it. A
/// binary search for how many of the k + 1 smallest come from the left run (the
/// k-th of two sorted sequences); the one before is the larger of the two runs'
/// last taken values once the k-th is given back (an even window's MAD needs
/// both: one search instead of two).
fn kth_deviations(sorted: &[f64], split: usize, m: f64, k: usize) -> (f64, f64) {
    let (left_len, right_len) = (split, sorted.len() - split);
    let left = |i: usize| (sorted[split - 1 - i] - m).abs();
    let right = |j: usize| (sorted[split + j] - m).abs();
    let (mut lo, mut hi) = ((k + 1).saturating_sub(right_len), (k + 1).min(left_len));
    while lo < hi {
        let a = (lo + hi) / 2;
        // Too few from the left when the right run's last taken one is above the
        // left run's next.
        if right(k - a) > left(a) {
            lo = a + 1;
        } else {
            hi = a;
        }
    }
    let (a, b) = (lo, k + 1 - lo);
    // The largest taken of each run (`None` where a run gives none); the k-th is
    // the larger, taken from the left on a tie as `max` does (equal values: the
    // same bits but for a zero's sign, which |v - m| does not have).
    let last = |a: usize, b: usize| -> (Option<f64>, Option<f64>) { ((a > 0).then(|| left(a - 1)), (b > 0).then(|| right(b - 1))) };
    let kth = |taken: (Option<f64>, Option<f64>)| match taken {
        (Some(l), Some(r)) => l.max(r),
        (Some(l), None) => l,
        (None, Some(r)) => r,
        (None, None) => f64::NAN,
    };
    let taken = last(a, b);
    let upper = kth(taken);
    if k == 0 {
        return (upper, upper);
    }
    // Give back the run's value that is the k-th (the right one's on a tie: the
    // rest is the same either way) and read the k-1-th from what remains.
    let lower = match taken {
        (Some(l), Some(r)) if r >= l => kth(last(a, b - 1)),
        (Some(_), _) => kth(last(a - 1, b)),
        _ => kth(last(a, b - 1)),
    };
    (lower, upper)
}

/// Median of the values (NaN-free input), `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    // Selection, not a sort: detectors take a window's median at every step, and a
    // replay or `rlmon check` of a long run does that millions of times. The copy
    // selected over is this thread's scratch buffer, not an allocation per call.
    Some(with_scratch(values.iter().copied(), select_median))
}

/// Median and the median absolute deviation around it.
pub fn median_mad(values: &[f64]) -> Option<(f64, f64)> {
    let m = median(values)?;
    Some((m, with_scratch(values.iter().map(|v| (v - m).abs()), select_median)))
}

thread_local! {
    /// The values a median selects over, reused from call to call.
    static SCRATCH: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `f` over the values of `fill`, copied into this thread's scratch buffer (a
/// fresh vector if it is in use).
fn with_scratch<R>(fill: impl Iterator<Item = f64>, f: impl FnOnce(&mut [f64]) -> R) -> R {
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            buf.extend(fill);
            f(&mut buf)
        }
        Err(_) => f(&mut fill.collect::<Vec<f64>>()),
    })
}

/// The median of `v` (not empty), selected in place: the upper middle value,
/// averaged with the largest below it when the count is even.
fn select_median(v: &mut [f64]) -> f64 {
    let n = v.len();
    let (lower, upper, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        upper
    } else {
        0.5 * (lower.iter().copied().max_by(f64::total_cmp).unwrap_or(upper) + upper)
    }
}

pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

pub fn std_dev(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    (values.len() > 1).then(|| (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64).sqrt())
}

/// Least-squares fit of `ys` against `xs`: (slope, r²). `None` with fewer than
/// three points or no spread in x.
pub fn linear_fit(xs: &[f64], ys: &[f64]) -> Option<(f64, f64)> {
    let n = xs.len().min(ys.len());
    if n < 3 {
        return None;
    }
    let mx = xs[..n].iter().sum::<f64>() / n as f64;
    let my = ys[..n].iter().sum::<f64>() / n as f64;
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for i in 0..n {
        let (dx, dy) = (xs[i] - mx, ys[i] - my);
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = if syy > 0.0 { (sxy * sxy) / (sxx * syy) } else { 0.0 };
    Some((slope, r2))
}

/// Slope of values against their index (one step apart).
pub fn index_slope(ys: &[f64]) -> Option<(f64, f64)> {
    // linear_fit's arithmetic in the same order, without a vector of indices.
    let n = ys.len();
    if n < 3 {
        return None;
    }
    // The indices' sum is an integer that f64 holds exactly, as it did every
    // partial sum of the loop this replaces (n under 2^26): the same bits.
    let mx = ((n as u128 * (n as u128 - 1) / 2) as f64) / n as f64;
    let my = ys.iter().sum::<f64>() / n as f64;
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let (dx, dy) = (i as f64 - mx, y - my);
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = if syy > 0.0 { (sxy * sxy) / (sxx * syy) } else { 0.0 };
    Some((slope, r2))
}

/// A Theil-Sen slope in O(n): the median of the slopes between each point of the
/// first half and its partner half the series later (one step apart per index),
/// with the fraction of those slopes that are positive. Robust to outliers and to
/// the steps of a staircase; `None` with fewer than four points.
pub fn half_lag_slope(ys: &[f64]) -> Option<(f64, f64)> {
    if ys.len() / 2 < 2 {
        return None;
    }
    // The slopes go straight into the scratch buffer a median selects over: the
    // same values in the same order as a vector of them, without one.
    Some(with_scratch(half_lag_slopes(ys.len(), |i| ys[i]), |slopes| {
        let positive = slopes.iter().filter(|s| **s > 0.0).count() as f64 / slopes.len() as f64;
        (select_median(slopes), positive)
    }))
}

/// The slopes [`half_lag_slope`] reads, of the `len` values `y(0..len)`.
fn half_lag_slopes(len: usize, y: impl Fn(usize) -> f64) -> impl Iterator<Item = f64> {
    let lag = len / 2;
    (0..len - lag).map(move |i| (y(i + lag) - y(i)) / lag as f64)
}

/// The share of [`half_lag_slope`]'s slopes that are positive, without their
/// median or a copy of the values (a cheap look before the whole reading);
/// `None` with fewer than four points.
pub fn half_lag_rising(len: usize, y: impl Fn(usize) -> f64) -> Option<f64> {
    if len / 2 < 2 {
        return None;
    }
    let pairs = len - len / 2;
    Some(half_lag_slopes(len, y).filter(|s| *s > 0.0).count() as f64 / pairs as f64)
}

/// Counts consecutive points for which a condition held.
#[derive(Debug, Clone, Default)]
pub struct Streak {
    pub count: u32,
    /// The step the current streak started at.
    pub start: u64,
}

impl Streak {
    /// Records one point; returns the streak length.
    pub fn update(&mut self, holds: bool, step: u64) -> u32 {
        if holds {
            if self.count == 0 {
                self.start = step;
            }
            self.count += 1;
        } else {
            self.count = 0;
        }
        self.count
    }
}

/// One alert per event: after an alert, the detector stays quiet until its
/// condition has been clear for `cooldown` consecutive points; a worse severity
/// during the same event still goes through once.
#[derive(Debug, Clone)]
pub struct Cooldown {
    cooldown: u32,
    raised: Option<super::Severity>,
    clear_for: u32,
}

impl Cooldown {
    pub fn new(cooldown: u32) -> Self {
        Cooldown { cooldown, raised: None, clear_for: 0 }
    }

    /// Call once per point with whether the condition holds now and the severity
    /// it would have; returns the severity to raise, if any.
    pub fn gate(&mut self, firing: Option<super::Severity>) -> Option<super::Severity> {
        match firing {
            None => {
                self.clear_for += 1;
                if self.clear_for >= self.cooldown {
                    self.raised = None;
                }
                None
            }
            Some(sev) => {
                self.clear_for = 0;
                match self.raised {
                    Some(prev) if prev >= sev => None,
                    _ => {
                        self.raised = Some(sev);
                        Some(sev)
                    }
                }
            }
        }
    }

    /// The severity last raised in the open event, if one is open.
    pub fn raised(&self) -> Option<super::Severity> {
        self.raised
    }

    /// Whether an event is open (an alert was raised and has not cleared yet).
    pub fn open(&self) -> bool {
        self.raised.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::Severity;

    #[test]
    fn a_scale_of_zero_makes_no_sigma() {
        // Zero on most steps, signed otherwise: the moves' spread, not zero.
        let mut v: Vec<f64> = (0..40).map(|i| if i % 4 == 0 { 0.05 * if i % 8 == 0 { 1.0 } else { -1.0 } } else { 0.0 }).collect();
        v.sort_by(f64::total_cmp);
        let (m, mad) = sorted_median_mad(&v).unwrap();
        assert_eq!((m, mad), (0.0, 0.0));
        let sigma = sorted_sigma(&v, m, mad).unwrap();
        assert!((sigma - MAD_TO_SIGMA * 0.05).abs() < 1e-12, "{sigma}");
        // Every value tied: no sigma at all.
        assert_eq!(sorted_sigma(&[0.0; 20], 0.0, 0.0), None);
        // A MAD of its own is used as it is.
        assert_eq!(sorted_sigma(&[1.0, 2.0, 3.0], 2.0, 1.0), Some(MAD_TO_SIGMA));
    }

    #[test]
    fn median_by_selection_equals_median_by_sorting() {
        let mut rng = crate::workload::rng::SplitMix64::new(7);
        for n in 1..60 {
            // Ties and signed zeros included.
            let values: Vec<f64> = (0..n).map(|_| ((rng.next_u64() % 9) as f64 - 4.0) * 0.5).chain([0.0, -0.0]).collect();
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            let m = sorted.len();
            let expect = if m % 2 == 1 { sorted[m / 2] } else { 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]) };
            assert_eq!(median(&values).map(f64::to_bits), Some(expect.to_bits()), "{values:?}");
        }
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0]), Some(2.0));
    }

    /// Random windows with ties, signed zeros and wide ranges: the sorted
    /// statistics equal the copy-and-select ones bit for bit.
    #[test]
    fn sorted_statistics_equal_selection_bit_for_bit() {
        let mut rng = crate::workload::rng::SplitMix64::new(21);
        let mut draw = move |kind: u64| -> f64 {
            let u = rng.unit();
            match kind % 4 {
                0 => ((u * 9.0).floor() - 4.0) * 0.5,
                1 => (u * 40.0 - 20.0).exp(),
                2 => if u < 0.1 { -0.0 } else if u < 0.2 { 0.0 } else { u - 0.5 },
                _ => 1e300 * (u - 0.5),
            }
        };
        for trial in 0..400u64 {
            let n = 1 + (trial as usize * 7) % 130;
            let values: Vec<f64> = (0..n).map(|_| draw(trial)).collect();
            let sorted = sorted_copy(values.iter().copied());
            let bits = |m: Option<(f64, f64)>| m.map(|(a, b)| (a.to_bits(), b.to_bits()));
            assert_eq!(sorted_median(&sorted).map(f64::to_bits), median(&values).map(f64::to_bits), "{values:?}");
            assert_eq!(bits(sorted_median_mad(&sorted)), bits(median_mad(&values)), "{values:?}");
        }
        assert_eq!(sorted_median_mad(&[]), None);
    }

    /// A series with spans kept sorted gives every span as a sorted copy of it
    /// would, while it fills up and after, and a window pushed past its capacity
    /// holds the newest values.
    #[test]
    fn sorted_series_spans_equal_sorted_copies() {
        let mut rng = crate::workload::rng::SplitMix64::new(5);
        let cap = 23;
        let spans = [(cap, 0), (5, 0), (11, 0), (12, 0), (10, 13), (18, 5), (30, 0), (0, 0)];
        // A lazy series (first read at `first_read`) gives the same spans.
        for (mut s, first_read) in [(SortedSeries::new(cap, &spans), 0), (SortedSeries::lazy(cap, &spans), 0), (SortedSeries::lazy(cap, &spans), 90)] {
            // A lazy one read at every point keeps its windows: borrowed spans.
            let lazy = s.lazy;
            let mut all: Vec<f64> = Vec::new();
            for i in 0..200 {
                let v = ((rng.next_u64() % 13) as f64 - 6.0) * if i % 7 == 0 { -0.0 } else { 0.25 };
                s.push(v);
                all.push(v);
                if i < first_read {
                    continue;
                }
                let newest = &all[all.len().saturating_sub(cap)..];
                assert_eq!(s.values().iter().copied().collect::<Vec<_>>(), newest);
                let n = newest.len();
                for (from, to) in [(0, n), (n.saturating_sub(5), n), (n / 2, n), (0, n.saturating_sub(13)), (n.saturating_sub(23), n.saturating_sub(5)), (3, 4), (n, n)] {
                    let (from, to) = (from.min(to).min(n), to.min(n));
                    let want: Vec<u64> = sorted_copy(newest[from..to].iter().copied()).into_iter().map(f64::to_bits).collect();
                    let got: Vec<u64> = s.sorted_range(from, to).iter().map(|v| v.to_bits()).collect();
                    assert_eq!(got, want, "step {i}, {from}..{to}");
                }
                assert_eq!(s.live, !lazy || i > first_read + 1, "step {i}");
            }
        }
    }

    /// A lazy series read now and then, in bursts and after long pauses, gives
    /// the spans a sorted copy would, with its windows kept or not.
    #[test]
    fn a_lazy_series_read_at_any_pace_gives_the_same_spans() {
        let mut rng = crate::workload::rng::SplitMix64::new(8);
        let cap = 40;
        let mut s = SortedSeries::lazy(cap, &[(30, 10), (cap, 0), (7, 0)]);
        let mut all: Vec<f64> = Vec::new();
        let mut was_live = 0;
        for i in 0..6_000usize {
            let v = ((rng.next_u64() % 29) as f64 - 14.0) * 0.125;
            s.push(v);
            all.push(v);
            was_live += usize::from(s.live);
            // Bursts of reads, single reads and a long pause.
            let read = (i % 700 < 30 && i < 3_000) || i % 97 == 0;
            if !read {
                continue;
            }
            let newest = &all[all.len().saturating_sub(cap)..];
            let n = newest.len();
            for (from, to) in [(0, n.saturating_sub(10)), (0, n), (n.saturating_sub(7), n)] {
                let want: Vec<u64> = sorted_copy(newest[from..to].iter().copied()).into_iter().map(f64::to_bits).collect();
                let got: Vec<u64> = s.sorted_range(from, to).iter().map(|v| v.to_bits()).collect();
                assert_eq!(got, want, "push {i}, {from}..{to}");
            }
        }
        assert!(was_live > 0 && !s.live, "{was_live}");
    }

    /// A window pushed past its capacity keeps exactly the newest values sorted:
    /// ties, signed zeros, infinities and NaNs of either sign, new values above,
    /// below and equal to the leaving one; the same a span back.
    #[test]
    fn a_sliding_window_stays_sorted_bit_for_bit() {
        let mut rng = crate::workload::rng::SplitMix64::new(9);
        let specials = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN, 1e300, -1e-300];
        for cap in [1, 2, 3, 8, 32, 33, 100] {
            for lag in [0, 1, 4] {
                let mut s = SortedSeries::new(cap + lag, &[(cap, lag)]);
                let mut all = Vec::new();
                for i in 0..600 {
                    let r = rng.next_u64();
                    let v = if r % 11 == 0 { specials[(r / 11) as usize % specials.len()] } else { ((r % 7) as f64 - 3.0) * 0.5 };
                    s.push(v);
                    all.push(v);
                    let Some((_, w)) = s.kept.first() else { panic!("the span is kept") };
                    let span = &all[..all.len().saturating_sub(lag)];
                    let want: Vec<u64> = sorted_copy(span[span.len().saturating_sub(cap)..].iter().copied()).into_iter().map(f64::to_bits).collect();
                    assert_eq!(w.sorted().iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want, "capacity {cap}, lag {lag}, push {i}");
                    assert_eq!(w.len(), span.len().min(cap));
                }
            }
        }
    }

    #[test]
    fn index_slope_is_linear_fit_against_indices() {
        let ys: Vec<f64> = (0..57).map(|i| ((i as f64) * 0.71).sin() * 3.0 + 0.01 * i as f64).collect();
        for n in 0..ys.len() {
            let xs: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let bits = |m: Option<(f64, f64)>| m.map(|(a, b)| (a.to_bits(), b.to_bits()));
            assert_eq!(bits(index_slope(&ys[..n])), bits(linear_fit(&xs, &ys[..n])));
        }
    }

    #[test]
    fn window_keeps_the_newest_finite_values() {
        let mut w = Window::new(3);
        for v in [1.0, f64::NAN, 2.0, 3.0, 4.0] {
            w.push(v);
        }
        assert_eq!(w.to_vec(), vec![2.0, 3.0, 4.0]);
        assert_eq!(w.median(), Some(3.0));
        assert_eq!(w.newest(2), vec![3.0, 4.0]);
    }

    #[test]
    fn robust_summaries_and_fit() {
        assert_eq!(median_mad(&[1.0, 2.0, 3.0, 100.0]), Some((2.5, 1.0)));
        let (slope, r2) = index_slope(&[1.0, 3.0, 5.0, 7.0]).unwrap();
        assert!((slope - 2.0).abs() < 1e-12 && (r2 - 1.0).abs() < 1e-12);
        assert_eq!(index_slope(&[1.0, 2.0]), None);
        // One wild point and a staircase: the robust slope holds.
        let mut stairs: Vec<f64> = (0..40).map(|i| (i / 5) as f64 * 5.0).collect();
        stairs[7] = 1e9;
        let (slope, positive) = half_lag_slope(&stairs).unwrap();
        assert!((slope - 1.0).abs() < 1e-12 && positive >= 0.9, "{slope} {positive}");
        assert_eq!(half_lag_slope(&[1.0, 2.0, 3.0]), None);
        // The cheap look reads the same share of rising slopes.
        assert_eq!(half_lag_rising(stairs.len(), |i| stairs[i]), Some(positive));
        assert_eq!(half_lag_rising(3, |i| i as f64), None);
    }

    #[test]
    fn cooldown_gives_one_alert_per_event_and_lets_escalation_through() {
        let mut c = Cooldown::new(3);
        assert_eq!(c.gate(Some(Severity::Warn)), Some(Severity::Warn));
        assert_eq!(c.gate(Some(Severity::Warn)), None);
        assert_eq!(c.gate(Some(Severity::Critical)), Some(Severity::Critical));
        assert_eq!(c.gate(None), None);
        assert_eq!(c.gate(Some(Severity::Warn)), None, "not clear long enough: same event");
        for _ in 0..3 {
            c.gate(None);
        }
        assert_eq!(c.gate(Some(Severity::Warn)), Some(Severity::Warn), "a new event");
    }
}

/// Points that make a metric's level at the start of a run.
pub const START_POINTS: usize = 5;

/// A metric's level at the start of the run: the median of its first
/// [`START_POINTS`] finite values. Every detector that speaks of "its initial
/// level" asks this, so their messages quote one number whatever their windows.
#[derive(Debug, Clone, Default)]
pub struct StartLevel {
    first: Vec<f64>,
    /// The median once all of [`START_POINTS`] are in: asked at every judged point.
    level: Option<f64>,
}

impl StartLevel {
    pub fn push(&mut self, x: f64) {
        if self.first.len() < START_POINTS && x.is_finite() {
            self.first.push(x);
            if self.first.len() == START_POINTS {
                self.level = median(&self.first);
            }
        }
    }

    /// `None` before the first finite value.
    pub fn level(&self) -> Option<f64> {
        self.level.or_else(|| median(&self.first))
    }
}
