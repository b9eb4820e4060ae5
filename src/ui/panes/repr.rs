//! Representation: per-layer dimensionality of the shown run's activations over
//! steps (cycling the catalog's measures: stable rank, participation ratio,
//! 90%-energy dimension, nuclear norm ratio); one line per measured layer.
use ratatui::layout::Rect;
use ratatui::Frame;

use super::{ghost_lines, series_chart, Ctx, Pane, PaneAction, Reaction, SeriesLine};
use crate::metrics::catalog::{self, NdtLayer, NDT_MEASURES};
use crate::report::format::value;
use crate::session::state::RunRecord;
use crate::session::SessionState;
use crate::ui::targets::PaneId;
use crate::ui::view::ViewState;

fn has_ndt(r: &RunRecord) -> bool {
    r.series.keys().any(|k| catalog::is_ndt_metric(k))
}

#[derive(Debug, Default)]
pub struct Representation {
    /// Index into `NDT_MEASURES`.
    pub measure: usize,
}

impl Pane for Representation {
    fn visible(&self, state: &SessionState) -> bool {
        state.runs.iter().any(has_ndt)
    }

    fn act(&mut self, action: PaneAction, _: &SessionState, _: &ViewState) -> Reaction {
        match action {
            PaneAction::NextMetric => self.measure = (self.measure + 1) % NDT_MEASURES.len(),
            _ => return Reaction::Ignored,
        }
        Reaction::Changed
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let measure = NDT_MEASURES[self.measure % NDT_MEASURES.len()];
        let state = ctx.state;
        let selected = ctx.view.selected_run;
        let shown = state.runs.get(selected).filter(|r| has_ndt(r)).map(|r| (selected, r)).or_else(|| state.runs.iter().enumerate().find(|(_, r)| has_ndt(r)));
        let Some((run_index, run)) = shown else {
            let block = ctx.block(PaneId::Repr, "representation".into());
            frame.render_widget(block, area);
            return;
        };
        // One line per layer that has this measure, layers in name order.
        let lines: Vec<(usize, &crate::metrics::Series)> = run
            .series
            .iter()
            .filter_map(|(k, s)| {
                let (layer, m) = NdtLayer::parse(k)?;
                (m == measure).then_some((layer, s))
            })
            .collect();
        let block = ctx.block(PaneId::Repr, format!("representation · {measure} · {}", run.name));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let mut items: Vec<SeriesLine> = Vec::with_capacity(2 * lines.len());
        for (i, (layer, series)) in lines.into_iter().enumerate() {
            // The legend carries each layer's current value.
            let label = format!("L{layer} {}", series.last().map_or("–".into(), value));
            items.push(SeriesLine { label, series, color: i, bold: false, ghost: false });
            let ghosts = ghost_lines(ctx, &catalog::ndt(layer).measure(measure), [run_index]);
            items.extend(ghosts.into_iter().map(|g| SeriesLine { label: format!("L{layer} ({})", state.baseline_label), ..g }));
        }
        series_chart(frame, inner, ctx, items, measure.replace('_', " "), false, "no dimensionality measured yet");
    }
}
