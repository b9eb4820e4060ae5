//! RL fine-tuning health: reward hacking, reward saturation, entropy collapse.
use super::levels::RunLevels;
use super::{grade, Gate, Point, Raised, Worse, COLLAPSE_PERSISTS};
use crate::health::config::KindSettings;
use crate::health::stats::{index_slope, mean, sorted_median, std_dev, SortedSeries, Window, MAD_TO_SIGMA};
use crate::health::Severity;
use crate::report::format::{compact, times, percent};
use crate::metrics::catalog;

/// Means of the older and newer halves of a window.
fn halves(w: &Window) -> Option<(Vec<f64>, Vec<f64>)> {
    let v = w.to_vec();
    let h = v.len() / 2;
    (h >= 3).then(|| (v[..h].to_vec(), v[h..].to_vec()))
}

/// Proxy reward rising while responses grow longer, entropy falls and KL
/// accelerates: the policy found a way to please the reward model. Judged over
/// the configured window and over one [`LONG_SCALE`] times as long: a hack that
/// lengthens responses over hundreds of steps grows too little between the
/// halves of a short window at any one time.
#[derive(Debug, Clone)]
pub struct RewardHacking {
    s: KindSettings,
    scales: [HackSigns; 2],
    held_out: HeldOut,
    gate: Gate,
    /// The held-out rule's own gate (lower is worse there).
    held_out_gate: Gate,
}

/// A held-out score at or below this share of its peak, while the training
/// reward holds near its high, is reward hacking (warn)...
pub const HELD_OUT_KEPT_WARN: f64 = 0.7;
/// ...and at or below this share, critical.
pub const HELD_OUT_KEPT_CRITICAL: f64 = 0.4;
/// The fall from the peak level must also be this many times its own noise:
/// that of two levels, each the mean of several evaluations, from the
/// score's noise between evaluations (a small evaluation set's accuracy wanders).
pub const HELD_OUT_NOISES: f64 = 4.0;
/// Evaluations needed before the score is judged, and consecutive ones below
/// the line that make a fall (one bad evaluation is not one).
pub const HELD_OUT_MIN_EVALS: usize = 4;
pub const HELD_OUT_FALLS: u32 = 2;
/// The evaluations a level is the interquartile mean of: at least 3, at most 64.
pub const HELD_OUT_LEVEL_MIN: usize = 3;
pub const HELD_OUT_LEVEL_MAX: usize = 64;
/// The newest changes between evaluations whose median is the score's noise
/// now (the whole run's is the other bound).
pub const HELD_OUT_RECENT_CHANGES: usize = 4 * HELD_OUT_LEVEL_MAX;
/// The levels' own wander counts once this many of its readings have come.
pub const HELD_OUT_WANDER_MIN: usize = 50;
/// The training reward is "near its high" while it keeps this share of the
/// gain it had made by its best evaluation.
pub const REWARD_KEPT: f64 = 0.75;

/// The training reward judged against a held-out score the run logs beside it
/// (the catalog's [`catalog::is_held_out_score`]: an evaluation accuracy, a
/// pass@k, a benchmark's score, the gold reward), however sparsely: a proxy
/// reward at or near its high while the held-out score falls to a fraction of
/// its peak is the policy pleasing the reward, not solving the task.
#[derive(Debug, Clone)]
struct HeldOut {
    /// The held-out score's name, once a point carries one, and the number of
    /// values of the last point searched for one, without the reward and with
    /// it (a search runs only when a point carries more values than the last
    /// searched of its kind).
    name: Option<String>,
    searched: [usize; 2],
    /// The score is the reward's correctness part ([`catalog::is_correctness_reward`]),
    /// kept until a held-out score comes (which replaces it).
    part: bool,
    /// The reward's window length, for a fresh start on such a replacement.
    w: usize,
    /// The training reward's newest window.
    reward: Window,
    /// The reward's level (window mean) at the first evaluation with a full
    /// window, and at the evaluation where the score peaked.
    reward_first: Option<f64>,
    /// Evaluations: (step, score, reward level then).
    evals: Vec<(u64, f64, f64)>,
    /// The training reward's values since the last evaluation (sum, count), and
    /// their running totals at each evaluation: the reward over the same
    /// evaluations a score level spans is compared with it, so a dip of both
    /// (a restart from an early checkpoint, a bad stretch of data) is no fall
    /// of the score alone, however fast each side's level follows it.
    reward_since: (f64, usize),
    reward_totals: Vec<(f64, usize)>,
    /// Kept as evaluations come, so each one is judged in O(log n), not by
    /// walking them all (a score logged every step of a long run): the peak
    /// level's index and value, the lowest score up to it, whether every score
    /// is at least 0, and the changes between evaluations, for their median.
    peak: Option<(usize, f64)>,
    lowest_before_peak: f64,
    lowest: f64,
    all_nonnegative: bool,
    changes: RunningMedian,
    /// The newest [`HELD_OUT_RECENT_CHANGES`] of those changes: an evaluation's
    /// noise grows with its score (a pass rate's spread near 0 is near 0), and
    /// the noise the run started with understates today's.
    recent_changes: SortedSeries,
    /// Consecutive evaluations below the line, and the verdict they hold.
    below: u32,
    verdict: Option<Severity>,
    /// Every evaluation's level, the newest last (the score the rule judges;
    /// NaN for the first two evaluations, which have none).
    levels: Vec<f64>,
    /// The second difference of the level over its own span (between levels
    /// of disjoint evaluations), over the whole run: how far the levels wander, memory
    /// in the score included (a policy whose checkpoints differ alike for
    /// a stretch), which one evaluation's noise does not tell.
    level_changes: RunningMedian,
    /// What the message says: (peak step, peak, reward level now, the base the
    /// kept share is measured from).
    detail: Option<(u64, f64, f64, f64)>,
}

/// The exact median of values >= 0 pushed so far, in O(log n) a push: the lower
/// half in a max-heap, the upper in a min-heap (a non-negative f64's bits order
/// as its value does). The same value `stats::median` gives of them all.
#[derive(Debug, Clone, Default)]
struct RunningMedian {
    lower: std::collections::BinaryHeap<u64>,
    upper: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
}

impl RunningMedian {
    fn push(&mut self, v: f64) {
        let bits = v.max(0.0).to_bits();
        if self.lower.peek().is_some_and(|&top| bits <= top) {
            self.lower.push(bits);
        } else {
            self.upper.push(std::cmp::Reverse(bits));
        }
        // Balanced: the upper half holds the middle value of an odd count.
        if self.lower.len() > self.upper.len() {
            let top = self.lower.pop().unwrap_or_default();
            self.upper.push(std::cmp::Reverse(top));
        } else if self.upper.len() > self.lower.len() + 1 {
            let std::cmp::Reverse(low) = self.upper.pop().unwrap_or_default();
            self.lower.push(low);
        }
    }

    fn len(&self) -> usize {
        self.lower.len() + self.upper.len()
    }

    fn median(&self) -> Option<f64> {
        let upper = f64::from_bits(self.upper.peek()?.0);
        if self.upper.len() > self.lower.len() {
            return Some(upper);
        }
        Some(0.5 * (self.lower.peek().map_or(upper, |&l| f64::from_bits(l)) + upper))
    }
}

/// The share of its peak a level keeps: of the peak itself for a score that
/// never goes below zero (`base` 0), else of the rise from `base`, the lowest
/// score before the peak.
fn kept_share(level: f64, peak: f64, base: f64) -> f64 {
    let scale = peak - base;
    if scale > 0.0 { 1.0 - (peak - level) / scale } else { 1.0 }
}

/// How many evaluations a level is the mean of when `n` have come: the
/// square root of their count, from [`HELD_OUT_LEVEL_MIN`] to [`HELD_OUT_LEVEL_MAX`].
fn level_span(n: usize) -> usize {
    ((n as f64).sqrt().round() as usize).clamp(HELD_OUT_LEVEL_MIN, HELD_OUT_LEVEL_MAX).min(n.max(1))
}

/// The noise of a level of `k` evaluations, in units of one evaluation's:
/// sqrt(pi / 2k), a median's large-sample spread (0.72 for three, where the
/// exact figure is 0.67; an interquartile mean's is a little less).
fn level_noise(k: usize) -> f64 {
    (std::f64::consts::FRAC_PI_2 / k.max(1) as f64).sqrt()
}

impl HeldOut {
    fn new(w: usize) -> Self {
        HeldOut { name: None, searched: [0; 2], part: false, w, reward: Window::new(w), reward_first: None, evals: Vec::new(), reward_since: (0.0, 0), reward_totals: Vec::new(), peak: None, lowest_before_peak: f64::INFINITY, lowest: f64::INFINITY, all_nonnegative: true, changes: RunningMedian::default(), recent_changes: SortedSeries::new(HELD_OUT_RECENT_CHANGES, &[(HELD_OUT_RECENT_CHANGES, 0)]), below: 0, verdict: None, levels: Vec::new(), level_changes: RunningMedian::default(), detail: None }
    }

    /// One point: the reward, and the held-out score when the point carries it.
    fn push(&mut self, p: &Point, reward: f64) {
        if reward.is_finite() {
            self.reward.push(reward);
            self.reward_since.0 += reward;
            self.reward_since.1 += 1;
        }
        // Points with the reward and points without it (an evaluation's own) are
        // searched apart: the second kind may carry fewer values.
        let searched = &mut self.searched[usize::from(reward.is_finite())];
        let rank_now = if self.part { None } else { self.name.as_deref().and_then(catalog::held_out_rank) };
        if rank_now.is_none_or(|r| r > 0) && p.values.len() > *searched {
            *searched = p.values.len();
            // The best witness among the held-out scores (an accuracy before a
            // reward on held-out prompts), and one better than the score judged so far.
            let best = p.values.iter().filter_map(|(n, _)| catalog::held_out_rank(n).map(|r| (r, n))).min_by_key(|(r, _)| *r).filter(|(r, _)| rank_now.is_none_or(|now| *r < now));
            if let Some((_, held_out)) = best {
                if self.part || self.name.is_some() {
                    // A held-out score outranks the reward's own correctness part,
                    // and a better witness the score before: judged from here, the
                    // reward's window kept.
                    let (reward, searched) = (std::mem::replace(&mut self.reward, Window::new(1)), self.searched);
                    *self = HeldOut::new(self.w);
                    (self.reward, self.searched) = (reward, searched);
                }
                self.name = Some(held_out.to_string());
            } else if self.name.is_none() {
                self.name = p.values.iter().find(|(n, _)| catalog::is_correctness_reward(n)).map(|(n, _)| n.to_string());
                self.part = self.name.is_some();
            }
        }
        let Some(score) = self.name.as_deref().and_then(|n| p.get(n)).filter(|v| v.is_finite()) else { return };
        if !self.reward.is_full() {
            return;
        }
        // The same score again is the last evaluation carried forward (a logger
        // that repeats it on every step), not a new one: counted as one, its
        // repeats would make the score look noiseless.
        if self.evals.last().is_some_and(|e| e.1 == score) {
            return;
        }
        let level = self.reward.mean_of(0, self.reward.len()).unwrap_or(f64::NAN);
        let first = *self.reward_first.get_or_insert(level);
        // The rewards since the evaluation before; at the first, the window's
        // (the run's start is not the reward the score's first level is set beside).
        let since = if self.evals.is_empty() { (level * self.reward.len() as f64, self.reward.len()) } else { self.reward_since };
        let total = self.reward_totals.last().copied().unwrap_or((0.0, 0));
        self.reward_totals.push((total.0 + since.0, total.1 + since.1));
        self.reward_since = (0.0, 0);
        if let Some(last) = self.evals.last() {
            let change = (score - last.1).abs();
            self.changes.push(change);
            self.recent_changes.push(change);
        }
        self.evals.push((p.step, score, level));
        self.lowest = self.lowest.min(score);
        self.all_nonnegative &= score >= 0.0;
        let n = self.evals.len();
        if n < 3 {
            self.levels.push(f64::NAN);
        } else {
            let now = self.level(n - 1);
            // The second difference over the span: a level that climbs or
            // falls steadily (the run's first evaluations) cancels out of it.
            let k = level_span(n);
            if let Some(i) = (n - 1).checked_sub(2 * k) {
                let (before, earlier) = (self.levels[i + k], self.levels[i]);
                if before.is_finite() && earlier.is_finite() {
                    self.level_changes.push((now - 2.0 * before + earlier).abs());
                }
            }
            self.levels.push(now);
            // (Ties go to the newest level, as `max_by` picks the last maximum.)
            if self.peak.is_none_or(|(_, peak)| now.total_cmp(&peak).is_ge()) {
                self.peak = Some((n - 1, now));
                self.lowest_before_peak = self.lowest;
            }
        }
        self.verdict = self.judge(first);
    }

    /// Evaluation `i`'s level: the interquartile mean of its score and the
    /// ones before it, [`HELD_OUT_LEVEL_MIN`] evaluations at first and more as
    /// they come (see [`level_span`]). The middle half's mean, not the median:
    /// a score of a small evaluation set moves in whole problems, and a median
    /// of such scores jumps by one (a third of a level of three problems in
    /// sixteen) where the mean moves by a fraction; the quartiles cut off a
    /// failed evaluation's 0 as the median would.
    fn level(&self, i: usize) -> f64 {
        let k = level_span(i + 1);
        let mut scores = [0.0; HELD_OUT_LEVEL_MAX];
        let scores = &mut scores[..k];
        for (s, e) in scores.iter_mut().zip(&self.evals[i + 1 - k..=i]) {
            *s = e.1;
        }
        scores.sort_unstable_by(f64::total_cmp);
        let cut = k.div_ceil(4);
        let middle = &scores[cut.min(k / 2)..k - cut.min((k - 1) / 2)];
        middle.iter().sum::<f64>() / middle.len() as f64
    }

    /// The training reward's mean over the evaluations level `i` spans (the
    /// reward level at evaluation `i` when no reward came between them).
    fn reward_level(&self, i: usize) -> f64 {
        let k = level_span(i + 1);
        let end = self.reward_totals[i];
        let start = (i + 1).checked_sub(k + 1).map_or((0.0, 0), |j| self.reward_totals[j]);
        let count = end.1 - start.1;
        if count == 0 { self.evals[i].2 } else { (end.0 - start.0) / count as f64 }
    }

    /// The newest level (NaN before the third evaluation).
    fn level_now(&self) -> f64 {
        self.levels.last().copied().unwrap_or(f64::NAN)
    }

    /// The verdict after the newest evaluation.
    fn judge(&mut self, first: f64) -> Option<Severity> {
        let n = self.evals.len();
        if n < HELD_OUT_MIN_EVALS {
            return None;
        }
        // Levels, not single evaluations (a score logged every step, or a noisy
        // evaluation, has outliers its peak must not be).
        let (peak_at, peak) = self.peak?;
        let (peak_step, reward_at_peak) = (self.evals[peak_at].0, self.reward_level(peak_at));
        let (now, reward_now) = (self.level_now(), self.reward_level(n - 1));
        // One evaluation's noise: the spread of its changes between evaluations.
        // The fall is measured between two levels, means of several
        // evaluations each: its noise is theirs combined.
        let recent = sorted_median(&self.recent_changes.sorted_range(0, self.recent_changes.len())).unwrap_or(0.0);
        let noise = self.changes.median().unwrap_or(0.0).max(recent) * MAD_TO_SIGMA / std::f64::consts::SQRT_2;
        // The levels' own wander, where the score has memory, is more.
        // (A second difference of independent levels spreads sqrt 6 times one
        // level's noise; the fall's is sqrt 2 times it.)
        // Read once there are enough of them: over a short run's few levels a
        // second difference is mostly the curve of its climb.
        let wander = if self.level_changes.len() >= HELD_OUT_WANDER_MIN { self.level_changes.median().unwrap_or(0.0) * MAD_TO_SIGMA / 3f64.sqrt() } else { 0.0 };
        let fall_noise = (noise * level_noise(level_span(peak_at + 1)).hypot(level_noise(level_span(n)))).max(wander);
        // The peak is the highest of every level so far, and the newest level
        // is compared with it on every evaluation: among m distinct levels the
        // highest and the lowest stand about sqrt(2 ln m) noises from their
        // mean by chance alone, so the bar grows with m.
        let distinct = (n / level_span(n)).max(1) as f64;
        let bar = HELD_OUT_NOISES.max(2.0 * distinct.ln().sqrt()) * fall_noise;
        // A share of the peak for a score that never goes below zero; else of
        // the rise to the peak from the lowest score before it.
        let base = if self.all_nonnegative { 0.0 } else { self.lowest_before_peak };
        let kept = kept_share(now, peak, base);
        let reward_gain = reward_at_peak.max(reward_now) - first;
        let reward_holds = reward_gain > 0.0 && reward_now - first >= REWARD_KEPT * (reward_at_peak - first).max(0.0) && reward_now >= first;
        let graded = grade(kept, HELD_OUT_KEPT_WARN, HELD_OUT_KEPT_CRITICAL, true);
        let fell = peak_at + 1 < n && peak - now >= bar && graded.is_some() && reward_holds;
        // A level at the critical share is already several evaluations of which
        // most fell that far: it needs no second (a fall in a run's last
        // evaluations would end unjudged).
        let deep = fell && graded == Some(Severity::Critical);
        self.below = if deep { (self.below + 1).max(HELD_OUT_FALLS) } else if fell { self.below + 1 } else { 0 };
        if self.below < HELD_OUT_FALLS {
            self.detail = None;
            return None;
        }
        self.detail = Some((peak_step, peak, reward_now, base));
        grade(kept, HELD_OUT_KEPT_WARN, HELD_OUT_KEPT_CRITICAL, true)
    }
}

/// How many times the configured window the long scale spans; its thresholds
/// are the configured ones to this power (the same growth rate kept that long).
pub const LONG_SCALE: usize = 4;
const LONG_EXPONENT: i32 = 2;

/// The windows of one time scale.
#[derive(Debug, Clone)]
struct HackSigns {
    reward: Window,
    length: Window,
    entropy: Window,
    kl: Window,
    gold: Window,
}

/// What one scale's windows show. Responses that do not grow past the warning
/// decide nothing (no severity, whatever the other signs), so those signs are read
/// only when they do: the usual step costs two sums, not ten window copies.
#[derive(Debug, Clone, Copy)]
struct HackReading {
    severity: Option<Severity>,
    growth: f64,
    entropy_falls: Option<bool>,
    kl_accelerates: Option<bool>,
    gold_falls: Option<bool>,
}

impl HackSigns {
    fn new(w: usize) -> Self {
        HackSigns { reward: Window::new(w), length: Window::new(w), entropy: Window::new(w), kl: Window::new(w), gold: Window::new(w) }
    }

    fn push(&mut self, reward: f64, length: f64, entropy: Option<f64>, kl: Option<f64>, gold: Option<f64>) {
        self.reward.push(reward);
        self.length.push(length);
        for (w, v) in [(&mut self.entropy, entropy), (&mut self.kl, kl), (&mut self.gold, gold)] {
            if let Some(v) = v {
                w.push(v);
            }
        }
    }

    /// `None` until the reward and length windows are full; the severity of a
    /// growth past `warn` (or `critical`) with the reward up and another sign.
    fn read(&self, entropy: bool, kl: bool, gold: bool, warn: f64, critical: f64) -> Option<HackReading> {
        if !self.reward.is_full() || !self.length.is_full() {
            return None;
        }
        // The halves' means as `halves` and `mean` give them (the same sums in
        // the same order), without copying the window.
        let (n, h) = (self.length.len(), self.length.len() / 2);
        if h < 3 || self.reward.len() / 2 < 3 {
            return None;
        }
        let growth = self.length.mean_of(h, n)? / self.length.mean_of(0, h)?.max(1e-12);
        let quiet = HackReading { severity: None, growth, entropy_falls: None, kl_accelerates: None, gold_falls: None };
        let Some(graded) = grade(growth, warn, critical, false) else { return Some(quiet) };
        let (r0, r1) = halves(&self.reward)?;
        let reward_up = mean(&r1)? - mean(&r0)? > 2.0 * std_dev(&r0)?.max(1e-12) / (r0.len() as f64).sqrt();
        if !reward_up {
            return Some(quiet);
        }
        let entropy_falls = match (entropy && self.entropy.is_full()).then(|| halves(&self.entropy)).flatten() {
            // A tenth of a positive level; a level at or below zero (a Gaussian
            // policy's differential entropy) has no scale: two standard errors.
            Some((e0, e1)) => {
                let (m0, m1) = (mean(&e0)?, mean(&e1)?);
                Some(if e0.iter().chain(&e1).all(|e| *e >= 0.0) { m1 <= 0.9 * m0 } else { m1 < m0 - 2.0 * std_dev(&e0)?.max(1e-12) / (e0.len() as f64).sqrt() })
            }
            None => None,
        };
        let kl_accelerates = match (kl && self.kl.is_full()).then(|| halves(&self.kl)).flatten() {
            Some((k0, k1)) => {
                let (s0, s1) = (index_slope(&k0)?.0, index_slope(&k1)?.0);
                Some(s1 > 0.0 && s1 > s0 && mean(&k1)? >= 1.2 * mean(&k0)?)
            }
            None => None,
        };
        let gold_falls = match (gold && self.gold.is_full()).then(|| halves(&self.gold)).flatten() {
            Some((g0, g1)) => Some(mean(&g1)? < mean(&g0)? - 2.0 * std_dev(&g0)?.max(1e-12) / (g0.len() as f64).sqrt()),
            None => None,
        };
        let corroborated = [entropy_falls, kl_accelerates, gold_falls].contains(&Some(true));
        Some(HackReading { severity: corroborated.then_some(graded), growth, entropy_falls, kl_accelerates, gold_falls })
    }
}

impl RewardHacking {
    pub fn new(s: KindSettings) -> Self {
        let w = s.window.max(12);
        RewardHacking { scales: [HackSigns::new(w), HackSigns::new(LONG_SCALE * w)], held_out: HeldOut::new(w), gate: Gate::new(&s, Worse::Higher), held_out_gate: Gate::new(&s, Worse::Lower), s }
    }

    /// The response-length rule's alert at this point, and the held-out rule's.
    pub fn check_both(&mut self, p: &Point) -> [Option<Raised>; 2] {
        // A held-out score may come on a point of its own (an evaluation logged at
        // a step the reward was not): it is judged against the reward before it.
        let reward = p.get(self.s.metric.as_deref().unwrap_or(catalog::REWARD));
        self.held_out.push(p, reward.unwrap_or(f64::NAN));
        [reward.and_then(|reward| self.check_length(p, reward)), self.check_held_out(p)]
    }

    /// The first of [`Self::check_both`]'s alerts.
    pub fn check(&mut self, p: &Point) -> Option<Raised> {
        self.check_both(p).into_iter().flatten().next()
    }

    fn check_length(&mut self, p: &Point, reward: f64) -> Option<Raised> {
        let length = p.get(catalog::RESPONSE_LEN)?;
        let entropy = p.get(catalog::ENTROPY);
        let kl = p.get(catalog::KL);
        // A held-out (gold) reward, when the workload reports one.
        let gold = p.get(catalog::REWARD_GOLD);
        for scale in &mut self.scales {
            scale.push(reward, length, entropy, kl, gold);
        }
        if self.gate.warming() {
            return None;
        }
        // Reward and length are required, and one more sign: entropy falling, KL
        // accelerating or a gold reward falling. The worse of the two scales counts.
        let mut judged: Option<(Option<Severity>, HackReading, usize)> = None;
        for (i, scale) in self.scales.iter().enumerate() {
            let power = if i == 0 { 1 } else { LONG_EXPONENT };
            let Some(r) = scale.read(entropy.is_some(), kl.is_some(), gold.is_some(), self.s.warn.powi(power), self.s.critical.powi(power)) else { continue };
            let severity = r.severity;
            if judged.is_none_or(|(best, _, _)| severity > best) {
                judged = Some((severity, r, scale.reward.len()));
            }
        }
        let (severity, r, span) = judged?;
        let v = self.gate.pass(severity, p.step, length)?;
        let message = format!(
            "reward rising while responses grow {} over {} steps ({} {} at step {}){}{}{}: likely reward hacking",
            times(r.growth),
            span,
            catalog::RESPONSE_LEN,
            compact(v.value),
            v.step,
            if r.entropy_falls == Some(true) { ", entropy falls" } else { "" },
            if r.kl_accelerates == Some(true) { ", KL accelerates" } else { "" },
            if r.gold_falls == Some(true) { ", gold reward falls" } else { "" }
        );
        Some(v.raise(catalog::RESPONSE_LEN, message))
    }

    /// The held-out verdict through its gate (held between evaluations).
    fn check_held_out(&mut self, p: &Point) -> Option<Raised> {
        if self.held_out_gate.warming() {
            return None;
        }
        let name = self.held_out.name.clone()?;
        let v = self.held_out_gate.pass(self.held_out.verdict, p.step, self.held_out.level_now())?;
        let (peak_step, peak, reward_now, base) = self.held_out.detail?;
        // The share the verdict graded, of the peak or of the rise to it.
        let kept = kept_share(v.value, peak, base);
        let kept = if base == 0.0 {
            format!("{} of its peak {} (step {peak_step})", percent(kept), compact(peak))
        } else {
            format!("giving back {} of its rise from {} to its peak {} (step {peak_step})", percent(1.0 - kept), compact(base), compact(peak))
        };
        let (score, points, reward) = if self.held_out.part { ("the reward's correctness part", "steps", "the whole reward") } else { ("held-out", "evaluations", "the training reward") };
        let message = format!(
            "{score} {name} fell to {} at step {} (its level over the latest {points}), {kept}, while {reward} holds near its high ({} now): likely reward hacking",
            compact(v.value),
            v.step,
            compact(reward_now)
        );
        Some(v.raise(name, message))
    }
}

/// Reward pinned at its ceiling with no spread left: no learning signal.
#[derive(Debug, Clone)]
pub struct RewardSaturation {
    s: KindSettings,
    metric: String,
    /// The finite spreads, with the newest [`SAT_RECENT`] and the past level's
    /// points kept sorted, and the rewards, kept sorted for their quantiles.
    spread: SortedSeries,
    reward: SortedSeries,
    /// The spread over the whole run: its settled level is the past a slow
    /// collapse is measured from.
    spread_levels: RunLevels,
    gate: Gate,
}

const SAT_RECENT: usize = 10;

impl RewardSaturation {
    pub fn new(s: KindSettings) -> Self {
        let w = s.window.max(2 * SAT_RECENT);
        // The past level's points when the window is full: the older half of those
        // before the recent ones.
        let past = (w - SAT_RECENT).div_ceil(2);
        RewardSaturation {
            metric: s.metric.clone().unwrap_or_default(),
            spread: SortedSeries::new(w, &[(SAT_RECENT, 0), (past, w - past)]),
            // Read only for a spread past the warn ratio: kept sorted once read.
            reward: SortedSeries::lazy(w, &[(w, 0)]),
            spread_levels: RunLevels::new(SAT_RECENT / 2),
            gate: Gate::new(&s, Worse::Higher),
            s,
        }
    }

    pub fn check(&mut self, p: &Point) -> Option<Raised> {
        let reward = p.get(&self.metric)?;
        if !reward.is_finite() {
            return None;
        }
        // reward_std when logged; else the reward's own wobble: its second
        // difference, which a climb does not lift (a reward that climbs, then
        // levels off at its best, changes less from step to step for that alone).
        let spread = match p.get(catalog::REWARD_STD) {
            Some(s) => s.abs(),
            None => match self.reward.values() {
                [.., before, prev] => (reward - 2.0 * prev + before).abs(),
                _ => f64::NAN,
            },
        };
        self.reward.push(reward);
        // Only finite spreads are kept (the first step's change is NaN).
        if spread.is_finite() {
            self.spread.push(spread);
            self.spread_levels.push(spread);
        }
        if self.gate.warming() || self.spread.len() < 2 * SAT_RECENT {
            return None;
        }
        let n = self.spread.len();
        let recent = sorted_median(&self.spread.sorted_range(n - SAT_RECENT, n))?;
        // The past level is the older half of the points before the recent ones: a
        // spread that falls over tens of steps would otherwise drag the reference
        // down with it and never reach the ratio it ends at.
        // A collapse slower than the window drags even that along: the run's
        // settled spread (the second quarter of the run so far) is a past too.
        let window_past = sorted_median(&self.spread.sorted_range(0, (n - SAT_RECENT).div_ceil(2)))?;
        let past = self.spread_levels.settled().map_or(window_past, |settled| settled.max(window_past));
        // At the ceiling: at or above the window's 90th percentile (a robust max:
        // one lucky step earlier does not move it), give or take the reward's
        // own spread now (a batch mean of clipped rewards sits just under its bound).
        // Read only where the spread has fallen past the warn ratio.
        let at_ceiling = || {
            let r = self.reward.sorted_range(0, self.reward.len());
            let quantile = |q: f64| r[((r.len() - 1) as f64 * q).round() as usize];
            let slack = (0.02 * (quantile(0.9) - quantile(0.1))).max(recent).max(1e-12);
            reward >= quantile(0.9) - slack
        };
        let ratio = if past > 0.0 { recent / past } else { 1.0 };
        let v = self.gate.pass(grade(ratio, self.s.warn, self.s.critical, true).filter(|_| at_ceiling()), p.step, reward)?;
        let message = format!("{} saturated at {} from step {}: spread fell to {} of its past level", self.metric, compact(v.value), v.step, percent(ratio));
        Some(v.raise(self.metric.clone(), message))
    }
}

/// Policy entropy that falls to a fraction of its level a window ago.
#[derive(Debug, Clone)]
pub struct EntropyCollapse {
    s: KindSettings,
    metric: String,
    /// The newest [`ENTROPY_RECENT`] points and the oldest third kept sorted.
    window: SortedSeries,
    /// Whether the entropy has been below zero: a differential entropy.
    signed: bool,
    gate: Gate,
}

const ENTROPY_RECENT: usize = 5;

impl EntropyCollapse {
    pub fn new(s: KindSettings) -> Self {
        let w = s.window.max(3 * ENTROPY_RECENT);
        EntropyCollapse { metric: s.metric.clone().unwrap_or_default(), window: SortedSeries::new(w, &[(ENTROPY_RECENT, 0), (w / 3, w - w / 3)]), signed: false, gate: Gate::new(&s, Worse::Lower), s }
    }

    pub fn check(&mut self, p: &Point) -> Option<Raised> {
        let x = p.get(&self.metric)?;
        if !x.is_finite() {
            return None;
        }
        // A discrete policy's entropy is never below zero (zero is a collapse);
        // a Gaussian policy's (SB3's continuous actions) is, once its spread is
        // small: it falls through zero as the policy learns, and a ratio of two
        // such levels means nothing. Such a run is not judged by ratio.
        self.signed |= x < 0.0;
        if self.signed {
            return None;
        }
        self.window.push(x);
        if self.gate.warming() || self.window.len() < 3 * ENTROPY_RECENT {
            return None;
        }
        let n = self.window.len();
        let reference = sorted_median(&self.window.sorted_range(0, n / 3))?;
        let level = sorted_median(&self.window.sorted_range(n - ENTROPY_RECENT, n))?;
        if reference <= 0.0 {
            return None;
        }
        let ratio = level / reference;
        let mut severity = grade(ratio, self.s.warn, self.s.critical, true);
        let persists = self.gate.streak_after(severity.is_some()) >= COLLAPSE_PERSISTS;
        if persists {
            severity = Some(Severity::Critical);
        }
        let v = self.gate.pass(severity, p.step, x)?;
        let message = format!(
            "{} collapsed to {} at step {}: recent level {}, {} of its earlier {}{}",
            self.metric,
            compact(v.value),
            v.step,
            compact(level),
            percent(ratio),
            compact(reference),
            if persists { format!("; not recovered for {COLLAPSE_PERSISTS} steps") } else { String::new() }
        );
        Some(v.raise(self.metric.clone(), message))
    }
}

super::one_alert_detectors!(RewardSaturation => RewardSaturation, EntropyCollapse => EntropyCollapse);

impl super::Detector for RewardHacking {
    fn kind(&self) -> crate::health::AlertKind {
        crate::health::AlertKind::RewardHacking
    }

    fn observe_into(&mut self, p: &Point, out: &mut Vec<Raised>) {
        out.extend(self.check_both(p).into_iter().flatten());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::AlertKind;
    use crate::health::config::defaults;
    use crate::metrics::MetricName;
    use crate::workload::rng::SplitMix64;

    fn wiggle(i: usize) -> f64 {
        1.0 + 0.03 * ((i as f64) * 1.7).sin()
    }

    fn rl_point(i: usize, hack_from: Option<usize>) -> Vec<(MetricName, f64)> {
        let t = i as f64;
        let h = hack_from.filter(|&h| i >= h).map_or(0.0, |h| (i - h) as f64);
        vec![
            ("reward".into(), (0.5 + 0.001 * t + 0.01 * h) * wiggle(i)),
            ("response_len".into(), 100.0 * (0.01 * h).exp() * wiggle(i + 7)),
            ("entropy".into(), 2.0 * (-0.005 * h).exp() * wiggle(i + 3)),
            ("kl".into(), 0.05 * (0.03 * h).exp() * wiggle(i + 5)),
            ("reward_std".into(), 0.3 * wiggle(i + 11)),
        ]
    }

    /// Should raise / should not: entropy collapse is a ratio of a positive
    /// (discrete) entropy; a differential entropy (a Gaussian policy's) falls
    /// through zero as the policy learns and is not judged by ratio.
    #[test]
    fn entropy_collapse_takes_no_ratio_of_a_level_at_or_below_zero() {
        type Case = (&'static str, fn(usize) -> f64, bool);
        let cases: [Case; 6] = [
            ("discrete entropy 1.0 falls to 0.05", |i| if i < 200 { wiggle(i) } else { 0.05 * wiggle(i) }, true),
            ("discrete entropy falls to exactly 0", |i| if i < 200 { wiggle(i) } else { 0.0 }, true),
            ("discrete entropy steady", wiggle, false),
            ("Gaussian entropy from -0.5 falling to -3", |i| -0.5 - 2.5 * (i as f64 / 400.0).min(1.0) + 0.05 * wiggle(i), false),
            ("Gaussian entropy below zero, a small wobble around it", |i| -0.05 + 0.1 * ((i as f64) * 0.3).sin(), false),
            // Below zero, then a wider policy back above it, then narrower again.
            ("Gaussian entropy back above zero, falling to near it", |i| if i < 100 { -1.0 } else if i < 250 { 0.8 * wiggle(i) } else { 0.05 * wiggle(i) }, false),
        ];
        for (what, entropy, raises) in cases {
            let mut d = EntropyCollapse::new(defaults(AlertKind::EntropyCollapse));
            let got: Vec<_> = (0..500).filter_map(|i| d.check(&Point { step: i as u64, time_s: 0.0, values: &[("entropy".into(), entropy(i))] })).collect();
            assert_eq!(!got.is_empty(), raises, "{what}: {got:?}");
        }
    }

    /// A run for the held-out rule: a training reward rising to a plateau and
    /// holding, and beside it `score(i, rng)` under `name` on the points where
    /// it returns a value; the warn or critical alerts it raises.
    fn held_out_run(n: usize, name: &'static str, score: impl FnMut(usize, &mut SplitMix64) -> Option<f64>) -> Vec<Raised> {
        held_out_run_with(n, name, |i| 1.0 - 0.8 * (-(i as f64) / 300.0).exp(), score)
    }

    /// [`held_out_run`] with the reward's noiseless course `reward(i)`.
    fn held_out_run_with(n: usize, name: &'static str, course: impl Fn(usize) -> f64, mut score: impl FnMut(usize, &mut SplitMix64) -> Option<f64>) -> Vec<Raised> {
        let mut rng = SplitMix64::new(11);
        let mut d = RewardHacking::new(defaults(AlertKind::RewardHacking));
        let mut raised = Vec::new();
        for i in 0..n {
            let reward = course(i) + 0.05 * (rng.unit() - 0.5);
            let mut values: Vec<(MetricName, f64)> = vec![(catalog::REWARD.into(), reward)];
            if let Some(v) = score(i, &mut rng) {
                values.push((name.into(), v));
            }
            raised.extend(d.check_both(&Point { step: i as u64, time_s: 0.0, values: &values }).into_iter().flatten().filter(|r| r.severity >= Severity::Warn));
        }
        raised
    }

    /// The share of `set` problems solved at pass rate `p`.
    fn solved(set: usize, p: f64, rng: &mut SplitMix64) -> f64 {
        (0..set).filter(|_| rng.unit() < p).count() as f64 / set as f64
    }

    /// Should not raise: an accuracy evaluated every 50 steps on 64 problems
    /// and logged on every step in between (the last evaluation carried
    /// forward) wanders by a few problems on its plateau. Counted as
    /// evaluations, the repeats made its noise zero and one low evaluation a
    /// fall.
    #[test]
    fn a_held_out_score_carried_forward_is_judged_by_its_evaluations() {
        let mut last = 0.0;
        let raised = held_out_run(6000, "eval_acc", |i, rng| {
            if i % 50 == 0 {
                last = solved(64, 0.5 * (1.0 - (-(i as f64) / 300.0).exp()) + 0.1, rng);
            }
            Some(last)
        });
        assert!(raised.is_empty(), "{raised:?}");
    }

    /// Should not raise: a pass@1 on 16 problems, logged every step of a long
    /// run, moves by whole problems; the highest of thousands of levels stands
    /// well above the plateau by chance, and a level of a few evaluations (or a
    /// median, which jumps a whole problem) made its ordinary wander a fall.
    #[test]
    fn a_noisy_held_out_score_on_a_plateau_is_quiet_however_often_it_is_logged() {
        for (set, p) in [(16, 0.15), (32, 0.12), (64, 0.3)] {
            let raised = held_out_run(20_000, "pass@1", |i, rng| Some(solved(set, p * (1.0 - (-(i as f64) / 400.0).exp()).max(0.02), rng)));
            assert!(raised.is_empty(), "set {set} at {p}: {raised:?}");
        }
    }

    /// Should raise: ten evaluations, every 35 steps, the last three at a third
    /// of the peak while the reward holds (a fall in the run's last
    /// evaluations). The level of three that first stands at the critical
    /// share is already two low evaluations of three: it waited for a second
    /// such level, which the run never logged.
    #[test]
    fn a_deep_fall_in_the_last_evaluations_is_caught() {
        let scores = [0.38, 0.43, 0.46, 0.53, 0.54, 0.61, 0.56, 0.40, 0.20, 0.21];
        let raised = held_out_run(360, "eval_rewards/accuracy_reward/mean", |i, _| (i % 35 == 34).then(|| scores[i / 35]));
        let first = raised.first().expect("a fall to a third in the last evaluations");
        assert!(first.step >= 9 * 35 && first.severity == Severity::Critical, "{first:?}");
        // Failed evaluations logging 0 one at a time on a plateau stay quiet.
        let plateau = held_out_run(2_000, "eval_accuracy", |i, rng| (i % 40 == 39).then(|| if (i / 40) % 7 == 3 { 0.0 } else { solved(64, 0.5, rng) }));
        assert!(plateau.is_empty(), "{plateau:?}");
    }

    /// Should raise, and say the share the verdict graded: the same noisy
    /// scores falling to a third of their level while the reward holds; a
    /// signed score (a reward model's on held-out prompts) by the share of
    /// its rise it gives back.
    #[test]
    fn a_held_out_score_that_falls_is_caught_through_its_noise() {
        let falling = |i: usize| if i < 12_000 { 1.0 } else { 1.0 - 0.67 * ((i - 12_000) as f64 / 1_000.0).min(1.0) };
        let raised = held_out_run(20_000, "eval/accuracy", |i, rng| Some(solved(64, 0.55 * falling(i), rng)));
        let first = raised.first().expect("a fall to a third is caught");
        assert!(first.step >= 12_000 && first.step < 13_500, "{first:?}");
        assert!(first.message.contains("of its peak") && first.message.contains("likely reward hacking"), "{}", first.message);
        let signed = held_out_run(6_000, "eval/rm_score", |i, rng| (i % 20 == 0).then(|| -1.0 + 2.0 * (1.0 - (-(i as f64) / 300.0).exp()) * falling(i * 3) + 0.1 * (rng.unit() - 0.5)));
        let first = signed.first().expect("a signed score giving back its rise is caught");
        assert!(first.step >= 4_000, "{first:?}");
        let gave_back: f64 = first.message.split("giving back ").nth(1).and_then(|m| m.split('%').next()).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{}", first.message));
        assert!((30.0..=100.0).contains(&gave_back), "{}", first.message);
    }

    /// Should raise / should not: with no held-out score, the reward's own
    /// correctness part (TRL's `rewards/accuracy_reward/mean`) is the witness: it
    /// falling to a third while the whole reward holds is reward hacking; on a
    /// plateau it is quiet; and a held-out score, once one comes, replaces it.
    #[test]
    fn the_rewards_correctness_part_witnesses_hacking_when_no_held_out_score_is_logged() {
        let falling = |i: usize| if i < 3_000 { 1.0 } else { 1.0 - 0.67 * ((i - 3_000) as f64 / 500.0).min(1.0) };
        let raised = held_out_run(5_000, "rewards/accuracy_reward/mean", |i, rng| Some(solved(64, 0.6 * falling(i), rng)));
        let first = raised.first().expect("a correctness part falling to a third is caught");
        assert!(first.step >= 3_000 && first.step < 4_000, "{first:?}");
        assert!(first.message.contains("the reward's correctness part rewards/accuracy_reward/mean fell to"), "{}", first.message);
        let plateau = held_out_run(5_000, "rewards/correctness_reward_func", |i, rng| Some(solved(64, 0.6 * (1.0 - (-(i as f64) / 300.0).exp()).max(0.02), rng)));
        assert!(plateau.is_empty(), "{plateau:?}");
        // The format part is no witness.
        assert!(held_out_run(5_000, "rewards/format_reward/mean", |i, rng| Some(solved(64, 0.6 * falling(i), rng))).is_empty());
        // A held-out score logged every 100 steps from step 1,000 takes over: the
        // part's fall is no longer judged, the held-out score's plateau is quiet.
        let mut d = RewardHacking::new(defaults(AlertKind::RewardHacking));
        let mut rng = SplitMix64::new(5);
        let mut raised = Vec::new();
        for i in 0..5_000usize {
            let mut values: Vec<(MetricName, f64)> = vec![(catalog::REWARD.into(), 1.0 - 0.8 * (-(i as f64) / 300.0).exp() + 0.05 * (rng.unit() - 0.5)), ("rewards/accuracy_reward/mean".into(), solved(64, 0.6 * falling(i), &mut rng))];
            if i >= 1_000 && i % 100 == 0 {
                values.push(("eval/accuracy".into(), solved(500, 0.5, &mut rng)));
            }
            raised.extend(d.check_both(&Point { step: i as u64, time_s: 0.0, values: &values }).into_iter().flatten().filter(|r| r.severity >= Severity::Warn));
        }
        assert!(raised.is_empty(), "{raised:?}");
        assert_eq!(d.held_out.name.as_deref(), Some("eval/accuracy"));
    }

    #[test]
    fn an_evaluations_accuracy_witnesses_hacking_before_the_reward_on_held_out_prompts() {
        // TRL's evaluation dict: the reward model's score on held-out prompts
        // climbs with the hack, the accuracy reward on them falls to a third.
        let falling = |i: usize| if i < 3_000 { 1.0 } else { 1.0 - 0.67 * ((i - 3_000) as f64 / 500.0).min(1.0) };
        let mut d = RewardHacking::new(defaults(AlertKind::RewardHacking));
        let mut rng = SplitMix64::new(9);
        let mut raised = Vec::new();
        for i in 0..5_000usize {
            let reward = 1.0 - 0.8 * (-(i as f64) / 300.0).exp() + 0.05 * (rng.unit() - 0.5);
            let mut values: Vec<(MetricName, f64)> = vec![(catalog::REWARD.into(), reward)];
            if i % 50 == 0 {
                values.push(("eval_reward".into(), reward + 0.02 * (rng.unit() - 0.5)));
                values.push(("eval_rewards/accuracy_reward/mean".into(), solved(256, 0.6 * falling(i), &mut rng)));
            }
            raised.extend(d.check_both(&Point { step: i as u64, time_s: 0.0, values: &values }).into_iter().flatten().filter(|r| r.severity >= Severity::Warn));
        }
        assert_eq!(d.held_out.name.as_deref(), Some("eval_rewards/accuracy_reward/mean"));
        assert!(raised.first().is_some_and(|r| r.step >= 3_000 && r.step < 4_200), "{raised:?}");
        assert_eq!(catalog::held_out_rank("eval_reward"), Some(3));
        assert_eq!(catalog::held_out_rank("eval/pass@1"), Some(1));
        assert_eq!(catalog::held_out_rank("eval/bleu"), Some(2));
        assert_eq!(catalog::held_out_rank("reward"), None);
    }

    /// Should not raise: the training reward and the held-out score dip
    /// together and climb back (a restart from an early checkpoint). The
    /// score's level and the reward's window follow the dip at their own
    /// speeds; judged over different spans, one side looked fallen while the
    /// other still held. Both are now read over the same evaluations.
    #[test]
    fn a_dip_of_the_reward_and_the_score_together_is_no_reward_hacking() {
        for (every, len) in [(1usize, 60usize), (5, 60), (5, 200), (25, 400)] {
            // The share of its rise both keep: 35% at the dip's bottom.
            let kept = move |i: usize| match i.checked_sub(3_000) {
                Some(d) if d < len / 5 => 1.0 - 0.65 * d as f64 / (len / 5) as f64,
                Some(d) if d < len => 0.35 + 0.65 * (d - len / 5) as f64 / (len - len / 5) as f64,
                _ => 1.0,
            };
            let rise = |i: usize| 1.0 - (-(i as f64) / 300.0).exp();
            let raised = held_out_run_with(6_000, "eval/accuracy", |i| 0.2 + 0.8 * rise(i) * kept(i), |i, rng| (i % every == 0).then(|| solved(500, 0.05 + 0.6 * rise(i) * kept(i), rng)));
            assert!(raised.is_empty(), "every {every}, dip of {len}: {raised:?}");
        }
    }

    /// Should raise: the evaluations are logged on points of their own (steps
    /// the training reward was not logged at), and judged against the reward
    /// before them.
    #[test]
    fn a_held_out_score_on_points_of_its_own_is_judged() {
        let mut rng = SplitMix64::new(5);
        let mut d = RewardHacking::new(defaults(AlertKind::RewardHacking));
        let mut raised = Vec::new();
        for i in 0..8_000u64 {
            let values: Vec<(MetricName, f64)> = if i % 10 == 5 {
                let p = if i < 5_000 { 0.6 } else { 0.15 };
                vec![("eval/accuracy".into(), solved(500, p, &mut rng))]
            } else {
                vec![(catalog::REWARD.into(), 1.0 - 0.8 * (-(i as f64) / 300.0).exp() + 0.05 * (rng.unit() - 0.5))]
            };
            raised.extend(d.check_both(&Point { step: i, time_s: 0.0, values: &values }).into_iter().flatten().filter(|r| r.severity >= Severity::Warn));
        }
        let first = raised.first().expect("a fall to a quarter is caught");
        assert!(first.step >= 5_000 && first.step < 6_000, "{first:?}");
    }

    /// Entropy "falls" for reward hacking: by a tenth of a positive level, by two
    /// standard errors of a level at or below zero (never by 0.9x a negative one).
    #[test]
    fn hack_signs_read_a_negative_entropy_by_its_change() {
        let falls = |e: fn(usize) -> f64| {
            let mut s = HackSigns::new(40);
            (0..40).for_each(|i| s.push(1.0 + i as f64, 100.0, Some(e(i)), None, None));
            // Every length growth graded, so the entropy's sign is always read.
            s.read(true, false, false, 0.0, f64::INFINITY).and_then(|r| r.entropy_falls)
        };
        assert_eq!(falls(|i| 2.0 - 0.03 * i as f64), Some(true));
        assert_eq!(falls(|_| 2.0), Some(false));
        assert_eq!(falls(|i| -1.0 + 0.01 * i as f64), Some(false), "a negative entropy rising");
        assert_eq!(falls(|i| -1.0 - 0.02 * i as f64), Some(true), "a negative entropy falling");
        assert_eq!(falls(|i| -1.0 + 0.002 * ((i as f64) * 1.3).sin()), Some(false), "a negative entropy steady");
    }

    #[test]
    fn reward_hacking_needs_the_whole_pattern() {
        let mut d = RewardHacking::new(defaults(AlertKind::RewardHacking));
        let alerts: Vec<_> = (0..400).filter_map(|i| d.check(&Point { step: i as u64, time_s: 0.0, values: &rl_point(i, Some(250)) }).map(|r| (i, r))).collect();
        assert!(!alerts.is_empty() && alerts[0].0 > 250 && alerts[0].0 < 300, "{alerts:?}");
        let mut d = RewardHacking::new(defaults(AlertKind::RewardHacking));
        assert!((0..400).all(|i| d.check(&Point { step: i as u64, time_s: 0.0, values: &rl_point(i, None) }).is_none()));
    }

    #[test]
    fn a_slow_hack_is_caught_over_the_longer_window() {
        // Length grows 0.3% a step: the halves of a 60-step window differ by 9% at
        // any time (under the 15% warn), the long scale's by up to 43% (over its 32%).
        let point = |i: usize| {
            let h = i.saturating_sub(300) as f64;
            let t = i as f64;
            let v: Vec<(MetricName, f64)> = vec![
                ("reward".into(), (0.5 + 0.001 * t + 0.004 * h) * wiggle(i)),
                ("response_len".into(), 100.0 * (0.003 * h).exp() * wiggle(i + 7)),
                ("entropy".into(), 2.0 * (-0.002 * h).exp() * wiggle(i + 3)),
            ];
            v
        };
        let mut d = RewardHacking::new(defaults(AlertKind::RewardHacking));
        let alerts: Vec<_> = (0..800).filter_map(|i| d.check(&Point { step: i as u64, time_s: 0.0, values: &point(i) }).map(|r| (i, r))).collect();
        assert!(alerts.first().is_some_and(|(i, r)| *i > 300 && *i < 650 && r.severity == Severity::Warn && r.message.contains("over 240 steps")), "{alerts:?}");
    }

    #[test]
    fn entropy_collapse_and_saturation() {
        let mut e = EntropyCollapse::new(defaults(AlertKind::EntropyCollapse));
        let mut s = RewardSaturation::new(defaults(AlertKind::RewardSaturation));
        let mut got = (None, None);
        for i in 0..400usize {
            let c = if i >= 200 { (-0.05 * (i - 200) as f64).exp() } else { 1.0 };
            let sat = i >= 300;
            let v: Vec<(MetricName, f64)> = vec![
                ("entropy".into(), 2.0 * c * wiggle(i)),
                ("reward".into(), if sat { 1.0 } else { 0.5 * wiggle(i) }),
                ("reward_std".into(), if sat { 0.005 } else { 0.3 * wiggle(i + 3) }),
            ];
            let p = Point { step: i as u64, time_s: 0.0, values: &v };
            if let Some(r) = e.check(&p) {
                got.0.get_or_insert((i, r));
            }
            if let Some(r) = s.check(&p) {
                got.1.get_or_insert((i, r));
            }
        }
        let (ei, _) = got.0.expect("entropy collapse");
        assert!(ei > 200 && ei < 240, "{ei}");
        let (si, _) = got.1.expect("saturation");
        assert!(si > 300 && si < 320, "{si}");
    }

    #[test]
    fn without_a_spread_logged_a_reward_that_levels_off_is_no_saturation() {
        // An episode return's running mean (Stable-Baselines3's ep_rew_mean):
        // climbs from -500 to -100 over 20 tables, then wanders with the same
        // noise, printed to 3 figures; and the same run pinned at its best.
        for (name, pinned, want) in [("levels off", false, false), ("pinned", true, true)] {
            let mut s = RewardSaturation::new(defaults(AlertKind::RewardSaturation));
            let raised = (0..300usize).any(|i| {
                // A running mean wanders slowly: small changes from step to step.
                let noise = 4.0 * (i as f64 * 0.3).sin() + 1.5 * (i as f64 * 1.1).cos();
                let r = if i < 20 { -500.0 + 20.0 * i as f64 + noise } else if pinned && i >= 150 { -90.0 } else { -100.0 + noise };
                let v: Vec<(MetricName, f64)> = vec![("reward".into(), r.round())];
                s.check(&Point { step: i as u64, time_s: 0.0, values: &v }).is_some_and(|a| a.severity >= Severity::Warn)
            });
            assert_eq!(raised, want, "{name}");
        }
    }

    #[test]
    fn a_collapse_that_persists_becomes_critical() {
        // (name, steps at a quarter of its level from step 200, worst severity)
        for (name, steps, want) in [("persists", 200usize, Severity::Critical), ("recovers", 30, Severity::Warn)] {
            let mut e = EntropyCollapse::new(defaults(AlertKind::EntropyCollapse));
            let alerts: Vec<Raised> = (0..500usize)
                .filter_map(|i| {
                    let level = if (200..200 + steps).contains(&i) { 0.25 } else { 1.0 };
                    let v: Vec<(MetricName, f64)> = vec![("entropy".into(), 2.0 * level * wiggle(i))];
                    e.check(&Point { step: i as u64, time_s: 0.0, values: &v })
                })
                .collect();
            assert_eq!(alerts.iter().map(|a| a.severity).max(), Some(want), "{name}: {alerts:?}");
            assert!(alerts.iter().filter(|a| a.escalated_at.is_none()).count() == 1, "{name}: {alerts:?}");
        }
    }

    #[test]
    fn the_running_median_is_the_median_of_every_value_so_far() {
        let mut m = RunningMedian::default();
        let mut all = Vec::new();
        let mut x = 0.37f64;
        for i in 0..500 {
            x = (x * 3.9 * (1.0 - x)).abs();
            let v = if i % 7 == 0 { 0.0 } else { (x * 100.0).round() / 10.0 };
            m.push(v);
            all.push(v);
            assert_eq!(m.median().map(f64::to_bits), crate::health::stats::median(&all).map(f64::to_bits), "after {} values", all.len());
        }
    }
}
