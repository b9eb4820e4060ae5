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
    /// Where the runs' own detectors judge the points.
    judging: Judging,
    /// Alerts raised or escalated since last taken, when tracked (a live session
    /// sends them on and acts on them): (run, index into the alerts, escalated).
    alert_changes: Option<Vec<(Option<RunId>, usize, bool)>>,
    /// Per run, where the values of its usual steps go among its series (see
    /// [`Layout`]).
    layouts: Vec<Vec<Layout>>,
}

/// Layouts kept per run: a run that logs a few kinds of step (every step, an
/// evaluation every so often) meets each again.
const LAYOUTS_PER_RUN: usize = 4;

/// Where the values of a step go among its run's series, for steps whose names
/// are the same interned names in the same order (a replayed snapshot's steps, a
/// log's steps once read): their points are pushed along one walk of the
/// series, without comparing a name.
struct Layout {
    /// Each value's name: the address and length of its interned text.
    names: Vec<(usize, usize)>,
    /// How many series the run had: a series added since moves the slots.
    series: usize,
    /// (slot among the series in name order, value index, the series' name's
    /// address), by slot then value index: a series' points in value order.
    pushes: Vec<(u32, u32, usize)>,
}

impl Layout {
    fn name_of(name: &MetricName) -> Option<(usize, usize)> {
        match name {
            MetricName::Borrowed(n) => Some((n.as_ptr() as usize, n.len())),
            MetricName::Owned(_) => None,
        }
    }

    /// The layout of a step's `values` among `series`, every name interned (else
    /// `None`) and every one a series already.
    fn of(values: &[(MetricName, f64)], series: &std::collections::BTreeMap<String, crate::metrics::Series>) -> Option<Layout> {
        let names = values.iter().map(|(n, _)| Self::name_of(n)).collect::<Option<Vec<_>>>()?;
        let keys: Vec<&String> = series.keys().collect();
        let mut pushes = Vec::with_capacity(values.len());
        for (i, (name, _)) in values.iter().enumerate() {
            let slot = keys.binary_search_by(|k| k.as_str().cmp(name.as_ref())).ok()?;
            pushes.push((slot as u32, i as u32, keys[slot].as_ptr() as usize));
        }
        pushes.sort_unstable();
        Some(Layout { names, series: series.len(), pushes })
    }

    fn fits(&self, values: &[(MetricName, f64)], series: usize) -> bool {
        self.series == series && self.names.len() == values.len() && self.names.iter().zip(values).all(|(n, (v, _))| Self::name_of(v) == Some(*n))
    }

    /// Pushes the step's points along one walk of `series`; `false` (nothing
    /// pushed) when a series is not where it was.
    fn push(&self, series: &mut std::collections::BTreeMap<String, crate::metrics::Series>, values: &[(MetricName, f64)], step: u64, time_s: f64) -> bool {
        let mut keys = series.keys().enumerate();
        let mut checked = None;
        for &(slot, _, key) in &self.pushes {
            if checked == Some(slot) {
                continue;
            }
            match keys.find(|(k, _)| *k == slot as usize) {
                Some((_, name)) if name.as_ptr() as usize == key => checked = Some(slot),
                _ => return false,
            }
        }
        let mut walk = series.values_mut().enumerate();
        let mut at: Option<(usize, &mut crate::metrics::Series)> = None;
        for &(slot, i, _) in &self.pushes {
            if at.as_ref().is_none_or(|(k, _)| *k != slot as usize) {
                at = walk.find(|(k, _)| *k == slot as usize);
            }
            if let Some((_, s)) = &mut at {
                s.push(step, time_s, values[i as usize].1);
            }
        }
        true
    }
}

/// Where a hub's runs are judged by their detectors.
enum Judging {
    /// In the hub, at each point.
    Here,
    /// Nowhere (see [`Hub::unjudged`]).
    Off,
    /// On another thread: what the detectors are asked is queued in order (see
    /// [`Hub::judged_elsewhere`]).
    Elsewhere(Vec<HealthCall>),
    /// On another thread, ahead of the hub: each event comes with what the
    /// detectors raised on it (see [`Hub::judge_ahead`]). `given`: the event
    /// being applied's alerts; `derived`: its values hold the derived metrics
    /// already; `restarts`: what a resume asks of the detectors, taken with
    /// [`Hub::take_health_calls`].
    Ahead { given: Vec<(RunId, Alert, f64)>, derived: bool, restarts: Vec<HealthCall> },
}

/// One thing a session's detectors are asked, in the order the hub meets it; a
/// [`SessionHealth`] fed these calls in order raises what the hub's own would.
pub enum HealthCall {
    AddRun { name: String, config: HealthConfig },
    /// One step's values, derived metrics included; `rank_of`: the job and rank
    /// of a rank's run, compared with the job's other ranks.
    Observe { run: RunId, step: u64, time_s: f64, values: Vec<(MetricName, f64)>, rank_of: Option<(RunId, u32)> },
    /// The run resumed: its detectors start over from the steps kept.
    Restart { run: RunId, name: String, config: HealthConfig, steps: Vec<(u64, f64, Vec<(MetricName, f64)>)> },
}

impl HealthCall {
    /// Asks `health`; what it raises goes to `raised` as (run, alert, time the
    /// hub would raise it at), in the order the hub would raise it. Returns a
    /// step's values vector once read, for its allocation to be reused.
    pub fn judge(self, health: &mut SessionHealth, raised: &mut Vec<(RunId, Alert, f64)>) -> Option<Vec<(MetricName, f64)>> {
        match self {
            HealthCall::AddRun { name, config } => {
                health.add_run(&name, &config);
                None
            }
            HealthCall::Observe { run, step, time_s, values, rank_of } => {
                raised.extend(health.observe(run, step, time_s, &values).into_iter().map(|a| (run, a, time_s)));
                if let Some((job, rank)) = rank_of {
                    raised.extend(health.observe_rank(job, rank, step, time_s, &values).map(|a| (job, a, time_s)));
                }
                Some(values)
            }
            HealthCall::Restart { run, name, config, steps } => {
                if let Some(monitor) = health.runs.get_mut(run) {
                    restart_monitor(monitor, &name, &config, &steps);
                }
                None
            }
        }
    }
}

/// A run's detectors made anew and fed `steps` (what they raise is dropped: it
/// was raised the first time).
fn restart_monitor(monitor: &mut crate::health::RunMonitor, name: &str, config: &HealthConfig, steps: &[(u64, f64, Vec<(MetricName, f64)>)]) {
    *monitor = crate::health::RunMonitor::new(name, config);
    for (step, time_s, values) in steps {
        monitor.observe(*step, *time_s, values);
    }
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
        Hub { state, health, settings, baseline: None, judging: Judging::Here, alert_changes: None, layouts: Vec::new() }
    }

    /// This hub keeps the points, the derived metrics and a baseline's check, but
    /// runs none of the runs' own detectors: for a session whose alerts nobody
    /// reads (compare's A, only ever a baseline; B when only the comparison is
    /// printed), where the detectors would be most of the work.
    pub fn unjudged(mut self) -> Self {
        self.judging = Judging::Off;
        self
    }

    /// This hub keeps the points and the derived metrics; its runs' detectors run
    /// elsewhere (a thread of their own): what they are asked is queued, taken
    /// with [`Hub::take_health_calls`] and judged in order with
    /// [`HealthCall::judge`]; what they raise comes back through
    /// [`Hub::raise_judged`]. For a log's steps only (`rlmon check`): no baseline,
    /// no telemetry; the event log's lines of those alerts come when they do.
    pub fn judged_elsewhere(mut self) -> Self {
        let calls = self.state.runs.iter().zip(&self.settings).map(|(r, config)| HealthCall::AddRun { name: r.name.clone(), config: config.clone() }).collect();
        self.judging = Judging::Elsewhere(calls);
        self
    }

    /// Keeps, from now on, which alerts are raised or escalated (see
    /// [`Hub::take_alert_changes`]).
    pub fn track_alert_changes(&mut self) {
        self.alert_changes.get_or_insert_with(Vec::new);
    }

    /// Alerts raised or escalated since the last call: (run, index into
    /// `state.alerts`, whether it was an escalation), in order.
    pub fn take_alert_changes(&mut self) -> Vec<(Option<RunId>, usize, bool)> {
        self.alert_changes.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// What the detectors were asked since the last call, in order.
    pub fn take_health_calls(&mut self) -> Vec<HealthCall> {
        match &mut self.judging {
            Judging::Elsewhere(calls) | Judging::Ahead { restarts: calls, .. } => std::mem::take(calls),
            _ => Vec::new(),
        }
    }

    /// This hub's detectors, taken out to judge on another thread ahead of it:
    /// each event goes through [`JudgeAhead::judge`] first, then to
    /// [`Hub::apply_judged`] with what it raised, which the hub stores where it
    /// would have raised it itself; a resume's restart goes back from
    /// [`Hub::take_health_calls`] to [`JudgeAhead::restart`]. `None` unless the
    /// hub judges here. [`Hub::judged_here`] puts them back.
    pub fn judge_ahead(&mut self) -> Option<JudgeAhead> {
        if !matches!(self.judging, Judging::Here) {
            return None;
        }
        self.judging = Judging::Ahead { given: Vec::new(), derived: false, restarts: Vec::new() };
        let runs = self.state.runs.iter().map(|r| Mirror { name: r.name.clone(), device: r.device.clone(), rank_of: r.rank_of }).collect();
        let telemetry = self.state.telemetry.iter().map(|(name, s)| (name.clone(), s.len() as u64)).collect();
        Some(JudgeAhead { health: std::mem::take(&mut self.health), settings: self.settings.clone(), runs, telemetry })
    }

    /// The detectors taken by [`Hub::judge_ahead`], back to judge here.
    pub fn judged_here(&mut self, judge: JudgeAhead) {
        self.health = judge.health;
        self.judging = Judging::Here;
    }

    /// Applies an event judged ahead (see [`Hub::judge_ahead`]).
    pub fn apply_judged(&mut self, event: Event, now_s: f64, judged: Judged) {
        if let Judging::Ahead { given, derived, .. } = &mut self.judging {
            *given = judged.alerts;
            *derived = judged.derived;
        }
        self.apply(event, now_s);
        if let Judging::Ahead { given, derived, .. } = &mut self.judging {
            given.clear();
            *derived = false;
        }
    }

    /// Raises the alerts of the event being applied that were judged ahead.
    fn raise_given(&mut self) {
        if let Judging::Ahead { given, .. } = &mut self.judging {
            for (run, alert, time_s) in std::mem::take(given) {
                self.raise(Some(run), alert, time_s);
            }
        }
    }

    /// Stores an alert of run `run` judged elsewhere, as it would have been raised.
    pub fn raise_judged(&mut self, run: RunId, alert: Alert, time_s: f64) {
        self.raise(Some(run), alert, time_s);
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
        match &mut self.judging {
            // The detectors ahead add the run themselves, meeting its first point.
            Judging::Ahead { .. } => {}
            Judging::Elsewhere(calls) => {
                self.health.add_run(&record.name, config);
                calls.push(HealthCall::AddRun { name: record.name.clone(), config: config.clone() });
            }
            _ => {
                self.health.add_run(&record.name, config);
            }
        }
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
                    RunOutcome::Stopped(reason) => {
                        let msg = format!("stopped by rlmon at step {}: {reason}", r.step);
                        r.error = Some(reason);
                        (RunState::Stopped, LogLevel::Error, msg)
                    }
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
                match self.judging {
                    Judging::Here => self.watch_memory(time_s, &values),
                    Judging::Ahead { .. } => self.raise_given(),
                    _ => {}
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
            Event::RankResumed { job, rank, at_step, discarded } => {
                if let Some(run) = self.state.runs.iter().position(|r| r.rank_of == Some((job, rank))) {
                    self.resume_reported(run, at_step, discarded, now_s);
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
        let all = match &self.judging {
            Judging::Ahead { derived: true, .. } => values,
            _ => with_derived(values),
        };
        r.clock.note(step, time_s);
        if self.layouts.len() <= run {
            self.layouts.resize_with(run + 1, Vec::new);
        }
        let layouts = &mut self.layouts[run];
        let laid = match layouts.iter().position(|l| l.fits(&all, r.series.len())) {
            Some(k) => layouts[k].push(&mut r.series, &all, step, time_s),
            None => false,
        };
        if !laid {
            Self::push_by_name(r, step, time_s, &all);
            if let Some(layout) = Layout::of(&all, &r.series) {
                layouts.retain(|l| l.names != layout.names);
                if layouts.len() == LAYOUTS_PER_RUN {
                    layouts.remove(0);
                }
                layouts.push(layout);
            }
        }
        let here = matches!(self.judging, Judging::Here);
        let alerts = if here { self.health.observe(run, step, time_s, &all) } else { Vec::new() };
        for alert in alerts {
            self.raise(Some(run), alert, time_s);
        }
        // The run's and its job's alerts judged ahead: the straggler's is raised
        // before the job's step moves here, which it does not read.
        self.raise_given();
        // A rank's throughput is compared with its job's other ranks.
        if let Some((job, rank)) = rank_of {
            // The job is as far as its slowest rank.
            let slowest = self.state.ranks_of(job).iter().map(|(_, r)| r.step).min().unwrap_or(step);
            if let Some(j) = self.state.runs.get_mut(job) {
                j.step = slowest;
                j.time_s = j.time_s.max(time_s);
            }
            let straggler = if here { self.health.observe_rank(job, rank, step, time_s, &all) } else { None };
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
        if let Judging::Elsewhere(calls) = &mut self.judging {
            calls.push(HealthCall::Observe { run, step, time_s, values: all, rank_of });
        }
    }

    /// Pushes a step's points to their run's series by name, adding the series
    /// met first.
    fn push_by_name(r: &mut RunRecord, step: u64, time_s: f64, all: &[(MetricName, f64)]) {
        // A step's values come in name order, as the series are kept: one walk
        // along both pushes most of them. The first 64 not met in the walk (a
        // name out of order, a new series) are marked and looked up by name
        // below, in their order, as are values past the 64th.
        let mut left: u64 = 0;
        let mut walk = r.series.iter_mut().peekable();
        for (i, (name, value)) in all.iter().enumerate().take(64) {
            let mut met = false;
            while let Some((key, series)) = walk.peek_mut() {
                match key.as_str().cmp(name.as_ref()) {
                    std::cmp::Ordering::Less => {
                        walk.next();
                    }
                    std::cmp::Ordering::Equal => {
                        series.push(step, time_s, *value);
                        walk.next();
                        met = true;
                        break;
                    }
                    std::cmp::Ordering::Greater => break,
                }
            }
            if !met {
                left |= 1 << i;
            }
        }
        for (i, (name, value)) in all.iter().enumerate() {
            if i < 64 && left & (1 << i) == 0 {
                continue;
            }
            // Looked up by `&str` first: a name is allocated once per series, not per point.
            match r.series.get_mut(name.as_ref()) {
                Some(series) => series.push(step, time_s, *value),
                None => r.series.entry(name.to_string()).or_insert_with(|| crate::metrics::Series::with_clock(r.clock.clone())).push(step, time_s, *value),
            }
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
        r.clock.truncate_from(step);
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
        let steps = || -> Vec<(u64, f64, Vec<(MetricName, f64)>)> {
            let step_values = |group: &[(u64, f64, &str, f64)]| group.iter().map(|p| (MetricName::Owned(p.2.to_owned()), p.3)).collect();
            points.chunk_by(|a, b| a.0 == b.0).map(|group| (group[0].0, group[0].1, step_values(group))).collect()
        };
        match &mut self.judging {
            Judging::Here => {
                if let Some(monitor) = self.health.runs.get_mut(run) {
                    restart_monitor(monitor, &r.name, &config, &steps());
                }
            }
            Judging::Elsewhere(calls) | Judging::Ahead { restarts: calls, .. } => calls.push(HealthCall::Restart { run, name: r.name.clone(), config, steps: steps() }),
            Judging::Off => {}
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
        let telemetry = &self.state.telemetry;
        let devices = self.state.runs.iter().map(|r| r.device.as_str());
        let raised = memory_alerts(&mut self.health, devices, |metric| telemetry.get(metric).map_or(0, |s| s.len() as u64), time_s, values);
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
        if let Some(changes) = &mut self.alert_changes {
            changes.push((run, index, true));
        }
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
        if let Some(changes) = &mut self.alert_changes {
            changes.push((run, index, false));
        }
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

/// A step's values with the metrics the hub derives from them after them:
/// tokens/s and samples/s from the counts and the step time (a rate the run logs
/// itself is taken as logged), and per MoE layer its balance, routing entropy,
/// CV, MaxVio and dead experts.
fn with_derived(mut values: Vec<(MetricName, f64)>) -> Vec<(MetricName, f64)> {
    // One walk finds each name's first value (as a search per name would) and
    // whether any MoE layer metric is there.
    let (mut step_time, mut tokens, mut tokens_per_s, mut samples, mut samples_per_s) = (None, None, None, None, None);
    let mut moe_layers = false;
    for (n, v) in &values {
        let slot = match n.as_ref() {
            catalog::STEP_TIME_S => &mut step_time,
            catalog::TOKENS => &mut tokens,
            catalog::TOKENS_PER_S => &mut tokens_per_s,
            catalog::SAMPLES => &mut samples,
            catalog::SAMPLES_PER_S => &mut samples_per_s,
            other => {
                moe_layers |= catalog::is_moe_layer_metric(other);
                continue;
            }
        };
        slot.get_or_insert(*v);
    }
    let step_time = step_time.filter(|s: &f64| *s > 0.0);
    // The rates' names are the catalog's own: borrowed, not allocated per step.
    let rates = [(tokens, tokens_per_s, catalog::TOKENS_PER_S), (samples, samples_per_s, catalog::SAMPLES_PER_S)]
        .map(|(count, rate, name)| if rate.is_some() { None } else { Some((MetricName::Borrowed(name), count? / step_time?)) });
    let layers = if moe_layers { moe::derive(values.iter().map(|(n, v)| (n.as_ref(), *v))) } else { Vec::new() };
    values.reserve(rates.iter().flatten().count() + layers.len());
    values.extend(rates.into_iter().flatten());
    values.extend(layers.into_iter().map(|(n, v)| (MetricName::Owned(n), v)));
    values
}

/// What one telemetry sample raises in the runs' memory detectors: totals from
/// it for each run (`devices`: the runs' devices, in run order), and each run's
/// own GPU memory (`gpu{g}/run{i}_mem_bytes`) watched for leaks, counted in
/// samples of its series (`samples`: how many it holds before this one).
fn memory_alerts<'a>(
    health: &mut SessionHealth,
    devices: impl Iterator<Item = &'a str>,
    samples: impl Fn(&str) -> u64,
    time_s: f64,
    values: &[(MetricName, f64)],
) -> Vec<(RunId, Alert)> {
    let find = |name: &str| values.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let host_total = find(catalog::host::MEM_TOTAL_BYTES);
    let per_run: Vec<(usize, usize, f64)> = values.iter().filter_map(|(n, v)| catalog::Gpu::parse_run_mem(n).map(|(g, r)| (g, r, *v))).collect();
    let mut raised = Vec::new();
    for (i, device) in devices.enumerate() {
        let Some(monitor) = health.runs.get_mut(i) else { continue };
        if let Some(t) = host_total {
            monitor.set_memory_total(catalog::MEM_RSS_BYTES, t);
        }
        let gpu = device.strip_prefix("cuda:").and_then(|g| g.parse::<usize>().ok());
        if let Some(t) = gpu.and_then(|g| find(&catalog::gpu(g).mem_total_bytes())) {
            monitor.set_memory_total(catalog::MEM_GPU_BYTES, t);
        }
        for &(g, _, bytes) in per_run.iter().filter(|(_, run, _)| *run == i) {
            let metric = catalog::gpu(g).run_mem_bytes(i);
            if let Some(t) = find(&catalog::gpu(g).mem_total_bytes()) {
                monitor.set_memory_total(&metric, t);
            }
            if let Some(a) = monitor.observe_memory(&metric, samples(&metric), time_s, bytes) {
                raised.push((i, a));
            }
        }
    }
    raised
}

/// What the detectors raised on one event, judged ahead of the hub.
#[derive(Debug, Default)]
pub struct Judged {
    /// (run, alert, time raised at), in the order the hub raises them.
    alerts: Vec<(RunId, Alert, f64)>,
    /// The event's values hold the derived metrics already.
    derived: bool,
}

/// What the detectors ahead keep of a run: what the hub's events change that
/// they read.
#[derive(Debug, Clone)]
struct Mirror {
    name: String,
    device: String,
    rank_of: Option<(RunId, u32)>,
}

/// A hub's detectors judging its events before the hub applies them, on a
/// thread of their own (see [`Hub::judge_ahead`]): fed the same events in the
/// same order, they are asked what the hub's own would be asked at each, and
/// raise the same alerts. They keep what of the hub's runs they read (names,
/// devices, ranks) and how many samples each telemetry series holds; a resume
/// needs the hub's kept points, which come back through [`JudgeAhead::restart`].
#[derive(Debug)]
pub struct JudgeAhead {
    health: SessionHealth,
    settings: Vec<HealthConfig>,
    runs: Vec<Mirror>,
    telemetry: std::collections::HashMap<String, u64>,
}

impl JudgeAhead {
    /// Judges `event`; returns it to apply (a step's values with the derived
    /// metrics appended), what it raised, and whether it is a resume: the hub's
    /// restart calls for it ([`Hub::take_health_calls`] once applied) must then
    /// reach [`JudgeAhead::restart`] before the next event is judged.
    pub fn judge(&mut self, event: Event) -> (Event, Judged, bool) {
        let mut judged = Judged::default();
        let mut resume = false;
        let event = match event {
            Event::Metrics { run, step, time_s, values } => {
                let values = self.observe(run, step, time_s, values, &mut judged);
                Event::Metrics { run, step, time_s, values }
            }
            Event::RankMetrics { job, rank, step, time_s, values } => {
                let values = match self.rank_run(job, rank) {
                    Some(run) => self.observe(run, step, time_s, values, &mut judged),
                    None => values,
                };
                Event::RankMetrics { job, rank, step, time_s, values }
            }
            Event::Telemetry { time_s, values } => {
                let telemetry = &self.telemetry;
                let raised = memory_alerts(&mut self.health, self.runs.iter().map(|r| r.device.as_str()), |m| telemetry.get(m).copied().unwrap_or(0), time_s, &values);
                judged.alerts = raised.into_iter().map(|(i, a)| (i, a, time_s)).collect();
                for (name, _) in &values {
                    match self.telemetry.get_mut(name.as_ref()) {
                        Some(n) => *n += 1,
                        None => {
                            self.telemetry.insert(name.to_string(), 1);
                        }
                    }
                }
                Event::Telemetry { time_s, values }
            }
            Event::RunStarted { run, device, threads } => {
                if run < self.runs.len() {
                    for r in self.runs.iter_mut().enumerate().filter(|(i, r)| *i == run || r.rank_of.is_some_and(|(j, _)| j == run)).map(|(_, r)| r) {
                        r.device = device.clone();
                    }
                }
                Event::RunStarted { run, device, threads }
            }
            e @ (Event::Resumed { .. } | Event::RankResumed { .. }) => {
                resume = true;
                e
            }
            e => e,
        };
        (event, judged, resume)
    }

    /// What the hub's resume asked of the detectors (its kept points).
    pub fn restart(&mut self, calls: Vec<HealthCall>) {
        let mut raised = Vec::new();
        for call in calls {
            call.judge(&mut self.health, &mut raised);
        }
    }

    /// One step of run `run` (as [`Hub::apply_metrics`] judges it); its values
    /// with the derived metrics.
    fn observe(&mut self, run: RunId, step: u64, time_s: f64, values: Vec<(MetricName, f64)>, judged: &mut Judged) -> Vec<(MetricName, f64)> {
        let Some(rank_of) = self.runs.get(run).map(|r| r.rank_of) else { return values };
        let all = with_derived(values);
        judged.derived = true;
        judged.alerts.extend(self.health.observe(run, step, time_s, &all).into_iter().map(|a| (run, a, time_s)));
        if let Some((job, rank)) = rank_of {
            judged.alerts.extend(self.health.observe_rank(job, rank, step, time_s, &all).map(|a| (job, a, time_s)));
        }
        all
    }

    /// [`Hub::rank_run`], on the runs kept here.
    fn rank_run(&mut self, job: RunId, rank: u32) -> Option<RunId> {
        if let Some(i) = self.runs.iter().position(|r| r.rank_of == Some((job, rank))) {
            return Some(i);
        }
        let j = self.runs.get(job).filter(|j| j.rank_of.is_none())?;
        let run = Mirror { name: super::event::rank_run_name(&j.name, rank), device: j.device.clone(), rank_of: Some((job, rank)) };
        let config = self.settings.get(job).cloned().unwrap_or_default();
        self.health.add_run(&run.name, &config);
        self.settings.push(config);
        self.runs.push(run);
        Some(self.runs.len() - 1)
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

    /// A loss spike to 2x from step 60 (warn), worse from step 65 (critical), over 120 steps.
    fn feed_escalating_spike(h: &mut Hub) {
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
    }

    #[test]
    fn an_escalation_raises_the_severity_of_the_alert_it_escalates() {
        let mut h = hub();
        feed_escalating_spike(&mut h);
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
    fn raised_and_escalated_alerts_are_handed_on_once_each_when_tracked() {
        let mut h = hub();
        assert!(h.take_alert_changes().is_empty(), "untracked: nothing kept");
        h.track_alert_changes();
        feed_escalating_spike(&mut h);
        let changes = h.take_alert_changes();
        let spike = h.state.alerts.iter().position(|a| a.kind == crate::health::AlertKind::LossSpike).unwrap();
        let of_spike: Vec<bool> = changes.iter().filter(|(_, i, _)| *i == spike).map(|(_, _, escalated)| *escalated).collect();
        assert_eq!(of_spike, [false, true], "raised, then escalated: {changes:?}");
        assert!(changes.iter().all(|(run, _, _)| *run == Some(0)));
        assert!(h.take_alert_changes().is_empty(), "taken once");
        h.apply(Event::RunEnded { run: 0, outcome: RunOutcome::Stopped("critical nonfinite at step 3".into()) }, 200.0);
        assert_eq!((h.state.runs[0].state.clone(), h.state.runs[0].error.as_deref()), (RunState::Stopped, Some("critical nonfinite at step 3")));
        assert!(h.state.log.back().unwrap().message.starts_with("stopped by rlmon at step 119: critical nonfinite"));
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

    #[test]
    fn runs_judged_elsewhere_raise_what_they_raise_here() {
        // Replicas that part ways, a job's ranks with a straggler, a resume, spikes
        // and a NaN: every kind of call the detectors are asked.
        let play = |hub: &mut Hub| {
            let mut calls = Vec::new();
            let runs = ["lm#1", "lm#2", "job"].map(|n| hub.add_run(RunRecord::new(n.into(), "log".into(), "-".into(), 0), &HealthConfig::default()));
            let ranks = [0, 1].map(|k| hub.rank_run(runs[2], k).expect("a job's rank"));
            for step in 1..400u64 {
                let t = step as f64;
                let wobble = 0.01 * ((step as f64) * 1.3).sin();
                let loss = if step % 97 == 0 { 9.0 } else if step == 350 { f64::NAN } else { 2.0 + wobble };
                let apart = if step > 200 { 0.5 } else { 0.0 };
                for (run, extra) in [(runs[0], 0.0), (runs[1], apart)] {
                    let values = vec![("loss".into(), loss + extra), ("grad_norm".into(), 1.0 + wobble)];
                    hub.apply(Event::Metrics { run, step, time_s: t, values }, t);
                }
                for (k, run) in ranks.into_iter().enumerate() {
                    let step_time = if k == 1 && step > 100 { 0.5 } else { 0.25 };
                    let values = vec![("loss".into(), 2.0 + wobble), ("tokens".into(), 4096.0), ("step_time_s".into(), step_time)];
                    hub.apply(Event::Metrics { run, step, time_s: t, values }, t);
                }
                if step == 300 {
                    hub.resume(runs[0], 250, t);
                }
                calls.extend(hub.take_health_calls());
            }
            calls
        };
        let mut here = Hub::new(SessionState::new("s".into(), Vec::new()));
        assert!(play(&mut here).is_empty(), "judged here: nothing queued");
        let mut elsewhere = Hub::new(SessionState::new("s".into(), Vec::new())).judged_elsewhere();
        let (mut health, mut raised) = (SessionHealth::new(), Vec::new());
        for call in play(&mut elsewhere) {
            call.judge(&mut health, &mut raised);
        }
        for (run, alert, time_s) in raised {
            elsewhere.raise_judged(run, alert, time_s);
        }
        let alerts = |h: &Hub| format!("{:?} {:?}", h.state.alerts, h.state.runs.iter().map(|r| &r.alerts).collect::<Vec<_>>());
        assert!(here.state.alerts.len() >= 4, "spikes, NaN, replicas and a straggler: {:?}", here.state.alerts);
        let kinds: std::collections::BTreeSet<_> = here.state.alerts.iter().map(|a| a.kind).collect();
        for kind in [crate::health::AlertKind::Nonfinite, crate::health::AlertKind::Nondeterminism, crate::health::AlertKind::RankStraggler] {
            assert!(kinds.contains(&kind), "{kind:?} raised: {kinds:?}");
        }
        assert_eq!(alerts(&here), alerts(&elsewhere));
    }

    #[test]
    fn runs_judged_ahead_raise_what_they_raise_here() {
        // Replicas that part ways, a job's ranks with a straggler, a resume, a
        // leaking GPU worker, spikes and a NaN, as events.
        let gpu = crate::metrics::catalog::gpu(0);
        let mut events = vec![Event::RunStarted { run: 2, device: "cuda:0".into(), threads: 1 }, Event::RunStarted { run: 3, device: "cuda:0".into(), threads: 1 }];
        for step in 1..400u64 {
            let t = step as f64;
            let wobble = 0.01 * ((step as f64) * 1.3).sin();
            let loss = if step % 97 == 0 { 9.0 } else if step == 350 { f64::NAN } else { 2.0 + wobble };
            let apart = if step > 200 { 0.5 } else { 0.0 };
            for (run, extra) in [(0, 0.0), (1, apart)] {
                let values = vec![("loss".into(), loss + extra), ("grad_norm".into(), 1.0 + wobble)];
                events.push(Event::Metrics { run, step, time_s: t, values });
            }
            for rank in [0, 1] {
                let step_time = if rank == 1 && step > 100 { 0.5 } else { 0.25 };
                let values = vec![("loss".into(), 2.0 + wobble), ("tokens".into(), 4096.0), ("step_time_s".into(), step_time)];
                events.push(Event::RankMetrics { job: 2, rank, step, time_s: t, values });
            }
            let leak = vec![(gpu.mem_total_bytes().into(), 80.0 * (1u64 << 30) as f64), (gpu.run_mem_bytes(3).into(), (2u64 << 30) as f64 + t * 20.0 * (1u64 << 20) as f64)];
            events.push(Event::Telemetry { time_s: t, values: leak });
            if step == 300 {
                events.push(Event::Resumed { run: 0, at_step: 250, discarded: 50 });
            }
            if step == 320 {
                events.push(Event::RankResumed { job: 2, rank: 1, at_step: 310, discarded: 10 });
            }
        }
        let runs = || ["lm#1", "lm#2", "job", "leaky"].map(|n| RunRecord::new(n.into(), "log".into(), "-".into(), 0)).to_vec();
        let mut here = Hub::new(SessionState::new("s".into(), runs()));
        for e in events.clone() {
            here.apply(e, 0.0);
        }
        let mut ahead = Hub::new(SessionState::new("s".into(), runs()));
        let mut judge = ahead.judge_ahead().expect("judged here until now");
        for e in events {
            let (e, judged, resume) = judge.judge(e);
            ahead.apply_judged(e, 0.0, judged);
            if resume {
                judge.restart(ahead.take_health_calls());
            }
        }
        ahead.judged_here(judge);
        let kinds: std::collections::BTreeSet<_> = here.state.alerts.iter().map(|a| a.kind).collect();
        for kind in [crate::health::AlertKind::Nonfinite, crate::health::AlertKind::Nondeterminism, crate::health::AlertKind::RankStraggler, crate::health::AlertKind::MemoryLeak] {
            assert!(kinds.contains(&kind), "{kind:?} raised: {kinds:?}");
        }
        let seen = |h: &Hub| {
            let log: Vec<&str> = h.state.log.iter().map(|l| l.message.as_str()).collect();
            format!("{:?} {:?} {log:?} {}", h.state.alerts, h.state.runs.iter().map(|r| (&r.name, &r.alerts, r.step)).collect::<Vec<_>>(), h.health.runs.len())
        };
        assert_eq!(seen(&here), seen(&ahead));
        assert!(ahead.judge_ahead().is_some(), "judging here again");
    }
}
