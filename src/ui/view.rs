//! What the user is looking at, globally: selected run, focus, zoom, the pane the
//! compact layout shows, step window, smoothing, frozen, dialogs, and where panes and
//! run rows were drawn (for the mouse). Each pane keeps its own state (see `panes`).
//! Pure data: no terminal here.
use ratatui::layout::Rect;

use super::chart::{Window, WINDOWS};
use super::keys::{self, Action, Scope};
use super::targets::PaneId;
use super::{Source, SourceAction};
use crate::session::SessionState;

/// EMA weight used when smoothing is on.
pub const SMOOTHING_ALPHA: f64 = 0.1;

/// A question waiting for y/n.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirm {
    Quit,
    CancelRun(usize),
}

/// What the display loop must do after a key or a click.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    None,
    Redraw,
    /// Leave the display (cancelling the runs when the source has any).
    Quit,
    /// Hand an action to the source.
    Source(SourceAction),
}

/// What the source behind the display takes, asked once when the display starts:
/// the footer, the help and the key dispatch offer only these.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Controls {
    /// It runs something that can be cancelled: quitting asks first while runs are
    /// going, and `c` cancels the selected run.
    pub cancels_runs: bool,
    /// The key table's source actions it takes (replay: pause, seek, speed; live: snapshot).
    pub takes: Vec<SourceAction>,
}

impl Controls {
    pub fn of(source: &impl Source) -> Self {
        let takes = keys::KEYS
            .iter()
            .filter_map(|b| match b.action {
                Action::Source(a) if b.scope == Scope::Source && source.accepts(a) => Some(a),
                _ => None,
            })
            .collect();
        Controls { cancels_runs: source.accepts(SourceAction::CancelAll), takes }
    }

    pub fn takes(&self, action: SourceAction) -> bool {
        self.takes.contains(&action)
    }
}

#[derive(Debug, Clone)]
pub struct ViewState {
    pub selected_run: usize,
    pub focus: PaneId,
    pub zoomed: bool,
    /// The pane the compact layout shows under the runs list.
    pub shown: PaneId,
    /// The state shown while the display is frozen (training goes on).
    pub frozen: Option<Box<SessionState>>,
    pub window: Window,
    pub smoothing: bool,
    /// Info alerts (bumps that recovered) as ticks on the step axis.
    pub info_markers: bool,
    /// The alert jumped to from the alerts pane: its marker is highlighted.
    pub highlight: Option<usize>,
    /// The alert whose detail is open (an index into the session's alerts).
    pub detail: Option<usize>,
    pub help: bool,
    pub confirm: Option<Confirm>,
    pub controls: Controls,
    /// Shown in the header by sources that have a state of their own (replay, compare).
    pub badge: Option<String>,
    /// Where each pane was last drawn, for mouse clicks.
    pub pane_areas: Vec<(PaneId, Rect)>,
    /// Where each run's row was last drawn in the runs pane.
    pub run_rows: Vec<(usize, Rect)>,
}

impl Default for ViewState {
    fn default() -> Self {
        ViewState {
            selected_run: 0,
            focus: PaneId::Runs,
            zoomed: false,
            shown: PaneId::Training,
            frozen: None,
            window: Window::All,
            smoothing: false,
            info_markers: true,
            highlight: None,
            detail: None,
            help: false,
            confirm: None,
            controls: Controls::default(),
            badge: None,
            pane_areas: Vec::new(),
            run_rows: Vec::new(),
        }
    }
}

impl ViewState {
    /// Moves focus; the compact layout then shows the newly focused pane.
    pub fn focus_on(&mut self, pane: PaneId) {
        self.focus = pane;
        if pane != PaneId::Runs {
            self.shown = pane;
        }
    }
}

/// Where an alert is: its index in the session's alerts, its run, its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlertPlace {
    pub index: usize,
    pub run: Option<usize>,
    pub step: u64,
}

impl ViewState {
    /// Opens an alert's detail, with its run selected and the charts behind it
    /// around its step, its marker highlighted.
    pub fn show_alert(&mut self, at: AlertPlace) {
        if let Some(run) = at.run {
            self.selected_run = run;
        }
        self.window = Window::Around(at.step);
        self.highlight = Some(at.index);
        self.detail = Some(at.index);
    }
}

/// `-1`: a narrower window (`+` zooms in), `1`: a wider one.
pub fn step_window(current: Window, dir: i32) -> Window {
    let i = WINDOWS.iter().position(|w| *w == current).unwrap_or(WINDOWS.len() - 1) as i32;
    WINDOWS[(i + dir).clamp(0, WINDOWS.len() as i32 - 1) as usize]
}
