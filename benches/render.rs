//! Frame cost of the live display with long series, drawn into an off-screen 200x50
//! terminal: one run with N steps of every training metric (N = 1k, 100k, 1M), and
//! 8 runs of 1M steps each. Prints the median and p90 draw time with EMA smoothing
//! off and on, and the process's resident memory once each session is built.
//!   cargo bench --bench render                 (every size)
//!   cargo bench --bench render -- 8x1000000    (only sizes named RUNSxSTEPS; any
//!                                               RUNSxSTEPS may be named, e.g. 32x60000)
use std::time::Instant;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use rlmon::session::{Event, Hub, RunRecord, SessionState};
use rlmon::ui::theme::Theme;
use rlmon::ui::Screen;

fn session(runs: usize, steps: u64) -> SessionState {
    let records = (0..runs).map(|r| RunRecord::new(format!("run{r}"), "lm".into(), "cpu".into(), steps)).collect();
    let mut hub = Hub::new(SessionState::new("bench".into(), records));
    for run in 0..runs {
        hub.apply(Event::RunStarted { run, device: "cpu".into(), threads: 1 }, 0.0);
    }
    for step in 1..=steps {
        for run in 0..runs {
            let x = step as f64 + run as f64 * 0.37;
            let values = vec![
                ("loss".into(), 2.0 + (x / 50.0).sin() * 0.1 + 3.0 / x.sqrt()),
                ("lr".into(), 1e-3),
                ("grad_norm".into(), 0.5 + (x / 7.0).cos() * 0.1),
                ("tokens".into(), 1024.0),
                ("samples".into(), 16.0),
                ("step_time_s".into(), 0.04 + (x / 13.0).sin() * 0.001),
            ];
            hub.apply(Event::Metrics { run, step, time_s: step as f64 * 0.04, values }, step as f64 * 0.04);
        }
    }
    hub.state
}

/// Resident memory of this process, from /proc (0 where there is none).
fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok());
    kb.unwrap_or(0.0) / 1024.0
}

fn main() {
    let named: Vec<String> = std::env::args().skip(1).filter(|a| a.contains('x')).collect();
    let parsed: Vec<(usize, u64)> = named.iter().filter_map(|a| a.split_once('x')).filter_map(|(r, s)| Some((r.parse().ok()?, s.parse().ok()?))).collect();
    let sizes: Vec<(usize, u64)> = if parsed.is_empty() { vec![(1, 1_000), (1, 100_000), (1, 1_000_000), (8, 1_000_000)] } else { parsed };
    let theme = Theme::built_in("default").unwrap();
    println!("| runs x points per series | smoothing | median frame | p90 frame | RSS after building |");
    println!("|---:|---|---:|---:|---:|");
    for (runs, steps) in sizes {
        if !named.is_empty() && !named.contains(&format!("{runs}x{steps}")) {
            continue;
        }
        let state = session(runs, steps);
        let rss = rss_mb();
        let series = state.runs.iter().flat_map(|r| r.series.values());
        let (bytes, points) = series.fold((0, 0), |(b, p), s| (b + s.heap_bytes(), p + s.len()));
        eprintln!("{runs} x {steps}: {points} points in series, {:.2} bytes per point held", bytes as f64 / points as f64);
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
            println!("| {runs} x {steps} | {on} | {:.2} ms | {:.2} ms | {rss:.0} MB |", times[times.len() / 2], times[times.len() * 9 / 10]);
        }
    }
}
