//! An alert's context: which other metrics of its run moved in the steps around it,
//! ranked by how far each left its own recent range. This is what turns "loss
//! spiked" into "loss spiked; lr x40, grad_norm x12 around it".
//!
//! For each metric, the points just before the alert (the `before` window) give its
//! usual level and spread (median and MAD, robust to the odd outlier); the points
//! around the alert's step (the `around` window) are compared with them, and the
//! one that strays furthest is the metric's move, as a robust z-score. A metric held
//! at one value across both windows (a coefficient set to 0 a while ago) counts as
//! moved when that value differs from its level before it was set: it was changed,
//! just earlier. Summaries the hub derives from other metrics (MoE balance, CV, ...)
//! restate their inputs and are left out, except as the alert's own metric.
//! Pure: series in, ranking out.
use std::collections::BTreeMap;

use serde::Serialize;

use super::stats::median_mad;
use crate::metrics::catalog::{self, SeriesKind};
use crate::metrics::Series;

/// How wide the windows are and how much is kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextSettings {
    /// Points on each side of the alert's step that count as "around" it.
    pub around: usize,
    /// Points before the around window that give a metric's usual range.
    pub before: usize,
    /// Points on each side of the alert's step kept for sparklines.
    pub slice: usize,
    /// How many moved metrics are kept.
    pub top: usize,
    /// The robust z-score from which a metric counts as moved.
    pub min_z: f64,
}

impl Default for ContextSettings {
    fn default() -> Self {
        ContextSettings { around: 3, before: 50, slice: 12, top: 5, min_z: 4.0 }
    }
}

/// Scores are capped here, so that among metrics that all clearly left their range
/// the size of the change (its factor) decides, not the quietness of the baseline.
const Z_CAP: f64 = 50.0;
/// How much a tenfold change adds to the capped z-score when ranking.
const FACTOR_WEIGHT: f64 = 10.0;
/// The spread below which a baseline counts as constant, relative to its level.
const REL_SPREAD_FLOOR: f64 = 0.01;
/// The same for a baseline at zero.
const ABS_SPREAD_FLOOR: f64 = 1e-12;
/// Fewest points a baseline needs.
const MIN_BASELINE: usize = 3;
/// A change to zero is ranked as this factor (its log is otherwise infinite). A
/// change from zero has no factor: its z-score alone ranks it.
const ZERO_FACTOR: f64 = 1e3;
/// How much each doubling of a family's moved members (every expert's load, every
/// layer's dropped fraction) adds: a movement many metrics share is stronger
/// evidence than one metric's, and the family takes one row, not the whole list.
const BREADTH_WEIGHT: f64 = 5.0;

/// How a metric changed: a factor for positive metrics, a z-score where a ratio
/// means nothing (zero crossings, signed metrics), or a value turned non-finite.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Factor(f64),
    Z(f64),
    NonFinite,
}

use crate::report::format::RATIO_CAP;

impl Change {
    /// Short form: `x40`, `x1.5`, `÷50`, `→0`, `z 12`, `NaN`.
    pub fn label(self) -> String {
        match self {
            Change::Factor(f) if f == 0.0 => "→0".into(),
            // Capped as every alert number is (`report::format::times`): a factor
            // over a base near zero is no number to read.
            Change::Factor(f) if f > RATIO_CAP => format!("x>{RATIO_CAP:.0}"),
            Change::Factor(f) if f >= 10.0 => format!("x{f:.0}"),
            Change::Factor(f) if f >= 0.1 => format!("x{f:.1}"),
            Change::Factor(f) if f > 0.0 && 1.0 / f > RATIO_CAP => format!("÷>{RATIO_CAP:.0}"),
            Change::Factor(f) if f > 0.0 => format!("÷{:.0}", 1.0 / f),
            Change::Factor(f) => format!("x{}", crate::report::format::compact(f)),
            Change::Z(z) if z.abs() > RATIO_CAP => format!("z {}", crate::report::format::sigmas(z)),
            Change::Z(z) => format!("z {z:.0}"),
            Change::NonFinite => "NaN".into(),
        }
    }
}

/// One metric's move around the alert.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moved {
    pub metric: String,
    /// Its usual level: the median of the before window (or, for a held value,
    /// its level before it was set).
    #[serde(serialize_with = "finite_or_null")]
    pub before: f64,
    /// The value around the alert that strays furthest from `before`.
    #[serde(serialize_with = "finite_or_null")]
    pub around: f64,
    pub change: Change,
    /// Robust z-score of `around` against the before window (capped).
    pub z: f64,
    /// For a metric held at one value: the step it was set to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_since: Option<u64>,
    /// Other metrics of its family (the same catalog pattern: other experts' loads,
    /// other layers) that moved too, folded into this row.
    #[serde(skip_serializing_if = "is_zero")]
    pub alike: usize,
    /// Ranking score: capped z plus the size of the change.
    #[serde(skip)]
    pub score: f64,
    /// Its values at the context's `columns` (None: no point there), for sparklines.
    #[serde(skip)]
    pub slice: Vec<Option<f64>>,
}

impl Moved {
    /// `lr x40`, `kl_coef →0`, `moe/L1/load/E1 x4.0 +15` (15 alike).
    pub fn short(&self) -> String {
        match self.alike {
            0 => format!("{} {}", self.metric, self.change.label()),
            n => format!("{} {} +{n}", self.metric, self.change.label()),
        }
    }
}

/// The context of one alert.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlertContext {
    /// The steps the slices are taken at, centred on the alert's step.
    pub columns: Vec<u64>,
    /// Where the alert's step is in `columns`.
    pub centre: usize,
    /// The alert's own metric (when the run stores it), whether or not it moved.
    pub subject: Option<Moved>,
    /// The other metrics that moved, most first (at most `top`).
    pub moved: Vec<Moved>,
}

impl AlertContext {
    /// The headless line's suffix: `moved: lr x40, grad_norm x12` (up to three), or
    /// nothing when no other metric moved.
    pub fn suffix(&self) -> Option<String> {
        (!self.moved.is_empty()).then(|| format!("moved: {}", self.moved.iter().take(3).map(Moved::short).collect::<Vec<_>>().join(", ")))
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn finite_or_null<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_f64(*v)
    } else {
        s.serialize_none()
    }
}

/// The context of an alert on `metric` at `step` in a run with these series.
pub fn context(series: &BTreeMap<String, Series>, metric: &str, step: u64, settings: &ContextSettings) -> AlertContext {
    let subject = series.get(metric).and_then(|s| measure(metric, s, step, settings));
    let mut moved: Vec<Moved> = series
        .iter()
        .filter(|(name, _)| name.as_str() != metric && !is_derived(name))
        .filter_map(|(name, s)| measure(name, s, step, settings))
        .filter(|m| m.z >= settings.min_z || m.change == Change::NonFinite)
        .collect();
    let by_score = |a: &Moved, b: &Moved| b.score.total_cmp(&a.score).then_with(|| a.metric.cmp(&b.metric));
    moved.sort_by(by_score);
    let mut moved = fold_families(moved);
    moved.sort_by(by_score);
    moved.truncate(settings.top);
    // Sparkline columns: the steps of the alert's metric around its step, else of the
    // metric that moved most, else of any series with points there.
    let grid = series
        .get(metric)
        .filter(|s| !s.is_empty())
        .or_else(|| moved.first().and_then(|m| series.get(&m.metric)))
        .or_else(|| series.values().max_by_key(|s| s.len()));
    let (columns, centre) = grid.map_or((Vec::new(), 0), |s| columns_around(s, step, settings.slice));
    let fill = |m: &mut Moved| {
        if let Some(s) = series.get(&m.metric) {
            m.slice = columns.iter().map(|c| s.index_of(*c).and_then(|i| s.value_at(i))).collect();
        }
    };
    let mut subject = subject;
    if let Some(m) = subject.as_mut() {
        fill(m);
    }
    moved.iter_mut().for_each(fill);
    AlertContext { columns, centre, subject, moved }
}

/// Keeps the strongest mover of each family (ranked first in `moved`), counting
/// the others into it and adding to its score for the breadth of the movement.
fn fold_families(moved: Vec<Moved>) -> Vec<Moved> {
    let mut kept: Vec<(String, Moved)> = Vec::new();
    for m in moved {
        let family = family(&m.metric).to_owned();
        match kept.iter_mut().find(|(f, _)| *f == family) {
            Some((_, first)) => first.alike += 1,
            None => kept.push((family, m)),
        }
    }
    kept.into_iter()
        .map(|(_, mut m)| {
            m.score += BREADTH_WEIGHT * (1.0 + m.alike as f64).log2();
            m
        })
        .collect()
}

/// A metric's family: its catalog pattern when it has dimensions (`moe/L{l}/load/E{e}`).
fn family(name: &str) -> &str {
    match catalog::info(name) {
        Some(m) if m.pattern.contains('{') => m.pattern,
        _ => name,
    }
}

/// Derived summaries restate the metrics they are computed from.
fn is_derived(name: &str) -> bool {
    catalog::info(name).is_some_and(|m| matches!(m.kind, SeriesKind::Derived | SeriesKind::DerivedStored))
}

/// Up to `half` steps of `s` on each side of `step`, and the index of the first at
/// or after it.
fn columns_around(s: &Series, step: u64, half: usize) -> (Vec<u64>, usize) {
    let at = s.first_at_or_after(step);
    let from = at.saturating_sub(half);
    let to = (at + half + 1).min(s.len());
    (s.steps(from..to).into_owned(), at - from)
}

/// Median and a spread floored so that a constant baseline still gives a finite z.
fn level_and_spread(values: &[f64]) -> Option<(f64, f64)> {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if finite.len() < MIN_BASELINE {
        return None;
    }
    let (m, mad) = median_mad(&finite)?;
    let mad = 1.4826 * mad;
    Some((m, mad.max(REL_SPREAD_FLOOR * m.abs()).max(ABS_SPREAD_FLOOR)))
}

/// The change from `before` to `around`: a factor when both are on the same side of
/// zero and the metric is not signed, else the z-score.
fn change(name: &str, before: f64, around: f64, z: f64) -> (Change, f64) {
    if !around.is_finite() {
        return (Change::NonFinite, ZERO_FACTOR.log10());
    }
    let same_side = before != 0.0 && around.signum() == before.signum();
    if !catalog::is_signed(name) && (same_side || around == 0.0) && before != 0.0 {
        let factor = around / before;
        let size = if factor == 0.0 { ZERO_FACTOR.log10() } else { factor.abs().log10().abs().min(ZERO_FACTOR.log10()) };
        return (Change::Factor(factor), size);
    }
    (Change::Z(z.min(Z_CAP)), 0.0)
}

/// One metric's move around `step`, or None when it has too little data there.
fn measure(name: &str, s: &Series, step: u64, settings: &ContextSettings) -> Option<Moved> {
    let at = s.first_at_or_after(step);
    // No point at or near the step: the metric says nothing about it.
    let around_from = at.saturating_sub(settings.around);
    let around_to = (at + settings.around + 1).min(s.len());
    if around_from >= around_to {
        return None;
    }
    let before_from = around_from.saturating_sub(settings.before);
    let (level, spread) = level_and_spread(&s.values(before_from..around_from))?;
    let around = s.values(around_from..around_to);
    let (worst, z) = around
        .iter()
        .map(|v| (*v, if v.is_finite() { (v - level).abs() / spread } else { f64::INFINITY }))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (mut before, mut around_value, mut z, mut held_since) = (level, worst, z, None);
    if z < settings.min_z {
        // Held at one value across both windows: compare with its level before it was set.
        if let Some((earlier, since, held_z)) = held_change(s, before_from, around_to) {
            (before, around_value, z, held_since) = (earlier, s.value_at(around_from)?, held_z, Some(since));
        }
    }
    let (change, size) = change(name, before, around_value, z);
    let z = z.min(Z_CAP);
    Some(Moved { metric: name.to_owned(), before, around: around_value, change, z, held_since, alike: 0, score: z + FACTOR_WEIGHT * size, slice: Vec::new() })
}

/// For a series constant from index `from` to `to` (exclusive): the step where it
/// took that value, its level before then, and the z-score of the change against
/// that earlier level. None when it was never different.
fn held_change(s: &Series, from: usize, to: usize) -> Option<(f64, u64, f64)> {
    let held = s.value_at(to.checked_sub(1)?)?;
    let same = |v: f64| v == held || (v - held).abs() <= REL_SPREAD_FLOOR * held.abs().max(ABS_SPREAD_FLOOR);
    if !held.is_finite() || !s.values(from..to).iter().all(|v| same(*v)) {
        return None;
    }
    let set_at = s.values(0..to).iter().rposition(|v| !same(*v))? + 1;
    let earlier_from = set_at.saturating_sub(ContextSettings::default().before);
    let (earlier, spread) = level_and_spread(&s.values(earlier_from..set_at))?;
    Some((earlier, s.step_at(set_at)?, (held - earlier).abs() / spread))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(values: impl IntoIterator<Item = f64>) -> Series {
        let mut s = Series::default();
        for (i, v) in values.into_iter().enumerate() {
            s.push(i as u64 + 1, i as f64, v);
        }
        s
    }

    /// A little deterministic noise around 1.
    fn wobble(i: usize) -> f64 {
        1.0 + 0.02 * ((i as f64) * 1.7).sin()
    }

    fn run(metrics: &[(&str, Series)]) -> BTreeMap<String, Series> {
        metrics.iter().map(|(n, s)| ((*n).to_owned(), s.clone())).collect()
    }

    #[test]
    fn the_metric_that_left_its_range_most_ranks_first() {
        // Steps 1..=200; at step 150 lr jumps 40x for 3 steps, grad norm 5x, loss 2x.
        let at = |i: usize| (150..153).contains(&(i + 1));
        let lr = series((0..200).map(|i| if at(i) { 40e-3 } else { 1e-3 * wobble(i) }));
        let grad = series((0..200).map(|i| if at(i) { 5.0 } else { wobble(i + 3) }));
        let loss = series((0..200).map(|i| if at(i) { 6.0 } else { 3.0 * wobble(i + 7) }));
        let tokens = series((0..200).map(|_| 1024.0));
        let step_time = series((0..200).map(|i| 0.1 * wobble(i + 11)));
        let s = run(&[(catalog::LR, lr), (catalog::GRAD_NORM, grad), (catalog::LOSS, loss), (catalog::TOKENS, tokens), (catalog::STEP_TIME_S, step_time)]);
        let c = context(&s, catalog::LOSS, 150, &ContextSettings::default());
        let names: Vec<&str> = c.moved.iter().map(|m| m.metric.as_str()).collect();
        assert_eq!(names, vec![catalog::LR, catalog::GRAD_NORM], "tokens and step time did not move");
        let lr = &c.moved[0];
        assert!(matches!(lr.change, Change::Factor(f) if (f - 40.0).abs() < 2.0), "{lr:?}");
        assert_eq!(lr.change.label(), "x40");
        assert_eq!(c.subject.as_ref().unwrap().metric, catalog::LOSS);
        assert_eq!(c.suffix().unwrap(), "moved: lr x40, grad_norm x5.0");
        // Slices: aligned on the same columns, centred on the step.
        assert_eq!(c.columns.len(), 25);
        assert_eq!(c.columns[c.centre], 150);
        assert!(c.moved.iter().all(|m| m.slice.len() == 25));
        assert_eq!(lr.slice[c.centre], Some(40e-3));
    }

    #[test]
    fn a_value_held_since_an_earlier_change_counts_as_moved() {
        // kl_coef 0.5 until step 100, 0 after; the alert is at step 160. KL climbs.
        let coef = series((0..200).map(|i| if i + 1 < 100 { 0.5 } else { 0.0 }));
        let kl = series((0..200).map(|i| if i + 1 < 100 { 0.01 * wobble(i) } else { 0.01 * 1.04f64.powi(i as i32 - 98) }));
        let entropy = series((0..200).map(|i| 2.0 * wobble(i)));
        let s = run(&[(catalog::KL_COEF, coef), (catalog::KL, kl), (catalog::ENTROPY, entropy)]);
        let c = context(&s, catalog::KL, 160, &ContextSettings::default());
        let coef = c.moved.iter().find(|m| m.metric == catalog::KL_COEF).expect("kl_coef moved");
        assert_eq!((coef.before, coef.around, coef.held_since), (0.5, 0.0, Some(100)));
        assert_eq!(coef.change.label(), "→0");
        assert_eq!(c.moved[0].metric, catalog::KL_COEF);
        assert!(c.moved.iter().all(|m| m.metric != catalog::ENTROPY), "{:?}", c.moved);
    }

    #[test]
    fn constants_zero_crossings_gaps_and_bad_values_do_not_break_it() {
        // A constant that stays constant: not moved.
        let flat = series((0..100).map(|_| 7.0));
        // A signed metric crossing zero: a z-score, not a factor.
        let signed = series((0..100).map(|i| if i + 1 == 60 { -3.0 } else { 0.1 * ((i as f64) * 0.9).sin() }));
        // Too short to have a baseline, and one with a NaN at the step.
        let short = series([1.0, 2.0]);
        let nan = series((0..100).map(|i| if i + 1 == 60 { f64::NAN } else { wobble(i) }));
        let s = run(&[("flat", flat), (catalog::POLICY_LOSS, signed), ("short", short), ("nanny", nan)]);
        let c = context(&s, catalog::LOSS, 60, &ContextSettings::default());
        let names: Vec<&str> = c.moved.iter().map(|m| m.metric.as_str()).collect();
        assert_eq!(names, vec!["nanny", catalog::POLICY_LOSS]);
        assert_eq!(c.moved[0].change, Change::NonFinite);
        assert!(matches!(c.moved[1].change, Change::Z(z) if z >= 4.0));
        assert!(c.subject.is_none(), "the run has no loss");
        // An alert past the end of every series, or on an empty run.
        assert!(context(&s, catalog::LOSS, 10_000, &ContextSettings::default()).moved.is_empty());
        assert_eq!(context(&BTreeMap::new(), catalog::LOSS, 5, &ContextSettings::default()), AlertContext::default());
    }

    #[test]
    fn derived_summaries_are_left_to_their_inputs() {
        let load = series((0..100).map(|i| if i + 1 >= 60 { 0.9 } else { 0.25 * wobble(i) }));
        let balance = series((0..100).map(|i| if i + 1 >= 60 { 0.3 } else { wobble(i) }));
        let s = run(&[(&catalog::moe(0).load(0), load), (&catalog::moe(0).balance(), balance)]);
        let c = context(&s, &catalog::moe(0).balance(), 60, &ContextSettings::default());
        assert_eq!(c.subject.as_ref().unwrap().metric, catalog::moe(0).balance());
        assert_eq!(c.moved.iter().map(|m| m.metric.clone()).collect::<Vec<_>>(), vec![catalog::moe(0).load(0)]);
        // Another derived summary is not ranked beside its inputs.
        let c = context(&s, catalog::LOSS, 60, &ContextSettings::default());
        assert_eq!(c.moved.len(), 1);
    }

    #[test]
    fn a_family_that_moved_together_takes_one_row_and_ranks_for_its_breadth() {
        // Eight experts' loads leave their range (one x4, the others down a fifth);
        // the loss moves more (x6) but alone.
        let mut metrics: Vec<(String, Series)> = (0..8)
            .map(|e| {
                let after = if e == 1 { 0.5 } else { 0.1 };
                (catalog::moe(0).load(e), series((0..100).map(move |i| if i + 1 >= 60 { after } else { 0.125 * wobble(i + e) })))
            })
            .collect();
        metrics.push((catalog::LOSS.to_owned(), series((0..100).map(|i| if i + 1 >= 60 { 6.0 } else { wobble(i) }))));
        let s: BTreeMap<String, Series> = metrics.into_iter().collect();
        let c = context(&s, &catalog::moe(0).balance(), 60, &ContextSettings::default());
        assert_eq!(c.moved.len(), 2, "{:?}", c.moved);
        assert_eq!((c.moved[0].metric.as_str(), c.moved[0].alike), ("moe/L0/load/E1", 7));
        assert_eq!(c.moved[0].short(), "moe/L0/load/E1 x4.0 +7");
        assert_eq!(c.moved[1].metric, catalog::LOSS);
    }
}
