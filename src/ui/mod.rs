//! The live terminal interface. Producers never touch the terminal: this loop drains
//! the session's events and input, and draws at most `fps` times a second, only when
//! something changed. Drawing reads the session state and the view state.
pub mod chart;
pub mod layout;
pub mod panes;
pub mod terminal;
pub mod theme;
pub mod view;

use std::io;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event as InputEvent};
use ratatui::crossterm::{execute, terminal::BeginSynchronizedUpdate, terminal::EndSynchronizedUpdate};
use ratatui::layout::Rect;
use ratatui::Frame;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::app::live::LiveSession;
use crate::app::signals::Signals;
use crate::session::SessionState;
use layout::PaneId;
use panes::Ctx;
use terminal::TerminalGuard;
use theme::Theme;
use view::{Action, ViewState};

/// How long the input thread waits for a key before checking whether to stop.
const INPUT_POLL: Duration = Duration::from_millis(100);

/// Draws the whole screen for `state` as `view` says.
pub fn draw(frame: &mut Frame, state: &SessionState, view: &ViewState, theme: &Theme) {
    let area = frame.area();
    if layout::too_small(area) {
        panes::overlay::too_small(frame, area);
        return;
    }
    let ctx = Ctx { state, view, theme };
    let areas = layout::areas(area, view.zoomed.then_some(view.focus));
    panes::header::render(frame, areas.header, &ctx);
    for (id, rect) in &areas.panes {
        panes::render(frame, *id, *rect, &ctx);
    }
    panes::overlay::footer(frame, areas.footer, &ctx);
    if let Some(c) = view.confirm {
        panes::overlay::confirm(frame, area, &ctx, c);
    } else if view.help {
        panes::overlay::help(frame, area, &ctx);
    }
}

/// Records where panes and run rows are, so clicks can be mapped back.
fn record_areas(view: &mut ViewState, area: Rect, n_runs: usize) {
    if layout::too_small(area) {
        view.pane_areas.clear();
        view.run_rows.clear();
        return;
    }
    let areas = layout::areas(area, view.zoomed.then_some(view.focus));
    view.run_rows = areas
        .panes
        .iter()
        .find(|(id, _)| *id == PaneId::Runs)
        .map(|(_, r)| panes::runs::row_areas(*r, n_runs))
        .unwrap_or_default();
    view.pane_areas = areas.panes;
}

/// Reads terminal input on its own thread (crossterm's reads block).
fn spawn_input(tx: mpsc::Sender<InputEvent>, stop: CancellationToken) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("rlmon-input".into()).spawn(move || {
        while !stop.is_cancelled() {
            match event::poll(INPUT_POLL) {
                Ok(true) => match event::read() {
                    Ok(ev) => {
                        if tx.blocking_send(ev).is_err() {
                            return;
                        }
                    }
                    Err(_) => return,
                },
                Ok(false) => {}
                Err(_) => return,
            }
        }
    })
}

/// Runs the interface until the user quits (cancelling runs that are still going) or
/// a signal arrives. The terminal is restored on every way out.
pub async fn run(live: &mut LiveSession, theme: Theme, fps: u32) -> io::Result<()> {
    let mut guard = TerminalGuard::enter()?;
    let stop_input = CancellationToken::new();
    let (input_tx, mut input_rx) = mpsc::channel(256);
    let input = spawn_input(input_tx, stop_input.clone())?;
    let mut signals = Signals::new();
    let mut view = ViewState::default();
    let mut frame_tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(fps.max(1))));
    frame_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut dirty = true;
    let mut shown_second = u64::MAX;
    let mut producers_open = true;

    let result = loop {
        tokio::select! {
            open = live.recv_and_apply(), if producers_open => {
                producers_open = open;
                dirty |= view.frozen.is_none();
            }
            input = input_rx.recv() => {
                let action = match input {
                    Some(InputEvent::Key(key)) => view.on_key(key, live.state()),
                    Some(InputEvent::Mouse(m)) => view.on_mouse(m),
                    Some(InputEvent::Resize(..)) => Action::Redraw,
                    Some(_) => Action::None,
                    None => break Err(io::Error::other("terminal input closed")),
                };
                match action {
                    Action::Quit => {
                        live.cancel_all();
                        break Ok(());
                    }
                    Action::CancelRun(i) => live.cancel_run(i),
                    Action::Redraw | Action::None => {}
                }
                dirty |= action != Action::None;
            }
            signal = signals.next() => {
                tracing::info!("{signal}: leaving the display and cancelling runs");
                live.cancel_all();
                break Ok(());
            }
            _ = frame_tick.tick() => {
                // The header clock moves once a second even when nothing else does.
                let second = live.elapsed_s() as u64;
                if second != shown_second && view.frozen.is_none() {
                    shown_second = second;
                    dirty = true;
                }
                if dirty {
                    dirty = false;
                    let area = guard.terminal.size().map(|s| Rect::new(0, 0, s.width, s.height))?;
                    let n_runs = live.state().runs.len();
                    record_areas(&mut view, area, n_runs);
                    let state: &SessionState = view.frozen.as_deref().unwrap_or(live.state());
                    let _ = execute!(io::stdout(), BeginSynchronizedUpdate);
                    let drawn = guard.terminal.draw(|f| draw(f, state, &view, &theme));
                    let _ = execute!(io::stdout(), EndSynchronizedUpdate);
                    drawn?;
                }
            }
        }
    };
    stop_input.cancel();
    drop(guard);
    let _ = tokio::task::spawn_blocking(move || input.join()).await;
    result
}
