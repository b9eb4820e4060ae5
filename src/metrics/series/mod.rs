//! One metric of one run over time, kept compact: the recent points (the hot tail,
//! what detectors and the live chart's right edge read) as plain columns, older
//! ones sealed in compressed blocks of [`BLOCK`] points (see [`codec`]) with a
//! summary per block and per group of blocks, so a whole-run chart draws from
//! summaries in O(columns) and stays exact in each column's extremes, while a
//! zoomed window decodes only its blocks.
use std::borrow::Cow;
use std::ops::Range;

use crate::metrics::throughput::Ema;

mod clock;
mod codec;

pub use clock::Clock;

/// EMA weight of each new point in a smoothed chart.
pub const SMOOTHING_ALPHA: f64 = 0.1;

/// Points per sealed block, and between two saved states of the smoothed series.
pub const BLOCK: usize = 1024;

/// Reads of fewer points than this within one sealed block go through the
/// decoded block kept for them (point lookups); longer ones decode directly.
const SMALL_READ: usize = 64;

/// Summaries of this many nodes of one level make one node of the next.
const FANOUT: usize = 16;

/// Points per chunk: a sealed block's extremes per chunk are kept once a chart
/// reads them, so columns narrower than two blocks (a run of a few thousand steps,
/// a zoomed window) stop decoding every block they cut at every frame.
pub const CHUNK: usize = 64;
const CHUNKS_PER_BLOCK: usize = BLOCK / CHUNK;

#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Points `0..blocks.len() * BLOCK`, compressed.
    blocks: Vec<Block>,
    /// `levels[0][j]` sums up block `j`; `levels[k][j]` the `FANOUT^k` blocks from
    /// `j * FANOUT^k` (only complete groups).
    levels: Vec<Vec<Summary>>,
    /// The points after the sealed blocks (fewer than `BLOCK`).
    hot: Hot,
    /// The smoothed series' state, kept on arrival, so a smoothed chart of a window
    /// starts there instead of smoothing everything before it each frame.
    smooth: SmoothMarks,
    /// The last sealed block read point by point, decoded whole.
    recent: Recent,
    /// Per sealed block and reading, each chunk's extremes, once a column read them.
    chunks: ChunkCache,
    /// The run's clock, which sealed blocks read their times from when they match it.
    clock: Option<Clock>,
}

/// What a series keeps only to answer faster: shared by readers behind a lock, and
/// a copy of the series starts without it.
#[derive(Default)]
struct Cache<T>(std::sync::Mutex<T>);

impl<T: Default> Clone for Cache<T> {
    fn clone(&self) -> Self {
        Cache::default()
    }
}

impl<T> std::fmt::Debug for Cache<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cache")
    }
}

impl<T: Default> Cache<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn clear(&mut self) {
        *self.0.get_mut().unwrap_or_else(|e| e.into_inner()) = T::default();
    }
}

/// Extremes of a sealed block's chunks, per `(block, Reading::slot)`: filled by
/// [`Series::columns`], 1.3 KB per block and reading charted narrowly.
type ChunkCache = Cache<std::collections::HashMap<(usize, usize), std::sync::Arc<[Option<Column>; CHUNKS_PER_BLOCK]>>>;

impl ChunkCache {
    fn bytes(&self) -> usize {
        self.lock().len() * (std::mem::size_of::<[Option<Column>; CHUNKS_PER_BLOCK]>() + 48)
    }
}

/// The two decoded blocks read last, kept for the next read of a point in them: a
/// baseline or a comparison looks points up step after step, mostly in the same
/// block, and a window of a few points reads across a block's edge.
type Recent = Cache<[Option<std::sync::Arc<Decoded>>; 2]>;

struct Decoded {
    block: usize,
    steps: Vec<u64>,
    times: Vec<f64>,
    values: Vec<f64>,
}

impl Recent {
    /// Block `block` (of `b`) decoded, from the cache when it holds it.
    fn get(&self, block: usize, b: &Block) -> std::sync::Arc<Decoded> {
        let mut slots = self.lock();
        if let Some(d) = slots.iter().flatten().find(|d| d.block == block) {
            return d.clone();
        }
        let mut d = Decoded { block, steps: Vec::with_capacity(BLOCK), times: Vec::with_capacity(BLOCK), values: Vec::with_capacity(BLOCK) };
        b.decode_steps(BLOCK, &mut d.steps);
        b.decode_times(BLOCK, &mut d.times);
        b.decode_values(BLOCK, &mut d.values);
        let d = std::sync::Arc::new(d);
        // The one read before stays; the older goes.
        slots[1] = slots[0].take();
        slots[0] = Some(d.clone());
        d
    }
}

/// What [`Series::point_through`] keeps between reads: one sealed block's steps
/// and values. For a series that is no longer written to (a baseline's).
#[derive(Debug, Clone, Default)]
pub struct PointReader {
    block: Option<usize>,
    steps: Vec<u64>,
    values: Vec<f64>,
}

#[derive(Debug, Clone, Default)]
struct Hot {
    steps: Vec<u64>,
    times: Vec<f64>,
    values: Vec<f64>,
}

#[derive(Debug, Clone)]
struct Block {
    bytes: Box<[u8]>,
    first_step: u64,
    last_step: u64,
    /// Steps `first_step + i * stride` (the usual case): read without decoding.
    stride: Option<u64>,
    last_time: f64,
    last_value: f64,
    /// Where the times are when not in `bytes`: the run's clock blocks that hold
    /// exactly this block's steps' times.
    clock_times: Option<Box<[std::sync::Arc<clock::ClockBlock>]>>,
}

impl Block {
    /// The first `n` steps.
    /// Point `k`'s step when the block's steps have a stride (read without decoding).
    fn strided_step(&self, k: usize) -> Option<u64> {
        Some(self.first_step.wrapping_add(self.stride?.wrapping_mul(k as u64)))
    }

    fn decode_steps(&self, n: usize, out: &mut Vec<u64>) {
        codec::decode_steps(&self.bytes, n, out)
    }

    /// The first `n` times, from the block or from the clock blocks it shares.
    fn decode_times(&self, n: usize, out: &mut Vec<f64>) {
        match &self.clock_times {
            None => codec::decode_times(&self.bytes, n, out),
            Some(shared) => {
                let mut steps = Vec::with_capacity(n);
                self.decode_steps(n, &mut steps);
                clock::times_of(shared, &steps, out);
            }
        }
    }

    /// The first `n` values.
    fn decode_values(&self, n: usize, out: &mut Vec<f64>) {
        codec::decode_values(&self.bytes, n, out)
    }
}

/// Which readings of a column's points [`Series::columns`] takes the extremes of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// The EMA at [`SMOOTHING_ALPHA`] of the finite values (from the run's start)
    /// instead of the raw values.
    pub smoothed: bool,
    /// Only readings above zero (a log scale).
    pub positive_only: bool,
}

impl Reading {
    #[cfg(test)]
    const ALL: [Reading; 4] = [
        Reading { smoothed: false, positive_only: false },
        Reading { smoothed: false, positive_only: true },
        Reading { smoothed: true, positive_only: false },
        Reading { smoothed: true, positive_only: true },
    ];

    fn slot(self) -> usize {
        self.smoothed as usize * 2 + self.positive_only as usize
    }
}

/// One reading of a series: where it is and what it reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Extreme {
    pub index: usize,
    pub step: u64,
    pub value: f64,
}

/// A column's smallest, largest and last reading: the first point holding the
/// extreme when several do. Non-finite points are never read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    pub min: Extreme,
    pub max: Extreme,
    pub last: Extreme,
}

impl Column {
    /// `a` followed by `b`.
    fn join(a: Option<Column>, b: Option<Column>) -> Option<Column> {
        match (a, b) {
            (Some(a), Some(b)) => Some(Column {
                min: if b.min.value < a.min.value { b.min } else { a.min },
                max: if b.max.value > a.max.value { b.max } else { a.max },
                last: b.last,
            }),
            (a, None) => a,
            (None, b) => b,
        }
    }

    /// `col` followed by the one reading `e` ([`Column::join`] of the two).
    fn add(col: &mut Option<Column>, e: Extreme) {
        match col {
            None => *col = Some(Column { min: e, max: e, last: e }),
            Some(c) => {
                if e.value < c.min.value {
                    c.min = e;
                }
                if e.value > c.max.value {
                    c.max = e;
                }
                c.last = e;
            }
        }
    }
}

/// A [`Column`] of one block's points being read, by their places in it.
#[derive(Clone, Copy)]
struct BlockColumn {
    min: (usize, f64),
    max: (usize, f64),
    last: (usize, f64),
}

impl BlockColumn {
    const EMPTY: BlockColumn = BlockColumn { min: (usize::MAX, 0.0), max: (usize::MAX, 0.0), last: (usize::MAX, 0.0) };

    /// As [`Column::add`]: the first point holding an extreme keeps it.
    fn add(&mut self, k: usize, value: f64) {
        if self.last.0 == usize::MAX {
            (self.min, self.max) = ((k, value), (k, value));
        } else {
            if value < self.min.1 {
                self.min = (k, value);
            }
            if value > self.max.1 {
                self.max = (k, value);
            }
        }
        self.last = (k, value);
    }

    /// The column, for the block starting at point `base` with these steps.
    fn column(&self, base: usize, steps: &[u64]) -> Option<Column> {
        let at = |(k, value): (usize, f64)| Extreme { index: base + k, step: steps[k], value };
        (self.last.0 != usize::MAX).then(|| Column { min: at(self.min), max: at(self.max), last: at(self.last) })
    }
}

/// What a block or a group of blocks holds, for reads that need not decode it.
#[derive(Debug, Clone, Copy)]
struct Summary {
    /// Per [`Reading::slot`].
    columns: [Option<Column>; 4],
    finite_sum: f64,
    finite: u64,
    non_finite: u64,
}

impl Summary {
    const EMPTY: Summary = Summary { columns: [None; 4], finite_sum: 0.0, finite: 0, non_finite: 0 };

    fn join(&mut self, later: &Summary) {
        for (c, l) in self.columns.iter_mut().zip(&later.columns) {
            *c = Column::join(*c, *l);
        }
        self.finite_sum += later.finite_sum;
        self.finite += later.finite;
        self.non_finite += later.non_finite;
    }
}

/// The EMA (at [`SMOOTHING_ALPHA`], over the finite values) before every
/// [`BLOCK`]th point, and after the last: 16 bytes per block.
#[derive(Debug, Clone)]
struct SmoothMarks {
    marks: Vec<Ema>,
    now: Ema,
}

impl Default for SmoothMarks {
    fn default() -> Self {
        SmoothMarks { marks: Vec::new(), now: Ema::new(SMOOTHING_ALPHA) }
    }
}

/// Two series with the same points are equal (everything else derives from them).
impl PartialEq for Series {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.points(0..self.len()).eq(other.points(0..other.len()))
    }
}

/// A part of a range of points: whole blocks or points within one block.
enum Piece<'a> {
    Whole(&'a Summary),
    Points(Range<usize>),
}

/// A block's (or the hot tail's) points as plain columns, for a scan.
struct Segment<'a> {
    block: usize,
    steps: Cow<'a, [u64]>,
    values: Cow<'a, [f64]>,
    /// The smoothed reading of each finite value (NaN for the others), when asked.
    smoothed: Vec<f64>,
}

impl Segment<'_> {
    /// Adds the readings of points `range` (indices into the series) to `col`.
    fn scan(&self, range: Range<usize>, reading: Reading, col: &mut Option<Column>) {
        let base = self.block * BLOCK;
        for i in range {
            let Some(&raw) = self.values.get(i - base) else { break };
            if !raw.is_finite() {
                continue;
            }
            let value = if reading.smoothed { self.smoothed.get(i - base).copied().unwrap_or(raw) } else { raw };
            if reading.positive_only && value <= 0.0 {
                continue;
            }
            Column::add(col, Extreme { index: i, step: self.steps[i - base], value });
        }
    }
}

impl Series {
    /// A series of a run whose steps' times `clock` holds: its sealed blocks read
    /// their times from the clock where they match it, instead of keeping them.
    pub fn with_clock(clock: Clock) -> Series {
        Series { clock: Some(clock), ..Series::default() }
    }

    pub fn push(&mut self, step: u64, time_s: f64, value: f64) {
        if self.len() % BLOCK == 0 {
            self.smooth.marks.push(self.smooth.now);
        }
        if value.is_finite() {
            self.smooth.now.update(value);
        }
        self.hot.steps.push(step);
        self.hot.times.push(time_s);
        self.hot.values.push(value);
        if self.hot.values.len() == BLOCK {
            self.seal();
        }
    }

    /// Compresses the hot tail into a block, with its summary.
    fn seal(&mut self) {
        let block = self.blocks.len();
        // A block once truncated away may still be kept decoded under this index.
        self.recent.clear();
        let hot = std::mem::take(&mut self.hot);
        let smoothed = self.smoothed_readings(block, &hot.values);
        let mut summary = Summary::EMPTY;
        // Every reading's column in one pass, as `Segment::scan` reads each: per
        // reading the places of its first smallest, first largest and last reading.
        // Where no reading is at or below zero (a loss, a rate, a count), the
        // positive-only columns read the same points.
        let (mut found, mut nonpositive) = ([BlockColumn::EMPTY; 4], [false; 2]);
        for (k, (&raw, &smooth)) in hot.values.iter().zip(&smoothed).enumerate() {
            if !raw.is_finite() {
                continue;
            }
            found[0].add(k, raw);
            found[2].add(k, smooth);
            nonpositive[0] |= raw <= 0.0;
            nonpositive[1] |= smooth <= 0.0;
        }
        found[1] = found[0];
        found[3] = found[2];
        if nonpositive[0] || nonpositive[1] {
            if nonpositive[0] {
                found[1] = BlockColumn::EMPTY;
            }
            if nonpositive[1] {
                found[3] = BlockColumn::EMPTY;
            }
            for (k, (&raw, &smooth)) in hot.values.iter().zip(&smoothed).enumerate() {
                if !raw.is_finite() {
                    continue;
                }
                if nonpositive[0] && !(raw <= 0.0) {
                    found[1].add(k, raw);
                }
                if nonpositive[1] && !(smooth <= 0.0) {
                    found[3].add(k, smooth);
                }
            }
        }
        for (reading, f) in found.iter().enumerate() {
            summary.columns[reading] = f.column(block * BLOCK, &hot.steps);
        }
        summary.finite_sum = hot.values.iter().filter(|v| v.is_finite()).sum();
        summary.non_finite = hot.values.iter().filter(|v| !v.is_finite()).count() as u64;
        summary.finite = BLOCK as u64 - summary.non_finite;
        let stride = hot.steps[1].wrapping_sub(hot.steps[0]);
        let regular = hot.steps.windows(2).all(|w| w[1].wrapping_sub(w[0]) == stride);
        let clock_times = self.clock.as_ref().and_then(|c| c.share(&hot.steps, &hot.times));
        let own_times: &[f64] = if clock_times.is_some() { &[] } else { &hot.times };
        self.blocks.push(Block {
            bytes: codec::encode(&hot.steps, own_times, &hot.values),
            first_step: hot.steps[0],
            last_step: hot.steps[BLOCK - 1],
            stride: regular.then_some(stride),
            last_time: hot.times[BLOCK - 1],
            last_value: hot.values[BLOCK - 1],
            clock_times,
        });
        self.add_summary(summary);
        // The next tail reuses the columns' memory.
        self.hot = hot;
        self.hot.steps.clear();
        self.hot.times.clear();
        self.hot.values.clear();
    }

    /// Adds a block's summary, and a group's at each level it completes.
    fn add_summary(&mut self, summary: Summary) {
        let mut node = summary;
        for level in 0.. {
            if self.levels.len() == level {
                self.levels.push(Vec::new());
            }
            self.levels[level].push(node);
            let nodes = &self.levels[level];
            if nodes.len() % FANOUT != 0 {
                break;
            }
            node = Summary::EMPTY;
            nodes[nodes.len() - FANOUT..].iter().for_each(|n| node.join(n));
        }
    }

    /// The smoothed reading of each of `values` (block `block`'s), NaN where not finite.
    fn smoothed_readings(&self, block: usize, values: &[f64]) -> Vec<f64> {
        let mut ema = self.smooth.marks.get(block).copied().unwrap_or(self.smooth.now);
        values.iter().map(|v| if v.is_finite() { ema.update(*v) } else { f64::NAN }).collect()
    }

    /// The smoothing EMA (at [`SMOOTHING_ALPHA`]) having seen the finite values
    /// before index `i`, in O(BLOCK) whatever the series' length.
    pub fn smoothed_before(&self, i: usize) -> Ema {
        let i = i.min(self.len());
        let k = i / BLOCK;
        let Some(mark) = self.smooth.marks.get(k) else { return self.smooth.now };
        let mut ema = *mark;
        for v in self.values(k * BLOCK..i).iter() {
            if v.is_finite() {
                ema.update(*v);
            }
        }
        ema
    }

    pub fn len(&self) -> usize {
        self.hot_start() + self.hot.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Index of the first point of the hot tail.
    fn hot_start(&self) -> usize {
        self.blocks.len() * BLOCK
    }

    /// The last value.
    pub fn last(&self) -> Option<f64> {
        self.hot.values.last().copied().or_else(|| self.blocks.last().map(|b| b.last_value))
    }

    pub fn first_step(&self) -> Option<u64> {
        self.blocks.first().map(|b| b.first_step).or_else(|| self.hot.steps.first().copied())
    }

    pub fn last_step(&self) -> Option<u64> {
        self.hot.steps.last().copied().or_else(|| self.blocks.last().map(|b| b.last_step))
    }

    pub fn last_time(&self) -> Option<f64> {
        self.hot.times.last().copied().or_else(|| self.blocks.last().map(|b| b.last_time))
    }

    pub fn step_at(&self, i: usize) -> Option<u64> {
        let (block, k) = (i / BLOCK, i % BLOCK);
        match self.blocks.get(block) {
            Some(b) => b.strided_step(k).or_else(|| self.recent.get(block, b).steps.get(k).copied()),
            None => self.hot.steps.get(i - self.hot_start()).copied(),
        }
    }

    pub fn time_at(&self, i: usize) -> Option<f64> {
        self.point_at(i, |h| &h.times, |d| &d.times)
    }

    pub fn value_at(&self, i: usize) -> Option<f64> {
        self.point_at(i, |h| &h.values, |d| &d.values)
    }

    /// The step and value of point `i`, read through `reader`, which keeps the
    /// sealed block it read last decoded (its values, and its steps where they have
    /// no stride; never its times): a baseline reads each metric's points in
    /// ascending order, and this spares it the shared cache's lock and the times.
    pub fn point_through(&self, i: usize, reader: &mut PointReader) -> Option<(u64, f64)> {
        let h = self.hot_start();
        if i >= h {
            return Some((*self.hot.steps.get(i - h)?, *self.hot.values.get(i - h)?));
        }
        let (block, k) = (i / BLOCK, i % BLOCK);
        let b = &self.blocks[block];
        if reader.block != Some(block) {
            reader.values.clear();
            b.decode_values(BLOCK, &mut reader.values);
            reader.steps.clear();
            if b.stride.is_none() {
                b.decode_steps(BLOCK, &mut reader.steps);
            }
            reader.block = Some(block);
        }
        let step = b.strided_step(k).or_else(|| reader.steps.get(k).copied())?;
        Some((step, *reader.values.get(k)?))
    }

    /// One point's column, as [`Series::column`] reads it but without a copy: a
    /// baseline looks a point up at every step of every metric.
    fn point_at<T: Copy>(&self, i: usize, hot: impl Fn(&Hot) -> &Vec<T>, decoded: fn(&Decoded) -> &Vec<T>) -> Option<T> {
        let h = self.hot_start();
        if i >= h {
            return hot(&self.hot).get(i - h).copied();
        }
        let block = i / BLOCK;
        let d = self.recent.get(block, &self.blocks[block]);
        decoded(&d).get(i - block * BLOCK).copied()
    }

    /// Index of the point at `step`, if the series has one (steps ascend).
    pub fn index_of(&self, step: u64) -> Option<usize> {
        let i = self.first_at_or_after(step);
        (self.step_at(i) == Some(step)).then_some(i)
    }

    /// Index of the first point at or after `step` (`len()` when none is).
    pub fn first_at_or_after(&self, step: u64) -> usize {
        self.partition_point(|s| s < step)
    }

    /// Index of the first point whose step fails `before` (steps ascend, so
    /// `before` holds for a prefix). Decodes at most one block's steps.
    pub fn partition_point(&self, mut before: impl FnMut(u64) -> bool) -> usize {
        let block = self.blocks.partition_point(|b| before(b.last_step));
        let base = block * BLOCK;
        match self.blocks.get(block) {
            None => base + self.hot.steps.partition_point(|s| before(*s)),
            Some(b @ Block { stride: Some(_), .. }) => {
                let (mut lo, mut hi) = (0, BLOCK);
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if b.strided_step(mid).is_some_and(&mut before) {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                base + lo
            }
            Some(b) => {
                let mut steps = Vec::with_capacity(BLOCK);
                b.decode_steps(BLOCK, &mut steps);
                base + steps.partition_point(|s| before(*s))
            }
        }
    }

    /// The steps of the points in `range` (clipped to the series): borrowed from
    /// the hot tail, else decoded.
    pub fn steps(&self, range: Range<usize>) -> Cow<'_, [u64]> {
        self.column(range, |h| &h.steps, |d| &d.steps, Block::decode_steps)
    }

    /// The times of the points in `range` (clipped to the series).
    pub fn times(&self, range: Range<usize>) -> Cow<'_, [f64]> {
        self.column(range, |h| &h.times, |d| &d.times, Block::decode_times)
    }

    /// The values of the points in `range` (clipped to the series).
    pub fn values(&self, range: Range<usize>) -> Cow<'_, [f64]> {
        self.column(range, |h| &h.values, |d| &d.values, Block::decode_values)
    }

    fn column<'a, T: Copy>(
        &'a self,
        range: Range<usize>,
        hot: impl Fn(&'a Hot) -> &'a Vec<T>,
        decoded: fn(&Decoded) -> &Vec<T>,
        decode: fn(&Block, usize, &mut Vec<T>),
    ) -> Cow<'a, [T]> {
        let r = self.clip(range);
        let h = self.hot_start();
        if r.start >= h {
            return Cow::Borrowed(&hot(&self.hot)[r.start - h..r.end - h]);
        }
        let block = r.start / BLOCK;
        if r.len() < SMALL_READ && r.end <= (block + 1) * BLOCK {
            // A few points of one block: from the decoded block kept for such reads.
            let d = self.recent.get(block, &self.blocks[block]);
            let base = block * BLOCK;
            return Cow::Owned(decoded(&d).get(r.start - base..r.end - base).unwrap_or(&[]).to_vec());
        }
        if r.len() < SMALL_READ && r.end <= (block + 2) * BLOCK {
            // A few points across a block's edge (a window over the newest steps):
            // the first block's from the decoded blocks kept, the next one's too,
            // or from the hot tail.
            let (base, next) = (block * BLOCK, (block + 1) * BLOCK);
            let mut out = Vec::with_capacity(r.len());
            let d = self.recent.get(block, &self.blocks[block]);
            out.extend_from_slice(decoded(&d).get(r.start - base..BLOCK).unwrap_or(&[]));
            match self.blocks.get(block + 1) {
                Some(b) => {
                    let d = self.recent.get(block + 1, b);
                    out.extend_from_slice(decoded(&d).get(..r.end - next).unwrap_or(&[]));
                }
                None => out.extend_from_slice(&hot(&self.hot)[..r.end - h]),
            }
            return Cow::Owned(out);
        }
        let mut out = Vec::with_capacity(r.len());
        let mut scratch = Vec::with_capacity(BLOCK);
        for (block, b) in self.blocks.iter().enumerate().take(r.end.div_ceil(BLOCK)).skip(r.start / BLOCK) {
            let base = block * BLOCK;
            let to = (r.end - base).min(BLOCK);
            scratch.clear();
            decode(b, to, &mut scratch);
            out.extend_from_slice(&scratch[r.start.saturating_sub(base)..to]);
        }
        if r.end > h {
            out.extend_from_slice(&hot(&self.hot)[..r.end - h]);
        }
        Cow::Owned(out)
    }

    /// The points in `range` (clipped to the series) as (step, time, value), in
    /// order, decoding one block at a time.
    pub fn points(&self, range: Range<usize>) -> impl Iterator<Item = (u64, f64, f64)> + '_ {
        let r = self.clip(range);
        let mut at = r.start;
        std::iter::from_fn(move || {
            if at >= r.end {
                return None;
            }
            let to = ((at / BLOCK + 1) * BLOCK).min(r.end);
            let chunk = (self.steps(at..to), self.times(at..to), self.values(at..to));
            at = to;
            Some((0..chunk.0.len()).map(move |k| (chunk.0[k], chunk.1[k], chunk.2[k])))
        })
        .flatten()
    }

    /// The last `n` values (fewer when the series is shorter).
    pub fn tail(&self, n: usize) -> Cow<'_, [f64]> {
        self.values(self.len().saturating_sub(n)..self.len())
    }

    /// The sum of the finite values in `range` (clipped to the series), from the
    /// summaries of the blocks it covers whole.
    pub fn finite_sum(&self, range: Range<usize>) -> f64 {
        let finite = |r| self.values(r).iter().filter(|v| v.is_finite()).sum::<f64>();
        self.pieces(range).into_iter().map(|p| match p {
            Piece::Whole(s) => s.finite_sum,
            Piece::Points(r) => finite(r),
        }).sum()
    }

    /// How many values in `range` (clipped to the series) are NaN or infinite.
    pub fn non_finite_count(&self, range: Range<usize>) -> u64 {
        let non_finite = |r| self.values(r).iter().filter(|v| !v.is_finite()).count() as u64;
        self.pieces(range).into_iter().map(|p| match p {
            Piece::Whole(s) => s.non_finite,
            Piece::Points(r) => non_finite(r),
        }).sum()
    }

    /// `range` (clipped) in order: whole blocks as their summaries (as few and as
    /// coarse as the levels allow), the rest as ranges of points within one block
    /// or the hot tail.
    fn pieces(&self, range: Range<usize>) -> Vec<Piece<'_>> {
        let r = self.clip(range);
        let mut out = Vec::new();
        let mut i = r.start;
        while i < r.end {
            let block = i / BLOCK;
            if i % BLOCK == 0 && block < self.blocks.len() && r.end >= i + BLOCK {
                let end_block = (r.end / BLOCK).min(self.blocks.len());
                let mut p = block;
                while p < end_block {
                    // The coarsest node that starts at p and ends by end_block.
                    let (mut level, mut size) = (0, 1);
                    while level + 1 < self.levels.len()
                        && p % (size * FANOUT) == 0
                        && p + size * FANOUT <= end_block
                        && p / (size * FANOUT) < self.levels[level + 1].len()
                    {
                        level += 1;
                        size *= FANOUT;
                    }
                    out.push(Piece::Whole(&self.levels[level][p / size]));
                    p += size;
                }
                i = end_block * BLOCK;
            } else {
                let to = r.end.min((block + 1) * BLOCK);
                out.push(Piece::Points(i..to));
                i = to;
            }
        }
        out
    }

    /// A block's points (or the hot tail's, for `block == blocks.len()`) for a scan.
    fn segment(&self, block: usize, smoothed: bool) -> Segment<'_> {
        let span = block * BLOCK..(block + 1) * BLOCK;
        let values = self.values(span.clone());
        Segment { block, smoothed: if smoothed { self.smoothed_readings(block, &values) } else { Vec::new() }, steps: self.steps(span), values }
    }

    /// Smallest, largest and last reading of each column, where column `c` holds
    /// the points `bounds[c]..bounds[c + 1]` (`bounds` ascends; the series' ends
    /// clip it). `None` for a column without a reading. Whole blocks are read from
    /// their summaries; only blocks a column boundary cuts are decoded, once each.
    pub fn columns(&self, bounds: &[usize], reading: Reading) -> Vec<Option<Column>> {
        let mut cut: Option<Segment> = None;
        bounds
            .windows(2)
            .map(|w| {
                let mut col = None;
                for piece in self.pieces(w[0]..w[1]) {
                    match piece {
                        Piece::Whole(summary) => col = Column::join(col, summary.columns[reading.slot()]),
                        Piece::Points(r) => {
                            let block = r.start / BLOCK;
                            // Whole chunks of a sealed block from their extremes; the
                            // points around them scanned.
                            let (c0, c1) = (r.start.div_ceil(CHUNK) * CHUNK, r.end / CHUNK * CHUNK);
                            if block < self.blocks.len() && c0 < c1 {
                                self.scan_points(&mut cut, r.start..c0, reading, &mut col);
                                let chunks = self.chunk_columns(block, reading, &mut cut);
                                for c in (c0 - block * BLOCK) / CHUNK..(c1 - block * BLOCK) / CHUNK {
                                    col = Column::join(col, chunks[c]);
                                }
                                self.scan_points(&mut cut, c1..r.end, reading, &mut col);
                            } else {
                                self.scan_points(&mut cut, r, reading, &mut col);
                            }
                        }
                    }
                }
                col
            })
            .collect()
    }

    /// Block `block`'s points for a scan: the one in `cut` (the block decoded last)
    /// when it is that block, else decoded into it.
    fn decoded<'a, 'c>(&'a self, cut: &'c mut Option<Segment<'a>>, block: usize, smoothed: bool) -> &'c Segment<'a> {
        if cut.as_ref().is_some_and(|s| s.block != block) {
            *cut = None;
        }
        cut.get_or_insert_with(|| self.segment(block, smoothed))
    }

    /// Adds the readings of points `part` (within one block) to `col`; an empty
    /// part decodes nothing.
    fn scan_points<'a>(&'a self, cut: &mut Option<Segment<'a>>, part: Range<usize>, reading: Reading, col: &mut Option<Column>) {
        if !part.is_empty() {
            self.decoded(cut, part.start / BLOCK, reading.smoothed).scan(part, reading, col);
        }
    }

    /// The extremes of each chunk of sealed block `block` in `reading`, from the
    /// cache, else from a scan of the block (through `cut`, the block decoded last).
    fn chunk_columns<'a>(&'a self, block: usize, reading: Reading, cut: &mut Option<Segment<'a>>) -> std::sync::Arc<[Option<Column>; CHUNKS_PER_BLOCK]> {
        let key = (block, reading.slot());
        if let Some(found) = self.chunks.lock().get(&key) {
            return found.clone();
        }
        let s = self.decoded(cut, block, reading.smoothed);
        let mut out = [None; CHUNKS_PER_BLOCK];
        for (c, slot) in out.iter_mut().enumerate() {
            let from = block * BLOCK + c * CHUNK;
            s.scan(from..from + CHUNK, reading, slot);
        }
        let out = std::sync::Arc::new(out);
        self.chunks.lock().insert(key, out.clone());
        out
    }

    /// The sum and the count of the finite values in each of `ranges` (in
    /// ascending order; they may overlap), from summaries where a range covers
    /// whole blocks, decoding each block a range cuts once.
    pub fn sums(&self, ranges: &[Range<usize>]) -> Vec<(f64, u64)> {
        let mut cut: Option<Segment> = None;
        ranges
            .iter()
            .map(|r| {
                let (mut sum, mut count) = (0.0, 0u64);
                for piece in self.pieces(r.clone()) {
                    match piece {
                        Piece::Whole(summary) => {
                            sum += summary.finite_sum;
                            count += summary.finite;
                        }
                        Piece::Points(r) => {
                            let block = r.start / BLOCK;
                            let s = self.decoded(&mut cut, block, false);
                            let values = s.values.get(r.start - block * BLOCK..r.end - block * BLOCK).unwrap_or(&[]);
                            for v in values.iter().filter(|v| v.is_finite()) {
                                sum += v;
                                count += 1;
                            }
                        }
                    }
                }
                (sum, count)
            })
            .collect()
    }

    /// Smallest, largest and last finite value of the whole series.
    pub fn extent(&self) -> Option<Column> {
        self.columns(&[0, self.len()], Reading::default()).pop().flatten()
    }

    /// Bytes this series holds on the heap (its compressed blocks, summaries, hot
    /// tail and smoothing marks, spare capacity included): what it costs to keep.
    /// Times read from the run's clock are counted once, by [`Clock::heap_bytes`].
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        // The clock blocks a block shares are counted with the clock; here only the references.
        let shared = |b: &Block| b.clock_times.as_ref().map_or(0, |c| c.len() * size_of::<usize>());
        let blocks = self.blocks.capacity() * size_of::<Block>() + self.blocks.iter().map(|b| b.bytes.len() + shared(b)).sum::<usize>();
        let levels = self.levels.capacity() * size_of::<Vec<Summary>>() + self.levels.iter().map(|l| l.capacity() * size_of::<Summary>()).sum::<usize>();
        let hot = (self.hot.steps.capacity() + self.hot.times.capacity() + self.hot.values.capacity()) * 8;
        blocks + levels + hot + self.smooth.marks.capacity() * size_of::<Ema>() + self.chunks.bytes()
    }

    /// The nearest index to `i` where a sealed block starts (so a column ending
    /// there reads whole summaries), or `i` itself inside the hot tail.
    pub fn nearest_block_edge(&self, i: usize) -> usize {
        if i >= self.hot_start() {
            return i;
        }
        (i + BLOCK / 2) / BLOCK * BLOCK
    }

    /// The nearest index to `i` where a chunk of a sealed block starts (so a column
    /// ending there reads whole chunks), or `i` itself inside the hot tail.
    pub fn nearest_chunk_edge(&self, i: usize) -> usize {
        if i >= self.hot_start() {
            return i;
        }
        ((i + CHUNK / 2) / CHUNK * CHUNK).min(self.hot_start())
    }

    /// Drops the points at `step` and after (a job resumed from an earlier step).
    /// Returns how many were dropped.
    pub fn truncate_from(&mut self, step: u64) -> usize {
        let keep = self.first_at_or_after(step);
        let dropped = self.len() - keep;
        let h = self.hot_start();
        if keep < h {
            // The kept part of the block `keep` falls in becomes the hot tail.
            let block = keep / BLOCK;
            let span = block * BLOCK..keep;
            self.hot = Hot { steps: self.steps(span.clone()).into_owned(), times: self.times(span.clone()).into_owned(), values: self.values(span).into_owned() };
            self.blocks.truncate(block);
            let mut size = 1;
            for nodes in &mut self.levels {
                nodes.truncate(block / size);
                size *= FANOUT;
            }
        } else {
            self.hot.steps.truncate(keep - h);
            self.hot.times.truncate(keep - h);
            self.hot.values.truncate(keep - h);
        }
        self.smooth.marks.truncate(keep.div_ceil(BLOCK));
        // The state after the kept points, from the last mark (at most BLOCK points back).
        let from = (self.smooth.marks.len().max(1) - 1) * BLOCK;
        let mut now = self.smooth.marks.last().copied().unwrap_or(Ema::new(SMOOTHING_ALPHA));
        for v in self.values(from.min(keep)..keep).iter().filter(|v| v.is_finite()) {
            now.update(*v);
        }
        self.smooth.now = now;
        // The reads above may have kept a block that is now dropped (and will be
        // sealed again with other points).
        self.recent.clear();
        self.chunks.clear();
        dropped
    }

    fn clip(&self, r: Range<usize>) -> Range<usize> {
        let end = r.end.min(self.len());
        r.start.min(end)..end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smoothed_state_anywhere_matches_smoothing_from_the_start() {
        let mut s = Series::default();
        for i in 0..5000u64 {
            s.push(i, i as f64, if i % 97 == 0 { f64::NAN } else { (i as f64 * 0.37).sin() });
        }
        let check = |s: &Series| {
            for i in [0, 1, 2, 1023, 1024, 1025, 2048, 3000, s.len()] {
                let i = i.min(s.len());
                let mut want = Ema::new(SMOOTHING_ALPHA);
                for v in s.values(0..i).iter().filter(|v| v.is_finite()) {
                    want.update(*v);
                }
                // The next value smoothed from either state: the same bits.
                assert_eq!(s.smoothed_before(i).update(0.5).to_bits(), want.update(0.5).to_bits(), "at {i} of {}", s.len());
            }
        };
        check(&s);
        for keep in [4000u64, 3072, 1024, 1000, 1, 0] {
            s.truncate_from(keep);
            check(&s);
            let n = s.len() as u64;
            s.push(n, n as f64, 0.25);
            check(&s);
        }
    }
    /// A plain copy of what a series was given, to check reads against.
    #[derive(Default)]
    struct Plain {
        steps: Vec<u64>,
        times: Vec<f64>,
        values: Vec<f64>,
    }

    impl Plain {
        fn truncate_from(&mut self, step: u64) {
            let keep = self.steps.partition_point(|s| *s < step);
            self.steps.truncate(keep);
            self.times.truncate(keep);
            self.values.truncate(keep);
        }

        /// Brute force: every point of every column, smoothing from the start.
        fn columns(&self, bounds: &[usize], reading: Reading) -> Vec<Option<Column>> {
            let mut ema = Ema::new(SMOOTHING_ALPHA);
            let readings: Vec<Option<f64>> = self
                .values
                .iter()
                .map(|raw| raw.is_finite().then(|| if reading.smoothed { ema.update(*raw) } else { *raw }))
                .map(|v| v.filter(|v| !(reading.positive_only && *v <= 0.0)))
                .collect();
            bounds
                .windows(2)
                .map(|w| {
                    let mut col = None;
                    for i in w[0].min(readings.len())..w[1].min(readings.len()) {
                        if let Some(value) = readings[i] {
                            Column::add(&mut col, Extreme { index: i, step: self.steps[i], value });
                        }
                    }
                    col
                })
                .collect()
        }
    }

    use crate::test_rng::Rng;

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    fn same_reads(s: &Series, p: &Plain, rng: &mut Rng) {
        let n = p.values.len();
        assert_eq!(s.len(), n);
        assert_eq!(*s.steps(0..usize::MAX), p.steps[..]);
        assert_eq!(bits(&s.times(0..n)), bits(&p.times));
        assert_eq!(bits(&s.values(0..n + 5)), bits(&p.values));
        assert_eq!(s.last().map(f64::to_bits), p.values.last().map(|v| v.to_bits()));
        assert_eq!(s.last_step(), p.steps.last().copied());
        assert_eq!(s.first_step(), p.steps.first().copied());
        assert_eq!(s.last_time().map(f64::to_bits), p.times.last().map(|v| v.to_bits()));
        assert_eq!(bits(&s.tail(37)), bits(&p.values[n.saturating_sub(37)..]));
        let seen: Vec<(u64, u64, u64)> = s.points(0..n).map(|(a, b, c)| (a, b.to_bits(), c.to_bits())).collect();
        assert_eq!(seen.len(), n);
        for _ in 0..20 {
            let i = rng.below(n as u64 + 2) as usize;
            assert_eq!(s.step_at(i), p.steps.get(i).copied());
            assert_eq!(s.value_at(i).map(f64::to_bits), p.values.get(i).map(|v| v.to_bits()));
            assert_eq!(s.time_at(i).map(f64::to_bits), p.times.get(i).map(|v| v.to_bits()));
            let step = rng.below(p.steps.last().copied().unwrap_or(0) + 3);
            assert_eq!(s.first_at_or_after(step), p.steps.partition_point(|x| *x < step), "{step}");
            let want = p.steps.binary_search(&step).ok();
            assert_eq!(s.index_of(step).is_some(), want.is_some(), "{step}");
            let (a, b) = (rng.below(n as u64 + 1) as usize, rng.below(n as u64 + 1) as usize);
            let r = a.min(b)..a.max(b);
            assert_eq!(bits(&s.values(r.clone())), bits(&p.values[r.clone()]));
            assert_eq!(s.non_finite_count(r.clone()), p.values[r.clone()].iter().filter(|v| !v.is_finite()).count() as u64);
            let sum: f64 = p.values[r.clone()].iter().filter(|v| v.is_finite()).sum();
            let got = s.finite_sum(r.clone());
            assert!((got - sum).abs() <= 1e-9 * sum.abs().max(1.0), "{got} vs {sum}");
            let (got, count) = s.sums(&[r.clone(), r.start..n])[0];
            assert!((got - sum).abs() <= 1e-9 * sum.abs().max(1.0), "{got} vs {sum}");
            assert_eq!(count, p.values[r].iter().filter(|v| v.is_finite()).count() as u64);
        }
        for columns in [1, 3, 50, 200] {
            let mut bounds: Vec<usize> = (0..=columns).map(|_| rng.below(n as u64 + 1) as usize).collect();
            bounds.sort();
            match rng.below(3) {
                // Columns cut at block edges, as a whole-run chart does.
                0 => bounds = bounds.into_iter().map(|b| s.nearest_block_edge(b)).collect(),
                // At chunk edges, as a chart of a shorter run does.
                1 => bounds = bounds.into_iter().map(|b| s.nearest_chunk_edge(b)).collect(),
                _ => {}
            }
            for reading in Reading::ALL {
                let got = s.columns(&bounds, reading);
                // Read again: the chunks' extremes now come from the cache.
                assert_eq!(got, s.columns(&bounds, reading));
                let want = p.columns(&bounds, reading);
                assert_eq!(got.len(), want.len());
                for (c, (g, w)) in got.iter().zip(&want).enumerate() {
                    let key = |c: &Option<Column>| c.map(|c| [c.min, c.max, c.last].map(|e| (e.index, e.step, e.value.to_bits())));
                    assert_eq!(key(g), key(w), "column {c} of {bounds:?}, {reading:?}");
                }
            }
        }
    }

    #[test]
    fn random_series_read_back_as_they_were_given() {
        let mut rng = Rng(0x2545f4914f6cdd1d);
        for case in 0..24 {
            let (mut s, mut p) = (Series::default(), Plain::default());
            let mut step = rng.below(10);
            let mut t = 0.0;
            let push = |s: &mut Series, p: &mut Plain, rng: &mut Rng, step: &mut u64, t: &mut f64| {
                *step += match case % 3 {
                    0 => 1,
                    1 => 1 + rng.below(3),
                    _ => 1 + rng.below(1000),
                };
                *t += 0.05 + rng.below(100) as f64 * 1e-4;
                let v = match rng.below(20) {
                    0 => f64::NAN,
                    1 => f64::INFINITY,
                    2 => -0.0,
                    3 => -(rng.below(100) as f64),
                    _ => ((*step as f64 * 0.01).sin() + rng.below(1000) as f64 * 1e-3) as f32 as f64,
                };
                s.push(*step, *t, v);
                p.steps.push(*step);
                p.times.push(*t);
                p.values.push(v);
            };
            let n = [0, 1, 1023, 1024, 1025, 5000, 40_000][case % 7];
            for _ in 0..n {
                push(&mut s, &mut p, &mut rng, &mut step, &mut t);
            }
            same_reads(&s, &p, &mut rng);
            // A resume from an earlier step, then more points.
            for _ in 0..3 {
                let at = rng.below(step + 2);
                assert_eq!(s.truncate_from(at), p.values.len() - p.steps.partition_point(|x| *x < at));
                p.truncate_from(at);
                step = p.steps.last().copied().unwrap_or(0);
                same_reads(&s, &p, &mut rng);
                for _ in 0..rng.below(3000) {
                    push(&mut s, &mut p, &mut rng, &mut step, &mut t);
                }
                same_reads(&s, &p, &mut rng);
            }
        }
    }

    /// A run's series sharing its clock read back exactly what they were given:
    /// series that start late, log every k steps, skip steps, or are given a time
    /// other than the clock's; through resumes of the run.
    #[test]
    fn series_sharing_a_run_clock_read_back_as_they_were_given() {
        let mut rng = Rng(0x9e3779b97f4a7c15);
        for case in 0..6 {
            let clock = Clock::new();
            // (starts at step, every k steps, skips 1 in n, a time of its own 1 in n)
            let kinds: [(u64, u64, u64, u64); 6] = [(0, 1, 0, 0), (0, 1, 0, 0), (37, 1, 0, 0), (0, 3, 0, 0), (5, 1, 50, 0), (0, 1, 0, 3000)];
            let mut series: Vec<(Series, Plain)> = kinds.iter().map(|_| (Series::with_clock(clock.clone()), Plain::default())).collect();
            let mut step = 0u64;
            let mut t = 1.7e9;
            let steps_in_case = [3000, 9000, 20_000][case % 3];
            let run = |series: &mut Vec<(Series, Plain)>, rng: &mut Rng, step: &mut u64, t: &mut f64, n: usize| {
                for _ in 0..n {
                    *step += if case % 2 == 0 { 1 } else { 1 + rng.below(2) };
                    // A wall clock with jitter: full-precision bits.
                    *t += 0.25 + rng.below(1 << 20) as f64 * 1e-9;
                    clock.note(*step, *t);
                    for ((start, every, skip, own), (s, p)) in kinds.iter().zip(series.iter_mut()) {
                        if *step < *start || *step % every != 0 || (*skip > 0 && rng.below(*skip) == 0) {
                            continue;
                        }
                        let time = if *own > 0 && rng.below(*own) == 0 { *t + 1.0 } else { *t };
                        let v = ((*step as f64 * 0.01).sin() + rng.below(1000) as f64 * 1e-3) as f32 as f64;
                        s.push(*step, time, v);
                        p.steps.push(*step);
                        p.times.push(time);
                        p.values.push(v);
                    }
                }
            };
            run(&mut series, &mut rng, &mut step, &mut t, steps_in_case);
            for (s, p) in &series {
                same_reads(s, p, &mut rng);
            }
            for _ in 0..3 {
                // The run resumes from an earlier step: its series and clock drop what follows.
                let at = rng.below(step + 2);
                clock.truncate_from(at);
                for (s, p) in series.iter_mut() {
                    assert_eq!(s.truncate_from(at), p.values.len() - p.steps.partition_point(|x| *x < at));
                    p.truncate_from(at);
                }
                step = at.saturating_sub(1);
                for (s, p) in &series {
                    same_reads(s, p, &mut rng);
                }
                let n = rng.below(4000) as usize;
                run(&mut series, &mut rng, &mut step, &mut t, n);
                for (s, p) in &series {
                    same_reads(s, p, &mut rng);
                }
            }
        }
    }

    #[test]
    fn a_shared_clock_keeps_a_jittered_time_once_per_run() {
        let clock = Clock::new();
        let (mut alone, mut shared): (Vec<Series>, Vec<Series>) = ((0..10).map(|_| Series::default()).collect(), (0..10).map(|_| Series::with_clock(clock.clone())).collect());
        let mut t = 1.7e9;
        for step in 0..50_000u64 {
            t += 0.25 + (step.wrapping_mul(0x9e3779b97f4a7c15) >> 44) as f64 * 1e-9;
            clock.note(step, t);
            for (k, s) in alone.iter_mut().chain(shared.iter_mut()).enumerate() {
                s.push(step, t, ((step as f64 * 0.01 + (k % 10) as f64).sin()) as f32 as f64);
            }
        }
        let bytes = |v: &[Series]| v.iter().map(|s| s.heap_bytes()).sum::<usize>() as f64 / 500_000.0;
        let (before, after) = (bytes(&alone), bytes(&shared) + clock.heap_bytes() as f64 / 500_000.0);
        // Printed for docs/benchmarks.md (`--nocapture`).
        eprintln!("10 series of one run, a jittered clock: {before:.2} -> {after:.2} heap bytes a point");
        assert!(after < before - 2.0, "{before:.2} -> {after:.2} bytes a point");
        for (a, s) in alone.iter().zip(&shared) {
            assert!(a == s);
        }
    }

    /// Where a live run's bytes go, on the soak's load (scripts/soak.py: 10 values
    /// a step, full-precision fractions, a jittered arrival clock): the same steps
    /// and times with constant values cost what the steps and times cost; the rest
    /// is the values'. Printed for docs/benchmarks.md (`--nocapture`).
    #[test]
    fn a_soak_runs_bytes_split_into_steps_times_and_values() {
        let cost = |constant: bool| {
            let clock = Clock::new();
            let mut series: Vec<Series> = (0..10).map(|_| Series::with_clock(clock.clone())).collect();
            let mut t = 1.7e9;
            for step in 0..120_000u64 {
                t += 1e-3 + (step.wrapping_mul(0x9e3779b97f4a7c15) >> 44) as f64 * 1e-10;
                clock.note(step, t);
                for (k, s) in series.iter_mut().enumerate() {
                    let v = match k {
                        _ if constant => 1.0,
                        0 => 2.0 / (1.0 + step as f64 * 1e-3),
                        1 => 1000.0,
                        m => ((step * (m as u64 - 1)) % 97) as f64 / 97.0,
                    };
                    s.push(step, t, v);
                }
            }
            (series.iter().map(|s| s.heap_bytes()).sum::<usize>() + clock.heap_bytes()) as f64 / 1_200_000.0
        };
        let (all, steps_and_times) = (cost(false), cost(true));
        eprintln!("soak-like run: {all:.2} heap bytes a point, of which steps and times {steps_and_times:.2}, values {:.2}", all - steps_and_times);
        assert!(steps_and_times < 2.0 && all < 10.0, "{steps_and_times:.2} / {all:.2}");
    }

    #[test]
    fn a_block_sealed_again_after_a_resume_reads_its_new_points() {
        let mut s = Series::default();
        for i in 0..3000u64 {
            s.push(i, i as f64, 1.0);
        }
        assert_eq!(s.value_at(1030), Some(1.0), "block 1 decoded for the lookup");
        s.truncate_from(1030);
        for i in 1030..3000u64 {
            s.push(i, i as f64, 2.0);
        }
        assert_eq!((s.value_at(1029), s.value_at(1030), s.value_at(2047)), (Some(1.0), Some(2.0), Some(2.0)));
    }

    #[test]
    fn regular_series_cost_a_few_bytes_per_point() {
        let mut s = Series::default();
        for i in 0..100_000u64 {
            s.push(i, i as f64 * 0.04, (2.0 + (i as f64 / 50.0).sin()) as f32 as f64);
        }
        let bytes: usize = s.blocks.iter().map(|b| b.bytes.len()).sum();
        assert!(bytes < 100_000 * 5, "{bytes}");
        assert!(s.heap_bytes() < 100_000 * 6, "{}", s.heap_bytes());
    }
}
