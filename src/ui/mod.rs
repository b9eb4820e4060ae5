//! The live terminal interface. It depends only on a [`Source`] of session state
//! and on the user's input: keys become actions through the key table (`keys.rs`)
//! before any source sees them. Producers never touch the terminal: this loop drains
//! the source's events and the input, and draws at most `fps` times a second, only
//! when something changed. Drawing reads the session state, the view and the panes.
pub mod chart;
pub mod keys;
pub mod layout;
pub mod panes;
pub mod screen;
pub mod targets;
pub mod terminal;
pub mod theme;
pub mod view;

use std::fmt::Display;
use std::future::Future;
use std::io;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event as InputEvent};
use ratatui::crossterm::{execute, terminal::BeginSynchronizedUpdate, terminal::EndSynchronizedUpdate};
use ratatui::layout::Rect;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::session::SessionState;
pub use screen::{draw, Screen};
use terminal::TerminalGuard;
use theme::Theme;
use view::{Controls, Outcome};

/// How long the input thread waits for a key before checking whether to stop.
const INPUT_POLL: Duration = Duration::from_millis(100);

/// What a source is asked to do, by a key or by the display.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SourceAction {
    /// Stop every run (quitting, or a signal).
    CancelAll,
    CancelRun(usize),
    /// Write the session snapshot now.
    Snapshot,
    /// Pause or resume playback.
    TogglePause,
    Slower,
    Faster,
    /// Move playback by this fraction of the session (negative: back).
    SeekBy(f64),
    SeekStart,
    SeekEnd,
}

/// What the display shows and drives: a live session, a replay of a recorded one,
/// or a comparison. Sources live with the commands (app/); the display knows only this.
pub trait Source {
    /// Waits for the next events and applies them; `false` once none will come.
    fn next(&mut self) -> impl Future<Output = bool>;
    fn state(&self) -> &SessionState;
    /// Seconds since session start, for the header clock.
    fn elapsed_s(&self) -> f64;
    /// Whether it takes `action`; the display offers only the keys of actions its
    /// source takes, and asks before quitting only a source that takes `CancelAll`.
    fn accepts(&self, _action: SourceAction) -> bool {
        false
    }
    /// Carries out an action it accepts; `true` when the screen should be redrawn.
    fn act(&mut self, _action: SourceAction) -> bool {
        false
    }
    /// A badge for the header (replay position and speed, the comparison's verdict).
    fn badge(&self) -> Option<String> {
        None
    }
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
/// `interrupted` completes (a signal: its output names it in the log). The terminal
/// is restored on every way out.
pub async fn run<S: Source, I: Display>(source: &mut S, theme: Theme, fps: u32, interrupted: impl Future<Output = I>) -> io::Result<()> {
    let mut guard = TerminalGuard::enter()?;
    let stop_input = CancellationToken::new();
    let (input_tx, mut input_rx) = mpsc::channel(256);
    let input = spawn_input(input_tx, stop_input.clone())?;
    tokio::pin!(interrupted);
    let mut screen = Screen::new(Controls::of(source));
    let cancels_runs = screen.view.controls.cancels_runs;
    let mut frame_tick = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(fps.max(1))));
    frame_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut dirty = true;
    let mut shown_second = u64::MAX;
    let mut producers_open = true;

    let result = loop {
        tokio::select! {
            open = source.next(), if producers_open => {
                producers_open = open;
                dirty |= screen.view.frozen.is_none();
            }
            input = input_rx.recv() => {
                let outcome = match input {
                    Some(InputEvent::Key(key)) => screen.on_key(key, source.state()),
                    Some(InputEvent::Mouse(m)) => screen.on_mouse(m, source.state()),
                    Some(InputEvent::Resize(..)) => Outcome::Redraw,
                    Some(_) => Outcome::None,
                    None => break Err(io::Error::other("terminal input closed")),
                };
                match outcome {
                    Outcome::Quit => {
                        if cancels_runs {
                            source.act(SourceAction::CancelAll);
                        }
                        break Ok(());
                    }
                    Outcome::Source(action) => dirty |= source.act(action),
                    Outcome::Redraw => dirty = true,
                    Outcome::None => {}
                }
            }
            signal = &mut interrupted => {
                tracing::info!("{signal}: leaving the display and cancelling runs");
                if cancels_runs {
                    source.act(SourceAction::CancelAll);
                }
                break Ok(());
            }
            _ = frame_tick.tick() => {
                // The header clock moves once a second even when nothing else does.
                let second = source.elapsed_s() as u64;
                if second != shown_second && screen.view.frozen.is_none() {
                    shown_second = second;
                    dirty = true;
                }
                if dirty {
                    dirty = false;
                    screen.view.badge = source.badge();
                    let area = guard.terminal.size().map(|s| Rect::new(0, 0, s.width, s.height))?;
                    screen.record_areas(area, source.state());
                    let state: &SessionState = screen.view.frozen.as_deref().unwrap_or(source.state());
                    let started = std::time::Instant::now();
                    let _ = execute!(io::stdout(), BeginSynchronizedUpdate);
                    let drawn = guard.terminal.draw(|f| draw(f, state, &screen, &theme));
                    let _ = execute!(io::stdout(), EndSynchronizedUpdate);
                    drawn?;
                    // Frame cost for soaks and benchmarks (`RLMON_LOG=rlmon::frame=debug`).
                    tracing::debug!(target: "rlmon::frame", us = started.elapsed().as_micros() as u64, "frame");
                    crate::failpoint::hit(crate::failpoint::DISPLAY_PANIC);
                }
            }
        }
    };
    stop_input.cancel();
    drop(guard);
    let _ = tokio::task::spawn_blocking(move || input.join()).await;
    result
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::targets::PaneId;
    use super::panes::test_support::screen;
    use super::*;
    use crate::session::{Event, GpuInfo, GpuStatus, Hub, RunOutcome, RunRecord};
    use view::{Confirm, ViewState};

    /// What a live session's display is told about its source.
    fn live_controls() -> Controls {
        Controls { cancels_runs: true, takes: vec![SourceAction::Snapshot] }
    }

    fn live_screen(view: ViewState) -> Screen {
        Screen { view: ViewState { controls: live_controls(), ..view }, ..Screen::default() }
    }

    /// A session with one running run (100 steps of metrics), one failed run and a
    /// GPU, built through the hub as live events would.
    fn session(gpu: bool) -> SessionState {
        let runs = vec![
            RunRecord::new("alpha".into(), "lm".into(), "auto".into(), 400),
            RunRecord::new("beta".into(), "lm".into(), "auto".into(), 400),
        ];
        let mut hub = Hub::new(SessionState::new("demo".into(), runs));
        let device = if gpu { "cuda:0" } else { "cpu" };
        hub.apply(Event::RunStarted { run: 0, device: device.into(), threads: 1 }, 0.0);
        hub.apply(Event::RunStarted { run: 1, device: device.into(), threads: 1 }, 0.0);
        for step in 1..=100u64 {
            let loss = 5.5 * (-(step as f64) / 40.0).exp() + 1.0;
            let values = vec![
                ("loss".into(), loss),
                ("lr".into(), 1e-3),
                ("grad_norm".into(), 0.5),
                ("tokens".into(), 1024.0),
                ("samples".into(), 16.0),
                ("step_time_s".into(), 0.04),
            ];
            hub.apply(Event::Metrics { run: 0, step, time_s: step as f64 * 0.04, values }, step as f64 * 0.04);
        }
        hub.apply(Event::RunEnded { run: 1, outcome: RunOutcome::Failed("loss became NaN at step 3".into()) }, 1.0);
        let status = if gpu {
            GpuStatus::Available { driver: "580.1".into(), gpus: vec![GpuInfo { index: 0, name: "NVIDIA H100".into(), mem_total_bytes: 80 << 30 }] }
        } else {
            GpuStatus::Unavailable { reason: "NVML unavailable: libnvidia-ml.so.1 not found".into() }
        };
        hub.apply(Event::GpuStatus(status), 1.0);
        let mut tele = vec![("host/cpu_pct".into(), 55.0), ("host/mem_used_bytes".into(), 4e9), ("host/mem_total_bytes".into(), 16e9)];
        if gpu {
            tele.extend([
                ("gpu0/util_pct".into(), 87.0),
                ("gpu0/mem_used_bytes".into(), 20.0 * (1u64 << 30) as f64),
                ("gpu0/mem_total_bytes".into(), 80.0 * (1u64 << 30) as f64),
                ("gpu0/power_w".into(), 312.0),
                ("gpu0/temp_c".into(), 64.0),
            ]);
        }
        hub.apply(Event::Telemetry { time_s: 4.0, values: tele }, 4.0);
        hub.state
    }

    fn render(state: &SessionState, s: &Screen, w: u16, h: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        let theme = Theme::built_in("default").unwrap();
        terminal.draw(|f| draw(f, state, s, &theme)).unwrap();
        screen(&terminal)
    }

    #[test]
    fn a_run_without_a_rate_charts_its_step_time_or_says_none_is_logged() {
        use crate::metrics::catalog;
        let runs = vec![RunRecord::new("bar".into(), "command".into(), "external".into(), 0), RunRecord::new("bare".into(), "command".into(), "external".into(), 0)];
        let mut hub = Hub::new(SessionState::new("rates".into(), runs));
        for step in 1..=50u64 {
            let t = step as f64 * 0.1;
            hub.apply(Event::Metrics { run: 0, step, time_s: t, values: vec![(catalog::LOSS.into(), 2.0), (catalog::STEP_TIME_S.into(), 0.1)] }, t);
            hub.apply(Event::Metrics { run: 1, step, time_s: t, values: vec![(catalog::LOSS.into(), 2.0)] }, t);
        }
        let text = render(&hub.state, &live_screen(ViewState::default()), 140, 40);
        assert!(text.contains(catalog::info(catalog::STEP_TIME_S).unwrap().label) && !text.contains("no steps yet"), "{text}");
        let text = render(&hub.state, &live_screen(ViewState { selected_run: 1, ..ViewState::default() }), 140, 40);
        assert!(text.contains("no throughput logged"), "{text}");
    }

    #[test]
    fn every_pane_shows_live_values() {
        let s = session(false);
        let text = render(&s, &live_screen(ViewState::default()), 140, 40);
        for needle in [
            "demo",                               // header: session
            "1 running · 0 finished · 1 failed",   // header: runs by state
            "NO GPU",                              // header: badge with reason
            "alpha (lm)",                          // runs list
            "100/400",                             // progress
            "25.6k",                               // tokens/s = 1024 / 0.04
            "failed at step 0: loss became NaN",   // events: failure reason
            "step 40.0 ms",                        // throughput: step time
            "ETA 0:12",                            // 300 steps x 0.04 s
            "training · loss",                     // training pane
            "loss (nats/token)",                   // axis title with unit
            "none: NVML unavailable",              // hardware: reason, not zeros
            "host CPU",
            "55%",
            "started on cpu",                      // events
            "c cancel",                            // footer: a run is going
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
    }

    #[test]
    fn selected_failed_run_shows_its_reason() {
        let s = session(false);
        let view = ViewState { selected_run: 1, ..ViewState::default() };
        let text = render(&s, &live_screen(view), 140, 40);
        assert!(text.contains("beta failed: loss became NaN at step 3"), "{text}");
    }

    #[test]
    fn hardware_pane_shows_gpu_figures() {
        let s = session(true);
        let text = render(&s, &Screen::default(), 140, 40);
        for needle in ["GPU NVIDIA H100", "gpu0 util", "87%", "20.0/80.0 GiB", "312 W", "64 °C", "GPU util 87%"] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
    }

    #[test]
    fn small_terminal_gets_one_line_instead_of_garbage() {
        let text = render(&session(false), &Screen::default(), 60, 20);
        assert!(text.starts_with("terminal too small: 60x20, rlmon needs 80x24"), "{text}");
        assert_eq!(text.lines().filter(|l| !l.is_empty()).count(), 1);
    }

    #[test]
    fn overlays_and_badges() {
        let s = session(false);
        let view = ViewState { help: true, ..ViewState::default() };
        let text = render(&s, &live_screen(view), 120, 40);
        assert!(text.contains("freeze the display (training continues)"), "{text}");
        let view = ViewState { frozen: Some(Box::new(s.clone())), ..ViewState::default() };
        assert!(render(&s, &live_screen(view), 120, 40).starts_with(" FROZEN "));
        let view = ViewState { confirm: Some(Confirm::Quit), ..ViewState::default() };
        assert!(render(&s, &live_screen(view), 120, 40).contains("1 run(s) still going"));
    }

    #[test]
    fn zoom_and_toggles_change_the_training_pane() {
        let s = session(false);
        let mut zoomed = Screen::default();
        zoomed.view = ViewState { zoomed: true, focus: PaneId::Training, smoothing: true, ..ViewState::default() };
        let training = zoomed.panes.of_mut::<panes::training::Training>().unwrap();
        training.log_scale = true;
        training.metric = 2;
        let text = render(&s, &zoomed, 120, 40);
        assert!(text.contains("training · grad_norm · EMA · log"), "{text}");
        assert!(!text.contains("hardware"), "zoomed: one pane only");
        let mut samples = Screen::default();
        samples.panes.of_mut::<panes::throughput::Throughput>().unwrap().samples = true;
        assert!(render(&s, &samples, 120, 40).contains("samples/s"));
    }

    #[test]
    fn alerts_show_in_their_pane_the_header_the_runs_list_and_as_chart_markers() {
        let s = session(false);
        let mut hub = Hub::new(s);
        hub.apply(Event::Metrics { run: 0, step: 101, time_s: 4.1, values: vec![("loss".into(), f64::NAN)] }, 4.1);
        hub.apply(Event::Metrics { run: 0, step: 102, time_s: 4.2, values: vec![("loss".into(), 1.2)] }, 4.2);
        let s = hub.state;
        let text = render(&s, &Screen::default(), 140, 40);
        for needle in ["alerts 1", "alerts · 1 open of 1", "CRIT alpha @101 nonfinite: loss is NaN at step 101", "running CRIT"] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        // The marker: cells in the critical colour inside the training pane.
        let theme = Theme::built_in("default").unwrap();
        let mut terminal = Terminal::new(TestBackend::new(140, 40)).unwrap();
        terminal.draw(|f| draw(f, &s, &Screen::default(), &theme)).unwrap();
        let areas = Screen::default().areas(Rect::new(0, 0, 140, 40), &s);
        let training = areas.panes.iter().find(|(p, _)| *p == PaneId::Training).unwrap().1;
        let buf = terminal.backend().buffer();
        let marked = (training.y + 1..training.bottom() - 1)
            .filter(|y| (training.x + 1..training.right() - 1).any(|x| buf[(x, *y)].fg == theme.critical))
            .count();
        assert!(marked >= 3, "a vertical marker spans several rows, found {marked}");
        // Acknowledged: the header and runs list stop counting it.
        let mut acked = Screen::default();
        acked.panes.of_mut::<panes::alerts::Alerts>().unwrap().acknowledged.insert(0);
        let text = render(&s, &acked, 140, 40);
        assert!(text.contains("alerts 0") && text.contains("alerts · 0 open of 1"), "{text}");
    }

    #[test]
    fn click_selects_the_run_under_the_pointer() {
        use ratatui::crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
        let s = session(false);
        let mut screen = Screen::default();
        screen.record_areas(Rect::new(0, 0, 120, 40), &s);
        let (_, row) = screen.view.run_rows[1];
        let click = MouseEvent { kind: MouseEventKind::Down(MouseButton::Left), column: row.x + 2, row: row.y, modifiers: KeyModifiers::NONE };
        screen.on_mouse(click, &s);
        assert_eq!(screen.view.selected_run, 1);
        assert_eq!(screen.view.focus, PaneId::Runs);
    }
}
