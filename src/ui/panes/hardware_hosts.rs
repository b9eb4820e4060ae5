//! The hardware pane's remote machines (scraped, read from Prometheus, or attached
//! rlmons), grouped by host. Where the pane has room, each GPU gets one row under
//! its host, in as many columns as the width holds (8 machines of 8 GPUs fit a
//! zoomed pane at 160x48); where it has not, each machine gets one row with its
//! GPUs' utilizations. A host that stopped answering keeps its last figures, dimmed,
//! with how long ago they were taken.
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{bar, Ctx};
use crate::metrics::catalog::{self, host};
use crate::metrics::Series;
use crate::telemetry::scrape::RemoteHost;

const GIB: f64 = (1u64 << 30) as f64;
/// Width of one column of per-GPU rows (a row is about 48 cells).
const COLUMN_WIDTH: u16 = 52;
const GPU_BAR_CELLS: usize = 8;
/// Width of one column of per-machine rows (8 GPUs' utilizations fit).
const HOST_COLUMN_WIDTH: u16 = 79;

/// One remote GPU's latest figures.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct GpuRow {
    pub index: usize,
    pub util_pct: Option<f64>,
    pub mem_used: Option<f64>,
    pub mem_total: Option<f64>,
    pub power_w: Option<f64>,
    pub temp_c: Option<f64>,
}

/// One remote machine: its age and its GPUs, by index.
pub struct HostGroup {
    pub host: RemoteHost,
    pub gpus: Vec<GpuRow>,
}

/// Every remote host with its GPUs (from the `HOST/gpuN/...` series).
pub fn host_groups(ctx: &Ctx) -> Vec<HostGroup> {
    let t = &ctx.state.telemetry;
    crate::telemetry::scrape::remote_hosts(ctx.state)
        .into_iter()
        .map(|h| {
            let prefix = catalog::remote(&h.host, "");
            let mut gpus: Vec<GpuRow> = Vec::new();
            for (name, series) in t.range(prefix.clone()..).take_while(|(name, _)| name.starts_with(&prefix)) {
                let local = &name[prefix.len()..];
                let Some((i, _)) = catalog::Gpu::parse(local) else { continue };
                let gpu = catalog::gpu(i);
                let row = match gpus.iter_mut().find(|g| g.index == i) {
                    Some(r) => r,
                    None => {
                        gpus.push(GpuRow { index: i, ..Default::default() });
                        gpus.last_mut().expect("just pushed")
                    }
                };
                let value = series.last();
                if local == gpu.util_pct() {
                    row.util_pct = value;
                } else if local == gpu.mem_used_bytes() {
                    row.mem_used = value;
                } else if local == gpu.mem_total_bytes() {
                    row.mem_total = value;
                } else if local == gpu.power_w() {
                    row.power_w = value;
                } else if local == gpu.temp_c() {
                    row.temp_c = value;
                }
            }
            gpus.sort_by_key(|g| g.index);
            HostGroup { host: h, gpus }
        })
        .collect()
}

/// A machine's own figures: name, CPU, RAM, and its age when stale.
fn host_spans<'a>(ctx: &Ctx, h: &RemoteHost) -> Vec<Span<'a>> {
    let t = &ctx.state.telemetry;
    let figure = |local: &str| t.get(&catalog::remote(&h.host, local)).and_then(Series::last);
    let mut spans = vec![Span::styled(format!("{:<8} ", h.host), ctx.muted())];
    let cpu = figure(host::CPU_PCT).map_or("-".into(), |c| format!("{c:.0}%"));
    spans.push(Span::styled(format!("CPU {cpu}"), ctx.text()));
    if let (Some(u), Some(total)) = (figure(host::MEM_USED_BYTES), figure(host::MEM_TOTAL_BYTES)) {
        spans.push(Span::styled(format!("  RAM {:.1}/{:.1} GiB", u / GIB, total / GIB), ctx.text()));
    }
    spans
}

fn stale_span<'a>(ctx: &Ctx, h: &RemoteHost) -> Option<Span<'a>> {
    h.stale.then(|| Span::styled(format!("  stale {:.0}s", h.age_s), Style::default().fg(ctx.theme.warn)))
}

/// One row per machine: its figures and its GPUs' utilizations.
pub fn host_rows<'a>(ctx: &Ctx, groups: &[HostGroup]) -> Vec<Line<'a>> {
    groups
        .iter()
        .map(|g| {
            let mut spans = host_spans(ctx, &g.host);
            let utils: Vec<String> = g.gpus.iter().filter_map(|r| r.util_pct).map(|u| format!("{u:.0}")).collect();
            if !utils.is_empty() {
                spans.push(Span::styled(format!("  GPUs {}: {}%", utils.len(), utils.join(" ")), ctx.text()));
            }
            spans.extend(stale_span(ctx, &g.host));
            Line::from(spans)
        })
        .collect()
}

/// One GPU's row: index, utilization bar, memory, power, temperature.
fn gpu_line<'a>(ctx: &Ctx, g: &GpuRow, stale: bool) -> Line<'a> {
    let t = ctx.theme;
    let text = if stale { ctx.muted() } else { ctx.text() };
    let mut spans = vec![Span::styled(format!("  gpu{:<2} ", g.index), ctx.muted())];
    match g.util_pct {
        Some(u) => {
            let color = if stale { t.muted } else if u < 30.0 { t.warn } else { t.ok };
            spans.push(Span::styled(bar(u / 100.0, GPU_BAR_CELLS), Style::default().fg(color)));
            spans.push(Span::styled(format!(" {u:>3.0}%"), text));
        }
        None => spans.push(Span::styled(format!("{:<w$}", " -", w = GPU_BAR_CELLS + 5), ctx.muted())),
    }
    let mem = match (g.mem_used, g.mem_total) {
        (Some(u), Some(total)) => format!("  {:>4.1}/{:.0}G", u / GIB, total / GIB),
        (Some(u), None) => format!("  {:>4.1}G", u / GIB),
        _ => "  -".into(),
    };
    // Memory nearly full is what fails a job first: coloured as it fills.
    let mem_style = match (g.mem_used, g.mem_total) {
        (Some(u), Some(total)) if !stale && total > 0.0 && u / total >= 0.95 => Style::default().fg(t.critical),
        (Some(u), Some(total)) if !stale && total > 0.0 && u / total >= 0.85 => Style::default().fg(t.warn),
        _ => text,
    };
    spans.push(Span::styled(format!("{mem:<13}"), mem_style));
    spans.push(Span::styled(g.power_w.map_or("    -".into(), |p| format!("{p:>4.0}W")), text));
    spans.push(Span::styled(g.temp_c.map_or("    -".into(), |c| format!(" {c:>3.0}°C")), text));
    Line::from(spans)
}

/// Rows of per-GPU columns for `groups`: each machine's row, then its GPUs; a
/// machine is not split across columns. `None` when they do not fit `area`.
fn gpu_columns<'a>(ctx: &Ctx, groups: &[HostGroup], area: Rect) -> Option<Vec<Vec<Line<'a>>>> {
    let columns = (area.width / COLUMN_WIDTH).max(1) as usize;
    let height = area.height as usize;
    let mut out: Vec<Vec<Line>> = vec![Vec::new()];
    for g in groups {
        let rows = 1 + g.gpus.len();
        if out.last().is_some_and(|c| !c.is_empty() && c.len() + rows > height) {
            out.push(Vec::new());
        }
        if out.len() > columns || rows > height {
            return None;
        }
        let column = out.last_mut()?;
        let mut head = host_spans(ctx, &g.host);
        head.extend(stale_span(ctx, &g.host));
        column.push(Line::from(head));
        column.extend(g.gpus.iter().map(|r| gpu_line(ctx, r, g.host.stale)));
    }
    Some(out)
}

/// Draws the remote machines in `area`: one row per GPU where that fits, one row
/// per machine otherwise (and a count of those left out when even that does not).
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx, groups: &[HostGroup]) {
    if area.height == 0 || groups.is_empty() {
        return;
    }
    let any_gpu = groups.iter().any(|g| !g.gpus.is_empty());
    if let Some(columns) = any_gpu.then(|| gpu_columns(ctx, groups, area)).flatten() {
        let areas = Layout::horizontal(vec![Constraint::Length(COLUMN_WIDTH); columns.len()]).split(area);
        for (lines, column) in columns.into_iter().zip(areas.iter()) {
            frame.render_widget(Paragraph::new(lines), *column);
        }
        return;
    }
    // A row per machine, in as many columns as the width holds.
    let mut lines = host_rows(ctx, groups);
    let columns = (area.width / HOST_COLUMN_WIDTH).max(1) as usize;
    let room = area.height as usize * columns;
    if lines.len() > room {
        let left_out = lines.len() - room + 1;
        lines.truncate(room - 1);
        lines.push(Line::from(Span::styled(format!("… {left_out} more hosts (Enter zooms this pane)"), ctx.muted())));
    }
    let used = lines.len().div_ceil(area.height as usize).max(1);
    let width = if used == 1 { area.width } else { HOST_COLUMN_WIDTH };
    let areas = Layout::horizontal(vec![Constraint::Length(width); used]).split(area);
    let mut rest = lines.into_iter();
    for column in areas.iter() {
        let part: Vec<Line> = rest.by_ref().take(area.height as usize).collect();
        frame.render_widget(Paragraph::new(part), *column);
    }
}
