//! Training: loss (or lr, or grad norm: `m`) over steps for every run, the selected
//! one bold; EMA smoothing (`e`) and log scale (`L`). The selected run's alerts
//! are vertical markers (as on every `series_chart`).
use ratatui::layout::Rect;
use ratatui::Frame;

use super::{ghost_lines, series_chart, Ctx, SeriesLine};
use crate::report::format::value;
use crate::ui::layout::PaneId;

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

    let mut items: Vec<SeriesLine> = ctx
        .state
        .runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some(SeriesLine { label: r.name.clone(), series: r.series(metric)?, color: i, bold: i == v.selected_run, ghost: false }))
        .collect();
    items.extend(ghost_lines(ctx, metric, 0..ctx.state.runs.len()));
    let unit = match metric {
        "loss" => "loss (nats/token)",
        "lr" => "learning rate",
        _ => "grad norm (L2)",
    };
    series_chart(frame, inner, ctx, items, unit.into(), &format!("no {metric} yet"));
}
