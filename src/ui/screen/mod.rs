//! The screen: the global view and the panes, how keys and clicks change them, and
//! drawing them. Keys go through the key table (`keys.rs`) in a fixed order: an open
//! dialog, the source's keys, quit, closing help, the focused pane's keys, the
//! panes' switches, then global keys.
pub mod overlay;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};
use ratatui::Frame;

use super::chart::Window;
use super::keys::{self, Action, Binding, Direction, Scope};
use super::layout::{self, Arrangement, Areas};
use super::targets::PaneId;
use super::panes::{self, Ctx, Panes, Reaction};
use super::targets::PaneAction;
use super::theme::Theme;
use super::view::{step_window, AlertPlace, Confirm, Controls, Outcome, ViewState};
use super::SourceAction;
use crate::session::SessionState;

/// Mouse wheel: events lines per notch.
const WHEEL_LINES: usize = 3;

#[derive(Default)]
pub struct Screen {
    pub view: ViewState,
    pub panes: Panes,
}

impl Screen {
    pub fn new(controls: Controls) -> Self {
        Screen { view: ViewState { controls, ..ViewState::default() }, panes: Panes::default() }
    }

    /// The state on screen: the frozen one while frozen, else `live`.
    fn shown<'a>(&'a self, live: &'a SessionState) -> &'a SessionState {
        self.view.frozen.as_deref().unwrap_or(live)
    }

    /// Whether a binding can fire now, leaving aside the dispatch order.
    pub fn in_effect(&self, b: &Binding, state: &SessionState) -> bool {
        let visible = |p: PaneId| self.panes.get(p).visible(state);
        match (b.scope, b.action) {
            (Scope::Source, Action::Source(a)) => self.view.controls.takes(a),
            (Scope::Source, _) => false,
            (_, Action::CancelRun) => self.view.controls.cancels_runs,
            (Scope::Focused(p), _) => self.view.focus == p && visible(p),
            (Scope::Pane(p), _) => visible(p),
            (Scope::Confirm, _) => self.view.confirm.is_some(),
            (Scope::Detail, _) => self.view.detail.is_some(),
            (Scope::Global, _) => true,
        }
    }

    /// Handles one key press; `live` is the source's state (run count, whether runs
    /// are still going).
    pub fn on_key(&mut self, key: KeyEvent, live: &SessionState) -> Outcome {
        if key.kind != KeyEventKind::Press {
            return Outcome::None;
        }
        if let Some(confirm) = self.view.confirm.take() {
            let answer = keys::find(&key, |b| b.scope == Scope::Confirm).map(|b| b.action);
            return match (answer, confirm) {
                (Some(Action::Confirm), Confirm::Quit) | (Some(Action::ConfirmQuit), Confirm::Quit) => Outcome::Quit,
                (Some(Action::Confirm), Confirm::CancelRun(i)) => Outcome::Source(SourceAction::CancelRun(i)),
                // Any other key declines.
                _ => Outcome::Redraw,
            };
        }
        let state = self.shown(live);
        if self.view.detail.is_some() && !self.view.help {
            // The detail is modal: its own keys and quit; others wait until it closes.
            let binding = keys::find(&key, |b| b.scope == Scope::Detail)
                .or_else(|| keys::find(&key, |b| b.scope == Scope::Global && matches!(b.action, Action::Quit | Action::Help)));
            return match binding {
                Some(b) => self.run(b.action, b.scope, key, live),
                None => Outcome::None,
            };
        }
        if !self.view.help {
            if let Some(b) = keys::find(&key, |b| b.scope == Scope::Source && self.in_effect(b, state)) {
                return self.run(b.action, b.scope, key, live);
            }
        }
        if let Some(b) = keys::find(&key, |b| b.scope == Scope::Global && b.action == Action::Quit) {
            return self.run(b.action, b.scope, key, live);
        }
        if self.view.help {
            // Any other key closes the help overlay.
            self.view.help = false;
            return Outcome::Redraw;
        }
        let focused = Scope::Focused(self.view.focus);
        let binding = keys::find(&key, |b| b.scope == focused && self.in_effect(b, state))
            .or_else(|| keys::find(&key, |b| matches!(b.scope, Scope::Pane(_)) && self.in_effect(b, state)))
            .or_else(|| keys::find(&key, |b| b.scope == Scope::Global));
        match binding {
            Some(b) => self.run(b.action, b.scope, key, live),
            None => Outcome::None,
        }
    }

    /// Carries out one action of the key table.
    fn run(&mut self, action: Action, scope: Scope, key: KeyEvent, live: &SessionState) -> Outcome {
        let n_runs = live.runs.len().max(1);
        let visible = self.panes.visible(self.shown(live));
        let v = &mut self.view;
        match action {
            Action::Source(a) => return Outcome::Source(a),
            Action::Pane(a) => {
                let (Scope::Pane(id) | Scope::Focused(id)) = scope else { return Outcome::None };
                return self.pane_action(id, a, live);
            }
            Action::Quit => {
                if !v.controls.cancels_runs || live.all_over() {
                    return Outcome::Quit;
                }
                v.confirm = Some(Confirm::Quit);
            }
            // Dialog answers are read in `on_key`.
            Action::Confirm | Action::ConfirmQuit => return Outcome::None,
            Action::Help => v.help = true,
            // In the order shown: a job's ranks follow it.
            Action::NextRun | Action::PrevRun => {
                let order = live.display_order();
                let at = order.iter().position(|r| *r == v.selected_run).unwrap_or(0);
                let next = if action == Action::NextRun { at + 1 } else { at + n_runs - 1 };
                v.selected_run = order.get(next % n_runs).copied().unwrap_or(0);
            }
            Action::PickRun => {
                if let KeyCode::Char(c @ '1'..='9') = key.code {
                    let i = c as usize - '1' as usize;
                    if i < live.runs.len() {
                        v.selected_run = i;
                    }
                }
            }
            Action::Focus(d) => {
                let (dx, dy) = match d {
                    Direction::Left => (-1, 0),
                    Direction::Right => (1, 0),
                    Direction::Up => (0, -1),
                    Direction::Down => (0, 1),
                };
                v.focus_on(v.focus.neighbour(dx, dy, &visible));
            }
            Action::NextPane => v.focus_on(v.shown.cycle(1, &visible)),
            Action::PrevPane => v.focus_on(v.shown.cycle(-1, &visible)),
            Action::Zoom => v.zoomed = !v.zoomed,
            Action::Back => {
                v.zoomed = false;
                if matches!(v.window, Window::Around(_)) {
                    v.window = Window::All;
                    v.highlight = None;
                }
            }
            Action::Freeze => {
                v.frozen = match v.frozen {
                    Some(_) => None,
                    None => Some(Box::new(live.clone())),
                }
            }
            Action::NarrowWindow => v.window = step_window(v.window, -1),
            Action::WiderWindow => v.window = step_window(v.window, 1),
            Action::Smooth => v.smoothing = !v.smoothing,
            Action::InfoMarkers => v.info_markers = !v.info_markers,
            Action::OpenDetail => {
                let state = self.view.frozen.as_deref().unwrap_or(live);
                let run = state.runs.get(self.view.selected_run);
                let latest = run.and_then(|r| r.alerts.last().copied());
                match self.view.highlight.or(latest).and_then(|i| alert_place(i, state)) {
                    Some(place) => self.view.show_alert(place),
                    None => return Outcome::None,
                }
            }
            Action::CloseDetail => v.detail = None,
            Action::OlderAlert | Action::NewerAlert => {
                let state = self.view.frozen.as_deref().unwrap_or(live);
                let Some(i) = self.view.detail else { return Outcome::None };
                let next = if action == Action::OlderAlert { i.checked_sub(1) } else { Some(i + 1).filter(|n| *n < state.alerts.len()) };
                match next.and_then(|n| alert_place(n, state)) {
                    Some(place) => self.view.show_alert(place),
                    None => return Outcome::None,
                }
            }
            Action::CancelRun => {
                let running = live.runs.get(v.selected_run).is_some_and(|r| !r.state.is_over());
                if running && v.controls.cancels_runs {
                    v.confirm = Some(Confirm::CancelRun(v.selected_run));
                }
            }
        }
        Outcome::Redraw
    }

    fn pane_action(&mut self, id: PaneId, action: PaneAction, live: &SessionState) -> Outcome {
        let state = self.view.frozen.as_deref().unwrap_or(live);
        match self.panes.get_mut(id).act(action, state, &self.view) {
            Reaction::Ignored => Outcome::None,
            Reaction::Changed => Outcome::Redraw,
            Reaction::Jump { run, step, alert } => {
                if let Some(run) = run {
                    self.view.selected_run = run;
                }
                self.view.window = Window::Around(step);
                self.view.highlight = Some(alert);
                self.view.detail = Some(alert);
                Outcome::Redraw
            }
        }
    }



    pub fn on_mouse(&mut self, m: MouseEvent, live: &SessionState) -> Outcome {
        let at = Position::new(m.column, m.row);
        let over_events = self.view.pane_areas.iter().any(|(p, r)| *p == PaneId::Events && r.contains(at));
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                if let Some((run, _)) = self.view.run_rows.iter().find(|(_, r)| r.contains(at)) {
                    self.view.selected_run = *run;
                }
                if let Some((pane, _)) = self.view.pane_areas.iter().find(|(_, r)| r.contains(at)) {
                    self.view.focus_on(*pane);
                }
                Outcome::Redraw
            }
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown if over_events => {
                let action = if m.kind == MouseEventKind::ScrollUp { PaneAction::Up } else { PaneAction::Down };
                for _ in 0..WHEEL_LINES {
                    self.pane_action(PaneId::Events, action, live);
                }
                Outcome::Redraw
            }
            _ => Outcome::None,
        }
    }

    /// How a screen of `area` is divided for `state`.
    pub fn arrangement(&self, area: Rect, state: &SessionState) -> Arrangement {
        if self.view.zoomed {
            Arrangement::Zoomed(self.view.focus)
        } else if layout::is_compact(area) {
            Arrangement::Compact { shown: self.view.shown, runs: state.runs.len() as u16 }
        } else {
            Arrangement::Grid { runs: state.runs.len() as u16, hardware: self.panes.get(PaneId::Hardware).rows(state) }
        }
    }

    pub fn areas(&self, area: Rect, state: &SessionState) -> Areas {
        layout::areas(area, self.arrangement(area, state), &self.panes.visible(state))
    }

    /// Records where panes and run rows are, so clicks can be mapped back. `live`:
    /// the source's state (the frozen one is used while frozen).
    pub fn record_areas(&mut self, area: Rect, live: &SessionState) {
        if layout::too_small(area) {
            self.view.pane_areas.clear();
            self.view.run_rows.clear();
            return;
        }
        let state = self.shown(live);
        let areas = self.areas(area, state);
        self.view.run_rows = areas
            .panes
            .iter()
            .find(|(id, _)| *id == PaneId::Runs)
            .map(|(_, r)| panes::runs::row_areas(*r, &state.display_order()))
            .unwrap_or_default();
        self.view.pane_areas = areas.panes;
    }
}

/// Alert `i`, its run's index and its step, when the session has it.
fn alert_place(i: usize, state: &SessionState) -> Option<AlertPlace> {
    let alert = state.alerts.get(i)?;
    Some(AlertPlace { index: i, run: state.runs.iter().position(|r| r.name == alert.run), step: alert.step })
}

/// Draws the whole screen for `state` (the state on screen: the frozen one while frozen).
pub fn draw(frame: &mut Frame, state: &SessionState, screen: &Screen, theme: &Theme) {
    let area = frame.area();
    if layout::too_small(area) {
        overlay::too_small(frame, area);
        return;
    }
    let ctx = Ctx { state, view: &screen.view, theme, acknowledged: screen.panes.acknowledged() };
    let areas = screen.areas(area, state);
    panes::header::render(frame, areas.header, &ctx);
    for (id, rect) in &areas.panes {
        screen.panes.get(*id).render(frame, *rect, &ctx);
    }
    let compact = matches!(screen.arrangement(area, state), Arrangement::Compact { .. });
    overlay::footer(frame, areas.footer, &ctx, screen, compact);
    if let Some(c) = screen.view.confirm {
        overlay::confirm(frame, area, &ctx, c);
    } else if screen.view.help {
        overlay::help(frame, area, &ctx, screen);
    } else if let Some(i) = screen.view.detail {
        panes::detail::render(frame, area, &ctx, i, compact);
    }
}

#[cfg(test)]
mod tests {
    use ratatui::crossterm::event::KeyModifiers;

    use super::*;
    use crate::session::{RunRecord, RunState};
    use crate::ui::panes::alerts::Alerts;
    use crate::ui::panes::events::Events;
    use crate::ui::panes::throughput::Throughput;
    use crate::ui::panes::training::Training;

    fn live(states: &[RunState]) -> SessionState {
        let runs = states
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut r = RunRecord::new(format!("r{i}"), "lm".into(), "cpu".into(), 10);
                r.state = s.clone();
                r
            })
            .collect();
        SessionState::new("s".into(), runs)
    }

    /// The screen of a live session: it cancels runs and writes snapshots.
    fn live_screen() -> Screen {
        Screen::new(Controls { cancels_runs: true, takes: vec![SourceAction::Snapshot] })
    }

    /// The screen of a replay: playback keys, nothing to cancel.
    fn replay_screen() -> Screen {
        use SourceAction::*;
        Screen::new(Controls { cancels_runs: false, takes: vec![TogglePause, Slower, Faster, SeekBy(-0.1), SeekBy(0.1), SeekBy(-0.01), SeekBy(0.01), SeekStart, SeekEnd] })
    }

    fn press(v: &mut Screen, code: KeyCode, s: &SessionState) -> Outcome {
        v.on_key(KeyEvent::new(code, KeyModifiers::NONE), s)
    }

    #[test]
    fn quit_asks_while_runs_go_on_and_a_second_q_confirms() {
        let s = live(&[RunState::Running]);
        let mut v = live_screen();
        assert_eq!(press(&mut v, KeyCode::Char('q'), &s), Outcome::Redraw);
        assert_eq!(v.view.confirm, Some(Confirm::Quit));
        assert_eq!(press(&mut v, KeyCode::Char('q'), &s), Outcome::Quit);
        let mut v = live_screen();
        press(&mut v, KeyCode::Char('q'), &s);
        assert_eq!(press(&mut v, KeyCode::Char('n'), &s), Outcome::Redraw, "any other key declines");
        assert_eq!(v.view.confirm, None);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(v.on_key(ctrl_c, &s), Outcome::Redraw);
        assert_eq!(v.on_key(ctrl_c, &s), Outcome::Quit);
    }

    #[test]
    fn quit_is_immediate_when_every_run_is_over_or_nothing_can_be_cancelled() {
        let s = live(&[RunState::Finished]);
        assert_eq!(press(&mut live_screen(), KeyCode::Char('q'), &s), Outcome::Quit);
        let going = live(&[RunState::Running]);
        assert_eq!(press(&mut replay_screen(), KeyCode::Char('q'), &going), Outcome::Quit, "a replay's runs are recordings");
    }

    #[test]
    fn run_selection_wraps_and_digits_pick() {
        let s = live(&[RunState::Running, RunState::Running, RunState::Finished]);
        let mut v = live_screen();
        press(&mut v, KeyCode::BackTab, &s);
        assert_eq!(v.view.selected_run, 2);
        press(&mut v, KeyCode::Tab, &s);
        assert_eq!(v.view.selected_run, 0);
        press(&mut v, KeyCode::Char('2'), &s);
        assert_eq!(v.view.selected_run, 1);
        press(&mut v, KeyCode::Char('9'), &s);
        assert_eq!(v.view.selected_run, 1, "no run 9");
    }

    #[test]
    fn cancel_needs_confirmation_and_a_running_run() {
        let s = live(&[RunState::Running, RunState::Finished]);
        let mut v = live_screen();
        press(&mut v, KeyCode::Char('c'), &s);
        assert_eq!(v.view.confirm, Some(Confirm::CancelRun(0)));
        assert_eq!(press(&mut v, KeyCode::Char('y'), &s), Outcome::Source(SourceAction::CancelRun(0)));
        press(&mut v, KeyCode::Char('2'), &s);
        press(&mut v, KeyCode::Char('c'), &s);
        assert_eq!(v.view.confirm, None, "a finished run cannot be cancelled");
        let mut v = replay_screen();
        press(&mut v, KeyCode::Char('c'), &s);
        assert_eq!(v.view.confirm, None, "nothing to cancel in a replay");
    }

    #[test]
    fn toggles_freeze_zoom_and_window() {
        let mut s = live(&[RunState::Running]);
        for m in [crate::metrics::catalog::LOSS, crate::metrics::catalog::LR, crate::metrics::catalog::GRAD_NORM] {
            s.runs[0].series.entry(m.into()).or_default().push(1, 0.1, 1.0);
        }
        let mut v = live_screen();
        press(&mut v, KeyCode::Char(' '), &s);
        assert!(v.view.frozen.is_some());
        press(&mut v, KeyCode::Char(' '), &s);
        assert!(v.view.frozen.is_none());
        press(&mut v, KeyCode::Enter, &s);
        assert!(v.view.zoomed);
        press(&mut v, KeyCode::Char('+'), &s);
        assert_eq!(v.view.window, Window::Last(100_000));
        press(&mut v, KeyCode::Char('-'), &s);
        press(&mut v, KeyCode::Char('-'), &s);
        assert_eq!(v.view.window, Window::All, "widest stays widest");
        press(&mut v, KeyCode::Char('e'), &s);
        press(&mut v, KeyCode::Char('L'), &s);
        press(&mut v, KeyCode::Char('m'), &s);
        press(&mut v, KeyCode::Char('t'), &s);
        let training = v.panes.of::<Training>().unwrap();
        assert!(v.view.smoothing && training.log_scale && v.panes.of::<Throughput>().unwrap().samples);
        assert_eq!(training.metric(&s), crate::metrics::catalog::LR);
    }

    #[test]
    fn focus_moves_on_the_pane_grid() {
        let mut s = live(&[RunState::Running]);
        for i in 0..3 {
            s.log.push_back(crate::session::state::LogLine { time_s: i as f64, run: None, level: crate::session::LogLevel::Info, message: format!("line {i}") });
        }
        let mut v = live_screen();
        press(&mut v, KeyCode::Right, &s);
        assert_eq!(v.view.focus, PaneId::Throughput);
        press(&mut v, KeyCode::Down, &s);
        assert_eq!(v.view.focus, PaneId::Hardware);
        press(&mut v, KeyCode::Char('j'), &s);
        assert_eq!(v.view.focus, PaneId::Alerts);
        press(&mut v, KeyCode::Left, &s);
        assert_eq!(v.view.focus, PaneId::Events);
        press(&mut v, KeyCode::Char('k'), &s);
        assert_eq!(v.panes.of::<Events>().unwrap().scroll, 1, "k scrolls the focused events pane");
        for _ in 0..5 {
            press(&mut v, KeyCode::Char('k'), &s);
        }
        assert_eq!(v.panes.of::<Events>().unwrap().scroll, 2, "and stops at the oldest line");
        press(&mut v, KeyCode::Up, &s);
        assert_eq!(v.view.focus, PaneId::Training);
        press(&mut v, KeyCode::Char('h'), &s);
        assert_eq!(v.view.focus, PaneId::Training, "left edge");
    }

    #[test]
    fn pane_keys_cycle_the_compact_layouts_pane_and_move_focus() {
        let s = live(&[RunState::Running]);
        let mut v = live_screen();
        assert_eq!(v.view.shown, PaneId::Training);
        press(&mut v, KeyCode::Char('n'), &s);
        assert_eq!((v.view.shown, v.view.focus), (PaneId::Hardware, PaneId::Hardware));
        press(&mut v, KeyCode::Char('n'), &s);
        assert_eq!(v.view.shown, PaneId::Events, "RL, MoE and representation are hidden without their metrics");
        press(&mut v, KeyCode::Char('p'), &s);
        press(&mut v, KeyCode::Char('p'), &s);
        press(&mut v, KeyCode::Char('p'), &s);
        assert_eq!(v.view.shown, PaneId::Throughput);
        press(&mut v, KeyCode::Left, &s);
        assert_eq!((v.view.focus, v.view.shown), (PaneId::Runs, PaneId::Throughput), "the runs list is always shown");
        let a = v.areas(Rect::new(0, 0, 80, 24), &s);
        let ids: Vec<PaneId> = a.panes.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, vec![PaneId::Runs, PaneId::Throughput]);
    }

    #[test]
    fn alerts_pane_selects_jumps_and_acknowledges() {
        use crate::health::{Alert, AlertKind, Severity};
        let mut s = live(&[RunState::Running, RunState::Running]);
        for (run, step) in [("r1", 40), ("r0", 70)] {
            let a = Alert { kind: AlertKind::LossSpike, severity: Severity::Warn, run: run.into(), metric: "loss".into(), step, time_s: 0.0, value: 1.0, message: String::new(), peak: None, escalated_at: None };
            s.alerts.push(a);
        }
        let mut v = live_screen();
        v.view.focus = PaneId::Alerts;
        press(&mut v, KeyCode::Char('j'), &s);
        assert_eq!(v.panes.of::<Alerts>().unwrap().row, 1, "row 1: the older alert");
        press(&mut v, KeyCode::Enter, &s);
        assert_eq!((v.view.selected_run, v.view.window, v.view.zoomed), (1, Window::Around(40), false), "Enter jumps instead of zooming");
        assert_eq!(v.view.detail, Some(0), "and opens the alert's detail");
        assert_eq!(press(&mut v, KeyCode::Char('a'), &s), Outcome::None, "the detail is modal");
        press(&mut v, KeyCode::Char('k'), &s);
        assert_eq!((v.view.detail, v.view.selected_run, v.view.window), (Some(1), 0, Window::Around(70)), "k: the newer alert");
        press(&mut v, KeyCode::Char('j'), &s);
        press(&mut v, KeyCode::Esc, &s);
        assert_eq!((v.view.detail, v.view.window, v.view.highlight), (None, Window::Around(40), Some(0)), "Esc closes the detail; the jump stays");
        press(&mut v, KeyCode::Char('o'), &s);
        assert_eq!(v.view.detail, Some(0), "o reopens the alert jumped to");
        press(&mut v, KeyCode::Char('o'), &s);
        assert_eq!(v.view.detail, None);
        press(&mut v, KeyCode::Char('a'), &s);
        let acked = &v.panes.of::<Alerts>().unwrap().acknowledged;
        assert!(acked.contains(&0) && !acked.contains(&1));
        press(&mut v, KeyCode::Char('A'), &s);
        assert_eq!(v.panes.acknowledged().len(), 2);
        press(&mut v, KeyCode::Esc, &s);
        assert_eq!(v.view.window, Window::All, "Esc leaves the jump");
    }

    #[test]
    fn help_opens_and_any_key_closes_it() {
        let s = live(&[RunState::Running]);
        let mut v = live_screen();
        press(&mut v, KeyCode::Char('?'), &s);
        assert!(v.view.help);
        press(&mut v, KeyCode::Char('x'), &s);
        assert!(!v.view.help);
    }

    #[test]
    fn releases_are_ignored() {
        let s = live(&[RunState::Running]);
        let mut v = live_screen();
        let mut key = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE);
        key.kind = KeyEventKind::Release;
        assert_eq!(v.on_key(key, &s), Outcome::None);
        assert!(!v.view.help);
    }

    #[test]
    fn the_source_takes_its_keys_first_and_only_those() {
        let s = live(&[RunState::Running]);
        let mut replay = replay_screen();
        assert_eq!(press(&mut replay, KeyCode::Char(' '), &s), Outcome::Source(SourceAction::TogglePause), "space pauses instead of freezing");
        let shift_left = KeyEvent::new(KeyCode::Left, KeyModifiers::SHIFT);
        assert_eq!(replay.on_key(shift_left, &s), Outcome::Source(SourceAction::SeekBy(-0.1)));
        assert_eq!(press(&mut replay, KeyCode::Right, &s), Outcome::Source(SourceAction::SeekBy(0.01)));
        press(&mut replay, KeyCode::Char('l'), &s);
        assert_eq!(replay.view.focus, PaneId::Throughput, "l still moves focus");
        assert_eq!(press(&mut replay, KeyCode::Char('s'), &s), Outcome::None, "a replay writes no snapshot");
        let mut live = live_screen();
        assert_eq!(press(&mut live, KeyCode::Char('S'), &s), Outcome::Source(SourceAction::Snapshot));
        assert_eq!(press(&mut live, KeyCode::Char('>'), &s), Outcome::None);
        press(&mut live, KeyCode::Char('?'), &s);
        assert_eq!(press(&mut live, KeyCode::Char('s'), &s), Outcome::Redraw, "with help open, a key only closes it");
    }
}
