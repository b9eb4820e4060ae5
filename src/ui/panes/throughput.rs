//! Throughput: tokens/s (or samples/s, its other mode) of the selected run over steps, with step time, ETA and the
//! utilization of the GPU it runs on, so input-bound vs compute-bound shows at once;
//! whole-run rates after warm-up, peak memory and cost when a price is configured.
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line as TextLine, Span};
use ratatui::widgets::{Paragraph, Sparkline};
use ratatui::Frame;

use super::{ghost_lines, line_chart_marked, marker_lines, Ctx, Line, Pane, PaneAction, Reaction};
use crate::metrics::catalog;
use crate::report::format::{duration, si};
use crate::report::progress::RATE_WINDOW;
use crate::session::state::RankSpread;
use crate::session::{GpuStatus, SessionState};
use crate::ui::chart::{reduce, Transform};
use crate::ui::targets::PaneId;
use crate::ui::view::{ViewState, SMOOTHING_ALPHA};

/// The GPU index of a device name like `cuda:1`.
pub fn gpu_index(device: &str) -> Option<usize> {
    device.strip_prefix("cuda:")?.parse().ok()
}

#[derive(Debug, Default)]
pub struct Throughput {
    /// The chart plots samples/s instead of tokens/s.
    pub samples: bool,
}

impl Pane for Throughput {
    fn act(&mut self, action: PaneAction, _: &SessionState, _: &ViewState) -> Reaction {
        match action {
            PaneAction::NextMode => self.samples = !self.samples,
            _ => return Reaction::Ignored,
        }
        Reaction::Changed
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        render(frame, area, ctx, self.samples)
    }
}

fn render(frame: &mut Frame, area: Rect, ctx: &Ctx, samples: bool) {
    let block = ctx.block(PaneId::Throughput, format!("throughput · {}", ctx.view.window.label()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(run) = ctx.state.runs.get(ctx.view.selected_run) else { return };
    // A job of several ranks (or one of its ranks, selected): their spread.
    let job = run.rank_of.map_or(ctx.view.selected_run, |(job, _)| job);
    let spread = ctx.state.rank_spread(job, RATE_WINDOW);
    let spread_rows = u16::from(spread.is_some());
    let [stats, run_row, spread_row, gpu_row, chart_area] =
        Layout::vertical([Constraint::Length(1), Constraint::Length(1), Constraint::Length(spread_rows), Constraint::Length(1), Constraint::Min(3)]).areas(inner);

    let rate = |c| run.rate(c, Some(RATE_WINDOW)).map_or("-".into(), si);
    let step_ms = run.series(catalog::STEP_TIME_S).map(|s| s.tail(RATE_WINDOW)).filter(|t| !t.is_empty()).map(|t| {
        1e3 * t.iter().sum::<f64>() / t.len() as f64
    });
    let value = |s: String| Span::styled(s, ctx.text());
    let label = |s: &'static str| Span::styled(s, ctx.muted());
    let line = TextLine::from(vec![
        label("tok/s "),
        value(rate(catalog::TOKENS)),
        label("  samples/s "),
        value(rate(catalog::SAMPLES)),
        label("  step "),
        value(step_ms.map_or("-".into(), |ms| format!("{ms:.1} ms"))),
        label("  ETA "),
        value(if run.state.is_over() { "-".into() } else { run.eta_s().map_or("-".into(), duration) }),
    ]);
    frame.render_widget(Paragraph::new(line), stats);

    // Whole-run figures: rates after warm-up, peak memory and, with a price, cost.
    let mut whole = vec![
        label("run avg tok/s "),
        value(run.rate(catalog::TOKENS, None).map_or("-".into(), si)),
        label("  samples/s "),
        value(run.rate(catalog::SAMPLES, None).map_or("-".into(), si)),
    ];
    if let Some(peak) = run.peak_memory_bytes() {
        whole.extend([label("  peak mem "), value(format!("{:.2} GiB", peak / (1u64 << 30) as f64))]);
    }
    if let Some((per_1k, so_far)) = run.cost() {
        whole.extend([label("  $/1k samples "), value(per_1k.map_or("-".into(), |c| format!("{c:.4}"))), label("  cost "), value(format!("${so_far:.2}"))]);
    }
    frame.render_widget(Paragraph::new(TextLine::from(whole)), run_row);
    if let Some(spread) = spread {
        let mut row = vec![label("ranks "), value(spread.ranks.to_string())];
        row.extend(spread_spans(spread).into_iter().flat_map(|(l, v)| [label(l), value(v)]));
        frame.render_widget(Paragraph::new(TextLine::from(row)), spread_row);
    }

    // GPU utilization next to throughput: low utilization with low tokens/s means
    // the loop is waiting on input or the host, not on the GPU.
    match (&ctx.state.gpu, gpu_index(&run.device)) {
        (GpuStatus::Available { .. }, Some(i)) => {
            let series = ctx.state.telemetry.get(&catalog::gpu(i).util_pct());
            let now = series.and_then(|s| s.last()).map_or("-".into(), |u| format!("{u:.0}%"));
            let [l, spark] = Layout::horizontal([Constraint::Length(16), Constraint::Min(1)]).areas(gpu_row);
            frame.render_widget(Paragraph::new(TextLine::from(vec![label("GPU util "), value(now)])), l);
            if let Some(s) = series {
                let data: Vec<u64> = s.tail(spark.width as usize).iter().map(|v| v.round().max(0.0) as u64).collect();
                frame.render_widget(Sparkline::default().data(&data).max(100).style(Style::default().fg(ctx.theme.accent)), spark);
            }
        }
        (GpuStatus::Unavailable { reason }, _) => {
            frame.render_widget(Paragraph::new(TextLine::from(vec![label("GPU util "), Span::styled(format!("n/a: {reason}"), ctx.muted())])), gpu_row);
        }
        _ => {
            let text = if run.device == "cpu" { "n/a: this run trains on the CPU" } else { "waiting for telemetry" };
            frame.render_widget(Paragraph::new(TextLine::from(vec![label("GPU util "), Span::styled(text, ctx.muted())])), gpu_row);
        }
    }

    let rate = if samples { catalog::SAMPLES_PER_S } else { catalog::TOKENS_PER_S };
    // A run that logs no rate (a progress bar's postfix, a bare script) still
    // shows how its step time moves (a job's own run has no series: its ranks' rate).
    let metric = if run.series(rate).is_none() && run.series(catalog::STEP_TIME_S).is_some() { catalog::STEP_TIME_S } else { rate };
    let unit = catalog::info(metric).map_or(metric, |m| m.label);
    let transform = Transform { ema_alpha: ctx.view.smoothing.then_some(SMOOTHING_ALPHA), log10: false };
    let columns = chart_area.width.saturating_sub(8) as usize;
    // A job's own run has no steps: its ranks are drawn, one line each.
    let ranks = ctx.state.ranks_of(ctx.view.selected_run);
    if !ranks.is_empty() {
        let reduced: Vec<(String, crate::ui::chart::Reduced)> =
            ranks.iter().filter_map(|(_, r)| Some((r.name.clone(), reduce(r.series(metric)?, ctx.view.window, columns, transform)))).collect();
        let lines: Vec<Line> = reduced.iter().enumerate().map(|(i, (name, data))| Line { label: name.clone(), data, style: Style::default().fg(ctx.theme.series_color(i)) }).collect();
        let markers = marker_lines(&ctx.alert_markers(ctx.view.selected_run), &lines);
        frame.render_widget(line_chart_marked(&lines, &markers, "step", unit.into(), false, ctx), chart_area);
        return;
    }
    let Some(series) = run.series(metric) else {
        let text = if run.step > 0 { "no throughput logged (tokens, samples or step time)" } else { "no steps yet" };
        frame.render_widget(Paragraph::new(Span::styled(text, ctx.muted())), chart_area);
        return;
    };
    let reduced = reduce(series, ctx.view.window, columns, transform);
    // The baseline's rate at the same steps, dimmed underneath.
    let ghost = ghost_lines(ctx, metric, [ctx.view.selected_run]).into_iter().next().map(|g| (g.label, reduce(g.series, ctx.view.window, columns, transform)));
    let mut lines = Vec::with_capacity(2);
    if let Some((label, data)) = &ghost {
        lines.push(Line { label: label.clone(), data, style: Style::default().fg(ctx.theme.muted).add_modifier(ratatui::style::Modifier::DIM) });
    }
    lines.push(Line { label: run.name.clone(), data: &reduced, style: Style::default().fg(ctx.theme.series_color(0)) });
    let markers = marker_lines(&ctx.alert_markers(ctx.view.selected_run), &lines);
    frame.render_widget(line_chart_marked(&lines, &markers, "step", unit.into(), false, ctx), chart_area);
}

/// The spread row's parts: slowest against fastest rank, by tokens/s and by step
/// time, each as how much slower the slowest is.
fn spread_spans(spread: RankSpread) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(s) = spread.tokens_per_s {
        out.push(("  tok/s spread ", format!("-{:.1}% (rank {} {} vs rank {} {})", 100.0 * s.fraction, s.slow.0, si(s.slow.1), s.fast.0, si(s.fast.1))));
    }
    if let Some(s) = spread.step_time {
        let ms = |speed: f64| format!("{:.1} ms", 1e3 / speed);
        // A step time is read as how much longer the slowest rank's step takes.
        let longer = 100.0 * (s.fast.1 / s.slow.1 - 1.0);
        out.push(("  step time spread ", format!("+{longer:.1}% (rank {} {} vs rank {} {})", s.slow.0, ms(s.slow.1), s.fast.0, ms(s.fast.1))));
    }
    if out.is_empty() {
        out.push(("  spread ", "-".into()));
    }
    out
}
