//! Representation: per-layer dimensionality of the shown run's activations over
//! steps (`d` cycles stable rank, participation ratio, 90%-energy dimension and
//! nuclear norm ratio); one line per measured layer.
use ratatui::layout::Rect;
use ratatui::Frame;

use super::{series_chart, Ctx, SeriesLine};
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
    let shown = state.runs.get(ctx.view.selected_run).filter(|r| has_ndt(r)).or_else(|| state.runs.iter().find(|r| has_ndt(r)));
    let Some(run) = shown else {
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
    let items = lines
        .into_iter()
        .enumerate()
        .map(|(i, (layer, series))| {
            // The legend carries each layer's current value.
            let label = format!("{layer} {}", series.last().map_or("–".into(), value));
            SeriesLine { label, series, color: i, bold: false, ghost: false }
        })
        .collect();
    series_chart(frame, inner, ctx, items, measure.replace('_', " "), "no dimensionality measured yet");
}
