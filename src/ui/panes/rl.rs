//! RL health: one RL metric over steps for every run that has it (cycling the
//! catalog's RL metrics: reward, KL, entropy, clip fraction, response length), and
//! the shown run's current values with units, KL next to its penalty coefficient.
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{ghost_lines, series_chart, Ctx, Pane, PaneAction, Reaction, SeriesLine};
use crate::metrics::catalog::{self, PaneHint};
use crate::report::format::value;
use crate::session::state::RunRecord;
use crate::session::SessionState;
use crate::ui::targets::PaneId;
use crate::ui::view::ViewState;

const VALUES_WIDTH: u16 = 26;

/// Y axis titles with units, for the metrics whose label does not say it.
const AXIS_TITLES: &[(&str, &str)] = &[
    (catalog::KL, "kl (nats)"),
    (catalog::ENTROPY, "entropy (nats)"),
    (catalog::CLIP_FRAC, "clip fraction"),
    (catalog::RESPONSE_LEN, "length (tokens)"),
];

fn is_rl(r: &RunRecord) -> bool {
    catalog::is_rl_run(r.series.keys().map(String::as_str))
}

fn axis_title(metric: &str) -> String {
    AXIS_TITLES.iter().find(|(m, _)| *m == metric).map_or_else(|| catalog::info(metric).map_or(metric, |i| i.label).to_owned(), |(_, t)| (*t).to_owned())
}

#[derive(Debug, Default)]
pub struct RlHealth {
    /// Index into the catalog's RL metrics.
    pub metric: usize,
}

impl RlHealth {
    pub fn metric(&self) -> &'static str {
        let n = catalog::in_pane(PaneHint::Rl).count().max(1);
        catalog::in_pane(PaneHint::Rl).nth(self.metric % n).unwrap_or(catalog::REWARD)
    }
}

impl Pane for RlHealth {
    fn visible(&self, state: &SessionState) -> bool {
        state.runs.iter().any(is_rl)
    }

    fn act(&mut self, action: PaneAction, _: &SessionState, _: &ViewState) -> Reaction {
        match action {
            PaneAction::NextMetric => self.metric = (self.metric + 1) % catalog::in_pane(PaneHint::Rl).count().max(1),
            _ => return Reaction::Ignored,
        }
        Reaction::Changed
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let metric = self.metric();
        let state = ctx.state;
        let shown = state.runs.get(ctx.view.selected_run).filter(|r| is_rl(r)).or_else(|| state.runs.iter().find(|r| is_rl(r)));
        let title = match shown {
            Some(r) => format!("rl health · {metric} · {}", r.name),
            None => "rl health".into(),
        };
        let block = ctx.block(PaneId::Rl, title);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [chart_area, values_area] = Layout::horizontal([Constraint::Min(10), Constraint::Length(VALUES_WIDTH)]).spacing(1).areas(inner);
        let mut items: Vec<SeriesLine> = state
            .runs
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                Some(SeriesLine { label: r.name.clone(), series: r.series(metric)?, color: i, bold: i == ctx.view.selected_run, ghost: false })
            })
            .collect();
        items.extend(ghost_lines(ctx, metric, 0..state.runs.len()));
        series_chart(frame, chart_area, ctx, items, axis_title(metric), false, &format!("no {metric} yet"));
        let Some(run) = shown else { return };
        let v = |name: &str| run.last(name).map_or("–".to_owned(), value);
        let percent = |name: &str, decimals: usize| run.last(name).map_or("–".into(), |c| format!("{:.*}%", decimals, c * 100.0));
        let row = |label: &str, text: String| Line::from(vec![Span::styled(format!("{label:<10}"), ctx.muted()), Span::styled(text, ctx.text())]);
        let mut lines = vec![
            row(catalog::REWARD, format!("{} ± {}", v(catalog::REWARD), v(catalog::REWARD_STD))),
            row(catalog::KL, format!("{}  β {}", v(catalog::KL), v(catalog::KL_COEF))),
            row(catalog::ENTROPY, format!("{} nats", v(catalog::ENTROPY))),
            row("clip frac", percent(catalog::CLIP_FRAC, 1)),
            row("resp len", format!("{} tok", v(catalog::RESPONSE_LEN))),
            row("approx kl", v(catalog::APPROX_KL)),
        ];
        if run.series.contains_key(catalog::VALUE_LOSS) {
            lines.push(row("vf loss", v(catalog::VALUE_LOSS)));
        }
        if run.series.contains_key(catalog::FRAC_REWARD_ZERO_STD) {
            lines.push(row("0-std grp", percent(catalog::FRAC_REWARD_ZERO_STD, 0)));
        }
        frame.render_widget(Paragraph::new(lines), values_area);
    }
}
