//! Two recorded sessions side by side: where each metric of each matched run first
//! diverges, final and best values, throughput after warm-up, peak memory, and alert
//! differences. B is replayed through a hub holding it against A (`session::baseline`,
//! the same check a live `--baseline` runs), so divergences and their alerts come
//! from one piece of code; the rest is pure logic over the replayed states.
use serde::Serialize;

use super::Playback;
use crate::metrics::{catalog, Series};
use crate::session::baseline::{headline_rank, match_run, Baseline};
use crate::session::{Hub, RunRecord, SessionState};

/// Whether a larger value is better (rewards, rates); otherwise smaller is.
fn higher_is_better(metric: &str) -> bool {
    catalog::better(metric) == catalog::Better::Higher
}

#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Relative slow-down or memory growth of B that is a regression.
    pub tolerance: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MetricComparison {
    pub metric: String,
    /// First step of the divergence, `None` when the runs agree on shared steps.
    pub first_divergence: Option<u64>,
    pub final_a: Option<f64>,
    pub final_b: Option<f64>,
    pub best_a: Option<f64>,
    pub best_b: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Ratio {
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// b / a.
    pub ratio: Option<f64>,
    pub regression: bool,
}

impl Ratio {
    /// `worse_when_lower`: throughput regresses when B is lower; memory when higher.
    fn of(a: Option<f64>, b: Option<f64>, tolerance: f64, worse_when_lower: bool) -> Self {
        let ratio = match (a, b) {
            (Some(a), Some(b)) if a > 0.0 => Some(b / a),
            _ => None,
        };
        let regression = ratio.is_some_and(|r| if worse_when_lower { r < 1.0 - tolerance } else { r > 1.0 + tolerance });
        Ratio { a, b, ratio, regression }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Memory {
    /// The metric whose peak is compared (`mem/gpu_bytes`, `gpu0/mem_used_bytes`, ...).
    pub metric: Option<String>,
    #[serde(flatten)]
    pub peak: Ratio,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunComparison {
    pub a: String,
    pub b: String,
    pub steps_a: u64,
    pub steps_b: u64,
    pub state_a: String,
    pub state_b: String,
    pub metrics: Vec<MetricComparison>,
    pub tokens_per_s: Ratio,
    pub samples_per_s: Ratio,
    pub memory: Memory,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Divergence {
    pub run: String,
    pub metric: String,
    pub step: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct AlertDiff {
    pub only_a: Vec<serde_json::Value>,
    pub only_b: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Comparison {
    pub runs: Vec<RunComparison>,
    /// The earliest divergence over all matched runs and metrics.
    pub first_divergence: Option<Divergence>,
    /// tokens/s over all matched runs (sum), regression when any run regressed.
    pub throughput: Ratio,
    /// Peak memory: session GPU memory (or run memory metrics), regression when any
    /// run or the session's GPU memory grew more than the tolerance.
    pub memory: Memory,
    pub alerts: AlertDiff,
    /// Runs of A and of B with no counterpart.
    pub unmatched_a: Vec<String>,
    pub unmatched_b: Vec<String>,
}

impl Comparison {
    /// Exit status for scripts: 0 when B matches A, 1 on divergence or regression.
    pub fn failed(&self) -> bool {
        self.first_divergence.is_some() || self.throughput.regression || self.memory.peak.regression
    }
}

fn best(s: &Series, higher: bool) -> Option<f64> {
    let extent = s.extent()?;
    Some(if higher { extent.max.value } else { extent.min.value })
}

fn peak(s: Option<&Series>) -> Option<f64> {
    s.and_then(|s| best(s, true))
}

/// Run pairs `(index in a, index in b)` by the baseline's matching rule, in A's
/// order, and the names of the runs of each side left without a partner.
pub fn match_runs(a: &SessionState, b: &SessionState) -> (Vec<(usize, usize)>, Vec<String>, Vec<String>) {
    let mut pairs: Vec<(usize, usize)> = (0..b.runs.len()).filter_map(|j| Some((match_run(&a.runs, &b.runs, j)?, j))).collect();
    pairs.sort();
    let only_a = a.runs.iter().enumerate().filter(|(i, _)| !pairs.iter().any(|p| p.0 == *i)).map(|(_, r)| r.name.clone()).collect();
    let only_b = b.runs.iter().enumerate().filter(|(j, _)| !pairs.iter().any(|p| p.1 == *j)).map(|(_, r)| r.name.clone()).collect();
    (pairs, only_a, only_b)
}

/// A run's memory peak: its own memory metrics first, else none.
fn run_memory(r: &RunRecord) -> Option<(String, f64)> {
    [catalog::MEM_GPU_BYTES, catalog::MEM_RSS_BYTES].into_iter().find_map(|m| Some((m.to_owned(), peak(r.series(m))?)))
}

/// The session's GPU memory peak (highest over GPUs), from telemetry, with the
/// series it came from.
fn session_gpu_memory(s: &SessionState) -> Option<(&str, f64)> {
    let used = |k: &str| catalog::Gpu::parse(k).is_some_and(|(i, _)| k == catalog::gpu(i).mem_used_bytes());
    s.telemetry
        .iter()
        .filter(|(k, _)| used(k))
        .filter_map(|(k, v)| Some((k.as_str(), peak(Some(v))?)))
        .reduce(|x, y| if y.1 > x.1 { y } else { x })
}

/// Run `rb` (index `b_index` of the replayed B) against its partner `ra`;
/// `baseline` is the check B was replayed under.
fn compare_runs(ra: &RunRecord, rb: &RunRecord, b_index: usize, baseline: &Baseline, opts: Options) -> RunComparison {
    let mut metrics = Vec::new();
    for (name, sa) in &ra.series {
        let Some(sb) = rb.series(name) else { continue };
        let higher = higher_is_better(name);
        let diverged = baseline.diverged_at(b_index, name);
        metrics.push(MetricComparison {
            metric: name.clone(),
            first_divergence: diverged,
            final_a: sa.last(),
            final_b: sb.last(),
            best_a: best(sa, higher),
            best_b: best(sb, higher),
        });
    }
    let (mem_a, mem_b) = (run_memory(ra), run_memory(rb));
    let memory = Memory {
        metric: mem_a.as_ref().or(mem_b.as_ref()).map(|(m, _)| m.clone()),
        peak: Ratio::of(mem_a.map(|m| m.1), mem_b.map(|m| m.1), opts.tolerance, false),
    };
    RunComparison {
        a: ra.name.clone(),
        b: rb.name.clone(),
        steps_a: ra.step,
        steps_b: rb.step,
        state_a: ra.state.as_str().into(),
        state_b: rb.state.as_str().into(),
        metrics,
        tokens_per_s: Ratio::of(ra.rate(catalog::TOKENS, None), rb.rate(catalog::TOKENS, None), opts.tolerance, true),
        samples_per_s: Ratio::of(ra.rate(catalog::SAMPLES, None), rb.rate(catalog::SAMPLES, None), opts.tolerance, true),
        memory,
    }
}

fn alert_key(v: &serde_json::Value) -> (String, String, String) {
    let f = |k: &str| v.get(k).map(|x| x.to_string()).unwrap_or_default();
    (f("kind"), f("run"), f("metric"))
}

/// Alerts of one side whose (kind, run, metric) the other side does not have.
pub fn alert_diff(a: &[serde_json::Value], b: &[serde_json::Value]) -> AlertDiff {
    let only = |x: &[serde_json::Value], y: &[serde_json::Value]| x.iter().filter(|v| !y.iter().any(|w| alert_key(w) == alert_key(v))).cloned().collect();
    AlertDiff { only_a: only(a, b), only_b: only(b, a) }
}

/// Compares recorded sessions A and B held in memory; see [`compare_played`].
pub fn compare(a: &super::Recording, b: &super::Recording, opts: Options) -> (Comparison, Hub) {
    compare_played(Playback::held(a.clone()), Playback::held(b.clone()), opts)
}

/// Compares recorded sessions A and B, each played once (a snapshot streams from
/// its file): A to its final state, then B through a hub holding it against that
/// state as a live baseline, so B's divergences are found by the same check as
/// live. Returns the comparison and that hub (B's state with the baseline's alerts).
pub fn compare_played(a: Playback, b: Playback, opts: Options) -> (Comparison, Hub) {
    compare_against(played_baseline(a), b, opts, true)
}

/// A recorded session played to its final state as a baseline, with its recorded
/// alerts. Its own detectors do not run: a baseline's alerts are neither compared
/// (the recorded ones are) nor shown, and they would be most of the work.
pub fn played_baseline(mut a: Playback) -> (std::sync::Arc<SessionState>, Vec<serde_json::Value>) {
    let alerts_a = std::mem::take(&mut a.meta_mut().alerts);
    let mut hub = a.start(None).unjudged();
    a.play_all(&mut hub);
    (std::sync::Arc::new(hub.state), alerts_a)
}

/// B played against A's [`played_baseline`]; see [`compare_played`]. `judge_b`:
/// whether B's own detectors run (their alerts are shown on B in the display; the
/// comparison itself never reads them).
pub fn compare_against((state_a, alerts_a): (std::sync::Arc<SessionState>, Vec<serde_json::Value>), mut b: Playback, opts: Options, judge_b: bool) -> (Comparison, Hub) {
    let hub = b.start(Some(&(state_a.clone(), opts.tolerance)));
    let mut hub = if judge_b { hub } else { hub.unjudged() };
    b.play_all(&mut hub);
    let baseline = hub.baseline.as_ref().expect("the hub was given a baseline");
    let c = compare_states(&state_a, &hub.state, baseline, &alerts_a, &b.meta().alerts, opts);
    (c, hub)
}

fn compare_states(a: &SessionState, b_state: &SessionState, baseline: &Baseline, alerts_a: &[serde_json::Value], alerts_b: &[serde_json::Value], opts: Options) -> Comparison {
    let (matched, unmatched_a, unmatched_b) = match_runs(a, b_state);
    let runs: Vec<RunComparison> = matched.iter().map(|&(i, j)| compare_runs(&a.runs[i], &b_state.runs[j], j, baseline, opts)).collect();
    let first_divergence = runs
        .iter()
        .flat_map(|r| r.metrics.iter().filter_map(move |m| Some((m.first_divergence?, r, m))))
        .min_by_key(|(step, _, m)| (*step, headline_rank(&m.metric)))
        .map(|(step, r, m)| Divergence { run: r.a.clone(), metric: m.metric.clone(), step });
    let sum = |f: fn(&RunComparison) -> Option<f64>| runs.iter().map(f).sum::<Option<f64>>();
    let mut throughput = Ratio::of(sum(|r| r.tokens_per_s.a), sum(|r| r.tokens_per_s.b), opts.tolerance, true);
    throughput.regression |= runs.iter().any(|r| r.tokens_per_s.regression);
    let mut memory = match (session_gpu_memory(a), session_gpu_memory(b_state)) {
        (None, None) => Memory { metric: None, peak: Ratio::of(None, None, opts.tolerance, false) },
        (ma, mb) => {
            let metric = mb.or(ma).map(|(name, _)| name.to_owned());
            Memory { metric, peak: Ratio::of(ma.map(|m| m.1), mb.map(|m| m.1), opts.tolerance, false) }
        }
    };
    if memory.metric.is_none() {
        if let Some(r) = runs.iter().find(|r| r.memory.metric.is_some()) {
            memory = r.memory.clone();
        }
    }
    memory.peak.regression |= runs.iter().any(|r| r.memory.peak.regression);
    Comparison { runs, first_divergence, throughput, memory, alerts: alert_diff(alerts_a, alerts_b), unmatched_a, unmatched_b }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::{AlertKind, Severity};
    use crate::record::{Meta, Recording};
    use crate::session::Event;

    /// One run of `n` steps: loss from `loss(step)`, 1000 tokens in `step_s` seconds.
    fn session(name: &str, n: u64, loss: impl Fn(u64) -> f64, step_s: f64) -> Recording {
        let runs = vec![RunRecord::new(name.into(), "lm".into(), "cpu".into(), n)];
        let mut rec = Recording::new(Meta::new("s", "20260101T000000Z".into(), String::new(), &runs));
        rec.record(0.0, &Event::RunStarted { run: 0, device: "cpu".into(), threads: 1 });
        for step in 1..=n {
            let values = vec![("loss".into(), loss(step)), ("tokens".into(), 1000.0), ("step_time_s".into(), step_s)];
            let t = step as f64 * step_s;
            rec.record(t, &Event::Metrics { run: 0, step, time_s: t, values });
        }
        rec
    }

    fn opts() -> Options {
        Options { tolerance: 0.05 }
    }

    #[test]
    fn identical_runs_agree() {
        let a = session("x", 100, |s| 5.0 / s as f64, 0.1);
        let (c, b) = compare(&a, &a, opts());
        assert_eq!(c.first_divergence, None);
        assert!(!c.throughput.regression);
        assert_eq!(c.throughput.ratio, Some(1.0));
        assert!(!c.failed());
        let loss = c.runs[0].metrics.iter().find(|m| m.metric == "loss").unwrap();
        assert_eq!(loss.best_a, Some(0.05));
        assert_eq!(loss.final_b, Some(0.05));
        assert!(b.state.alerts.is_empty(), "nothing to mark when they agree: {:?}", b.state.alerts);
    }

    #[test]
    fn a_known_divergence_step_is_found() {
        let a = session("x", 100, |s| 5.0 / s as f64, 0.1);
        let b = session("y", 100, |s| if s >= 40 { 1.0 } else { 5.0 / s as f64 }, 0.1);
        let (c, _) = compare(&a, &b, opts());
        assert_eq!(c.first_divergence, Some(Divergence { run: "x".into(), metric: "loss".into(), step: 40 }));
        assert!(c.failed());
    }

    #[test]
    fn slower_b_is_a_throughput_regression_and_timing_is_not_divergence() {
        let a = session("x", 100, |s| 5.0 / s as f64, 0.10);
        let b = session("x", 100, |s| 5.0 / s as f64, 0.12);
        let (c, _) = compare(&a, &b, opts());
        assert_eq!(c.first_divergence, None, "step time differs, training does not");
        assert!(c.throughput.regression);
        assert!((c.throughput.ratio.unwrap() - 0.1 / 0.12).abs() < 1e-9);
        let within = session("x", 100, |s| 5.0 / s as f64, 0.103);
        assert!(!compare(&a, &within, opts()).0.throughput.regression, "3% slower is inside 5%");
    }

    #[test]
    fn the_comparison_raises_the_live_baselines_alerts_on_b() {
        let a = session("x", 100, |s| 5.0 / s as f64, 0.1);
        let b = session("x", 100, |s| if s >= 40 { 1.0 } else { 5.0 / s as f64 }, 0.2);
        let (_, hub) = compare(&a, &b, opts());
        let kinds: Vec<_> = hub.state.alerts.iter().map(|a| (a.kind, a.severity, a.metric.as_str(), a.step)).collect();
        // Half A's tokens/s: beyond twice the tolerance, critical, once past warm-up.
        // B's loss jumps 7.8x above its newest level while still falling: a loss
        // spike of B's own as well, from the step it jumps (judged against the
        // noise around the fall, not the fall).
        assert_eq!(
            kinds,
            vec![(AlertKind::ThroughputRegression, Severity::Critical, "tokens_per_s", 21), (AlertKind::LossSpike, Severity::Critical, "loss", 40), (AlertKind::RunDivergence, Severity::Warn, "loss", 40)]
        );
        assert_eq!(hub.state.alerts[2].value, 1.0, "B's value where it departs");
        assert_eq!(hub.state.runs[0].alerts, vec![0, 1, 2], "on B's run");
    }

    #[test]
    fn alerts_differ_by_kind_run_and_metric() {
        let a = vec![serde_json::json!({"kind": "loss_spike", "run": "x", "metric": "loss", "step": 3})];
        let b = vec![serde_json::json!({"kind": "loss_spike", "run": "x", "metric": "loss", "step": 9}), serde_json::json!({"kind": "kl_spike", "run": "x", "metric": "kl"})];
        let d = alert_diff(&a, &b);
        assert!(d.only_a.is_empty());
        assert_eq!(d.only_b.len(), 1);
    }
}
