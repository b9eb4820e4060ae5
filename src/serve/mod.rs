//! `rlmon watch --serve ADDR`: the session's metrics and alerts for Prometheus
//! (`/metrics`) and its recent points for followers (`/api/points?since=N`).
//!
//! The hub never waits for the server: the live session publishes a snapshot (the
//! exposition text and the feed's points) into a watch channel a few times a second,
//! and each request answers from the latest snapshot.
pub mod exposition;
pub mod feed;
pub mod follow;
pub mod http;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::session::{Event, SessionState};

/// How often the snapshot is renewed at most.
pub const PUBLISH_PERIOD: Duration = Duration::from_millis(250);

/// How long a session that served keeps answering after its runs are over, so
/// followers (`--attach http://...`, polling every half second) and Prometheus see
/// the runs end.
pub const FINAL_LINGER: Duration = Duration::from_secs(2);

/// What a request is answered from.
#[derive(Debug, Default)]
pub struct Published {
    pub metrics: String,
    pub points: Vec<feed::Point>,
    pub next_seq: u64,
    /// The runs and their states (`/api/runs`).
    pub runs: Vec<feed::RunSummary>,
}

/// The hub's side: takes every event's points, and publishes snapshots.
pub struct Publisher {
    tx: watch::Sender<Arc<Published>>,
    feed: feed::Feed,
    last: Option<Instant>,
    /// Alerts in the last snapshot: a new alert is published at once.
    alerts: usize,
}

impl Publisher {
    /// A publisher and the receiver the server reads.
    pub fn new() -> (Self, watch::Receiver<Arc<Published>>) {
        let (tx, rx) = watch::channel(Arc::new(Published::default()));
        (Publisher { tx, feed: feed::Feed::default(), last: None, alerts: 0 }, rx)
    }

    /// Call with every event before the hub applies it.
    pub fn observe(&mut self, state: &SessionState, event: &Event) {
        self.feed.observe(state, event);
    }

    /// Publishes a snapshot of `state` unless one was published within
    /// [`PUBLISH_PERIOD`] (`force`: now, at the end of the session).
    pub fn publish(&mut self, state: &SessionState, force: bool) {
        let now = Instant::now();
        let new_alert = state.alerts.len() != self.alerts;
        if !force && !new_alert && self.last.is_some_and(|t| now.duration_since(t) < PUBLISH_PERIOD) {
            return;
        }
        self.last = Some(now);
        self.alerts = state.alerts.len();
        let snapshot = Published { metrics: exposition::render(state), points: self.feed.snapshot(), next_seq: self.feed.next_seq(), runs: feed::runs(state) };
        self.tx.send_replace(Arc::new(snapshot));
    }
}
