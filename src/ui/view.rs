//! What the user is looking at (selection, focus, zoom, window, toggles, dialogs) and
//! how keys and clicks change it. Pure state transitions: no terminal here.
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::chart::{Window, WINDOWS};
use super::layout::{self, PaneId};
use crate::session::SessionState;

/// Metrics the RL health pane can chart (`r` cycles).
pub const RL_METRICS: &[&str] = &["reward", "kl", "entropy", "clip_frac", "response_len"];
/// Dimensionality measures the representation pane can chart (`d` cycles).
pub const REPR_METRICS: &[&str] = &["stable_rank", "participation_ratio", "cum_energy_90", "nuclear_norm_ratio"];

/// Which metric the training pane plots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainingMetric {
    Loss,
    Lr,
    GradNorm,
}

impl TrainingMetric {
    pub fn name(self) -> &'static str {
        match self {
            TrainingMetric::Loss => crate::metrics::catalog::LOSS,
            TrainingMetric::Lr => crate::metrics::catalog::LR,
            TrainingMetric::GradNorm => crate::metrics::catalog::GRAD_NORM,
        }
    }

    fn next(self) -> Self {
        match self {
            TrainingMetric::Loss => TrainingMetric::Lr,
            TrainingMetric::Lr => TrainingMetric::GradNorm,
            TrainingMetric::GradNorm => TrainingMetric::Loss,
        }
    }
}

/// A question waiting for y/n.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirm {
    Quit,
    CancelRun(usize),
}

/// What the loop must do after a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    None,
    Redraw,
    Quit,
    CancelRun(usize),
}

#[derive(Debug, Clone)]
pub struct ViewState {
    pub selected_run: usize,
    pub focus: PaneId,
    pub zoomed: bool,
    /// The state shown while the display is frozen (training goes on).
    pub frozen: Option<Box<SessionState>>,
    pub window: Window,
    pub smoothing: bool,
    pub log_scale: bool,
    pub training_metric: TrainingMetric,
    /// The throughput chart plots samples/s instead of tokens/s.
    pub show_samples: bool,
    pub help: bool,
    pub confirm: Option<Confirm>,
    /// Lines scrolled up from the newest in the events pane.
    pub events_scroll: usize,
    /// Where each pane was last drawn, for mouse clicks.
    pub pane_areas: Vec<(PaneId, Rect)>,
    /// Where each run's row was last drawn in the runs pane.
    pub run_rows: Vec<(usize, Rect)>,
    /// Selected row of the alerts pane (0 = newest alert).
    pub alert_row: usize,
    /// Alerts acknowledged (indices into the session's alerts): no longer open.
    pub acknowledged: std::collections::BTreeSet<usize>,
    /// Index into `RL_METRICS`.
    pub rl_metric: usize,
    /// Index into `REPR_METRICS`.
    pub repr_metric: usize,
    /// Which MoE layer the bars show (an index into the run's MoE layers).
    pub moe_layer: usize,
    /// MoE pane: layer x expert heatmap instead of one layer's bars.
    pub moe_heatmap: bool,
    /// Shown in the header by sources that have a state of their own (replay).
    pub badge: Option<String>,
}

impl Default for ViewState {
    fn default() -> Self {
        ViewState {
            selected_run: 0,
            focus: PaneId::Runs,
            zoomed: false,
            frozen: None,
            window: Window::All,
            smoothing: false,
            log_scale: false,
            training_metric: TrainingMetric::Loss,
            show_samples: false,
            help: false,
            confirm: None,
            events_scroll: 0,
            pane_areas: Vec::new(),
            run_rows: Vec::new(),
            alert_row: 0,
            acknowledged: Default::default(),
            rl_metric: 0,
            repr_metric: 0,
            moe_layer: 0,
            moe_heatmap: false,
            badge: None,
        }
    }
}

/// EMA weight used when smoothing is on.
pub const SMOOTHING_ALPHA: f64 = 0.1;

impl ViewState {
    /// Handles one key press; `live` is the live state (run count, whether runs are
    /// still going).
    pub fn on_key(&mut self, key: KeyEvent, live: &SessionState) -> Action {
        if key.kind != KeyEventKind::Press {
            return Action::None;
        }
        let ctrl_c = key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c');
        if let Some(confirm) = self.confirm {
            return match key.code {
                KeyCode::Char('y') | KeyCode::Enter => {
                    self.confirm = None;
                    match confirm {
                        Confirm::Quit => Action::Quit,
                        Confirm::CancelRun(i) => Action::CancelRun(i),
                    }
                }
                // A second q / Ctrl-C confirms quitting.
                KeyCode::Char('q') if confirm == Confirm::Quit => Action::Quit,
                _ if ctrl_c && confirm == Confirm::Quit => Action::Quit,
                _ => {
                    self.confirm = None;
                    Action::Redraw
                }
            };
        }
        if ctrl_c || key.code == KeyCode::Char('q') {
            if live.all_over() {
                return Action::Quit;
            }
            self.confirm = Some(Confirm::Quit);
            return Action::Redraw;
        }
        if self.help {
            // Any other key closes the help overlay.
            self.help = false;
            return Action::Redraw;
        }
        let n_runs = live.runs.len().max(1);
        if self.focus == PaneId::Alerts && self.on_alerts_key(key.code, live) {
            return Action::Redraw;
        }
        let visible = layout::visible_panes(self.frozen.as_deref().unwrap_or(live));
        match key.code {
            KeyCode::Char('?') => self.help = true,
            KeyCode::Tab => self.selected_run = (self.selected_run + 1) % n_runs,
            KeyCode::BackTab => self.selected_run = (self.selected_run + n_runs - 1) % n_runs,
            KeyCode::Char(c @ '1'..='9') => {
                let i = c as usize - '1' as usize;
                if i < live.runs.len() {
                    self.selected_run = i;
                }
            }
            KeyCode::Left | KeyCode::Char('h') => self.focus = self.focus.neighbour(-1, 0, &visible),
            KeyCode::Right | KeyCode::Char('l') => self.focus = self.focus.neighbour(1, 0, &visible),
            KeyCode::Up | KeyCode::Char('k') => {
                if self.focus == PaneId::Events && key.code == KeyCode::Char('k') {
                    self.events_scroll += 1;
                } else {
                    self.focus = self.focus.neighbour(0, -1, &visible);
                }
            }
            KeyCode::Down | KeyCode::Char('j') => {
                if self.focus == PaneId::Events && key.code == KeyCode::Char('j') {
                    self.events_scroll = self.events_scroll.saturating_sub(1);
                } else {
                    self.focus = self.focus.neighbour(0, 1, &visible);
                }
            }
            KeyCode::PageUp => self.events_scroll += 10,
            KeyCode::PageDown => self.events_scroll = self.events_scroll.saturating_sub(10),
            KeyCode::Enter => self.zoomed = !self.zoomed,
            KeyCode::Esc => {
                self.zoomed = false;
                if matches!(self.window, Window::Around(_)) {
                    self.window = Window::All;
                }
            }
            KeyCode::Char(' ') => {
                self.frozen = match self.frozen {
                    Some(_) => None,
                    None => Some(Box::new(live.clone())),
                }
            }
            KeyCode::Char('+') | KeyCode::Char('=') => self.window = step_window(self.window, -1),
            KeyCode::Char('-') | KeyCode::Char('_') => self.window = step_window(self.window, 1),
            KeyCode::Char('e') => self.smoothing = !self.smoothing,
            KeyCode::Char('L') => self.log_scale = !self.log_scale,
            KeyCode::Char('m') => self.training_metric = self.training_metric.next(),
            KeyCode::Char('t') => self.show_samples = !self.show_samples,
            KeyCode::Char('r') => self.rl_metric = (self.rl_metric + 1) % RL_METRICS.len(),
            KeyCode::Char('d') => self.repr_metric = (self.repr_metric + 1) % REPR_METRICS.len(),
            KeyCode::Char(']') | KeyCode::Char('[') => {
                let shown = self.frozen.as_deref().unwrap_or(live);
                let run = crate::ui::panes::moe::shown_run(shown, self.selected_run);
                let n = run.map_or(0, |r| crate::metrics::moe::layers(r.series.keys().map(String::as_str)).len());
                if n == 0 {
                    return Action::None;
                }
                let cur = self.moe_layer % n;
                self.moe_layer = if key.code == KeyCode::Char(']') { (cur + 1) % n } else { (cur + n - 1) % n };
            }
            KeyCode::Char('b') => self.moe_heatmap = !self.moe_heatmap,
            KeyCode::Char('c') => {
                let running = live.runs.get(self.selected_run).is_some_and(|r| !r.state.is_over());
                if running {
                    self.confirm = Some(Confirm::CancelRun(self.selected_run));
                }
            }
            _ => return Action::None,
        }
        Action::Redraw
    }

    /// Keys of the focused alerts pane: j/k select, Enter jumps the charts to the
    /// alert's step (and selects its run), a acknowledges it, A acknowledges all.
    /// `false` when the key is not the pane's.
    fn on_alerts_key(&mut self, code: KeyCode, live: &SessionState) -> bool {
        let n = live.alerts.len();
        // Row r shows the r-th newest alert.
        let selected = (n > 0).then(|| n - 1 - self.alert_row.min(n - 1));
        match code {
            KeyCode::Char('j') => self.alert_row = (self.alert_row + 1).min(n.saturating_sub(1)),
            KeyCode::Char('k') => self.alert_row = self.alert_row.saturating_sub(1),
            KeyCode::Enter => {
                let Some(alert) = selected.and_then(|i| live.alerts.get(i)) else { return true };
                if let Some(run) = live.runs.iter().position(|r| r.name == alert.run) {
                    self.selected_run = run;
                }
                self.window = Window::Around(alert.step);
            }
            KeyCode::Char('a') => {
                if let Some(i) = selected {
                    self.acknowledged.insert(i);
                }
            }
            KeyCode::Char('A') => self.acknowledged.extend(0..n),
            _ => return false,
        }
        true
    }

    pub fn on_mouse(&mut self, m: MouseEvent) -> Action {
        let at = Position::new(m.column, m.row);
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                if let Some((run, _)) = self.run_rows.iter().find(|(_, r)| r.contains(at)) {
                    self.selected_run = *run;
                }
                if let Some((pane, _)) = self.pane_areas.iter().find(|(_, r)| r.contains(at)) {
                    self.focus = *pane;
                }
                Action::Redraw
            }
            MouseEventKind::ScrollUp if self.over(PaneId::Events, at) => {
                self.events_scroll += 3;
                Action::Redraw
            }
            MouseEventKind::ScrollDown if self.over(PaneId::Events, at) => {
                self.events_scroll = self.events_scroll.saturating_sub(3);
                Action::Redraw
            }
            _ => Action::None,
        }
    }

    fn over(&self, pane: PaneId, at: Position) -> bool {
        self.pane_areas.iter().any(|(p, r)| *p == pane && r.contains(at))
    }
}

/// `-1`: a narrower window (`+` zooms in), `1`: a wider one.
fn step_window(current: Window, dir: i32) -> Window {
    let i = WINDOWS.iter().position(|w| *w == current).unwrap_or(WINDOWS.len() - 1) as i32;
    WINDOWS[(i + dir).clamp(0, WINDOWS.len() as i32 - 1) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{RunRecord, RunState};

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

    fn press(v: &mut ViewState, code: KeyCode, s: &SessionState) -> Action {
        v.on_key(KeyEvent::new(code, KeyModifiers::NONE), s)
    }

    #[test]
    fn quit_asks_while_runs_go_on_and_a_second_q_confirms() {
        let s = live(&[RunState::Running]);
        let mut v = ViewState::default();
        assert_eq!(press(&mut v, KeyCode::Char('q'), &s), Action::Redraw);
        assert_eq!(v.confirm, Some(Confirm::Quit));
        assert_eq!(press(&mut v, KeyCode::Char('q'), &s), Action::Quit);
        let mut v = ViewState::default();
        press(&mut v, KeyCode::Char('q'), &s);
        assert_eq!(press(&mut v, KeyCode::Char('n'), &s), Action::Redraw, "any other key declines");
        assert_eq!(v.confirm, None);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(v.on_key(ctrl_c, &s), Action::Redraw);
        assert_eq!(v.on_key(ctrl_c, &s), Action::Quit);
    }

    #[test]
    fn quit_is_immediate_when_every_run_is_over() {
        let s = live(&[RunState::Finished]);
        assert_eq!(press(&mut ViewState::default(), KeyCode::Char('q'), &s), Action::Quit);
    }

    #[test]
    fn run_selection_wraps_and_digits_pick() {
        let s = live(&[RunState::Running, RunState::Running, RunState::Finished]);
        let mut v = ViewState::default();
        press(&mut v, KeyCode::BackTab, &s);
        assert_eq!(v.selected_run, 2);
        press(&mut v, KeyCode::Tab, &s);
        assert_eq!(v.selected_run, 0);
        press(&mut v, KeyCode::Char('2'), &s);
        assert_eq!(v.selected_run, 1);
        press(&mut v, KeyCode::Char('9'), &s);
        assert_eq!(v.selected_run, 1, "no run 9");
    }

    #[test]
    fn cancel_needs_confirmation_and_a_running_run() {
        let s = live(&[RunState::Running, RunState::Finished]);
        let mut v = ViewState::default();
        press(&mut v, KeyCode::Char('c'), &s);
        assert_eq!(v.confirm, Some(Confirm::CancelRun(0)));
        assert_eq!(press(&mut v, KeyCode::Char('y'), &s), Action::CancelRun(0));
        press(&mut v, KeyCode::Char('2'), &s);
        press(&mut v, KeyCode::Char('c'), &s);
        assert_eq!(v.confirm, None, "a finished run cannot be cancelled");
    }

    #[test]
    fn toggles_freeze_zoom_and_window() {
        let s = live(&[RunState::Running]);
        let mut v = ViewState::default();
        press(&mut v, KeyCode::Char(' '), &s);
        assert!(v.frozen.is_some());
        press(&mut v, KeyCode::Char(' '), &s);
        assert!(v.frozen.is_none());
        press(&mut v, KeyCode::Enter, &s);
        assert!(v.zoomed);
        press(&mut v, KeyCode::Char('+'), &s);
        assert_eq!(v.window, Window::Last(100_000));
        press(&mut v, KeyCode::Char('-'), &s);
        press(&mut v, KeyCode::Char('-'), &s);
        assert_eq!(v.window, Window::All, "widest stays widest");
        press(&mut v, KeyCode::Char('e'), &s);
        press(&mut v, KeyCode::Char('L'), &s);
        press(&mut v, KeyCode::Char('m'), &s);
        press(&mut v, KeyCode::Char('t'), &s);
        assert!(v.smoothing && v.log_scale && v.show_samples);
        assert_eq!(v.training_metric, TrainingMetric::Lr);
    }

    #[test]
    fn focus_moves_on_the_pane_grid() {
        let s = live(&[RunState::Running]);
        let mut v = ViewState::default();
        press(&mut v, KeyCode::Right, &s);
        assert_eq!(v.focus, PaneId::Throughput);
        press(&mut v, KeyCode::Down, &s);
        assert_eq!(v.focus, PaneId::Hardware);
        press(&mut v, KeyCode::Char('j'), &s);
        assert_eq!(v.focus, PaneId::Alerts);
        press(&mut v, KeyCode::Left, &s);
        assert_eq!(v.focus, PaneId::Events);
        press(&mut v, KeyCode::Char('k'), &s);
        assert_eq!(v.events_scroll, 1, "k scrolls the focused events pane");
        press(&mut v, KeyCode::Up, &s);
        assert_eq!(v.focus, PaneId::Training);
        press(&mut v, KeyCode::Char('h'), &s);
        assert_eq!(v.focus, PaneId::Training, "left edge");
    }

    #[test]
    fn alerts_pane_selects_jumps_and_acknowledges() {
        use crate::health::{Alert, AlertKind, Severity};
        let mut s = live(&[RunState::Running, RunState::Running]);
        for (run, step) in [("r1", 40), ("r0", 70)] {
            let a = Alert { kind: AlertKind::LossSpike, severity: Severity::Warn, run: run.into(), metric: "loss".into(), step, time_s: 0.0, value: 1.0, message: String::new() };
            s.alerts.push(a);
        }
        let mut v = ViewState { focus: PaneId::Alerts, ..ViewState::default() };
        press(&mut v, KeyCode::Char('j'), &s);
        assert_eq!(v.alert_row, 1, "row 1: the older alert");
        press(&mut v, KeyCode::Enter, &s);
        assert_eq!((v.selected_run, v.window, v.zoomed), (1, Window::Around(40), false), "Enter jumps instead of zooming");
        press(&mut v, KeyCode::Char('a'), &s);
        assert!(v.acknowledged.contains(&0) && !v.acknowledged.contains(&1));
        press(&mut v, KeyCode::Char('A'), &s);
        assert_eq!(v.acknowledged.len(), 2);
        press(&mut v, KeyCode::Esc, &s);
        assert_eq!(v.window, Window::All, "Esc leaves the jump");
    }

    #[test]
    fn help_opens_and_any_key_closes_it() {
        let s = live(&[RunState::Running]);
        let mut v = ViewState::default();
        press(&mut v, KeyCode::Char('?'), &s);
        assert!(v.help);
        press(&mut v, KeyCode::Char('x'), &s);
        assert!(!v.help);
    }

    #[test]
    fn releases_are_ignored() {
        let s = live(&[RunState::Running]);
        let mut v = ViewState::default();
        let mut key = KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE);
        key.kind = KeyEventKind::Release;
        assert_eq!(v.on_key(key, &s), Action::None);
        assert!(!v.help);
    }
}
