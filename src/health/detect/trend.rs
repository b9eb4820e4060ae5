//! Slow, persistent changes: loss divergence, KL runaway (and a KL controller that
//! does not react), memory leaks, throughput regressions.
use super::levels::RunLevels;
use super::{grade, Excursions, Gate, Point, Raised, Worse, FAMILIAR_EXCURSIONS};
use crate::health::config::KindSettings;
use super::spike::{RiseRecord, HARM_FRACTION, NEAR_ZERO_SPREADS, SIGNED_CRITICAL_Z, SIGNED_WARN_Z, SUSTAINED_RATIO, SUSTAINED_STEPS};
use crate::health::stats::{half_lag_slope, index_slope, median, sorted_median, sorted_median_mad, sorted_sigma, SortedSeries, StartLevel, Window, MAD_TO_SIGMA};
use crate::health::Severity;
use crate::metrics::catalog;
use crate::report::format::{compact, times, percent, sigmas};

/// KL below this (nats) is noise around a fresh policy, whatever its ratio.
pub const KL_FLOOR: f64 = 0.01;

/// Loss that climbs away from its best level without (or after) a spike. A
/// positive loss is judged by the ratio of its smoothed level to its best; a
/// signed one (or one at or near zero) by how many robust sigmas the smoothed
/// level is above its best.
#[derive(Debug, Clone)]
pub struct LossDivergence {
    s: KindSettings,
    metric: String,
    /// The configured metric, or its stand-in where the run logs only that.
    watched: super::Watched,
    /// The smoothed window, kept sorted.
    recent: SortedSeries,
    /// Values in the window at or below zero.
    nonpositive: usize,
    /// The lowest value so far.
    lowest: f64,
    /// The lowest smoothed level since warm-up, with the spread of the points
    /// around it then.
    best: Option<(f64, f64)>,
    /// Where the metric started: a loss back more than [`HARM_FRACTION`] of the
    /// way from its best to it is critical.
    start: StartLevel,
    gate: Gate,
    /// Whether the series is a policy objective in this run (not judged).
    role: super::LossRoleSeen,
}

impl LossDivergence {
    pub fn new(s: KindSettings) -> Self {
        let w = s.window.max(5);
        LossDivergence {
            metric: s.metric.clone().unwrap_or_default(),
            watched: super::Watched::new(s.metric.as_deref().unwrap_or_default()),
            recent: SortedSeries::new(w, &[(w, 0)]),
            nonpositive: 0,
            lowest: f64::INFINITY,
            best: None,
            start: StartLevel::default(),
            gate: Gate::new(&s, Worse::Higher),
            role: Default::default(),
            s,
        }
    }

    pub fn check(&mut self, p: &Point) -> Option<Raised> {
        let x = self.watched.read(p, &mut self.metric)?;
        if !x.is_finite() || self.role.objective(p, &self.metric) {
            return None;
        }
        self.start.push(x);
        self.lowest = self.lowest.min(x);
        if self.recent.is_full() {
            self.nonpositive -= usize::from(self.recent.values().first().is_some_and(|v| *v <= 0.0));
        }
        self.recent.push(x);
        self.nonpositive += usize::from(x <= 0.0);
        let warming = self.gate.warming();
        if !self.recent.is_full() {
            return None;
        }
        let sorted = self.recent.sorted_range(0, self.recent.len());
        let (level, mad) = sorted_median_mad(&sorted)?;
        // Zero when every point ties (no scale: a signed level is then not judged).
        let spread = sorted_sigma(&sorted, level, mad).unwrap_or(0.0);
        if warming {
            return None;
        }
        let (best, best_spread) = match self.best {
            Some((b, sb)) if b <= level => (b, sb),
            _ => (level, spread),
        };
        self.best = Some((best, best_spread));
        let initial = self.start.level().unwrap_or(level);
        let signed = catalog::is_signed(&self.metric) || self.nonpositive > 0 || best < NEAR_ZERO_SPREADS * best_spread;
        // (severity, distance from the best: robust sigmas when signed, else a ratio);
        // the message is written only when an alert is raised.
        // A loss that starts at zero and has never gone below it is a penalty
        // growing from nothing, not a loss leaving a level it had reached: a GRPO
        // loss (beta times the KL, zero while the policy is its reference), an
        // auxiliary loss. Its rise is the KL detectors' to judge. (A loss that
        // crosses zero, or starts at a plateau, is still judged.)
        let from_zero = self.lowest >= 0.0 && initial <= NEAR_ZERO_SPREADS * best_spread.max(spread);
        let (severity, distance) = if from_zero {
            (None, f64::NAN)
        } else if signed && best_spread.max(spread) <= 0.0 {
            // A scale of zero makes no sigma.
            (None, f64::NAN)
        } else if signed {
            let sigma = best_spread.max(spread).max(1e-12 * best.abs().max(1.0));
            let z = (level - best) / sigma;
            // Whether it rises is read only past a threshold (the usual step is not).
            let rising = || {
                let w: Vec<f64> = self.recent.values().iter().copied().collect();
                index_slope(&w).is_some_and(|(slope, _)| slope > 0.0)
            };
            (grade(z, SIGNED_WARN_Z, SIGNED_CRITICAL_Z, false).filter(|_| rising()), z)
        } else {
            let ratio = level / best;
            // The window's logs (of positive values), taken when read.
            let rising = || {
                let logs: Vec<f64> = self.recent.values().iter().map(|x| x.ln()).collect();
                index_slope(&logs).is_some_and(|(slope, _)| slope > 0.0)
            };
            (grade(ratio, self.s.warn, self.s.critical, false).filter(|_| rising()), ratio)
        };
        // The severity ladder: back most of the way to where it started is harm.
        let gap = initial - best;
        let material = if signed { gap >= SIGNED_WARN_Z * best_spread } else { gap >= 0.1 * initial.abs() };
        let harmed = material && level >= best + HARM_FRACTION * gap;
        let severity = severity.map(|s| if harmed { Severity::Critical } else { s });
        let v = self.gate.pass(severity, p.step, x)?;
        let detail = if signed {
            format!("smoothed {} is {} robust sigmas above its best {} and rising", compact(level), sigmas(distance), compact(best))
        } else {
            format!("smoothed {} is {} its best {} and rising", compact(level), times(distance), compact(best))
        };
        let harm = if harmed { format!("; back {} of the way to its initial {}", percent((level - best) / gap), compact(initial)) } else { String::new() };
        let message = format!("{} diverging from step {} ({} there): {detail}{harm}{}", self.metric, v.step, compact(v.value), self.watched.note(&self.metric));
        Some(v.raise(self.metric.clone(), message))
    }
}

/// KL that keeps growing well past its recent level; a KL coefficient that stays
/// flat meanwhile means the adaptive controller is stuck (critical).
#[derive(Debug, Clone)]
pub struct KlRunaway {
    s: KindSettings,
    metric: String,
    /// The KL, with the whole history and its newest [`KL_RECENT`] points kept sorted...
    history: SortedSeries,
    /// ...and its logs, with the part before the slope's points kept sorted.
    history_logs: SortedSeries,
    coef: Window,
    watched: super::Watched,
    /// The KL's log over the whole run: a climb slower than the window is
    /// measured from the run's settled level.
    run_levels: RunLevels,
    /// The same levels of the KL itself, no floor added: whether a level under
    /// the floor was flat or still ramping up.
    raw_levels: RunLevels,
    /// Consecutive climbing points at [`SUSTAINED_RATIO`] times the median or more.
    sustained: u32,
    /// The climbs this run recovered from on its own: one like several of them is info.
    excursions: Excursions,
    /// The growth (recent level over reference) at every point outside an
    /// alarm, over the whole run: how far the KL's own swings take it.
    growths: RiseRecord,
    /// Growths waiting a window before they join the record.
    pending_growths: std::collections::VecDeque<f64>,
    /// Points judged (past the warm-up).
    judged: u64,
    gate: Gate,
}

/// The smallest KL read on the log scale without the floor (a KL of exactly 0
/// has no logarithm).
const KL_TINY: f64 = 1e-6;

/// Points of the recent KL level and of the slope fit.
const KL_RECENT: usize = 10;
const KL_SLOPE: usize = 40;
/// Points of the KL held before kl_runaway judges: a window's history and the
/// slope fit (more than its configured warm-up).
pub const KL_RUNAWAY_HISTORY: usize = 2 * KL_SLOPE;
/// Robust sigmas of the KL's log noise (over the history before the slope's
/// points) that its growth must exceed as well as the warn ratio.
const KL_NOISE_SIGMAS: f64 = 3.0;
/// The run's levels at a quarter of it so far must lie within this (on the log
/// scale, x1.5) to be its settled level: the early KL ramp is not.
const KL_PLATEAU: f64 = 0.405;
/// Robust sigmas of the settled levels' spread a slow climb's newest level must
/// stand above them (as slow_drift's 6 noise sigmas of a level).
const KL_LEVEL_SIGMAS: f64 = 6.0;

impl KlRunaway {
    pub fn new(s: KindSettings) -> Self {
        KlRunaway {
            metric: s.metric.clone().unwrap_or_default(),
            history: SortedSeries::new(s.window.max(2 * KL_SLOPE), &[(s.window.max(2 * KL_SLOPE), 0), (KL_RECENT, 0)]),
            // Read only for a point that climbs (`beyond_noise`).
            history_logs: SortedSeries::lazy(s.window.max(2 * KL_SLOPE), &[(s.window.max(2 * KL_SLOPE) - KL_SLOPE, KL_SLOPE)]),
            coef: Window::new(KL_SLOPE),
            watched: super::Watched::new(s.metric.as_deref().unwrap_or_default()),
            run_levels: RunLevels::new(KL_RECENT),
            raw_levels: RunLevels::new(KL_RECENT),
            sustained: 0,
            excursions: Excursions::default(),
            growths: RiseRecord::default(),
            pending_growths: std::collections::VecDeque::new(),
            judged: 0,
            gate: Gate::new(&s, Worse::Higher),
            s,
        }
    }

    pub fn check(&mut self, p: &Point) -> Option<Raised> {
        let x = self.watched.read(p, &mut self.metric)?;
        if let Some(c) = p.get(catalog::KL_COEF) {
            self.coef.push(c);
        }
        if !x.is_finite() {
            return None;
        }
        self.history.push(x);
        let log = (x.max(0.0) + KL_FLOOR).ln();
        self.history_logs.push(log);
        self.run_levels.push(log);
        self.raw_levels.push(x.max(KL_TINY).ln());
        if self.gate.warming() || self.history.len() < KL_RUNAWAY_HISTORY {
            return None;
        }
        let n = self.history.len();
        let window_reference = sorted_median(&self.history.sorted_range(0, n))?;
        let level = sorted_median(&self.history.sorted_range(n - KL_RECENT, n))?;
        // The newest points' straight-line fit, read only where it can decide
        // (see `climbing`). Forty points one step apart: the fit always has a
        // slope (its indices spread), so reading it late drops no early return.
        let fit_climbs = || {
            index_slope(&self.history.values()[n - KL_SLOPE..]).is_some_and(|(slope, r2)| slope > 0.0 && r2 >= 0.3)
        };
        // A climb slower than the window moves the window's median with it: the
        // run's settled level (the second quarter of the run so far) is the
        // reference when it is lower, and then the climb is judged over the run's
        // levels, the newest ones each above the one before, as no 40 points of a
        // slow climb rise above the noise.
        let levels = self.run_levels.levels();
        let now = (level.max(0.0) + KL_FLOOR).ln();
        // A plateau that rose across its quarter by more than a quarter of the
        // climb since is a slow start still going on (an early KL ramp), not a
        // level the KL ran away from; nor is one under the KL floor (a fresh
        // policy's KL, flattened by the floor, looks level while it grows),
        // unless the KL itself, read without the floor, was as flat there (a KL
        // that lives at 0.003 for hundreds of steps, then climbs tenfold).
        let flat_below_floor = || {
            let raw_now = level.max(KL_TINY).ln();
            self.raw_levels.plateau(KL_PLATEAU).is_some_and(|(l, rise)| rise <= 0.25 * (raw_now - l))
        };
        let settled = self
            .run_levels
            .plateau(KL_PLATEAU)
            .filter(|(l, rise)| *rise <= 0.25 * (now - l))
            .map(|(l, _)| l.exp() - KL_FLOOR)
            .filter(|s| (*s >= KL_FLOOR || flat_below_floor()) && *s < window_reference);
        // A slow climb is judged at the run's own scale: its newest closed level
        // (a block's median) is past the warn ratio as well, not only the newest
        // ten points (a burst of noise lifts those).
        // It must also stand out from how far a settled level wanders by noise
        // alone: a KL with heavy tails and memory moves whole blocks at once.
        let wander = KL_LEVEL_SIGMAS * self.run_levels.settled_spread().unwrap_or(0.0);
        // A slow climb shows in two closed levels: a burst of noise lifts one block.
        let newest_level_up = |s: f64| levels.len() >= 2 && levels[levels.len() - 2..].iter().all(|l| *l - (s + KL_FLOOR).ln() >= self.s.warn.ln().max(wander));
        let slow_climb = settled.is_some_and(newest_level_up) && levels.len() >= 3 && levels[levels.len() - 3..].windows(2).all(|w| w[1] > w[0]);
        let reference = settled.filter(|_| slow_climb).unwrap_or(window_reference);
        let growth = (level + KL_FLOOR) / (reference + KL_FLOOR);
        // Growth must stand out from the KL's own noise: with heavy tails or
        // memory (AR) in it, a noisy KL doubles its 10-point median and climbs for
        // 40 points now and then, more often the longer the run.
        // Read last, only for a point that climbs: not a MAD at every point.
        let beyond_noise = || {
            let noise = sorted_median_mad(&self.history_logs.sorted_range(0, n - KL_SLOPE)).map_or(0.0, |(_, mad)| MAD_TO_SIGMA * mad);
            growth.ln() >= KL_NOISE_SIGMAS * noise
        };
        // A window's noise misses what a KL with memory (an adaptive controller's
        // swings, bursts that last) does over a whole run: the growth must also
        // stand out from the run's own record of it (read only past the warn
        // ratio; an alarm's own points are not recorded).
        let past_warn = growth >= self.s.warn;
        let beyond_record = !past_warn || self.growths.bar().is_none_or(|bar| growth.ln() >= bar);
        // Recorded a window late: a slow climb's first points, still under the
        // warn ratio, are not its own record while it is judged.
        self.judged += 1;
        if RiseRecord::after_the_start(self.judged, self.s.window) {
            self.pending_growths.push_back(growth.ln());
            if self.pending_growths.len() > self.s.window {
                self.growths.push(self.pending_growths.pop_front().unwrap_or(f64::NAN));
            }
        }
        // The cheap conditions first: the fit and the noise are read only for a
        // point that passes them.
        // Growth beyond the noise is growth of at least 1 (the noise is no
        // negative number): a point under it skips the fit.
        // Whether it climbs matters only to a growth that grades or is sustained:
        // the usual point (a KL near its median) reads neither the fit nor the noise.
        let graded = grade(growth, self.s.warn, self.s.critical, false);
        let climbing = (graded.is_some() || growth >= SUSTAINED_RATIO) && level > KL_FLOOR && beyond_record && growth >= 1.0 && (slow_climb || fit_climbs()) && beyond_noise();
        // Read only where it decides: a point that grades, or one that raises.
        let coef_flat = std::cell::OnceCell::new();
        let coef_flat = || {
            *coef_flat.get_or_init(|| {
                self.coef.is_full() && {
                    let (lo, hi) = (self.coef.iter().fold(f64::INFINITY, f64::min), self.coef.iter().fold(f64::NEG_INFINITY, f64::max));
                    hi > 0.0 && (hi - lo) <= 0.01 * hi
                }
            })
        };
        let mut severity = graded.filter(|_| climbing);
        // The severity ladder: several times its level for a sustained stretch is harm.
        self.sustained = if climbing && growth >= SUSTAINED_RATIO { self.sustained + 1 } else { 0 };
        let sustained = self.sustained >= SUSTAINED_STEPS;
        let rise = severity.map(|_| growth.ln());
        let like = rise.map_or(0, |r| self.excursions.like(r));
        let familiar = like >= FAMILIAR_EXCURSIONS;
        // Whether it harms counts only for a point that rises.
        self.excursions.track(rise, rise.is_some() && (sustained || coef_flat()));
        if familiar {
            severity = Some(Severity::Info);
        }
        if severity.is_some() && (coef_flat() || sustained) {
            severity = Some(Severity::Critical);
        }
        let v = self.gate.pass(severity, p.step, x)?;
        let over = if slow_climb { "the run's settled level".to_owned() } else { format!("its median over the last {n} steps") };
        let mut message = format!("{} running away from step {} ({} there): recent level {}, {} {over} ({})", self.metric, v.step, compact(v.value), compact(level), times(growth), compact(reference));
        if sustained {
            message.push_str(&format!("; {}x its median or more for {} steps", compact(SUSTAINED_RATIO), self.sustained));
        } else if v.severity == Severity::Info {
            message.push_str(&format!("; the run recovered on its own from {like} climbs of this order before"));
        }
        if coef_flat() {
            message.push_str(&format!("; {} stuck at {}", catalog::KL_COEF, compact(self.coef.last().unwrap_or(0.0))));
        }
        message.push_str(&self.watched.note(&self.metric));
        Some(v.raise(self.metric.clone(), message))
    }
}

/// A memory series that leaks. With a known total (GPU or host memory), its
/// linear trend is projected to the total: critical when it is nearly there, warn
/// or critical by the samples left. Without one, a leak is growth that is
/// sustained and does not level off: a robust (Theil-Sen) slope over a long
/// history whose projection over the next [`LEAK_HORIZON`] samples is a sizeable
/// part of the current use, with most pairwise slopes positive and the newest
/// quarter still rising; or, past the run's start, a slower growth that the long
/// record (block medians over the horizon) shows rising nearly everywhere. That
/// is a warning (critical needs a total to run into).
#[derive(Debug, Clone)]
pub struct MemoryLeak {
    s: KindSettings,
    metric: String,
    /// Samples in the window judged: the newest of `history`, read in place.
    window: usize,
    /// The longer history judged when no total is known (it holds the window),
    /// with its newest two quarters sorted when read...
    history: SortedSeries,
    /// ...and the slopes between its points half the history apart (those of the
    /// full history's first half, kept sorted: see [`crate::health::stats::half_lag_slope`]).
    half_lag_slopes: SortedSeries,
    /// Samples seen: a trend is projected no further ahead than it has been watched.
    samples: u64,
    /// The step of the first sample (a logged metric's training step; a
    /// telemetry series' sample number).
    first_step: Option<u64>,
    /// The step of the newest sample.
    step: u64,
    /// The long record: medians of blocks of [`LEAK_BLOCK`] samples (the newest
    /// [`LEAK_BLOCKS`], newest last), the block being filled, and the highest
    /// median of the blocks that left the record.
    blocks: std::collections::VecDeque<f64>,
    block: Vec<f64>,
    evicted_high: f64,
    /// The long record's growth per sample, read when a block completes, once
    /// the record spans the horizon past the run's start (see [`Self::long_growth`]).
    long_slope: Option<f64>,
    gate: Gate,
}

/// Samples per block of the long record, and blocks kept: 64 x 16 = 1,024
/// samples, as far as the growth is projected ([`LEAK_HORIZON`]).
const LEAK_BLOCK: usize = 16;
const LEAK_BLOCKS: usize = 64;

/// Samples the no-total judgement looks back over, and needs before it judges:
/// long enough that the allocator's warm-up (a climb over the first hundred
/// samples or so, then a plateau) is over before the first judgement.
pub const LEAK_HISTORY: usize = 240;
/// Samples ahead the growth is projected over (at most as many as have been
/// seen), and the part of the current use that growth must reach: 0.02% of the
/// use per sample projects to 20%.
pub const LEAK_HORIZON: f64 = 1000.0;
/// Growth within the window, as a share of its first value, that no start-up
/// warm-up reaches: judged at once, without the long history.
pub const LEAK_LARGE_GROWTH: f64 = 0.5;
pub const LEAK_FRACTION: f64 = 0.15;
/// Training steps the samples must span for a climb to be judged before the
/// history is full: past any warm-up (a climb over a run's first 130 steps,
/// logged at each, is one).
pub const LEAK_EARLY_STEPS: u64 = 1000;
/// The part of the use a growth must add over the horizon when the long record
/// has seen it keep its rate over the whole horizon, past the run's start: a
/// warm-up is long over, so a slower leak (a few MiB a step) is told apart.
pub const LEAK_FRACTION_LONG: f64 = 0.05;
/// Share of the pairwise slopes that must be positive: a sawtooth (allocate,
/// free) has about half.
const LEAK_POSITIVE: f64 = 0.8;

impl MemoryLeak {
    pub fn new(s: KindSettings, metric: &str) -> Self {
        let h = LEAK_HISTORY.max(s.window);
        MemoryLeak {
            metric: metric.to_owned(),
            window: s.window.max(10),
            // Its quarters are read only for a history whose slope climbs
            // (`sustained_growth`): sorted while such reads come in a row.
            history: SortedSeries::lazy(h, &[(h / 4, 0), (h / 4, h / 4)]),
            half_lag_slopes: SortedSeries::new(h - h / 2, &[(h - h / 2, 0)]),
            samples: 0,
            first_step: None,
            step: 0,
            blocks: std::collections::VecDeque::with_capacity(LEAK_BLOCKS),
            block: Vec::with_capacity(LEAK_BLOCK),
            evicted_high: f64::NEG_INFINITY,
            long_slope: None,
            gate: Gate::new(&s, Worse::Higher),
            s,
        }
    }

    /// Adds a sample to the long record.
    fn record(&mut self, bytes: f64) {
        self.block.push(bytes);
        if self.block.len() < LEAK_BLOCK {
            return;
        }
        if let Some(m) = median(&self.block) {
            if self.blocks.len() == LEAK_BLOCKS {
                let old = self.blocks.pop_front().unwrap_or(m);
                self.evicted_high = self.evicted_high.max(old);
            }
            self.blocks.push_back(m);
            self.long_slope = self.long_record_slope();
        }
        self.block.clear();
    }

    /// The long record's robust slope per sample, when the record is full and
    /// began after the run's start (the first half of [`LEAK_HISTORY`]) and
    /// [`LEAK_POSITIVE`] of its half-lag slopes rise; `None` otherwise.
    fn long_record_slope(&mut self) -> Option<f64> {
        let start = (LEAK_HISTORY / 2 + LEAK_BLOCKS * LEAK_BLOCK) as u64;
        if self.blocks.len() < LEAK_BLOCKS || self.samples < start {
            return None;
        }
        let (per_block, positive) = half_lag_slope(self.blocks.make_contiguous())?;
        (per_block > 0.0 && positive >= LEAK_POSITIVE).then_some(per_block / LEAK_BLOCK as f64)
    }

    /// A slow leak: the long record's slope adds [`LEAK_FRACTION_LONG`] of `now`
    /// over the horizon (the record spans it whole).
    fn long_growth(&self, now: impl Fn() -> f64) -> Option<f64> {
        self.long_slope.filter(|slope| slope * LEAK_HORIZON >= LEAK_FRACTION_LONG * now().max(1.0))
    }

    /// Whether `now` is above every level the series held before the newest
    /// window: a leak takes memory to new highs; memory climbing back to where it
    /// was (a restart, a cache emptied and filled again) is not a leak.
    fn at_a_new_high(&self, now: f64) -> bool {
        // Blocks that ended before the window's first sample (the block being
        // filled and the newest whole blocks lie within it).
        let inside = self.window.saturating_sub(self.block.len()).div_ceil(LEAK_BLOCK);
        let older = self.blocks.len().saturating_sub(inside);
        let high = self.blocks.iter().take(older).copied().fold(self.evicted_high, f64::max);
        now > high
    }

    /// Whether the growth keeps its rate over the span it is projected from (as
    /// many samples as the horizon, within the long record): the newer half of
    /// that span rising at [`STILL_RISING`] of the older half's Theil-Sen rate or
    /// more. A start-up creep or fragmentation that levels off over thousands of
    /// samples slows down; a leak does not. The series' start (the first half of
    /// [`LEAK_HISTORY`], an allocator's warm-up) is left out of the span; a span
    /// under 8 blocks tells nothing.
    fn keeps_its_rate(&self) -> bool {
        let after_start = self.samples.saturating_sub((LEAK_HISTORY / 2) as u64) as f64;
        let span = ((self.horizon().min(after_start) as usize) / LEAK_BLOCK).min(self.blocks.len());
        if span < 8 {
            return true;
        }
        let (older, newer): (Vec<f64>, Vec<f64>) = {
            let b: Vec<f64> = self.blocks.iter().skip(self.blocks.len() - span).copied().collect();
            (b[..span / 2].to_vec(), b[span - span / 2..].to_vec())
        };
        match (half_lag_slope(&older), half_lag_slope(&newer)) {
            (Some((old_rate, _)), Some((new_rate, _))) => !(old_rate > 0.0 && new_rate < STILL_RISING * old_rate),
            _ => true,
        }
    }

    /// One sample of the series, with the memory it can use (if known).
    pub fn observe(&mut self, step: u64, bytes: f64, total: Option<f64>) -> Option<Raised> {
        if !bytes.is_finite() {
            return None;
        }
        self.history.push(bytes);
        // The slope from the point half the full history back, as half_lag_slope
        // computes it.
        let (n, lag) = (self.history.len(), self.history.capacity() / 2);
        if n > lag {
            self.half_lag_slopes.push((bytes - self.history.values()[n - 1 - lag]) / lag as f64);
        }
        self.samples += 1;
        self.first_step.get_or_insert(step);
        self.step = step;
        self.record(bytes);
        if self.gate.warming() || n < self.window {
            return None;
        }
        // The window: the newest samples of the history, read in place.
        let w = &self.history.values()[n - self.window..];
        // The newest samples' level: read where a judgement needs it (with a
        // total, at every point; without one, for a history whose slope climbs).
        // The window holds at least 10 samples: the median always exists.
        let now = std::cell::OnceCell::new();
        let now = || *now.get_or_init(|| median(&w[w.len() - 5..]).unwrap_or(f64::NAN));
        let total = total.filter(|t| *t > 0.0);
        // The window's least-squares slope and fit: judged with a total, and
        // otherwise wanted only by a message that quotes it (the capacity-free
        // judgement takes the history's robust slope), so fitted only then. The
        // window holds at least 10 samples: the fit always exists.
        let (slope, r2) = match total {
            Some(_) => index_slope(w)?,
            None => (f64::NAN, f64::NAN),
        };
        let grown = slope * w.len() as f64;
        let (severity, slope) = match total {
            Some(total) if now() >= 0.95 * total => (Some(Severity::Critical), slope),
            // Still rising at the newest quarter: an allocator warm-up that has
            // levelled off is not projected to the total.
            Some(total) if slope > 0.0 && r2 >= 0.8 && grown >= 0.01 * total && still_rising(w, slope) => {
                let left = ((total - now()) / slope).max(0.0);
                // A distant projection (warn) waits until the history is as long as
                // the capacity-free judgement's: a startup climb (allocator, caches,
                // fragmentation) projects to the total while it lasts, then levels
                // off. One that would fill the memory soon (critical) does not wait,
                // nor one that grew by half within the window: a warm-up adds a few
                // tens of percent, not that.
                let large = grown >= LEAK_LARGE_GROWTH * w[0].max(1.0);
                let severity = grade(left, self.s.warn, self.s.critical, true).filter(|s| *s == Severity::Critical || large || self.history.is_full());
                (severity, slope)
            }
            Some(_) => (None, slope),
            None => (None, slope),
        };
        // Without a total, or far from one (a 1 MiB-a-step leak on a host of 24 GiB
        // is years from full by the projection, yet plainly a leak), sustained growth
        // that does not level off is a warning.
        let (severity, slope) = match severity {
            None => match self.sustained_growth(now).or_else(|| self.long_growth(now)).or_else(|| self.early_growth(now)) {
                Some(robust) => (Some(Severity::Warn), robust),
                None => (None, slope),
            },
            some => (some, slope),
        };
        // Growth back to an earlier level, or growth that is slowing down, is not
        // a leak (all but memory already 95% used).
        let used_up = total.is_some_and(|t| now() >= 0.95 * t);
        let severity = severity.filter(|_| used_up || self.at_a_new_high(now()) && self.keeps_its_rate());
        let v = self.gate.pass(severity, step, bytes)?;
        // NaN: the window was not fitted (no total, no robust slope): fit it now.
        let slope = if slope.is_nan() { index_slope(w)?.0 } else { slope };
        // A share in percent (the host's memory in use) is said in points of it.
        if self.metric == catalog::MEM_HOST_PCT {
            let message = format!(
                "{} growing {} points per sample since sample {} ({}% there), now {}%{}",
                self.metric,
                compact(slope),
                v.step,
                compact(v.value),
                compact(now()),
                match total {
                    Some(t) => format!(": full in about {:.0} samples", ((t - now()) / slope).max(0.0)),
                    None => String::new(),
                }
            );
            return Some(v.raise(self.metric.clone(), message));
        }
        let gib = |b: f64| b / (1u64 << 30) as f64;
        let since = format!("since sample {} ({} GiB there)", v.step, compact(gib(v.value)));
        let per_sample = compact(slope / (1u64 << 20) as f64);
        let message = match total {
            Some(t) => format!(
                "{} growing {per_sample} MiB per sample {since} ({}/{} GiB now): full in about {} samples",
                self.metric,
                compact(gib(now())),
                compact(gib(t)),
                compact(((t - now()) / slope).max(0.0).round())
            ),
            None => format!(
                "{} growing {per_sample} MiB per sample {since}, now {} GiB: +{} over the next {} samples at this rate",
                self.metric,
                compact(gib(now())),
                percent(slope * self.horizon() / now().max(1.0)),
                self.horizon()
            ),
        };
        Some(v.raise(self.metric.clone(), message))
    }

    /// The robust slope of a sustained climb that has not levelled off and will
    /// add a sizeable part of `now` over the horizon; `None` otherwise.
    fn sustained_growth(&self, now: impl Fn() -> f64) -> Option<f64> {
        if !self.history.is_full() {
            return None;
        }
        let n = self.history.len();
        // half_lag_slope of the history: the median of the slopes kept, and the
        // share of them that is positive.
        if n / 2 < 2 {
            return None;
        }
        let slopes = self.half_lag_slopes.sorted_range(0, self.half_lag_slopes.len());
        let slope = sorted_median(&slopes)?;
        let positive = (slopes.len() - slopes.partition_point(|s| !(*s > 0.0))) as f64 / slopes.len() as f64;
        // The slope's own conditions first: the quarters' levels (the history's
        // sorted spans) are read only for a slope that passes them.
        if !(slope > 0.0 && positive >= LEAK_POSITIVE && slope * self.horizon() >= LEAK_FRACTION * now().max(1.0)) {
            return None;
        }
        let q = n / 4;
        // Still rising: the newest quarter's level is above the one before by
        // nearly what the slope says (a plateau after warm-up is not).
        let recent_rise = sorted_median(&self.history.sorted_range(n - q, n))? - sorted_median(&self.history.sorted_range(n - 2 * q, n - q))?;
        (recent_rise >= STILL_RISING * slope * q as f64).then_some(slope)
    }

    /// Before the history is full, of memory logged sparsely (its samples span
    /// [`LEAK_EARLY_STEPS`] training steps or more): the window's climb, as
    /// steady as [`Self::sustained_growth`]'s (its newest quarter too), at a rate
    /// that adds half the use ([`LEAK_LARGE_GROWTH`]) over as many samples as the
    /// series has been watched. The window starts past the series' first half
    /// window (a warm-up's samples); memory logged every 50 steps fills a GPU
    /// long before 240 samples.
    fn early_growth(&self, now: impl Fn() -> f64) -> Option<f64> {
        let n = self.history.len();
        let span = self.step.saturating_sub(self.first_step.unwrap_or(self.step));
        if self.history.is_full() || n < self.window + self.window / 2 || span < LEAK_EARLY_STEPS {
            return None;
        }
        let w = &self.history.values()[n - self.window..];
        // The cheap test first: the window rose by a good part of that.
        if !(w[w.len() - 1] - w[0] >= 0.25 * LEAK_LARGE_GROWTH * w[w.len() - 1].abs() * w.len() as f64 / self.horizon()) {
            return None;
        }
        let (slope, positive) = half_lag_slope(w)?;
        if !(slope > 0.0 && positive >= LEAK_POSITIVE && slope * self.horizon() >= LEAK_LARGE_GROWTH * now().max(1.0)) {
            return None;
        }
        // Still rising at that rate over its newest quarter alone: a step up
        // (a cache filled once) is flat after it.
        let (newest, _) = half_lag_slope(&w[w.len() - w.len() / 4..])?;
        (newest >= STILL_RISING * slope).then_some(slope)
    }

    /// Samples ahead the capacity-free judgement projects the growth over:
    /// [`LEAK_HORIZON`], or as many samples as the series has been watched when
    /// fewer. Early in a run a start-up climb (allocator, caches) is still going
    /// on; a trend seen over 240 samples is not extrapolated 1,000 ahead.
    fn horizon(&self) -> f64 {
        LEAK_HORIZON.min(self.samples as f64)
    }
}

/// Share of the slope's rise over a quarter of the window that the newest quarter
/// must show over the one before: a leak keeps its rate (1), a startup climb that
/// stopped within the quarter before shows half of it or less.
const STILL_RISING: f64 = 0.75;

/// Whether the newest quarter of `w` is above the quarter before it by at least
/// [`STILL_RISING`] of what `slope` (per sample) says.
fn still_rising(w: &[f64], slope: f64) -> bool {
    let q = w.len() / 4;
    if q == 0 {
        return false;
    }
    match (median(&w[w.len() - q..]), median(&w[w.len() - 2 * q..w.len() - q])) {
        (Some(newest), Some(before)) => newest - before >= STILL_RISING * slope * q as f64,
        _ => false,
    }
}

/// Throughput that falls below its own recent past. (A baseline session's rate is
/// compared by the hub, which has both runs.)
#[derive(Debug, Clone)]
pub struct ThroughputRegression {
    s: KindSettings,
    metric: String,
    /// What this run's speed is read from, fixed at the first point that has one
    /// (see [`SpeedSource`]).
    source: Option<SpeedSource>,
    /// The speeds: the newest [`RECENT_POINTS`] and the ones before them kept sorted.
    window: SortedSeries,
    gate: Gate,
    /// Points not yet judged: those of the last [`BUCKET_S`] of wall time.
    bucket: Bucket,
}

/// A smaller fall than the warning's that lasts is a regression too: at this
/// share of the past or lower on [`SUSTAINED_LOW`] of the newest
/// [`SUSTAINED_BUCKETS`] judged buckets warns. A dataloader stall or a
/// checkpoint is over in a few; the trailing median (100 buckets) still holds
/// the speed before the fall by then.
const SUSTAINED_SHARE: f64 = 0.8;
const SUSTAINED_BUCKETS: usize = 20;
const SUSTAINED_LOW: usize = 14;

/// Points that came within [`BUCKET_S`] of each other, judged as one: the speeds
/// and logged values, and the time the bucket before them closed.
#[derive(Debug, Clone, Default)]
struct Bucket {
    speeds: Vec<f64>,
    logged: Vec<f64>,
    closed_at_s: Option<f64>,
}

impl Bucket {
    /// Adds a point; the bucket's (median logged value, median speed) once it
    /// spans [`BUCKET_S`], or at once for a point without a clock (a time that
    /// does not move on from the last bucket's).
    fn add(&mut self, time_s: f64, logged: f64, speed: f64) -> Option<(f64, f64)> {
        self.speeds.push(speed);
        self.logged.push(logged);
        let since = self.closed_at_s.map_or(f64::INFINITY, |t| time_s - t);
        if since > 0.0 && since < BUCKET_S && self.speeds.len() < BUCKET_POINTS {
            return None;
        }
        self.closed_at_s = Some(time_s);
        let closed = median(&self.logged).zip(median(&self.speeds));
        self.speeds.clear();
        self.logged.clear();
        closed
    }
}

/// Where a run's speed comes from. Many logs carry no tokens/s: nanoGPT prints a
/// step's time, Megatron an iteration time, MLX iterations per second; a slower
/// step is the same regression. The configured rate first, then samples/s, then
/// the step time (its speed is its inverse).
#[derive(Debug, Clone, PartialEq)]
enum SpeedSource {
    Rate(String),
    StepTime,
}

impl SpeedSource {
    /// The first source `p` carries, in order of preference.
    fn of(p: &Point, configured: &str) -> Option<SpeedSource> {
        let found = std::iter::once(configured).chain(catalog::stand_ins(configured).iter().copied()).find(|m| p.get(m).is_some())?;
        Some(if found == catalog::STEP_TIME_S { SpeedSource::StepTime } else { SpeedSource::Rate(found.to_owned()) })
    }

    fn metric(&self) -> &str {
        match self {
            SpeedSource::Rate(m) => m,
            SpeedSource::StepTime => catalog::STEP_TIME_S,
        }
    }

    /// (the value as logged, the speed it means); `None` when it has no speed.
    fn read(&self, p: &Point) -> Option<(f64, f64)> {
        let x = p.get(self.metric())?;
        let speed = match self {
            SpeedSource::Rate(_) => x,
            SpeedSource::StepTime if x > 0.0 => 1.0 / x,
            SpeedSource::StepTime => return None,
        };
        (x.is_finite() && speed.is_finite()).then_some((x, speed))
    }
}

/// Points whose median is compared with the past: short, so a regression shows
/// within a few steps, and a median, so one slow step (a checkpoint) does not.
const RECENT_POINTS: usize = 5;

/// Points closer together than this much wall time are judged as one (their
/// median), so that the windows span seconds whatever the step time: at 4 ms a
/// step (a small model on a GPU) five points are 20 ms, and a collector pass, a
/// checkpoint or another process's kernel slows that many in a row. A run of two
/// steps a second or slower, or a log without a clock, is judged point by point.
const BUCKET_S: f64 = 0.5;

/// At most this many points make one bucket (a clock far finer than the steps).
const BUCKET_POINTS: usize = 10_000;

impl ThroughputRegression {
    pub fn new(s: KindSettings) -> Self {
        ThroughputRegression {
            metric: s.metric.clone().unwrap_or_default(),
            source: None,
            window: SortedSeries::new(s.window.max(20) + RECENT_POINTS, &[(RECENT_POINTS, 0), (s.window.max(20), RECENT_POINTS)]),
            gate: Gate::new(&s, Worse::Lower),
            bucket: Bucket::default(),
            s,
        }
    }

    pub fn check(&mut self, p: &Point) -> Option<Raised> {
        if self.source.is_none() {
            self.source = SpeedSource::of(p, &self.metric);
            // The peak is the worst logged value: the lowest rate, the longest step.
            if self.source == Some(SpeedSource::StepTime) {
                self.gate.worse = Worse::Higher;
            }
        }
        let source = self.source.as_ref()?;
        let (logged, x) = source.read(p)?;
        // The warm-up counts points (the erratic first steps); the windows, buckets.
        let warming = self.gate.warming();
        let (logged, x) = self.bucket.add(p.time_s, logged, x)?;
        self.window.push(x);
        if warming || self.window.len() < 2 * RECENT_POINTS + 10 {
            return None;
        }
        let n = self.window.len();
        let recent = sorted_median(&self.window.sorted_range(n - RECENT_POINTS, n))?;
        let reference = sorted_median(&self.window.sorted_range(0, n - RECENT_POINTS))?;
        if reference <= 0.0 {
            return None;
        }
        let ratio = recent / reference;
        // A regression is still there at the newest point: a pause of a few
        // logged points (an eval, a checkpoint) lowers the recent median while it
        // lasts, then the newest point is back at its level.
        let still_low = x <= self.s.warn * reference;
        let values = self.window.values();
        let sustained = values[n.saturating_sub(SUSTAINED_BUCKETS)..].iter().filter(|v| **v <= SUSTAINED_SHARE * reference).count() >= SUSTAINED_LOW;
        let severity = grade(ratio, self.s.warn, self.s.critical, true).filter(|_| still_low).or(sustained.then_some(Severity::Warn));
        let v = self.gate.pass(severity, p.step, logged)?;
        let metric = source.metric().to_owned();
        let lasted = if sustained { format!(", and under {:.0}% of it on {SUSTAINED_LOW} or more of the newest {SUSTAINED_BUCKETS} points", 100.0 * SUSTAINED_SHARE) } else { String::new() };
        let message = match source {
            SpeedSource::Rate(_) => format!("{metric} fell to {} at step {}: recent median {}, {} of its past {}{lasted}", compact(v.value), v.step, compact(recent), percent(ratio), compact(reference)),
            SpeedSource::StepTime => format!(
                "{metric} rose to {} at step {}: recent median {}, a speed {} of its past (median {}){lasted}",
                compact(v.value),
                v.step,
                compact(1.0 / recent),
                percent(ratio),
                compact(1.0 / reference)
            ),
        };
        Some(v.raise(metric, message))
    }
}

super::one_alert_detectors!(KlRunaway => KlRunaway, ThroughputRegression => ThroughputRegression);

impl super::Detector for LossDivergence {
    fn kind(&self) -> crate::health::AlertKind {
        crate::health::AlertKind::LossDivergence
    }

    fn observe_into(&mut self, p: &Point, out: &mut Vec<Raised>) {
        out.extend(self.check(p).map(super::Watched::as_logged));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::AlertKind;
    use crate::health::config::defaults;
    use crate::metrics::MetricName;

    /// The slopes and quarters kept as samples arrive equal `half_lag_slope` and
    /// the medians of the history's copy, bit for bit.
    #[test]
    fn leak_history_statistics_equal_those_of_a_copy() {
        use crate::health::stats::half_lag_slope;
        let mut rng = crate::workload::rng::SplitMix64::new(3);
        let mut leak = MemoryLeak::new(defaults(AlertKind::MemoryLeak), catalog::MEM_RSS_BYTES);
        let mut copy = Window::new(leak.history.capacity());
        for i in 0..700u64 {
            let bytes = 1e9 + 1e6 * (i as f64) * if i % 200 < 100 { 1.0 } else { -0.5 } + ((rng.next_u64() % 1000) as f64) * 1e3;
            leak.observe(i, bytes, None);
            copy.push(bytes);
            if !leak.history.is_full() {
                continue;
            }
            let h = copy.to_vec();
            let slopes = leak.half_lag_slopes.sorted_range(0, leak.half_lag_slopes.len());
            let positive = (slopes.len() - slopes.partition_point(|s| !(*s > 0.0))) as f64 / slopes.len() as f64;
            let (slope, want_positive) = half_lag_slope(&h).unwrap();
            assert_eq!((sorted_median(&slopes).map(f64::to_bits), positive.to_bits()), (Some(slope.to_bits()), want_positive.to_bits()), "sample {i}");
            let (n, q) = (h.len(), h.len() / 4);
            assert_eq!(sorted_median(&leak.history.sorted_range(n - 2 * q, n - q)), median(&h[n - 2 * q..n - q]));
        }
    }

    fn feed(values: impl Iterator<Item = Vec<(MetricName, f64)>>, mut f: impl FnMut(&Point) -> Option<Raised>) -> Vec<(u64, Raised)> {
        values
            .enumerate()
            .filter_map(|(i, v)| f(&Point { step: i as u64, time_s: i as f64, values: &v }).map(|r| (i as u64, r)))
            .collect()
    }

    fn wiggle(i: usize) -> f64 {
        1.0 + 0.02 * ((i as f64) * 1.7).sin()
    }

    #[test]
    fn loss_divergence_after_a_plateau() {
        let mut d = LossDivergence::new(defaults(AlertKind::LossDivergence));
        let series = (0..400).map(|i| {
            let base = 2.0 * wiggle(i);
            let v = if i < 200 { base } else { base * (0.01 * (i - 200) as f64).exp() };
            vec![("loss".into(), v)]
        });
        let alerts = feed(series, |p| d.check(p));
        assert_eq!(alerts.len(), 2, "warn then critical: {alerts:?}");
        assert!(alerts[0].0 > 200 && alerts[0].0 < 280, "{alerts:?}");
        assert_eq!(alerts[0].1.severity, Severity::Warn);
    }

    #[test]
    fn loss_divergence_of_a_loss_crossing_zero() {
        let mut rng = crate::workload::rng::SplitMix64::new(5);
        let mut u = move || rng.unit() - 0.5;
        let noise: Vec<f64> = (0..1200).map(|i| 0.01 * ((i as f64) * 0.37).sin() - 0.002 + 0.02 * (u() + u() + u())).collect();
        // (name, added drift from step 600 per step, expected first severity)
        let table = [("healthy", 0.0, None), ("slow climb", 2e-4, Some(Severity::Warn)), ("blow-up", 5e-3, Some(Severity::Warn))];
        for (name, drift, want) in table {
            let mut d = LossDivergence::new(defaults(AlertKind::LossDivergence));
            let series = noise.iter().enumerate().map(|(i, n)| vec![("loss".into(), n + drift * i.saturating_sub(600) as f64)]);
            let alerts = feed(series, |p| d.check(p));
            assert_eq!(alerts.first().map(|a| a.1.severity), want, "{name}: {alerts:?}");
            assert!(alerts.iter().all(|(at, a)| *at > 600 && a.message.len() < 160), "{name}: {alerts:?}");
        }
    }

    #[test]
    fn a_loss_growing_from_zero_is_not_a_divergence() {
        // A GRPO loss is beta times the KL: zero at the first steps (logged to 4
        // decimals), growing as the policy leaves its reference. Against it, a
        // loss at its plateau from the start (a resumed run) that climbs away.
        let grpo = |i: usize| (0.04 * 0.0005 * i as f64 * wiggle(i) * 1e4).round() / 1e4;
        let resumed = |i: usize| 2.0 * wiggle(i) * if i < 200 { 1.0 } else { (0.01 * (i - 200) as f64).exp() };
        let aux = |i: usize| 0.01 * (1.0 - (-(i as f64) / 300.0).exp()) * wiggle(i);
        // (name, series, raised)
        let table: [(&str, &dyn Fn(usize) -> f64, bool); 3] = [("grpo loss from zero", &grpo, false), ("aux loss rising to its level", &aux, false), ("resumed run", &resumed, true)];
        for (name, f, want) in table {
            let mut d = LossDivergence::new(defaults(AlertKind::LossDivergence));
            let alerts = feed((0..400).map(|i| vec![("loss".into(), f(i))]), |p| d.check(p));
            assert_eq!(!alerts.is_empty(), want, "{name}: {alerts:?}");
        }
    }

    #[test]
    fn severity_ladder_of_trends() {
        // Loss divergence: a loss that fell from 10 to 2 and climbs back.
        let fall = |i: usize| 2.0 + 8.0 * (-(i as f64) / 40.0).exp();
        for (name, climb_to, want) in [("back most of the way", 7.0, Severity::Critical), ("up 1.6x, far from initial", 3.2, Severity::Warn)] {
            let mut d = LossDivergence::new(defaults(AlertKind::LossDivergence));
            let series = (0..700).map(|i| {
                let up = if i >= 400 { ((i - 400) as f64 / 100.0).min(1.0) * (climb_to - 2.0) } else { 0.0 };
                vec![("loss".into(), (fall(i) + up) * wiggle(i))]
            });
            let alerts = feed(series, |p| d.check(p));
            assert_eq!(alerts.iter().map(|a| a.1.severity).max(), Some(want), "{name}: {alerts:?}");
            assert!(alerts.iter().all(|a| a.1.step == alerts[0].1.step), "{name}: one event: {alerts:?}");
        }
        // A blow-up that both loss detectors call harm: both quote one initial level,
        // the run's start, whatever their windows.
        let blow_up = |i: usize| vec![(MetricName::from("loss"), if (400..480).contains(&i) { 9.0 } else { fall(i) } * wiggle(i))];
        let mut divergence = LossDivergence::new(defaults(AlertKind::LossDivergence));
        let mut spike = super::super::spike::Spike::new(AlertKind::LossSpike, defaults(AlertKind::LossSpike), super::super::spike::Direction::Up, 0.0, "jumped");
        let initial_of = |alerts: &[(u64, Raised)]| {
            alerts.iter().find_map(|(_, a)| a.message.split("of the way to its initial ").nth(1).map(|rest| rest.split([' ', ';', ')']).next().unwrap_or_default().to_owned()))
        };
        let by_divergence = initial_of(&feed((0..700).map(blow_up), |p| divergence.check(p)));
        let by_spike = initial_of(&feed((0..700).map(blow_up), |p| spike.check(p)));
        assert!(by_divergence.is_some() && by_divergence == by_spike, "{by_divergence:?} vs {by_spike:?}");
        // KL runaway: KL climbing to several times its level and staying there.
        for (name, times, want) in [("3.8x for long", 3.8, Severity::Critical), ("2.5x", 2.5, Severity::Warn)] {
            let mut d = KlRunaway::new(defaults(AlertKind::KlRunaway));
            let series = (0..500).map(|i| {
                let climb = if i >= 300 { 1.0 + (times - 1.0) * ((i - 300) as f64 / 40.0).min(1.0) } else { 1.0 };
                vec![("kl".into(), 0.05 * climb * wiggle(i))]
            });
            let alerts = feed(series, |p| d.check(p));
            assert_eq!(alerts.iter().map(|a| a.1.severity).max(), Some(want), "{name}: {alerts:?}");
        }
    }

    #[test]
    fn kl_runaway_with_a_stuck_coefficient_is_critical_and_the_early_ramp_is_quiet() {
        let mut d = KlRunaway::new(defaults(AlertKind::KlRunaway));
        let series = (0..500).map(|i| {
            let ramp = 0.05 * (1.0 - (-(i as f64) / 30.0).exp());
            let v = if i < 300 { ramp } else { ramp * (0.03 * (i - 300) as f64).exp() };
            vec![("kl".into(), v * wiggle(i)), ("kl_coef".into(), 0.1)]
        });
        let alerts = feed(series, |p| d.check(p));
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        assert!(alerts[0].0 > 300 && alerts[0].1.severity == Severity::Critical, "{alerts:?}");
        assert!(alerts[0].1.message.contains("kl_coef stuck"));
    }

    /// Should raise / should not: a climb slower than the 200-point window,
    /// measured from the run's settled level.
    #[test]
    fn a_slow_kl_climb_is_measured_from_the_settled_level() {
        // (what, KL at point i, points, first point that may raise: None = no slow-climb alert)
        type Case = (&'static str, fn(usize) -> f64, usize, Option<usize>);
        fn plateau(i: usize) -> f64 {
            0.05 * (1.0 - (-(i as f64) / 30.0).exp()) * wiggle(i)
        }
        let cases: [Case; 7] = [
            ("a KL living under the floor (0.0035) that doubles every 115 points from point 800", |i| 0.0035 * wiggle(i) * 2f64.powf(i.saturating_sub(800) as f64 / 115.0), 1250, Some(800)),
            ("a fresh policy's KL rising from zero under the floor, like a square root", |i| 0.03 * (i as f64 / 1250.0).sqrt() * wiggle(i), 1250, None),
            ("a linear climb to 10x over 2,000 points", |i| plateau(i) * (1.0 + 9.0 * (i.saturating_sub(1000) as f64 / 2000.0)), 3000, Some(1000)),
            ("an exponential climb to 10x over 2,000 points", |i| plateau(i) * 10f64.powf(i.saturating_sub(1000) as f64 / 2000.0), 3000, Some(1000)),
            ("a healthy drift up by 40% over the run", |i| plateau(i) * (1.0 + 0.4 * i as f64 / 3000.0), 3000, None),
            ("a KL still rising from zero (a fresh policy), like a square root", |i| 0.1 * (i as f64 / 3000.0).sqrt() * wiggle(i), 3000, None),
            // One block of noise: the newest closed level alone is up.
            ("a burst of 60 points at 3x after a plateau", |i| plateau(i) * if (2000..2060).contains(&i) { 3.0 } else { 1.0 }, 2200, None),
        ];
        for (what, kl, n, want) in cases {
            let mut d = KlRunaway::new(defaults(AlertKind::KlRunaway));
            let alerts = feed((0..n).map(|i| vec![("kl".into(), kl(i)), ("kl_coef".into(), 0.1 * wiggle(i + 3))]), |p| d.check(p));
            let slow: Vec<_> = alerts.iter().filter(|(_, r)| r.message.contains("settled level")).collect();
            match want {
                None => assert!(slow.is_empty() && (what.contains("burst") || alerts.is_empty()), "{what}: {alerts:?}"),
                Some(from) => {
                    let (at, r) = alerts.first().unwrap_or_else(|| panic!("{what}: nothing raised"));
                    assert!(*at as usize > from && r.severity >= Severity::Warn, "{what}: {alerts:?}");
                    assert!(!slow.is_empty(), "{what}: not judged as a slow climb: {alerts:?}");
                }
            }
        }
    }

    #[test]
    fn a_kl_that_wanders_is_not_a_runaway_but_a_climb_past_its_noise_is() {
        // log KL wanders by up to 0.9 either way over tens of steps (noise with
        // memory): it reaches 2.5x its median and climbs for 40 steps again and again.
        let wander = |i: usize| 0.9 * ((i as f64) / 23.0).sin();
        let kl = |i: usize, from: Option<usize>| 0.1 * (wander(i) + from.map_or(0.0, |f| 0.05 * i.saturating_sub(f) as f64)).exp();
        let mut d = KlRunaway::new(defaults(AlertKind::KlRunaway));
        let alerts = feed((0..3000).map(|i| vec![("kl".into(), kl(i, None))]), |p| d.check(p));
        assert!(alerts.is_empty(), "{alerts:?}");
        let mut d = KlRunaway::new(defaults(AlertKind::KlRunaway));
        let alerts = feed((0..1800).map(|i| vec![("kl".into(), kl(i, Some(1500)))]), |p| d.check(p));
        assert!(alerts.first().is_some_and(|(at, r)| (1500..1650).contains(at) && r.severity >= Severity::Warn), "{alerts:?}");
    }

    #[test]
    fn memory_leak_projects_exhaustion() {
        let mut d = MemoryLeak::new(defaults(AlertKind::MemoryLeak), "mem/gpu_bytes");
        let total = 80e9;
        let alerts: Vec<_> = (0..300u64)
            .filter_map(|i| {
                let v = if i < 100 { 20e9 } else { 20e9 + (i - 100) as f64 * 50e6 };
                d.observe(i, v * wiggle(i as usize).sqrt().sqrt(), Some(total)).map(|r| (i, r))
            })
            .collect();
        assert!(!alerts.is_empty() && alerts[0].0 > 100, "{alerts:?}");
        assert!(alerts[0].1.message.contains("full in about"));
    }

    #[test]
    fn an_allocator_ramp_that_levels_off_is_not_projected_to_the_total() {
        // +15% over the first 48 samples, then flat: judged from sample 60 on.
        let mut d = MemoryLeak::new(defaults(AlertKind::MemoryLeak), "mem/gpu_bytes");
        let alerts: Vec<_> = (0..1500u64)
            .filter_map(|i| d.observe(i, 20e9 * (1.0 + 0.15 * (i as f64 / 48.0).min(1.0)) * wiggle(i as usize).sqrt().sqrt(), Some(48e9)).map(|r| (i, r)))
            .collect();
        assert!(alerts.is_empty(), "{alerts:?}");
    }

    #[test]
    fn a_long_startup_climb_is_not_projected_to_the_total_before_the_history_fills() {
        // +15% over the first 180 samples (caches and fragmentation at startup),
        // then flat: a warn-level projection while it climbs, not a leak.
        let mut d = MemoryLeak::new(defaults(AlertKind::MemoryLeak), "mem/gpu_bytes");
        let alerts: Vec<_> = (0..1500u64)
            .filter_map(|i| d.observe(i, 20e9 * (1.0 + 0.15 * (i as f64 / 180.0).min(1.0)) * wiggle(i as usize).sqrt().sqrt(), Some(80e9)).map(|r| (i, r)))
            .collect();
        assert!(alerts.is_empty(), "{alerts:?}");
    }

    #[test]
    fn memory_leak_without_a_total_is_sustained_growth() {
        const GB: f64 = 1e9;
        let start = 20.0 * GB;
        let jitter = |i: u64| 1.0 + 2e-3 * ((i as f64) * 2.3).sin() * ((i as f64) * 0.71).cos();
        // (name, bytes at sample i, leaks from sample)
        type Series = Box<dyn Fn(u64) -> f64>;
        let mut table: Vec<(String, Series, Option<u64>)> = Vec::new();
        for rate in [2e-4, 5e-4, 2e-3] {
            table.push((format!("ramp {rate}"), Box::new(move |i| start * (1.0 + rate * i.saturating_sub(100) as f64)), Some(100)));
            for every in [10u64, 40] {
                let stairs = move |i: u64| start * (1.0 + rate * (i.saturating_sub(100) / every * every) as f64);
                table.push((format!("stairs {rate} every {every}"), Box::new(stairs), Some(100)));
            }
        }
        let warmup = move |i: u64| start * (1.0 + 0.3 * (i.min(150) as f64 / 150.0));
        table.push(("plateau after warm-up".into(), Box::new(warmup), None));
        // A warm-up to twice the use over 100 samples, then flat.
        table.push(("doubling warm-up".into(), Box::new(move |i| start * (1.0 + (i.min(100) as f64 / 100.0))), None));
        // Memory logged sparsely that fills its GPU within 250 samples: +1.5% of
        // the start a sample, past half the use within two windows.
        table.push(("fast leak from the start".into(), Box::new(move |i| start * (1.0 + 0.015 * i as f64)), Some(0)));
        // A start-up climb of +15% over 900 samples: while it lasts it projects to
        // +16% over 1,000 samples, but it is never projected further ahead than
        // it has been watched.
        table.push(("long start-up climb".into(), Box::new(move |i| start * (1.0 + 0.15 * (i as f64 / 900.0).min(1.0))), None));
        table.push(("flat".into(), Box::new(move |_| start), None));
        for period in [20u64, 50, 64] {
            table.push((format!("sawtooth {period}"), Box::new(move |i| start * (1.0 + 0.1 * (i % period) as f64 / period as f64)), None));
        }
        // The same with a total far away (a host with 1,000 times the use): the
        // projection to it is distant, the sustained growth still a warning.
        for total in [None, Some(1000.0 * start)] {
            for (name, bytes, leak_from) in &table {
                let mut d = MemoryLeak::new(defaults(AlertKind::MemoryLeak), "mem/gpu_bytes");
                let alerts: Vec<_> = (0..1500u64).filter_map(|i| d.observe(i, bytes(i) * jitter(i), total).map(|r| (i, r))).collect();
                match leak_from {
                    None => assert!(alerts.is_empty(), "{name} {total:?}: {alerts:?}"),
                    Some(onset) => {
                        assert!(!alerts.is_empty(), "{name} {total:?}: nothing raised");
                        assert!(alerts.iter().all(|(at, a)| at > onset && a.severity == Severity::Warn), "{name} {total:?}: {alerts:?}");
                        let said = if total.is_some() { "full in about" } else { "over the next" };
                        assert!(alerts[0].1.message.contains(said), "{name}: {}", alerts[0].1.message);
                    }
                }
            }
        }
    }

    #[test]
    fn a_leak_that_adds_half_the_use_is_raised_before_the_history_fills() {
        // 16 GB, +1.5% of it a sample (memory logged every 50 steps of a run that
        // fills 40 GB by its 100th sample): raised once the window is past the start.
        let mut d = MemoryLeak::new(defaults(AlertKind::MemoryLeak), "mem/gpu_bytes");
        let bytes = |i: u64| 16e9 * (1.0 + 0.015 * i as f64) * (1.0 + 1e-3 * (i as f64).sin());
        let first = (0..240u64).find(|i| d.observe(*i * 50, bytes(*i), None).is_some());
        assert!(first.is_some_and(|i| (90..140).contains(&i)), "{first:?}");
        // Flat for 130 samples, then the same climb: raised within a window of its start.
        let mut d = MemoryLeak::new(defaults(AlertKind::MemoryLeak), "mem/gpu_bytes");
        let first = (0..240u64).find(|i| d.observe(*i * 50, bytes(i.saturating_sub(130)), None).is_some());
        assert!(first.is_some_and(|i| (130..190).contains(&i)), "{first:?}");
        // The same climb logged at every step is a warm-up while it is that short.
        let mut d = MemoryLeak::new(defaults(AlertKind::MemoryLeak), "mem/gpu_bytes");
        assert_eq!((0..140u64).find(|i| d.observe(*i, bytes(*i), None).is_some()), None);
    }

    /// Should raise / should not: a leak takes memory to new highs and keeps its
    /// rate; a re-climb after a restart and a creep that levels off do neither.
    #[test]
    fn memory_leak_is_growth_to_new_highs_that_keeps_its_rate() {
        const GB: f64 = 1e9;
        let jitter = |i: u64| 1.0 + 2e-3 * ((i as f64) * 2.3).sin() * ((i as f64) * 0.71).cos();
        // A process restarted at sample 1,500: memory falls to a third and climbs
        // back over 150 samples (the allocator's warm-up again).
        let restart = |i: u64| if i < 1_500 { 30.0 * GB } else { 30.0 * GB * (0.35 + 0.65 * ((i - 1_500) as f64 / 150.0).min(1.0)) };
        type Series = Box<dyn Fn(u64) -> f64>;
        // (what, bytes at sample i, total, leaks from sample)
        let table: Vec<(&str, Series, Option<f64>, Option<u64>)> = vec![
            ("re-climb after a restart, total known", Box::new(restart), Some(80.0 * GB), None),
            ("re-climb after a restart, no total", Box::new(restart), None, None),
            // +25% over thousands of samples, levelling off (time constant 500 samples).
            ("fragmentation creep that levels off", Box::new(move |i| 20.0 * GB * (1.0 + 0.25 * (1.0 - (-(i as f64) / 500.0).exp()))), None, None),
            ("a leak from sample 2,000", Box::new(move |i| 20.0 * GB * (1.0 + 5e-4 * i.saturating_sub(2_000) as f64)), None, Some(2_000)),
            ("a leak after the restart", Box::new(move |i| restart(i) + if i >= 1_800 { 20e6 * (i - 1_800) as f64 } else { 0.0 }), Some(80.0 * GB), Some(1_800)),
            ("a leak in stairs every 50 samples", Box::new(move |i| 20.0 * GB * (1.0 + 5e-4 * (i.saturating_sub(2_000) / 50 * 50) as f64)), None, Some(2_000)),
        ];
        for (what, bytes, total, leaks_from) in table {
            let mut d = MemoryLeak::new(defaults(AlertKind::MemoryLeak), "mem/gpu_bytes");
            let alerts: Vec<_> = (0..3_000u64).filter_map(|i| d.observe(i, bytes(i) * jitter(i), total).map(|r| (i, r))).collect();
            match leaks_from {
                None => assert!(alerts.is_empty(), "{what}: {alerts:?}"),
                Some(onset) => assert!(alerts.first().is_some_and(|(at, a)| *at > onset && a.severity >= Severity::Warn), "{what}: {alerts:?}"),
            }
        }
    }

    /// Should raise / should not: a slow leak (6% of the use per 1,000 samples,
    /// under a sawtooth) is told apart once the long record holds 1,000 samples
    /// past the run's start; a slower one (3%), a warm-up ramp and a creep that
    /// levels off are not leaks.
    #[test]
    fn a_slow_leak_warns_once_the_long_record_shows_it_keeping_its_rate() {
        const GB: f64 = 1e9;
        let saw = |i: u64| 0.5 * GB * (i % 120) as f64 / 120.0;
        let warm = |i: u64| 30.0 * GB * (0.6 + 0.4 * (i as f64 / 150.0).min(1.0));
        type Series = Box<dyn Fn(u64) -> f64>;
        let table: Vec<(&str, Series, Option<u64>)> = vec![
            ("6% per 1,000 from sample 300", Box::new(move |i| warm(i) + saw(i) + 1.8e6 * i.saturating_sub(300) as f64), Some(300)),
            ("3% per 1,000 from sample 300", Box::new(move |i| warm(i) + saw(i) + 0.9e6 * i.saturating_sub(300) as f64), None),
            ("warm-up, then flat", Box::new(move |i| warm(i) + saw(i)), None),
            ("creep of 10% that levels off", Box::new(move |i| warm(i) + saw(i) + 3.0 * GB * (1.0 - (-(i as f64) / 400.0).exp())), None),
        ];
        for (what, bytes, leaks_from) in table {
            let mut d = MemoryLeak::new(defaults(AlertKind::MemoryLeak), "mem/gpu_bytes");
            let alerts: Vec<_> = (0..4_000u64).filter_map(|i| d.observe(i, bytes(i), None).map(|r| (i, r))).collect();
            match leaks_from {
                None => assert!(alerts.is_empty(), "{what}: {alerts:?}"),
                // Not before the long record is full past the start (sample 1,144).
                Some(_) => assert!(alerts.first().is_some_and(|(at, a)| *at >= 1_144 && a.severity == Severity::Warn), "{what}: {alerts:?}"),
            }
        }
    }

    /// Should raise / should not: a KL whose adaptive controller overshoots (2.5x
    /// for 30 points every 200, each a runaway by the window's measure) is not a
    /// runaway once the run's record shows those swings (from about point 2,000);
    /// a climb to 30x past them is (one of no more than twice their log rise is
    /// familiar, as before).
    #[test]
    fn a_kl_runaway_must_stand_out_from_the_runs_own_swings() {
        let swing = |i: usize| if i >= 300 && i % 200 < 30 { 2.5 * (1.0 + 0.02 * ((i % 200) as f64)) } else { 1.0 };
        let kl = |i: usize, from: Option<usize>| 0.1 * wiggle(i) * swing(i) * from.map_or(1.0, |f| (0.03 * i.saturating_sub(f) as f64).exp().min(30.0));
        let warned = |from: Option<usize>| {
            let mut d = KlRunaway::new(defaults(AlertKind::KlRunaway));
            feed((0..3_000).map(|i| vec![("kl".into(), kl(i, from))]), |p| d.check(p)).into_iter().filter(|(_, r)| r.severity >= Severity::Warn).map(|(at, _)| at).collect::<Vec<u64>>()
        };
        assert!(warned(None).iter().all(|at| *at < 2_000), "{:?}", warned(None));
        assert!(warned(Some(2_050)).iter().any(|at| (2_050..2_200).contains(at)), "{:?}", warned(Some(2_050)));
    }

    /// Should raise / should not, for runs that log no tokens/s: the step time
    /// (nanoGPT's `time`, Megatron's iteration time) or samples/s stand in.
    #[test]
    fn throughput_regression_from_the_step_time_when_no_rate_is_logged() {
        // (what, metric logged, its value at point i, first point that must raise: None = nothing)
        type Case = (&'static str, &'static str, fn(usize) -> f64, Option<usize>);
        let cases: [Case; 5] = [
            ("step time doubles from point 400", catalog::STEP_TIME_S, |i| 0.2 * wiggle(i) * if i >= 400 { 2.0 } else { 1.0 }, Some(400)),
            ("step time steady with checkpoints every 50", catalog::STEP_TIME_S, |i| 0.2 * wiggle(i) * if i % 50 == 0 && i > 0 { 12.0 } else { 1.0 }, None),
            ("step time falling (a run that speeds up)", catalog::STEP_TIME_S, |i| 0.2 * wiggle(i) * if i >= 400 { 0.5 } else { 1.0 }, None),
            ("samples/s halves from point 300", catalog::SAMPLES_PER_S, |i| 64.0 * wiggle(i) * if i >= 300 { 0.5 } else { 1.0 }, Some(300)),
            ("a step time of zero or below is no speed", catalog::STEP_TIME_S, |i| if i % 7 == 0 { 0.0 } else { 0.2 * wiggle(i) }, None),
        ];
        for (what, metric, value, want) in cases {
            let mut d = ThroughputRegression::new(defaults(AlertKind::ThroughputRegression));
            let got = feed((0..600).map(|i| vec![(MetricName::Borrowed(metric), value(i)), (catalog::LOSS.into(), 2.0)]), |p| d.check(p));
            match want {
                None => assert!(got.is_empty(), "{what}: {got:?}"),
                Some(at) => {
                    let (i, r) = got.first().unwrap_or_else(|| panic!("{what}: nothing raised"));
                    assert!((at..at + 6).contains(&(*i as usize)) && r.step >= at as u64, "{what}: {got:?}");
                    assert_eq!(r.metric, metric, "{what}");
                    // The value is the one logged at the alert's step, as the message says.
                    assert_eq!(r.value, value(r.step as usize), "{what}");
                    assert!(r.message.contains(&compact(r.value)), "{what}: {}", r.message);
                    if metric == catalog::STEP_TIME_S {
                        assert!(r.peak.is_some_and(|p| p.value >= r.value), "{what}: the peak is the longest step: {r:?}");
                    }
                }
            }
        }
        // tokens/s, when logged, is preferred over the step time.
        let mut d = ThroughputRegression::new(defaults(AlertKind::ThroughputRegression));
        let got = feed((0..600).map(|i| vec![(catalog::STEP_TIME_S.into(), 0.2 * wiggle(i) * if i >= 300 { 3.0 } else { 1.0 }), (catalog::TOKENS_PER_S.into(), 1e4 * wiggle(i))]), |p| d.check(p));
        assert!(got.is_empty(), "{got:?}");
    }

    #[test]
    fn throughput_regression_ignores_pauses_of_a_few_points() {
        // Evals that slow three logged points in a row every 97 points, then a lasting halving.
        let mut d = ThroughputRegression::new(defaults(AlertKind::ThroughputRegression));
        let alerts: Vec<_> = (0..800usize)
            .filter_map(|i| {
                let mut v = 1000.0 * wiggle(i);
                if i % 97 < 3 && i > 0 {
                    v /= 8.0;
                }
                if i >= 600 {
                    v *= 0.5;
                }
                d.check(&Point { step: i as u64, time_s: 0.0, values: &[("tokens_per_s".into(), v)] }).map(|r| (i, r))
            })
            .collect();
        assert!(alerts.first().is_some_and(|(i, r)| *i >= 600 && *i <= 605 && r.step >= 600), "{alerts:?}");
    }

    #[test]
    fn throughput_regression_ignores_periodic_slow_steps() {
        let mut d = ThroughputRegression::new(defaults(AlertKind::ThroughputRegression));
        let series = (0..300).map(|i| {
            let mut v = 1000.0 * wiggle(i);
            if i % 50 == 0 {
                v /= 8.0; // checkpoint save
            }
            if i >= 200 {
                v *= 0.5;
            }
            vec![("tokens_per_s".into(), v)]
        });
        let alerts = feed(series, |p| d.check(p));
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        assert!(alerts[0].0 >= 201 && alerts[0].0 <= 205, "{alerts:?}");
    }

    #[test]
    fn throughput_regression_of_a_quarter_warns_once_it_lasts() {
        // 25% slower from point 400 for good: under the 70% warning, but it
        // lasts, so it warns after SUSTAINED_LOW points. The same fall for 10
        // points (a slow stretch of a few seconds) passes.
        let alerts = |lasts: usize| {
            let mut d = ThroughputRegression::new(defaults(AlertKind::ThroughputRegression));
            let series = (0..700).map(move |i| vec![("tokens_per_s".into(), 1000.0 * wiggle(i) * if (400..400 + lasts).contains(&i) { 0.75 } else { 1.0 })]);
            feed(series, |p| d.check(p))
        };
        let lasting = alerts(300);
        assert_eq!(lasting.len(), 1, "{lasting:?}");
        let (at, r) = &lasting[0];
        assert!((400 + SUSTAINED_LOW as u64..400 + SUSTAINED_LOW as u64 + 4).contains(at) && r.step >= 400, "{lasting:?}");
        assert_eq!(r.severity, Severity::Warn);
        assert!(r.message.contains(&format!("and under 80% of it on {SUSTAINED_LOW} or more of the newest {SUSTAINED_BUCKETS} points")), "{}", r.message);
        assert!(alerts(10).is_empty());
    }

    #[test]
    fn throughput_regression_of_fast_steps_is_judged_per_half_second() {
        // 4 ms steps (a small model on a GPU): slowdowns of 100 and 300 steps
        // (0.4 s, 1.2 s) are hiccups; one from step 12,000 that lasts is a
        // regression, raised within a few seconds (buckets of 125 points).
        let mut d = ThroughputRegression::new(defaults(AlertKind::ThroughputRegression));
        let slow = |i: usize| (6000..6100).contains(&i) || (8000..8300).contains(&i) || i >= 12_000;
        let alerts: Vec<_> = (0..16_000usize)
            .filter_map(|i| {
                let v = 250_000.0 * wiggle(i) * if slow(i) { 0.5 } else { 1.0 };
                d.check(&Point { step: i as u64, time_s: i as f64 * 0.004, values: &[("tokens_per_s".into(), v)] }).map(|r| (i, r))
            })
            .collect();
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        let (at, r) = &alerts[0];
        assert!((12_250..13_500).contains(at) && r.step >= 12_000, "{alerts:?}");
    }
}
