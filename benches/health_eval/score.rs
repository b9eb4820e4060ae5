//! Scoring detectors on the generated corpus (`synth`): per fault kind, recall,
//! precision and latency from onset; false alarms per 1,000 clean steps. An alarm
//! is a warn or critical alert. It is true when it has the fault's kind and is
//! raised at or after the onset; any alarm on a clean series, or before the onset,
//! is false (an escalation of an alert already raised is the same alarm); alarms of another kind after the onset (a loss spike during a
//! gradient explosion) are counted apart, as collateral.
use std::collections::BTreeMap;

use rlmon::health::detect::moe::balance;
use rlmon::health::stats::{mean, std_dev, Window};
use rlmon::health::monitor::RunMonitor;
use rlmon::health::{Alert, AlertKind, HealthConfig, SessionHealth, Severity};
use rlmon::metrics::catalog;

use super::synth::{Case, MEM_TOTAL};

/// Alerts of one case with the step at which each was raised.
pub type Raised = Vec<(u64, Alert)>;

/// rlmon's detectors, as the hub runs them, over one case.
pub fn run_rlmon(case: &Case) -> Raised {
    run_rlmon_with(case, Some(MEM_TOTAL))
}

/// rlmon's detectors over one case whose run declares `mem_total` (or none).
pub fn run_rlmon_with(case: &Case, mem_total: Option<f64>) -> Raised {
    run_rlmon_logged(case, mem_total, None)
}

/// rlmon's detectors over one case whose points were logged at the given
/// (training step, wall time) pairs (`None`: point `t` is step `t` at `t` s).
/// Each alert comes back with the index of the point it was raised at, so
/// onsets and latencies stay in logged points.
pub fn run_rlmon_logged(case: &Case, mem_total: Option<f64>, logged: Option<&[(u64, f64)]>) -> Raised {
    let mut h = SessionHealth::new();
    let cfg = HealthConfig::default();
    let (a, b) = if case.fault.as_ref().is_some_and(|f| f.kind == AlertKind::RunDivergence) {
        let a = h.add_run("baseline", &cfg);
        let b = h.add_run("run", &cfg);
        h.compare(a, b);
        (a, b)
    } else {
        (h.add_run("run#1", &cfg), h.add_run("run#2", &cfg))
    };
    if let Some(total) = mem_total {
        for r in &mut h.runs {
            r.set_memory_total(catalog::MEM_GPU_BYTES, total);
        }
    }
    let mut out = Vec::new();
    let (mut kept_a, mut kept_b) = (Kept::default(), Kept::default());
    for (t, values) in case.steps.iter().enumerate() {
        let (step, time_s) = logged.and_then(|l| l.get(t).copied()).unwrap_or((t as u64, t as f64));
        let at = t as u64;
        kept_a.resume(&mut h, a, step, &case.steps, mem_total, &cfg);
        out.extend(h.observe(a, step, time_s, values).into_iter().map(|x| (at, x)));
        kept_a.keep(step, time_s, t);
        if let Some(p) = &case.partner {
            kept_b.resume(&mut h, b, step, p, mem_total, &cfg);
            out.extend(h.observe(b, step, time_s, &p[t]).into_iter().map(|x| (at, x)));
            kept_b.keep(step, time_s, t);
        }
    }
    out
}

/// A run's points as the hub keeps them, for a resume: a log whose step goes
/// back (a restart from a checkpoint) is read by rlmon as the run resuming
/// there, its points from that step on discarded and its detectors rebuilt
/// from the rest (`Normalizer::push` and `Hub::resume`); the harness does the
/// same, so that a corpus is judged as `rlmon check` would judge its logs.
#[derive(Default)]
struct Kept {
    /// (step, wall time, index into the case's steps), in step order.
    points: Vec<(u64, f64, usize)>,
}

impl Kept {
    fn keep(&mut self, step: u64, time_s: f64, t: usize) {
        self.points.push((step, time_s, t));
    }

    /// Before a point at `step`: when it goes back, drops the kept points from it
    /// on and rebuilds run `run`'s detectors from the others (their alerts stand).
    fn resume(&mut self, h: &mut SessionHealth, run: usize, step: u64, steps: &[Vec<(rlmon::metrics::MetricName, f64)>], mem_total: Option<f64>, cfg: &HealthConfig) {
        if !self.points.last().is_some_and(|(last, ..)| step < *last) {
            return;
        }
        RESUMES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.points.retain(|(s, ..)| *s < step);
        let name = h.runs[run].run.clone();
        let mut monitor = RunMonitor::new(&name, cfg);
        if let Some(total) = mem_total {
            monitor.set_memory_total(catalog::MEM_GPU_BYTES, total);
        }
        for &(s, time_s, t) in &self.points {
            monitor.observe(s, time_s, &steps[t]);
        }
        h.runs[run] = monitor;
    }
}

/// Resumes the harness has made, over every case run so far.
pub static RESUMES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// rlmon's detectors over a run and its baseline, logged at their own (training
/// step, wall time) pairs: the points of both are fed in wall-time order, as a
/// live session sees them. An alert comes back with the index of the first point
/// of `case.steps` (the reference run) at or after the step it was raised at, so
/// onsets and latencies are in the reference's points.
pub fn run_rlmon_pair_logged(case: &Case, logged: &[(u64, f64)], partner_logged: &[(u64, f64)]) -> Raised {
    let Some(partner) = &case.partner else { return run_rlmon_logged(case, None, Some(logged)) };
    let mut h = SessionHealth::new();
    let cfg = HealthConfig::default();
    // A run against its baseline, faulty or clean.
    let a = h.add_run("baseline", &cfg);
    let b = h.add_run("run", &cfg);
    h.compare(a, b);
    let index_of = |step: u64| logged.iter().position(|(s, _)| *s >= step).unwrap_or(logged.len().saturating_sub(1)) as u64;
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < case.steps.len().min(logged.len()) || j < partner.len().min(partner_logged.len()) {
        let take_a = j >= partner.len().min(partner_logged.len()) || (i < case.steps.len().min(logged.len()) && logged[i].1 <= partner_logged[j].1);
        let (run, (step, time_s), values) = if take_a { (a, logged[i], &case.steps[i]) } else { (b, partner_logged[j], &partner[j]) };
        out.extend(h.observe(run, step, time_s, values).into_iter().map(|x| (index_of(step), x)));
        if take_a {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// The trivial baseline: a fixed z-score of 4 against the mean and standard
/// deviation of the last 50 points, on each kind's main metric, no persistence,
/// 20 quiet steps after an alarm; NaN/Inf alerts at once; two runs that should
/// agree alert on the first step whose values are not identical.
pub fn run_baseline(case: &Case) -> Raised {
    const Z: f64 = 4.0;
    // (kind, metric (`None`: the worst MoE layer balance), +1 up / -1 down)
    let watched: [(AlertKind, Option<&str>, f64); 13] = [
        (AlertKind::LossSpike, Some(catalog::LOSS), 1.0),
        (AlertKind::LossDivergence, Some(catalog::LOSS), 1.0),
        (AlertKind::SlowDrift, Some(catalog::LOSS), 1.0),
        (AlertKind::GradExplosion, Some(catalog::GRAD_NORM), 1.0),
        (AlertKind::GradVanishing, Some(catalog::GRAD_NORM), -1.0),
        (AlertKind::KlSpike, Some(catalog::KL), 1.0),
        (AlertKind::KlRunaway, Some(catalog::KL), 1.0),
        (AlertKind::RewardHacking, Some(catalog::RESPONSE_LEN), 1.0),
        (AlertKind::RewardSaturation, Some(catalog::REWARD_STD), -1.0),
        (AlertKind::EntropyCollapse, Some(catalog::ENTROPY), -1.0),
        (AlertKind::MemoryLeak, Some(catalog::MEM_GPU_BYTES), 1.0),
        (AlertKind::ExpertCollapse, None, -1.0),
        (AlertKind::ThroughputRegression, Some(catalog::TOKENS_PER_S), -1.0),
    ];
    let mut windows: BTreeMap<AlertKind, (Window, u64)> = watched.iter().map(|(k, _, _)| (*k, (Window::new(50), 0))).collect();
    let mut out = Vec::new();
    let mut nonfinite_quiet = 0u64;
    let alert = |kind, step, metric: &str, value| Alert {
        kind,
        severity: Severity::Warn,
        run: "run".into(),
        metric: metric.into(),
        step,
        time_s: step as f64,
        value,
        message: String::new(),
        peak: None,
        escalated_at: None,
    };
    let mut pair_done = false;
    for (t, values) in case.steps.iter().enumerate() {
        let step = t as u64;
        let get = |name: &str| values.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        if values.iter().any(|(_, v)| !v.is_finite()) && step >= nonfinite_quiet {
            out.push((step, alert(AlertKind::Nonfinite, step, "any", f64::NAN)));
            nonfinite_quiet = step + 20;
        }
        let worst_balance = (0..8)
            .filter_map(|l| {
                let loads: Vec<f64> = (0..8).filter_map(|e| get(&catalog::moe(l).load(e))).collect();
                balance(&loads).map(|b| b.balance)
            })
            .reduce(f64::min);
        for (kind, metric, dir) in watched {
            let x = match metric {
                Some(name) => get(name),
                None => worst_balance,
            };
            let Some(x) = x.filter(|x| x.is_finite()) else { continue };
            let (w, quiet) = windows.get_mut(&kind).expect("window per kind");
            if w.is_full() {
                let v = w.to_vec();
                let (m, s) = (mean(&v).unwrap_or(0.0), std_dev(&v).unwrap_or(0.0));
                if s > 0.0 && dir * (x - m) / s > Z && step >= *quiet {
                    out.push((step, alert(kind, step, metric.unwrap_or(catalog::MoeLayer::BALANCE), x)));
                    *quiet = step + 20;
                }
            }
            w.push(x);
        }
        if let (Some(p), false) = (&case.partner, pair_done) {
            let differs = p[t].iter().any(|(n, v)| get(n).is_some_and(|a| a != *v));
            if differs {
                let kind = if case.fault.as_ref().is_some_and(|f| f.kind == AlertKind::RunDivergence) { AlertKind::RunDivergence } else { AlertKind::Nondeterminism };
                out.push((step, alert(kind, step, catalog::LOSS, f64::NAN)));
                pair_done = true;
            }
        }
    }
    out
}

#[derive(Debug, Clone, Default)]
pub struct KindScore {
    pub cases: usize,
    pub detected: usize,
    /// Raised step minus onset, of each detected case.
    pub latencies: Vec<u64>,
    /// Alarms of this kind that were false (clean series, or before an onset).
    pub false_alarms: usize,
}

impl KindScore {
    pub fn recall(&self) -> f64 {
        if self.cases == 0 { f64::NAN } else { self.detected as f64 / self.cases as f64 }
    }

    pub fn precision(&self) -> f64 {
        let all = self.detected + self.false_alarms;
        if all == 0 { f64::NAN } else { self.detected as f64 / all as f64 }
    }

    pub fn latency_quantile(&self, q: f64) -> Option<u64> {
        let mut l = self.latencies.clone();
        l.sort_unstable();
        (!l.is_empty()).then(|| l[((l.len() - 1) as f64 * q).round() as usize])
    }
}

#[derive(Debug, Clone, Default)]
pub struct Scores {
    pub kinds: BTreeMap<AlertKind, KindScore>,
    /// Steps of clean series plus the steps before each onset.
    pub clean_steps: u64,
    pub false_alarms: usize,
    /// False alarms by what they fell on: the nearest benign event, or "noise".
    pub false_by_cause: BTreeMap<String, usize>,
    /// Alarms of another kind after an onset.
    pub collateral: usize,
    /// Info alerts (not alarms), for reference.
    pub infos: usize,
    /// Escalations of an alert already raised (to warn or critical): the same
    /// alarm, counted apart.
    pub escalations: usize,
}

impl Scores {
    pub fn false_per_1k(&self) -> f64 {
        1000.0 * self.false_alarms as f64 / self.clean_steps.max(1) as f64
    }
}

/// The benign event within a few steps of `step`, if any.
fn cause(case: &Case, step: u64) -> String {
    case.benign
        .iter()
        .filter(|b| step.abs_diff(b.step) <= 30 || (b.what == "kl_ramp" || b.what == "router_warmup") && step < 150)
        .min_by_key(|b| step.abs_diff(b.step))
        .map_or("noise".into(), |b| b.what.to_owned())
}

/// The warn and critical alerts that are alarms: an escalation of an alert
/// already at warn or above raises that alert's severity (the hub merges them)
/// and is not another alarm; one that lifts an info alert to warn is.
pub fn alarms(raised: &Raised) -> Vec<&(u64, Alert)> {
    let mut seen: Vec<(AlertKind, &str, u64)> = Vec::new();
    let mut out = Vec::new();
    for r in raised.iter().filter(|(_, a)| a.severity >= Severity::Warn) {
        let key = (r.1.kind, r.1.metric.as_str(), r.1.step);
        if r.1.escalated_at.is_some() && seen.contains(&key) {
            continue;
        }
        seen.push(key);
        out.push(r);
    }
    out
}

/// Scores `detector` over `cases`.
pub fn score(cases: &[Case], detector: impl Fn(&Case) -> Raised) -> Scores {
    let mut s = Scores::default();
    for case in cases {
        s.add(case, &detector(case));
    }
    s
}

impl Scores {
    /// Adds one case and the alerts raised on it.
    pub fn add(&mut self, case: &Case, raised: &Raised) {
        let s = self;
        if s.kinds.is_empty() {
            for k in AlertKind::ALL {
                s.kinds.insert(k, KindScore::default());
            }
        }
        s.infos += raised.iter().filter(|(_, a)| a.severity == Severity::Info).count();
        let alarms = alarms(raised);
        s.escalations += raised.iter().filter(|(_, a)| a.severity >= Severity::Warn).count() - alarms.len();
        let alarms = alarms.into_iter();
        match &case.fault {
            None => {
                s.clean_steps += case.steps.len() as u64;
                for (at, a) in alarms {
                    s.false_alarms += 1;
                    s.kinds.get_mut(&a.kind).expect("kind").false_alarms += 1;
                    *s.false_by_cause.entry(cause(case, *at)).or_default() += 1;
                }
            }
            Some(f) => {
                s.clean_steps += f.onset;
                let mut first: Option<u64> = None;
                for (at, a) in alarms {
                    if *at < f.onset {
                        s.false_alarms += 1;
                        s.kinds.get_mut(&a.kind).expect("kind").false_alarms += 1;
                        *s.false_by_cause.entry(cause(case, *at)).or_default() += 1;
                    } else if a.kind == f.kind {
                        first = Some(first.map_or(*at, |x| x.min(*at)));
                    } else {
                        s.collateral += 1;
                    }
                }
                let k = s.kinds.get_mut(&f.kind).expect("kind");
                k.cases += 1;
                if let Some(at) = first {
                    k.detected += 1;
                    k.latencies.push(at - f.onset);
                }
            }
        }
    }
}

/// The table the benchmark prints: one row per kind, then the false-alarm rate.
pub fn table(title: &str, s: &Scores) -> String {
    let fmt = |v: f64| if v.is_nan() { "-".to_owned() } else { format!("{v:.2}") };
    let q = |k: &KindScore, p| k.latency_quantile(p).map_or("-".into(), |v| v.to_string());
    let mut out = format!("{title}\n| kind | cases | recall | precision | latency median | latency p90 | false alarms |\n|---|---:|---:|---:|---:|---:|---:|\n");
    for (kind, k) in &s.kinds {
        out.push_str(&format!("| {kind} | {} | {} | {} | {} | {} | {} |\n", k.cases, fmt(k.recall()), fmt(k.precision()), q(k, 0.5), q(k, 0.9), k.false_alarms));
    }
    // Every kind's latencies together, next to the per-kind rows.
    let all = KindScore { latencies: s.kinds.values().flat_map(|k| k.latencies.iter().copied()).collect(), ..Default::default() };
    let spikes = KindScore {
        latencies: s.kinds.iter().filter(|(k, _)| matches!(k, AlertKind::LossSpike | AlertKind::GradExplosion | AlertKind::KlSpike)).flat_map(|(_, k)| k.latencies.iter().copied()).collect(),
        ..Default::default()
    };
    out.push_str(&format!("\nlatency (steps from onset), all kinds: median {} p90 {}; spikes and explosions (loss_spike, grad_explosion, kl_spike): median {} p90 {}\n", q(&all, 0.5), q(&all, 0.9), q(&spikes, 0.5), q(&spikes, 0.9)));
    out.push_str(&format!(
        "clean steps {}, false warn/critical alarms {} = {:.3} per 1,000 clean steps; collateral alarms {}; info alerts {}; escalations (not counted as alarms) {}\n",
        s.clean_steps,
        s.false_alarms,
        s.false_per_1k(),
        s.collateral,
        s.infos,
        s.escalations
    ));
    if !s.false_by_cause.is_empty() {
        let causes: Vec<String> = s.false_by_cause.iter().map(|(c, n)| format!("{c}: {n}")).collect();
        out.push_str(&format!("false alarms by nearest benign event: {}\n", causes.join(", ")));
    }
    out
}
