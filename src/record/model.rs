//! What a recorded session holds, independent of the file it lives in: metric and
//! telemetry points in long format plus the session's metadata. Built from the same
//! events the hub applies (live, or from a journal), and turned back into those
//! events for replay. Pure logic: no I/O.
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::health::HealthConfig;
use crate::metrics::{catalog, MetricName};
use crate::session::{Event, GpuStatus, LogLevel, RunId, RunOutcome, RunRecord, RunState, SessionState};

/// Version of the snapshot and journal formats; readers refuse newer ones.
pub const FORMAT_VERSION: u32 = 1;
/// Run name under which telemetry samples (`gpu0/util_pct`, `host/cpu_pct`) are
/// stored; their `time_s` is seconds since session start and `step` the sample index.
pub const TELEMETRY_RUN: &str = "_telemetry";
/// Point index of telemetry in [`Points::run`].
pub const TELEMETRY: u32 = u32::MAX;
/// Log lines kept in the metadata (lifecycle lines are rebuilt from events instead).
pub const LOG_KEEP: usize = 10_000;

/// One run as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub name: String,
    pub workload: String,
    pub device: String,
    pub total_steps: u64,
    pub threads: Option<usize>,
    pub state: RunState,
    pub error: Option<String>,
    /// Session time at which the run started and ended; a point's session time is
    /// `started_s + time_s`.
    pub started_s: Option<f64>,
    pub ended_s: Option<f64>,
    /// The run's entry of the `--json` summary at the time of writing.
    #[serde(default)]
    pub summary: serde_json::Value,
    /// The run's detector settings as resolved from its config, so a replay judges
    /// with them without parsing the config again (absent in older snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthConfig>,
    /// Hardware price per hour from the config, for cost figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_per_hour: Option<f64>,
    /// For one rank of a job of several processes: the job's run index and the
    /// rank. Such a run starts and ends with its job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_of: Option<(RunId, u32)>,
}

/// Where the session ran, for reading numbers in context later.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hardware {
    pub gpu_model: Option<String>,
    pub gpu_driver: Option<String>,
    pub cpu: Option<String>,
    pub cores: Option<usize>,
    pub libtorch_version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    pub time_s: f64,
    pub run: Option<RunId>,
    pub level: LogLevel,
    pub message: String,
}

/// The `rlmon` key-value metadata of a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub format_version: u32,
    pub rlmon_version: String,
    pub session: String,
    /// UTC start of the session, `YYYYMMDDTHHMMSSZ`.
    pub started_utc: String,
    /// Session duration in seconds.
    pub elapsed_s: f64,
    /// The config file's text as written.
    pub config: String,
    pub runs: Vec<RunMeta>,
    pub alerts: Vec<serde_json::Value>,
    pub markers: Vec<serde_json::Value>,
    pub gpu: GpuStatus,
    pub hardware: Hardware,
    /// Warnings, errors and other lines that are not rebuilt from run events.
    #[serde(default)]
    pub log: Vec<LogEntry>,
    pub telemetry_run: String,
    /// The baseline session the runs were held against (`--baseline`), if any.
    #[serde(default)]
    pub baseline: Option<String>,
    /// The tokens/s shortfall against the baseline that was a regression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_tolerance: Option<f64>,
    /// Alerts raised against the baseline rather than by the runs' detectors, with
    /// when they were raised: a replay that cannot read the baseline raises them again.
    #[serde(default)]
    pub baseline_alerts: Vec<RaisedAlert>,
    /// Runs whose steps went back (a job resumed from a checkpoint): a replay says so
    /// at the same point. The discarded points are not recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumes: Vec<ResumeEntry>,
}

/// One resume of a run, as seen live.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeEntry {
    pub at_s: f64,
    pub run: usize,
    pub at_step: u64,
    pub discarded: u64,
}

pub use crate::session::state::RaisedAlert;

impl Meta {
    /// The index of rank `rank`'s run of job `job`, once it has one.
    pub fn rank_run_index(&self, job: RunId, rank: u32) -> Option<usize> {
        self.runs.iter().position(|r| r.rank_of == Some((job, rank)))
    }

    pub fn new(session: &str, started_utc: String, config: String, runs: &[RunRecord]) -> Self {
        Meta {
            format_version: FORMAT_VERSION,
            rlmon_version: env!("CARGO_PKG_VERSION").into(),
            session: session.into(),
            started_utc,
            elapsed_s: 0.0,
            config,
            runs: runs
                .iter()
                .map(|r| RunMeta {
                    name: r.name.clone(),
                    workload: r.workload.clone(),
                    device: r.device.clone(),
                    total_steps: r.total_steps,
                    threads: r.threads,
                    state: r.state.clone(),
                    error: r.error.clone(),
                    started_s: None,
                    ended_s: None,
                    summary: serde_json::Value::Null,
                    health: None,
                    price_per_hour: r.price_per_hour,
                    rank_of: r.rank_of,
                })
                .collect(),
            alerts: Vec::new(),
            markers: Vec::new(),
            gpu: GpuStatus::Unknown,
            hardware: Hardware::default(),
            log: Vec::new(),
            telemetry_run: TELEMETRY_RUN.into(),
            baseline: None,
            baseline_tolerance: None,
            resumes: Vec::new(),
            baseline_alerts: Vec::new(),
        }
    }

    /// Records each run's resolved detector settings (in run order).
    pub fn record_settings(&mut self, settings: &[HealthConfig]) {
        for (r, s) in self.runs.iter_mut().zip(settings) {
            r.health = Some(s.clone());
        }
    }

    /// A hub as at the start of the recorded session, before any event: fresh run
    /// records with the price per hour and the detector settings each run had, so a
    /// replay alerts and costs as the live session did. Both come from the metadata;
    /// a snapshot written before they were recorded falls back to parsing its config
    /// (defaults where it no longer parses).
    pub fn fresh_hub(&self) -> crate::session::Hub {
        let config = if self.runs.iter().all(|r| r.health.is_some()) { None } else { self.parsed_config() };
        let run_config = |name: &str| config.as_ref().and_then(|c| c.runs.iter().find(|c| c.name == name));
        let mut records = Vec::with_capacity(self.runs.len());
        let mut health: Vec<HealthConfig> = Vec::with_capacity(self.runs.len());
        for r in &self.runs {
            let mut record = RunRecord::new(r.name.clone(), r.workload.clone(), r.device.clone(), r.total_steps);
            record.price_per_hour = match &r.health {
                Some(_) => r.price_per_hour,
                None => run_config(&r.name).and_then(|c| c.price_per_hour),
            };
            record.rank_of = r.rank_of;
            records.push(record);
            health.push(r.health.clone().or_else(|| run_config(&r.name).map(|c| c.health.clone())).unwrap_or_default());
        }
        crate::session::Hub::with_health(SessionState::new(self.session.clone(), records), &health)
    }

    /// The recorded config text, parsed (it may name files that are gone: `None`).
    fn parsed_config(&self) -> Option<crate::config::SessionConfig> {
        crate::config::SessionConfig::from_str(&self.config, std::path::Path::new("recorded-config.toml")).ok()
    }

    pub fn run_index(&self, name: &str) -> Option<u32> {
        if name == self.telemetry_run {
            return Some(TELEMETRY);
        }
        self.runs.iter().position(|r| r.name == name).map(|i| i as u32)
    }

    /// The events a recording adds around its points: log lines, alerts against a
    /// baseline, and each run's end (after its last point, at `last_point_s[run]`,
    /// since a run's clock starts before its RunStarted is logged).
    pub(crate) fn closing_events(&self, last_point_s: &[f64]) -> Vec<(f64, Event)> {
        let mut events = Vec::new();
        for l in &self.log {
            events.push((l.time_s, Event::Log { run: l.run, level: l.level, message: l.message.clone() }));
        }
        for a in &self.baseline_alerts {
            events.push((a.at_s, Event::Alert { run: a.run, alert: a.alert.clone() }));
        }
        for (i, r) in self.runs.iter().enumerate().filter(|(_, r)| r.rank_of.is_none()) {
            let outcome = match r.state {
                RunState::Finished => Some(RunOutcome::Finished),
                RunState::Cancelled => Some(RunOutcome::Cancelled),
                RunState::Stopped => Some(RunOutcome::Stopped(r.error.clone().unwrap_or_default())),
                RunState::Failed => Some(RunOutcome::Failed(r.error.clone().unwrap_or_default())),
                RunState::Pending | RunState::Running => None,
            };
            if let Some(outcome) = outcome {
                let ended = r.ended_s.unwrap_or(self.elapsed_s).max(last_point_s.get(i).copied().unwrap_or(0.0));
                events.push((ended, Event::RunEnded { run: i, outcome }));
            }
        }
        events
    }

    pub fn run_name(&self, index: u32) -> &str {
        match index {
            TELEMETRY => &self.telemetry_run,
            i => &self.runs[i as usize].name,
        }
    }
}

/// Metric points, column-wise. `run` indexes [`Meta::runs`] ([`TELEMETRY`] for
/// telemetry), `metric` indexes `metric_names`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Points {
    pub run: Vec<u32>,
    pub step: Vec<u64>,
    pub time_s: Vec<f64>,
    pub metric: Vec<u32>,
    pub value: Vec<f64>,
    pub metric_names: Vec<String>,
    metric_ids: HashMap<String, u32>,
}

impl Points {
    pub fn len(&self) -> usize {
        self.value.len()
    }

    pub fn is_empty(&self) -> bool {
        self.value.is_empty()
    }

    pub fn metric_id(&mut self, name: &str) -> u32 {
        if let Some(id) = self.metric_ids.get(name) {
            return *id;
        }
        let id = self.metric_names.len() as u32;
        self.metric_names.push(name.to_owned());
        self.metric_ids.insert(name.to_owned(), id);
        id
    }

    pub fn push(&mut self, run: u32, step: u64, time_s: f64, metric: u32, value: f64) {
        self.run.push(run);
        self.step.push(step);
        self.time_s.push(time_s);
        self.metric.push(metric);
        self.value.push(value);
    }

    /// How many of the first `below` points are `run`'s at `step` or later.
    pub fn count_run_from(&self, run: u32, step: u64, below: usize) -> usize {
        let below = below.min(self.len());
        self.run[..below].iter().zip(&self.step[..below]).filter(|(r, s)| **r == run && **s >= step).count()
    }

    /// Drops every point and keeps the metric names (and their ids): a buffer
    /// reused batch after batch.
    pub fn clear_points(&mut self) {
        self.run.clear();
        self.step.clear();
        self.time_s.clear();
        self.metric.clear();
        self.value.clear();
    }

    /// Drops `run`'s points at `step` and later (its job resumed from an earlier step).
    pub fn drop_run_from(&mut self, run: u32, step: u64) {
        let keep: Vec<bool> = self.run.iter().zip(&self.step).map(|(r, s)| *r != run || *s < step).collect();
        keep_where(&mut self.run, &keep);
        keep_where(&mut self.step, &keep);
        keep_where(&mut self.time_s, &keep);
        keep_where(&mut self.metric, &keep);
        keep_where(&mut self.value, &keep);
    }

    /// The points from index `from` on (a checkpoint of what is new), with every
    /// metric name so ids stay valid.
    pub fn since(&self, from: usize) -> Points {
        let from = from.min(self.len());
        Points {
            run: self.run[from..].to_vec(),
            step: self.step[from..].to_vec(),
            time_s: self.time_s[from..].to_vec(),
            metric: self.metric[from..].to_vec(),
            value: self.value[from..].to_vec(),
            metric_names: self.metric_names.clone(),
            metric_ids: self.metric_ids.clone(),
        }
    }

    /// Appends `other`'s points after these, mapping its metric ids to ours.
    pub fn append(&mut self, other: &Points) {
        let ids: Vec<u32> = other.metric_names.iter().map(|n| self.metric_id(n)).collect();
        self.run.extend_from_slice(&other.run);
        self.step.extend_from_slice(&other.step);
        self.time_s.extend_from_slice(&other.time_s);
        self.metric.extend(other.metric.iter().map(|m| ids[*m as usize]));
        self.value.extend_from_slice(&other.value);
    }

    /// Point indices ordered by run, step, then arrival: one group per logged step.
    pub fn by_run_step(&self) -> Vec<usize> {
        if self.in_run_step_order() {
            return (0..self.len()).collect();
        }
        // Keys sorted in place (no lookups through the index while sorting); the
        // index is part of the key, so the unstable sort keeps arrival order.
        let mut keyed: Vec<(u32, u64, usize)> = (0..self.len()).map(|i| (self.run[i], self.step[i], i)).collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, _, i)| i).collect()
    }
}

impl Points {
    /// Whether the points already come by run, then step (one run recorded in
    /// order): no sort, and no index, is needed.
    fn in_run_step_order(&self) -> bool {
        (1..self.len()).all(|i| (self.run[i - 1], self.step[i - 1]) <= (self.run[i], self.step[i]))
    }

    /// [`Points::by_run_step`] as 4-byte indices, by a counting sort over each
    /// run's step range when the steps are dense (a logged run's are): no keys
    /// held beside the points. `None` past 4G points.
    fn by_run_step_u32(&self) -> Option<Vec<u32>> {
        let n = self.len();
        u32::try_from(n).ok()?;
        // Each run's step range, runs in ascending order.
        let mut ranges: std::collections::BTreeMap<u32, (u64, u64)> = std::collections::BTreeMap::new();
        for i in 0..n {
            let r = ranges.entry(self.run[i]).or_insert((self.step[i], self.step[i]));
            *r = (r.0.min(self.step[i]), r.1.max(self.step[i]));
        }
        let mut base = std::collections::BTreeMap::new();
        let mut buckets: u64 = 0;
        for (run, (lo, hi)) in &ranges {
            base.insert(*run, (buckets, *lo));
            buckets = buckets.saturating_add(hi - lo + 1);
        }
        if buckets > 2 * n as u64 + 1024 {
            let mut keyed: Vec<(u32, u64, u32)> = (0..n).map(|i| (self.run[i], self.step[i], i as u32)).collect();
            keyed.sort_unstable();
            return Some(keyed.into_iter().map(|(_, _, i)| i).collect());
        }
        let bucket = |i: usize| base.get(&self.run[i]).map_or(0, |(b, lo)| (b + (self.step[i] - lo)) as usize);
        // Stable: within a bucket, arrival order.
        let mut start = vec![0u32; buckets as usize + 1];
        for i in 0..n {
            start[bucket(i) + 1] += 1;
        }
        for b in 1..start.len() {
            start[b] += start[b - 1];
        }
        let mut order = vec![0u32; n];
        for i in 0..n {
            let b = bucket(i);
            order[start[b] as usize] = i as u32;
            start[b] += 1;
        }
        Some(order)
    }
}

impl Order {
    fn of(p: &Points) -> Order {
        if p.in_run_step_order() {
            return Order::Arrival;
        }
        match p.by_run_step_u32() {
            Some(o) => Order::Small(o),
            None => Order::Large(p.by_run_step()),
        }
    }

    fn point(&self, k: usize) -> usize {
        match self {
            Order::Arrival => k,
            Order::Small(o) => o[k] as usize,
            Order::Large(o) => o[k],
        }
    }
}

/// Point indices in run/step order, as compact as their count allows.
#[derive(Debug, Clone)]
enum Order {
    /// The points' own order.
    Arrival,
    Small(Vec<u32>),
    Large(Vec<usize>),
}

/// The order a replay applies a recording in: one entry per event, where a logged
/// step's points stay in the recording (a range of its points in run/step order)
/// until the step is applied, so a long session is not held twice.
#[derive(Debug, Clone)]
pub struct Timeline {
    entries: Vec<(f64, Entry)>,
    /// Point indices by run, step, then arrival.
    order: Order,
    names: Vec<MetricName>,
}

#[derive(Debug, Clone)]
enum Entry {
    Event(Event),
    /// The points at `order[from..to]`: one run's step (or one telemetry sample).
    Step { from: usize, to: usize },
}

impl Timeline {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Session time of entry `i`.
    pub fn time(&self, i: usize) -> Option<f64> {
        self.entries.get(i).map(|e| e.0)
    }

    /// Index of the first entry after session time `pos` (entries are in time order).
    pub fn after(&self, pos: f64) -> usize {
        self.entries.partition_point(|e| e.0 <= pos)
    }

    /// Drops the recorded baseline alerts (a replay that checks the baseline again).
    pub fn drop_alerts(&mut self) {
        // A script's own alerts (`rlmon.alert`) are not the baseline's: they stay.
        self.entries.retain(|(_, e)| !matches!(e, Entry::Event(Event::Alert { alert, .. }) if alert.kind != crate::health::AlertKind::UserAlert));
    }

    fn point(&self, k: usize) -> usize {
        self.order.point(k)
    }

    /// Entry `i` of `rec`'s timeline (the one it was built from) as an event.
    pub fn event(&self, rec: &Recording, i: usize) -> Option<(f64, Event)> {
        let (t, entry) = self.entries.get(i)?;
        let event = match entry {
            Entry::Event(e) => e.clone(),
            Entry::Step { from, to } => {
                let p = &rec.points;
                let first = self.point(*from);
                let mut values: Vec<(MetricName, f64)> = (*from..*to).map(|k| self.point(k)).map(|i| (self.names[p.metric[i] as usize].clone(), p.value[i])).collect();
                if p.run[first] == TELEMETRY {
                    // One sample per step index; its points share one time.
                    Event::Telemetry { time_s: p.time_s[first], values }
                } else {
                    strip_derived(&mut values);
                    Event::Metrics { run: p.run[first] as usize, step: p.step[first], time_s: p.time_s[first], values }
                }
            }
        };
        Some((*t, event))
    }

    /// Every event of `rec`'s timeline, built one at a time.
    pub fn events<'a>(&'a self, rec: &'a Recording) -> impl Iterator<Item = (f64, Event)> + 'a {
        (0..self.len()).filter_map(move |i| self.event(rec, i))
    }
}

/// Keeps the items of `col` whose flag in `keep` is set.
fn keep_where<T>(col: &mut Vec<T>, keep: &[bool]) {
    let mut flags = keep.iter();
    col.retain(|_| flags.next().copied().unwrap_or(true));
}

/// A whole recorded session.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub meta: Meta,
    pub points: Points,
    /// Telemetry samples seen, the next sample's index.
    telemetry_samples: u64,
}

impl Recording {
    pub fn new(meta: Meta) -> Self {
        Recording { meta, points: Points::default(), telemetry_samples: 0 }
    }

    pub fn from_parts(meta: Meta, points: Points) -> Self {
        let telemetry_samples = points.run.iter().zip(&points.step).filter(|(r, _)| **r == TELEMETRY).map(|(_, s)| s + 1).max().unwrap_or(0);
        Recording { meta, points, telemetry_samples }
    }

    /// Records one event as the hub applies it at session time `now_s`.
    pub fn record(&mut self, now_s: f64, event: &Event) {
        self.meta.elapsed_s = self.meta.elapsed_s.max(now_s);
        let runs = self.meta.runs.len();
        match event {
            Event::RunStarted { run, device, threads } if *run < runs => {
                let r = &mut self.meta.runs[*run];
                r.device = device.clone();
                r.threads = Some(*threads);
                r.state = RunState::Running;
                r.started_s = Some(now_s);
                let (device, threads) = (r.device.clone(), r.threads);
                for rank in self.meta.runs.iter_mut().filter(|r| r.rank_of.is_some_and(|(j, _)| j == *run)) {
                    (rank.device, rank.threads, rank.state, rank.started_s) = (device.clone(), threads, RunState::Running, Some(now_s));
                }
            }
            Event::RankMetrics { job, rank, step, time_s, values } if *job < runs => {
                let Some(run) = self.rank_run(*job, *rank) else { return };
                for (name, value) in values {
                    let id = self.points.metric_id(name);
                    self.points.push(run as u32, *step, *time_s, id, *value);
                }
            }
            Event::Metrics { run, step, time_s, values } if *run < runs => {
                for (name, value) in values {
                    let id = self.points.metric_id(name);
                    self.points.push(*run as u32, *step, *time_s, id, *value);
                }
            }
            Event::RunEnded { run, outcome } if *run < runs => {
                let r = &mut self.meta.runs[*run];
                r.ended_s = Some(now_s);
                (r.state, r.error) = match outcome {
                    RunOutcome::Finished => (RunState::Finished, None),
                    RunOutcome::Cancelled => (RunState::Cancelled, None),
                    RunOutcome::Stopped(reason) => (RunState::Stopped, Some(reason.clone())),
                    RunOutcome::Failed(reason) => (RunState::Failed, Some(reason.clone())),
                };
                let (state, error, ended) = (r.state.clone(), r.error.clone(), r.ended_s);
                for rank in self.meta.runs.iter_mut().filter(|r| r.rank_of.is_some_and(|(j, _)| j == *run) && !r.state.is_over()) {
                    (rank.state, rank.error, rank.ended_s) = (state.clone(), error.clone(), ended);
                }
            }
            Event::Telemetry { time_s, values } => {
                let sample = self.telemetry_samples;
                self.telemetry_samples += 1;
                for (name, value) in values {
                    let id = self.points.metric_id(name);
                    self.points.push(TELEMETRY, sample, *time_s, id, *value);
                }
            }
            Event::GpuStatus(status) => self.meta.gpu = status.clone(),
            Event::Log { run, level, message } => {
                if self.meta.log.len() == LOG_KEEP {
                    self.meta.log.remove(0);
                }
                self.meta.log.push(LogEntry { time_s: now_s, run: *run, level: *level, message: message.clone() });
            }
            Event::Alert { run, alert } => self.meta.baseline_alerts.push(RaisedAlert { at_s: now_s, run: *run, alert: alert.clone() }),
            Event::Resumed { run, at_step, discarded } if *run < runs => {
                // The resumed points replace the earlier ones, in the recording as on screen.
                self.points.drop_run_from(*run as u32, *at_step);
                self.meta.resumes.push(ResumeEntry { at_s: now_s, run: *run, at_step: *at_step, discarded: *discarded });
            }
            // Kept as the rank run's own resume: a replay gives it back as `Resumed`.
            Event::RankResumed { job, rank, at_step, discarded } => {
                if let Some(run) = self.meta.rank_run_index(*job, *rank) {
                    self.points.drop_run_from(run as u32, *at_step);
                    self.meta.resumes.push(ResumeEntry { at_s: now_s, run, at_step: *at_step, discarded: *discarded });
                }
            }
            _ => {}
        }
    }

    /// The index of rank `rank`'s run of job `job`, added as the hub adds it (on
    /// the rank's first point, after every run before it).
    fn rank_run(&mut self, job: RunId, rank: u32) -> Option<usize> {
        if let Some(i) = self.meta.rank_run_index(job, rank) {
            return Some(i);
        }
        let j = self.meta.runs.get(job).filter(|j| j.rank_of.is_none())?;
        let mut meta = j.clone();
        meta.name = crate::session::event::rank_run_name(&j.name, rank);
        meta.summary = serde_json::Value::Null;
        meta.rank_of = Some((job, rank));
        self.meta.runs.push(meta);
        Some(self.meta.runs.len() - 1)
    }

    /// The events that rebuild this session in a hub, with their session times, in
    /// time order. Derived rates are left out where the hub derives them again, so a
    /// replayed series equals the live one point for point.
    pub fn events(&self) -> Vec<(f64, Event)> {
        let timeline = self.timeline();
        timeline.events(self).collect()
    }

    /// The order [`Recording::events`] comes in, holding the points' places
    /// instead of the points: what a replay of a long session steps through.
    pub fn timeline(&self) -> Timeline {
        let meta = &self.meta;
        let p = &self.points;
        let mut events: Vec<(f64, Entry)> = vec![(0.0, Entry::Event(Event::GpuStatus(meta.gpu.clone())))];
        // A rank's run starts and ends with its job: the hub does that.
        for (i, r) in meta.runs.iter().enumerate().filter(|(_, r)| r.rank_of.is_none()) {
            if let (Some(t), Some(threads)) = (r.started_s, r.threads) {
                events.push((t, Entry::Event(Event::RunStarted { run: i, device: r.device.clone(), threads })));
            }
        }
        // A resume goes before the first point logged after it (on its own clock, a
        // point may carry a time earlier than the moment the rewind was seen); pushed
        // before the points, so at one instant it comes first.
        for r in &meta.resumes {
            let first_after = (0..p.len()).filter(|&i| p.run[i] as usize == r.run && p.step[i] >= r.at_step).map(|i| {
                let started = meta.runs.get(r.run).and_then(|m| m.started_s).unwrap_or(0.0);
                started + p.time_s[i]
            });
            let at = first_after.fold(r.at_s, f64::min);
            events.push((at, Entry::Event(Event::Resumed { run: r.run, at_step: r.at_step, discarded: r.discarded })));
        }
        let names: Vec<MetricName> = p.metric_names.iter().map(|n| MetricName::Borrowed(catalog::intern(n))).collect();
        let order = Order::of(p);
        let point = |k: usize| order.point(k);
        // A run's clock starts before its RunStarted is logged (model build), so its
        // points can land after its recorded end: the end goes after the last point.
        let mut last_point_s = vec![0.0f64; meta.runs.len()];
        let mut from = 0;
        while from < p.len() {
            let first = point(from);
            let (run, step) = (p.run[first], p.step[first]);
            let mut to = from + 1;
            while to < p.len() && (p.run[point(to)], p.step[point(to)]) == (run, step) {
                to += 1;
            }
            let time_s = p.time_s[first];
            if run == TELEMETRY {
                events.push((time_s, Entry::Step { from, to }));
            } else {
                let started = meta.runs.get(run as usize).and_then(|r| r.started_s).unwrap_or(0.0);
                if let Some(last) = last_point_s.get_mut(run as usize) {
                    *last = last.max(started + time_s);
                }
                events.push((started + time_s, Entry::Step { from, to }));
            }
            from = to;
        }
        // Within one instant, a step's log lines follow it and a run's end comes last.
        events.extend(meta.closing_events(&last_point_s).into_iter().map(|(t, e)| (t, Entry::Event(e))));
        // Stable: events at one instant keep the order above.
        events.sort_by(|a, b| a.0.total_cmp(&b.0));
        Timeline { entries: events, order, names }
    }

    /// Rebuilds the final session state by applying every event.
    pub fn final_state(&self) -> SessionState {
        let mut hub = self.meta.fresh_hub();
        let timeline = self.timeline();
        for (t, e) in timeline.events(self) {
            hub.apply(e, t);
        }
        hub.state
    }
}

/// Drops `tokens_per_s` / `samples_per_s` when the hub derives them from the same
/// step's counts and step time.
pub fn strip_derived(values: &mut Vec<(MetricName, f64)>) {
    let has = |values: &[(MetricName, f64)], n: &str| values.iter().any(|(m, _)| m == n);
    let timed = has(values, catalog::STEP_TIME_S);
    let drop_tokens = timed && has(values, catalog::TOKENS);
    let drop_samples = timed && has(values, catalog::SAMPLES);
    values.retain(|(m, _)| !(drop_tokens && m == catalog::TOKENS_PER_S || drop_samples && m == catalog::SAMPLES_PER_S));
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::session::Hub;

    #[test]
    fn the_counting_sort_orders_points_as_the_keyed_sort_does() {
        let mut rng = crate::test_rng::Rng(0x9e3779b97f4a7c15);
        let mut next = move |n: u64| rng.below(n);
        for case in 0..20 {
            let mut p = Points::default();
            for _ in 0..(next(3000) + 1) {
                let run = if next(10) == 0 { TELEMETRY } else { next(3) as u32 };
                let step = if case % 2 == 0 { next(500) } else { next(u64::MAX / 2) };
                p.push(run, step, 0.0, 0, 0.0);
            }
            let want = p.by_run_step();
            let got: Vec<usize> = p.by_run_step_u32().unwrap().into_iter().map(|i| i as usize).collect();
            assert_eq!(got, want, "case {case}");
            let order = Order::of(&p);
            assert!((0..p.len()).all(|k| order.point(k) == want[k]));
        }
    }

    /// A small session as live events: two runs (one fails), telemetry, a warning.
    pub fn live_events() -> Vec<(f64, Event)> {
        let mut ev = vec![(0.1, Event::GpuStatus(GpuStatus::Unavailable { reason: "no NVML".into() }))];
        ev.push((0.2, Event::RunStarted { run: 0, device: "cpu".into(), threads: 1 }));
        ev.push((0.3, Event::RunStarted { run: 1, device: "cpu".into(), threads: 1 }));
        for step in 1..=50u64 {
            let t = 0.3 + step as f64 * 0.05;
            let values = vec![
                ("loss".into(), 5.0 / step as f64),
                ("tokens".into(), 1024.0),
                ("samples".into(), 16.0),
                ("step_time_s".into(), 0.05 + (step % 3) as f64 * 0.001),
            ];
            ev.push((t, Event::Metrics { run: 0, step, time_s: step as f64 * 0.05, values }));
            if step <= 5 {
                let loss = if step == 5 { f64::NAN } else { 4.0 };
                ev.push((t, Event::Metrics { run: 1, step, time_s: step as f64 * 0.05, values: vec![("loss".into(), loss)] }));
            }
            if step % 10 == 0 {
                ev.push((t, Event::Telemetry { time_s: t, values: vec![("host/cpu_pct".into(), step as f64), ("host/mem_used_bytes".into(), 1e9)] }));
            }
        }
        ev.push((0.6, Event::Log { run: Some(1), level: LogLevel::Warn, message: "loss is NaN".into() }));
        ev.sort_by(|a, b| a.0.total_cmp(&b.0));
        ev.push((0.61, Event::RunEnded { run: 1, outcome: RunOutcome::Failed("loss became NaN".into()) }));
        // An alert from outside the detectors (a baseline comparison).
        let alert = crate::health::Alert {
            kind: crate::health::AlertKind::RunDivergence,
            severity: crate::health::Severity::Warn,
            run: "a".into(),
            metric: "loss".into(),
            step: 20,
            time_s: 1.0,
            value: 0.25,
            message: "loss diverges from the baseline at step 20".into(),
            peak: None,
            escalated_at: None,
        };
        ev.push((1.3, Event::Alert { run: Some(0), alert }));
        ev.push((2.9, Event::RunEnded { run: 0, outcome: RunOutcome::Finished }));
        ev
    }

    pub fn runs() -> Vec<RunRecord> {
        vec![RunRecord::new("a".into(), "lm".into(), "auto".into(), 50), RunRecord::new("b".into(), "lm".into(), "auto".into(), 50)]
    }

    /// The live hub state and the recording of the same events.
    pub fn live_and_recorded() -> (SessionState, Recording) {
        let mut hub = Hub::new(SessionState::new("demo".into(), runs()));
        let mut rec = Recording::new(Meta::new("demo", "20260101T000000Z".into(), "# config".into(), &runs()));
        for (t, e) in live_events() {
            rec.record(t, &e);
            hub.apply(e, t);
        }
        (hub.state, rec)
    }

    /// Points as sorted (run, metric, step, time bits, value bits): comparable with
    /// NaN values and independent of storage order.
    pub fn canonical(rec: &Recording) -> Vec<(String, String, u64, u64, u64)> {
        let p = &rec.points;
        let mut out: Vec<_> = (0..p.len())
            .map(|i| (rec.meta.run_name(p.run[i]).to_owned(), p.metric_names[p.metric[i] as usize].clone(), p.step[i], p.time_s[i].to_bits(), p.value[i].to_bits()))
            .collect();
        out.sort();
        out
    }

    pub fn same_series(a: &SessionState, b: &SessionState) {
        assert_eq!(a.runs.len(), b.runs.len());
        for (ra, rb) in a.runs.iter().zip(&b.runs) {
            assert_eq!(ra.state, rb.state);
            assert_eq!(ra.step, rb.step);
            assert_eq!(ra.device, rb.device);
            assert_eq!(ra.error, rb.error);
            assert_eq!(ra.series.keys().collect::<Vec<_>>(), rb.series.keys().collect::<Vec<_>>());
            for (name, s) in &ra.series {
                let t = &rb.series[name];
                let all = 0..usize::MAX;
                assert_eq!(s.steps(all.clone()), t.steps(all.clone()), "{name}");
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&s.values(all.clone())), bits(&t.values(all.clone())), "{name}");
                assert_eq!(bits(&s.times(all.clone())), bits(&t.times(all)), "{name}");
            }
        }
        assert_eq!(a.telemetry, b.telemetry);
        assert_eq!(a.gpu, b.gpu);
    }

    /// A command job whose two ranks log tokens and step time; rank 1 is 15%
    /// slower from step 20 on. Rank 1's points arrive first at each step.
    fn rank_events() -> Vec<(f64, Event)> {
        let mut ev = vec![(0.1, Event::RunStarted { run: 0, device: "external".into(), threads: 0 })];
        for step in 1..=60u64 {
            let t = 0.1 + step as f64 * 0.1;
            for rank in [1u32, 0] {
                let slow = if rank == 1 && step >= 20 { 1.15 } else { 1.0 };
                let values = vec![("tokens".into(), 1000.0), ("step_time_s".into(), 0.1 * slow), ("loss".into(), 3.0 / step as f64)];
                ev.push((t, Event::RankMetrics { job: 0, rank, step, time_s: t - 0.1, values }));
            }
        }
        ev.push((6.5, Event::RunEnded { run: 0, outcome: RunOutcome::Finished }));
        ev
    }

    #[test]
    fn ranks_become_runs_under_their_job_and_replay_the_same() {
        let job = vec![RunRecord::new("job".into(), "command".into(), "external".into(), 0)];
        let mut hub = Hub::new(SessionState::new("ranks".into(), job.clone()));
        let mut rec = Recording::new(Meta::new("ranks", "20260101T000000Z".into(), "# config".into(), &job));
        for (t, e) in rank_events() {
            rec.record(t, &e);
            hub.apply(e, t);
        }
        let live = hub.state;
        let names: Vec<&str> = live.runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["job", "job/rank1", "job/rank0"], "made as their points arrive");
        assert_eq!(live.display_order(), [0, 2, 1], "ranks under their job, in rank order");
        assert_eq!(live.runs[1].rank_of, Some((0, 1)));
        assert!(live.runs.iter().all(|r| r.state == RunState::Finished), "ranks end with their job");
        let stragglers: Vec<_> = live.alerts.iter().filter(|a| a.kind == crate::health::AlertKind::RankStraggler).collect();
        assert_eq!(stragglers.len(), 1, "{:?}", live.alerts);
        assert_eq!(stragglers[0].run, "job", "the job's alert");
        assert!(stragglers[0].message.starts_with("rank 1 is "), "{}", stragglers[0].message);
        assert_eq!(live.runs[0].alerts.len(), 1);
        assert_eq!(live.runs[0].step, 60, "the job is as far as its slowest rank");
        let spread = live.rank_spread(0, 10).unwrap();
        assert_eq!(spread.ranks, 2);
        let tokens = spread.tokens_per_s.unwrap();
        assert_eq!((tokens.slow.0, tokens.fast.0), (1, 0));
        assert!((tokens.fraction - (1.0 - 1.0 / 1.15)).abs() < 1e-9);
        // Replayed from the recording: the same runs, points, states and alerts.
        let replayed = rec.final_state();
        same_series(&live, &replayed);
        assert_eq!(replayed.runs.iter().map(|r| r.rank_of).collect::<Vec<_>>(), live.runs.iter().map(|r| r.rank_of).collect::<Vec<_>>());
        assert_eq!(replayed.alerts, live.alerts);
        // And through the metadata's JSON, as a snapshot stores it.
        let meta: Meta = serde_json::from_str(&serde_json::to_string(&rec.meta).unwrap()).unwrap();
        assert_eq!(Recording::from_parts(meta, rec.points.clone()).final_state().alerts, live.alerts);
    }

    #[test]
    fn a_rank_that_resumes_drops_only_its_own_points() {
        let job = vec![RunRecord::new("job".into(), "command".into(), "external".into(), 0)];
        let mut hub = Hub::new(SessionState::new("ranks".into(), job.clone()));
        let mut rec = Recording::new(Meta::new("ranks", "20260101T000000Z".into(), "# config".into(), &job));
        let mut events: Vec<(f64, Event)> = rank_events().into_iter().filter(|(t, _)| *t < 4.15).collect();
        // Rank 1 goes back to step 31 and logs 31..=40 again with another loss.
        events.push((4.12, Event::RankResumed { job: 0, rank: 1, at_step: 31, discarded: 10 }));
        for step in 31..=40u64 {
            let t = 4.12 + (step - 30) as f64 * 0.1;
            events.push((t, Event::RankMetrics { job: 0, rank: 1, step, time_s: t - 0.1, values: vec![(catalog::LOSS.into(), 7.0)] }));
        }
        for (t, e) in events {
            rec.record(t, &e);
            hub.apply(e, t);
        }
        let live = hub.state;
        let run = |name: &str| live.runs.iter().find(|r| r.name == name).unwrap();
        let loss = |name: &str| run(name).series[catalog::LOSS].points(0..usize::MAX).map(|(step, _, v)| (step, v)).collect::<Vec<_>>();
        let rank0 = loss("job/rank0");
        assert_eq!(rank0.len(), 40, "rank 0 keeps every point");
        assert!(rank0.iter().all(|(step, v)| *v == 3.0 / *step as f64));
        let rank1 = loss("job/rank1");
        assert_eq!(rank1.iter().map(|p| p.0).collect::<Vec<_>>(), (1..=40).collect::<Vec<_>>(), "each step once");
        assert!(rank1[..30].iter().all(|(step, v)| *v == 3.0 / *step as f64), "before the resume: kept");
        assert!(rank1[30..].iter().all(|(_, v)| *v == 7.0), "from the resume: the new points only");
        assert_eq!(run("job/rank1").series[catalog::STEP_TIME_S].len(), 30, "its other metrics dropped from the resume too");
        assert!(live.log.iter().any(|l| l.message.starts_with("resumed at step 31")), "told in the log");
        // The recording keeps the resume as the rank run's own, and replays the same.
        assert_eq!(rec.meta.resumes.len(), 1);
        assert_eq!(rec.meta.resumes[0].run, rec.meta.rank_run_index(0, 1).unwrap());
        same_series(&live, &rec.final_state());
    }

    #[test]
    fn replayed_events_rebuild_the_live_state() {
        let (live, rec) = live_and_recorded();
        let replayed = rec.final_state();
        same_series(&live, &replayed);
        let messages = |s: &SessionState| s.log.iter().map(|l| l.message.clone()).collect::<Vec<_>>();
        assert_eq!(messages(&replayed), messages(&live), "the same lines, in the same order");
        assert_eq!(replayed.runs[1].error.as_deref(), Some("loss became NaN"));
        let json = |s: &SessionState| serde_json::to_value(&s.alerts).unwrap();
        assert_eq!(json(&replayed), json(&live), "detector alerts and the baseline's alike");
        assert!(replayed.alerts.iter().any(|a| a.kind == crate::health::AlertKind::RunDivergence));
    }

    #[test]
    fn a_replay_uses_the_recorded_configs_detector_settings_and_prices() {
        let (live, mut rec) = live_and_recorded();
        assert!(live.alerts.iter().any(|a| a.kind == crate::health::AlertKind::Nonfinite && a.run == "b"));
        rec.meta.config = "[[run]]\nname = \"a\"\nworkload = \"lm\"\nsteps = 50\nprice_per_hour = 3.6\n[[run]]\nname = \"b\"\nworkload = \"lm\"\nsteps = 50\n[run.health.nonfinite]\nenabled = false\n".into();
        let replayed = rec.final_state();
        assert!(!replayed.alerts.iter().any(|a| a.kind == crate::health::AlertKind::Nonfinite), "{:?}", replayed.alerts);
        assert_eq!(replayed.runs[0].price_per_hour, Some(3.6));
        // A config that no longer parses: default settings, as before.
        rec.meta.config = "not = [toml".into();
        assert!(rec.final_state().alerts.iter().any(|a| a.kind == crate::health::AlertKind::Nonfinite));
    }

    #[test]
    fn a_replay_judges_with_the_recorded_settings_even_when_the_config_no_longer_parses() {
        // Live: run b's nonfinite detector off, a price on run a.
        let mut settings = vec![HealthConfig::default(); 2];
        settings[1].apply(crate::health::AlertKind::Nonfinite, &crate::health::KindOverride { enabled: Some(false), ..Default::default() });
        let mut records = runs();
        records[0].price_per_hour = Some(3.6);
        let mut hub = Hub::with_health(SessionState::new("demo".into(), records.clone()), &settings);
        let mut rec = Recording::new(Meta::new("demo", "20260101T000000Z".into(), "not = [toml".into(), &records));
        rec.meta.record_settings(&hub.settings);
        for (t, e) in live_events() {
            rec.record(t, &e);
            hub.apply(e, t);
        }
        let json = |s: &SessionState| serde_json::to_string(&s.alerts).unwrap();
        assert!(!hub.state.alerts.iter().any(|a| a.kind == crate::health::AlertKind::Nonfinite), "off live");
        // Through the snapshot's metadata (serialized and read back), not the config.
        let meta: Meta = serde_json::from_str(&serde_json::to_string(&rec.meta).unwrap()).unwrap();
        let replayed = Recording::from_parts(meta, rec.points.clone()).final_state();
        assert_eq!(json(&replayed), json(&hub.state), "the same alerts as live");
        assert_eq!(replayed.runs[0].price_per_hour, Some(3.6));
    }

    #[test]
    fn derived_rates_are_not_stored_twice() {
        let (_, rec) = live_and_recorded();
        assert!(!rec.points.metric_names.iter().any(|n| n == "tokens_per_s"), "the recording holds what producers sent");
        let mut values: Vec<(MetricName, f64)> = vec![("tokens".into(), 1.0), ("step_time_s".into(), 1.0), ("tokens_per_s".into(), 1.0), ("samples_per_s".into(), 2.0)];
        strip_derived(&mut values);
        assert_eq!(values.len(), 3, "samples_per_s stays: no samples to derive it from");
    }
}
