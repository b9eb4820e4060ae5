//! Representation: per-layer dimensionality of the shown run's activations over
//! steps (`d` cycles stable rank, participation ratio, 90%-energy dimension and
//! nuclear norm ratio); one line per measured layer.
use ratatui::layout::Rect;
use ratatui::Frame;

use super::{ghost_lines, series_chart, Ctx, SeriesLine};
use crate::report::format::value;
use crate::session::state::RunRecord;
use crate::ui::layout::PaneId;
use crate::ui::view::REPR_METRICS;

fn has_ndt(r: &RunRecord) -> bool {
    r.series.keys().any(|k| k.starts_with("ndt/"))
}

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let measure = REPR_METRICS[ctx.view.repr_metric % REPR_METRICS.len()];
    let state = ctx.state;
    let shown = state.runs.get(ctx.view.selected_run).filter(|r| has_ndt(r)).map(|r| (ctx.view.selected_run, r)).or_else(|| state.runs.iter().enumerate().find(|(_, r)| has_ndt(r)));
    let Some((run_index, run)) = shown else {
        let block = ctx.block(PaneId::Repr, "representation".into());
        frame.render_widget(block, area);
        return;
    };
    // ndt/{layer}/{measure}, layers in name order.
    let lines: Vec<(String, &crate::metrics::Series)> = run
        .series
        .iter()
        .filter_map(|(k, s)| {
            let rest = k.strip_prefix("ndt/")?;
            let (layer, m) = rest.rsplit_once('/')?;
            (m == measure).then(|| (layer.to_owned(), s))
        })
        .collect();
    let block = ctx.block(PaneId::Repr, format!("representation · {measure} · {}", run.name));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let mut items: Vec<SeriesLine> = Vec::with_capacity(2 * lines.len());
    for (i, (layer, series)) in lines.into_iter().enumerate() {
        // The legend carries each layer's current value.
        let label = format!("{layer} {}", series.last().map_or("–".into(), value));
        items.push(SeriesLine { label, series, color: i, bold: false, ghost: false });
        items.extend(ghost_lines(ctx, &format!("ndt/{layer}/{measure}"), [run_index]).into_iter().map(|g| SeriesLine { label: format!("{layer} ({})", state.baseline_label), ..g }));
    }
    series_chart(frame, inner, ctx, items, measure.replace('_', " "), "no dimensionality measured yet");
}
