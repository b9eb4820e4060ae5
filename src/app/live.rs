//! A live session: the run tasks and the telemetry thread feeding one hub through a
//! bounded channel, with one root cancellation token and a child per run. Views
//! (headless, the terminal UI) drive it: they receive events, apply them, read the
//! state, and cancel runs.
use std::time::Instant;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{SessionConfig, Threads};
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
        let (tx, rx) = mpsc::channel(EVENT_CAPACITY);
        let root = CancellationToken::new();

        let cores = workload::threads::available_cores();
        let n_runs = config.runs.len();
        let mut tasks = Vec::with_capacity(n_runs);
        let mut run_tokens = Vec::with_capacity(n_runs);
        for (id, run) in config.runs.into_iter().enumerate() {
            let threads = match run.threads {
                Threads::Fixed(n) => n,
                Threads::Auto => workload::threads::auto_intra_op_threads(cores, n_runs),
            };
            let token = root.child_token();
            run_tokens.push(token.clone());
            tasks.push(workload::spawn(id, run, threads, tx.clone(), token));
        }
        let sampler = match telemetry::spawn(tx, root.child_token(), telemetry::DEFAULT_SAMPLE_HZ, started) {
            Ok(handle) => Some(handle),
            Err(e) => {
                let msg = format!("telemetry disabled: cannot start its thread: {e}");
                hub.apply(Event::Log { run: None, level: LogLevel::Warn, message: msg }, 0.0);
                None
            }
        };
        LiveSession { hub, rx, root, run_tokens, tasks, sampler, started }
    }

    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Waits for the next event and applies it, then applies whatever else is already
    /// queued. `false` once no producer is left.
    pub async fn recv_and_apply(&mut self) -> bool {
        let Some(event) = self.rx.recv().await else { return false };
        let now = self.elapsed_s();
        self.hub.apply(event, now);
        while let Ok(event) = self.rx.try_recv() {
            self.hub.apply(event, now);
        }
        true
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
            self.hub.apply(event, now);
        }
        SessionSummary::of(&self.hub.state, self.elapsed_s())
    }
}
