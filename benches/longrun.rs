//! A long run at full speed: one run of STEPS steps x SERIES series (the training
//! metrics plus MoE per-expert loads) fed through the hub and every detector, with
//! the live display drawing a 200x50 frame into an off-screen terminal every
//! FRAME_EVERY steps. Prints, at each tenth of the run: resident memory, bytes per
//! point held by the series, hub cost per point (series + detectors), and the
//! median and worst frame of that tenth.
//!   cargo bench --bench longrun -- [STEPS] [SERIES] [FRAME_EVERY]
//!   (default 1000000 200 1000; scripts/bench-longrun.sh)
use std::time::Instant;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use rlmon::metrics::{catalog, MetricName};
use rlmon::session::{Event, Hub, RunRecord, SessionState};
use rlmon::ui::theme::Theme;
use rlmon::ui::Screen;

/// Resident memory of this process, from /proc (0 where there is none).
fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok());
    kb.unwrap_or(0.0) / 1024.0
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let steps = args.first().copied().unwrap_or(1_000_000);
    let series = args.get(1).copied().unwrap_or(200).max(6) as usize;
    let frame_every = args.get(2).copied().unwrap_or(1000).max(1);
    // The training metrics, then MoE loads: 8 experts per layer, as many layers as fit.
    let mut names: Vec<MetricName> =
        [catalog::LOSS, catalog::LR, catalog::GRAD_NORM, catalog::TOKENS, catalog::SAMPLES, catalog::STEP_TIME_S].map(MetricName::Borrowed).to_vec();
    let mut i = 0;
    while names.len() < series {
        names.push(catalog::moe(i / 8).load(i % 8).into());
        i += 1;
    }
    let mut hub = Hub::new(SessionState::new("longrun".into(), vec![RunRecord::new("run".into(), "lm".into(), "cpu".into(), steps)]));
    hub.apply(Event::RunStarted { run: 0, device: "cpu".into(), threads: 1 }, 0.0);
    let theme = Theme::built_in("default").unwrap();
    let screen = Screen::default();
    let mut terminal = Terminal::new(TestBackend::new(200, 50)).unwrap();
    let start_rss = rss_mb();
    println!("{steps} steps x {} series, a frame every {frame_every} steps; {start_rss:.0} MB resident at start", names.len());
    println!("| steps | points | RSS | series bytes/point | hub µs/point | median frame | worst frame |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let (mut hub_s, mut frames) = (0.0, Vec::new());
    let tenth = (steps / 10).max(1);
    for step in 1..=steps {
        let x = step as f64;
        let values: Vec<(MetricName, f64)> = names
            .iter()
            .enumerate()
            .map(|(k, n)| {
                let v = match k {
                    0 => 2.0 + 3.0 / x.sqrt() + 0.05 * noise(),
                    1 => 1e-3,
                    2 => 0.5 + 0.1 * noise(),
                    3 => 4096.0,
                    4 => 16.0,
                    5 => 0.25 + 0.01 * noise(),
                    _ => 0.125 + 0.01 * noise(),
                };
                // What a framework logging f32 tensors sends.
                (n.clone(), if k == 1 || k == 3 || k == 4 { v } else { v as f32 as f64 })
            })
            .collect();
        let t = Instant::now();
        hub.apply(Event::Metrics { run: 0, step, time_s: x * 0.25, values }, x * 0.25);
        hub_s += t.elapsed().as_secs_f64();
        if step % frame_every == 0 {
            let t = Instant::now();
            terminal.draw(|f| rlmon::ui::draw(f, &hub.state, &screen, &theme)).unwrap();
            frames.push(t.elapsed().as_secs_f64() * 1e3);
        }
        if step % tenth == 0 || step == steps {
            // A run's clock (its steps' times) is held once for all its series.
            let held: usize = hub.state.runs.iter().map(|r| r.clock.heap_bytes() + r.series.values().map(|s| s.heap_bytes()).sum::<usize>()).sum();
            let points: usize = hub.state.runs.iter().flat_map(|r| r.series.values()).map(|s| s.len()).sum();
            frames.sort_by(f64::total_cmp);
            let median = frames.get(frames.len() / 2).copied().unwrap_or(0.0);
            let worst = frames.last().copied().unwrap_or(0.0);
            println!(
                "| {step} | {points} | {:.0} MB | {:.2} | {:.2} | {median:.2} ms | {worst:.2} ms |",
                rss_mb(),
                held as f64 / points.max(1) as f64,
                hub_s * 1e6 / (step as f64 * names.len() as f64),
            );
            frames.clear();
        }
    }
}
