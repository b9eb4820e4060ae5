//! Training: loss (or what else the runs have of lr, grad norm, policy and value loss:
//! its metric cycles) over steps for every run,
//! the selected one bold; a log scale of its own, EMA smoothing as on every chart. The
//! selected run's alerts are vertical markers (as on every `series_chart`).
use ratatui::layout::Rect;
use ratatui::Frame;

use super::{ghost_lines, series_chart, Ctx, Pane, PaneAction, Reaction, SeriesLine};
use crate::metrics::catalog;
use crate::report::format::value;
use crate::ui::targets::PaneId;
use crate::ui::view::ViewState;
use crate::session::SessionState;

/// The y axis title of a training metric: its unit where it has one.
fn axis(metric: &str) -> String {
    match metric {
        catalog::LOSS => "loss (nats/token)".into(),
        catalog::LR => "learning rate".into(),
        catalog::GRAD_NORM => "grad norm (L2)".into(),
        m => catalog::info(m).map_or(m, |i| i.label).into(),
    }
}

/// The training metrics some run has, in the catalog's order (an RL run: policy
/// loss, value loss, lr, grad norm); just `loss` while nobody has any.
fn available(state: &SessionState) -> Vec<&'static str> {
    let has = |m: &str| state.runs.iter().any(|r| r.series(m).is_some());
    let list: Vec<&'static str> = catalog::in_pane(catalog::PaneHint::Training).filter(|m| has(m)).collect();
    if list.is_empty() {
        vec![catalog::LOSS]
    } else {
        list
    }
}

#[derive(Debug, Default)]
pub struct Training {
    /// Index into the metrics the session has (`m` cycles).
    pub metric: usize,
    pub log_scale: bool,
}

impl Training {
    pub fn metric(&self, state: &SessionState) -> &'static str {
        let list = available(state);
        list[self.metric % list.len()]
    }
}

impl Pane for Training {
    fn act(&mut self, action: PaneAction, state: &SessionState, _: &ViewState) -> Reaction {
        match action {
            PaneAction::NextMetric => self.metric = (self.metric % available(state).len() + 1) % available(state).len(),
            PaneAction::LogScale => self.log_scale = !self.log_scale,
            _ => return Reaction::Ignored,
        }
        Reaction::Changed
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let v = ctx.view;
        let metric = self.metric(ctx.state);
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
        series_chart(frame, inner, ctx, items, axis(metric), self.log_scale, &format!("no {metric} yet"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::RunRecord;

    #[test]
    fn an_rl_run_shows_its_policy_loss_and_m_cycles_what_it_has() {
        let mut r = RunRecord::new("ppo".into(), "rlhf".into(), "cpu".into(), 10);
        for m in [catalog::POLICY_LOSS, catalog::VALUE_LOSS, catalog::GRAD_NORM, catalog::LR] {
            r.series.entry(m.into()).or_default().push(1, 0.1, 1.0);
        }
        let state = SessionState::new("s".into(), vec![r]);
        let mut t = Training::default();
        assert_eq!(t.metric(&state), catalog::POLICY_LOSS, "no `loss yet` for a run without loss");
        let view = ViewState::default();
        let seen: Vec<_> = (0..4)
            .map(|_| {
                t.act(PaneAction::NextMetric, &state, &view);
                t.metric(&state)
            })
            .collect();
        assert_eq!(seen, vec![catalog::VALUE_LOSS, catalog::LR, catalog::GRAD_NORM, catalog::POLICY_LOSS]);
    }
}

