//! MoE: expert load balance of the selected run (or the first run with MoE
//! metrics). Bars: one layer's per-expert share of routed tokens against the fair
//! share 1/N, with balance, routing entropy, dropped tokens and dead experts.
//! Heatmap (`b`): every layer x expert at once, shaded by load relative to 1/N.
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{bar, Ctx};
use crate::metrics::{catalog, moe};
use crate::session::state::RunRecord;
use crate::session::SessionState;
use crate::ui::layout::PaneId;

/// The run the pane shows: the selected one if it has MoE metrics, else the first
/// that has.
pub fn shown_run(state: &SessionState, selected: usize) -> Option<&RunRecord> {
    let has = |r: &&RunRecord| r.series.keys().any(|k| catalog::MoeLayer::parse_load(k).is_some());
    state.runs.get(selected).filter(has).or_else(|| state.runs.iter().find(has))
}

/// Shade for a load relative to the fair share (`ratio` = load x N).
fn shade(ratio: f64) -> &'static str {
    match ratio {
        r if r < 0.1 => "·",
        r if r < 0.5 => "░",
        r if r < 0.9 => "▒",
        r if r < 1.5 => "▓",
        _ => "█",
    }
}

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let Some(run) = shown_run(ctx.state, ctx.view.selected_run) else {
        let block = ctx.block(PaneId::Moe, "moe".into());
        frame.render_widget(Paragraph::new(Span::styled("no MoE metrics", ctx.muted())).block(block), area);
        return;
    };
    let layers = moe::layers(run.series.keys().map(String::as_str));
    let (layer, experts) = layers[ctx.view.moe_layer % layers.len()];
    let view_name = if ctx.view.moe_heatmap { "heatmap" } else { "bars" };
    let block = ctx.block(PaneId::Moe, format!("moe · {} · {view_name}", run.name));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if ctx.view.moe_heatmap {
        heatmap(frame, inner, ctx, run, &layers);
    } else {
        bars(frame, inner, ctx, run, layer, experts, layers.len());
    }
}

fn load_color(ctx: &Ctx, ratio: f64) -> Style {
    let c = if ratio < 0.1 {
        ctx.theme.critical
    } else if ratio > 2.0 {
        ctx.theme.warn
    } else {
        ctx.theme.ok
    };
    Style::default().fg(c)
}

fn bars(frame: &mut Frame, area: Rect, ctx: &Ctx, run: &RunRecord, layer: usize, experts: usize, n_layers: usize) {
    let m = |name: &str| run.last(&format!("moe/L{layer}/{name}"));
    let fmt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("–".to_owned(), f);
    let max_bits = (experts as f64).log2();
    let summary = vec![
        Line::from(vec![
            Span::styled(format!("L{layer} [{}/{n_layers}] ", ctx.view.moe_layer % n_layers + 1), ctx.text()),
            Span::styled(format!("balance {}", fmt(m("balance"), &|v| format!("{v:.2}"))), ctx.text()),
            Span::styled(format!("  H {}/{max_bits:.2} bits", fmt(m("entropy_bits"), &|v| format!("{v:.2}"))), ctx.text()),
        ]),
        Line::from(vec![
            Span::styled(format!("dropped {}", fmt(m("dropped_frac"), &|v| format!("{:.1}%", v * 100.0))), ctx.text()),
            Span::styled(format!("  dead {}", fmt(m("dead_experts"), &|v| format!("{v:.0}"))), ctx.text()),
            Span::styled(format!("  maxvio {}", fmt(m("max_vio"), &|v| format!("{v:.2}"))), ctx.text()),
            Span::styled(format!("  aux {}", fmt(run.last("moe/aux_loss"), &|v| format!("{v:.3}"))), ctx.muted()),
        ]),
    ];
    let [top, rest] = Layout::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(area);
    frame.render_widget(Paragraph::new(summary), top);
    let fair = 1.0 / experts as f64;
    // Bars are scaled so that twice the fair share fills them.
    let width = rest.width.saturating_sub(16) as usize;
    let mut lines = Vec::with_capacity(experts);
    for e in 0..experts {
        let load = run.last(&catalog::moe(layer).load(e)).unwrap_or(0.0);
        let ratio = load / fair;
        lines.push(Line::from(vec![
            Span::styled(format!("E{e:<3}"), ctx.muted()),
            Span::styled(bar(load / (2.0 * fair), width), load_color(ctx, ratio)),
            Span::styled(format!(" {:>5.1}%", load * 100.0), ctx.text()),
        ]));
    }
    if experts > rest.height as usize && rest.height > 0 {
        lines.truncate(rest.height as usize - 1);
        lines.push(Line::from(Span::styled(format!("… {} more (zoom: Enter)", experts - lines.len()), ctx.muted())));
    }
    frame.render_widget(Paragraph::new(lines), rest);
}

fn heatmap(frame: &mut Frame, area: Rect, ctx: &Ctx, run: &RunRecord, layers: &[(usize, usize)]) {
    let mut lines = vec![Line::from(Span::styled("load / fair share:  · <0.1  ░ <0.5  ▒ <0.9  ▓ <1.5  █ ≥1.5", ctx.muted()))];
    for (layer, experts) in layers {
        let fair = 1.0 / *experts as f64;
        let mut spans = vec![Span::styled(format!("L{layer:<3}"), ctx.muted())];
        for e in 0..*experts {
            let ratio = run.last(&catalog::moe(*layer).load(e)).unwrap_or(0.0) / fair;
            spans.push(Span::styled(shade(ratio).repeat(2), load_color(ctx, ratio)));
        }
        if let Some(b) = run.last(&format!("moe/L{layer}/balance")) {
            spans.push(Span::styled(format!("  {b:.2}"), ctx.text()));
        }
        lines.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use crate::metrics::MetricName;
    use crate::session::state::RunRecord;
    use crate::session::{Event, Hub, SessionState};
    use crate::ui::layout::{visible_panes, PaneId};
    use crate::ui::panes::test_support::screen;
    use crate::ui::theme::Theme;
    use crate::ui::view::ViewState;

    /// An lm run, an MoE run with dimensionality (layer 1 collapsed onto expert 0)
    /// and an RLHF run.
    fn session() -> SessionState {
        let runs = ["plain", "experts", "policy"].iter().map(|n| RunRecord::new(n.to_string(), "lm".into(), "cpu".into(), 100)).collect();
        let mut hub = Hub::new(SessionState::new("w".into(), runs));
        for step in 1..=20u64 {
            let t = step as f64 * 0.1;
            hub.apply(Event::Metrics { run: 0, step, time_s: t, values: vec![("loss".into(), 2.0)] }, t);
            let mut moe: Vec<(MetricName, f64)> = vec![("loss".into(), 2.0), ("moe/aux_loss".into(), 1.02), ("moe/L0/dropped_frac".into(), 0.031)];
            for e in 0..4 {
                moe.push((format!("moe/L0/load/E{e}").into(), 0.25));
                moe.push((format!("moe/L1/load/E{e}").into(), if e == 0 { 1.0 } else { 0.0 }));
            }
            moe.push(("ndt/L0/stable_rank".into(), 3.0 + step as f64 * 0.1));
            moe.push(("ndt/L1/stable_rank".into(), 9.0));
            hub.apply(Event::Metrics { run: 1, step, time_s: t, values: moe }, t);
            let rl = vec![
                ("reward".into(), 0.1 * step as f64),
                ("reward_std".into(), 0.2),
                ("kl".into(), 0.01 * step as f64),
                ("kl_coef".into(), 0.05),
                ("entropy".into(), 1.5),
                ("clip_frac".into(), 0.042),
                ("response_len".into(), 24.0),
            ];
            hub.apply(Event::Metrics { run: 2, step, time_s: t, values: rl }, t);
        }
        hub.state
    }

    fn render(s: &SessionState, view: &ViewState) -> String {
        let mut terminal = Terminal::new(TestBackend::new(150, 44)).unwrap();
        terminal.draw(|f| crate::ui::draw(f, s, view, &Theme::built_in("default").unwrap())).unwrap();
        screen(&terminal)
    }

    #[test]
    fn workload_panes_appear_only_with_their_metrics() {
        let full = session();
        assert!(visible_panes(&full).iter().any(|p| *p == PaneId::Moe));
        let mut plain = full.clone();
        plain.runs.truncate(1);
        let shown = visible_panes(&plain);
        assert!(![PaneId::Rl, PaneId::Moe, PaneId::Repr].iter().any(|p| shown.contains(p)));
        assert!(!render(&plain, &ViewState::default()).contains("rl health"));
    }

    #[test]
    fn moe_bars_show_the_chosen_layer() {
        let s = session();
        let text = render(&s, &ViewState { selected_run: 1, ..ViewState::default() });
        for needle in ["moe · experts · bars", "L0 [1/2]", "balance 1.00", "H 2.00/2.00 bits", "dropped 3.1%", "dead 0", " 25.0%"] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        let text = render(&s, &ViewState { selected_run: 1, moe_layer: 1, ..ViewState::default() });
        for needle in ["L1 [2/2]", "balance 0.25", "H 0.00/2.00 bits", "dead 3", "100.0%"] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
    }

    #[test]
    fn moe_heatmap_shades_every_layer() {
        let s = session();
        let text = render(&s, &ViewState { selected_run: 1, moe_heatmap: true, ..ViewState::default() });
        assert!(text.contains("moe · experts · heatmap"), "{text}");
        assert!(text.contains("L0  ▓▓▓▓▓▓▓▓  1.00"), "{text}");
        assert!(text.contains("L1  ██······  0.25"), "{text}");
    }

    #[test]
    fn rl_pane_shows_values_with_units() {
        let s = session();
        // The selected run has no RL metrics: the pane shows the run that has.
        let text = render(&s, &ViewState::default());
        for needle in ["rl health · reward · policy", "2.000 ± 0.2000", "β 0.0500", "1.500 nats", "4.2%", "24.00 tok"] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        let text = render(&s, &ViewState { rl_metric: 1, ..ViewState::default() });
        assert!(text.contains("rl health · kl · policy") && text.contains("kl (nats)"), "{text}");
    }

    #[test]
    fn representation_pane_plots_each_layer() {
        let s = session();
        let text = render(&s, &ViewState { selected_run: 1, ..ViewState::default() });
        assert!(text.contains("representation · stable_rank · experts"), "{text}");
        assert!(text.contains("L0 5.000") && text.contains("L1 9.000"), "legend with current values: {text}");
        let text = render(&s, &ViewState { selected_run: 1, repr_metric: 1, ..ViewState::default() });
        assert!(text.contains("no dimensionality measured yet"), "{text}");
    }
}
