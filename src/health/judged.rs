//! What the detectors could not judge in a run, and why: too few points of their
//! metric to leave warm-up, or the metric never logged. `rlmon check` and the
//! end-of-session summary both list it, so a clean result is never silent about
//! what it did not look at.
use serde::Serialize;

use super::detect::short;
use super::{AlertKind, HealthConfig};
use crate::metrics::catalog::{self, PaneHint};

/// One detector that could not judge a run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NotJudged {
    pub kind: AlertKind,
    pub metric: String,
    /// "not enough points: N of METRIC, it needs M" or "metric missing: METRIC".
    pub reason: String,
}

/// Enabled detectors of `settings` that could not judge a run whose metrics are
/// `names`, with `points(metric)` points of each. A missing metric is reported
/// only where the run is of the kind's sort: RL kinds for an RL run (one that
/// logs a KL or a reward), the others always.
pub fn not_judged<'a>(settings: &HealthConfig, names: impl Iterator<Item = &'a str> + Clone, points: impl Fn(&str) -> Option<usize>) -> Vec<NotJudged> {
    let rl_run = catalog::is_rl_run(names);
    let mut out = Vec::new();
    for kind in AlertKind::ALL {
        // Judged per job over its ranks, not per run.
        if kind == AlertKind::RankStraggler {
            continue;
        }
        let s = settings.get(kind);
        let Some(configured) = s.metric.as_deref() else { continue };
        // A run that logs only the metric's stand-in is judged on that.
        let metric = std::iter::once(configured).chain(catalog::stand_ins(configured).iter().copied()).find(|m| points(m).is_some()).unwrap_or(configured);
        if !s.enabled {
            continue;
        }
        let needed = s.warmup as usize + s.persistence.max(1) as usize;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_runs_and_missing_metrics_are_named() {
        let cfg = HealthConfig::default();
        // A pretraining log of 10 points with loss only.
        let names = [catalog::LOSS];
        let out = not_judged(&cfg, names.iter().copied(), |m| (m == catalog::LOSS).then_some(10));
        let reason = |k: AlertKind| out.iter().find(|n| n.kind == k).map(|n| n.reason.clone());
        assert_eq!(reason(AlertKind::LossSpike).as_deref(), Some("not enough points: 10 of loss, it needs 22"));
        assert_eq!(reason(AlertKind::GradExplosion).as_deref(), Some("metric missing: grad_norm"));
        assert_eq!(reason(AlertKind::KlSpike), None, "RL kinds are not expected of a pretraining run");
        assert_eq!(reason(AlertKind::LossDivergence).as_deref(), Some("not enough points: 10 of loss, it needs 55 (judged only for a loss far above every earlier value)"));
        let out = not_judged(&cfg, [catalog::LOSS, catalog::GRAD_NORM].into_iter(), |_| Some(2));
        assert!(out.iter().all(|n| !n.reason.contains("judged only")), "too few even for the short-run rules: {out:?}");
        // An RL run with enough points: only what it lacks.
        let names = [catalog::LOSS, catalog::KL, catalog::REWARD];
        let out = not_judged(&cfg, names.iter().copied(), |m| names.contains(&m).then_some(10_000));
        assert!(out.iter().any(|n| n.kind == AlertKind::EntropyCollapse && n.reason == "metric missing: entropy"), "{out:?}");
        assert!(out.iter().all(|n| n.reason.starts_with("metric missing")), "{out:?}");
        // Stand-ins: an SB3 run (approx KL, no KL) and a nanoGPT one (step time,
        // no tokens/s) are judged on those, and counted by them.
        let names = [catalog::LOSS, catalog::APPROX_KL, catalog::REWARD, catalog::STEP_TIME_S];
        let out = not_judged(&cfg, names.iter().copied(), |m| names.contains(&m).then_some(if m == catalog::APPROX_KL { 10 } else { 10_000 }));
        let reason = |k: AlertKind| out.iter().find(|n| n.kind == k).map(|n| n.reason.clone());
        assert_eq!(reason(AlertKind::KlRunaway).as_deref(), Some("not enough points: 10 of approx_kl, it needs 55"));
        assert_eq!(reason(AlertKind::ThroughputRegression), None);
    }
}
