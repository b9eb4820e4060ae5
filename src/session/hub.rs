//! Applies events to the session state in arrival order, derives the metrics that
//! follow from others (tokens/s, samples/s) and runs the health detectors on every
//! point. Pure in-memory work: it never blocks.
use super::event::{Event, GpuStatus, LogLevel, RunId, RunOutcome};
use super::baseline::Baseline;
use super::state::{LogLine, RaisedAlert, RunRecord, RunState, SessionState, LOG_CAPACITY};
use crate::health::{Alert, HealthConfig, SessionHealth, Severity};
use crate::metrics::{catalog, moe, MetricName};

pub struct Hub {
    pub state: SessionState,
    pub health: SessionHealth,
    /// Each run's detector settings as resolved (recorded in the snapshot so a
    /// replay judges with them).
    pub settings: Vec<HealthConfig>,
    /// The session the runs are held against, when there is one.
    pub baseline: Option<Baseline>,
    /// Whether the runs' own detectors judge the points (see [`Hub::unjudged`]).
    judging: bool,
}

impl Hub {
    /// A hub whose runs use the default detector settings.
    pub fn new(state: SessionState) -> Self {
        let configs = vec![HealthConfig::default(); state.runs.len()];
        Self::with_health(state, &configs)
    }

    /// A hub with detector settings per run (in run order; missing ones default).
    pub fn with_health(state: SessionState, configs: &[HealthConfig]) -> Self {
        let mut health = SessionHealth::new();
        let default = HealthConfig::default();
        let settings: Vec<HealthConfig> = (0..state.runs.len()).map(|i| configs.get(i).unwrap_or(&default).clone()).collect();
        for (r, config) in state.runs.iter().zip(&settings) {
            health.add_run(&r.name, config);
        }
        Hub { state, health, settings, baseline: None, judging: true }
    }

    /// This hub keeps the points, the derived metrics and a baseline's check, but
    /// runs none of the runs' own detectors: for a session whose alerts nobody
    /// reads (compare's A, only ever a baseline; B when only the comparison is
    /// printed), where the detectors would be most of the work.
    pub fn unjudged(mut self) -> Self {
        self.judging = false;
        self
    }

    /// Holds the runs against `base` from now on (its curves go under theirs on the
    /// charts); `tolerance` is the tokens/s shortfall that is a regression. Returns
    /// the runs the baseline has no counterpart for.
    pub fn set_baseline(&mut self, base: std::sync::Arc<SessionState>, tolerance: f64) -> Vec<RunId> {
        let baseline = Baseline::new(base, &self.state.runs, tolerance);
        let unmatched = baseline.unmatched().collect();
        self.state.baseline = Some(baseline.state.clone());
        self.baseline = Some(baseline);
        unmatched
    }

    /// Adds a run discovered while reading (a log's `run` field); returns its id.
    pub fn add_run(&mut self, record: RunRecord, config: &HealthConfig) -> RunId {
        self.health.add_run(&record.name, config);
        self.settings.push(config.clone());
        self.state.runs.push(record);
        self.state.runs.len() - 1
    }

    /// Applies one event; `now_s` (seconds since session start) stamps log lines.
    pub fn apply(&mut self, event: Event, now_s: f64) {
        self.state.time_s = self.state.time_s.max(now_s);
        match event {
            Event::RunStarted { run, device, threads } => {
                let Some(r) = self.state.runs.get_mut(run) else { return };
                r.state = RunState::Running;
                r.device = device.clone();
                r.threads = Some(threads);
                self.state.for_ranks_of(run, |rank| {
                    rank.state = RunState::Running;
                    rank.device = device.clone();
                });
                let Some(r) = self.state.runs.get_mut(run) else { return };
                // A command run's threads and total may be unknown (0): not shown.
                let mut msg = format!("started on {device}");
                if threads > 0 {
                    msg += &format!(" with {threads} intra-op thread(s)");
                }
                if r.total_steps > 0 {
                    msg += &format!(", {} steps", r.total_steps);
                }
                self.log(Some(run), LogLevel::Info, msg, now_s);
            }
            Event::Metrics { run, step, time_s, values } => self.apply_metrics(run, step, time_s, values),
            Event::Resumed { run, at_step, discarded } => self.resume_reported(run, at_step, discarded, now_s),
            Event::RunEnded { run, outcome } => {
                let Some(r) = self.state.runs.get_mut(run) else { return };
                let (state, level, msg) = match outcome {
                    RunOutcome::Finished => (RunState::Finished, LogLevel::Info, format!("finished at step {}", r.step)),
                    RunOutcome::Cancelled => (RunState::Cancelled, LogLevel::Warn, format!("cancelled at step {}", r.step)),
                    RunOutcome::Failed(reason) => {
                        let msg = format!("failed at step {}: {reason}", r.step);
                        r.error = Some(reason);
                        (RunState::Failed, LogLevel::Error, msg)
                    }
                };
                let error = r.error.clone();
                r.state = state.clone();
                // A job's ranks end with it (their lines would repeat the job's).
                self.state.for_ranks_of(run, |rank| {
                    if !rank.state.is_over() {
                        rank.state = state.clone();
                        rank.error = error.clone();
                    }
                });
                self.log(Some(run), level, msg, now_s);
            }
            Event::Telemetry { time_s, values } => {
                if self.judging {
                    self.watch_memory(time_s, &values);
                }
                for (name, value) in values {
                    let series = self.state.telemetry.entry(name.into_owned()).or_default();
                    let index = series.len() as u64;
                    series.push(index, time_s, value);
                }
            }
            Event::GpuStatus(status) => {
                let msg = match &status {
                    GpuStatus::Available { driver, gpus } => {
                        let names: Vec<&str> = gpus.iter().map(|g| g.name.as_str()).collect();
                        format!("GPU telemetry: {} (driver {driver})", names.join(", "))
                    }
                    GpuStatus::Unavailable { reason } => format!("no GPU telemetry: {reason}"),
                    GpuStatus::Unknown => String::new(),
                };
                if !msg.is_empty() {
                    self.log(None, LogLevel::Info, msg, now_s);
                }
                self.state.gpu = status;
            }
            Event::Log { run, level, message } => self.log(run, level, message, now_s),
            // Alerts raised outside the hub: a baseline's, journalled by older
            // sessions, or replayed from a snapshot whose baseline file is gone.
            Event::Alert { run, alert } => self.raise_against_baseline(run, alert, now_s),
            Event::RankMetrics { job, rank, step, time_s, values } => {
                if let Some(run) = self.rank_run(job, rank) {
                    self.apply_metrics(run, step, time_s, values);
                }
            }
        }
    }

    /// The run of rank `rank` of job `job`, made (as the job is, and with its
    /// detector settings) on the rank's first point. A rank's run has no ranks.
    pub fn rank_run(&mut self, job: RunId, rank: u32) -> Option<RunId> {
        if let Some(i) = self.state.runs.iter().position(|r| r.rank_of == Some((job, rank))) {
            return Some(i);
        }
        let j = self.state.runs.get(job).filter(|j| j.rank_of.is_none())?;
        let mut record = RunRecord::new(super::event::rank_run_name(&j.name, rank), j.workload.clone(), j.device.clone(), j.total_steps);
        record.state = j.state.clone();
        record.threads = j.threads;
        record.price_per_hour = j.price_per_hour;
        record.rank_of = Some((job, rank));
        let config = self.settings.get(job).cloned().unwrap_or_default();
        Some(self.add_run(record, &config))
    }

    fn apply_metrics(&mut self, run: RunId, step: u64, time_s: f64, values: Vec<(crate::metrics::MetricName, f64)>) {
        let Some(r) = self.state.runs.get_mut(run) else { return };
        let rank_of = r.rank_of;
        r.step = r.step.max(step);
        r.time_s = r.time_s.max(time_s);
        let find = |name: &str| values.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let step_time = find(catalog::STEP_TIME_S).filter(|s| *s > 0.0);
        let mut derived = [(catalog::TOKENS, catalog::TOKENS_PER_S), (catalog::SAMPLES, catalog::SAMPLES_PER_S)]
            .into_iter()
            // A rate the run logs itself is taken as logged.
            .filter(|(_, rate)| find(rate).is_none())
            .filter_map(|(count, rate)| Some((rate.to_owned(), find(count)? / step_time?)))
            .collect::<Vec<_>>();
        // Per MoE layer: balance, routing entropy, CV, MaxVio, dead experts.
        derived.extend(moe::derive(values.iter().map(|(n, v)| (n.as_ref(), *v))));
        let mut all = values;
        all.extend(derived.into_iter().map(|(n, v)| (MetricName::Owned(n), v)));
        for (name, value) in &all {
            // Looked up by `&str` first: a name is allocated once per series, not per point.
            match r.series.get_mut(name.as_ref()) {
                Some(series) => series.push(step, time_s, *value),
                None => r.series.entry(name.to_string()).or_default().push(step, time_s, *value),
            }
        }
        let alerts = if self.judging { self.health.observe(run, step, time_s, &all) } else { Vec::new() };
        for alert in alerts {
            self.raise(Some(run), alert, time_s);
        }
        // A rank's throughput is compared with its job's other ranks.
        if let Some((job, rank)) = rank_of {
            // The job is as far as its slowest rank.
            let slowest = self.state.ranks_of(job).iter().map(|(_, r)| r.step).min().unwrap_or(step);
            if let Some(j) = self.state.runs.get_mut(job) {
                j.step = slowest;
                j.time_s = j.time_s.max(time_s);
            }
            let straggler = if self.judging { self.health.observe_rank(job, rank, step, time_s, &all) } else { None };
            if let Some(alert) = straggler {
                self.raise(Some(job), alert, time_s);
            }
        }
        let baseline_alerts = match (&mut self.baseline, self.state.runs.get(run)) {
            (Some(b), Some(r)) => b.observe(r, run, step),
            _ => Vec::new(),
        };
        for alert in baseline_alerts {
            self.raise_against_baseline(Some(run), alert, self.state.time_s);
        }
    }

    /// The job behind `run` restarted from a checkpoint and logs `step` again: its
    /// points from `step` on are dropped (the resumed ones replace them, as
    /// TensorBoard does), and its detectors start over from the points kept, so the
    /// rewind is not seen as a jump. Alerts already raised stay: they happened.
    pub fn resume(&mut self, run: RunId, step: u64, now_s: f64) {
        self.resume_reported(run, step, 0, now_s);
    }

    /// [`Hub::resume`] where the reader counted the steps it discarded (a replay
    /// no longer has them to count: the recording keeps only the resumed ones).
    fn resume_reported(&mut self, run: RunId, step: u64, discarded: u64, now_s: f64) {
        let Some(r) = self.state.runs.get_mut(run) else { return };
        let mut dropped = 0;
        for series in r.series.values_mut() {
            dropped = dropped.max(series.truncate_from(step));
        }
        r.step = r.series.values().filter_map(|s| s.last_step()).max().unwrap_or(0);
        // Rebuild the run's detectors from what is kept, step by step.
        let mut points: Vec<(u64, f64, &str, f64)> = Vec::new();
        for (name, s) in &r.series {
            points.extend(s.points(0..s.len()).map(|(st, t, v)| (st, t, name.as_str(), v)));
        }
        points.sort_by_key(|p| p.0);
        let config = self.settings.get(run).cloned().unwrap_or_default();
        if let Some(monitor) = self.health.runs.get_mut(run).filter(|_| self.judging) {
            *monitor = crate::health::RunMonitor::new(&r.name, &config);
            for group in points.chunk_by(|a, b| a.0 == b.0) {
                let values: Vec<(MetricName, f64)> = group.iter().map(|p| (MetricName::Owned(p.2.to_owned()), p.3)).collect();
                monitor.observe(group[0].0, group[0].1, &values);
            }
        }
        let msg = format!("resumed at step {step} ({} steps discarded)", dropped.max(discarded as usize));
        self.log(Some(run), LogLevel::Warn, msg, now_s);
    }

    /// Raises an alert of the baseline check and keeps it with its session time, so
    /// a snapshot can carry it to a replay that cannot read the baseline any more.
    fn raise_against_baseline(&mut self, run: Option<RunId>, alert: Alert, now_s: f64) {
        self.state.baseline_alerts.push(RaisedAlert { at_s: now_s, run, alert: alert.clone() });
        self.raise(run, alert, now_s);
    }

    /// Memory telemetry: totals for the runs' memory detectors, and each run's
    /// job's GPU memory (its training worker, or its program's process tree, as
    /// NVML attributes it: `gpu{g}/run{i}_mem_bytes`) watched for leaks.
    fn watch_memory(&mut self, time_s: f64, values: &[(MetricName, f64)]) {
        let find = |name: &str| values.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let host_total = find(catalog::host::MEM_TOTAL_BYTES);
        let per_run: Vec<(usize, usize, f64)> =
            values.iter().filter_map(|(n, v)| catalog::Gpu::parse_run_mem(n).map(|(g, r)| (g, r, *v))).collect();
        let mut raised = Vec::new();
        for (i, r) in self.state.runs.iter().enumerate() {
            let Some(monitor) = self.health.runs.get_mut(i) else { continue };
            if let Some(t) = host_total {
                monitor.set_memory_total(catalog::MEM_RSS_BYTES, t);
            }
            let gpu = r.device.strip_prefix("cuda:").and_then(|g| g.parse::<usize>().ok());
            if let Some(t) = gpu.and_then(|g| find(&catalog::gpu(g).mem_total_bytes())) {
                monitor.set_memory_total(catalog::MEM_GPU_BYTES, t);
            }
            for &(g, _, bytes) in per_run.iter().filter(|(_, run, _)| *run == i) {
                let metric = catalog::gpu(g).run_mem_bytes(i);
                if let Some(t) = find(&catalog::gpu(g).mem_total_bytes()) {
                    monitor.set_memory_total(&metric, t);
                }
                let sample = self.state.telemetry.get(&metric).map_or(0, |s| s.len() as u64);
                if let Some(a) = monitor.observe_memory(&metric, sample, time_s, bytes) {
                    raised.push((i, a));
                }
            }
        }
        for (i, a) in raised {
            self.raise(Some(i), a, time_s);
        }
    }

    /// Stores an alert; warnings and critical alerts also go to the event log, so
    /// headless mode prints them on stderr when they are raised. An escalation
    /// raises the severity of the run's alert it escalates instead.
    fn raise(&mut self, run: Option<RunId>, alert: Alert, now_s: f64) {
        if alert.escalated_at.is_some() {
            if let Some(alert) = self.escalate(run, alert, now_s) {
                self.push_alert(run, alert, now_s);
            }
            return;
        }
        self.push_alert(run, alert, now_s);
    }

    /// Raises the severity (and peak, and message) of the run's alert that
    /// `escalation` escalates: same kind, metric and first step. Hands the alert
    /// back when there is none to escalate (it is then stored as a new one).
    fn escalate(&mut self, run: Option<RunId>, escalation: Alert, now_s: f64) -> Option<Alert> {
        let r = run.and_then(|i| self.state.runs.get(i))?;
        let alerts = &mut self.state.alerts;
        let Some(&index) = r.alerts.iter().rev().find(|&&i| {
            alerts.get(i).is_some_and(|a| a.kind == escalation.kind && a.metric == escalation.metric && a.step == escalation.step && a.severity < escalation.severity)
        }) else {
            return Some(escalation);
        };
        let a = &mut alerts[index];
        a.severity = escalation.severity;
        a.escalated_at = escalation.escalated_at;
        a.peak = escalation.peak;
        a.message = escalation.message;
        let msg = format!("{} at step {} escalated to {} at step {}: {}", a.kind, a.step, a.severity.as_str(), a.escalated_at.unwrap_or(a.step), a.message);
        let level = if a.severity == Severity::Critical { LogLevel::Error } else { LogLevel::Warn };
        self.log(run, level, msg, now_s);
        None
    }

    fn push_alert(&mut self, run: Option<RunId>, alert: Alert, now_s: f64) {
        let index = self.state.alerts.len();
        if let Some(r) = run.and_then(|i| self.state.runs.get_mut(i)) {
            r.alerts.push(index);
        }
        let level = match alert.severity {
            Severity::Info => None,
            Severity::Warn => Some(LogLevel::Warn),
            Severity::Critical => Some(LogLevel::Error),
        };
        if let Some(level) = level {
            let mut msg = format!("{} {} at step {}: {}", alert.severity.as_str(), alert.kind, alert.step, alert.message);
            // What else moved around it, appended so the line's start stays as it was.
            if let Some(r) = run.and_then(|i| self.state.runs.get(i)) {
                let context = crate::health::context::context(&r.series, &alert.metric, alert.step, &Default::default());
                if let Some(suffix) = context.suffix() {
                    msg.push_str(" · ");
                    msg.push_str(&suffix);
                }
            }
            self.log(run, level, msg, now_s);
        }
        self.state.alerts.push(alert);
    }

    fn log(&mut self, run: Option<RunId>, level: LogLevel, message: String, time_s: f64) {
        if self.state.log.len() == LOG_CAPACITY {
            self.state.log.pop_front();
        }
        self.state.log.push_back(LogLine { time_s, run, level, message });
        self.state.logged_total += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub() -> Hub {
        let runs = vec![RunRecord::new("a".into(), "lm".into(), "auto".into(), 10)];
        Hub::new(SessionState::new("s".into(), runs))
    }

    #[test]
    fn metrics_derive_rates_from_tokens_and_step_time() {
        let mut h = hub();
        let values = vec![("tokens".into(), 1000.0), ("samples".into(), 10.0), ("step_time_s".into(), 0.5), ("loss".into(), 2.0)];
        h.apply(Event::Metrics { run: 0, step: 1, time_s: 0.5, values }, 0.5);
        let r = &h.state.runs[0];
        assert_eq!(r.last("tokens_per_s"), Some(2000.0));
        assert_eq!(r.last("samples_per_s"), Some(20.0));
        assert_eq!(r.last("loss"), Some(2.0));
        assert_eq!(r.step, 1);
    }

    #[test]
    fn moe_loads_derive_per_layer_balance() {
        let mut h = hub();
        let values = vec![("moe/L1/load/E0".into(), 0.5), ("moe/L1/load/E1".into(), 0.5)];
        h.apply(Event::Metrics { run: 0, step: 1, time_s: 0.5, values }, 0.5);
        assert_eq!(h.state.runs[0].last("moe/L1/balance"), Some(1.0));
        assert_eq!(h.state.runs[0].last("moe/L1/entropy_bits"), Some(1.0));
        assert_eq!(h.state.runs[0].last("moe/L1/dead_experts"), Some(0.0));
    }

    #[test]
    fn lifecycle_sets_state_and_reason() {
        let mut h = hub();
        h.apply(Event::RunStarted { run: 0, device: "cpu".into(), threads: 1 }, 0.0);
        assert_eq!(h.state.runs[0].state, RunState::Running);
        assert_eq!(h.state.runs[0].device, "cpu");
        h.apply(Event::RunEnded { run: 0, outcome: RunOutcome::Failed("loss is NaN".into()) }, 1.0);
        assert_eq!(h.state.runs[0].state, RunState::Failed);
        assert_eq!(h.state.runs[0].error.as_deref(), Some("loss is NaN"));
        assert!(h.state.all_over());
        assert_eq!(h.state.log.len(), 2);
    }

    #[test]
    fn alerts_are_stored_per_run_and_logged() {
        let mut h = hub();
        for step in 1..=3u64 {
            let loss = if step == 3 { f64::NAN } else { 2.0 };
            h.apply(Event::Metrics { run: 0, step, time_s: step as f64, values: vec![("loss".into(), loss)] }, step as f64);
        }
        assert_eq!(h.state.alerts.len(), 1);
        assert_eq!(h.state.alerts[0].kind, crate::health::AlertKind::Nonfinite);
        assert_eq!(h.state.runs[0].alerts, vec![0]);
        assert_eq!(h.state.runs[0].worst_alert(&h.state.alerts, |_| true), Some(Severity::Critical));
        let line = h.state.log.back().unwrap();
        assert_eq!(line.level, LogLevel::Error);
        assert!(line.message.starts_with("critical nonfinite at step 3: loss is NaN"), "{}", line.message);
    }

    #[test]
    fn an_escalation_raises_the_severity_of_the_alert_it_escalates() {
        let mut h = hub();
        for step in 0..120u64 {
            let base = 2.0 * (1.0 + 0.02 * (step as f64 * 1.7).sin());
            // A spike to 2x from step 60 (warn), worse from step 65 (critical).
            let loss = match step {
                60..=64 => 2.0 * base,
                65..=80 => 6.0 * base,
                _ => base,
            };
            h.apply(Event::Metrics { run: 0, step, time_s: step as f64, values: vec![("loss".into(), loss)] }, step as f64);
        }
        let spikes: Vec<&Alert> = h.state.alerts.iter().filter(|a| a.kind == crate::health::AlertKind::LossSpike).collect();
        assert_eq!(spikes.len(), 1, "{:?}", h.state.alerts);
        let a = spikes[0];
        assert_eq!((a.severity, a.step, a.escalated_at), (Severity::Critical, 60, Some(65)));
        assert_eq!(a.value, 2.0 * 2.0 * (1.0 + 0.02 * (60.0f64 * 1.7).sin()));
        assert_eq!(a.peak.map(|p| p.step), Some(65));
        assert_eq!(h.state.runs[0].alerts.len(), h.state.alerts.len());
        let lines: Vec<&str> = h.state.log.iter().map(|l| l.message.as_str()).collect();
        assert!(lines.iter().any(|l| l.starts_with("warn loss_spike at step 60:")), "{lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("loss_spike at step 60 escalated to critical at step 65:")), "{lines:?}");
    }

    #[test]
    fn a_runs_own_gpu_memory_is_watched_for_leaks_not_another_runs() {
        let runs = vec![RunRecord::new("a".into(), "lm".into(), "cuda:0".into(), 10), RunRecord::new("b".into(), "lm".into(), "cuda:0".into(), 10)];
        let mut h = Hub::new(SessionState::new("s".into(), runs));
        let gpu = crate::metrics::catalog::gpu(0);
        for sample in 0..400u64 {
            let t = sample as f64 * 0.5;
            // Run b's worker grows by 20 MiB a sample on an 80 GiB GPU; run a holds steady.
            let values = vec![
                (gpu.mem_total_bytes().into(), 80.0 * (1u64 << 30) as f64),
                (gpu.run_mem_bytes(0).into(), (2u64 << 30) as f64),
                (gpu.run_mem_bytes(1).into(), (2u64 << 30) as f64 + sample as f64 * 20.0 * (1u64 << 20) as f64),
            ];
            h.apply(Event::Telemetry { time_s: t, values }, t);
        }
        let leaks: Vec<(&str, &str)> = h.state.alerts.iter().filter(|a| a.kind == crate::health::AlertKind::MemoryLeak).map(|a| (a.run.as_str(), a.metric.as_str())).collect();
        assert!(!leaks.is_empty(), "{:?}", h.state.alerts);
        assert!(leaks.iter().all(|l| *l == ("b", "gpu0/run1_mem_bytes")), "{leaks:?}");
    }

    #[test]
    fn events_for_unknown_runs_are_ignored() {
        let mut h = hub();
        h.apply(Event::RunStarted { run: 7, device: "cpu".into(), threads: 1 }, 0.0);
        assert_eq!(h.state.runs[0].state, RunState::Pending);
    }
}
