//! RL health: one RL metric over steps for every run that has it (`r` cycles
//! reward, KL, entropy, clip fraction, response length), and the shown run's
//! current values with units, KL next to its penalty coefficient.
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{ghost_lines, series_chart, Ctx, SeriesLine};
use crate::report::format::value;
use crate::session::state::RunRecord;
use crate::ui::layout::PaneId;
use crate::ui::view::RL_METRICS;

const VALUES_WIDTH: u16 = 26;

fn is_rl(r: &RunRecord) -> bool {
    r.series.contains_key("kl") || r.series.contains_key("reward")
}

fn unit(metric: &str) -> &'static str {
    match metric {
        "kl" => "kl (nats)",
        "entropy" => "entropy (nats)",
        "clip_frac" => "clip fraction",
        "response_len" => "length (tokens)",
        _ => "reward",
    }
}

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let metric = RL_METRICS[ctx.view.rl_metric % RL_METRICS.len()];
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
    series_chart(frame, chart_area, ctx, items, unit(metric).into(), &format!("no {metric} yet"));
    let Some(run) = shown else { return };
    let v = |name: &str| run.last(name).map_or("–".to_owned(), value);
    let row = |label: &str, text: String| Line::from(vec![Span::styled(format!("{label:<10}"), ctx.muted()), Span::styled(text, ctx.text())]);
    let mut lines = vec![
        row("reward", format!("{} ± {}", v("reward"), v("reward_std"))),
        row("kl", format!("{}  β {}", v("kl"), v("kl_coef"))),
        row("entropy", format!("{} nats", v("entropy"))),
        row("clip frac", run.last("clip_frac").map_or("–".into(), |c| format!("{:.1}%", c * 100.0))),
        row("resp len", format!("{} tok", v("response_len"))),
        row("approx kl", v("approx_kl")),
    ];
    if run.series.contains_key("value_loss") {
        lines.push(row("value loss", v("value_loss")));
    }
    if run.series.contains_key("frac_reward_zero_std") {
        lines.push(row("0-std grp", run.last("frac_reward_zero_std").map_or("–".into(), |c| format!("{:.0}%", c * 100.0))));
    }
    frame.render_widget(Paragraph::new(lines), values_area);
}
