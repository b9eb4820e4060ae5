//! Every detector of one run behind one call, and the session-wide view: runs,
//! replicas that must agree (nondeterminism), and memory telemetry. The hub feeds
//! it live; `rlmon check` feeds it from a log: both see the same alerts.
use std::collections::{BTreeMap, VecDeque};
use std::sync::OnceLock;

use super::config::{HealthConfig, KindSettings};
use super::detect::trend::MemoryLeak;
use super::detect::{self, Detector, Point, Raised};
use super::divergence::{DivergenceTracker, PartingTracker, Tolerance};
use super::{Alert, AlertKind, Severity};
use crate::metrics::{catalog, MetricName};
use crate::report::format::compact;

/// Per-run memory metrics watched for leaks, from the run's own points.
pub const RUN_MEMORY_METRICS: [&str; 3] = [catalog::MEM_GPU_BYTES, catalog::MEM_RSS_BYTES, catalog::MEM_HOST_PCT];

/// The detectors of one run.
#[derive(Debug)]
pub struct RunMonitor {
    pub run: String,
    config: HealthConfig,
    /// The enabled per-point detectors, in the order their alerts come out.
    detectors: Vec<Box<dyn Detector>>,
    /// What the detectors raised at the point under way, before it becomes alerts.
    raised: Vec<Raised>,
    /// Memory leaks; `None` when the kind is disabled.
    memory: Option<MemoryWatch>,
}

impl RunMonitor {
    pub fn new(run: &str, config: &HealthConfig) -> Self {
        let leaks = config.get(AlertKind::MemoryLeak);
        RunMonitor {
            run: run.to_owned(),
            config: config.clone(),
            detectors: detect::for_run(config),
            raised: Vec::new(),
            memory: leaks.enabled.then(|| MemoryWatch::new(leaks.clone())),
        }
    }

    /// The memory `metric` (a run or telemetry memory series) may grow to.
    pub fn set_memory_total(&mut self, metric: &str, total: f64) {
        if let Some(m) = &mut self.memory {
            m.totals.insert(metric.to_owned(), total);
        }
    }

    /// The alerts raised by one step's values, in a stable order: the detectors'
    /// order, then memory leaks.
    pub fn observe(&mut self, step: u64, time_s: f64, values: &[(MetricName, f64)]) -> Vec<Alert> {
        let p = Point { step, time_s, values };
        let mut alerts = Vec::new();
        for d in &mut self.detectors {
            d.observe_into(&p, &mut self.raised);
            if !self.raised.is_empty() {
                let kind = d.kind();
                alerts.extend(self.raised.drain(..).map(|r| alert(&self.run, kind, r, time_s)));
            }
        }
        if let Some(m) = &mut self.memory {
            for metric in RUN_MEMORY_METRICS {
                if let Some(r) = p.get(metric).and_then(|v| m.observe(metric, step, v)) {
                    alerts.push(alert(&self.run, AlertKind::MemoryLeak, r, time_s));
                }
            }
        }
        alerts
    }

    /// One sample of a telemetry memory series attributed to this run
    /// (`gpu0/proc_mem_bytes` for a run on cuda:0, `host/proc_rss_bytes`).
    pub fn observe_memory(&mut self, metric: &str, sample: u64, time_s: f64, bytes: f64) -> Option<Alert> {
        let r = self.memory.as_mut()?.observe(metric, sample, bytes)?;
        Some(alert(&self.run, AlertKind::MemoryLeak, r, time_s))
    }
}

fn alert(run: &str, kind: AlertKind, r: Raised, time_s: f64) -> Alert {
    Alert { kind, severity: r.severity, run: run.to_owned(), metric: r.metric, step: r.step, time_s, value: r.value, message: r.message, peak: r.peak, escalated_at: r.escalated_at }
}

/// Memory leaks of one run, one detector per series. Not a [`Detector`]: besides
/// the run's own memory metrics it is fed process memory from telemetry, between
/// steps and counted in samples, and the totals it judges against come from
/// telemetry too; the hub reaches it through [`RunMonitor::observe_memory`] and
/// [`RunMonitor::set_memory_total`].
#[derive(Debug, Clone)]
struct MemoryWatch {
    settings: KindSettings,
    series: BTreeMap<String, MemoryLeak>,
    /// Memory available to each series (GPU or host), from telemetry.
    totals: BTreeMap<String, f64>,
}

impl MemoryWatch {
    fn new(settings: KindSettings) -> Self {
        MemoryWatch { settings, series: BTreeMap::new(), totals: BTreeMap::new() }
    }

    fn observe(&mut self, metric: &str, sample: u64, bytes: f64) -> Option<Raised> {
        // A share of the host's memory runs into 100%.
        let total = self.totals.get(metric).copied().or((metric == catalog::MEM_HOST_PCT).then_some(100.0));
        // Looked up before inserting: one allocation per series, not per sample.
        if !self.series.contains_key(metric) {
            self.series.insert(metric.to_owned(), MemoryLeak::new(self.settings.clone(), metric));
        }
        self.series.get_mut(metric)?.observe(sample, bytes, total)
    }
}

/// Values one run has and its partner has not reached yet.
const MAX_PENDING: usize = 10_000;

type Pending = VecDeque<(u64, f64)>;

/// One compared metric of a pair. Replicas log the same steps and must agree
/// point for point: the exact tracker, with values of `a` and of `b` waiting for
/// the other. A run against its baseline (other seed, other logging) is judged
/// by the level of their difference at interpolated steps.
#[derive(Debug, Clone)]
enum Compared {
    Exact(DivergenceTracker, Pending, Pending),
    Level(PartingTracker),
}

/// Where a pair parted: the metric, the first step, the values of `a` and `b`
/// there, and the step those values are from (for replicas, the step the
/// divergence was confirmed at).
pub type Parted = (String, u64, f64, f64, u64);

/// The metrics two runs that should agree are compared on: the catalog's
/// [`catalog::replicas_agree`] names, listed once, so that testing every value of
/// every step costs a few string comparisons. Only plain names: no metric family
/// with dimensions (GPU, layer, expert) has to agree (tested below).
fn compared_metrics() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| catalog::CATALOG.iter().map(|m| m.pattern).filter(|p| !p.contains('{') && catalog::replicas_agree(p)).collect())
}

/// Two runs that should agree, compared step by step as their points arrive.
#[derive(Debug, Clone)]
pub struct PairMonitor {
    pub kind: AlertKind,
    /// Indices of the two runs (`a` is the reference).
    pub a: usize,
    pub b: usize,
    tol: Tolerance,
    /// The compared metrics seen so far.
    metrics: BTreeMap<String, Compared>,
    done: bool,
}

impl PairMonitor {
    pub fn new(kind: AlertKind, a: usize, b: usize, tol: Tolerance) -> Self {
        PairMonitor { kind, a, b, tol, metrics: BTreeMap::new(), done: false }
    }

    /// Values of run `run` (either of the pair) at `step`; the first divergence
    /// of a metric, once.
    pub fn observe(&mut self, run: usize, step: u64, values: &[(MetricName, f64)]) -> Option<Parted> {
        if self.done || (run != self.a && run != self.b) {
            return None;
        }
        let compared = compared_metrics();
        for (name, v) in values.iter().filter(|(n, _)| compared.contains(&n.as_ref())) {
            let (kind, tol) = (self.kind, self.tol);
            let known = match self.metrics.get_mut(name.as_ref()) {
                Some(known) => known,
                None => self.metrics.entry(name.to_string()).or_insert_with(|| match kind {
                    AlertKind::RunDivergence => Compared::Level(PartingTracker::new(tol)),
                    _ => Compared::Exact(DivergenceTracker::new(tol), VecDeque::new(), VecDeque::new()),
                }),
            };
            let (tracker, pa, pb) = match known {
                Compared::Exact(tracker, pa, pb) => (tracker, pa, pb),
                Compared::Level(tracker) => {
                    let parted = if run == self.a { tracker.observe_baseline(step, *v) } else { tracker.observe_run(step, *v) };
                    if let Some(j) = parted {
                        self.done = true;
                        return Some((name.to_string(), j.step, j.baseline, j.run, j.step));
                    }
                    continue;
                }
            };
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
                        return Some((name.to_string(), at, va, vb, step));
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
#[derive(Debug, Default)]
pub struct SessionHealth {
    pub runs: Vec<RunMonitor>,
    pairs: Vec<PairMonitor>,
    /// Per job of several ranks (by the job's run index): its ranks compared.
    stragglers: BTreeMap<usize, detect::straggler::RankStraggler>,
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

    /// One point of rank `rank` of job `job` (the job's run index), after its own
    /// run's detectors saw it: the job's ranks are compared with each other. The
    /// alert, if any, is the job's.
    pub fn observe_rank(&mut self, job: usize, rank: u32, step: u64, time_s: f64, values: &[(MetricName, f64)]) -> Option<Alert> {
        let monitor = self.runs.get(job)?;
        let settings = monitor.config.get(AlertKind::RankStraggler);
        if !settings.enabled {
            return None;
        }
        let find = |name: &str| values.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let detector = self.stragglers.entry(job).or_insert_with(|| detect::straggler::RankStraggler::new(settings.clone()));
        let raised = detector.observe(rank, step, find(catalog::TOKENS_PER_S), find(catalog::STEP_TIME_S))?;
        Some(alert(&monitor.run, AlertKind::RankStraggler, raised, time_s))
    }

    pub fn observe(&mut self, run: usize, step: u64, time_s: f64, values: &[(MetricName, f64)]) -> Vec<Alert> {
        let Some(monitor) = self.runs.get_mut(run) else { return Vec::new() };
        let mut alerts = monitor.observe(step, time_s, values);
        for pair in &mut self.pairs {
            if let Some((metric, at, va, vb, values_at)) = pair.observe(run, step, values) {
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
                    peak: None,
                    escalated_at: None,
                    message: format!("{what}: {b} and {a} part ways on {metric} from step {at} ({} vs {} at step {values_at}, relative difference {})", compact(vb), compact(va), compact((vb - va).abs() / va.abs().max(vb.abs()).max(f64::MIN_POSITIVE))),
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
        let both = vec![("loss".into(), f64::NAN), ("grad_norm".into(), f64::INFINITY)];
        let mut m = RunMonitor::new("b", &HealthConfig::default());
        let a = m.observe(1, 0.1, &both);
        assert_eq!(a.len(), 1, "one alert for one broken step");
        assert_eq!(a[0].message, "loss is NaN, grad_norm is infinite at step 1");
    }

    #[test]
    fn a_share_of_the_hosts_memory_that_keeps_growing_runs_into_its_100_percent() {
        // RLlib's `perf/ram_util_percent`: 21% climbing 0.1 points a sample, with
        // jitter, against a flat run with the same jitter.
        let jitter = |i: u64| 0.3 * ((i as f64) * 1.3).sin();
        let run = |climb: f64| {
            let mut m = RunMonitor::new("a", &HealthConfig::default());
            (0..600u64).flat_map(|i| m.observe(i, 0.0, &[(catalog::MEM_HOST_PCT.into(), 21.0 + climb * i as f64 + jitter(i))])).filter(|a| a.kind == AlertKind::MemoryLeak).collect::<Vec<_>>()
        };
        let leak = run(0.1);
        assert!(!leak.is_empty(), "the climb is a leak");
        assert!(leak[0].message.contains("points per sample") && leak[0].message.contains("full in about"), "{}", leak[0].message);
        assert!(run(0.0).is_empty(), "a flat share is none");
    }

    #[test]
    fn a_disabled_kind_raises_nothing() {
        use crate::health::KindOverride;
        let off = KindOverride { enabled: Some(false), ..Default::default() };
        let mut cfg = HealthConfig::default();
        cfg.apply(AlertKind::Nonfinite, &off);
        cfg.apply(AlertKind::MemoryLeak, &off);
        let mut m = RunMonitor::new("a", &cfg);
        m.set_memory_total("host/proc_rss_bytes", 1e9);
        for step in 0..200u64 {
            assert!(m.observe(step, 0.0, &vals(f64::NAN)).is_empty());
            assert!(m.observe_memory("host/proc_rss_bytes", step, 0.0, 1e6 * (1 + step) as f64).is_none());
        }
    }

    #[test]
    fn compared_metrics_are_every_name_replicas_must_agree_on() {
        assert!(catalog::CATALOG.iter().filter(|m| m.pattern.contains('{')).all(|m| !m.replicas_agree), "a dimensioned family must agree: compare it too");
        for name in [catalog::LOSS, catalog::GRAD_NORM, catalog::KL, catalog::REWARD, catalog::ENTROPY, catalog::LR] {
            assert!(compared_metrics().contains(&name), "{name}");
        }
        assert!(!compared_metrics().contains(&catalog::TOKENS_PER_S));
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
