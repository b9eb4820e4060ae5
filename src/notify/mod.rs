//! Alerts that leave the terminal (`[[notify]]`, `watch --notify URL`): each alert
//! as it is raised and as it escalates, a stall's end, and where asked each run's
//! end, sent to webhooks (rlmon's JSON, Slack, Discord, ntfy) or a command.
//!
//! Sending never holds up the session: [`Notifier::notify`] puts a notice on a
//! bounded queue per target (a full queue drops it, counted) and returns; a task
//! per target sends (`send`). `target` parses and redacts, `message` shapes the
//! messages, `throttle` decides when they go: both pure.
pub mod message;
pub mod send;
pub mod target;
pub mod throttle;

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use send::Failure;
pub use target::{parse_signal, redact_text, Destination, Format, Target, WebUrl};

use crate::health::context::Moved;
use crate::health::{Alert, AlertKind};

/// Notices waiting per target; more are dropped (and counted).
pub const QUEUE: usize = 256;
/// How long the end of a session waits for the last messages to go out.
pub const FINISH_LIMIT: Duration = Duration::from_secs(5);

/// Something worth telling someone.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// An alert, as raised or (`escalated`) when its severity rose; `moved`: the
    /// run's other metrics that moved around it, most first.
    Alert { alert: Alert, escalated: bool, moved: Vec<Moved> },
    /// An alert that is over (a stalled run making steps again).
    Cleared { run: String, kind: AlertKind, step: u64, message: String },
    /// A run's end: its state (`finished`, `failed`, `cancelled`, `stopped`), the
    /// step it reached and its summary line.
    RunEnded { run: String, state: String, step: u64, summary: String, error: Option<String> },
}

impl Notice {
    /// Whether `target` is sent this notice.
    pub fn wanted_by(&self, target: &Target) -> bool {
        match self {
            Notice::Alert { alert, .. } => target.wants(alert.kind, alert.severity),
            Notice::Cleared { kind, .. } => target.kinds.as_ref().is_none_or(|k| k.contains(kind)),
            Notice::RunEnded { .. } => target.on_end,
        }
    }
}

/// The session's side of delivery.
pub struct Notifier {
    targets: Vec<(Target, mpsc::Sender<Notice>)>,
    failures: mpsc::UnboundedReceiver<Failure>,
    tasks: Vec<JoinHandle<()>>,
    /// Notices dropped because a target's queue was full.
    pub dropped: u64,
}

impl Notifier {
    /// Starts one sender task per target; `None` without targets. Must be called
    /// inside a tokio runtime.
    pub fn start(targets: Vec<Target>, session: &str) -> Option<Notifier> {
        if targets.is_empty() {
            return None;
        }
        let host = sysinfo::System::host_name().unwrap_or_else(|_| "localhost".into());
        let (failed, failures) = mpsc::unbounded_channel();
        let mut queues = Vec::with_capacity(targets.len());
        let mut tasks = Vec::with_capacity(targets.len());
        for target in targets {
            let (tx, rx) = mpsc::channel(QUEUE);
            tasks.push(tokio::spawn(send::deliver(target.clone(), rx, failed.clone(), session.to_owned(), host.clone())));
            queues.push((target, tx));
        }
        Some(Notifier { targets: queues, failures, tasks, dropped: 0 })
    }

    /// The targets, as they may be shown.
    pub fn describe(&self) -> Vec<String> {
        self.targets.iter().map(|(t, _)| t.describe()).collect()
    }

    /// Queues `notice` for every target that wants it; never waits.
    pub fn notify(&mut self, notice: &Notice) {
        for (target, tx) in &self.targets {
            if notice.wanted_by(target) && tx.try_send(notice.clone()).is_err() {
                self.dropped += 1;
            }
        }
    }

    /// Failures reported since the last call (each target's first only).
    pub fn failures(&mut self) -> Vec<Failure> {
        let mut out = Vec::new();
        while let Ok(f) = self.failures.try_recv() {
            out.push(f);
        }
        out
    }

    /// Closes the queues and waits (at most `limit`) for what is pending to go
    /// out. Returns the failures not yet taken, and whether every message went
    /// (or failed for good) within the limit.
    pub async fn finish(mut self, limit: Duration) -> (Vec<Failure>, bool) {
        let targets = std::mem::take(&mut self.targets);
        drop(targets);
        let tasks = std::mem::take(&mut self.tasks);
        let aborts: Vec<_> = tasks.iter().map(JoinHandle::abort_handle).collect();
        let done = tokio::time::timeout(limit, async {
            for t in tasks {
                let _ = t.await;
            }
        })
        .await
        .is_ok();
        for a in aborts {
            a.abort();
        }
        (self.failures(), done)
    }
}
