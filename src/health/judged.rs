//! What the detectors could not judge in a run, and why: too few points of their
//! metric to leave warm-up, or the metric never logged. `rlmon check` and the
//! end-of-session summary both list it, so a clean result is never silent about
//! what it did not look at.
use serde::Serialize;

use super::config::KindSettings;
use super::detect::{moe, short, trend};
use super::monitor::RUN_MEMORY_METRICS;
use super::{AlertKind, HealthConfig};
use crate::metrics::catalog::{self, MoeLayer, PaneHint};
use crate::metrics::Series;

/// One detector that could not judge a run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NotJudged {
    pub kind: AlertKind,
    pub metric: String,
    /// "not enough points: N of METRIC, it needs M" or "metric missing: METRIC".
    pub reason: String,
}

/// How much of one metric a run logged: its points and the training steps they span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Logged {
    pub points: usize,
    /// Last step minus first step.
    pub steps: u64,
}

impl Logged {
    pub fn of(series: &Series) -> Logged {
        let steps = series.last_step().zip(series.first_step()).map_or(0, |(last, first)| last.saturating_sub(first));
        Logged { points: series.len(), steps }
    }
}

/// Enabled detectors of `settings` that could not judge a run whose metrics are
/// `names`, with `logged(metric)` of each. A missing metric is reported only
/// where the run is of the kind's sort: RL kinds for an RL run (one that logs a
/// KL or a reward), the others always. Kinds without one metric are reported
/// for what the run logged too few points of: a MoE layer's loads (per layer),
/// a memory counter; a dense run or a log without memory is not told it lacks them.
pub fn not_judged<'a>(settings: &HealthConfig, names: impl Iterator<Item = &'a str> + Clone, logged: impl Fn(&str) -> Option<Logged>) -> Vec<NotJudged> {
    let points = |m: &str| logged(m).map(|l| l.points);
    let rl_run = catalog::is_rl_run(names.clone());
    let mut out = Vec::new();
    for kind in AlertKind::ALL {
        // Judged per job over its ranks, not per run; on the clock while a session
        // runs, not from a log's points; or no detector at all.
        if matches!(kind, AlertKind::RankStraggler | AlertKind::Stalled | AlertKind::UserAlert) {
            continue;
        }
        let s = settings.get(kind);
        if !s.enabled {
            continue;
        }
        let needed = warm_up(kind, s) + s.persistence.max(1) as usize;
        match kind {
            AlertKind::ExpertCollapse => out.extend(moe_layers_not_judged(needed, names.clone(), &logged)),
            AlertKind::MemoryLeak => out.extend(RUN_MEMORY_METRICS.iter().filter_map(|m| Some((m, points(m)?))).filter(|(_, n)| *n < needed).map(|(m, n)| NotJudged {
                kind,
                metric: (*m).to_owned(),
                reason: format!("not enough points: {n} of {m}, it needs {needed}"),
            })),
            _ => {}
        }
        let Some(configured) = s.metric.as_deref() else { continue };
        // A run that logs only the metric's stand-in is judged on that.
        let metric = std::iter::once(configured).chain(catalog::stand_ins(configured).iter().copied()).find(|m| points(m).is_some()).unwrap_or(configured);
        let reason = match points(metric) {
            Some(n) if n < needed => match short::rule_for(kind).filter(|r| n >= r.min_points()) {
                // Judged by the short-run rule for what few points can tell.
                Some(rule) => format!("not enough points: {n} of {metric}, it needs {needed} ({})", rule.covers()),
                None => format!("not enough points: {n} of {metric}, it needs {needed}"),
            },
            Some(_) => continue,
            None if catalog::in_pane(PaneHint::Rl).any(|m| m == metric) && !rl_run => continue,
            None => format!("metric missing: {metric}"),
        };
        out.push(NotJudged { kind, metric: metric.to_owned(), reason });
    }
    out
}

/// Points of its metric a kind holds before it judges: its configured warm-up, or
/// what the detector needs beyond it (kl_runaway's history and slope fit; the
/// trend memory_leak warns from without a known total).
fn warm_up(kind: AlertKind, s: &KindSettings) -> usize {
    let configured = s.warmup as usize;
    match kind {
        AlertKind::KlRunaway => configured.max(trend::KL_RUNAWAY_HISTORY),
        AlertKind::MemoryLeak => configured.max(trend::LEAK_HISTORY),
        _ => configured,
    }
}

/// The MoE layers of a run that expert_collapse could not judge: fewer than
/// `needed` points of the layer's loads (or its own balance), or fewer than
/// [`moe::ROUTER_WARMUP_STEPS`] training steps spanned (a fresh router is left to
/// balance; as many points also do, for a log whose steps do not advance).
fn moe_layers_not_judged<'a>(needed: usize, names: impl Iterator<Item = &'a str>, logged: &impl Fn(&str) -> Option<Logged>) -> Vec<NotJudged> {
    // Per layer, the most logged of its load or balance series.
    let mut layers: std::collections::BTreeMap<usize, Logged> = std::collections::BTreeMap::new();
    for name in names {
        let layer = MoeLayer::parse_load(name).map(|(l, _)| l).or_else(|| MoeLayer::parse(name).filter(|(_, m)| *m == MoeLayer::BALANCE).map(|(l, _)| l));
        let (Some(l), Some(seen)) = (layer, logged(name)) else { continue };
        let best = layers.entry(l).or_insert(seen);
        if seen.points > best.points {
            *best = seen;
        }
    }
    let router = moe::ROUTER_WARMUP_STEPS;
    layers
        .into_iter()
        .filter(|(_, seen)| seen.points < needed || (seen.steps < router && seen.points as u64 <= router))
        .map(|(l, seen)| NotJudged {
            kind: AlertKind::ExpertCollapse,
            metric: catalog::moe(l).balance(),
            reason: format!("not enough points: {} of layer {l}'s loads over {} steps, it needs {needed} points spanning {router} steps (a fresh router's warm-up)", seen.points, seen.steps),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` points, one a step.
    fn pts(n: usize) -> Logged {
        Logged { points: n, steps: n.saturating_sub(1) as u64 }
    }

    #[test]
    fn short_runs_and_missing_metrics_are_named() {
        let cfg = HealthConfig::default();
        // A pretraining log of 10 points with loss only.
        let names = [catalog::LOSS];
        let out = not_judged(&cfg, names.iter().copied(), |m| (m == catalog::LOSS).then_some(pts(10)));
        let reason = |k: AlertKind| out.iter().find(|n| n.kind == k).map(|n| n.reason.clone());
        assert_eq!(reason(AlertKind::LossSpike).as_deref(), Some("not enough points: 10 of loss, it needs 22"));
        assert_eq!(reason(AlertKind::GradExplosion).as_deref(), Some("metric missing: grad_norm"));
        assert_eq!(reason(AlertKind::KlSpike), None, "RL kinds are not expected of a pretraining run");
        assert_eq!(reason(AlertKind::LossDivergence).as_deref(), Some("not enough points: 10 of loss, it needs 55 (judged only for a loss far above every earlier value)"));
        let out = not_judged(&cfg, [catalog::LOSS, catalog::GRAD_NORM].into_iter(), |_| Some(pts(2)));
        assert!(out.iter().all(|n| !n.reason.contains("judged only")), "too few even for the short-run rules: {out:?}");
        // An RL run with enough points: only what it lacks.
        let names = [catalog::LOSS, catalog::KL, catalog::REWARD];
        let out = not_judged(&cfg, names.iter().copied(), |m| names.contains(&m).then_some(pts(10_000)));
        assert!(out.iter().any(|n| n.kind == AlertKind::EntropyCollapse && n.reason == "metric missing: entropy"), "{out:?}");
        assert!(out.iter().all(|n| n.reason.starts_with("metric missing")), "{out:?}");
        // Stand-ins: an SB3 run (approx KL, no KL) and a nanoGPT one (step time,
        // no tokens/s) are judged on those, and counted by them.
        let names = [catalog::LOSS, catalog::APPROX_KL, catalog::REWARD, catalog::STEP_TIME_S];
        let out = not_judged(&cfg, names.iter().copied(), |m| names.contains(&m).then_some(pts(if m == catalog::APPROX_KL { 10 } else { 10_000 })));
        let reason = |k: AlertKind| out.iter().find(|n| n.kind == k).map(|n| n.reason.clone());
        assert_eq!(reason(AlertKind::KlRunaway).as_deref(), Some("not enough points: 10 of approx_kl, it needs 85"));
        assert_eq!(reason(AlertKind::ThroughputRegression), None);
    }

    #[test]
    fn moe_layers_and_memory_are_judged_once_past_their_warm_ups() {
        let cfg = HealthConfig::default();
        let (l0, l1) = (catalog::moe(0).load(0), catalog::moe(1).load(0));
        let names = [catalog::LOSS, l0.as_str(), l1.as_str(), catalog::MEM_GPU_BYTES];
        let reasons = |logged: &dyn Fn(&str) -> Option<Logged>| {
            not_judged(&cfg, names.iter().copied(), logged).into_iter().filter(|n| matches!(n.kind, AlertKind::ExpertCollapse | AlertKind::MemoryLeak)).map(|n| (n.metric, n.reason)).collect::<Vec<_>>()
        };
        // Layer 0: 30 points every 10 steps (past both warm-ups); layer 1: 30
        // points every 2 steps (58 steps: a fresh router's); memory: 10 points.
        let out = reasons(&|m| {
            Some(if m == l0 {
                Logged { points: 30, steps: 290 }
            } else if m == l1 {
                Logged { points: 30, steps: 58 }
            } else if m == catalog::MEM_GPU_BYTES {
                pts(10)
            } else {
                pts(500)
            })
        });
        assert_eq!(
            out,
            vec![
                (catalog::MEM_GPU_BYTES.to_owned(), format!("not enough points: 10 of {}, it needs 245", catalog::MEM_GPU_BYTES)),
                (catalog::moe(1).balance(), "not enough points: 30 of layer 1's loads over 58 steps, it needs 25 points spanning 100 steps (a fresh router's warm-up)".to_owned()),
            ]
        );
        // 120 points whose steps do not advance are past the router's warm-up too.
        let out = reasons(&|_| Some(Logged { points: 120, steps: 0 }));
        assert!(out.iter().all(|(m, _)| m.as_str() != catalog::moe(0).balance() && m.as_str() != catalog::moe(1).balance()), "{out:?}");
        // A dense run without memory counters is not told it lacks them.
        let out = not_judged(&cfg, [catalog::LOSS].into_iter(), |m| (m == catalog::LOSS).then_some(pts(500)));
        assert!(out.iter().all(|n| !matches!(n.kind, AlertKind::ExpertCollapse | AlertKind::MemoryLeak)), "{out:?}");
    }
}
