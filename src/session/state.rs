//! The session's state as views see it: runs with their metric series, telemetry
//! series, GPU status and the event log.
use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use super::event::{GpuStatus, LogLevel, RunId};
use crate::health::{Alert, Severity};
use crate::metrics::{catalog, throughput, Clock, Series};

/// Lines kept for the events view; older ones are dropped.
pub const LOG_CAPACITY: usize = 2_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    Pending,
    Running,
    Finished,
    Failed,
    Cancelled,
    /// Stopped by rlmon on an alert (`on_critical`); `error` names the alert.
    Stopped,
}

impl RunState {
    pub fn is_over(&self) -> bool {
        matches!(self, RunState::Finished | RunState::Failed | RunState::Cancelled | RunState::Stopped)
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            RunState::Pending => "pending",
            RunState::Running => "running",
            RunState::Finished => "finished",
            RunState::Failed => "failed",
            RunState::Cancelled => "cancelled",
            RunState::Stopped => "stopped",
        }
    }
}

#[derive(Debug, Clone)]
pub struct RunRecord {
    pub name: String,
    pub workload: String,
    /// The device as resolved at start (`cuda:0`, `cpu`); the request until then.
    pub device: String,
    pub total_steps: u64,
    pub threads: Option<usize>,
    pub state: RunState,
    /// Last step reported (0 before the first).
    pub step: u64,
    /// Seconds since the run started, at its last step.
    pub time_s: f64,
    pub series: BTreeMap<String, Series>,
    /// Each step's time, kept once for all of `series` (see [`Clock`]).
    pub clock: Clock,
    /// Why the run failed.
    pub error: Option<String>,
    /// Indices into `SessionState::alerts` of this run's alerts, oldest first.
    pub alerts: Vec<usize>,
    /// Hardware price per hour, for cost figures.
    pub price_per_hour: Option<f64>,
    /// For one rank of a job of several processes: the job's run and the rank.
    pub rank_of: Option<(RunId, u32)>,
    /// What rlmon does to the run on a critical alert (`on_critical`), in words;
    /// `None` when it is not armed.
    pub armed: Option<String>,
    /// Wall-clock time (Unix seconds) of the run's newest step, live only.
    pub last_step_unix: Option<f64>,
}

impl RunRecord {
    pub fn new(name: String, workload: String, device: String, total_steps: u64) -> Self {
        RunRecord {
            name,
            workload,
            device,
            total_steps,
            threads: None,
            state: RunState::Pending,
            step: 0,
            time_s: 0.0,
            series: BTreeMap::new(),
            clock: Clock::new(),
            error: None,
            alerts: Vec::new(),
            price_per_hour: None,
            rank_of: None,
            armed: None,
            last_step_unix: None,
        }
    }

    pub fn series(&self, name: &str) -> Option<&Series> {
        self.series.get(name)
    }

    pub fn last(&self, name: &str) -> Option<f64> {
        self.series(name).and_then(Series::last)
    }

    /// Rate of `count` (`tokens`, `samples`) per second of step time over the last
    /// `window` steps, or over the whole run after warm-up when `window` is `None`.
    pub fn rate(&self, count: &str, window: Option<usize>) -> Option<f64> {
        let counts = self.series(count)?;
        let secs = self.series(catalog::STEP_TIME_S)?;
        match window {
            Some(n) => throughput::rate(&counts.tail(n), &secs.tail(n)),
            // throughput::run_rate's rule, summed where the series keep their points.
            None => {
                let n = counts.len().min(secs.len());
                let k = n - throughput::warmup_steps(n).min(n);
                let total_s = secs.finite_sum(secs.len() - k..secs.len());
                let total_c = counts.finite_sum(counts.len() - k..counts.len());
                (total_s > 0.0).then(|| total_c / total_s)
            }
        }
    }

    /// The worst severity among this run's alerts that `open` keeps (e.g. not
    /// acknowledged).
    pub fn worst_alert(&self, all: &[Alert], open: impl Fn(usize) -> bool) -> Option<Severity> {
        self.alerts.iter().filter(|i| open(**i)).filter_map(|i| all.get(*i)).map(|a| a.severity).max()
    }

    /// Peak memory of the run: the largest `mem/gpu_bytes` or `mem/rss_bytes` seen.
    pub fn peak_memory_bytes(&self) -> Option<f64> {
        [catalog::MEM_GPU_BYTES, catalog::MEM_RSS_BYTES]
            .iter()
            .filter_map(|m| self.series(m))
            .filter_map(|s| s.extent())
            .map(|e| e.max.value)
            .reduce(f64::max)
    }

    /// Cost per 1,000 samples at the run's post-warm-up rate, and cost so far, when
    /// the config gives a price per hour.
    pub fn cost(&self) -> Option<(Option<f64>, f64)> {
        let price = self.price_per_hour?;
        let per_1k = self.rate(catalog::SAMPLES, None).and_then(|r| crate::metrics::cost::per_1k_samples(price, r));
        Some((per_1k, crate::metrics::cost::so_far(price, self.time_s)))
    }

    /// Seconds until the run reaches its total, from recent step times.
    pub fn eta_s(&self) -> Option<f64> {
        if self.total_steps == 0 {
            return None; // a command run without a known total
        }
        let secs = self.series(catalog::STEP_TIME_S)?;
        throughput::eta_s(self.total_steps.saturating_sub(self.step), &secs.tail(20))
    }
}

/// The spread across one job's ranks (see [`SessionState::rank_spread`]); a
/// spread's speeds are tokens/s, and 1/step time for `step_time`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankSpread {
    pub ranks: usize,
    pub tokens_per_s: Option<crate::health::detect::straggler::Spread>,
    pub step_time: Option<crate::health::detect::straggler::Spread>,
}

/// An alert with the session time it was raised at (alerts carry their run's time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RaisedAlert {
    pub at_s: f64,
    pub run: Option<RunId>,
    pub alert: Alert,
}

#[derive(Debug, Clone)]
pub struct LogLine {
    pub time_s: f64,
    pub run: Option<RunId>,
    pub level: LogLevel,
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct SessionState {
    pub name: String,
    pub runs: Vec<RunRecord>,
    /// Session-wide series: `gpu{i}/...`, `host/...`.
    pub telemetry: BTreeMap<String, Series>,
    pub gpu: GpuStatus,
    pub log: VecDeque<LogLine>,
    /// Lines ever logged (the deque keeps the newest `LOG_CAPACITY`), so a reader can
    /// tell which lines are new since it last looked.
    pub logged_total: u64,
    /// Seconds since session start of the newest event seen.
    pub time_s: f64,
    /// Every alert raised, oldest first.
    pub alerts: Vec<Alert>,
    /// A recorded session the charts draw under the live curves (`--baseline`, or
    /// A under B in `rlmon compare`).
    pub baseline: Option<std::sync::Arc<SessionState>>,
    /// What the charts' legends call the baseline ("baseline", "A").
    pub baseline_label: String,
    /// The alerts raised against the baseline, with the session time of each.
    pub baseline_alerts: Vec<RaisedAlert>,
}

impl SessionState {
    pub fn new(name: String, runs: Vec<RunRecord>) -> Self {
        SessionState {
            name,
            runs,
            telemetry: BTreeMap::new(),
            gpu: GpuStatus::Unknown,
            log: VecDeque::new(),
            logged_total: 0,
            time_s: 0.0,
            alerts: Vec::new(),
            baseline: None,
            baseline_label: "baseline".into(),
            baseline_alerts: Vec::new(),
        }
    }

    /// The baseline run drawn under run `run`: the one of the same name, or the
    /// only baseline run when this session has one run too.
    pub fn baseline_run(&self, run: usize) -> Option<&RunRecord> {
        let base = self.baseline.as_deref()?;
        match_run(&base.runs, &self.runs, run).map(|i| &base.runs[i])
    }

    pub fn all_over(&self) -> bool {
        self.runs.iter().all(|r| r.state.is_over())
    }

    /// Log lines added after `seen` lines had been logged in total.
    pub fn log_since(&self, seen: u64) -> impl Iterator<Item = &LogLine> {
        let new = (self.logged_total.saturating_sub(seen) as usize).min(self.log.len());
        self.log.iter().skip(self.log.len() - new)
    }

    /// The runs of job `job`'s ranks, in rank order.
    pub fn ranks_of(&self, job: RunId) -> Vec<(RunId, &RunRecord)> {
        let mut ranks: Vec<(RunId, &RunRecord)> = self.runs.iter().enumerate().filter(|(_, r)| r.rank_of.is_some_and(|(j, _)| j == job)).collect();
        ranks.sort_by_key(|(_, r)| r.rank_of.map(|(_, k)| k));
        ranks
    }

    /// Applies `f` to every run of job `job`'s ranks.
    pub fn for_ranks_of(&mut self, job: RunId, mut f: impl FnMut(&mut RunRecord)) {
        self.runs.iter_mut().filter(|r| r.rank_of.is_some_and(|(j, _)| j == job)).for_each(|r| f(r));
    }

    /// Run indices in display order: each job followed by its ranks.
    pub fn display_order(&self) -> Vec<RunId> {
        let mut order = Vec::with_capacity(self.runs.len());
        for (i, r) in self.runs.iter().enumerate() {
            match r.rank_of {
                Some((job, _)) if job < self.runs.len() && self.runs[job].rank_of.is_none() => {}
                _ => {
                    order.push(i);
                    order.extend(self.ranks_of(i).into_iter().map(|(k, _)| k));
                }
            }
        }
        order
    }

    /// How far apart job `job`'s ranks are over the last `window` steps: the
    /// slowest against the fastest, by tokens/s and by step time.
    pub fn rank_spread(&self, job: RunId, window: usize) -> Option<RankSpread> {
        let ranks = self.ranks_of(job);
        let speeds = |f: &dyn Fn(&RunRecord) -> Option<f64>| -> Vec<(u32, f64)> {
            ranks.iter().filter_map(|(_, r)| Some((r.rank_of?.1, f(r)?))).collect()
        };
        let recent = |r: &RunRecord, metric: &str| r.series(metric).and_then(|s| crate::health::stats::median(&s.tail(window)));
        let tokens = crate::health::detect::straggler::spread(&speeds(&|r| recent(r, catalog::TOKENS_PER_S)));
        // Step time: a longer step is slower, so compare its inverse.
        let step_time = crate::health::detect::straggler::spread(&speeds(&|r| recent(r, catalog::STEP_TIME_S).filter(|t| *t > 0.0).map(|t| 1.0 / t)));
        (ranks.len() >= 2).then_some(RankSpread { ranks: ranks.len(), tokens_per_s: tokens, step_time })
    }

    pub fn count(&self, state: RunState) -> usize {
        self.runs.iter().filter(|r| r.state == state).count()
    }
}


/// Which of `base` runs stands against run `run` of `live`: the one of the same
/// name, or the only one when both sessions have a single run. The one rule for
/// the live baseline, its curves on the charts, and `compare`.
pub fn match_run(base: &[RunRecord], live: &[RunRecord], run: usize) -> Option<usize> {
    let name = &live.get(run)?.name;
    base.iter().position(|b| &b.name == name).or_else(|| (base.len() == 1 && live.len() == 1).then_some(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_memory_and_cost_from_the_runs_series() {
        let mut r = RunRecord::new("a".into(), "lm".into(), "cpu".into(), 100);
        for step in 1..=20u64 {
            r.series.entry(catalog::SAMPLES.into()).or_default().push(step, step as f64, 10.0);
            r.series.entry(catalog::STEP_TIME_S.into()).or_default().push(step, step as f64, 1.0);
            r.series.entry("mem/gpu_bytes".into()).or_default().push(step, step as f64, step as f64 * 1e9);
        }
        r.time_s = 1800.0;
        assert_eq!(r.peak_memory_bytes(), Some(20e9));
        assert_eq!(r.cost(), None, "no price, no cost");
        r.price_per_hour = Some(3.6);
        let (per_1k, so_far) = r.cost().unwrap();
        // 10 samples/s at $3.60/h: 1,000 samples take 100 s, $0.10; half an hour, $1.80.
        assert!((per_1k.unwrap() - 0.1).abs() < 1e-9 && (so_far - 1.8).abs() < 1e-9);
    }
}
