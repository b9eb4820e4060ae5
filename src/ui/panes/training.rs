//! Training: loss (or lr, or grad norm: its metric cycles) over steps for every run,
//! the selected one bold; a log scale of its own, EMA smoothing as on every chart. The
//! selected run's alerts are vertical markers (as on every `series_chart`).
use ratatui::layout::Rect;
use ratatui::Frame;

use super::{ghost_lines, series_chart, Ctx, Pane, PaneAction, Reaction, SeriesLine};
use crate::metrics::catalog;
use crate::report::format::value;
use crate::ui::layout::PaneId;
use crate::ui::view::ViewState;
use crate::session::SessionState;

/// What the chart plots, in the order `m` cycles, with the y axis title.
const METRICS: [(&str, &str); 3] =
    [(catalog::LOSS, "loss (nats/token)"), (catalog::LR, "learning rate"), (catalog::GRAD_NORM, "grad norm (L2)")];

#[derive(Debug, Default)]
pub struct Training {
    /// Index into `METRICS`.
    pub metric: usize,
    pub log_scale: bool,
}

impl Training {
    pub fn metric(&self) -> &'static str {
        METRICS[self.metric % METRICS.len()].0
    }
}

impl Pane for Training {
    fn act(&mut self, action: PaneAction, _: &SessionState, _: &ViewState) -> Reaction {
        match action {
            PaneAction::NextMetric => self.metric = (self.metric + 1) % METRICS.len(),
            PaneAction::LogScale => self.log_scale = !self.log_scale,
            _ => return Reaction::Ignored,
        }
        Reaction::Changed
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let v = ctx.view;
        let (metric, axis) = METRICS[self.metric % METRICS.len()];
        let mut title = format!("training · {metric}");
        if v.smoothing {
            title.push_str(" · EMA");
        }
        if self.log_scale {
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
        series_chart(frame, inner, ctx, items, axis.into(), self.log_scale, &format!("no {metric} yet"));
    }
}
