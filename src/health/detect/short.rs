//! Judgement of the first points of a run, before a kind's own detector has
//! left its warm-up. Real logs people paste or keep are often tens of points;
//! the full detectors need a trailing window to know the run's level, so on
//! such logs only what is unmistakable with few points is judged here:
//!
//! - a loss ([`Rule::Blowup`]) that has fallen from its first value and then
//!   sits, two points in a row, far above every earlier value (its first
//!   included): a divergence, critical since it is back above where it started;
//!   a loss with no fall to show yet (one earlier point) only when it sits
//!   several times above it for several points (and not in an RL run, whose
//!   loss is a policy objective);
//! - a gradient norm or KL ([`Rule::Outlier`]) hundreds of times the median of
//!   all its earlier points and ten times the highest of them: warn, critical
//!   when the next point is as far out (sustained) or when the point is
//!   thousands of times that median (a blow-up, even for one step); with fewer
//!   than [`OUTLIER_MIN_BEFORE`] earlier points, only once sustained. A
//!   gradient norm logged beside an RL run's policy loss of exactly 0 (every
//!   reward of the group tied) is the norm of no policy gradient: no level.
//!
//! Each judge hands over to the kind's own detector once that one has seen
//! enough points (its warm-up and persistence), and falls silent.
use super::{Point, Raised};
use crate::health::config::KindSettings;
use crate::health::{AlertKind, Peak, Severity};
use crate::metrics::catalog;
use crate::report::format::{compact, times};

/// A loss point counts as a blow-up when it is at least this many times the
/// highest earlier value. Per-batch noise of a healthy loss stays well below
/// its first value; a run that ends up half as high again as anything it has
/// logged, its start included, is broken.
pub const BLOWUP_OVER_MAX: f64 = 1.5;
/// Consecutive blown-up loss points before it is raised: one bad batch is not
/// a divergence.
pub const BLOWUP_POINTS: usize = 2;
/// Earlier loss points needed: a first value and one below it (it has fallen).
pub const BLOWUP_MIN_BEFORE: usize = 2;
/// A loss with no fall to show (one earlier point, or none below the first):
/// this many times its highest earlier value...
pub const BLOWUP_UNFALLEN_OVER: f64 = 4.0;
/// ...for this many points in a row (a fine-tune whose loss jumped from 1.7 to
/// 11.5 and stayed there, LitGPT #628). A warm-up's first rise is well under it.
pub const BLOWUP_UNFALLEN_POINTS: usize = 4;
/// A gradient norm or KL at least this many times the median of its earlier
/// points is an explosion even without a trailing window: healthy runs swing by
/// several times (LoRA-GA's grad norm 17-157), not by hundreds.
pub const OUTLIER_OVER_MEDIAN: f64 = 100.0;
/// An outlier this many times the median is critical at once: three orders of
/// magnitude over its level, a gradient step is wrecked unless clipping saves it
/// and even then one batch steers the update (a pre-clip grad norm of 11,140
/// after single digits, unsloth #5207); no healthy run swings that far.
pub const OUTLIER_CRITICAL_OVER_MEDIAN: f64 = 1000.0;
/// Earlier points the median needs before one outlying point is raised; with
/// fewer (down to one) an outlier must be sustained (Baselines #975: a PPO KL of
/// 0.017, then 1.8, 3.8, 4.3).
pub const OUTLIER_MIN_BEFORE: usize = 4;
/// An outlier is also this many times the highest earlier point: a metric that
/// already swung that far (a GRPO grad norm, 0.0005 on most steps and 0.1 on
/// steps with a rewarded completion) is not blowing up by swinging again.
pub const OUTLIER_OVER_MAX: f64 = 10.0;

/// Points in a row that make an outlier sustained (critical).
pub const OUTLIER_SUSTAINED: usize = 2;

/// What a judge looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    Blowup,
    Outlier,
}

impl Rule {
    /// The fewest points of a metric on which the rule can raise anything.
    pub fn min_points(self) -> usize {
        match self {
            Rule::Blowup => (BLOWUP_MIN_BEFORE + BLOWUP_POINTS).min(1 + BLOWUP_UNFALLEN_POINTS),
            Rule::Outlier => 1 + OUTLIER_SUSTAINED,
        }
    }

    /// What a short run is still judged for, for `rlmon check`'s "not judged".
    pub fn covers(self) -> &'static str {
        match self {
            Rule::Blowup => "judged only for a loss far above every earlier value",
            Rule::Outlier => "judged only for a value hundreds of times its earlier median",
        }
    }
}

/// The short-run rule that stands in for `kind`'s detector during its warm-up.
pub fn rule_for(kind: AlertKind) -> Option<Rule> {
    match kind {
        AlertKind::LossDivergence => Some(Rule::Blowup),
        AlertKind::GradExplosion | AlertKind::KlSpike => Some(Rule::Outlier),
        _ => None,
    }
}

/// One kind's judge of a run's first points.
#[derive(Debug, Clone)]
pub struct ShortJudge {
    kind: AlertKind,
    rule: Rule,
    metric: String,
    watched: super::Watched,
    /// Points of the metric judged here; afterwards the kind's own detector judges.
    span: usize,
    points: usize,
    /// Finite values before the anomalous streak under way (at most `span`).
    before: Vec<f64>,
    /// The streak under way: its first step and value, its worst point, length.
    streak: Option<(u64, f64, Peak, usize)>,
    /// The streak's values, which join `before` if it ends unraised.
    streak_values: Vec<f64>,
    /// The severity raised for the event, if any (one event per run).
    raised: Option<Severity>,
    /// The run logs a KL or a reward: its loss is a policy objective.
    rl_run: bool,
    role: super::LossRoleSeen,
    done: bool,
}

impl ShortJudge {
    /// A judge for `kind` when it has a short-run rule and a metric.
    pub fn new(kind: AlertKind, s: &KindSettings) -> Option<Self> {
        let rule = rule_for(kind)?;
        let metric = s.metric.clone()?;
        let span = s.warmup as usize + s.persistence.max(1) as usize;
        Some(ShortJudge { kind, rule, watched: super::Watched::new(&metric), metric, span, points: 0, before: Vec::new(), streak: None, streak_values: Vec::new(), raised: None, rl_run: false, role: Default::default(), done: false })
    }

    /// Whether the loss has fallen from its first value (a blow-up is then
    /// judged against [`BLOWUP_OVER_MAX`], else the stricter unfallen bar).
    fn fallen(&self) -> bool {
        let b = &self.before;
        b.len() >= BLOWUP_MIN_BEFORE && b[1..].iter().any(|x| *x < b[0])
    }

    /// Whether `v` is anomalous against the earlier points, or `None` when those
    /// cannot tell (too few, not a positive metric, an RL run's loss).
    fn anomalous(&self, v: f64) -> Option<bool> {
        let b = &self.before;
        let highest = b.iter().copied().fold(f64::MIN, f64::max);
        match self.rule {
            Rule::Blowup => {
                if b.is_empty() || b.iter().any(|x| *x <= 0.0) || catalog::is_signed(&self.metric) {
                    return None;
                }
                if self.fallen() {
                    Some(v >= BLOWUP_OVER_MAX * highest)
                } else if !self.rl_run {
                    Some(v >= BLOWUP_UNFALLEN_OVER * highest)
                } else {
                    None
                }
            }
            Rule::Outlier => {
                let reference = self.reference()?;
                Some(v >= OUTLIER_OVER_MEDIAN * reference && v >= OUTLIER_OVER_MAX * highest)
            }
        }
    }

    /// Points in a row the streak needs before it is raised, and whether it is
    /// then critical at once.
    fn needed(&self) -> (usize, bool) {
        match self.rule {
            Rule::Blowup if self.fallen() => (BLOWUP_POINTS, true),
            Rule::Blowup => (BLOWUP_UNFALLEN_POINTS, true),
            Rule::Outlier if self.before.len() >= OUTLIER_MIN_BEFORE => (1, false),
            Rule::Outlier => (OUTLIER_SUSTAINED, true),
        }
    }

    /// The level an outlier is measured against: the median of the earlier
    /// points; `None` when it is not positive, or for a KL when it is not above
    /// the KL floor.
    fn reference(&self) -> Option<f64> {
        if self.before.is_empty() {
            return None;
        }
        // A KL to a reference policy starts at exactly zero (the policy is the
        // reference) and its estimate may dip below: earlier points at or under
        // the floor are no level yet, and its growth to its working level is
        // no multiple of one.
        let floor = if self.kind == AlertKind::KlSpike { super::KL_FLOOR } else { 0.0 };
        let reference = median(&self.before);
        (reference > floor).then_some(reference)
    }

    pub fn check(&mut self, p: &Point) -> Option<Raised> {
        if self.done {
            return None;
        }
        let v = self.watched.read(p, &mut self.metric)?;
        self.rl_run = self.rl_run || p.get(catalog::KL).is_some() || p.get(catalog::REWARD).is_some();
        // A policy objective is no loss to blow up (the catalog's roles).
        if self.rule == Rule::Blowup && v.is_finite() && self.role.objective(p, &self.metric) {
            return None;
        }
        self.points += 1;
        if self.points > self.span {
            self.done = true;
            return None;
        }
        // NaN has its own detector; it tells nothing about the level.
        if !v.is_finite() {
            return None;
        }
        // A gradient norm beside a policy loss of exactly 0 (a GRPO step whose
        // group's rewards all tied: no policy gradient) is no level of it.
        if self.kind == AlertKind::GradExplosion && super::no_policy_gradient(p, self.rl_run) {
            return None;
        }
        if self.anomalous(v) != Some(true) {
            // The event, if raised, is over; a streak that did not persist joins
            // the earlier points (a recovered bump raises the bar, conservatively).
            if self.raised.is_some() {
                self.done = true;
                return None;
            }
            self.streak = None;
            self.before.append(&mut self.streak_values);
            self.before.push(v);
            return None;
        }
        let (onset_step, onset, peak, len) = self.streak.get_or_insert((p.step, v, Peak { step: p.step, value: v }, 0));
        *len += 1;
        self.streak_values.push(v);
        if v > peak.value {
            *peak = Peak { step: p.step, value: v };
        }
        let (onset_step, onset, peak, len) = (*onset_step, *onset, *peak, *len);
        let (needed, critical_at_once) = self.needed();
        if len < needed {
            return None;
        }
        let blown_up = self.rule == Rule::Outlier && self.reference().is_some_and(|r| peak.value >= OUTLIER_CRITICAL_OVER_MEDIAN * r);
        let severity = if critical_at_once || len >= OUTLIER_SUSTAINED || blown_up { Severity::Critical } else { Severity::Warn };
        if self.raised.is_some_and(|r| r >= severity) {
            return None;
        }
        let escalated_at = self.raised.map(|_| p.step);
        self.raised = Some(severity);
        let message = match self.rule {
            Rule::Blowup if self.fallen() => format!(
                "{} diverged: {} at step {onset_step}, {} the highest of its {} and above its first ({}), peak {} at step {}",
                self.metric,
                compact(onset),
                times(onset / self.before.iter().copied().fold(f64::MIN, f64::max)),
                earlier_points(self.before.len()),
                compact(self.before[0]),
                compact(peak.value),
                peak.step
            ),
            Rule::Blowup => format!(
                "{} diverged: {} at step {onset_step}, {} the highest of its {} ({}) and {len} points in a row that far up, peak {} at step {}",
                self.metric,
                compact(onset),
                times(onset / self.before.iter().copied().fold(f64::MIN, f64::max)),
                earlier_points(self.before.len()),
                compact(self.before.iter().copied().fold(f64::MIN, f64::max)),
                compact(peak.value),
                peak.step
            ),
            Rule::Outlier => format!(
                "{} exploded: {} at step {onset_step}, {} the median of its {}{}",
                self.metric,
                compact(onset),
                times(onset / median(&self.before)),
                earlier_points(self.before.len()),
                if len > 1 { format!(", {len} points in a row") } else { String::new() }
            ),
        };
        let message = message + &self.watched.note(&self.metric);
        Some(super::Watched::as_logged(Raised { severity, metric: self.metric.clone(), step: onset_step, value: onset, message, peak: Some(peak), escalated_at }))
    }
}

impl super::Detector for ShortJudge {
    fn kind(&self) -> AlertKind {
        self.kind
    }

    fn observe_into(&mut self, p: &Point, out: &mut Vec<Raised>) {
        out.extend(self.check(p));
    }
}

fn earlier_points(n: usize) -> String {
    if n == 1 { "1 earlier point".into() } else { format!("{n} earlier points") }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::config::defaults;
    use crate::metrics::MetricName;

    /// Every alert the judge of `kind` raises on `series` (steps 1, 2, ...).
    fn judge(kind: AlertKind, series: &[f64]) -> Vec<Raised> {
        let s = defaults(kind);
        let metric = s.metric.clone().unwrap();
        let mut j = ShortJudge::new(kind, &s).unwrap();
        let mut out = Vec::new();
        for (i, v) in series.iter().enumerate() {
            let values: Vec<(MetricName, f64)> = vec![(metric.clone().into(), *v)];
            out.extend(j.check(&Point { step: i as u64 + 1, time_s: 0.0, values: &values }));
        }
        out
    }

    #[test]
    fn a_short_loss_that_blows_up_is_a_critical_divergence() {
        // (series, what is raised: (step, value, peak step) of a critical alert)
        let table: &[(&[f64], Option<(u64, f64, u64)>)] = &[
            // MLX LoRA (mlx-examples #620): fell, then far above everything, twice.
            (&[1.593, 1.406, 3.316, 6.437, 5.478, 4.857], Some((3, 3.316, 4))),
            (&[2.0, 1.8, 1.7, 1.6, 3.1, 3.5, 4.0], Some((5, 3.1, 6))),
            // One bad batch that recovers: not a divergence.
            (&[2.0, 1.8, 1.7, 4.0, 1.6, 1.5, 1.5], None),
            // Above its recent values but not above its start.
            (&[7.6, 6.6, 6.8, 6.4, 6.8, 5.8, 5.9, 5.5, 4.3, 5.7, 4.9], None),
            (&[4.0, 2.0, 1.0, 0.5, 0.9, 0.95, 1.2], None),
            // A loss that never fell: nothing to compare with.
            (&[1.0, 1.2, 2.0, 3.1, 5.0], None),
            // Too few points before the rise.
            (&[1.0, 3.0, 4.0], None),
            // Quantised tiny losses (0.0001 to 0.0004) stay below the first value.
            (&[0.30, 0.05, 0.001, 0.0001, 0.0004, 0.0003, 0.0001, 0.0004], None),
            // Signed values are not judged by ratios.
            (&[0.5, -0.2, 0.1, 2.0, 3.0], None),
            // LitGPT #628: one point, then 6.7x it for eight points: no fall to
            // show, but far too high for too long.
            (&[1.7019, 11.463, 11.7545, 11.5019, 11.4807, 12.1935, 10.022], Some((2, 11.463, 3))),
            // Twice the first value during a warm-up, or 5x for three points only.
            (&[1.0, 2.0, 2.1, 2.2, 2.0, 1.9], None),
            (&[1.0, 5.0, 5.2, 5.1, 1.0, 0.9], None),
        ];
        for (series, want) in table {
            let got = judge(AlertKind::LossDivergence, series);
            match want {
                None => assert!(got.is_empty(), "{series:?}: {got:?}"),
                Some((step, value, peak)) => {
                    assert_eq!(got.len(), 1, "{series:?}: {got:?}");
                    let r = &got[0];
                    assert_eq!((r.severity, r.step, r.value, r.peak.unwrap().step), (Severity::Critical, *step, *value, *peak), "{series:?}: {r:?}");
                    assert!(r.message.contains(&compact(*value)), "{r:?}");
                }
            }
        }
    }

    #[test]
    fn a_gradient_hundreds_of_times_its_median_is_an_explosion() {
        // (kind, series, severities raised, step of the alert)
        let table: &[(AlertKind, &[f64], &[Severity], u64)] = &[
            // Unsloth #5207: grad norm ~10, then 11,140 at the 9th point: over a
            // thousand times its median, a blow-up at once.
            (AlertKind::GradExplosion, &[14.98, 9.78, 7.64, 92.1, 29.0, 5.21, 7.83, 7.79, 11140.0], &[Severity::Critical], 9),
            // Hundreds of times for one point: a warning only.
            (AlertKind::GradExplosion, &[1.0, 1.2, 0.9, 1.1, 999.0, 1.0], &[Severity::Warn], 5),
            (AlertKind::GradExplosion, &[1.0, 1.2, 0.9, 1.1, 1100.0, 1.0], &[Severity::Critical], 5),
            // Sustained: raised again as critical (the same event, escalated).
            (AlertKind::GradExplosion, &[1.0, 1.2, 0.9, 1.1, 500.0, 800.0, 1.0], &[Severity::Warn, Severity::Critical], 5),
            // LoRA-GA: swings of 17-157 are healthy.
            (AlertKind::GradExplosion, &[65.9, 19.1, 16.7, 59.1, 54.7, 154.3, 49.7, 96.2, 92.8, 88.2, 88.1, 86.5, 42.9], &[], 0),
            // Too few earlier points for one point to tell.
            (AlertKind::GradExplosion, &[1.0, 1.0, 1.0, 5000.0], &[], 0),
            // Baselines #975: a PPO KL of 0.017, then 1.8 and on up: with one
            // earlier point, an outlier that holds is critical.
            (AlertKind::KlSpike, &[0.01685, 1.75743, 3.79148, 4.34279], &[Severity::Critical], 2),
            (AlertKind::KlSpike, &[0.01685, 1.75743, 0.02, 0.03], &[], 0),
            // Nothing earlier to compare with (TRL PPO's KL of 11 from its first log).
            (AlertKind::KlSpike, &[10.95, 11.2, 11.0], &[], 0),
            // A GRPO grad norm (grpo-redteam): 0.0005 on most steps, 0.1 on steps
            // with a rewarded completion; 100x its median again is no explosion.
            (AlertKind::GradExplosion, &[0.0696, 0.1102, 0.00052, 0.00073, 0.00069, 0.00087, 0.0006, 0.00114, 0.0846, 0.0954, 0.0838], &[], 0),
            // KL from zero: its floor keeps early growth from looking infinite.
            (AlertKind::KlSpike, &[0.0, 0.0001, 0.0002, 0.0004, 0.003, 0.01, 0.02], &[], 0),
            // A KL leaving zero (the policy was the reference) for its working
            // level has no earlier level to be a multiple of: PPO's KL of 0 at
            // its first step and 2.1 at its second (workloads/rlhf.toml).
            (AlertKind::KlSpike, &[0.0, 0.0, -0.001, 0.0, 0.002, 0.05, 3.0], &[], 0),
            (AlertKind::KlSpike, &[0.0, 2.1, 3.9, 5.2, 6.1, 5.8], &[], 0),
            (AlertKind::KlSpike, &[0.0, 0.004, 0.008, 0.009, 0.006, 2.5, 3.0], &[], 0),
            // A gradient that was zero has no level to be hundreds of times.
            (AlertKind::GradExplosion, &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0], &[], 0),
            (AlertKind::KlSpike, &[0.01, 0.012, 0.011, 0.013, 0.012, 2.5], &[Severity::Warn], 6),
        ];
        for (kind, series, want, step) in table {
            let got = judge(*kind, series);
            let sev: Vec<Severity> = got.iter().map(|r| r.severity).collect();
            assert_eq!(&sev, want, "{kind:?} {series:?}: {got:?}");
            assert!(got.iter().all(|r| r.step == *step && r.value == series[*step as usize - 1]), "{got:?}");
            assert!(got.iter().skip(1).all(|r| r.escalated_at.is_some()), "{got:?}");
            // No message holds a number no one can read (a ratio over zero).
            assert!(got.iter().all(|r| r.message.len() < 160), "{got:?}");
        }
    }

    #[test]
    fn an_rl_runs_loss_is_not_judged_for_a_blow_up_without_a_fall() {
        // A GRPO loss (beta times the KL) grows many times its first value.
        let s = defaults(AlertKind::LossDivergence);
        let mut j = ShortJudge::new(AlertKind::LossDivergence, &s).unwrap();
        let raised: Vec<Raised> = [0.0002, 0.001, 0.0015, 0.002, 0.0022, 0.0025]
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let values: Vec<(MetricName, f64)> = vec![(catalog::LOSS.into(), *v), (catalog::KL.into(), v * 25.0)];
                j.check(&Point { step: i as u64 + 1, time_s: 0.0, values: &values })
            })
            .collect();
        assert!(raised.is_empty(), "{raised:?}");
        // The same numbers without a KL: a loss that jumped and stays up.
        assert_eq!(judge(AlertKind::LossDivergence, &[0.0002, 0.001, 0.0015, 0.002, 0.0022, 0.0025]).len(), 1);
    }

    #[test]
    fn a_grad_norm_beside_a_zero_policy_loss_is_no_level() {
        // A GRPO run's first steps: every group's rewards tied (loss exactly 0,
        // grad norm 1e-4), then a step with a rewarded completion (loss signed,
        // grad norm 0.3): no explosion. Without the zero losses, or without a
        // KL or reward (no RL run), the same norms are one.
        let norms = [1.2e-4, 0.9e-4, 1.1e-4, 1.0e-4, 0.8e-4, 0.3, 0.25, 1.0e-4];
        let raised = |rl: bool, zero: bool| -> Vec<Raised> {
            let s = defaults(AlertKind::GradExplosion);
            let mut j = ShortJudge::new(AlertKind::GradExplosion, &s).unwrap();
            norms
                .iter()
                .enumerate()
                .filter_map(|(i, g)| {
                    let loss = if *g < 1e-3 && zero { 0.0 } else { 0.02 - 0.01 * i as f64 };
                    let mut values: Vec<(MetricName, f64)> = vec![(catalog::LOSS.into(), loss), (catalog::GRAD_NORM.into(), *g)];
                    if rl {
                        values.push((catalog::REWARD.into(), 0.1 * i as f64));
                    }
                    j.check(&Point { step: i as u64 + 1, time_s: 0.0, values: &values })
                })
                .collect()
        };
        assert!(raised(true, true).is_empty(), "{:?}", raised(true, true));
        assert_eq!(raised(true, false).first().map(|r| r.step), Some(6));
        assert_eq!(raised(false, true).first().map(|r| r.step), Some(6));
    }

    #[test]
    fn it_hands_over_after_the_warm_up() {
        let span = {
            let s = defaults(AlertKind::GradExplosion);
            (s.warmup + s.persistence) as usize
        };
        let mut series = vec![1.0; span];
        series.push(1e6);
        assert!(judge(AlertKind::GradExplosion, &series).is_empty());
    }
}
