//! Hardware: per GPU utilization, VRAM, power, temperature and SM clock; host CPU and
//! memory; this process's memory; history sparklines. Missing GPU telemetry is shown
//! with its reason, never as zeros.
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline};
use ratatui::Frame;

use super::{bar, Ctx, Pane};
use crate::metrics::catalog::{self, host};
use crate::metrics::Series;
use crate::report::format::si;
use crate::session::{GpuStatus, SessionState};
use crate::ui::targets::PaneId;

const GIB: f64 = (1u64 << 30) as f64;
const BAR_CELLS: usize = 10;

fn last(ctx: &Ctx, key: &str) -> Option<f64> {
    ctx.state.telemetry.get(key).and_then(Series::last)
}

pub(super) fn gib(v: f64) -> String {
    format!("{:.1}", v / GIB)
}

/// GPU memory of run `run`'s job (its process tree), over every GPU; `None` when
/// none is attributed (not a process-tree run, or no NVML).
pub(super) fn job_gpu_memory(ctx: &Ctx, run: usize) -> Option<f64> {
    let GpuStatus::Available { gpus, .. } = &ctx.state.gpu else { return None };
    gpus.iter().filter_map(|g| fresh(ctx, &catalog::gpu(g.index as usize).run_mem_bytes(run))).reduce(|a, b| a + b)
}

/// The last sample of a telemetry series, if it is from the last local sampling
/// round (a job's series stops when its processes leave the GPU; scraped hosts
/// keep their own time).
fn fresh(ctx: &Ctx, key: &str) -> Option<f64> {
    let series = ctx.state.telemetry.get(key)?;
    let local = ctx.state.telemetry.iter().filter(|(name, _)| catalog::parse_remote(name).is_none());
    let newest = local.filter_map(|(_, s)| s.last_time()).fold(f64::MIN, f64::max);
    (series.last_time()? >= newest).then(|| series.last()).flatten()
}

/// A row: label, bar, figures; the bar turns warn/critical as it fills.
fn meter<'a>(ctx: &Ctx, label: String, fraction: Option<f64>, figures: String) -> Line<'a> {
    let t = ctx.theme;
    let mut spans = vec![Span::styled(format!("{label:<9}"), ctx.muted())];
    match fraction {
        Some(f) => {
            let color = if f >= 0.95 { t.critical } else if f >= 0.85 { t.warn } else { t.ok };
            spans.push(Span::styled(bar(f, BAR_CELLS), Style::default().fg(color)));
            spans.push(Span::styled(format!(" {figures}"), ctx.text()));
        }
        None => spans.push(Span::styled(figures, ctx.muted())),
    }
    Line::from(spans)
}

fn sparkline_row(frame: &mut Frame, area: Rect, ctx: &Ctx, label: &str, series: Option<&Series>, max: u64) {
    let [l, s] = Layout::horizontal([Constraint::Length(9), Constraint::Min(1)]).areas(area);
    frame.render_widget(Paragraph::new(Span::styled(label.to_owned(), ctx.muted())), l);
    if let Some(series) = series {
        let data: Vec<u64> = series.tail(s.width as usize).iter().map(|v| v.round().max(0.0) as u64).collect();
        frame.render_widget(Sparkline::default().data(&data).max(max).style(Style::default().fg(ctx.theme.accent)), s);
    }
}

/// GPU and host telemetry; no state of its own.
pub struct Hardware;

impl Pane for Hardware {
    /// Without a GPU and other machines: the GPU's one line, the host's lines and
    /// its CPU sparkline (the layout gives the rest of the column to a chart).
    fn rows(&self, state: &SessionState) -> Option<u16> {
        let local_only = !state.telemetry.keys().any(|name| catalog::parse_remote(name).is_some());
        (!matches!(state.gpu, GpuStatus::Available { .. }) && local_only).then_some(2 + 1 + HOST_LINES + HOST_SPARKS)
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        render(frame, area, ctx)
    }
}

/// The host's lines under the GPUs': CPU, RAM, rlmon's memory.
const HOST_LINES: u16 = 3;
/// The host's sparklines: CPU.
const HOST_SPARKS: u16 = 1;

fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let block = ctx.block(PaneId::Hardware, "hardware".into());
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let mut lines: Vec<Line> = Vec::new();
    let mut sparks: Vec<(String, String, u64)> = Vec::new();
    match &ctx.state.gpu {
        GpuStatus::Available { gpus, .. } => {
            for g in gpus {
                let gpu = catalog::gpu(g.index as usize);
                let util = last(ctx, &gpu.util_pct());
                lines.push(meter(ctx, format!("gpu{} util", g.index), util.map(|u| u / 100.0), util.map_or("-".into(), |u| format!("{u:.0}%  {}", g.name))));
                let used = last(ctx, &gpu.mem_used_bytes());
                let total = last(ctx, &gpu.mem_total_bytes()).unwrap_or(g.mem_total_bytes as f64);
                lines.push(meter(ctx, "  VRAM".into(), used.map(|u| u / total.max(1.0)), used.map_or("-".into(), |u| format!("{}/{} GiB", gib(u), gib(total)))));
                let figure = |key: String, unit: &str| last(ctx, &key).map_or("-".into(), |v| format!("{v:.0} {unit}"));
                lines.push(Line::from(vec![
                    Span::styled("  power  ", ctx.muted()),
                    Span::styled(figure(gpu.power_w(), "W"), ctx.text()),
                    Span::styled("  temp ", ctx.muted()),
                    Span::styled(figure(gpu.temp_c(), "°C"), ctx.text()),
                    Span::styled("  SM ", ctx.muted()),
                    Span::styled(figure(gpu.sm_clock_mhz(), "MHz"), ctx.text()),
                    Span::styled("  rlmon ", ctx.muted()),
                    Span::styled(last(ctx, &gpu.proc_mem_bytes()).map_or("-".into(), |b| format!("{} GiB", gib(b))), ctx.text()),
                ]));
                // The jobs' share of this GPU's memory, apart from the rest.
                let jobs: Vec<(String, f64)> = ctx.state.runs.iter().enumerate().filter_map(|(i, r)| Some((r.name.clone(), fresh(ctx, &gpu.run_mem_bytes(i))?))).collect();
                if !jobs.is_empty() {
                    let mine: f64 = jobs.iter().map(|j| j.1).sum();
                    let mut spans = vec![Span::styled("  jobs   ", ctx.muted())];
                    for (name, bytes) in &jobs {
                        spans.push(Span::styled(format!("{name} {} GiB  ", gib(*bytes)), ctx.text()));
                    }
                    let other = used.map_or("-".into(), |u| format!("{} GiB", gib((u - mine).max(0.0))));
                    spans.push(Span::styled(format!("other {other}"), ctx.muted()));
                    lines.push(Line::from(spans));
                }
                sparks.push((format!("gpu{} %", g.index), gpu.util_pct(), 100));
            }
        }
        GpuStatus::Unavailable { reason } => {
            lines.push(Line::from(vec![Span::styled("GPU      ", ctx.muted()), Span::styled(format!("none: {reason}"), Style::default().fg(ctx.theme.warn))]));
        }
        GpuStatus::Unknown => lines.push(Line::from(Span::styled("GPU      probing…", ctx.muted()))),
    }
    let cpu = last(ctx, host::CPU_PCT);
    lines.push(meter(ctx, "host CPU".into(), cpu.map(|c| c / 100.0), cpu.map_or("-".into(), |c| format!("{c:.0}%"))));
    let used = last(ctx, host::MEM_USED_BYTES);
    let total = last(ctx, host::MEM_TOTAL_BYTES);
    let fraction = used.zip(total).map(|(u, t)| u / t.max(1.0));
    lines.push(meter(ctx, "host RAM".into(), fraction, used.zip(total).map_or("-".into(), |(u, t)| format!("{}/{} GiB", gib(u), gib(t)))));
    let rss = last(ctx, host::PROC_RSS_BYTES);
    lines.push(Line::from(vec![Span::styled("rlmon RSS", ctx.muted()), Span::styled(rss.map_or(" -".into(), |b| format!(" {}B", si(b))), ctx.text())]));
    sparks.push(("CPU %".into(), host::CPU_PCT.into(), 100));
    // Other machines take the room under this one's figures (its sparklines give way).
    let hosts = super::hardware_hosts::host_groups(ctx);
    if !hosts.is_empty() {
        let local_height = (lines.len() as u16).min(inner.height);
        let [local_area, hosts_area] = Layout::vertical([Constraint::Length(local_height), Constraint::Min(0)]).areas(inner);
        frame.render_widget(Paragraph::new(lines), local_area);
        super::hardware_hosts::render(frame, hosts_area, ctx, &hosts);
        return;
    }

    let text_height = (lines.len() as u16).min(inner.height);
    let [text_area, spark_area] = Layout::vertical([Constraint::Length(text_height), Constraint::Min(0)]).areas(inner);
    frame.render_widget(Paragraph::new(lines), text_area);
    let rows = Layout::vertical(vec![Constraint::Length(1); sparks.len()]).split(spark_area);
    for ((label, key, max), row) in sparks.iter().zip(rows.iter()) {
        sparkline_row(frame, *row, ctx, label, ctx.state.telemetry.get(key), *max);
    }
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use crate::metrics::catalog;
    use crate::session::{Event, GpuInfo, GpuStatus, Hub, RunRecord, SessionState};
    use crate::ui::screen::Screen;
    use crate::ui::theme::Theme;

    /// A hub with one run on one H100, `used` bytes of it in use and `job` of them
    /// attributed to the run's process tree.
    fn one_run_on_a_gpu(run: RunRecord, used: u64, job: u64) -> Hub {
        let mut hub = Hub::new(SessionState::new("s".into(), vec![run]));
        let gpus = vec![GpuInfo { index: 0, name: "H100".into(), mem_total_bytes: 80 << 30 }];
        hub.apply(Event::GpuStatus(GpuStatus::Available { driver: "550".into(), gpus }), 0.0);
        let gpu = catalog::gpu(0);
        let values = vec![(gpu.mem_used_bytes().into(), used as f64), (gpu.run_mem_bytes(0).into(), job as f64)];
        hub.apply(Event::Telemetry { time_s: 1.0, values }, 1.0);
        hub
    }

    /// The whole screen at 160x48, as text.
    fn screen(hub: &Hub) -> String {
        let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
        terminal.draw(|f| crate::ui::draw(f, &hub.state, &Screen::default(), &Theme::built_in("default").unwrap())).unwrap();
        terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect()
    }

    /// The first row of the runs list, from its name on.
    fn first_run_row(text: &str) -> String {
        text.split("1  ").nth(1).unwrap_or("").chars().take(60).collect()
    }

    #[test]
    fn a_jobs_gpu_memory_is_shown_apart_from_the_rest() {
        let mut hub = one_run_on_a_gpu(RunRecord::new("job".into(), "attach".into(), "attached".into(), 0), 10 << 30, 6 << 30);
        let text = screen(&hub);
        assert!(text.contains("jobs   job 6.0 GiB  other 4.0 GiB"), "hardware pane");
        // The runs list's device column: a job rlmon did not start shows its GPU
        // memory, in the hardware pane's unit.
        let row = first_run_row(&text);
        assert!(row.starts_with("job (attach)") && row.contains(" 6.0 GiB "), "runs list, device column: {row}");
        // The job left the GPU: its last sample is stale, nothing is attributed.
        hub.apply(Event::Telemetry { time_s: 2.0, values: vec![(catalog::gpu(0).mem_used_bytes().into(), 1.0)] }, 2.0);
        assert!(!screen(&hub).contains("jobs   job"));
    }

    #[test]
    fn a_run_rlmon_trains_keeps_its_device_in_the_runs_list() {
        let hub = one_run_on_a_gpu(RunRecord::new("tiny".into(), "lm".into(), "cuda:0".into(), 100), 1 << 30, 885 << 20);
        let text = screen(&hub);
        let row = first_run_row(&text);
        assert!(row.starts_with("tiny (lm)") && row.contains(" cuda:0 "), "runs list, device column: {row}");
        assert!(text.contains("jobs   tiny 0.9 GiB"), "the hardware pane still has its memory");
    }

    #[test]
    fn without_a_gpu_the_pane_asks_for_its_rows_and_shows_them_all() {
        use crate::ui::targets::PaneId;
        use crate::ui::panes::Pane;
        let mut hub = Hub::new(SessionState::new("s".into(), vec![RunRecord::new("tiny".into(), "lm".into(), "cpu".into(), 100)]));
        hub.apply(Event::GpuStatus(GpuStatus::Unavailable { reason: "NVML unavailable: libnvidia-ml.so.1 not found".into() }), 0.0);
        let values = vec![(catalog::host::CPU_PCT.into(), 40.0), (catalog::host::MEM_USED_BYTES.into(), 6e9), (catalog::host::MEM_TOTAL_BYTES.into(), 16e9)];
        hub.apply(Event::Telemetry { time_s: 1.0, values }, 1.0);
        let rows = super::Hardware.rows(&hub.state).expect("no GPU: a few rows");
        let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
        terminal.draw(|f| crate::ui::draw(f, &hub.state, &Screen::default(), &Theme::built_in("default").unwrap())).unwrap();
        let screen = Screen::default().areas(ratatui::layout::Rect::new(0, 0, 160, 48), &hub.state);
        let area = screen.panes.iter().find(|(p, _)| *p == PaneId::Hardware).unwrap().1;
        assert_eq!(area.height, rows);
        let text = crate::ui::panes::test_support::rows(&terminal);
        let inside: Vec<String> = text[area.y as usize + 1..(area.bottom() - 1) as usize].iter().map(|r| r.chars().skip(area.x as usize).collect()).collect();
        assert!(inside.first().is_some_and(|l| l.contains("GPU      none: NVML")), "{inside:?}");
        assert!(inside.last().is_some_and(|l| l.contains("CPU %")), "its last row, the CPU sparkline: {inside:?}");
        assert!(inside.iter().all(|l| l.trim_start_matches('│').trim().len() > 1), "no empty row: {inside:?}");
        // With a GPU (or another machine's figures) it takes what the grid gives it.
        let gpus = vec![GpuInfo { index: 0, name: "H100".into(), mem_total_bytes: 80 << 30 }];
        hub.apply(Event::GpuStatus(GpuStatus::Available { driver: "550".into(), gpus }), 2.0);
        assert_eq!(super::Hardware.rows(&hub.state), None);
    }

    #[test]
    fn scraped_hosts_get_a_compact_row_and_say_when_they_are_stale() {
        let runs = vec![RunRecord::new("job".into(), "attach".into(), "attached".into(), 0)];
        let mut hub = Hub::new(SessionState::new("s".into(), runs));
        let gpus = vec![GpuInfo { index: 0, name: "H100".into(), mem_total_bytes: 80 << 30 }];
        hub.apply(Event::GpuStatus(GpuStatus::Available { driver: "550".into(), gpus }), 0.0);
        let gpu = catalog::gpu(0);
        let local = vec![(gpu.mem_used_bytes().into(), (10u64 << 30) as f64), (gpu.run_mem_bytes(0).into(), (6u64 << 30) as f64)];
        hub.apply(Event::Telemetry { time_s: 1.0, values: local }, 1.0);
        let remote = |local: &str| catalog::remote("node7", local).into();
        let values = vec![
            (remote(catalog::host::CPU_PCT), 45.0),
            (remote(catalog::host::MEM_USED_BYTES), (12u64 << 30) as f64),
            (remote(catalog::host::MEM_TOTAL_BYTES), (64u64 << 30) as f64),
            (remote(&catalog::gpu(1).util_pct()), 12.0),
            (remote(&catalog::gpu(0).util_pct()), 97.0),
        ];
        // A scrape later than the local round does not make the local figures stale.
        hub.apply(Event::Telemetry { time_s: 1.5, values }, 1.5);
        let draw = |hub: &Hub| {
            let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
            terminal.draw(|f| crate::ui::draw(f, &hub.state, &Screen::default(), &Theme::built_in("default").unwrap())).unwrap();
            terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect::<String>()
        };
        let text = draw(&hub);
        // Room for a row per GPU under the machine's own row.
        assert!(text.contains("node7    CPU 45%  RAM 12.0/64.0 GiB"), "{text}");
        assert!(text.contains("  gpu0  ▰▰▰▰▰▰▰▰  97%"), "{text}");
        assert!(text.contains("  gpu1  ▰▱▱▱▱▱▱▱  12%"), "{text}");
        assert!(text.contains("jobs   job 6.0 GiB"), "local job memory still shown");
        assert!(text.contains("hosts 1 · 0 stale"), "header: {text}");
        assert!(!text.contains("  stale "), "no host marked stale: {text}");
        hub.apply(Event::Log { run: None, level: crate::session::LogLevel::Info, message: "later".into() }, 30.0);
        let text = draw(&hub);
        assert!(text.contains("node7    CPU 45%") && text.contains("stale 28s"), "last figures kept, with their age: {text}");
        assert!(text.contains("hosts 1 · 1 stale"), "header: {text}");
        // Too many GPUs for the pane: one compact row per machine.
        let many: Vec<(crate::metrics::MetricName, f64)> = (0..20).map(|i| (remote(&catalog::gpu(i).util_pct()), 50.0 + i as f64)).collect();
        hub.apply(Event::Telemetry { time_s: 30.0, values: many }, 30.0);
        let text = draw(&hub);
        assert!(text.contains("node7    CPU 45%  RAM 12.0/64.0 GiB  GPUs 20: 50 51 52 53 54 55 56 57 58"), "{text}");
    }
}
