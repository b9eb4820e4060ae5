//! `rlmon replay`: plays a recorded session through a hub, as live events would
//! arrive, at the recorded pace times a speed (or as fast as possible). The same
//! display, the same summary; in the display it takes the pause, speed and seek
//! actions (a seek rebuilds the state from the start, so it is exact). A snapshot
//! streams from its file (`record::stream`): memory holds the hub's state, the
//! steps' times and the row groups being played, not the recording.
use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

use crate::cli::{ReplayArgs, Speed};
use crate::error::{Result, RlmonError};
use crate::record::{self, Meta, Playback};
use crate::report::summary::SessionSummary;
use crate::session::{Hub, SessionState};
use crate::ui::theme::Theme;
use super::signals::Signals;
use crate::ui::{Source, SourceAction};

/// Events applied per display wake-up at `max` speed, so keys stay responsive.
const MAX_SPEED_BATCH: usize = 20_000;
/// Speeds that < and > step through.
const SPEEDS: [f64; 9] = [0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 50.0, 100.0, 1000.0];

/// A recorded session being played: its events, how far along, and at what pace.
pub struct ReplaySession {
    pub hub: Hub,
    /// The events, built from the recording (or read from its file) one at a time.
    events: Playback,
    /// The baseline the session was held against, read once for every seek.
    baseline: Option<record::RecordedBaseline>,
    /// Index of the next event to apply.
    next: usize,
    speed: Speed,
    paused: bool,
    /// Session time at `anchor`; the clock runs from there at `speed`.
    anchor_pos: f64,
    anchor: Instant,
}

impl ReplaySession {
    pub fn new(recording: impl Into<Playback>, speed: Speed) -> Self {
        let mut events = recording.into();
        let baseline = record::recorded_baseline(events.meta());
        if let (Some(path), None) = (&events.meta().baseline, &baseline) {
            tracing::info!("baseline {path} cannot be read: replaying the alerts recorded against it");
        }
        let hub = events.start(baseline.as_ref());
        ReplaySession { hub, events, baseline, next: 0, speed, paused: false, anchor_pos: 0.0, anchor: Instant::now() }
    }

    fn fresh_hub(&self) -> Hub {
        record::stream::hub_at_start(self.events.meta(), self.baseline.as_ref())
    }

    /// The recorded session's metadata.
    pub fn meta(&self) -> &Meta {
        self.events.meta()
    }

    pub fn at_end(&self) -> bool {
        self.next >= self.events.len()
    }

    fn duration_s(&self) -> f64 {
        self.events.len().checked_sub(1).and_then(|i| self.events.time(i)).unwrap_or(0.0).max(self.events.meta().elapsed_s)
    }

    /// The session time the replay clock shows now.
    fn position_s(&self) -> f64 {
        match (self.paused, self.speed) {
            (true, _) | (_, Speed::Max) => self.anchor_pos,
            (false, Speed::Times(x)) => self.anchor_pos + self.anchor.elapsed().as_secs_f64() * x,
        }
    }

    fn re_anchor(&mut self, pos: f64) {
        self.anchor_pos = pos;
        self.anchor = Instant::now();
    }

    fn apply_next(&mut self) {
        if let Some((t, event)) = self.events.event(self.next) {
            self.hub.apply(event, t);
            self.anchor_pos = self.anchor_pos.max(t);
        }
        self.next += 1;
    }

    /// Applies the events due by now, waiting for the first one if needed.
    /// `false` at the end.
    pub async fn advance(&mut self) -> bool {
        if self.at_end() {
            return false;
        }
        match self.speed {
            Speed::Max => {
                let end = (self.next + MAX_SPEED_BATCH).min(self.events.len());
                while self.next < end {
                    self.apply_next();
                }
                tokio::task::yield_now().await;
            }
            Speed::Times(x) => {
                let due = self.events.time(self.next).unwrap_or(0.0);
                let wait = (due - self.position_s()) / x;
                if wait > 0.0 {
                    tokio::time::sleep(Duration::from_secs_f64(wait.min(3600.0))).await;
                }
                // At least the event waited for, whatever the clock's rounding.
                let now = self.position_s().max(due);
                while !self.at_end() && self.events.time(self.next).is_some_and(|t| t <= now) {
                    if let Some((t, event)) = self.events.event(self.next) {
                        self.hub.apply(event, t);
                    }
                    self.next += 1;
                }
            }
        }
        true
    }

    /// Plays every event left as fast as possible, nothing else waiting on it (a
    /// headless replay at `max`): the events are read and decoded on a second
    /// thread meanwhile, and judged on a third ([`Playback::play_into`]). The
    /// new log lines go to stderr every [`MAX_SPEED_BATCH`] events, as
    /// [`ReplaySession::advance`] would print them.
    pub fn play_to_end(&mut self) {
        let anchor_pos = &mut self.anchor_pos;
        let (mut applied, mut logged) = (0usize, 0);
        self.events.play_into(self.next, &mut self.hub, |hub, t, _| {
            *anchor_pos = anchor_pos.max(t);
            applied += 1;
            if applied % MAX_SPEED_BATCH == 0 {
                super::watch::print_log(&hub.state, logged);
                logged = hub.state.logged_total;
            }
        });
        super::watch::print_log(&self.hub.state, logged);
        self.next = self.events.len();
    }

    /// Rebuilds the state at session time `pos` (clamped to the session).
    pub fn seek(&mut self, pos: f64) {
        let pos = pos.clamp(0.0, self.duration_s());
        let target = self.events.after(pos);
        if target < self.next {
            self.hub = self.fresh_hub();
            self.events.restart();
            self.next = 0;
        }
        while self.next < target {
            if let Some((t, event)) = self.events.event(self.next) {
                self.hub.apply(event, t);
            }
            self.next += 1;
        }
        self.re_anchor(pos);
    }

    fn change_speed(&mut self, dir: i32) {
        let pos = self.position_s();
        let current = match self.speed {
            Speed::Max => return,
            Speed::Times(x) => x,
        };
        let i = SPEEDS.iter().position(|s| *s >= current).unwrap_or(SPEEDS.len() - 1) as i32;
        let j = if SPEEDS.get(i as usize) == Some(&current) || dir < 0 { i + dir } else { i };
        self.speed = Speed::Times(SPEEDS[j.clamp(0, SPEEDS.len() as i32 - 1) as usize]);
        self.re_anchor(pos);
    }
}

impl Source for ReplaySession {
    async fn next(&mut self) -> bool {
        if self.paused || self.at_end() {
            // Keys (resume, seek) wake the display loop; nothing to do until then.
            return std::future::pending().await;
        }
        self.advance().await;
        true
    }

    fn state(&self) -> &SessionState {
        &self.hub.state
    }

    fn elapsed_s(&self) -> f64 {
        self.position_s()
    }

    fn accepts(&self, action: SourceAction) -> bool {
        use SourceAction::*;
        matches!(action, TogglePause | Slower | Faster | SeekBy(_) | SeekStart | SeekEnd)
    }

    fn act(&mut self, action: SourceAction) -> bool {
        let pos = self.position_s();
        match action {
            SourceAction::TogglePause => {
                self.paused = !self.paused;
                self.re_anchor(pos);
            }
            SourceAction::Slower => self.change_speed(-1),
            SourceAction::Faster => self.change_speed(1),
            SourceAction::SeekBy(fraction) => self.seek(pos + fraction * self.duration_s()),
            SourceAction::SeekStart => self.seek(0.0),
            SourceAction::SeekEnd => self.seek(f64::INFINITY),
            SourceAction::CancelAll | SourceAction::CancelRun(_) | SourceAction::Snapshot => return false,
        }
        true
    }

    fn badge(&self) -> Option<String> {
        let speed = match self.speed {
            Speed::Max => "max".to_owned(),
            Speed::Times(x) => format!("{x}x"),
        };
        let pct = if self.at_end() { 100.0 } else { 100.0 * self.position_s() / self.duration_s().max(f64::MIN_POSITIVE) };
        let state = if self.paused { "PAUSED" } else if self.at_end() { "END" } else { "REPLAY" };
        Some(format!("{state} {speed} {pct:.0}%"))
    }
}

/// The summary of a replayed session: the recorded duration, and the snapshot it
/// came from.
pub fn summary_of(state: &SessionState, meta: &Meta, path: &Path) -> SessionSummary {
    let mut summary = SessionSummary::judged_by(state, meta.elapsed_s, &meta.fresh_hub().settings);
    summary.snapshot = Some(path.display().to_string());
    summary
}

pub async fn replay(args: ReplayArgs) -> Result<u8> {
    let recording = Playback::open(&args.snapshot)?;
    let theme = Theme::resolve(&args.theme)?;
    let headless = args.headless || !std::io::stdout().is_terminal();
    let mut session = ReplaySession::new(recording, args.speed);
    if headless && session.speed == Speed::Max {
        session.play_to_end();
    } else if headless {
        let mut logged = 0;
        while session.advance().await {
            super::watch::print_log(session.state(), logged);
            logged = session.state().logged_total;
        }
        super::watch::print_log(session.state(), logged);
    } else {
        crate::ui::run(&mut session, theme, args.fps, Signals::new().next()).await.map_err(|e| RlmonError::Other(e.into()))?;
    }
    let summary = summary_of(session.state(), session.meta(), &args.snapshot);
    super::watch::report_summary(&summary, args.json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::model::tests::{live_and_recorded, same_series};

    #[tokio::test]
    async fn replay_at_max_speed_rebuilds_the_live_state() {
        let (live, rec) = live_and_recorded();
        let mut r = ReplaySession::new(rec, Speed::Max);
        while r.advance().await {}
        same_series(&live, r.state());
    }

    #[tokio::test(start_paused = true)]
    async fn recorded_pace_and_seeking() {
        let (live, rec) = live_and_recorded();
        let mut r = ReplaySession::new(rec, Speed::Times(10.0));
        r.advance().await;
        assert!(r.state().runs[0].step < 5, "paced, not all at once");
        seeks_exactly(r, &live).await;
    }

    /// Seeking to the end, the middle and the start gives the live state's points
    /// at each, and playing on from the start ends where the live session did.
    async fn seeks_exactly(mut r: ReplaySession, live: &SessionState) {
        r.seek(f64::INFINITY);
        same_series(live, r.state());
        r.seek(1.0);
        let mid = r.state().runs[0].step;
        assert!(mid > 0 && mid < 50, "{mid}");
        r.seek(0.0);
        assert_eq!(r.state().runs[0].step, 0);
        while r.advance().await {}
        same_series(live, r.state());
        assert_eq!(r.state().alerts.len(), live.alerts.len());
    }

    #[tokio::test(start_paused = true)]
    async fn a_streamed_snapshot_seeks_back_and_forth_exactly() {
        let (live, rec) = live_and_recorded();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.rlmon.parquet");
        crate::record::snapshot::write(&path, &rec).unwrap();
        let playback = Playback::open(&path).unwrap();
        assert!(matches!(playback, Playback::Streamed(_)));
        seeks_exactly(ReplaySession::new(playback, Speed::Times(10.0)), &live).await;
    }

    #[test]
    fn speed_actions_step_through_the_table() {
        let (_, rec) = live_and_recorded();
        let mut r = ReplaySession::new(rec, Speed::Times(1.0));
        r.act(SourceAction::Faster);
        assert_eq!(r.speed, Speed::Times(2.0));
        r.act(SourceAction::Slower);
        r.act(SourceAction::Slower);
        assert_eq!(r.speed, Speed::Times(0.5));
        r.act(SourceAction::TogglePause);
        assert!(r.badge().unwrap().starts_with("PAUSED 0.5x"));
    }
}
