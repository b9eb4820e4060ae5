//! Training: loss (or lr, or grad norm: `m`) over steps for every run, the selected
//! one bold; EMA smoothing (`e`) and log scale (`L`).
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{line_chart, Ctx, Line};
use crate::report::format::value;
use crate::ui::chart::{reduce, Reduced, Transform};
use crate::ui::layout::PaneId;
use crate::ui::view::SMOOTHING_ALPHA;

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let v = ctx.view;
    let metric = v.training_metric.name();
    let mut title = format!("training · {metric}");
    if v.smoothing {
        title.push_str(" · EMA");
    }
    if v.log_scale {
        title.push_str(" · log");
    }
    if let Some(last) = ctx.state.runs.get(v.selected_run).and_then(|r| r.last(metric)) {
        title.push_str(&format!(" · now {}", value(last)));
    }
    let block = ctx.block(PaneId::Training, title);
    let inner = block.inner(area);
    frame.render_widget(block, area);

    let transform = Transform { ema_alpha: v.smoothing.then_some(SMOOTHING_ALPHA), log10: v.log_scale };
    let columns = inner.width.saturating_sub(8) as usize;
    let reduced: Vec<(usize, Reduced)> = ctx
        .state
        .runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i, reduce(r.series(metric)?, v.window, columns, transform))))
        .collect();
    // Baseline curves (same metric, same run names), drawn first and dimmed.
    let ghosts: Vec<(String, Reduced)> = ctx
        .state
        .baseline
        .iter()
        .flat_map(|b| b.runs.iter())
        .filter(|b| ctx.state.runs.len() == 1 || ctx.state.runs.iter().any(|r| r.name == b.name))
        .filter_map(|b| Some((format!("{} (baseline)", b.name), reduce(b.series(metric)?, v.window, columns, transform))))
        .collect();
    if reduced.is_empty() {
        frame.render_widget(Paragraph::new(Span::styled(format!("no {metric} yet"), ctx.muted())), inner);
        return;
    }
    // The selected run is drawn last so it stays on top.
    let mut order: Vec<&(usize, Reduced)> = reduced.iter().collect();
    order.sort_by_key(|(i, _)| *i == v.selected_run);
    let ghost_style = Style::default().fg(ctx.theme.muted).add_modifier(Modifier::DIM);
    let lines: Vec<Line> = ghosts
        .iter()
        .map(|(label, data)| Line { label: label.clone(), data, style: ghost_style })
        .chain(order.into_iter()
        .map(|(i, data)| {
            let mut style = Style::default().fg(ctx.theme.series_color(*i));
            if *i == v.selected_run {
                style = style.add_modifier(Modifier::BOLD);
            }
            Line { label: ctx.state.runs[*i].name.clone(), data, style }
        }))
        .collect();
    let unit = match metric {
        "loss" => "loss (nats/token)",
        "lr" => "learning rate",
        _ => "grad norm (L2)",
    };
    frame.render_widget(line_chart(&lines, "step", unit.into(), v.log_scale, ctx), inner);
}
