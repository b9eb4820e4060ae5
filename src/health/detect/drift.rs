//! Slow drift: a loss that stops improving and climbs back over thousands of steps,
//! or a reward that slides, too gently for the spike and divergence detectors.
//!
//! Each watched metric is cut into blocks whose length scales with the run: blocks
//! start at [`MIN_BLOCK`] points and, once [`MAX_BLOCKS`] are held, neighbours
//! merge and the block length doubles, so the history always spans the whole run
//! in 32 to 64 levels (the median of each block: one-step bumps and heavy tails do
//! not move it). The newest level (the median of the last block's worth of
//! points, taken every quarter block) is compared with the best level so far, on
//! the log scale for a positive loss (a relative rise) and as a share of the
//! improvement made for a reward or a signed loss; the noise of the levels is the
//! robust spread of their differences at short lags (a steady trend does not
//! inflate it; where blocks are much longer than the points' memory, told from
//! how often consecutive differences repeat their sign, each side of the best
//! level is centred on its own slope, so that a drift's turn is not noise). The
//! newest level must stay above the threshold, with a cumulative sum of its
//! excess (CUSUM) positive, for two blocks: a benign bump shorter than that (a
//! warm-up, a data shard) never gets there. On such independent levels a
//! steady climb over 16 levels or more since the best is confirmed in one.
//!
//! A loss still falling when it turned nets less over its best level than it
//! climbed: a sustained climb since the best level (a trend over 8 levels or
//! more, not a wander or one jump) is measured from where the descent before it
//! was heading, carried at its full pace when a loss's descent was steady (half
//! its pace when it wandered down, and for a reward). A positive loss must have improved
//! before it can drift (an LR warm-up's bump is not a drift), and a level that
//! has given back a quarter of its rise is falling back (a data switch's bump),
//! not drifting. A reward is judged net of what its KL to the reference gave
//! back: where the KL rose materially with the reward and falls again (a KL
//! penalty or an adaptive controller pulling the policy back), the reward gives
//! back that share of its gain by design, and only a loss beyond it drifts. Work per point is O(1) amortised: five medians of a block's
//! length per block, and the trend's slopes (over at most 65 levels) only while
//! the level is within the threshold's upper half.
use super::spike::LR_JUMP;
use super::{Gate, Point, Raised, Worse};
use crate::health::config::KindSettings;
use crate::health::stats::{half_lag_slope, median, Window, MAD_TO_SIGMA};
use crate::health::Severity;
use crate::metrics::catalog::{self, Better};
use crate::report::format::{compact, percent, sigmas};

/// Points of a block at the start of a run.
pub const MIN_BLOCK: usize = 10;
/// Points of a block of a short run's finer levels (heeded only on points
/// without memory, until they would merge: 320 points).
pub const SHORT_BLOCK: usize = 5;
/// Levels held before neighbours merge (the block length then doubles).
pub const MAX_BLOCKS: usize = 64;
/// Levels needed before anything is judged.
pub const MIN_LEVELS: usize = 12;
/// The level is judged every quarter block, over the newest block's worth of
/// points; this many consecutive judgements (two blocks) above the threshold
/// before the drift is reported.
pub const DRIFT_TICKS: u32 = 8;
const TICKS_PER_BLOCK: usize = 4;
/// Judgements above the threshold (one block) that confirm a sustained climb.
pub const STEADY_TICKS: u32 = 4;
/// The levels a climb confirmed in one block spans since its best level: a
/// trend over fewer is weak evidence (a noise excursion falling back to a
/// rising reward's trend can pass the test over 8 levels).
pub const STEADY_LEVELS: usize = 2 * CLIMB_LEVELS;
/// Blocks this long (runs of 10,000 points or more) confirm a steady climb
/// over [`CLIMB_LEVELS`] levels in one block (see `Track::steady_levels`).
pub const LARGE_BLOCK: usize = 320;
/// The rise must also be this many noise sigmas of a level.
pub const DRIFT_Z: f64 = 6.0;
/// A sustained climb: the levels from the best one to now span at least this
/// many levels (an eighth to a quarter of the run so far)...
pub const CLIMB_LEVELS: usize = 8;
/// ...this share of the pairs half that span apart rise (a trend, not a wander
/// or one jump), and the newer half of the span still rises.
pub const CLIMB_RISING: f64 = 0.8;
/// A sustained climb is measured from where the run's descent before its best
/// level was heading: this share of that descent's pace, for as many levels as
/// the climb has lasted, at most what it fell over the [`CLIMB_LEVELS`] levels
/// before its best (a descent slows down; a plateau's pace is none).
pub const DESCENT_CARRIED: f64 = 0.5;
/// A positive loss's descent whose pairs of levels half its span apart fall in
/// this share (the same test as a climb's, mirrored) is well established: it is
/// carried at its full pace, still at most what it fell over those levels.
pub const DESCENT_ESTABLISHED: f64 = CLIMB_RISING;
/// A rise that has given back more than this share of its peak (and two noise
/// sigmas) is falling back, not drifting.
pub const FALLING_BACK: f64 = 0.25;
/// A reward's KL must have risen this many noise sigmas of its levels (a
/// spike's bar) with the reward for its fall to explain the reward's.
pub const KL_RISE_Z: f64 = 4.0;
/// The part of the threshold a sustained climb must rise over its best level
/// itself (the rest may be the descent it broke off).
pub const CLIMB_FLOOR: f64 = 0.5;

/// The slow-drift detector of one run: the loss (its settings' metric) and the reward.
#[derive(Debug, Clone)]
pub struct SlowDrift {
    tracks: Vec<Track>,
}

impl SlowDrift {
    pub fn new(s: KindSettings) -> Self {
        let loss = s.metric.clone().unwrap_or_else(|| catalog::LOSS.to_owned());
        let mut metrics = vec![loss];
        if !metrics.iter().any(|m| m == catalog::REWARD) {
            metrics.push(catalog::REWARD.to_owned());
        }
        SlowDrift { tracks: metrics.into_iter().map(|m| Track::new(&s, m)).collect() }
    }
}

impl super::Detector for SlowDrift {
    fn kind(&self) -> crate::health::AlertKind {
        crate::health::AlertKind::SlowDrift
    }

    fn observe_into(&mut self, p: &Point, out: &mut Vec<Raised>) {
        out.extend(self.tracks.iter_mut().filter_map(|t| t.observe(p)).map(super::Watched::as_logged));
    }
}

/// How levels are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scale {
    /// A positive loss: ln of the value, a rise is relative.
    Log,
    /// A reward or a signed loss: the value, higher worse (a reward is negated).
    Linear { higher_is_better: bool },
}

#[derive(Debug, Clone)]
struct Track {
    metric: String,
    /// The configured metric, or its stand-in where the run logs only that.
    watched: super::Watched,
    /// The catalog's word on the metric, looked up once: higher is better, it
    /// may be negative.
    higher_is_better: bool,
    signed: bool,
    warn: f64,
    critical: f64,
    scale: Option<Scale>,
    block_len: usize,
    block: Vec<f64>,
    /// First step of the open block.
    block_start: u64,
    /// Closed blocks: (first step, level), oriented so that higher is worse.
    levels: Vec<(u64, f64)>,
    /// The newest block's worth of points (oriented), and points since the
    /// level was last judged.
    recent: Window,
    since_judged: usize,
    /// CUSUM of the level's excess over the threshold, in thresholds.
    cusum: f64,
    above: u32,
    /// The verdict of the last closed block, held until the next one closes.
    verdict: Option<Severity>,
    /// What the message says: (best level's step, best value, newest value,
    /// rise, whether the rise is in noise sigmas rather than a share, whether
    /// it is net of what the KL gave back, the rise counting the descent it
    /// broke off when that is what crossed the bar, shown alike).
    detail: Option<(u64, f64, f64, f64, bool, bool, Option<f64>)>,
    /// The lowest value so far: a loss that never went below zero is not signed.
    lowest: f64,
    /// How much memory the points' noise has (see [`Memory`]).
    memory: Memory,
    gate: Gate,
    /// Blocks of this many points at the start (and after a reset).
    first_block: usize,
    /// A short run's finer levels (blocks of [`SHORT_BLOCK`] points), heeded
    /// only while the points are independent at that block length; dropped
    /// once its blocks would merge (the run is no longer short).
    short: Option<Box<Track>>,
    /// Whether the series is a policy objective in this run (not judged).
    role: super::LossRoleSeen,
    /// A reward's: the KL beside it, in the same blocks.
    kl: Option<KlBeside>,
    /// The learning rate: its median over each closed block, at the block's
    /// first step (see [`Track::schedule_rise`]), the open block's, the newest.
    lr_levels: Vec<(u64, f64)>,
    lr_block: Vec<f64>,
    lr_now: Option<f64>,
}

/// The KL to the reference beside a reward: its levels, block by block with
/// the reward's (NaN where a block held none), and its newest block's worth of
/// points (see `Track::kl_explained`).
#[derive(Debug, Clone)]
struct KlBeside {
    watched: super::Watched,
    metric: String,
    block: Vec<f64>,
    levels: Vec<f64>,
    recent: Window,
}

impl KlBeside {
    fn new(block_len: usize) -> Self {
        KlBeside { watched: super::Watched::new(catalog::KL), metric: catalog::KL.to_owned(), block: Vec::new(), levels: Vec::new(), recent: Window::new(block_len) }
    }
}

impl Track {
    fn new(s: &KindSettings, metric: String) -> Self {
        let mut t = Self::with_blocks(s, metric.clone(), MIN_BLOCK);
        t.short = Some(Box::new(Self::with_blocks(s, metric, SHORT_BLOCK)));
        t
    }

    fn with_blocks(s: &KindSettings, metric: String, first_block: usize) -> Self {
        let worse = if catalog::better(&metric) == Better::Higher { Worse::Lower } else { Worse::Higher };
        Track {
            higher_is_better: worse == Worse::Lower,
            signed: catalog::is_signed(&metric),
            warn: s.warn,
            critical: s.critical,
            scale: None,
            block_len: first_block,
            block: Vec::with_capacity(first_block),
            block_start: 0,
            levels: Vec::with_capacity(MAX_BLOCKS),
            recent: Window::new(first_block),
            since_judged: 0,
            cusum: 0.0,
            above: 0,
            verdict: None,
            detail: None,
            lowest: f64::INFINITY,
            memory: Memory::default(),
            gate: Gate::new(s, worse),
            first_block,
            short: None,
            role: Default::default(),
            kl: (worse == Worse::Lower).then(|| KlBeside::new(first_block)),
            lr_levels: Vec::new(),
            lr_block: Vec::new(),
            lr_now: None,
            watched: super::Watched::new(&metric),
            metric,
        }
    }

    /// The value as a level: higher is worse.
    fn orient(&self, x: f64) -> f64 {
        match self.scale {
            Some(Scale::Log) => x.ln(),
            Some(Scale::Linear { higher_is_better: true }) => -x,
            _ => x,
        }
    }

    /// A level back in the metric's own unit.
    fn unorient(&self, y: f64) -> f64 {
        match self.scale {
            Some(Scale::Log) => y.exp(),
            Some(Scale::Linear { higher_is_better: true }) => -y,
            _ => y,
        }
    }

    fn observe(&mut self, p: &Point) -> Option<Raised> {
        let x = self.watched.read(p, &mut self.metric)?;
        // A policy objective does not drift as a loss does (the catalog's roles).
        if !x.is_finite() || self.role.objective(p, &self.metric) {
            return None;
        }
        let warming = self.gate.warming();
        let kl = self.kl.as_mut().and_then(|k| k.watched.read(p, &mut k.metric)).filter(|v| v.is_finite());
        if let Some(lr) = p.get(catalog::LR).filter(|v| v.is_finite() && *v > 0.0) {
            self.lr_block.push(lr);
            self.lr_now = Some(lr);
        }
        self.take(p.step, x, kl, warming);
        let mut verdict = (self.verdict, self.detail, self.levels.len() * self.block_len);
        // A short run: its finer levels speak while the points have no memory
        // at their block length (medians of 5 points with memory wander more
        // than the levels' noise allows for).
        if let Some(short) = &mut self.short {
            short.take(p.step, x, kl, warming);
            if short.block_len > SHORT_BLOCK {
                self.short = None;
            } else if short.verdict > verdict.0 && short.speaks() {
                verdict = (short.verdict, short.detail, short.levels.len() * short.block_len);
            }
        }
        let (verdict, detail, span) = verdict;
        let scale = self.scale?;
        // A loss that rose with a warm restart of its learning rate is the
        // schedule's doing (info): it falls again as the rate decays.
        let schedule = detail.filter(|_| verdict.is_some() && scale == Scale::Log).and_then(|d| self.schedule_rise(d.0));
        let verdict = if schedule.is_some() { Some(Severity::Info) } else { verdict };
        let v = self.gate.pass(verdict, p.step, x)?;
        let (best_step, best, now, rise, in_sigmas, net_of_kl, heading) = detail?;
        let how = match scale {
            _ if in_sigmas => format!("{} noise sigmas {} from", sigmas(rise), if scale == (Scale::Linear { higher_is_better: true }) { "down" } else { "up" }),
            Scale::Log => format!("{} above", percent(rise)),
            Scale::Linear { higher_is_better: true } => format!("{} of its gain lost from", percent(rise)),
            Scale::Linear { higher_is_better: false } => format!("{} of its improvement undone from", percent(rise)),
        };
        let net = if net_of_kl { format!(", net of what its {} gave back", self.kl.as_ref().map_or(catalog::KL, |k| k.metric.as_str())) } else { String::new() };
        let heading = match heading {
            Some(h) if in_sigmas => format!(", {} counting the descent it broke off", sigmas(h)),
            Some(h) => format!(", {} counting the descent it broke off", percent(h)),
            None => String::new(),
        };
        if let Some((then, lr_now)) = schedule.filter(|_| v.severity == Severity::Info) {
            let message = format!(
                "{} rose from step {} ({} there): level {} is {how} its best {} (around step {best_step}), with the learning rate ({} from {} then): a warm restart's rise, not a drift{}",
                self.metric,
                v.step,
                compact(v.value),
                compact(now),
                compact(best),
                compact(lr_now),
                compact(then),
                self.watched.note(&self.metric),
            );
            return Some(v.raise(self.metric.clone(), message));
        }
        let message = format!(
            "{} drifting from step {} ({} there): level {} is {how} its best {} (around step {best_step}){heading} over {span} steps{net}{}",
            self.metric,
            v.step,
            compact(v.value),
            compact(now),
            compact(best),
            self.watched.note(&self.metric),
        );
        Some(v.raise(self.metric.clone(), message))
    }

    /// The part of a reward's gain (oriented: its fall from its first level
    /// to its best `best_at`) that the KL beside it explains losing: where the
    /// KL rose from its first level to its level at the best by
    /// [`KL_RISE_Z`] noise sigmas of its levels (their consecutive
    /// differences' robust spread) or more, the share of that rise
    /// it has given back since (its newest block's median; nothing while that
    /// is within two noise sigmas), times the gain. A KL that never rose with
    /// the reward, or holds its rise, explains nothing.
    fn kl_explained(&self, best_at: usize, gain: f64) -> f64 {
        let Some(k) = &self.kl else { return 0.0 };
        let (Some(&start), Some(&at_best), Some(now)) = (k.levels.first(), k.levels.get(best_at), k.recent.median()) else { return 0.0 };
        let rose = at_best - start;
        // The KL's noise: the robust spread of its levels' consecutive
        // differences, centred on their median (its rise and fall are trends,
        // not noise; wider lags would count their turns as noise).
        let finite: Vec<f64> = k.levels.iter().copied().filter(|v| v.is_finite()).collect();
        if finite.len() < MIN_LEVELS {
            return 0.0;
        }
        let diffs: Vec<f64> = finite.windows(2).map(|w| w[1] - w[0]).collect();
        let Some(centre) = median(&diffs) else { return 0.0 };
        let Some(mad) = median(&diffs.iter().map(|d| (d - centre).abs()).collect::<Vec<f64>>()) else { return 0.0 };
        let noise = MAD_TO_SIGMA * mad / std::f64::consts::SQRT_2;
        let fell = at_best - now;
        if !(rose > 0.0 && rose >= KL_RISE_Z * noise && fell >= 2.0 * noise) {
            return 0.0;
        }
        (fell / rose).min(1.0) * gain
    }

    /// Whether a short run's finer levels may raise their verdict: the points
    /// have no memory at [`SHORT_BLOCK`] points (judged on the share's bound
    /// [`SHORT_ERRORS`] standard errors up: two would hold back white noise
    /// itself until about 250 points, past most of a 300-point run), and the
    /// verdict is an improvement undone, not a rise told in noise sigmas (12
    /// levels of 5 points tell a noise too loosely for that alone).
    fn speaks(&self) -> bool {
        self.memory.independent_within(SHORT_BLOCK, SHORT_ERRORS) && self.detail.is_some_and(|d| !d.4)
    }

    /// The levels a climb confirmed in one block must span since its best:
    /// [`STEADY_LEVELS`], or [`CLIMB_LEVELS`] once blocks are [`LARGE_BLOCK`]
    /// points or more (a late onset in a long run has no 16 levels left before
    /// the run ends; each level is then the median of hundreds of points).
    fn steady_levels(&self) -> usize {
        if self.block_len >= LARGE_BLOCK { CLIMB_LEVELS } else { STEADY_LEVELS }
    }

    /// Takes a finite point into the levels and judges them when due.
    fn take(&mut self, step: u64, x: f64, kl: Option<f64>, warming: bool) {
        self.lowest = self.lowest.min(x);
        let higher_is_better = self.higher_is_better;
        let scale = *self.scale.get_or_insert(if !higher_is_better && x > 0.0 && !self.signed {
            Scale::Log
        } else {
            Scale::Linear { higher_is_better }
        });
        // A positive loss that reaches zero or below is judged linearly from here.
        if scale == Scale::Log && x <= 0.0 {
            self.scale = Some(Scale::Linear { higher_is_better: false });
            self.levels.clear();
            self.block.clear();
            self.recent = Window::new(self.first_block);
            self.block_len = self.first_block;
            self.cusum = 0.0;
            self.above = 0;
            self.verdict = None;
            self.memory = Memory::default();
            self.kl = self.kl.take().map(|_| KlBeside::new(self.first_block));
        }
        if self.block.is_empty() {
            self.block_start = step;
        }
        let y = self.orient(x);
        // The descent or climb the points are on, per point (the last two
        // levels'), so that a trend does not pass for memory.
        let pace = match self.levels.as_slice() {
            [.., a, b] => (b.1 - a.1) / self.block_len as f64,
            _ => 0.0,
        };
        self.memory.push(y, pace);
        self.block.push(y);
        self.recent.push(y);
        if let (Some(k), Some(v)) = (self.kl.as_mut(), kl) {
            k.block.push(v);
            k.recent.push(v);
        }
        if self.block.len() >= self.block_len {
            self.close_block();
        }
        self.since_judged += 1;
        if self.since_judged >= (self.block_len / TICKS_PER_BLOCK).max(1) {
            self.since_judged = 0;
            self.verdict = if warming { None } else { self.judge() };
        }
    }

    /// The learning rate's jump since the best level's step `best_step`, when
    /// it explains a rise: the rate now at [`LR_JUMP`] times its level then or
    /// more, reached by a jump of that size from one block to the next (a warm
    /// restart, a re-warm-up after a resume), not a slow ramp: (then, now).
    fn schedule_rise(&self, best_step: u64) -> Option<(f64, f64)> {
        let now = self.lr_now?;
        let then = self.lr_levels.iter().rev().find(|(s, _)| *s <= best_step)?.1;
        if now < LR_JUMP * then {
            return None;
        }
        // The rates from the best block on, to now, pair by pair.
        let mut since = self.lr_levels.iter().filter(|(s, _)| *s > best_step).map(|l| l.1).chain(std::iter::once(now));
        let mut before = then;
        since.any(|rate| std::mem::replace(&mut before, rate) * LR_JUMP <= rate).then_some((then, now))
    }

    /// Closes the open block: its median becomes a level.
    fn close_block(&mut self) {
        let Some(level) = median(&self.block) else { return };
        self.block.clear();
        if let Some(lr) = median(&self.lr_block) {
            self.lr_levels.push((self.block_start, lr));
            self.lr_block.clear();
            // Every other one once there are many: they keep spanning the run.
            if self.lr_levels.len() >= 4 * MAX_BLOCKS {
                self.lr_levels = self.lr_levels.iter().copied().step_by(2).collect();
            }
        }
        self.levels.push((self.block_start, level));
        if let Some(k) = self.kl.as_mut() {
            k.levels.push(median(&k.block).unwrap_or(f64::NAN));
            k.block.clear();
        }
        if self.levels.len() >= MAX_BLOCKS {
            // Merge neighbours: the history keeps spanning the run.
            self.levels = self.levels.chunks(2).map(|c| (c[0].0, c.iter().map(|l| l.1).sum::<f64>() / c.len() as f64)).collect();
            self.block_len *= 2;
            let mut longer = Window::new(self.block_len);
            self.recent.to_vec().into_iter().for_each(|v| longer.push(v));
            self.recent = longer;
            if let Some(k) = self.kl.as_mut() {
                let mean = |c: &[f64]| {
                    let finite: Vec<f64> = c.iter().copied().filter(|v| v.is_finite()).collect();
                    if finite.is_empty() { f64::NAN } else { finite.iter().sum::<f64>() / finite.len() as f64 }
                };
                k.levels = k.levels.chunks(2).map(mean).collect();
                let mut longer = Window::new(self.block_len);
                k.recent.to_vec().into_iter().for_each(|v| longer.push(v));
                k.recent = longer;
            }
        }
        self.block.reserve(self.block_len);
    }

    /// The severity the levels show now, if any.
    fn judge(&mut self) -> Option<Severity> {
        let n = self.levels.len();
        if n < MIN_LEVELS || self.recent.len() < self.block_len / 2 {
            return None;
        }
        let y: Vec<f64> = self.levels.iter().map(|l| l.1).collect();
        let (best_at, best) = self.levels.iter().copied().enumerate().map(|(i, l)| (i, l.1)).min_by(|a, b| a.1.total_cmp(&b.1))?;
        // A drift is a turn: a descent, then a climb. Differences centred on one
        // slope count that turn as noise; each side of the best level is centred
        // on its own slope instead, but only when the levels are independent
        // (blocks much longer than the points' memory): with memory, a wander's
        // own turns are its noise.
        let independent = self.memory.independent_over(self.block_len);
        let sigma = if independent { level_noise_around(&y, best_at)? } else { level_noise(&y)? };
        // Levels read linearly that never move (a zero-inflated series: its
        // block medians tie at zero) have no noise scale: a scale of zero makes
        // no sigma and no share of an improvement that is not there.
        if sigma <= 0.0 && self.scale != Some(Scale::Log) {
            self.detail = None;
            return None;
        }
        let initial = y[0];
        let now = self.recent.median()?;
        let gain = (initial - best).max(0.0);
        // A reward's gain that its KL gave back with it is the KL penalty's
        // trade, not a drift: only the rest of its fall is judged.
        let explained = self.kl_explained(best_at, gain);
        let rise = now - best - explained;
        let warn_at = match self.scale {
            Some(Scale::Log) => self.warn.ln_1p(),
            _ => self.warn * gain,
        };
        let threshold = warn_at.max(DRIFT_Z * sigma).max(f64::MIN_POSITIVE);
        // A loss still falling when it turned: its rise over the best level
        // understates the drift, so a sustained climb is measured from where its
        // descent was heading.
        // Only after a real period of improvement (early in a run, a wander of
        // noise with memory can look like a descent broken off).
        let excess = if rise < threshold && rise >= CLIMB_FLOOR * threshold && gain >= threshold { rise + broken_off_descent(&y, best_at, now, self.scale == Some(Scale::Log)) } else { rise };
        // CUSUM in thresholds: a level above it adds its excess, one below it drains.
        self.cusum = (self.cusum + (excess - threshold) / threshold).max(0.0);
        // A drift is a loss that improved and then climbs back: a start that has
        // not improved yet (an LR warm-up's bump) is not one...
        // (A signed loss hovers around zero: it has no improvement to show.)
        // A loss that started at zero and never went below it (a GRPO loss,
        // beta times the KL) is read linearly but is no signed loss: it too must
        // have improved first.
        let never_signed = self.lowest >= 0.0 && !self.signed;
        let improved = match self.scale {
            Some(Scale::Log) => gain >= CLIMB_FLOOR * threshold,
            Some(Scale::Linear { higher_is_better: false }) if never_signed => gain >= CLIMB_FLOOR * threshold,
            _ => true,
        };
        // ...nor a rise that is already falling back (a data switch's bump): the
        // level must hold what it rose, give or take a quarter and its noise.
        let peak = y[best_at..].iter().copied().fold(now, f64::max);
        let holding = peak - now <= FALLING_BACK * (peak - best) + 2.0 * sigma;
        // The best level must be older than the newest block the level is taken over.
        self.above = if excess >= threshold && improved && holding && best_at + 1 < n { self.above + 1 } else { 0 };
        // A level that has climbed steadily since its best (a trend over
        // [`STEADY_LEVELS`] levels or more, not a jump or a bump) is confirmed
        // in one block: the trend is evidence a bump's one block above lacks.
        // Only where a trend of levels means something: levels independent of
        // each other (a wander of noise with memory makes trends) after a real
        // improvement.
        let needed = if self.above >= STEADY_TICKS && self.above < DRIFT_TICKS && n - best_at + 1 >= self.steady_levels() && gain >= threshold && independent {
            let since: Vec<f64> = y[best_at..].iter().copied().chain([now]).collect();
            if sustained_climb(&since) { STEADY_TICKS } else { DRIFT_TICKS }
        } else {
            DRIFT_TICKS
        };
        if self.above < needed || self.cusum <= 0.0 {
            self.detail = None;
            return None;
        }
        // Critical only when large: the drift has undone `critical` of the
        // improvement the run had made (a real one, well above the noise).
        let material = gain >= DRIFT_Z * sigma && gain > 0.0;
        // A share of an improvement that hardly exists means nothing (a signed
        // loss hovering at zero): such a rise is told in noise sigmas.
        let show = |rise: f64| match self.scale {
            Some(Scale::Log) => (rise.exp() - 1.0, false),
            _ if material => (rise / gain.max(f64::MIN_POSITIVE), false),
            _ => (rise / sigma.max(f64::MIN_POSITIVE), true),
        };
        let (shown, in_sigmas) = show(rise);
        // (The rise alone may be under the bar: the descent it broke off made it up.)
        let heading = (excess > rise && rise < threshold).then(|| show(excess).0);
        self.detail = Some((self.levels[best_at].0, self.unorient(best), self.unorient(now), shown, in_sigmas, explained > 0.0, heading));
        Some(if material && rise >= self.critical * gain && rise >= 2.0 * threshold { Severity::Critical } else { Severity::Warn })
    }
}

/// How far below its best level `y[best_at]` the run's descent before it was
/// heading by now, when the levels since the best (and `now`) are a sustained
/// climb; zero otherwise. The descent's pace is the Theil-Sen slope of the
/// [`CLIMB_LEVELS`] levels up to the best one, carried at its full pace when
/// `full_pace` (a positive loss) and the descent is well established
/// ([`DESCENT_ESTABLISHED`]), at
/// [`DESCENT_CARRIED`] otherwise, for as many levels as the climb has lasted,
/// and at most what those levels fell: a plateau or a run that had levelled off
/// carries nothing, and a drop at an LR step hardly moves the slope (a median
/// of pairs' slopes).
fn broken_off_descent(y: &[f64], best_at: usize, now: f64, full_pace: bool) -> f64 {
    let since: Vec<f64> = y[best_at..].iter().copied().chain([now]).collect();
    if since.len() < CLIMB_LEVELS || !sustained_climb(&since) {
        return 0.0;
    }
    let before = &y[best_at.saturating_sub(CLIMB_LEVELS)..=best_at];
    let Some((slope, rising)) = half_lag_slope(before) else { return 0.0 };
    let fell = (before[0] - y[best_at]).max(0.0);
    // A loss's steady descent (nearly every pair of levels falling) is a trend
    // the run would have kept (a loss curve goes on falling over a run); one
    // that wandered down, or a reward's rise (it nears a ceiling), is carried
    // at half its pace.
    let pace = if full_pace && 1.0 - rising >= DESCENT_ESTABLISHED { 1.0 } else { DESCENT_CARRIED };
    (pace * (-slope).max(0.0) * (since.len() - 1) as f64).min(fell)
}

/// Levels that climb as a trend: most pairs half the span apart rise, and the
/// newer half of the span still rises (a jump that is falling back, or a level
/// that wanders, is not a climb).
fn sustained_climb(levels: &[f64]) -> bool {
    let rising = |ys: &[f64]| half_lag_slope(ys).filter(|(slope, share)| *slope > 0.0 && *share >= CLIMB_RISING).is_some();
    rising(levels) && rising(&levels[levels.len() / 2..])
}

/// The noise of the levels: the robust spread of their differences at lags of
/// one, two and four blocks, centred on their median (a steady trend is not noise),
/// the larger, over the newer half of the history (the steep start of a run is
/// not its noise). Noise with memory (AR) makes neighbouring levels alike, so
/// lag-1 differences alone would understate it.
fn level_noise(y: &[f64]) -> Option<f64> {
    let newer = &y[y.len() - (y.len() / 2).max(MIN_LEVELS).min(y.len())..];
    let mut sigma: Option<f64> = None;
    for lag in [1usize, 2, 4] {
        let diffs: Vec<f64> = newer.windows(lag + 1).map(|w| w[lag] - w[0]).collect();
        let centre = median(&diffs)?;
        let dev: Vec<f64> = diffs.iter().map(|d| (d - centre).abs()).collect();
        let s = MAD_TO_SIGMA * median(&dev)? / std::f64::consts::SQRT_2;
        sigma = Some(sigma.map_or(s, |x: f64| x.max(s)));
    }
    sigma
}

/// [`level_noise`] with the differences on each side of the best level
/// `y[best_at]` centred on their own median (pairs across it left out): the
/// turn from a descent to a climb is not noise. A side with fewer than
/// [`MIN_SIDE`] differences at a lag is left out.
fn level_noise_around(y: &[f64], best_at: usize) -> Option<f64> {
    let start = y.len() - (y.len() / 2).max(MIN_LEVELS).min(y.len());
    let mut sigma: Option<f64> = None;
    for lag in [1usize, 2, 4] {
        let mut dev = Vec::new();
        for (from, to) in [(start, best_at.max(start)), (best_at.max(start), y.len() - 1)] {
            if to < from + lag {
                continue;
            }
            let diffs: Vec<f64> = y[from..=to].windows(lag + 1).map(|w| w[lag] - w[0]).collect();
            if diffs.len() < MIN_SIDE {
                continue;
            }
            let centre = median(&diffs)?;
            dev.extend(diffs.iter().map(|d| (d - centre).abs()));
        }
        if dev.len() < MIN_SIDE {
            return level_noise(y);
        }
        let s = MAD_TO_SIGMA * median(&dev)? / std::f64::consts::SQRT_2;
        sigma = Some(sigma.map_or(s, |x: f64| x.max(s)));
    }
    sigma
}

/// Differences a side of the best level needs to have its own centre.
const MIN_SIDE: usize = 4;

/// The memory of the points' noise, from the signs of consecutive differences
/// (a trend's pace taken off): independent points repeat a difference's sign a
/// third of the time, a random walk half the time. Signs are untouched by heavy
/// tails and one-step bumps. O(1): two counters.
#[derive(Debug, Clone, Copy, Default)]
struct Memory {
    last: Option<f64>,
    last_diff: Option<f64>,
    pairs: u64,
    same_sign: u64,
}

impl Memory {
    fn push(&mut self, y: f64, pace: f64) {
        if let Some(prev) = self.last {
            let d = y - prev - pace;
            if let Some(pd) = self.last_diff {
                if d != 0.0 && pd != 0.0 {
                    self.pairs += 1;
                    self.same_sign += (d.signum() == pd.signum()) as u64;
                }
            }
            self.last_diff = Some(d);
        }
        self.last = Some(y);
    }

    /// Whether blocks of `block_len` points are [`INDEPENDENT_BLOCKS`] times
    /// longer than the noise's correlation time, judged on the upper bound of
    /// the share of repeated signs (two standard errors): too few points say no.
    fn independent_over(&self, block_len: usize) -> bool {
        self.independent_within(block_len, 2.0)
    }

    /// [`Self::independent_over`] on the share's bound `errors` standard errors up.
    fn independent_within(&self, block_len: usize, errors: f64) -> bool {
        if self.pairs < MEMORY_PAIRS {
            return false;
        }
        let n = self.pairs as f64;
        let share = (self.same_sign as f64 / n + errors * (0.25 / n).sqrt()).min(0.5);
        // For gaussian AR(1) noise with coefficient phi, the differences have a
        // lag-1 correlation of -(1 - phi) / 2, repeated with probability
        // 1/2 + asin(that) / pi.
        let phi = (1.0 + 2.0 * (std::f64::consts::PI * (share - 0.5)).sin()).clamp(0.0, 1.0);
        if phi >= 1.0 - 1e-9 {
            return false;
        }
        let correlation_time = if phi <= 0.0 { 0.0 } else { -1.0 / phi.ln() };
        block_len as f64 >= INDEPENDENT_BLOCKS * correlation_time.max(1.0)
    }
}

/// Consecutive differences counted before the noise's memory is trusted.
const MEMORY_PAIRS: u64 = 100;
/// The bound on the share of repeated signs a short run's finer levels are
/// heeded under, in standard errors (see [`Track::speaks`]).
const SHORT_ERRORS: f64 = 1.0;
/// Blocks this many correlation times long give independent levels.
const INDEPENDENT_BLOCKS: f64 = 4.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::config::defaults;
    use crate::health::detect::Detector;
    use crate::health::AlertKind;
    use crate::metrics::MetricName;

    /// Noise with heavy tails and some memory, seeded.
    fn noise(seed: u64, n: usize) -> Vec<f64> {
        let mut rng = crate::workload::rng::SplitMix64::new(seed);
        let mut u = move || rng.unit() - 0.5;
        let mut ar = 0.0;
        (0..n)
            .map(|_| {
                let z = (u() + u() + u() + u()) * 1.7;
                let tail = if u() > 0.48 { 5.0 } else { 1.0 };
                ar = 0.5 * ar + z * tail;
                ar
            })
            .collect()
    }

    fn run(name: &str, series: &[f64]) -> Vec<(u64, Raised)> {
        let mut d = SlowDrift::new(defaults(AlertKind::SlowDrift));
        let mut out = Vec::new();
        for (i, v) in series.iter().enumerate() {
            let values: Vec<(MetricName, f64)> = vec![(MetricName::Owned(name.to_owned()), *v)];
            out.extend(d.observe(&Point { step: i as u64, time_s: i as f64, values: &values }).into_iter().map(|r| (i as u64, r)));
        }
        out
    }

    /// A pretraining loss: falls from 10 towards 3 and flattens.
    fn pretrain(i: usize, n: usize) -> f64 {
        3.0 + 7.0 * (-(i as f64) / (n as f64 / 20.0)).exp()
    }

    #[test]
    fn a_loss_that_climbs_back_slowly_is_a_warning() {
        for (n, seed) in [(3_000usize, 1u64), (20_000, 2), (143_000, 3)] {
            let e = noise(seed, n);
            let onset = n * 2 / 3;
            // +16% over the last third, as a slow linear climb.
            let series: Vec<f64> = (0..n).map(|i| pretrain(i, n) * (1.0 + 0.16 * i.saturating_sub(onset) as f64 / (n - onset) as f64) * (1.0 + 0.01 * e[i])).collect();
            let alerts = run("loss", &series);
            assert!(!alerts.is_empty(), "{n}: nothing raised");
            assert!(alerts.iter().all(|(at, a)| *at > onset as u64 && a.severity == Severity::Warn), "{n}: {alerts:?}");
            let (_, first) = &alerts[0];
            assert_eq!(series[first.step as usize], first.value);
            assert!(first.message.contains("drifting") && first.message.len() < 200, "{}", first.message);
        }
    }

    #[test]
    fn a_climb_under_the_bar_alone_says_the_descent_it_broke_off_made_it_up() {
        // A steady descent, then a climb of 7% over its best: under the 10% bar alone.
        let n = 4_500;
        let e = noise(11, n);
        let series: Vec<f64> = (0..n).map(|i| 10.0 * (-0.0005 * i.min(3_000) as f64).exp() * (1.0 + 0.07 * i.saturating_sub(3_000) as f64 / 1_500.0) * (1.0 + 0.002 * e[i])).collect();
        let alerts = run("loss", &series);
        let Some((_, first)) = alerts.iter().find(|(_, a)| a.severity >= Severity::Warn) else { panic!("nothing raised: {alerts:?}") };
        assert!(first.message.contains("counting the descent it broke off"), "{}", first.message);
    }

    #[test]
    fn healthy_runs_with_bumps_plateaus_and_heavy_tails_stay_quiet() {
        for (n, seed) in [(600usize, 4u64), (5_000, 5), (200_000, 6)] {
            let e = noise(seed, n);
            // Plateau with heavy-tailed noise, benign one-step bumps every 97 steps
            // and a short re-warm-up bump (a data shard change) at 40% of the run.
            let series: Vec<f64> = (0..n)
                .map(|i| {
                    let bump = if i % 97 == 50 { 3.0 } else { 1.0 };
                    let shard = if (n * 2 / 5..n * 2 / 5 + n / 200).contains(&i) { 1.08 } else { 1.0 };
                    pretrain(i, n) * bump * shard * (1.0 + 0.02 * e[i])
                })
                .collect();
            let alerts = run("loss", &series);
            assert!(alerts.iter().all(|(_, a)| a.severity < Severity::Warn), "{n}: {alerts:?}");
            // A rising reward that levels off.
            let reward: Vec<f64> = (0..n).map(|i| 0.2 + 0.8 * (1.0 - (-(i as f64) / (n as f64 / 5.0)).exp()) + 0.05 * e[i]).collect();
            assert!(run("reward", &reward).is_empty(), "{n}");
        }
        // Noise with long memory (AR 0.95) and nothing else: a policy loss around
        // zero and a reward that never improves.
        for (n, seed) in [(400usize, 8u64), (30_000, 9)] {
            let mut rng = crate::workload::rng::SplitMix64::new(seed);
            let mut u = move || rng.unit() - 0.5;
            let mut ar = 0.0;
            let slow: Vec<f64> = (0..n).map(|_| { ar = 0.95 * ar + 0.3 * (u() + u() + u()); ar }).collect();
            for name in ["loss", "reward"] {
                let series: Vec<f64> = slow.iter().map(|v| 0.02 * v).collect();
                let alerts = run(name, &series);
                assert!(alerts.is_empty(), "{name} {n}: {alerts:?}");
            }
        }
    }

    #[test]
    fn a_sliding_reward_and_a_zero_crossing_loss() {
        let n = 10_000;
        let e = noise(7, n);
        // Reward rises from -0.5 to 0.5, then slides back 40% of that gain: warn;
        // back 80%: critical.
        for (slide, want) in [(0.4, Severity::Warn), (0.8, Severity::Critical)] {
            let reward: Vec<f64> = (0..n)
                .map(|i| {
                    let up = -0.5 + (1.0 - (-(i as f64) / 800.0).exp());
                    let down = slide * (i.saturating_sub(6_000) as f64 / 4_000.0);
                    up - down + 0.03 * e[i]
                })
                .collect();
            let alerts = run("reward", &reward);
            assert_eq!(alerts.iter().map(|a| a.1.severity).max(), Some(want), "{slide}: {alerts:?}");
            assert!(alerts.iter().all(|(at, a)| *at > 6_000 && a.step == alerts[0].1.step), "{slide}: one event: {alerts:?}");
        }
        // A policy loss around zero: healthy, then climbing by 0.3 (its noise is 0.02).
        let flat: Vec<f64> = (0..n).map(|i| -0.01 + 0.02 * e[i]).collect();
        assert!(run("loss", &flat).iter().all(|(_, a)| a.severity < Severity::Warn));
        let climbing: Vec<f64> = flat.iter().enumerate().map(|(i, v)| v + 0.3 * i.saturating_sub(7_000) as f64 / 3_000.0).collect();
        let alerts = run("loss", &climbing);
        assert!(!alerts.is_empty() && alerts.iter().all(|(at, a)| *at > 7_000 && a.message.len() < 200), "{alerts:?}");
        // It had no improvement to undo: its rise is told in noise sigmas, never
        // as a share of a gain near zero (a number hundreds of digits long).
        assert!(alerts.iter().all(|(_, a)| a.message.contains("noise sigmas up from") && !a.message.contains("e+") && !a.message.contains("%")), "{alerts:?}");
        // A GRPO loss, beta times the KL: zero at first (logged to 4 decimals),
        // then growing as the policy leaves its reference. Not a drift.
        let grpo: Vec<f64> = (0..n).map(|i| (1e4 * 0.004 * (1.0 - (-(i as f64) / 3_000.0).exp()) * (1.0 + 0.05 * e[i]).max(0.0)).round() / 1e4).collect();
        assert!(run("loss", &grpo).is_empty(), "{:?}", run("loss", &grpo));
    }

    /// The slow-drift alerts of a run logging several metrics.
    fn run_all(series: &[(&str, &[f64])]) -> Vec<(u64, Raised)> {
        let mut d = SlowDrift::new(defaults(AlertKind::SlowDrift));
        let mut out = Vec::new();
        for i in 0..series[0].1.len() {
            let values: Vec<(MetricName, f64)> = series.iter().map(|(m, v)| (MetricName::Owned((*m).to_owned()), v[i])).collect();
            out.extend(d.observe(&Point { step: i as u64, time_s: i as f64, values: &values }).into_iter().map(|r| (i as u64, r)));
        }
        out
    }

    #[test]
    fn a_loss_that_rises_with_a_warm_restart_of_its_learning_rate_is_info() {
        // Cosine cycles of 450 points, warm restarts to 1.6e-3 from near zero:
        // each restart lifts the loss 12% for a while (SGDR). The same rise with
        // the rate ramping up slowly (no jump), or with no rate logged, is a drift.
        let n = 1_800;
        let e = noise(70, n);
        let bump = |i: usize| if i >= 450 { 0.12 * (-((i % 450) as f64) / 120.0).exp() } else { 0.0 };
        let loss: Vec<f64> = (0..n).map(|i| (3.3 + 5.0 * (-(i as f64) / 60.0).exp()) * (1.0 + bump(i)) * (1.0 + 0.004 * e[i])).collect();
        let restarts: Vec<f64> = (0..n).map(|i| 1.6e-3 * 0.5 * (1.0 + (std::f64::consts::PI * (i % 450) as f64 / 450.0).cos()) + 1e-7).collect();
        let got = run_all(&[(catalog::LOSS, &loss), (catalog::LR, &restarts)]);
        assert!(got.iter().all(|(_, r)| r.severity == Severity::Info), "{got:?}");
        assert!(got.iter().any(|(_, r)| r.message.contains("a warm restart's rise")), "{got:?}");
        // A 15% rise while the rate creeps up 1% a block: no jump, a drift.
        let creep: Vec<f64> = (0..n).map(|i| 1e-3 * (1.0 + i as f64 / n as f64)).collect();
        let rise: Vec<f64> = (0..n).map(|i| (3.3 + 5.0 * (-(i as f64) / 60.0).exp()) * if i > 900 { 1.0 + 0.15 * ((i - 900) as f64 / 300.0).min(1.0) } else { 1.0 } * (1.0 + 0.004 * e[i])).collect();
        let got = run_all(&[(catalog::LOSS, &rise), (catalog::LR, &creep)]);
        assert!(got.iter().any(|(_, r)| r.severity >= Severity::Warn), "{got:?}");
        let got = run_all(&[(catalog::LOSS, &loss)]);
        assert!(got.iter().any(|(_, r)| r.severity >= Severity::Warn), "the restarts' rises, no rate logged: {got:?}");
    }

    #[test]
    fn a_reward_that_gives_back_gain_with_its_kl_is_the_penalty_not_a_drift() {
        // A PPO run under an adaptive KL controller: the KL overshoots its
        // target (5 to 11 nats) and the reward rises with it (0.15 to 0.33);
        // the controller then pulls the policy back, the KL gives back 90% of
        // its rise and the reward 60% of its gain, and both hold there.
        let shape = |t: f64, kept: f64| if t < 0.3 { t / 0.3 } else if t < 0.6 { 1.0 - (1.0 - kept) * (t - 0.3) / 0.3 } else { kept };
        for (n, seed) in [(300usize, 60u64), (2_000, 61), (10_000, 62)] {
            let (e, f) = (noise(seed, n), noise(seed + 100, n));
            let t = |i: usize| i as f64 / n as f64;
            let reward: Vec<f64> = (0..n).map(|i| 0.15 + 0.18 * shape(t(i), 0.4) + 0.005 * e[i]).collect();
            let kl_back: Vec<f64> = (0..n).map(|i| (5.0 + 6.0 * shape(t(i), 0.1)) * (1.0 + 0.02 * f[i])).collect();
            let alerts = run_all(&[("reward", &reward), ("kl", &kl_back)]);
            assert!(alerts.iter().all(|(_, a)| a.severity < Severity::Warn), "{n} points, the KL pulled back: {alerts:?}");
            // The same reward beside a KL that holds its rise: the reward's
            // loss is its own, a drift (from the slide, critical at 60%).
            if n >= 2_000 {
                let kl_held: Vec<f64> = (0..n).map(|i| (5.0 + 6.0 * shape(t(i), 1.0)) * (1.0 + 0.02 * f[i])).collect();
                let alerts = run_all(&[("reward", &reward), ("kl", &kl_held)]);
                assert!(alerts.iter().any(|(_, a)| a.severity >= Severity::Warn), "{n} points, the KL held: {alerts:?}");
                assert!(alerts.iter().all(|(at, a)| *at as f64 > 0.3 * n as f64 && !a.message.contains("net of")), "{n}: {alerts:?}");
                // A KL that gives back a third of its rise explains a third
                // of the reward's gain: the rest still drifts, said so.
                let kl_third: Vec<f64> = (0..n).map(|i| (5.0 + 6.0 * shape(t(i), 0.67)) * (1.0 + 0.02 * f[i])).collect();
                let alerts = run_all(&[("reward", &reward), ("kl", &kl_third)]);
                assert!(alerts.iter().any(|(_, a)| a.severity >= Severity::Warn && a.message.contains("net of what its kl gave back")), "{n} points, a third back: {alerts:?}");
            }
        }
    }

    #[test]
    fn the_rlhf_workloads_reward_falling_back_with_its_kl_is_quiet() {
        // workloads/rlhf.toml's PPO run (2026-11-27, CPU): the KL overshoots
        // the controller's target of 6 nats (11 by step 90) and the reward
        // rises with it (0.17 to 0.33); the controller pulls both back (KL
        // 5.7, reward 0.22 from step 180). Without its KL the reward's fall,
        // 65% of its gain, is a drift.
        let rows: Vec<(f64, f64)> = include_str!("../../../tests/fixtures/rlhf-ppo-reward-kl.csv")
            .lines()
            .skip(1)
            .map(|l| {
                let v: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
                (v[1], v[2])
            })
            .collect();
        let (reward, kl): (Vec<f64>, Vec<f64>) = rows.into_iter().unzip();
        let alerts = run_all(&[("reward", &reward), ("kl", &kl)]);
        assert!(alerts.iter().all(|(_, a)| a.severity < Severity::Warn), "{alerts:?}");
        let alone = run_all(&[("reward", &reward)]);
        assert!(alone.iter().any(|(_, a)| a.severity >= Severity::Warn), "{alone:?}");
    }

    /// AR(1) noise with coefficient `phi` (unit-ish innovations), seeded.
    fn ar_noise(seed: u64, n: usize, phi: f64) -> Vec<f64> {
        let mut rng = crate::workload::rng::SplitMix64::new(seed);
        let mut u = move || rng.unit() - 0.5;
        let mut ar = 0.0;
        (0..n).map(|_| { ar = phi * ar + (u() + u() + u() + u()) * 1.7; ar }).collect()
    }

    #[test]
    fn the_points_memory_is_told_from_the_signs_of_their_differences() {
        // (what, points, pace per point, block length, independent levels?)
        let bumps: Vec<f64> = ar_noise(21, 3_000, 0.0).iter().enumerate().map(|(i, v)| if i % 97 == 50 { 40.0 } else { *v }).collect();
        let descent: Vec<f64> = ar_noise(22, 3_000, 0.0).iter().enumerate().map(|(i, v)| v - 0.01 * i as f64).collect();
        let table: [(&str, Vec<f64>, f64, usize, bool); 8] = [
            ("white noise", ar_noise(20, 3_000, 0.0), 0.0, 10, true),
            ("white noise with one-step bumps", bumps, 0.0, 10, true),
            ("white noise on a descent, its pace taken off", descent, -0.01, 10, true),
            ("too few points to tell", ar_noise(23, 60, 0.0), 0.0, 10, false),
            ("AR 0.9, blocks of 10", ar_noise(24, 3_000, 0.9), 0.0, 10, false),
            ("AR 0.98, blocks of 40", ar_noise(25, 20_000, 0.98), 0.0, 40, false),
            ("a random walk, blocks of 1,000", ar_noise(26, 100_000, 1.0), 0.0, 1_000, false),
            ("AR 0.9, blocks of 1,000", ar_noise(27, 100_000, 0.9), 0.0, 1_000, true),
        ];
        for (what, points, pace, block, want) in table {
            let mut m = Memory::default();
            points.iter().for_each(|y| m.push(*y, pace));
            assert_eq!(m.independent_over(block), want, "{what}: {m:?}");
        }
    }

    #[test]
    fn a_turn_is_not_noise_on_either_side_of_the_best_level() {
        // Falling 1% a level, then climbing 1% a level, with a wobble of 0.1%:
        // centred on one slope, the turn reads as noise; on each side's own, not.
        let wobble = |i: usize| if i % 2 == 0 { 0.001 } else { -0.001 };
        let v: Vec<f64> = (0..40).map(|i| if i <= 28 { -0.01 * i as f64 } else { -0.28 + 0.01 * (i - 28) as f64 } + wobble(i)).collect();
        let (one, around) = (level_noise(&v).unwrap(), level_noise_around(&v, 28).unwrap());
        assert!(one > 0.005 && around < 0.003, "{one} {around}");
        // A descent whose best level is its newest: both alike.
        let d: Vec<f64> = (0..40).map(|i| -0.01 * i as f64 + wobble(i)).collect();
        let (one, around) = (level_noise(&d).unwrap(), level_noise_around(&d, 39).unwrap());
        assert!((one - around).abs() < 1e-3, "{one} {around}");
    }

    #[test]
    fn a_steady_climb_on_independent_levels_is_caught_and_a_wander_with_memory_is_not() {
        // (what, the loss's shape at step i of n, noise memory, should warn)
        type Shape = fn(usize, usize) -> f64;
        let climb: Shape = |i, n| (3.0 + 4.0 * (-(i as f64) / (n as f64 / 8.0)).exp()) * (1.0 + 0.2 * i.saturating_sub(n * 3 / 5) as f64 / (n - n * 3 / 5) as f64);
        let plateau: Shape = |i, n| 3.0 + 4.0 * (-(i as f64) / (n as f64 / 8.0)).exp();
        let late_rise: Shape = |i, n| (3.0 + 4.0 * (-(i as f64) / (n as f64 / 8.0)).exp()) * (1.0 + 0.05 * i.saturating_sub(n * 4 / 5) as f64 / (n / 5) as f64);
        let table: [(&str, Shape, f64, bool); 6] = [
            ("+20% from 60% of the run, white noise", climb, 0.0, true),
            ("+20% from 60% of the run, AR 0.5", climb, 0.5, true),
            ("a plateau, white noise", plateau, 0.0, false),
            ("a plateau, AR 0.98", plateau, 0.98, false),
            ("a healthy +5% late rise, white noise", late_rise, 0.0, false),
            ("a healthy +5% late rise, AR 0.9", late_rise, 0.9, false),
        ];
        for (n, seed) in [(1_500usize, 31u64), (40_000, 32)] {
            for (what, shape, phi, want) in table {
                let e = ar_noise(seed, n, phi);
                let scale = 0.01 * (1.0 - phi * phi).sqrt();
                let series: Vec<f64> = (0..n).map(|i| shape(i, n) * (1.0 + scale * e[i])).collect();
                let alerts = run("loss", &series);
                let warned = alerts.iter().any(|(_, a)| a.severity >= Severity::Warn);
                assert_eq!(warned, want, "{what}, {n} points: {alerts:?}");
                assert!(alerts.iter().all(|(at, _)| *at > (n * 3 / 5) as u64), "{what}: {alerts:?}");
            }
        }
    }

    #[test]
    fn a_short_run_is_judged_on_finer_levels_only_while_its_points_have_no_memory() {
        // (what, points, noise memory, the loss's shape at step i of n, should warn)
        type Shape = fn(usize, usize) -> f64;
        let climb: Shape = |i, n| (3.0 + 4.0 * (-(i as f64) / (n as f64 / 8.0)).exp()) * (1.0 + 0.4 * i.saturating_sub(n * 3 / 5) as f64 / (n - n * 3 / 5) as f64);
        let plateau: Shape = |i, n| 3.0 + 4.0 * (-(i as f64) / (n as f64 / 8.0)).exp();
        let table: [(&str, usize, f64, Shape, bool); 5] = [
            ("+40% from 60% of 200 points, white noise", 200, 0.0, climb, true),
            ("a plateau, 200 points, white noise", 200, 0.0, plateau, false),
            ("a plateau, 200 points, AR 0.9", 200, 0.9, plateau, false),
            ("a plateau, the first 360 points of a long run, AR 0.9", 360, 0.9, |i, _| 3.0 + 4.0 * (-(i as f64) / 625.0).exp(), false),
            ("a plateau, 300 points, AR 0.5", 300, 0.5, plateau, false),
        ];
        for (what, n, phi, shape, want) in table {
            let mut warned = 0;
            for seed in 40..44u64 {
                let e = ar_noise(seed, n, phi);
                let series: Vec<f64> = (0..n).map(|i| shape(i, n) * (1.0 + 0.02 * e[i])).collect();
                let alerts = run("loss", &series);
                warned += alerts.iter().any(|(_, a)| a.severity >= Severity::Warn) as usize;
                assert!(alerts.iter().all(|(at, _)| *at > (n * 3 / 5) as u64), "{what}: {alerts:?}");
            }
            // 200 white-noise points can repeat their differences' signs often
            // enough to read as memory (seed 42: 40% of the time): the finer
            // levels then stay silent, as they should when memory is possible.
            if want {
                assert!(warned >= 3, "{what}: {warned} of 4");
            } else {
                assert_eq!(warned, 0, "{what}");
            }
        }
        // The finer levels alone raise the short climb: the full blocks judge
        // from 120 points and confirm over 20 more.
        let e = ar_noise(40, 200, 0.0);
        let series: Vec<f64> = (0..200).map(|i| climb(i, 200) * (1.0 + 0.02 * e[i])).collect();
        let mut coarse = Track::with_blocks(&defaults(AlertKind::SlowDrift), "loss".to_owned(), MIN_BLOCK);
        let values = |v: f64| vec![(MetricName::Owned("loss".to_owned()), v)];
        let raised = series.iter().enumerate().filter(|(i, v)| coarse.observe(&Point { step: *i as u64, time_s: 0.0, values: &values(**v) }).is_some()).count();
        assert_eq!(raised, 0);
    }

    #[test]
    fn a_late_climb_in_a_long_run_is_confirmed_over_fewer_levels_and_a_late_bump_is_not() {
        // (what, the loss's shape at step i of n, noise memory, should warn)
        type Shape = fn(usize, usize) -> f64;
        let late: Shape = |i, n| (3.0 + 4.0 * (-(i as f64) / (n as f64 / 8.0)).exp()) * (1.0 + 0.2 * i.saturating_sub(n * 17 / 20) as f64 / (n - n * 17 / 20) as f64);
        let late_rise: Shape = |i, n| (3.0 + 4.0 * (-(i as f64) / (n as f64 / 8.0)).exp()) * (1.0 + 0.05 * i.saturating_sub(n * 17 / 20) as f64 / (n - n * 17 / 20) as f64);
        let plateau: Shape = |i, n| 3.0 + 4.0 * (-(i as f64) / (n as f64 / 8.0)).exp();
        let table: [(&str, Shape, f64, bool); 4] = [
            ("+20% from 85% of the run, white noise", late, 0.0, true),
            ("a healthy +5% from 85%, white noise", late_rise, 0.0, false),
            ("a healthy +5% from 85%, AR 0.9", late_rise, 0.9, false),
            ("a plateau, AR 0.98", plateau, 0.98, false),
        ];
        let n = 60_000;
        for (what, shape, phi, want) in table {
            let e = ar_noise(50, n, phi);
            let scale = 0.01 * (1.0 - phi * phi).sqrt();
            let series: Vec<f64> = (0..n).map(|i| shape(i, n) * (1.0 + scale * e[i])).collect();
            let alerts = run("loss", &series);
            assert_eq!(alerts.iter().any(|(_, a)| a.severity >= Severity::Warn), want, "{what}: {alerts:?}");
            assert!(alerts.iter().all(|(at, _)| *at > (n * 17 / 20) as u64), "{what}: {alerts:?}");
        }
    }

    #[test]
    fn a_sustained_climb_is_told_from_a_wander_and_a_jump() {
        // (levels, a sustained climb?)
        let table: [(&[f64], bool); 6] = [
            (&[0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07], true),
            // Stairs.
            (&[0.0, 0.0, 0.02, 0.02, 0.04, 0.04, 0.06, 0.06, 0.08], true),
            // One jump, then flat: the newer half does not rise.
            (&[0.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], false),
            // A jump falling back (a data switch).
            (&[0.0, 0.2, 0.15, 0.11, 0.08, 0.06, 0.05, 0.04], false),
            // A wander.
            (&[0.0, 0.03, 0.01, 0.04, 0.0, 0.03, 0.01, 0.02], false),
            // Rose, then levelled off at the end.
            (&[0.0, 0.02, 0.04, 0.06, 0.08, 0.08, 0.08, 0.08, 0.08, 0.08], false),
        ];
        for (levels, want) in table {
            assert_eq!(sustained_climb(levels), want, "{levels:?}");
        }
    }

    #[test]
    fn the_descent_a_climb_broke_off_is_carried_at_its_pace_and_capped() {
        // Falling steadily 1% a level, then climbing 1% a level for 8 levels (now
        // the 9th): carried at its full pace, as far as it fell over 8 levels.
        let falling: Vec<f64> = (0..20).map(|i| -0.01 * i as f64).chain((1..8).map(|i| -0.19 + 0.01 * i as f64)).collect();
        let carried = broken_off_descent(&falling, 19, -0.11, true);
        assert!((carried - 0.01 * 8.0).abs() < 1e-9, "{carried}");
        // A descent that wandered down (two of five pairs half its span apart
        // rise): carried at half its pace (the pairs' median slope, 0.25% a level).
        let wandered: Vec<f64> = [0.0, -0.05, -0.01, -0.04, -0.02, -0.03, 0.0, -0.05, -0.06].into_iter().chain((1..8).map(|i| -0.06 + 0.01 * i as f64)).collect();
        let carried = broken_off_descent(&wandered, 8, 0.02, true);
        assert!((carried - 0.5 * 0.0025 * 8.0).abs() < 1e-9, "{carried}");
        // A reward's steady rise (oriented as a descent) nears a ceiling: half its pace.
        let carried = broken_off_descent(&falling, 19, -0.11, false);
        assert!((carried - 0.5 * 0.01 * 8.0).abs() < 1e-9, "{carried}");
        // A plateau before the best: nothing carried.
        let flat: Vec<f64> = (0..20).map(|_| 0.0).chain((1..8).map(|i| 0.01 * i as f64)).collect();
        assert_eq!(broken_off_descent(&flat, 19, 0.08, true), 0.0);
        // A drop of 6% at an LR step right before the best, flat before it: the
        // slope is the pairs' median, which one step hardly moves.
        let step: Vec<f64> = (0..20).map(|i| if i < 19 { 0.0 } else { -0.06 }).chain((1..12).map(|i| -0.06 + 0.005 * i as f64)).collect();
        assert_eq!(broken_off_descent(&step, 19, 0.0, true), 0.0);
        // Capped at what the levels before the best fell: 8 levels of 0.1% each.
        let slowing: Vec<f64> = (0..20).map(|i| -0.001 * i as f64).chain((1..30).map(|i| -0.019 + 0.002 * i as f64)).collect();
        assert!((broken_off_descent(&slowing, 19, 0.04, true) - 0.008).abs() < 1e-9);
        // No climb since the best (a wander): nothing carried.
        let wander: Vec<f64> = (0..20).map(|i| -0.01 * i as f64).chain([-0.17, -0.18, -0.16, -0.185, -0.17, -0.18, -0.17]).collect();
        assert_eq!(broken_off_descent(&wander, 19, -0.175, true), 0.0);
    }

    #[test]
    fn a_loss_still_falling_when_it_turns_is_a_drift_and_healthy_shapes_are_not() {
        // (what, the loss at step i of n, should warn)
        type Shape = fn(usize, usize) -> f64;
        let table: [(&str, Shape, bool); 6] = [
            // +14% from 60% of the run on a loss still falling: nets under 10% over its best.
            ("falling, levelling off", |i, n| 3.0 + 4.0 * (1.0 + 20.0 * i as f64 / n as f64).powf(-0.7), false),
            ("falling, then climbing 14%", |i, n| (3.0 + 4.0 * (1.0 + 20.0 * i as f64 / n as f64).powf(-0.7)) * (1.0 + 0.14 * i.saturating_sub(n * 3 / 5) as f64 / (n - n * 3 / 5) as f64), true),
            ("falling, then climbing in stairs", |i, n| (3.0 + 4.0 * (1.0 + 20.0 * i as f64 / n as f64).powf(-0.7)) * if i < n * 3 / 5 { 1.0 } else { 1.0 + 0.14 * ((4 * (i - n * 3 / 5)) / (n - n * 3 / 5) + 1) as f64 / 4.0 }, true),
            ("a 4% late rise on a plateau", |i, n| 3.0 * (1.0 + 0.04 * i.saturating_sub(n * 7 / 10) as f64 / (n * 3 / 10) as f64), false),
            ("an LR step-down, then a 4% creep", |i, n| (3.0 + 4.0 * (1.0 + 20.0 * i as f64 / n as f64).powf(-0.7)) * if i < n * 3 / 5 { 1.0 } else { 0.94 * (1.0 + 0.04 * (i - n * 3 / 5) as f64 / (n - n * 3 / 5) as f64) }, false),
            ("a data switch that falls back", |i, n| (3.0 + 4.0 * (1.0 + 20.0 * i as f64 / n as f64).powf(-0.7)) * if i < n / 2 { 1.0 } else { 1.0 + 0.25 * (-((i - n / 2) as f64) / (n as f64 / 60.0)).exp() }, false),
        ];
        for (n, seed) in [(2_000usize, 11u64), (30_000, 12)] {
            let e = noise(seed, n);
            for (what, shape, want) in table {
                let series: Vec<f64> = (0..n).map(|i| shape(i, n) * (1.0 + 0.005 * e[i])).collect();
                let alerts = run("loss", &series);
                let warned = alerts.iter().any(|(_, a)| a.severity >= Severity::Warn);
                assert_eq!(warned, want, "{what}, {n} points: {alerts:?}");
                if want {
                    assert!(alerts.iter().all(|(at, _)| *at > (n * 3 / 5) as u64), "{what}: {alerts:?}");
                }
            }
        }
    }
}
