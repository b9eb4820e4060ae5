//! A live session: the run tasks and the telemetry thread feeding one hub through a
//! bounded channel, with one root cancellation token and a child per run. Views
//! (headless, the terminal UI) drive it: they receive events, apply them, read the
//! state, and cancel runs. When recording, every event is journalled before the hub
//! applies it, and `finish` writes the snapshot.
use std::time::Instant;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{CriticalAction, OnCritical, SessionConfig, Threads};
use crate::health::{AlertKind, Severity};
use crate::notify::{Notice, Notifier};
use crate::record::journal::{Finale, Recorder};
use crate::record::{hardware, naming, Meta};
use crate::report::summary::SessionSummary;
use crate::session::{Event, Hub, LogLevel, RunRecord, SessionState};
use crate::{telemetry, workload};

/// Events in flight between producers and the hub. A step sends one event per run,
/// so this is seconds of slack even for fast loops.
pub const EVENT_CAPACITY: usize = 4096;

pub struct LiveSession {
    pub hub: Hub,
    rx: mpsc::Receiver<Event>,
    root: CancellationToken,
    run_tokens: Vec<CancellationToken>,
    tasks: Vec<JoinHandle<()>>,
    sampler: Option<std::thread::JoinHandle<()>>,
    started: Instant,
    /// Journals every applied event and writes the snapshot; `None` when not recording.
    recorder: Option<Recorder>,
    /// The journal's write failure, once told to the session.
    journal_failure_told: bool,
    /// A snapshot asked for with `s`, not yet confirmed.
    pending_snapshot: Option<std::sync::mpsc::Receiver<std::io::Result<std::path::PathBuf>>>,
    /// Snapshots for `--serve`; `None` when not serving.
    publisher: Option<crate::serve::Publisher>,
    /// Where alerts are sent; `None` without `[[notify]]` or `--notify`.
    notifier: Option<Notifier>,
    /// Each run's `on_critical`, and why it was stopped, once it is.
    armed: Vec<Option<OnCritical>>,
    stops: Vec<workload::StopReason>,
    /// Alerts (index, severity) a run was already signalled for.
    signalled: std::collections::HashSet<(usize, Severity)>,
    /// The job processes of the runs (command, attach), for stalls and signals.
    jobs: telemetry::procs::JobPids,
    stalls: super::stalls::StallMonitor,
    /// The clock stalls are judged on.
    tick: tokio::time::Interval,
    /// Each run's step when last looked at, to time its newest step.
    seen_steps: Vec<u64>,
}

/// How often runs are looked at for stalls.
pub const STALL_CHECK_PERIOD: std::time::Duration = std::time::Duration::from_secs(1);

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

impl LiveSession {
    /// Starts every run and the telemetry sampler. Must be called inside a tokio runtime.
    pub fn start(config: SessionConfig) -> Self {
        let started = Instant::now();
        let runs = config
            .runs
            .iter()
            .map(|r| {
                let mut record = RunRecord::new(r.name.clone(), r.workload.kind().into(), r.device.to_string(), r.steps);
                record.price_per_hour = r.price_per_hour;
                record
            })
            .collect();
        let health: Vec<_> = config.runs.iter().map(|r| r.health.clone()).collect();
        let mut hub = Hub::with_health(SessionState::new(config.name.clone(), runs), &health);
        hub.track_alert_changes();
        let armed: Vec<Option<OnCritical>> = config.runs.iter().map(|r| r.on_critical.clone()).collect();
        for (r, a) in hub.state.runs.iter_mut().zip(&armed) {
            r.armed = a.as_ref().map(OnCritical::describe);
        }
        let stalls = super::stalls::StallMonitor::new(&config.runs);
        let notifier = Notifier::start(config.notify.clone(), &config.name);
        if let Some(n) = &notifier {
            let message = format!("alerts are sent to {}", n.describe().join(", "));
            hub.apply(Event::Log { run: None, level: LogLevel::Info, message }, 0.0);
        }
        let stops: Vec<workload::StopReason> = config.runs.iter().map(|_| Default::default()).collect();
        let (tx, rx) = mpsc::channel(EVENT_CAPACITY);
        let root = CancellationToken::new();

        let cores = workload::threads::available_cores();
        let n_runs = config.runs.len();
        let mut tasks = Vec::with_capacity(n_runs);
        let mut run_tokens = Vec::with_capacity(n_runs);
        let jobs = telemetry::procs::JobPids::default();
        let source = std::sync::Arc::new(workload::builtin::ConfigSource { path: config.path.clone(), text: config.text.clone() });
        for (id, run) in config.runs.into_iter().enumerate() {
            let threads = match run.threads {
                Threads::Fixed(n) => n,
                Threads::Auto => workload::threads::auto_intra_op_threads(cores, n_runs),
            };
            let token = root.child_token();
            run_tokens.push(token.clone());
            tasks.push(workload::spawn(id, run, threads, tx.clone(), token, jobs.clone(), source.clone(), stops[id].clone()));
        }
        // Exporters on other machines (`[[telemetry.scrape]]`), read like local telemetry.
        tasks.extend(telemetry::scrape::spawn(&config.scrape, &tx, &root.child_token(), started));
        // The same figures from a central Prometheus (`[telemetry.prometheus]`).
        tasks.extend(config.prometheus.as_ref().map(|p| telemetry::prometheus::spawn(p, &tx, &root.child_token(), started)));
        let sampler = match telemetry::spawn(tx, root.child_token(), telemetry::DEFAULT_SAMPLE_HZ, started, jobs.clone()) {
            Ok(handle) => Some(handle),
            Err(e) => {
                let msg = format!("telemetry disabled: cannot start its thread: {e}");
                hub.apply(Event::Log { run: None, level: LogLevel::Warn, message: msg }, 0.0);
                None
            }
        };
        let mut tick = tokio::time::interval(STALL_CHECK_PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let seen_steps = vec![0; hub.state.runs.len()];
        LiveSession {
            hub,
            rx,
            root,
            run_tokens,
            tasks,
            sampler,
            started,
            recorder: None,
            journal_failure_told: false,
            pending_snapshot: None,
            publisher: None,
            notifier,
            armed,
            stops,
            signalled: Default::default(),
            jobs,
            stalls,
            tick,
            seen_steps,
        }
    }

    /// Starts recording into `dir`: a journal now, a snapshot at the end. Call right
    /// after `start`, before events are received, so every event is recorded.
    /// `baseline`: the session the runs are held against and its tolerance, named in
    /// the metadata (as an absolute path, so a replay from elsewhere finds it).
    pub fn record(&mut self, dir: &std::path::Path, config_text: String, baseline: Option<(&std::path::Path, f64)>) -> std::io::Result<()> {
        let stamp = naming::utc_stamp(std::time::SystemTime::now());
        let state = &self.hub.state;
        let mut meta = Meta::new(&state.name, stamp.clone(), config_text, &state.runs);
        meta.record_settings(&self.hub.settings);
        if let Some((path, tolerance)) = baseline {
            meta.baseline = Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string());
            meta.baseline_tolerance = Some(tolerance);
        }
        self.recorder = Some(Recorder::start(dir, &naming::file_stem(&state.name, &stamp), meta)?);
        Ok(())
    }

    /// Answers `--serve` requests from snapshots of this session until it finishes.
    /// Call right after `start`, so the points feed has every event.
    pub fn serve(&mut self, server: crate::serve::http::Server) {
        let (mut publisher, snapshots) = crate::serve::Publisher::new();
        publisher.publish(&self.hub.state, true);
        self.publisher = Some(publisher);
        self.tasks.push(server.spawn(snapshots, self.root.child_token()));
    }

    /// Path the snapshot will be written to, when recording.
    pub fn snapshot_path(&self) -> Option<&std::path::Path> {
        self.recorder.as_ref().map(|r| r.snapshot.as_path())
    }

    /// Writes the snapshot now (the `s` key); the events pane says when it is done.
    pub fn snapshot_now(&mut self) {
        let finale = self.finale();
        if let Some(r) = &self.recorder {
            self.pending_snapshot = Some(r.snapshot_now(finale));
        }
    }

    fn finale(&self) -> Finale {
        let state = &self.hub.state;
        Finale::of(state, self.elapsed_s(), hardware::describe(&state.gpu))
    }

    /// Holds the runs against a recorded session (the hub checks every step); its
    /// curves go under the live ones.
    pub fn set_baseline(&mut self, recording: &mut crate::record::Playback, tolerance: f64) {
        let unmatched = self.hub.set_baseline(std::sync::Arc::new(recording.final_state()), tolerance);
        if !unmatched.is_empty() {
            let names: Vec<&str> = unmatched.iter().map(|i| self.hub.state.runs[*i].name.as_str()).collect();
            let base_runs: Vec<&str> = recording.meta().runs.iter().map(|r| r.name.as_str()).collect();
            let message = format!("the baseline has no run named {} (its runs: {}): no baseline curves or checks for it", names.join(", "), base_runs.join(", "));
            let now = self.elapsed_s();
            self.apply(Event::Log { run: None, level: LogLevel::Warn, message }, now);
        }
    }

    /// Every event goes through here: recorded first, then applied.
    fn apply(&mut self, event: Event, now: f64) {
        if let Some(r) = &self.recorder {
            r.record(now, &event);
        }
        if let Some(p) = &mut self.publisher {
            p.observe(&self.hub.state, &event);
        }
        let ended = match &event {
            Event::RunEnded { run, .. } => Some(*run),
            _ => None,
        };
        self.hub.apply(event, now);
        if let (Some(run), Some(n)) = (ended, &mut self.notifier) {
            if let Some(r) = self.hub.state.runs.get(run) {
                let summary = crate::report::summary::RunSummary::of(r, &self.hub.state.alerts);
                n.notify(&Notice::RunEnded { run: r.name.clone(), state: r.state.as_str().into(), step: r.step, summary: summary.line(), error: r.error.clone() });
            }
        }
    }

    /// After events are applied: the runs' newest steps timed, stalls (on the
    /// clock's `tick`), alerts sent on and acted on, delivery failures said.
    fn after_apply(&mut self, now: f64, tick: bool) {
        let unix = unix_now();
        self.seen_steps.resize(self.hub.state.runs.len(), 0);
        for (r, seen) in self.hub.state.runs.iter_mut().zip(self.seen_steps.iter_mut()) {
            if r.step != *seen || (r.last_step_unix.is_none() && !r.series.is_empty()) {
                *seen = r.step;
                r.last_step_unix = Some(unix);
            }
        }
        let mut outs = self.stalls.steps(&self.hub.state, &self.hub.settings);
        if tick {
            outs.extend(self.stalls.check(&self.hub.state, &self.hub.settings, &self.jobs));
        }
        for out in outs {
            match out {
                super::stalls::StallOut::Alert { run, alert, .. } => self.apply(Event::Alert { run: Some(run), alert }, now),
                super::stalls::StallOut::Cleared { run, step, message } => {
                    if let (Some(n), Some(r)) = (&mut self.notifier, self.hub.state.runs.get(run)) {
                        n.notify(&Notice::Cleared { run: r.name.clone(), kind: AlertKind::Stalled, step, message: message.clone() });
                    }
                    self.apply(Event::Log { run: Some(run), level: LogLevel::Info, message: format!("stalled cleared: {message}") }, now);
                }
            }
        }
        self.alerts_changed(now);
        let failures = self.notifier.as_mut().map(Notifier::failures).unwrap_or_default();
        for f in failures {
            let message = format!("notification to {} failed: {}; later failures of this target are not shown", f.target, f.error);
            self.apply(Event::Log { run: None, level: LogLevel::Warn, message }, now);
        }
    }

    /// Alerts raised or escalated: sent to the notify targets, and acted on for
    /// an armed run.
    fn alerts_changed(&mut self, now: f64) {
        for (run, index, escalated) in self.hub.take_alert_changes() {
            let Some(alert) = self.hub.state.alerts.get(index).cloned() else { continue };
            if let Some(n) = &mut self.notifier {
                let moved = run
                    .and_then(|i| self.hub.state.runs.get(i))
                    .map(|r| crate::health::context::context(&r.series, &alert.metric, alert.step, &Default::default()).moved)
                    .unwrap_or_default();
                n.notify(&Notice::Alert { alert: alert.clone(), escalated, moved });
            }
            // A rank's alert is its job's to act on.
            let Some(job) = run.map(|i| self.hub.state.runs.get(i).and_then(|r| r.rank_of).map_or(i, |(j, _)| j)) else { continue };
            let Some(oc) = self.armed.get(job).cloned().flatten() else { continue };
            if !oc.acts_on(alert.kind, alert.severity) || self.hub.state.runs.get(job).is_none_or(|r| r.state.is_over()) {
                continue;
            }
            let what = format!("{} {} at step {}", alert.severity.as_str(), alert.kind, alert.step);
            match oc.action {
                CriticalAction::Stop => {
                    let Some(stop) = self.stops.get(job) else { continue };
                    if stop.set(what.clone()).is_err() {
                        continue; // already stopping
                    }
                    self.cancel_run(job);
                    self.apply(Event::Log { run: Some(job), level: LogLevel::Error, message: format!("stopping the run (on_critical): {what}") }, now);
                }
                CriticalAction::Signal(sig) => {
                    if !self.signalled.insert((index, alert.severity)) {
                        continue;
                    }
                    let name = crate::workload::command::stream::signal_name(sig).map_or_else(|| format!("signal {sig}"), str::to_owned);
                    let pid = self.jobs.get().into_iter().find(|(r, _)| *r == job).map(|(_, p)| p);
                    let message = match pid.map(|p| (p, crate::workload::signal_job(p, sig))) {
                        Some((p, Ok(()))) => format!("sent {name} to process {p}'s group (on_critical): {what}"),
                        Some((p, Err(e))) => format!("cannot send {name} to process {p} (on_critical): {e}"),
                        None => format!("cannot send {name} (on_critical): the run has no process"),
                    };
                    self.apply(Event::Log { run: Some(job), level: LogLevel::Warn, message }, now);
                }
            }
        }
    }

    fn report_snapshot(&mut self, now: f64) {
        let Some(rx) = &self.pending_snapshot else { return };
        let (level, message) = match rx.try_recv() {
            Ok(Ok(path)) => (LogLevel::Info, format!("snapshot written: {}", path.display())),
            Ok(Err(e)) => (LogLevel::Error, format!("snapshot failed: {e}")),
            Err(std::sync::mpsc::TryRecvError::Empty) => return,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => (LogLevel::Error, "snapshot failed: the recorder stopped".into()),
        };
        self.pending_snapshot = None;
        self.apply(Event::Log { run: None, level, message }, now);
    }

    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Waits for the next event and applies it, then applies whatever else is already
    /// queued. `false` once no producer is left.
    pub async fn recv_and_apply(&mut self) -> bool {
        let event = tokio::select! {
            event = self.rx.recv() => match event {
                Some(event) => Some(event),
                None => return false,
            },
            _ = self.tick.tick() => None,
        };
        let now = self.elapsed_s();
        let tick = event.is_none();
        if let Some(event) = event {
            self.apply(event, now);
        }
        while let Ok(event) = self.rx.try_recv() {
            self.apply(event, now);
        }
        self.after_apply(now, tick);
        self.report_snapshot(now);
        self.report_journal_failure(now);
        if let Some(p) = &mut self.publisher {
            p.publish(&self.hub.state, false);
        }
        true
    }

    /// A journal that stopped (a full disk) is said once, while the session runs: the
    /// points stay in memory and go into the final snapshot if that can be written.
    fn report_journal_failure(&mut self, now: f64) {
        if self.journal_failure_told {
            return;
        }
        let Some(failure) = self.recorder.as_ref().and_then(Recorder::failure) else { return };
        self.journal_failure_told = true;
        let message = format!("recording: the journal stopped ({failure}); points are kept in memory for the final snapshot");
        self.apply(Event::Log { run: None, level: LogLevel::Error, message }, now);
    }

    pub fn state(&self) -> &SessionState {
        &self.hub.state
    }

    pub fn cancel_run(&self, run: usize) {
        if let Some(token) = self.run_tokens.get(run) {
            token.cancel();
        }
    }

    pub fn cancel_all(&self) {
        self.root.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.root.is_cancelled()
    }

    /// Stops telemetry, collects finished tasks and summarises. Runs still going
    /// (when the caller stopped waiting) are reported in their current state.
    pub async fn finish(mut self) -> SessionSummary {
        // Followers and Prometheus see the runs' end before the server goes.
        if let Some(p) = &mut self.publisher {
            p.publish(&self.hub.state, true);
            tokio::time::sleep(crate::serve::FINAL_LINGER).await;
        }
        self.root.cancel();
        for task in self.tasks.drain(..) {
            if task.is_finished() {
                let _ = task.await;
            }
        }
        if let Some(handle) = self.sampler.take() {
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
        // Events that arrived while stopping (last steps, run ends).
        let now = self.elapsed_s();
        while let Ok(event) = self.rx.try_recv() {
            self.apply(event, now);
        }
        self.after_apply(now, false);
        // The last notices (a run's end) go out before rlmon does, within a limit.
        if let Some(n) = self.notifier.take() {
            let dropped = n.dropped;
            let (failures, done) = n.finish(crate::notify::FINISH_LIMIT).await;
            for f in failures {
                let message = format!("notification to {} failed: {}; later failures of this target are not shown", f.target, f.error);
                crate::say!("rlmon: warning: {message}");
                tracing::warn!("{message}");
                self.apply(Event::Log { run: None, level: LogLevel::Warn, message }, now);
            }
            if !done {
                crate::say!("rlmon: warning: some notifications were still being sent after {} s and were given up", crate::notify::FINISH_LIMIT.as_secs());
            }
            if dropped > 0 {
                crate::say!("rlmon: warning: {dropped} notification(s) dropped: the queue was full");
            }
        }
        let finale = self.finale();
        let mut summary = SessionSummary::judged_by(&self.hub.state, self.elapsed_s(), &self.hub.settings);
        if let Some(recorder) = self.recorder.take() {
            let journal = recorder.journal.clone();
            let kept = |failure: Option<String>| match failure {
                Some(f) => format!("the journal {} holds the session only up to where it stopped ({f})", journal.display()),
                None => format!("the session stays in {}", journal.display()),
            };
            match tokio::task::spawn_blocking(move || {
                let failure = recorder.failure();
                (recorder.finish(finale), failure)
            })
            .await
            {
                Ok((Ok(path), _)) => summary.snapshot = Some(path.display().to_string()),
                Ok((Err(e), failure)) => crate::say!("rlmon: could not write the snapshot ({e}); {}", kept(failure)),
                Err(e) => crate::say!("rlmon: could not write the snapshot ({e}); {}", kept(None)),
            }
        }
        summary
    }
}

/// The display's view of a live session: it cancels runs and, when recording,
/// writes the snapshot on demand.
impl crate::ui::Source for LiveSession {
    async fn next(&mut self) -> bool {
        self.recv_and_apply().await
    }
    fn state(&self) -> &SessionState {
        LiveSession::state(self)
    }
    fn elapsed_s(&self) -> f64 {
        LiveSession::elapsed_s(self)
    }
    fn accepts(&self, action: crate::ui::SourceAction) -> bool {
        use crate::ui::SourceAction::*;
        match action {
            CancelAll | CancelRun(_) => true,
            Snapshot => self.snapshot_path().is_some(),
            _ => false,
        }
    }
    fn act(&mut self, action: crate::ui::SourceAction) -> bool {
        use crate::ui::SourceAction::*;
        match action {
            CancelAll => self.cancel_all(),
            CancelRun(run) => self.cancel_run(run),
            Snapshot => self.snapshot_now(),
            _ => return false,
        }
        true
    }
}
