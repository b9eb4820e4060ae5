//! What a 64-node job costs rlmon on a login node, measured with simulated feeds:
//! 64 machines of 8 GPUs (512 GPUs: every figure a dcgm-exporter or an attached
//! rlmon brings, every 2 s) and one job of 512 ranks (6 metrics a step, a step a
//! second), applied through the hub as the live session does. Prints the hub's
//! cost per second of cluster time, the memory the session holds, and the frame
//! time at 160x48 (the grid, and the hardware pane zoomed).
//!   cargo run --release --example cluster_scale -- [SECONDS] [NODES] [RANKS]
//! (scripts/bench-cluster.sh runs it for the figures in docs/cluster.md)
use std::time::Instant;

use ratatui::backend::TestBackend;
use ratatui::Terminal;
use rlmon::metrics::{catalog, MetricName};
use rlmon::session::{Event, Hub, RunRecord, SessionState};
use rlmon::ui::theme::Theme;
use rlmon::ui::Screen;

const GPUS_PER_NODE: usize = 8;
const SCRAPE_S: u64 = 2;

/// Resident memory of this process, in bytes (Linux).
fn rss_bytes() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0.0);
    pages * 4096.0
}

fn telemetry(nodes: usize, t: f64) -> Vec<Event> {
    (0..nodes)
        .map(|n| {
            let host = format!("node{n:02}");
            let remote = |local: &str| MetricName::Owned(catalog::remote(&host, local));
            let mut values = vec![(remote(catalog::host::CPU_PCT), 30.0 + (t / 7.0).sin()), (remote(catalog::host::MEM_USED_BYTES), 2e11), (remote(catalog::host::MEM_TOTAL_BYTES), 1e12)];
            for i in 0..GPUS_PER_NODE {
                let g = catalog::gpu(i);
                let wobble = ((n * 8 + i) as f64 + t).sin();
                values.extend([
                    (remote(&g.util_pct()), 95.0 + 3.0 * wobble),
                    (remote(&g.mem_used_bytes()), 6.5e10 + 1e8 * wobble),
                    (remote(&g.mem_total_bytes()), 8.5e10),
                    (remote(&g.power_w()), 600.0 + 20.0 * wobble),
                    (remote(&g.temp_c()), 65.0 + wobble),
                    (remote(&g.sm_clock_mhz()), 1980.0),
                ]);
            }
            Event::Telemetry { time_s: t, values }
        })
        .collect()
}

fn rank_step(rank: u32, step: u64, t: f64) -> Event {
    let x = step as f64;
    let values = vec![
        (catalog::LOSS.into(), 2.0 + 3.0 / (1.0 + x / 100.0) + 0.01 * (x + rank as f64).sin()),
        (catalog::LR.into(), 3e-4),
        (catalog::GRAD_NORM.into(), 0.8 + 0.05 * (x / 9.0).cos()),
        (catalog::TOKENS.into(), 8192.0),
        (catalog::SAMPLES.into(), 4.0),
        (catalog::STEP_TIME_S.into(), 1.0 + 0.01 * (rank as f64).sin()),
    ];
    Event::RankMetrics { job: 0, rank, step, time_s: t, values }
}

fn frame_ms(state: &SessionState, screen: &Screen, theme: &Theme) -> (f64, f64) {
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
    let mut times: Vec<f64> = (0..20)
        .map(|_| {
            let t = Instant::now();
            terminal.draw(|f| rlmon::ui::draw(f, state, screen, theme)).unwrap();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], times[times.len() * 9 / 10])
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let seconds = args.first().copied().unwrap_or(600);
    let nodes = args.get(1).copied().unwrap_or(64) as usize;
    let ranks = args.get(2).copied().unwrap_or(512) as u32;
    let before = rss_bytes();
    let mut hub = Hub::new(SessionState::new("cluster".into(), vec![RunRecord::new("lm".into(), "attach".into(), "attached".into(), 0)]));
    hub.apply(Event::RunStarted { run: 0, device: "attached".into(), threads: 0 }, 0.0);
    let (mut events, mut points) = (0u64, 0u64);
    let started = Instant::now();
    for s in 1..=seconds {
        let t = s as f64;
        for rank in 0..ranks {
            hub.apply(rank_step(rank, s, t), t);
            events += 1;
            points += 6;
        }
        if s % SCRAPE_S == 0 {
            for e in telemetry(nodes, t) {
                hub.apply(e, t);
                events += 1;
                points += (3 + GPUS_PER_NODE * 6) as u64;
            }
        }
    }
    let apply_s = started.elapsed().as_secs_f64();
    let held = rss_bytes() - before;
    let theme = Theme::built_in("default").unwrap();
    let grid = frame_ms(&hub.state, &Screen::default(), &theme);
    let mut zoomed = Screen::default();
    zoomed.view.focus = rlmon::ui::targets::PaneId::Hardware;
    zoomed.view.zoomed = true;
    let hardware = frame_ms(&hub.state, &zoomed, &theme);
    let series: usize = hub.state.runs.iter().map(|r| r.series.len()).sum::<usize>() + hub.state.telemetry.len();
    println!("simulated: {seconds} s of a job on {nodes} nodes x {GPUS_PER_NODE} GPUs ({} GPUs), {ranks} ranks", nodes * GPUS_PER_NODE);
    println!("| figure | value |");
    println!("|---|---:|");
    println!("| events applied | {events} ({:.0} a second of cluster time) |", events as f64 / seconds as f64);
    println!("| points applied | {points} ({:.0} a second) |", points as f64 / seconds as f64);
    println!("| runs / series held | {} / {series} |", hub.state.runs.len());
    println!("| hub time per second of cluster time | {:.2} ms |", apply_s * 1e3 / seconds as f64);
    println!("| memory held (RSS growth) | {:.0} MiB ({:.0} bytes a point) |", held / 1048576.0, held / points.max(1) as f64);
    println!("| frame at 160x48, grid: median / p90 | {:.2} / {:.2} ms |", grid.0, grid.1);
    println!("| frame at 160x48, hardware zoomed: median / p90 | {:.2} / {:.2} ms |", hardware.0, hardware.1);
    println!("| alerts raised | {} |", hub.state.alerts.len());
}
