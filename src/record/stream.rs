//! Playing a recorded session without holding its points (design.md, "Snapshot").
//!
//! A snapshot is read twice. The first pass checks every row and indexes the
//! session's steps: each logged step's time (for the replay clock and seeking),
//! its place in the play order, and the row group holding it (found from the step
//! through stretches of consecutive steps): about 12 bytes a step. The second pass decodes row groups as
//! the replay reaches their steps and drops each once all its steps were played:
//! runs that interleave in time each keep their current group (a k-way merge of
//! group cursors). A decoded group keeps, per series, stretches of rows in step
//! order with their values (4 bytes a point where every value is exactly an f32,
//! else 8), so a step's points are found without sorting the group. The events come out exactly as [`Recording::timeline`] builds
//! them from the whole file: the same entries, times and order, the same values in
//! the same order within a step.
//!
//! A file from another writer may cut its row groups by row count, inside steps
//! (pyarrow's `row_group_size`, say): a step's points then lie in several groups,
//! which are decoded (each once) and held together while such steps play, each
//! let go once every step with points in it was played. Memory then holds the
//! groups a step spans, never the file.
//!
//! Journals, and files whose rows are not kept by series (as the oldest layout),
//! are held whole, as before.
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;

use super::model::{strip_derived, Meta, Points, Recording, Timeline, TELEMETRY};
use super::{snapshot, BadFile, RecordedBaseline};
use crate::metrics::{catalog, MetricName};
use crate::session::hub::{HealthCall, Judged};
use crate::session::{Event, Hub, RunId, SessionState};

/// Rows per batch while streaming: small, so a batch's buffers stay small beside
/// the decoded group.
const STREAM_BATCH_ROWS: usize = 1 << 16;

/// Events handed from the reading thread to the applying one at a time, and
/// batches the reading thread may be ahead by.
const PLAY_BATCH: usize = 2048;
const PLAY_BATCHES_AHEAD: usize = 2;

/// A recorded session ready to play, event by event.
pub enum Playback {
    /// The whole recording in memory (journals, and files that cannot stream).
    Held { rec: Box<Recording>, timeline: Timeline },
    /// A snapshot read from its file as the replay goes.
    Streamed(Box<Streamed>),
}

impl From<Recording> for Playback {
    fn from(rec: Recording) -> Self {
        Playback::held(rec)
    }
}

impl Playback {
    pub fn held(rec: Recording) -> Self {
        let timeline = rec.timeline();
        Playback::Held { rec: Box::new(rec), timeline }
    }

    /// Opens a recorded session: a snapshot streams from its file when its layout
    /// allows; a journal folder (or another snapshot) is read whole. Bad input is an
    /// error naming the file and the problem, as [`super::load`] says it.
    pub fn open(path: &Path) -> crate::Result<Self> {
        match Streamed::open_path(path)? {
            Some(s) => Ok(Playback::Streamed(Box::new(s))),
            None => super::load(path).map(Playback::held),
        }
    }

    pub fn meta(&self) -> &Meta {
        match self {
            Playback::Held { rec, .. } => &rec.meta,
            Playback::Streamed(s) => &s.meta,
        }
    }

    pub fn meta_mut(&mut self) -> &mut Meta {
        match self {
            Playback::Held { rec, .. } => &mut rec.meta,
            Playback::Streamed(s) => &mut s.meta,
        }
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        match self {
            Playback::Held { timeline, .. } => timeline.len(),
            Playback::Streamed(s) => s.entries.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Session time of event `i`.
    pub fn time(&self, i: usize) -> Option<f64> {
        match self {
            Playback::Held { timeline, .. } => timeline.time(i),
            Playback::Streamed(s) => s.entries.get(i).map(|e| s.time_of(*e)),
        }
    }

    /// Index of the first event after session time `pos` (events are in time order).
    pub fn after(&self, pos: f64) -> usize {
        match self {
            Playback::Held { timeline, .. } => timeline.after(pos),
            Playback::Streamed(s) => s.entries.partition_point(|e| s.time_of(*e) <= pos),
        }
    }

    /// Event `i` and its session time. Events are meant to be taken in order
    /// from the first (or from where [`Playback::restart`] left): a streamed file
    /// frees each row group once its steps were taken.
    pub fn event(&mut self, i: usize) -> Option<(f64, Event)> {
        match self {
            Playback::Held { rec, timeline } => timeline.event(rec, i),
            Playback::Streamed(s) => s.event(i),
        }
    }

    /// The next events start again from the first (a seek back).
    pub fn restart(&mut self) {
        if let Playback::Streamed(s) = self {
            s.restart();
        }
    }

    /// A hub as at the start of the session, holding its runs against `baseline`;
    /// the hub then raises the baseline's alerts itself, so the recorded ones are
    /// left out of the events. Playing starts again from the first event.
    pub fn start(&mut self, baseline: Option<&RecordedBaseline>) -> Hub {
        if baseline.is_some() {
            self.drop_alerts();
        }
        self.restart();
        hub_at_start(self.meta(), baseline)
    }

    /// Applies every event from the first to `hub`.
    pub fn play_all(&mut self, hub: &mut Hub) {
        self.restart();
        self.play_into(0, hub, |_, _, _| {});
    }

    /// Applies events `from..` to `hub` in order, calling `after` with the hub,
    /// the event's time and, for a run's step ([`Event::Metrics`]), its run, once
    /// each is applied. Events are read on a second
    /// thread as with [`Playback::play_from`]; a hub that judges its runs itself
    /// has them judged on a third, ahead of it ([`Hub::judge_ahead`]), so that
    /// keeping the points and judging them take a core each. The hub raises each
    /// event's alerts where it would have raised them itself: the same state.
    pub fn play_into(&mut self, from: usize, hub: &mut Hub, mut after: impl FnMut(&Hub, f64, Option<RunId>)) {
        let step_of = |e: &Event| match e {
            Event::Metrics { run, .. } => Some(*run),
            _ => None,
        };
        let Some(mut judge) = hub.judge_ahead() else {
            return self.play_from(from, |t, e| {
                let step = step_of(&e);
                hub.apply(e, t);
                after(hub, t, step);
            });
        };
        let len = self.len();
        let (to_judge, from_reading) = std::sync::mpsc::sync_channel::<Vec<(f64, Event)>>(PLAY_BATCHES_AHEAD);
        let (to_apply, from_judging) = std::sync::mpsc::sync_channel::<Vec<(f64, Event, Judged)>>(PLAY_BATCHES_AHEAD);
        let (to_restart, restarts) = std::sync::mpsc::channel::<Vec<HealthCall>>();
        std::thread::scope(|scope| {
            let this = &mut *self;
            scope.spawn(move || this.send_in_batches(from..len, &to_judge));
            let judging = scope.spawn(move || {
                for batch in from_reading {
                    let mut judged = Vec::with_capacity(batch.len());
                    for (t, e) in batch {
                        let (e, raised, resume) = judge.judge(e);
                        judged.push((t, e, raised));
                        // A resume restarts the detectors from the points the hub
                        // kept: it must have applied everything up to it.
                        if resume {
                            let ready = std::mem::replace(&mut judged, Vec::with_capacity(PLAY_BATCH));
                            match to_apply.send(ready).ok().and_then(|()| restarts.recv().ok()) {
                                Some(calls) => judge.restart(calls),
                                None => return judge,
                            }
                        }
                    }
                    if to_apply.send(judged).is_err() {
                        break;
                    }
                }
                judge
            });
            for batch in from_judging {
                for (t, e, judged) in batch {
                    let resume = matches!(e, Event::Resumed { .. } | Event::RankResumed { .. });
                    let step = step_of(&e);
                    hub.apply_judged(e, t, judged);
                    if resume {
                        // The judging side waits for exactly this, or has stopped.
                        let _ = to_restart.send(hub.take_health_calls());
                    }
                    after(hub, t, step);
                }
            }
            drop(to_restart);
            let judge = judging.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            hub.judged_here(judge);
        });
    }

    /// Reads events `range` in order and sends them a batch at a time; runs on the
    /// reading thread of [`Playback::play_from`] and [`Playback::play_into`].
    fn send_in_batches(&mut self, range: std::ops::Range<usize>, to: &std::sync::mpsc::SyncSender<Vec<(f64, Event)>>) {
        let mut batch = Vec::with_capacity(PLAY_BATCH);
        for i in range {
            batch.extend(self.event(i));
            // The receiving side stops early only by panicking: nothing to do then.
            if batch.len() == PLAY_BATCH && to.send(std::mem::replace(&mut batch, Vec::with_capacity(PLAY_BATCH))).is_err() {
                return;
            }
        }
        let _ = to.send(batch);
    }

    /// Hands events `from..` to `apply` in order. They are read (a streamed file's
    /// row groups decoded) on a second thread while `apply` works through the
    /// ones before, a batch at a time through a bounded channel: decoding overlaps
    /// the hub. Events are meant to be taken in order, as with [`Playback::event`].
    pub fn play_from(&mut self, from: usize, mut apply: impl FnMut(f64, Event)) {
        let len = self.len();
        let (to_apply, from_reading) = std::sync::mpsc::sync_channel::<Vec<(f64, Event)>>(PLAY_BATCHES_AHEAD);
        std::thread::scope(|scope| {
            let this = &mut *self;
            scope.spawn(move || this.send_in_batches(from..len, &to_apply));
            for batch in from_reading {
                for (t, e) in batch {
                    apply(t, e);
                }
            }
        });
    }

    /// The session's final state as its events rebuild it (no baseline), as
    /// [`Recording::final_state`].
    pub fn final_state(&mut self) -> SessionState {
        let mut hub = self.start(None);
        self.play_all(&mut hub);
        hub.state
    }

    fn drop_alerts(&mut self) {
        match self {
            Playback::Held { timeline, .. } => timeline.drop_alerts(),
            Playback::Streamed(s) => {
                let events = &s.events;
                // A script's own alerts (`rlmon.alert`) are not the baseline's: they stay.
                s.entries.retain(|e| !matches!(e.get(), Entry::Event(k) if matches!(&events[k as usize].1, Event::Alert { alert, .. } if alert.kind != crate::health::AlertKind::UserAlert)));
            }
        }
    }
}

/// A fresh hub for `meta`'s session, holding it against `baseline` when given.
pub fn hub_at_start(meta: &Meta, baseline: Option<&RecordedBaseline>) -> Hub {
    let mut hub = meta.fresh_hub();
    if let Some((base, tolerance)) = baseline {
        hub.set_baseline(base.clone(), *tolerance);
    }
    hub
}

/// One event of the play order: an event kept whole, or a logged step.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Entry {
    Event(u32),
    Step(u32),
}

/// An [`Entry`] in 4 bytes: the top bit says a step.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PackedEntry(u32);

impl PackedEntry {
    const STEP: u32 = 1 << 31;
    /// Events or steps beyond this many do not stream (the file is read whole).
    const MAX: usize = Self::STEP as usize;

    fn pack(e: Entry) -> PackedEntry {
        match e {
            Entry::Event(k) => PackedEntry(k),
            Entry::Step(k) => PackedEntry(k | Self::STEP),
        }
    }

    fn get(self) -> Entry {
        if self.0 & Self::STEP != 0 {
            Entry::Step(self.0 & !Self::STEP)
        } else {
            Entry::Event(self.0)
        }
    }
}

/// The session's logged steps in (run, step) order: each one's time, and its run,
/// row group and step from the stretch it falls in (consecutive keys of one run
/// and group whose steps go up by one stride; usually a few per row group).
#[derive(Default)]
struct StepIndex {
    times: Vec<f64>,
    stretches: Vec<IndexStretch>,
}

#[derive(Debug, Clone, Copy)]
struct IndexStretch {
    /// Index of its first key.
    start: u32,
    run: u32,
    group: u32,
    /// Its keys' points lie in row groups `group..=group + span`.
    span: u32,
    stride: u32,
    first_step: u64,
}

impl StepIndex {
    /// `keys` sorted by (run, step).
    fn new(keys: impl IntoIterator<Item = StepKey>) -> StepIndex {
        let mut stretches: Vec<IndexStretch> = Vec::new();
        let mut times = Vec::new();
        for (k, key) in keys.into_iter().enumerate() {
            times.push(key.time_s);
            if let Some(s) = stretches.last_mut() {
                let n = (k - s.start as usize) as u64;
                if s.run == key.run && s.group == key.group && s.span == key.last_group - key.group {
                    if n == 1 && key.step > s.first_step && key.step - s.first_step <= u32::MAX as u64 {
                        s.stride = (key.step - s.first_step) as u32;
                        continue;
                    }
                    if n > 1 && s.first_step.checked_add(n * s.stride as u64) == Some(key.step) {
                        continue;
                    }
                }
            }
            stretches.push(IndexStretch { start: k as u32, run: key.run, group: key.group, span: key.last_group - key.group, stride: 0, first_step: key.step });
        }
        stretches.shrink_to_fit();
        times.shrink_to_fit();
        StepIndex { times, stretches }
    }

    fn len(&self) -> usize {
        self.times.len()
    }

    fn get(&self, k: usize) -> Option<StepKey> {
        let time_s = *self.times.get(k)?;
        let s = self.stretches[self.stretches.partition_point(|s| s.start as usize <= k).checked_sub(1)?];
        let step = s.first_step + (k - s.start as usize) as u64 * s.stride as u64;
        Some(StepKey { run: s.run, group: s.group, last_group: s.group + s.span, step, time_s })
    }

    fn iter(&self) -> impl Iterator<Item = StepKey> + '_ {
        (0..self.len()).filter_map(|k| self.get(k))
    }

    /// How many keys have points in each row group (of `groups`).
    fn per_group(&self, groups: usize) -> Vec<u32> {
        let mut out = vec![0u32; groups];
        for (i, s) in self.stretches.iter().enumerate() {
            let end = self.stretches.get(i + 1).map_or(self.len(), |n| n.start as usize);
            for g in s.group..=s.group.saturating_add(s.span) {
                if let Some(n) = out.get_mut(g as usize) {
                    *n += (end - s.start as usize) as u32;
                }
            }
        }
        out
    }

    #[cfg(test)]
    fn heap_bytes(&self) -> usize {
        self.times.capacity() * 8 + self.stretches.capacity() * std::mem::size_of::<IndexStretch>()
    }
}

/// A logged step (or telemetry sample) and where its points lie: row groups
/// `group..=last_group` (one, unless another writer cut row groups inside a step).
#[derive(Debug, Clone, Copy, PartialEq)]
struct StepKey {
    run: u32,
    group: u32,
    last_group: u32,
    step: u64,
    /// The `time_s` of the step's first point in the file.
    time_s: f64,
}

/// A step's key while the file is indexed (its run is the list it is in).
#[derive(Debug, Clone, Copy, PartialEq)]
struct RunKey {
    step: u64,
    time_s: f64,
    group: u32,
    last_group: u32,
}

/// The session's step keys gathered row group by row group, one per (run, step)
/// as they are met: a step another writer spread over several groups (cut by row
/// count) keeps the time of its first group (the first point in file order) and
/// the last group its points lie in. Held per run in step order, so a step met
/// again costs nothing more (24 bytes a step in all, whatever the groups).
#[derive(Default)]
struct KeyGather {
    /// By run id, each run's keys by step.
    runs: Vec<(u32, Vec<RunKey>)>,
    len: usize,
}

impl KeyGather {
    /// Row group `group`'s keys of `run` as (step, time of its first point in the
    /// group), sorted by step and each step once. Groups come in file order.
    fn add(&mut self, run: u32, group: u32, keys: &[(u64, f64)]) {
        if keys.is_empty() {
            return;
        }
        let at = self.runs.partition_point(|(r, _)| *r < run);
        if self.runs.get(at).is_none_or(|(r, _)| *r != run) {
            self.runs.insert(at, (run, Vec::new()));
        }
        let have = &mut self.runs[at].1;
        let fresh = |&(step, time_s): &(u64, f64)| RunKey { step, time_s, group, last_group: group };
        // Past the run's last step (the usual case): appended.
        let within = have.last().map_or(0, |last| keys.partition_point(|(step, _)| *step <= last.step));
        let mut new: Vec<RunKey> = Vec::new();
        let mut lo = 0;
        for &(step, time_s) in &keys[..within] {
            lo += gallop(&have[lo..], step);
            match have.get_mut(lo) {
                Some(k) if k.step == step => k.last_group = k.last_group.max(group),
                _ => new.push(fresh(&(step, time_s))),
            }
        }
        self.len += new.len() + keys.len() - within;
        if !new.is_empty() {
            // Steps between the run's own (rare: another writer's order): merged.
            let old = std::mem::take(have);
            let mut merged = Vec::with_capacity(old.len() + new.len() + keys.len() - within);
            let (mut a, mut b) = (old.into_iter().peekable(), new.into_iter().peekable());
            loop {
                let from_old = match (a.peek(), b.peek()) {
                    (Some(x), Some(y)) => x.step <= y.step,
                    _ => break,
                };
                merged.extend(if from_old { a.next() } else { b.next() });
            }
            merged.extend(a);
            merged.extend(b);
            *have = merged;
        }
        have.extend(keys[within..].iter().map(fresh));
    }

    fn len(&self) -> usize {
        self.len
    }

    /// Every key by (run, step), each run's list let go once read.
    fn into_sorted(self) -> impl Iterator<Item = StepKey> {
        self.runs.into_iter().flat_map(|(run, keys)| keys.into_iter().map(move |k| StepKey { run, group: k.group, last_group: k.last_group, step: k.step, time_s: k.time_s }))
    }
}

/// The first place in `keys` (sorted by step) whose step is not below `step`,
/// looked for from the start outwards: near the start when the steps looked for
/// go up with the keys.
fn gallop(keys: &[RunKey], step: u64) -> usize {
    let mut end = 1;
    while end < keys.len() && keys[end - 1].step < step {
        end *= 2;
    }
    let start = end / 2;
    let end = end.min(keys.len());
    start + keys[start..end].partition_point(|k| k.step < step)
}

/// A snapshot indexed for playing; its points stay in the file.
pub struct Streamed {
    path: PathBuf,
    meta: Meta,
    reader: ArrowReaderMetadata,
    /// The play order.
    entries: Vec<PackedEntry>,
    /// Events that are not steps (status, starts, ends, log lines, alerts).
    events: Vec<(f64, Event)>,
    steps: StepIndex,
    /// Each run's start (session time), by run index.
    started: Vec<f64>,
    /// Metric names by id, and the buffer batches are read into (its name table
    /// gives the ids).
    names: Vec<&'static str>,
    /// Whether a name the hub derives itself (tokens/s, samples/s) is among them:
    /// only then are a step's values looked through for it.
    derived_named: bool,
    scratch: Points,
    /// Decoded row groups, and per group the steps not yet played.
    decoded: Vec<Group>,
    remaining: Vec<u32>,
    /// Why the file could not be read again, once it could not (said once).
    failure: Option<String>,
    /// Points of the step played last: the next one's are usually as many.
    step_points: usize,
}

impl Streamed {
    /// A snapshot at `path` indexed for streaming; `None` for a journal, or a file
    /// whose layout does not stream (to be read whole). Bad input is an error
    /// naming the file and the problem, as [`super::load`] says it.
    pub fn open_path(path: &Path) -> crate::Result<Option<Self>> {
        let bad = |problem: String| crate::RlmonError::BadInput { path: path.to_path_buf(), problem };
        if path.is_file() && snapshot::looks_like_parquet(path) {
            match Streamed::open(path).map_err(|e| bad(e.0))? {
                Some(s) => return Ok(Some(s)),
                None => tracing::info!("{}: its rows are not kept by series; reading it whole", path.display()),
            }
        }
        Ok(None)
    }

    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Every point of the file by run, then step, then file order (the order
    /// [`Points::by_run_step`] gives a recording read whole), one logged step at a
    /// time: `visit(run, step, points)` with each point's metric, time and value.
    /// A row group is decoded (with its times) when a run's steps reach it, so
    /// once per run it holds. The outer error is the file's, the inner `visit`'s.
    pub fn for_each_step(&mut self, mut visit: impl FnMut(u32, u64, &[(MetricName, f64, f64)]) -> std::io::Result<()>) -> Result<std::io::Result<()>, BadFile> {
        self.decoded.clear();
        // The groups the current step's points lie in (one, unless another writer
        // cut row groups inside steps).
        let mut current: Vec<Group> = Vec::new();
        let mut points = Vec::new();
        for k in 0..self.steps.len() {
            let Some(s) = self.steps.get(k) else { break };
            let span = s.group..=s.last_group;
            // The groups before are let go first.
            current.retain(|g| span.contains(&g.index));
            for group in span.clone() {
                if !current.iter().any(|g| g.index == group) {
                    let g = self.decode(group, true)?;
                    let at = current.partition_point(|c| c.index < group);
                    current.insert(at, g);
                    self.name_new_metrics();
                }
            }
            points.clear();
            for g in &current {
                points.extend(g.points_at(s.run, s.step, &self.names));
            }
            if let Err(e) = visit(s.run, s.step, &points) {
                return Ok(Err(e));
            }
        }
        self.restart();
        Ok(Ok(()))
    }

    /// Reads the file once through, checking it and indexing its steps. `None` when
    /// its layout does not stream (rows not kept by series).
    pub fn open(path: &Path) -> Result<Option<Self>, BadFile> {
        let file = File::open(path).map_err(|e| BadFile(format!("cannot open: {e}")))?;
        crate::error::contain_panic(|| Self::index(path, &file))
            .unwrap_or_else(|why| Err(BadFile(format!("corrupted data (the Parquet reader failed: {why})"))))
    }

    fn index(path: &Path, file: &File) -> Result<Option<Self>, BadFile> {
        let file_len = file.metadata().map_err(|e| BadFile(format!("cannot open: {e}")))?.len();
        let reader = ArrowReaderMetadata::load(file, Default::default())
            .map_err(|e| BadFile(format!("not a readable Parquet file (truncated or corrupted?): {e}")))?;
        snapshot::check_claims(reader.metadata(), file_len)?;
        let meta = snapshot::parse_meta(reader.metadata().file_metadata().key_value_metadata())?;
        for name in ["run", "step", "time_s", "metric", "value"] {
            if reader.schema().fields().find(name).is_none() {
                return Err(BadFile(format!("no `{name}` column: not an rlmon snapshot")));
            }
        }
        let started: Vec<f64> = meta.runs.iter().map(|r| r.started_s.unwrap_or(0.0)).collect();
        let start_of = |run: u32| if run == TELEMETRY { 0.0 } else { started.get(run as usize).copied().unwrap_or(0.0) };
        // A resume goes before the first point logged after it (see `timeline`).
        let mut resume_at: Vec<f64> = meta.resumes.iter().map(|r| r.at_s).collect();
        let mut scratch = Points::default();
        let mut steps = KeyGather::default();
        for g in 0..reader.metadata().num_row_groups() {
            let mut firsts = FirstTimes::default();
            let (mut rows, mut stretches) = (0usize, 0usize);
            let mut prev: Option<(u32, u32, u64)> = None;
            // The values are read on their own, after the rest: the group's pages
            // of times and of values are not held together.
            for batch in read_group(file, &reader, g, &["run", "step", "time_s", "metric"])? {
                let batch = batch.map_err(|e| BadFile(format!("corrupted data: {e}")))?;
                let p = snapshot::Rows::of(&batch, &meta, &mut scratch, true, false)?;
                let times = p.time_s.unwrap_or_default();
                for (i, &time_s) in times.iter().enumerate().take(p.len()) {
                    let (run, metric, step) = (p.run(i), p.metric(i), p.step[i] as u64);
                    if !prev.is_some_and(|(r, m, s)| r == run && m == metric && step > s) {
                        stretches += 1;
                    }
                    prev = Some((run, metric, step));
                    firsts.see(run, metric, step, time_s);
                    for (k, r) in meta.resumes.iter().enumerate() {
                        if r.run as u32 == run && step >= r.at_step {
                            resume_at[k] = resume_at[k].min(start_of(run) + time_s);
                        }
                    }
                }
                rows += p.len();
            }
            for batch in read_group(file, &reader, g, &["value"])? {
                snapshot::check_values(&batch.map_err(|e| BadFile(format!("corrupted data: {e}")))?)?;
            }
            // Rows not kept by series would make finding a step's points costly.
            if stretches > rows / 8 + 1024 {
                return Ok(None);
            }
            firsts.into_steps(g as u32, &mut steps);
        }
        // A step whose points another writer spread over several row groups (cut
        // by row count) is one key: timed by its first point in file order, played
        // once all those groups are decoded.
        if steps.len() >= PackedEntry::MAX {
            return Ok(None);
        }
        let steps = StepIndex::new(steps.into_sorted());
        let names: Vec<&'static str> = scratch.metric_names.iter().map(|n| catalog::intern(n)).collect();
        let derived_named = names.iter().any(|n| is_derived(n));
        let remaining = steps.per_group(reader.metadata().num_row_groups());
        let mut streamed = Streamed {
            path: path.to_path_buf(),
            meta,
            reader,
            entries: Vec::new(),
            events: Vec::new(),
            steps,
            started,
            names,
            derived_named,
            scratch,
            decoded: Vec::new(),
            remaining,
            failure: None,
            step_points: 0,
        };
        streamed.order(&resume_at);
        Ok(Some(streamed))
    }

    /// The play order, as [`Recording::timeline`] makes it: events pushed in the
    /// same order, then a stable sort by time.
    fn order(&mut self, resume_at: &[f64]) {
        let meta = &self.meta;
        let mut events: Vec<(f64, Event)> = vec![(0.0, Event::GpuStatus(meta.gpu.clone()))];
        for (i, r) in meta.runs.iter().enumerate().filter(|(_, r)| r.rank_of.is_none()) {
            if let (Some(t), Some(threads)) = (r.started_s, r.threads) {
                events.push((t, Event::RunStarted { run: i, device: r.device.clone(), threads }));
            }
        }
        for (r, at) in meta.resumes.iter().zip(resume_at) {
            events.push((*at, Event::Resumed { run: r.run, at_step: r.at_step, discarded: r.discarded }));
        }
        let before_steps = events.len();
        let mut last_point_s = vec![0.0f64; meta.runs.len()];
        for s in self.steps.iter() {
            if let Some(last) = last_point_s.get_mut(s.run as usize) {
                *last = last.max(self.started[s.run as usize] + s.time_s);
            }
        }
        events.extend(meta.closing_events(&last_point_s));
        let mut entries: Vec<PackedEntry> = (0..before_steps as u32).map(|k| PackedEntry::pack(Entry::Event(k))).collect();
        entries.extend((0..self.steps.len() as u32).map(|k| PackedEntry::pack(Entry::Step(k))));
        entries.extend((before_steps as u32..events.len() as u32).map(|k| PackedEntry::pack(Entry::Event(k))));
        self.events = events;
        // Each step's session time once, for the sort (8 bytes a step while it runs).
        let step_times: Vec<f64> = self.steps.iter().map(|s| self.session_time(&s)).collect();
        let time = |e: PackedEntry| match e.get() {
            Entry::Event(k) => self.events[k as usize].0,
            Entry::Step(k) => step_times[k as usize],
        };
        // Stable: entries at one instant keep the order above.
        entries.sort_by(|a, b| time(*a).total_cmp(&time(*b)));
        self.entries = entries;
    }

    fn time_of(&self, e: PackedEntry) -> f64 {
        match e.get() {
            Entry::Event(k) => self.events[k as usize].0,
            Entry::Step(k) => self.steps.get(k as usize).map_or(0.0, |s| self.session_time(&s)),
        }
    }

    /// When step `s` happened in session time.
    fn session_time(&self, s: &StepKey) -> f64 {
        if s.run == TELEMETRY {
            s.time_s
        } else {
            self.started[s.run as usize] + s.time_s
        }
    }

    fn restart(&mut self) {
        self.decoded.clear();
        self.remaining = self.steps.per_group(self.remaining.len());
    }

    fn event(&mut self, i: usize) -> Option<(f64, Event)> {
        let entry = *self.entries.get(i)?;
        let t = self.time_of(entry);
        let k = match entry.get() {
            Entry::Event(k) => return Some((t, self.events[k as usize].1.clone())),
            Entry::Step(k) => k as usize,
        };
        let s = self.steps.get(k)?;
        let values = self.values_of(s);
        // A group is let go once every step with points in it was played.
        for g in s.group..=s.last_group {
            let Some(left) = self.remaining.get_mut(g as usize) else { break };
            *left = left.saturating_sub(1);
            if *left == 0 {
                self.decoded.retain(|d| d.index != g);
            }
        }
        let mut values = values?;
        let event = if s.run == TELEMETRY {
            Event::Telemetry { time_s: s.time_s, values }
        } else {
            if self.derived_named {
                strip_derived(&mut values);
            }
            Event::Metrics { run: s.run as usize, step: s.step, time_s: s.time_s, values }
        };
        Some((t, event))
    }

    /// The points of step `s` in file order; `None` when its group cannot be read
    /// again (said once).
    fn values_of(&mut self, s: StepKey) -> Option<Vec<(MetricName, f64)>> {
        for group in s.group..=s.last_group {
            if self.decoded.iter().any(|g| g.index == group) {
                continue;
            }
            match self.decode(group, false) {
                Ok(g) => self.decoded.push(g),
                Err(e) => {
                    if self.failure.is_none() {
                        crate::say!("rlmon: {}: cannot read row group {group} again ({e}); its steps are left out", self.path.display());
                        self.failure = Some(e.0);
                    }
                    return None;
                }
            }
        }
        self.name_new_metrics();
        // As many as the step before, and room for the metrics derived from them.
        let mut values = Vec::with_capacity(self.step_points + 4);
        // Row groups in file order: the step's points in file order.
        for group in s.group..=s.last_group {
            let g = self.decoded.iter().find(|g| g.index == group)?;
            g.values_at(s.run, s.step, &self.names, &mut values);
        }
        self.step_points = values.len();
        Some(values)
    }

    /// Names met first in the second pass (the file changed in between).
    fn name_new_metrics(&mut self) {
        if self.names.len() < self.scratch.metric_names.len() {
            let more: Vec<&'static str> = self.scratch.metric_names[self.names.len()..].iter().map(|n| catalog::intern(n)).collect();
            self.derived_named |= more.iter().any(|n| is_derived(n));
            self.names.extend(more);
        }
    }

    /// Row group `group` decoded, each point's time kept when `with_time`.
    fn decode(&mut self, group: u32, with_time: bool) -> Result<Group, BadFile> {
        let file = File::open(&self.path).map_err(|e| BadFile(format!("cannot open: {e}")))?;
        let (meta, reader, scratch) = (&self.meta, &self.reader, &mut self.scratch);
        crate::error::contain_panic(|| -> Result<Group, BadFile> {
            let mut g = GroupBuilder::new(group);
            let columns: &[&str] = if with_time { &["run", "step", "time_s", "metric", "value"] } else { &["run", "step", "metric", "value"] };
            for batch in read_group(&file, reader, group as usize, columns)? {
                let batch = batch.map_err(|e| BadFile(format!("corrupted data: {e}")))?;
                let p = snapshot::Rows::of(&batch, meta, scratch, with_time, true)?;
                for (i, &value) in p.value.iter().enumerate().take(p.len()) {
                    g.push(p.run(i), p.metric(i), p.step[i] as u64, value, p.time_s.and_then(|t| t.get(i).copied()));
                }
            }
            Ok(g.finish())
        })
        .unwrap_or_else(|why| Err(BadFile(format!("corrupted data (the Parquet reader failed: {why})"))))
    }
}

/// Whether the hub derives metric `name` itself from a step's others (what
/// [`strip_derived`] may leave out).
fn is_derived(name: &str) -> bool {
    name == catalog::TOKENS_PER_S || name == catalog::SAMPLES_PER_S
}

/// The batches of row group `g`, with `columns` only.
fn read_group(file: &File, reader: &ArrowReaderMetadata, g: usize, columns: &[&str]) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader, BadFile> {
    let file = file.try_clone().map_err(|e| BadFile(format!("cannot open: {e}")))?;
    let mask = ProjectionMask::columns(reader.parquet_schema(), columns.iter().copied());
    ParquetRecordBatchReaderBuilder::new_with_metadata(file, reader.clone())
        .with_row_groups(vec![g])
        .with_projection(mask)
        .with_batch_size(STREAM_BATCH_ROWS)
        .build()
        .map_err(|e| BadFile(format!("unreadable: {e}")))
}

/// The time of each (run, step)'s first point in file order, within one row group.
/// Ranges of consecutive steps met first are kept densely, a few per run (one
/// where a group holds whole series; two where another writer cut it inside
/// one, the cut series' tail and the next series' head); later points look
/// there first, then among the rest.
#[derive(Default)]
struct FirstTimes {
    /// Ranges of consecutive steps, disjoint within a run: its run, first step
    /// and each step's time.
    dense: Vec<(u32, u64, Vec<f64>)>,
    /// The range still growing: its index in `dense`, its metric, and the step
    /// it stops before (where a range of its run after it starts).
    open: Option<(usize, u32, u64)>,
    /// The range that held the point seen last: likely the next one's.
    last: usize,
    other: HashMap<(u32, u64), f64>,
}

/// Ranges kept densely per run in a row group, at most: a run's steps beyond
/// them (sparse ones) are kept one by one.
const DENSE_RANGES: usize = 4;

impl FirstTimes {
    fn see(&mut self, run: u32, metric: u32, step: u64, time_s: f64) {
        if let Some((d, m, stop)) = self.open {
            let (r, first, times) = &mut self.dense[d];
            if *r == run && m == metric && step == *first + times.len() as u64 && step < stop {
                times.push(time_s);
                return;
            }
            self.open = None;
        }
        let covers = |(r, first, times): &(u32, u64, Vec<f64>)| *r == run && step >= *first && step - first < times.len() as u64;
        if self.dense.get(self.last).is_some_and(covers) {
            return;
        }
        if let Some(d) = self.dense.iter().position(covers) {
            self.last = d;
            return;
        }
        // A step not seen yet. Once a run has its ranges, the rest of its steps
        // are kept one by one; a range never grows over them, since none opens
        // after them.
        if self.dense.iter().filter(|(r, _, _)| *r == run).count() < DENSE_RANGES {
            let stop = self.dense.iter().filter(|(r, first, _)| *r == run && *first > step).map(|(_, first, _)| *first).min().unwrap_or(u64::MAX);
            self.dense.push((run, step, vec![time_s]));
            self.last = self.dense.len() - 1;
            self.open = Some((self.last, metric, stop));
        } else {
            self.other.entry((run, step)).or_insert(time_s);
        }
    }

    fn into_steps(self, group: u32, out: &mut KeyGather) {
        let mut other: Vec<(u32, u64, f64)> = self.other.into_iter().map(|((run, step), time_s)| (run, step, time_s)).collect();
        other.sort_unstable_by_key(|&(run, step, _)| (run, step));
        let mut dense = self.dense;
        dense.sort_unstable_by_key(|(run, first, _)| (*run, *first));
        let mut runs: Vec<u32> = dense.iter().map(|(run, _, _)| *run).chain(other.iter().map(|(run, _, _)| *run)).collect();
        runs.sort_unstable();
        runs.dedup();
        let (mut rest, mut ranges) = (&other[..], &dense[..]);
        let mut keys: Vec<(u64, f64)> = Vec::new();
        // Each run's keys: its ranges and the others, merged by step.
        for run in runs {
            let (mine, later) = rest.split_at(rest.partition_point(|(r, _, _)| *r == run));
            rest = later;
            let (own, after) = ranges.split_at(ranges.partition_point(|(r, _, _)| *r == run));
            ranges = after;
            keys.clear();
            let mut sparse = mine.iter().map(|&(_, step, time_s)| (step, time_s)).peekable();
            for (_, first, times) in own {
                for (k, &time_s) in times.iter().enumerate() {
                    let step = first + k as u64;
                    while let Some(&(s, t)) = sparse.peek().filter(|(s, _)| *s < step) {
                        keys.push((s, t));
                        sparse.next();
                    }
                    keys.push((step, time_s));
                }
            }
            keys.extend(sparse);
            out.add(run, group, &keys);
        }
    }
}

/// A row group's points, found by step through stretches: one series' rows in
/// increasing step order, each with its values.
struct Group {
    index: u32,
    stretches: Vec<Stretch>,
    /// Per run, its stretches in file order.
    by_run: Vec<(u32, Vec<u32>)>,
}

struct Stretch {
    metric: u32,
    first: u64,
    last: u64,
    values: Values,
    /// Each point's time, when the group was decoded with them (an export).
    times: Option<Values>,
    /// The steps, when not every step from `first` to `last` is there.
    steps: Option<Box<[u64]>>,
}

impl Group {
    /// The points of `run` at `step` in file order, as (metric, time, value): each
    /// stretch holds at most one, and the stretches are in file order. The time is
    /// NaN when the group was decoded without times.
    fn points_at<'a>(&'a self, run: u32, step: u64, names: &'a [&'static str]) -> impl Iterator<Item = (MetricName, f64, f64)> + 'a {
        let stretches = self.by_run.iter().find(|(r, _)| *r == run).map_or(&[][..], |(_, list)| &list[..]);
        stretches.iter().filter_map(move |&k| {
            let s = &self.stretches[k as usize];
            if step < s.first || step > s.last {
                return None;
            }
            let at = match &s.steps {
                None => (step - s.first) as usize,
                Some(steps) => steps.binary_search(&step).ok()?,
            };
            let name = MetricName::Borrowed(names.get(s.metric as usize).copied().unwrap_or(""));
            Some((name, s.times.as_ref().map_or(f64::NAN, |t| t.get(at)), s.values.get(at)))
        })
    }

    /// The values of `run` at `step` in file order, appended to `out`: the points
    /// of [`Group::points_at`] without their times, for playing.
    fn values_at(&self, run: u32, step: u64, names: &[&'static str], out: &mut Vec<(MetricName, f64)>) {
        let Some((_, list)) = self.by_run.iter().find(|(r, _)| *r == run) else { return };
        for &k in list {
            let Some(s) = self.stretches.get(k as usize) else { continue };
            if step < s.first || step > s.last {
                continue;
            }
            let at = match &s.steps {
                None => (step - s.first) as usize,
                Some(steps) => match steps.binary_search(&step) {
                    Ok(at) => at,
                    Err(_) => continue,
                },
            };
            out.push((MetricName::Borrowed(names.get(s.metric as usize).copied().unwrap_or("")), s.values.get(at)));
        }
    }
}

/// A stretch's values, as `f32` while every one so far is exactly an `f32` (most
/// logged metrics are: 4 bytes a point), else as `f64`. Bit for bit either way.
enum Values {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Values {
    fn push(&mut self, value: f64) {
        match self {
            Values::F32(v) => {
                let narrow = value as f32;
                if f64::from(narrow).to_bits() == value.to_bits() {
                    v.push(narrow);
                } else {
                    let mut wide: Vec<f64> = Vec::with_capacity(v.capacity().max(v.len() + 1));
                    wide.extend(v.iter().map(|x| f64::from(*x)));
                    wide.push(value);
                    *self = Values::F64(wide);
                }
            }
            Values::F64(v) => v.push(value),
        }
    }

    fn get(&self, i: usize) -> f64 {
        match self {
            Values::F32(v) => f64::from(v[i]),
            Values::F64(v) => v[i],
        }
    }

    fn shrink_to_fit(&mut self) {
        match self {
            Values::F32(v) => v.shrink_to_fit(),
            Values::F64(v) => v.shrink_to_fit(),
        }
    }
}

struct GroupBuilder {
    group: Group,
    /// The open stretch: run, and its steps when they stopped being consecutive.
    open: Option<(u32, Stretch, Option<Vec<u64>>)>,
}

impl GroupBuilder {
    fn new(index: u32) -> Self {
        GroupBuilder { group: Group { index, stretches: Vec::new(), by_run: Vec::new() }, open: None }
    }

    fn push(&mut self, run: u32, metric: u32, step: u64, value: f64, time_s: Option<f64>) {
        if let Some((r, s, steps)) = &mut self.open {
            if *r == run && s.metric == metric && step > s.last {
                match steps {
                    None if step == s.last + 1 => {}
                    None => *steps = Some((s.first..=s.last).chain([step]).collect()),
                    Some(v) => v.push(step),
                }
                s.last = step;
                s.values.push(value);
                if let (Some(times), Some(t)) = (&mut s.times, time_s) {
                    times.push(t);
                }
                return;
            }
        }
        self.close();
        let mut values = Values::F32(Vec::new());
        values.push(value);
        let times = time_s.map(|t| {
            let mut times = Values::F32(Vec::new());
            times.push(t);
            times
        });
        self.open = Some((run, Stretch { metric, first: step, last: step, values, times, steps: None }, None));
    }

    fn close(&mut self) {
        if let Some((run, mut s, steps)) = self.open.take() {
            s.steps = steps.map(Vec::into_boxed_slice);
            s.values.shrink_to_fit();
            if let Some(t) = &mut s.times {
                t.shrink_to_fit();
            }
            let k = self.group.stretches.len() as u32;
            self.group.stretches.push(s);
            match self.group.by_run.iter_mut().find(|(r, _)| *r == run) {
                Some((_, list)) => list.push(k),
                None => self.group.by_run.push((run, vec![k])),
            }
        }
    }

    fn finish(mut self) -> Group {
        self.close();
        self.group
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::model::tests::{live_and_recorded, same_series};
    use crate::session::RunOutcome;
    use crate::record::snapshot::{write_with, RowOrder, Settings};

    fn events_of(p: &mut Playback) -> Vec<(f64, Event)> {
        p.restart();
        (0..p.len()).filter_map(|i| p.event(i)).collect()
    }

    fn bits(events: &[(f64, Event)]) -> String {
        // NaN values compare by their bits through Debug of to_bits-free formatting.
        format!("{:?}", events.iter().map(|(t, e)| (t.to_bits(), format!("{e:?}"))).collect::<Vec<_>>())
    }

    #[test]
    fn a_streamed_snapshot_plays_the_events_of_the_whole_file() {
        let (live, rec) = live_and_recorded();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.rlmon.parquet");
        snapshot::write(&path, &rec).unwrap();
        let mut held = Playback::held(snapshot::read(&path).unwrap());
        let mut streamed = Playback::open(&path).unwrap();
        assert!(matches!(streamed, Playback::Streamed(_)));
        assert_eq!(streamed.len(), held.len());
        assert_eq!(bits(&events_of(&mut streamed)), bits(&events_of(&mut held)));
        assert!((0..held.len()).all(|i| held.time(i).map(f64::to_bits) == streamed.time(i).map(f64::to_bits)));
        for pos in [0.0, 0.5, 1.0, 2.0, 10.0] {
            assert_eq!(streamed.after(pos), held.after(pos));
        }
        same_series(&live, &streamed.final_state());
        // Played twice: the row groups are read again.
        same_series(&live, &streamed.final_state());
    }

    /// Many small row groups, runs interleaved in time, a resume, sparse and
    /// duplicated steps: the same events as the file read whole.
    /// Two runs interleaved in time, a resume, sparse and duplicated steps, NaN.
    fn odd_recording() -> Recording {
        use crate::session::{Event, RunRecord};
        let runs = vec![RunRecord::new("a".into(), "lm".into(), "cpu".into(), 400), RunRecord::new("b".into(), "lm".into(), "cpu".into(), 400)];
        let mut rec = Recording::new(Meta::new("odd", "20260101T000000Z".into(), String::new(), &runs));
        rec.record(0.0, &Event::RunStarted { run: 0, device: "cpu".into(), threads: 1 });
        rec.record(0.05, &Event::RunStarted { run: 1, device: "cpu".into(), threads: 1 });
        let mut seed = 7u64;
        let mut jitter = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 40) as f64 / (1u64 << 24) as f64 * 0.02
        };
        for step in 1..=300u64 {
            for run in 0..2usize {
                let t = step as f64 * 0.01 + jitter();
                let mut values: Vec<(MetricName, f64)> = vec![("loss".into(), 1.0 / step as f64), ("tokens".into(), 100.0), ("step_time_s".into(), 0.01)];
                if step % 7 == 0 {
                    values.push(("reward".into(), step as f64));
                }
                if step % 50 == 0 {
                    values.push(("loss".into(), f64::NAN));
                }
                rec.record(t, &Event::Metrics { run, step, time_s: t, values });
            }
            if step % 10 == 0 {
                rec.record(step as f64 * 0.01, &Event::Telemetry { time_s: step as f64 * 0.01, values: vec![("host/cpu_pct".into(), 50.0)] });
            }
            if step == 200 {
                rec.record(2.0, &Event::Resumed { run: 1, at_step: 150, discarded: 50 });
            }
        }
        rec.record(3.5, &Event::RunEnded { run: 0, outcome: RunOutcome::Finished });
        rec
    }

    #[test]
    fn small_row_groups_and_odd_series_stream_the_same_events() {
        let rec = odd_recording();
        let dir = tempfile::tempdir().unwrap();
        let mut held = Playback::held(rec.clone());
        for rows in [7, 64, 1000, 1 << 20] {
            let path = dir.path().join(format!("odd-{rows}.rlmon.parquet"));
            snapshot::write_groups(&path, &rec, Settings { order: RowOrder::StepBlocks, zstd_level: 1 }, rows).unwrap();
            let mut streamed = Playback::open(&path).unwrap();
            assert!(matches!(streamed, Playback::Streamed(_)), "{rows} rows a group");
            let mut whole = Playback::held(snapshot::read(&path).unwrap());
            let from_file = bits(&events_of(&mut whole));
            assert_eq!(bits(&events_of(&mut streamed)), from_file, "{rows} rows a group");
            // (Debug: the alerts hold NaN values.)
            assert_eq!(format!("{:?}", streamed.final_state().alerts), format!("{:?}", whole.final_state().alerts));
            // The file orders a step's points by metric id; the series are the same.
            assert_eq!(streamed.len(), held.len());
            same_series(&held.final_state(), &streamed.final_state());
            if let Playback::Streamed(s) = &streamed {
                assert!(s.decoded.is_empty(), "every group let go at the end");
            }
        }
        // The layout that keeps a step's metrics together cannot stream: read whole.
        let path = dir.path().join("rsm.rlmon.parquet");
        write_with(&path, &rec, Settings { order: RowOrder::RunStepMetric, zstd_level: 1 }).unwrap();
        let mut p = Playback::open(&path).unwrap();
        assert!(matches!(p, Playback::Held { .. }));
        same_series(&held.final_state(), &p.final_state());
    }

    /// A producer that logs its own tokens/s beside its tokens and step time: the
    /// streamed steps leave it out where the whole file's do (the hub derives it),
    /// and keep it where they do (no step time to derive it from).
    #[test]
    fn a_logged_derived_rate_streams_as_the_whole_file_plays_it() {
        use crate::session::{Event, RunRecord};
        let runs = vec![RunRecord::new("a".into(), "lm".into(), "cpu".into(), 40)];
        let mut rec = Recording::new(Meta::new("rates", "20260101T000000Z".into(), String::new(), &runs));
        rec.record(0.0, &Event::RunStarted { run: 0, device: "cpu".into(), threads: 1 });
        for step in 1..=40u64 {
            let t = step as f64 * 0.1;
            let mut values: Vec<(MetricName, f64)> = vec![("loss".into(), 1.0 / step as f64), ("tokens".into(), 512.0), ("tokens_per_s".into(), 5120.0), ("samples_per_s".into(), 8.0)];
            if step % 3 != 0 {
                values.push(("step_time_s".into(), 0.1));
            }
            rec.record(t, &Event::Metrics { run: 0, step, time_s: t, values });
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rates.rlmon.parquet");
        snapshot::write(&path, &rec).unwrap();
        let mut streamed = Playback::open(&path).unwrap();
        let Playback::Streamed(s) = &streamed else { panic!("not streamed") };
        assert!(s.derived_named);
        let mut whole = Playback::held(snapshot::read(&path).unwrap());
        let events = events_of(&mut streamed);
        assert_eq!(bits(&events), bits(&events_of(&mut whole)));
        let rates = |step: u64| {
            events.iter().find_map(|(_, e)| match e {
                Event::Metrics { step: s, values, .. } if *s == step => Some(values.iter().filter(|(m, _)| m.ends_with("_per_s")).count()),
                _ => None,
            })
        };
        assert_eq!((rates(1), rates(3)), (Some(1), Some(2)), "tokens/s left out only where step time is there");
        // A file without such a name does not look for it.
        let (_, plain) = live_and_recorded();
        let path = dir.path().join("plain.rlmon.parquet");
        snapshot::write(&path, &plain).unwrap();
        let Playback::Streamed(s) = Playback::open(&path).unwrap() else { panic!("not streamed") };
        assert!(!s.derived_named);
    }

    /// rlmon's file rewritten by another writer whose row groups are cut by row
    /// count, inside steps (as pyarrow's `row_group_size` does): it streams, plays
    /// the events of the file read whole, and exports the same points.
    #[test]
    fn row_groups_cut_inside_steps_stream_the_same_events() {
        use parquet::arrow::ArrowWriter;
        use parquet::file::properties::WriterProperties;
        let rec = odd_recording();
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("ours.rlmon.parquet");
        snapshot::write(&ours, &rec).unwrap();
        for rows in [5, 97, 400, 1500] {
            let path = dir.path().join(format!("cut-{rows}.parquet"));
            let file = File::open(&ours).unwrap();
            let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
            let kv = builder.metadata().file_metadata().key_value_metadata().cloned();
            let props = WriterProperties::builder().set_max_row_group_row_count(Some(rows)).set_key_value_metadata(kv).build();
            let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), builder.schema().clone(), Some(props)).unwrap();
            for batch in builder.with_batch_size(64).build().unwrap() {
                w.write(&batch.unwrap()).unwrap();
            }
            w.close().unwrap();
            let mut streamed = Playback::open(&path).unwrap();
            let Playback::Streamed(s) = &streamed else { panic!("{rows} rows a group: not streamed") };
            assert!(s.steps.iter().any(|k| k.last_group > k.group), "{rows} rows a group: steps cut");
            let mut whole = Playback::held(snapshot::read(&path).unwrap());
            assert_eq!(bits(&events_of(&mut streamed)), bits(&events_of(&mut whole)), "{rows} rows a group");
            assert_eq!(format!("{:?}", streamed.final_state().alerts), format!("{:?}", whole.final_state().alerts));
            let Playback::Streamed(s) = &mut streamed else { unreachable!() };
            assert!(s.decoded.is_empty(), "every group let go at the end");
            // Exported: every point once, by run and step, then file order.
            let mut exported = Vec::new();
            s.for_each_step(|run, step, points| {
                exported.extend(points.iter().map(|(m, t, v)| (run, step, m.to_string(), t.to_bits(), v.to_bits())));
                Ok(())
            })
            .unwrap()
            .unwrap();
            let Playback::Held { rec: back, .. } = &whole else { unreachable!() };
            let p = &back.points;
            let want: Vec<_> = p.by_run_step().into_iter().map(|i| (p.run[i], p.step[i], p.metric_names[p.metric[i] as usize].clone(), p.time_s[i].to_bits(), p.value[i].to_bits())).collect();
            assert_eq!(exported, want, "{rows} rows a group");
        }
    }

    /// The compact index gives back every key it was built from, whatever the
    /// steps' spacing, and costs about 12 bytes a step on regular runs.
    #[test]
    fn the_step_index_gives_back_every_key() {
        let mut rng = crate::test_rng::Rng(0x2545f4914f6cdd1d);
        let mut next = move |n: u64| rng.below(n);
        for case in 0..6 {
            let mut keys = Vec::new();
            for run in [0u32, 1, 3, TELEMETRY] {
                let mut step = next(5);
                for _ in 0..next(3000) {
                    step += match case % 3 {
                        0 => 1,
                        1 => 1 + next(2) * 9,
                        _ => 1 + next(u32::MAX as u64 * 3),
                    };
                    let group = (step / 700) as u32 % 5;
                    let last_group = if case >= 3 { group + (step % 3) as u32 } else { group };
                    keys.push(StepKey { run, group, last_group, step, time_s: next(1 << 40) as f64 * 1e-6 });
                }
            }
            let index = StepIndex::new(keys.iter().copied());
            assert_eq!(index.len(), keys.len());
            assert!(index.iter().eq(keys.iter().copied()));
            assert_eq!(index.get(keys.len()), None);
            let mut per_group = vec![0u32; 7];
            keys.iter().for_each(|k| (k.group..=k.last_group).for_each(|g| per_group[g as usize] += 1));
            assert_eq!(index.per_group(7), per_group);
        }
        let keys: Vec<StepKey> = (0..100_000u64).map(|step| StepKey { run: 0, group: (step / 30_000) as u32, last_group: (step / 30_000) as u32, step, time_s: step as f64 }).collect();
        assert!(StepIndex::new(keys.iter().copied()).heap_bytes() < 100_000 * 9);
    }

    /// Keys gathered group by group are those of every group sorted by (run,
    /// step) with each step once: the time of its first group, its last group;
    /// whether a group's steps go past the run's, fall between them or repeat them.
    #[test]
    fn gathered_keys_are_every_groups_keys_once_each() {
        use std::collections::BTreeMap;
        let mut rng = crate::test_rng::Rng(0x9e3779b97f4a7c15);
        for case in 0..40u64 {
            let mut gather = KeyGather::default();
            let mut all = Vec::new();
            for group in 0..1 + rng.below(7) as u32 {
                let mut per_run: BTreeMap<u32, BTreeMap<u64, f64>> = BTreeMap::new();
                for _ in 0..rng.below(400) {
                    let run = [0u32, 1, 3, TELEMETRY][rng.index(4)];
                    // Some cases go on from group to group, some repeat or fill in.
                    let base = if case % 2 == 0 { group as u64 * 100 } else { 0 };
                    let step = base + rng.below(if case % 3 == 0 { 300 } else { 120 });
                    per_run.entry(run).or_default().entry(step).or_insert(rng.below(1 << 30) as f64);
                }
                for (run, steps) in per_run {
                    let keys: Vec<(u64, f64)> = steps.into_iter().collect();
                    all.extend(keys.iter().map(|&(step, time_s)| StepKey { run, group, last_group: group, step, time_s }));
                    gather.add(run, group, &keys);
                }
            }
            all.sort_by_key(|k| (k.run, k.step, k.group));
            all.dedup_by(|later, kept| {
                let same = (later.run, later.step) == (kept.run, kept.step);
                if same {
                    kept.last_group = later.group;
                }
                same
            });
            assert_eq!(gather.len(), all.len(), "case {case}");
            assert_eq!(gather.into_sorted().collect::<Vec<_>>(), all, "case {case}");
        }
        let keys: Vec<RunKey> = [1u64, 2, 5, 9, 9, 12].iter().map(|&step| RunKey { step, time_s: 0.0, group: 0, last_group: 0 }).collect();
        for (step, want) in [(0, 0), (1, 0), (3, 2), (9, 3), (10, 5), (12, 5), (13, 6)] {
            assert_eq!(gallop(&keys, step), want, "{step}");
        }
        assert_eq!(gallop(&[], 4), 0);
    }

    /// The first pass reads a group's values on their own, after its other
    /// columns, and still refuses a file whose values are missing or not floats
    /// before anything plays, whichever group holds them.
    #[test]
    fn bad_values_are_refused_before_playing() {
        use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, RecordBatch};
        use arrow_schema::{DataType, Field, Schema};
        use parquet::arrow::ArrowWriter;
        use parquet::file::properties::WriterProperties;
        let rec = odd_recording();
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("ours.rlmon.parquet");
        snapshot::write(&ours, &rec).unwrap();
        for (case, want) in [("null", "column `value` has missing values"), ("f32", "column `value` is not float64")] {
            let path = dir.path().join(format!("{case}.parquet"));
            let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&ours).unwrap()).unwrap();
            let kv = builder.metadata().file_metadata().key_value_metadata().cloned();
            let fields: Vec<Field> = builder.schema().fields().iter().map(|f| match (f.name().as_str(), case) {
                ("value", "null") => Field::new("value", DataType::Float64, true),
                ("value", _) => Field::new("value", DataType::Float32, false),
                _ => f.as_ref().clone(),
            }).collect();
            let schema = std::sync::Arc::new(Schema::new(fields));
            let props = WriterProperties::builder().set_max_row_group_row_count(Some(500)).set_key_value_metadata(kv).build();
            let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema.clone(), Some(props)).unwrap();
            let batches: Vec<RecordBatch> = builder.with_batch_size(100).build().unwrap().map(Result::unwrap).collect();
            let last = batches.len() - 1;
            for (k, batch) in batches.into_iter().enumerate() {
                let values = batch.column_by_name("value").unwrap().as_any().downcast_ref::<Float64Array>().unwrap().clone();
                let value: ArrayRef = match case {
                    // One missing value, in the file's last group.
                    "null" => std::sync::Arc::new(Float64Array::from_iter((0..values.len()).map(|i| (k != last || i != 3).then(|| values.value(i))))),
                    _ => std::sync::Arc::new(Float32Array::from_iter_values(values.values().iter().map(|v| *v as f32))),
                };
                let mut columns = batch.columns().to_vec();
                let at = batch.schema().index_of("value").unwrap();
                columns[at] = value;
                w.write(&RecordBatch::try_new(schema.clone(), columns).unwrap()).unwrap();
            }
            w.close().unwrap();
            let err = Playback::open(&path).err().unwrap_or_else(|| panic!("{case}: opened")).to_string();
            assert!(err.contains(want), "{case}: {err}");
        }
    }

    /// Each (run, step)'s time is its first point's in file order, whatever the
    /// series' order, spacing and cuts (ranges kept densely or one by one).
    #[test]
    fn first_times_are_each_steps_first_point() {
        use std::collections::BTreeMap;
        let mut rng = crate::test_rng::Rng(0x2545f4914f6cdd1d);
        for case in 0..60 {
            let mut firsts = FirstTimes::default();
            let mut want: BTreeMap<(u32, u64), f64> = BTreeMap::new();
            let mut t = 0.0;
            for _ in 0..1 + rng.below(12) {
                let (run, metric) = (rng.below(3) as u32, rng.below(4) as u32);
                let mut step = rng.below(if case % 2 == 0 { 50 } else { 400 });
                for _ in 0..rng.below(300) {
                    t += 1.0;
                    firsts.see(run, metric, step, t);
                    want.entry((run, step)).or_insert(t);
                    step += match case % 3 {
                        0 => 1,
                        1 => 1 + rng.below(3),
                        _ => 1 + rng.below(2) * 5,
                    };
                }
            }
            let mut gather = KeyGather::default();
            firsts.into_steps(0, &mut gather);
            let got: Vec<(u32, u64, f64)> = gather.into_sorted().map(|k| (k.run, k.step, k.time_s)).collect();
            let want: Vec<(u32, u64, f64)> = want.into_iter().map(|((run, step), t)| (run, step, t)).collect();
            assert_eq!(got, want, "case {case}");
        }
    }

    #[test]
    fn bad_files_are_refused_before_playing() {
        let (_, rec) = live_and_recorded();
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.rlmon.parquet");
        snapshot::write(&good, &rec).unwrap();
        let bytes = std::fs::read(&good).unwrap();
        let cut = dir.path().join("cut.rlmon.parquet");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let err = Playback::open(&cut).err().expect("truncated").to_string();
        assert!(err.contains("truncated or corrupted"), "{err}");
        for at in (4..bytes.len() - 8).step_by(89) {
            let mut b = bytes.clone();
            b[at] ^= 0x5a;
            std::fs::write(&cut, &b).unwrap();
            if let Ok(mut p) = Playback::open(&cut) {
                let _ = p.final_state();
            }
        }
    }
}
