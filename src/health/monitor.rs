//! Every detector of one run behind one call, and the session-wide view: runs,
//! replicas that must agree (nondeterminism), and memory telemetry. The hub feeds
//! it live; `rlmon check` feeds it from a log: both see the same alerts.
use std::collections::{BTreeMap, VecDeque};

use super::config::HealthConfig;
use super::detect::moe::ExpertCollapse;
use super::detect::rl::{EntropyCollapse, RewardHacking, RewardSaturation};
use super::detect::spike::{Direction, Spike};
use super::detect::trend::{KlRunaway, LossDivergence, MemoryLeak, ThroughputRegression, KL_FLOOR};
use super::detect::{Point, Raised};
use super::divergence::{DivergenceTracker, Tolerance};
use super::stats::Cooldown;
use super::{Alert, AlertKind, Severity};
use crate::metrics::MetricName;

/// Per-run memory metrics watched for leaks.
pub const RUN_MEMORY_METRICS: [&str; 2] = ["mem/gpu_bytes", "mem/rss_bytes"];

/// The detectors of one run.
#[derive(Debug, Clone)]
pub struct RunMonitor {
    pub run: String,
    config: HealthConfig,
    spikes: Vec<(AlertKind, Spike)>,
    divergence: LossDivergence,
    kl_runaway: KlRunaway,
    hacking: RewardHacking,
    saturation: RewardSaturation,
    entropy: EntropyCollapse,
    moe: ExpertCollapse,
    throughput: ThroughputRegression,
    memory: BTreeMap<String, MemoryLeak>,
    /// Memory available to this run (GPU or host), from telemetry.
    memory_total: BTreeMap<String, f64>,
    nonfinite: BTreeMap<String, Cooldown>,
}

impl RunMonitor {
    pub fn new(run: &str, config: &HealthConfig) -> Self {
        let c = |k| config.get(k).clone();
        RunMonitor {
            run: run.to_owned(),
            spikes: vec![
                (AlertKind::LossSpike, Spike::new(c(AlertKind::LossSpike), Direction::Up, 0.0, "jumped")),
                (AlertKind::GradExplosion, Spike::new(c(AlertKind::GradExplosion), Direction::Up, 0.0, "exploded")),
                (AlertKind::KlSpike, Spike::new(c(AlertKind::KlSpike), Direction::Up, KL_FLOOR, "spiked")),
                (AlertKind::GradVanishing, Spike::new(c(AlertKind::GradVanishing), Direction::Down, 0.0, "vanished")),
            ],
            divergence: LossDivergence::new(c(AlertKind::LossDivergence)),
            kl_runaway: KlRunaway::new(c(AlertKind::KlRunaway)),
            hacking: RewardHacking::new(c(AlertKind::RewardHacking)),
            saturation: RewardSaturation::new(c(AlertKind::RewardSaturation)),
            entropy: EntropyCollapse::new(c(AlertKind::EntropyCollapse)),
            moe: ExpertCollapse::new(c(AlertKind::ExpertCollapse)),
            throughput: ThroughputRegression::new(c(AlertKind::ThroughputRegression)),
            memory: BTreeMap::new(),
            memory_total: BTreeMap::new(),
            nonfinite: BTreeMap::new(),
            config: config.clone(),
        }
    }

    /// The memory `metric` (a run or telemetry memory series) may grow to.
    pub fn set_memory_total(&mut self, metric: &str, total: f64) {
        self.memory_total.insert(metric.to_owned(), total);
    }

    /// Sets the baseline throughput (tokens/s) regressions are also judged against.
    pub fn set_throughput_baseline(&mut self, rate: f64) {
        self.throughput.set_baseline(rate);
    }

    /// The alerts raised by one step's values, in a stable order.
    pub fn observe(&mut self, step: u64, time_s: f64, values: &[(MetricName, f64)]) -> Vec<Alert> {
        let p = Point { step, time_s, values };
        let mut raised: Vec<(AlertKind, Raised)> = Vec::new();
        let nonfinite = self.config.get(AlertKind::Nonfinite).clone();
        if nonfinite.enabled {
            for (name, v) in values {
                let gate = self.nonfinite.entry(name.to_string()).or_insert_with(|| Cooldown::new(nonfinite.cooldown));
                let bad = !v.is_finite();
                if let Some(sev) = gate.gate(bad.then_some(Severity::Critical)) {
                    let message = format!("{name} is {} at step {step}", if v.is_nan() { "NaN" } else { "infinite" });
                    raised.push((AlertKind::Nonfinite, Raised { severity: sev, metric: name.to_string(), step, value: *v, message }));
                }
            }
        }
        for (kind, spike) in &mut self.spikes {
            if let Some(r) = spike.observe(&p) {
                raised.push((*kind, r));
            }
        }
        let mut push = |kind, r: Option<Raised>| {
            if let Some(r) = r {
                raised.push((kind, r));
            }
        };
        push(AlertKind::LossDivergence, self.divergence.observe(&p));
        push(AlertKind::KlRunaway, self.kl_runaway.observe(&p));
        push(AlertKind::RewardHacking, self.hacking.observe(&p));
        push(AlertKind::RewardSaturation, self.saturation.observe(&p));
        push(AlertKind::EntropyCollapse, self.entropy.observe(&p));
        push(AlertKind::ThroughputRegression, self.throughput.observe(&p));
        for r in self.moe.observe(&p) {
            raised.push((AlertKind::ExpertCollapse, r));
        }
        for metric in RUN_MEMORY_METRICS {
            if let Some(v) = p.get(metric) {
                let total = self.memory_total.get(metric).copied();
                if let Some(r) = self.memory_series(metric).observe(step, v, total) {
                    raised.push((AlertKind::MemoryLeak, r));
                }
            }
        }
        raised.into_iter().map(|(kind, r)| self.alert(kind, r, time_s)).collect()
    }

    /// One sample of a telemetry memory series attributed to this run
    /// (`gpu0/proc_mem_bytes` for a run on cuda:0, `host/proc_rss_bytes`).
    pub fn observe_memory(&mut self, metric: &str, sample: u64, time_s: f64, bytes: f64) -> Option<Alert> {
        let total = self.memory_total.get(metric).copied();
        let r = self.memory_series(metric).observe(sample, bytes, total)?;
        Some(self.alert(AlertKind::MemoryLeak, r, time_s))
    }

    fn memory_series(&mut self, metric: &str) -> &mut MemoryLeak {
        let settings = self.config.get(AlertKind::MemoryLeak).clone();
        self.memory.entry(metric.to_owned()).or_insert_with(|| MemoryLeak::new(settings, metric))
    }

    fn alert(&self, kind: AlertKind, r: Raised, time_s: f64) -> Alert {
        Alert { kind, severity: r.severity, run: self.run.clone(), metric: r.metric, step: r.step, time_s, value: r.value, message: r.message }
    }
}

/// Metrics compared between runs that should agree: the ones a seed fixes (not
/// timings or memory).
pub const COMPARED_METRICS: [&str; 6] = ["loss", "grad_norm", "kl", "reward", "entropy", "lr"];

/// Values one run has and its partner has not reached yet.
const MAX_PENDING: usize = 10_000;

/// Two runs that should agree, compared step by step as their points arrive.
#[derive(Debug, Clone)]
pub struct PairMonitor {
    pub kind: AlertKind,
    /// Indices of the two runs (`a` is the reference).
    pub a: usize,
    pub b: usize,
    tol: Tolerance,
    trackers: BTreeMap<String, (DivergenceTracker, VecDeque<(u64, f64)>, VecDeque<(u64, f64)>)>,
    done: bool,
}

impl PairMonitor {
    pub fn new(kind: AlertKind, a: usize, b: usize, tol: Tolerance) -> Self {
        PairMonitor { kind, a, b, tol, trackers: BTreeMap::new(), done: false }
    }

    /// Values of run `run` (either of the pair) at `step`; the first divergence
    /// step of a metric, once, as (metric, step, value of a, value of b).
    pub fn observe(&mut self, run: usize, step: u64, values: &[(MetricName, f64)]) -> Option<(String, u64, f64, f64)> {
        if self.done || (run != self.a && run != self.b) {
            return None;
        }
        for (name, v) in values.iter().filter(|(n, _)| COMPARED_METRICS.contains(&n.as_ref())) {
            let tol = self.tol;
            let (tracker, pa, pb) =
                self.trackers.entry(name.to_string()).or_insert_with(|| (DivergenceTracker::new(tol), VecDeque::new(), VecDeque::new()));
            let (mine, theirs) = if run == self.a { (pa, pb) } else { (pb, pa) };
            // Steps the partner skipped can never pair up.
            while theirs.front().is_some_and(|(s, _)| *s < step) {
                theirs.pop_front();
            }
            match theirs.front() {
                Some(&(s, other)) if s == step => {
                    theirs.pop_front();
                    let (va, vb) = if run == self.a { (*v, other) } else { (other, *v) };
                    if let Some(at) = tracker.observe(step, va, vb) {
                        self.done = true;
                        return Some((name.to_string(), at, va, vb));
                    }
                }
                _ => {
                    if mine.len() < MAX_PENDING {
                        mine.push_back((step, *v));
                    }
                }
            }
        }
        None
    }
}

/// The replica group and index of a run named `base#k`.
pub fn replica_of(name: &str) -> Option<(&str, u32)> {
    let (base, k) = name.rsplit_once('#')?;
    Some((base, k.parse().ok()?))
}

/// The health of a whole session: one monitor per run, and pairs of replicas.
#[derive(Debug, Clone, Default)]
pub struct SessionHealth {
    pub runs: Vec<RunMonitor>,
    pairs: Vec<PairMonitor>,
}

impl SessionHealth {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a run; replicas (`base#2`, ...) are paired with the first of their group
    /// seen. Returns the run's index.
    pub fn add_run(&mut self, name: &str, config: &HealthConfig) -> usize {
        let id = self.runs.len();
        self.runs.push(RunMonitor::new(name, config));
        if let Some((base, _)) = replica_of(name) {
            let first = self.runs[..id].iter().position(|r| replica_of(&r.run).is_some_and(|(b, _)| b == base));
            let nd = config.get(AlertKind::Nondeterminism);
            if let (Some(first), true) = (first, nd.enabled) {
                self.pairs.push(PairMonitor::new(AlertKind::Nondeterminism, first, id, Tolerance::new(1e-6, nd.warn, nd.persistence as usize)));
            }
        }
        id
    }

    /// Compares two runs for their first divergence (a run against a baseline).
    pub fn compare(&mut self, a: usize, b: usize) {
        let rd = self.runs.get(b).map(|r| r.config.get(AlertKind::RunDivergence).clone());
        if let Some(rd) = rd.filter(|s| s.enabled) {
            self.pairs.push(PairMonitor::new(AlertKind::RunDivergence, a, b, Tolerance::new(1e-6, rd.warn, rd.persistence as usize)));
        }
    }

    pub fn observe(&mut self, run: usize, step: u64, time_s: f64, values: &[(MetricName, f64)]) -> Vec<Alert> {
        let Some(monitor) = self.runs.get_mut(run) else { return Vec::new() };
        let mut alerts = monitor.observe(step, time_s, values);
        for pair in &mut self.pairs {
            if let Some((metric, at, va, vb)) = pair.observe(run, step, values) {
                let (a, b) = (&self.runs[pair.a].run, &self.runs[pair.b].run);
                let what = if pair.kind == AlertKind::Nondeterminism { "replicas differ" } else { "runs diverge" };
                alerts.push(Alert {
                    kind: pair.kind,
                    severity: if pair.kind == AlertKind::Nondeterminism { Severity::Critical } else { Severity::Warn },
                    run: b.clone(),
                    metric: metric.clone(),
                    step: at,
                    time_s,
                    value: vb,
                    message: format!("{what}: {b} and {a} part ways on {metric} from step {at} ({vb:.6} vs {va:.6} at step {step})"),
                });
            }
        }
        alerts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(loss: f64) -> Vec<(MetricName, f64)> {
        vec![("loss".into(), loss), ("grad_norm".into(), 1.0)]
    }

    #[test]
    fn nan_is_critical_at_its_step_once() {
        let mut m = RunMonitor::new("a", &HealthConfig::default());
        assert!(m.observe(1, 0.1, &vals(2.0)).is_empty());
        let a = m.observe(2, 0.2, &vals(f64::NAN));
        assert_eq!(a.len(), 1);
        assert_eq!((a[0].kind, a[0].severity, a[0].step, a[0].run.as_str()), (AlertKind::Nonfinite, Severity::Critical, 2, "a"));
        assert!(m.observe(3, 0.3, &vals(f64::NAN)).is_empty(), "same event");
    }

    #[test]
    fn replicas_report_the_first_differing_step() {
        let mut h = SessionHealth::new();
        let cfg = HealthConfig::default();
        h.add_run("base#1", &cfg);
        h.add_run("other", &cfg);
        h.add_run("base#2", &cfg);
        let mut alerts = Vec::new();
        for step in 0..50u64 {
            // The second replica runs a step behind: pairing must still work.
            alerts.extend(h.observe(0, step, 0.0, &vals(2.0)));
            if step > 0 {
                let prev = step - 1;
                let d = if prev >= 30 { 1e-2 * (prev - 29) as f64 } else { 0.0 };
                alerts.extend(h.observe(2, prev, 0.0, &vals(2.0 + d)));
            }
            alerts.extend(h.observe(1, step, 0.0, &vals(3.0)));
        }
        assert_eq!(alerts.len(), 1, "{alerts:?}");
        assert_eq!((alerts[0].kind, alerts[0].step, alerts[0].run.as_str()), (AlertKind::Nondeterminism, 30, "base#2"));
    }
}
