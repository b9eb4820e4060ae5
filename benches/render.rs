//! Frame cost of the live display with long series: one run with N steps of every
//! training metric, drawn into an off-screen 200x50 terminal. Prints the median and
//! p90 draw time for N = 1k, 100k and 1M points per series, with EMA smoothing off
//! and on.
//!   cargo bench --bench render
use std::time::Instant;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use rlmon::session::{Event, Hub, RunRecord, SessionState};
use rlmon::ui::theme::Theme;
use rlmon::ui::Screen;

fn session(steps: u64) -> SessionState {
    let mut hub = Hub::new(SessionState::new("bench".into(), vec![RunRecord::new("run".into(), "lm".into(), "cpu".into(), steps)]));
    hub.apply(Event::RunStarted { run: 0, device: "cpu".into(), threads: 1 }, 0.0);
    for step in 1..=steps {
        let x = step as f64;
        let values = vec![
            ("loss".into(), 2.0 + (x / 50.0).sin() * 0.1 + 3.0 / x.sqrt()),
            ("lr".into(), 1e-3),
            ("grad_norm".into(), 0.5 + (x / 7.0).cos() * 0.1),
            ("tokens".into(), 1024.0),
            ("samples".into(), 16.0),
            ("step_time_s".into(), 0.04 + (x / 13.0).sin() * 0.001),
        ];
        hub.apply(Event::Metrics { run: 0, step, time_s: x * 0.04, values }, x * 0.04);
    }
    hub.state
}

fn main() {
    let theme = Theme::built_in("default").unwrap();
    println!("| points per series | smoothing | median frame | p90 frame |");
    println!("|---:|---|---:|---:|");
    for steps in [1_000u64, 100_000, 1_000_000] {
        let state = session(steps);
        for smoothing in [false, true] {
            let mut screen = Screen::default();
            screen.view.smoothing = smoothing;
            let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
            let mut times: Vec<f64> = (0..30)
                .map(|_| {
                    let t = Instant::now();
                    terminal.draw(|f| rlmon::ui::draw(f, &state, &screen, &theme)).unwrap();
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            times.sort_by(f64::total_cmp);
            let on = if smoothing { "on" } else { "off" };
            println!("| {steps} | {on} | {:.2} ms | {:.2} ms |", times[times.len() / 2], times[times.len() * 9 / 10]);
        }
    }
}
