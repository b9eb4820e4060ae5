//! Mixture-of-experts routing health, per layer: effective experts exp(H)/N from
//! the per-expert loads (`moe/L{l}/load/E{e}`), the workload's own
//! `moe/L{l}/balance`, or a logged load entropy over log N with the run's
//! expert count (N^(h-1)); dead experts; dropped tokens.
use std::collections::BTreeMap;

use super::{grade, Detector, Gate, Point, Raised, Worse, COLLAPSE_PERSISTS};
use crate::health::config::KindSettings;
use crate::health::{AlertKind, Severity};
use crate::report::format::percent;
use crate::metrics::catalog::{self, MoeLayer};

/// The key of the whole model's dropped share ([`catalog::MOE_DROPPED_ALL`])
/// among the layers' watches.
const WHOLE_MODEL: usize = usize::MAX;

/// Dropped-token fraction that is a warning on its own.
pub const DROPPED_WARN: f64 = 0.2;

/// Training steps a fresh router is left to balance before its layer is judged
/// (the lm MoE workload: 40-55% effective experts around step 20, before its
/// aux loss or bias takes hold). Counted in steps, not logged points: a run
/// logged every 10-100 steps is past it within a few points, and a collapse
/// there (5-15% into the run) is no fresh router's. A layer that has held
/// balanced for [`SETTLED_POINTS`] points is past it sooner.
pub const ROUTER_WARMUP_STEPS: u64 = 100;

#[derive(Debug, Clone)]
pub struct ExpertCollapse {
    s: KindSettings,
    /// One watch per layer (warm-up, persistence, cooldown of its own).
    layers: BTreeMap<usize, LayerWatch>,
    /// Experts per layer, as the run last logged it ([`catalog::MOE_EXPERTS`]).
    experts: Option<f64>,
}

/// One layer's gate, the step its first point was logged at and its points.
#[derive(Debug, Clone)]
struct LayerWatch {
    gate: Gate,
    first_step: u64,
    points: u64,
    /// Consecutive points since the configured warm-up at or above the warn bar
    /// with fewer than [`DROPPED_WARN`] of the tokens dropped.
    balanced: u32,
    /// The router has held balanced for [`SETTLED_POINTS`]: its warm-up is over.
    settled: bool,
}

impl LayerWatch {
    /// Past the router's warm-up: [`ROUTER_WARMUP_STEPS`] steps since the layer's
    /// first point, or as many points (a log whose steps do not advance), or
    /// the layer has held at or above the warn bar for [`SETTLED_POINTS`]
    /// points after the configured warm-up (a router that has balanced is no
    /// longer fresh: a collapse from there is one).
    fn router_settled(&mut self, step: u64, balanced: Option<bool>, warming: bool) -> bool {
        self.points += 1;
        if !warming {
            self.balanced = if balanced == Some(true) { self.balanced + 1 } else { 0 };
            self.settled |= self.balanced >= SETTLED_POINTS;
        }
        self.settled || step.saturating_sub(self.first_step) >= ROUTER_WARMUP_STEPS || self.points > ROUTER_WARMUP_STEPS
    }
}

/// Points a layer holds at or above the warn bar, once the configured warm-up
/// is over, before its router counts as settled (twice the points a collapse
/// must persist: a fresh router wavering around the bar does not get there;
/// the lm MoE workload's dips to 35-55% end by its step 24, after which it
/// holds 75-100%).
pub const SETTLED_POINTS: u32 = 10;

/// Routing summary of one layer at one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerBalance {
    /// exp(H)/N: 1 when perfectly balanced, 1/N when one expert takes everything.
    pub balance: f64,
    pub experts: usize,
    /// Experts with less than 1/(10N) of the tokens.
    pub dead: usize,
}

/// Balance of a load vector (fractions; renormalised).
pub fn balance(loads: &[f64]) -> Option<LayerBalance> {
    let total: f64 = loads.iter().filter(|v| v.is_finite() && **v > 0.0).sum();
    let n = loads.len();
    if n == 0 || total <= 0.0 {
        return None;
    }
    let h: f64 = loads.iter().filter(|v| v.is_finite() && **v > 0.0).map(|v| v / total).map(|p| -p * p.ln()).sum();
    let dead = loads.iter().filter(|v| !(v.is_finite() && **v / total >= 0.1 / n as f64)).count();
    Some(LayerBalance { balance: h.exp() / n as f64, experts: n, dead })
}

/// One layer's values at a step: per-expert loads, given balance, dropped
/// fraction, normalised load entropy.
type LayerValues = (Vec<f64>, Option<f64>, Option<f64>, Option<f64>);

/// Per-layer loads, balances and dropped fractions found among a step's values,
/// by layer, lowest first (a step holds a few layers: a short list, not a map).
fn layers_of(values: &[(crate::metrics::MetricName, f64)]) -> Vec<(usize, LayerValues)> {
    let mut out: Vec<(usize, LayerValues)> = Vec::new();
    for (name, v) in values {
        // One prefix test per name before parsing: most of a step's values are
        // no layer's (both parsers want the prefix).
        if !catalog::is_moe_layer_metric(name) {
            continue;
        }
        if let Some((layer, _expert)) = MoeLayer::parse_load(name) {
            layer_entry(&mut out, layer).0.push(*v);
        } else if let Some((layer, measure)) = MoeLayer::parse(name) {
            let entry = layer_entry(&mut out, layer);
            if measure == MoeLayer::BALANCE {
                entry.1 = Some(*v);
            } else if measure == MoeLayer::DROPPED_FRAC {
                entry.2 = Some(*v);
            } else if measure == MoeLayer::ENTROPY_NORM {
                entry.3 = Some(*v);
            }
        }
    }
    out.sort_unstable_by_key(|(l, _)| *l);
    out
}

/// `layer`'s values in `layers`, added empty when it has none yet.
fn layer_entry(layers: &mut Vec<(usize, LayerValues)>, layer: usize) -> &mut LayerValues {
    let i = match layers.iter().position(|(l, _)| *l == layer) {
        Some(i) => i,
        None => {
            layers.push((layer, LayerValues::default()));
            layers.len() - 1
        }
    };
    &mut layers[i].1
}

impl ExpertCollapse {
    pub fn new(s: KindSettings) -> Self {
        ExpertCollapse { s, layers: BTreeMap::new(), experts: None }
    }

    /// Alerts for every layer that collapses at this step.
    pub fn check(&mut self, p: &Point) -> Vec<Raised> {
        let mut out = Vec::new();
        // Most runs log no MoE layer: one prefix test per name, no parsing; the
        // layers are read from the first name that has the prefix on. A dropped
        // share of the whole model's tokens is judged as a layer of its own.
        // One pass over the point's names: the first layer's, the whole model's
        // dropped share, and the expert count (it may come once, with the run's
        // config, before any layer).
        let (mut first, mut dropped_all) = (None, None);
        for (i, (name, v)) in p.values.iter().enumerate() {
            if !catalog::is_moe_metric(name) {
                continue;
            }
            if catalog::is_moe_layer_metric(name) {
                first = first.or(Some(i));
            } else if name == catalog::MOE_DROPPED_ALL {
                dropped_all = Some(*v);
            } else if name == catalog::MOE_EXPERTS && v.is_finite() && *v >= 2.0 {
                self.experts = Some(v.round());
            }
        }
        let model_wide = dropped_all.map(|d| (WHOLE_MODEL, (Vec::new(), None, Some(d), None)));
        if first.is_none() && model_wide.is_none() {
            return out;
        }
        let layers = first.map(|f| layers_of(&p.values[f..])).unwrap_or_default();
        for (l, (loads, given_balance, dropped, entropy_norm)) in layers.into_iter().chain(model_wide) {
            let summary = balance(&loads);
            // A normalised entropy h of N experts is exp(h ln N)/N effective experts.
            let from_entropy = entropy_norm.filter(|h| h.is_finite()).zip(self.experts).map(|(h, n)| n.powf(h.clamp(0.0, 1.0) - 1.0));
            let by_entropy = summary.is_none() && given_balance.is_none() && from_entropy.is_some();
            let bal = summary.map(|b| b.balance).or(given_balance).or(from_entropy);
            let watch = self.layers.entry(l).or_insert_with(|| LayerWatch { gate: Gate::new(&self.s, Worse::Lower), first_step: p.step, points: 0, balanced: 0, settled: false });
            // Both warm-ups count every point: the configured one (points) and the router's.
            let warming = watch.gate.warming();
            // Balanced: nothing to raise, neither the balance nor the dropped
            // tokens (a router dropping a quarter of its tokens over capacity
            // has not settled, however even its accepted loads look).
            let calm = (bal.is_some() || dropped.is_some()).then(|| bal.is_none_or(|b| b >= self.s.warn) && dropped.is_none_or(|d| d < DROPPED_WARN));
            let settled = watch.router_settled(p.step, calm, warming);
            let gate = &mut watch.gate;
            if warming || !settled || (bal.is_none() && dropped.is_none()) {
                continue;
            }
            let mut severity = bal.and_then(|b| grade(b, self.s.warn, self.s.critical, true));
            // Half the experts or more dead is a collapse whatever the balance says.
            if summary.is_some_and(|b| b.experts >= 2 && b.dead * 2 >= b.experts) {
                severity = Some(Severity::Critical);
            }
            if severity.is_none() && dropped.is_some_and(|d| d >= DROPPED_WARN) {
                severity = Some(Severity::Warn);
            }
            // A collapse that has not recovered for long is critical.
            let persists = gate.streak_after(severity.is_some()) >= COLLAPSE_PERSISTS;
            if persists {
                severity = Some(Severity::Critical);
            }
            // The watched value: the balance (lower is worse), or the dropped
            // fraction when no balance is known (its worst point is not tracked).
            // A balance read from a logged entropy is watched as that entropy (the
            // alert's value is the metric's own; the message gives experts).
            let watched = if by_entropy { entropy_norm.unwrap_or(f64::NAN) } else { bal.or(dropped).unwrap_or(f64::NAN) };
            let Some(mut v) = gate.pass(severity, p.step, watched) else { continue };
            let metric = match (bal, l) {
                _ if by_entropy => catalog::moe(l).measure(catalog::MOE_ENTROPY_NORM),
                (Some(_), _) => catalog::moe(l).balance(),
                (None, WHOLE_MODEL) => catalog::MOE_DROPPED_ALL.to_owned(),
                (None, _) => catalog::moe(l).dropped_frac(),
            };
            if bal.is_none() {
                v.peak = None;
            }
            let mut message = if l == WHOLE_MODEL { format!("MoE routing collapsed from step {}", v.step) } else { format!("layer {l} routing collapsed from step {}", v.step) };
            if let (true, Some(n)) = (by_entropy, self.experts) {
                let share = n.powf(v.value.clamp(0.0, 1.0) - 1.0);
                message.push_str(&format!(": {} effective experts there (load entropy {:.2} of log {n})", percent(share), v.value));
            } else if bal.is_some() {
                message.push_str(&format!(": {} effective experts there", percent(v.value)));
            }
            if let Some(b) = summary.filter(|b| b.dead > 0) {
                message.push_str(&format!(", {}/{} experts dead", b.dead, b.experts));
            }
            if let Some(d) = dropped {
                message.push_str(&format!(", {} tokens dropped", percent(d)));
            }
            if persists {
                message.push_str(&format!("; not recovered for {COLLAPSE_PERSISTS} steps"));
            }
            out.push(v.raise(metric, message));
        }
        out
    }
}

impl Detector for ExpertCollapse {
    fn kind(&self) -> AlertKind {
        AlertKind::ExpertCollapse
    }

    fn observe_into(&mut self, p: &Point, out: &mut Vec<Raised>) {
        out.append(&mut self.check(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::config::defaults;
    use crate::metrics::MetricName;

    #[test]
    fn balance_is_one_when_even_and_one_over_n_when_collapsed() {
        assert!((balance(&[0.25; 4]).unwrap().balance - 1.0).abs() < 1e-12);
        let b = balance(&[1.0, 0.0, 0.0, 0.0]).unwrap();
        assert!((b.balance - 0.25).abs() < 1e-12);
        assert_eq!(b.dead, 3);
    }

    /// The step of the first warn-or-worse alert of a one-layer run of `points`
    /// points logged every `every` steps, whose 8 expert loads are `loads(point)`.
    fn first_alarm(points: u64, every: u64, loads: impl Fn(u64) -> [f64; 8]) -> Option<u64> {
        let mut d = ExpertCollapse::new(defaults(AlertKind::ExpertCollapse));
        (0..points).find_map(|i| {
            let v: Vec<(MetricName, f64)> = loads(i).iter().enumerate().map(|(e, x)| (format!("moe/L0/load/E{e}").into(), *x)).collect();
            d.check(&Point { step: i * every, time_s: 0.0, values: &v }).into_iter().find(|a| a.severity >= Severity::Warn).map(|a| a.step)
        })
    }

    #[test]
    fn the_whole_models_dropped_share_is_judged_as_a_layer_of_its_own() {
        for (name, late, want) in [("a quarter dropped from step 300", 0.25, true), ("5% dropped throughout", 0.05, false)] {
            let mut d = ExpertCollapse::new(defaults(AlertKind::ExpertCollapse));
            let first = (0..500u64).find_map(|i| {
                let v: Vec<(MetricName, f64)> = vec![("loss".into(), 2.0), (catalog::MOE_DROPPED_ALL.into(), if i >= 300 { late } else { 0.05 })];
                d.check(&Point { step: i, time_s: 0.0, values: &v }).into_iter().find(|a| a.severity >= Severity::Warn)
            });
            assert_eq!(first.is_some(), want, "{name}: {first:?}");
            if let Some(a) = first {
                assert!(a.step >= 300 && a.step < 310 && a.metric == catalog::MOE_DROPPED_ALL && a.message.starts_with("MoE routing collapsed"), "{name}: {a:?}");
            }
        }
    }

    #[test]
    fn the_router_warm_up_is_counted_in_training_steps() {
        let even = [0.125; 8];
        // One expert takes 80%: effective experts about 38%.
        let collapsed = [0.8, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.02];
        let table: [(&str, u64, u64, &dyn Fn(u64) -> [f64; 8], Option<u64>); 7] = [
            ("every 50 steps, collapsed from point 25 (step 1250)", 80, 50, &|i| if i >= 25 { collapsed } else { even }, Some(1250)),
            ("every 50 steps, collapsed from point 10: inside the 20-point warm-up, raised at its end", 80, 50, &|i| if i >= 10 { collapsed } else { even }, Some(1000)),
            ("every 10 steps, collapsed from point 30 (step 300)", 80, 10, &|i| if i >= 30 { collapsed } else { even }, Some(300)),
            ("every step, collapsed from step 150", 300, 1, &|i| if i >= 150 { collapsed } else { even }, Some(150)),
            ("every step, a fresh router unbalanced for steps 10-60", 300, 1, &|i| if (10..60).contains(&i) { collapsed } else { even }, None),
            ("every 10 steps, unbalanced for its first 6 points (steps 0-50)", 80, 10, &|i| if i < 6 { collapsed } else { even }, None),
            // A router that dips while the configured warm-up (20 points) lasts
            // and holds balanced after it (the lm MoE workload's steps 13-23).
            ("every step, a fresh router unbalanced for steps 13-23", 300, 1, &|i| if (13..24).contains(&i) { collapsed } else { even }, None),
        ];
        for (what, points, every, loads, want) in table {
            assert_eq!(first_alarm(points, every, loads), want, "{what}");
        }
    }

    #[test]
    fn a_router_that_has_balanced_is_judged_before_its_warm_up_ends() {
        let even = [0.125; 8];
        let collapsed = [0.8, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.02];
        // (what, first collapsed point, last, first alarm)
        let table: [(&str, u64, u64, Option<u64>); 4] = [
            // Balanced from the start, held past the configured warm-up (20
            // points) for 10 more: settled, so a collapse at step 40 is one
            // even though it recovers before step 100.
            ("balanced, then collapsed for steps 40-69", 40, 70, Some(40)),
            ("balanced, then collapsed for steps 60-89", 60, 90, Some(60)),
            // Collapsed before it has held balanced for 10 points after the
            // configured warm-up: still a fresh router's.
            ("balanced, then collapsed for steps 25-59", 25, 60, None),
            ("collapsed for steps 20-49, then balanced", 20, 50, None),
        ];
        for (what, from, to, want) in table {
            assert_eq!(first_alarm(200, 1, |i| if (from..to).contains(&i) { collapsed } else { even }), want, "{what}");
        }
    }

    /// The lm MoE workload on an H200 (seed 0): loads that look even while a
    /// third to a half of the tokens overflow capacity (steps 20-40), then one
    /// expert takes 40% for steps 44-55 and the router recovers by step 60. A
    /// router dropping that many tokens has not settled: no alarm in its
    /// warm-up. The same dropping after a balanced stretch is one.
    #[test]
    fn a_router_dropping_tokens_has_not_settled() {
        let even = [0.125; 8];
        let leaning = [0.42, 0.09, 0.08, 0.09, 0.08, 0.08, 0.08, 0.08];
        let run = |dropping: std::ops::Range<u64>, leans: std::ops::Range<u64>| {
            let mut d = ExpertCollapse::new(defaults(AlertKind::ExpertCollapse));
            (0..300u64).find_map(|step| {
                let loads = if leans.contains(&step) { leaning } else { even };
                let mut v: Vec<(MetricName, f64)> = loads.iter().enumerate().map(|(e, x)| (format!("moe/L0/load/E{e}").into(), *x)).collect();
                v.push(("moe/L0/dropped_frac".into(), if dropping.contains(&step) || leans.contains(&step) { 0.4 } else { 0.0 }));
                d.check(&Point { step, time_s: 0.0, values: &v }).into_iter().find(|a| a.severity >= Severity::Warn).map(|a| a.step)
            })
        };
        assert_eq!(run(0..44, 44..56), None, "dropping tokens until the lean: a fresh router's");
        assert_eq!(run(0..20, 44..56), Some(44), "balanced without dropping for steps 20-43: settled, the lean is a collapse");
    }

    /// A run that logs each layer's load entropy over log N and its expert count
    /// (no load per expert): 8 experts, one taking 70% from step 300 (entropy
    /// 0.55 of log 8: 39% effective experts). Without the count the entropy
    /// alone says nothing of the experts (0.55 is 94% of log 2's share of 2).
    #[test]
    fn a_logged_load_entropy_with_the_expert_count_is_judged() {
        let run = |experts: Option<f64>| {
            let mut d = ExpertCollapse::new(defaults(AlertKind::ExpertCollapse));
            (0..500u64).find_map(|step| {
                let h = if step >= 300 { 0.55 } else { 0.97 };
                let mut v: Vec<(MetricName, f64)> = vec![("loss".into(), 2.0), ("moe/L3/entropy_norm".into(), h)];
                if let Some(n) = experts.filter(|_| step % 50 == 0) {
                    v.push((catalog::MOE_EXPERTS.into(), n));
                }
                d.check(&Point { step, time_s: 0.0, values: &v }).into_iter().find(|a| a.severity >= Severity::Warn)
            })
        };
        let a = run(Some(8.0)).expect("a collapse");
        assert!((300..310).contains(&a.step) && a.metric == "moe/L3/entropy_norm" && a.value == 0.55, "{a:?}");
        assert!(a.message.contains("39.23% effective experts"), "{}", a.message);
        assert!(run(None).is_none(), "no expert count");
    }

    #[test]
    fn one_bad_layer_is_reported_by_itself() {
        let mut d = ExpertCollapse::new(defaults(AlertKind::ExpertCollapse));
        let mut alerts = Vec::new();
        for step in 0..200u64 {
            let mut v: Vec<(MetricName, f64)> = Vec::new();
            for e in 0..4 {
                v.push((format!("moe/L0/load/E{e}").into(), 0.25));
                let bad = step >= 150 && e == 0;
                let load = if step >= 150 { if bad { 0.85 } else { 0.05 } } else { 0.25 };
                v.push((format!("moe/L1/load/E{e}").into(), load));
            }
            alerts.extend(d.check(&Point { step, time_s: 0.0, values: &v }).into_iter().map(|r| (step, r)));
        }
        // One alert, escalated (not repeated) once the collapse has persisted.
        assert_eq!(alerts.iter().filter(|(_, a)| a.escalated_at.is_none()).count(), 1, "{alerts:?}");
        assert_eq!((alerts[0].0, alerts[0].1.step), (154, 150));
        assert_eq!(alerts[0].1.metric, "moe/L1/balance");
        assert!(alerts.iter().all(|(_, a)| a.metric == "moe/L1/balance" && a.step == 150), "{alerts:?}");
        assert_eq!(alerts.last().map(|(at, a)| (*at, a.severity)), Some((150 + COLLAPSE_PERSISTS as u64 - 1, Severity::Critical)));
    }
}
