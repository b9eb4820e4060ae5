//! MoE: expert load balance of the selected run (or the first run with MoE
//! metrics), in three modes that its mode action cycles:
//! - bars: one layer's per-expert share of routed tokens against the fair share 1/N,
//!   with balance, routing entropy, dropped tokens and dead experts;
//! - heatmap: every layer x expert at once, shaded by load relative to 1/N;
//! - over time: one layer's experts as rows and the step window as columns, each
//!   cell shaded by the expert's mean share there, so a collapse shows as it develops.
//!
//! The layer actions choose the layer bars and over-time show.
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{bar, Ctx, Pane, PaneAction, Reaction};
use crate::metrics::{catalog, moe};
use crate::session::state::RunRecord;
use crate::session::SessionState;
use crate::ui::chart::column_means;
use crate::ui::targets::PaneId;
use crate::ui::view::ViewState;

/// Columns of an over-time row besides its strip: the expert's label and its latest share.
const OVER_TIME_LABEL: u16 = 4;
const OVER_TIME_NOW: u16 = 7;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MoeMode {
    #[default]
    Bars,
    Heatmap,
    OverTime,
}

impl MoeMode {
    fn next(self) -> Self {
        match self {
            MoeMode::Bars => MoeMode::Heatmap,
            MoeMode::Heatmap => MoeMode::OverTime,
            MoeMode::OverTime => MoeMode::Bars,
        }
    }

    fn name(self) -> &'static str {
        match self {
            MoeMode::Bars => "bars",
            MoeMode::Heatmap => "heatmap",
            MoeMode::OverTime => "over steps",
        }
    }
}

#[derive(Debug, Default)]
pub struct Moe {
    /// Which layer bars and over-time show (an index into the run's MoE layers).
    pub layer: usize,
    pub mode: MoeMode,
}

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

const SHADE_LEGEND: &str = "load / fair share:  · <0.1  ░ <0.5  ▒ <0.9  ▓ <1.5  █ ≥1.5";

impl Pane for Moe {
    fn visible(&self, state: &SessionState) -> bool {
        state.runs.iter().any(|r| r.series.keys().any(|k| catalog::is_moe_layer_metric(k)))
    }

    fn act(&mut self, action: PaneAction, state: &SessionState, view: &ViewState) -> Reaction {
        match action {
            PaneAction::NextMode => self.mode = self.mode.next(),
            PaneAction::NextLayer | PaneAction::PrevLayer => {
                let run = shown_run(state, view.selected_run);
                let n = run.map_or(0, |r| moe::layers(r.series.keys().map(String::as_str)).len());
                if n == 0 {
                    return Reaction::Ignored;
                }
                let cur = self.layer % n;
                self.layer = if action == PaneAction::NextLayer { (cur + 1) % n } else { (cur + n - 1) % n };
            }
            _ => return Reaction::Ignored,
        }
        Reaction::Changed
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let Some(run) = shown_run(ctx.state, ctx.view.selected_run) else {
            let block = ctx.block(PaneId::Moe, "moe".into());
            frame.render_widget(Paragraph::new(Span::styled("no MoE metrics", ctx.muted())).block(block), area);
            return;
        };
        let layers = moe::layers(run.series.keys().map(String::as_str));
        let chosen = self.layer % layers.len();
        let (layer, experts) = layers[chosen];
        let block = ctx.block(PaneId::Moe, format!("moe · {} · {}", run.name, self.mode.name()));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let place = format!("L{layer} [{}/{}] ", chosen + 1, layers.len());
        match self.mode {
            MoeMode::Bars => bars(frame, inner, ctx, run, layer, experts, place),
            MoeMode::Heatmap => heatmap(frame, inner, ctx, run, &layers),
            MoeMode::OverTime => over_time(frame, inner, ctx, run, layer, experts, place),
        }
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

/// Lines for `experts` rows in `height` rows: the rows that fit, and a last line
/// saying how many more zooming would show.
fn fit_rows<'a>(ctx: &Ctx, mut lines: Vec<Line<'a>>, experts: usize, height: u16) -> Vec<Line<'a>> {
    if experts > height as usize && height > 0 {
        lines.truncate(height as usize - 1);
        lines.push(Line::from(Span::styled(format!("… {} more (zoom: Enter)", experts - lines.len()), ctx.muted())));
    }
    lines
}

fn bars(frame: &mut Frame, area: Rect, ctx: &Ctx, run: &RunRecord, layer: usize, experts: usize, place: String) {
    let l = catalog::moe(layer);
    let fmt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("–".to_owned(), f);
    let max_bits = (experts as f64).log2();
    let summary = vec![
        Line::from(vec![
            Span::styled(place, ctx.text()),
            Span::styled(format!("balance {}", fmt(run.last(&l.balance()), &|v| format!("{v:.2}"))), ctx.text()),
            Span::styled(format!("  H {}/{max_bits:.2} bits", fmt(run.last(&l.entropy_bits()), &|v| format!("{v:.2}"))), ctx.text()),
        ]),
        Line::from(vec![
            Span::styled(format!("dropped {}", fmt(run.last(&l.dropped_frac()), &|v| format!("{:.1}%", v * 100.0))), ctx.text()),
            Span::styled(format!("  dead {}", fmt(run.last(&l.dead_experts()), &|v| format!("{v:.0}"))), ctx.text()),
            Span::styled(format!("  maxvio {}", fmt(run.last(&l.max_vio()), &|v| format!("{v:.2}"))), ctx.text()),
            Span::styled(format!("  aux {}", fmt(run.last(catalog::MOE_AUX_LOSS), &|v| format!("{v:.3}"))), ctx.muted()),
        ]),
    ];
    let [top, rest] = Layout::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(area);
    frame.render_widget(Paragraph::new(summary), top);
    let fair = 1.0 / experts as f64;
    // Bars are scaled so that twice the fair share fills them.
    let width = rest.width.saturating_sub(16) as usize;
    let lines = (0..experts)
        .map(|e| {
            let load = run.last(&l.load(e)).unwrap_or(0.0);
            let ratio = load / fair;
            Line::from(vec![
                Span::styled(format!("E{e:<3}"), ctx.muted()),
                Span::styled(bar(load / (2.0 * fair), width), load_color(ctx, ratio)),
                Span::styled(format!(" {:>5.1}%", load * 100.0), ctx.text()),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(fit_rows(ctx, lines, experts, rest.height)), rest);
}

fn heatmap(frame: &mut Frame, area: Rect, ctx: &Ctx, run: &RunRecord, layers: &[(usize, usize)]) {
    let mut lines = vec![Line::from(Span::styled(SHADE_LEGEND, ctx.muted()))];
    for (layer, experts) in layers {
        let l = catalog::moe(*layer);
        let fair = 1.0 / *experts as f64;
        let mut spans = vec![Span::styled(format!("L{layer:<3}"), ctx.muted())];
        for e in 0..*experts {
            let ratio = run.last(&l.load(e)).unwrap_or(0.0) / fair;
            spans.push(Span::styled(shade(ratio).repeat(2), load_color(ctx, ratio)));
        }
        if let Some(b) = run.last(&l.balance()) {
            spans.push(Span::styled(format!("  {b:.2}"), ctx.text()));
        }
        lines.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

/// One row per expert of `layer`: its share of the layer's tokens over the step
/// window, a cell per column of steps, then its latest share.
fn over_time(frame: &mut Frame, area: Rect, ctx: &Ctx, run: &RunRecord, layer: usize, experts: usize, place: String) {
    let l = catalog::moe(layer);
    let fair = 1.0 / experts as f64;
    let strip = area.width.saturating_sub(OVER_TIME_LABEL + OVER_TIME_NOW) as usize;
    let rows: Vec<_> = (0..experts).map(|e| run.series(&l.load(e)).map(|s| (column_means(s, ctx.view.window, strip), s.last()))).collect();
    let range = rows.iter().flatten().find_map(|((_, range), _)| *range);
    let steps = range.map_or("no steps yet".to_owned(), |(a, b)| format!("share of tokens per expert, steps {a}–{b}"));
    // Header, the rows that fit, and the step axis right under them.
    let rows_height = (experts as u16).min(area.height.saturating_sub(3));
    let [top, middle, axis] = Layout::vertical([Constraint::Length(2), Constraint::Length(rows_height), Constraint::Length(1)]).areas(area);
    let header = vec![
        Line::from(vec![Span::styled(place, ctx.text()), Span::styled(steps, ctx.text())]),
        Line::from(Span::styled(SHADE_LEGEND, ctx.muted())),
    ];
    frame.render_widget(Paragraph::new(header), top);
    let lines = rows
        .iter()
        .enumerate()
        .map(|(e, row)| {
            let mut spans = vec![Span::styled(format!("E{e:<3}"), ctx.muted())];
            let (means, now) = match row {
                Some(((means, _), now)) => (means.as_slice(), *now),
                None => (&[][..], None),
            };
            for mean in means {
                spans.push(match mean {
                    Some(load) => Span::styled(shade(load / fair), load_color(ctx, load / fair)),
                    None => Span::raw(" "),
                });
            }
            // A run with no steps yet: the latest share stays in its column.
            spans.push(Span::raw(" ".repeat(strip.saturating_sub(means.len()))));
            spans.push(Span::styled(now.map_or("      –".into(), |v| format!(" {:>5.1}%", v * 100.0)), ctx.text()));
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(fit_rows(ctx, lines, experts, middle.height)), middle);
    // The step axis under the strip: first step on the left, last on the right.
    if let Some((a, b)) = range {
        let filled = rows.iter().flatten().map(|((m, _), _)| m.len()).max().unwrap_or(0);
        let (first, last) = (format!("{a}"), format!("{b}"));
        let gap = filled.saturating_sub(first.len() + last.len());
        let text = format!("{:w$}{first}{}{last}", "", " ".repeat(gap), w = OVER_TIME_LABEL as usize);
        frame.render_widget(Paragraph::new(Span::styled(text, ctx.muted())), axis);
    }
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use crate::metrics::MetricName;
    use crate::session::state::RunRecord;
    use crate::session::{Event, Hub, SessionState};
    use super::{Moe, MoeMode};
    use crate::ui::targets::PaneId;
    use crate::ui::panes::repr::Representation;
    use crate::ui::panes::rl::RlHealth;
    use crate::ui::panes::test_support::screen;
    use crate::ui::panes::Panes;
    use crate::ui::theme::Theme;
    use crate::ui::view::ViewState;
    use crate::ui::Screen;

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

    fn render(s: &SessionState, screen_state: &Screen) -> String {
        let mut terminal = Terminal::new(TestBackend::new(150, 44)).unwrap();
        terminal.draw(|f| crate::ui::draw(f, s, screen_state, &Theme::built_in("default").unwrap())).unwrap();
        screen(&terminal)
    }

    /// The screen with run `selected` selected and the MoE pane set to `layer` and `mode`.
    fn moe_screen(selected: usize, layer: usize, mode: MoeMode) -> Screen {
        let mut s = Screen { view: ViewState { selected_run: selected, ..ViewState::default() }, ..Screen::default() };
        *s.panes.of_mut::<Moe>().unwrap() = Moe { layer, mode };
        s
    }

    fn visible_panes(s: &SessionState) -> Vec<PaneId> {
        Panes::default().visible(s)
    }

    #[test]
    fn workload_panes_appear_only_with_their_metrics() {
        let full = session();
        assert!(visible_panes(&full).iter().any(|p| *p == PaneId::Moe));
        let mut plain = full.clone();
        plain.runs.truncate(1);
        let shown = visible_panes(&plain);
        assert!(![PaneId::Rl, PaneId::Moe, PaneId::Repr].iter().any(|p| shown.contains(p)));
        assert!(!render(&plain, &Screen::default()).contains("rl health"));
    }

    #[test]
    fn moe_bars_show_the_chosen_layer() {
        let s = session();
        let text = render(&s, &moe_screen(1, 0, MoeMode::Bars));
        for needle in ["moe · experts · bars", "L0 [1/2]", "balance 1.00", "H 2.00/2.00 bits", "dropped 3.1%", "dead 0", " 25.0%"] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        let text = render(&s, &moe_screen(1, 1, MoeMode::Bars));
        for needle in ["L1 [2/2]", "balance 0.25", "H 0.00/2.00 bits", "dead 3", "100.0%"] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
    }

    #[test]
    fn moe_heatmap_shades_every_layer() {
        let s = session();
        let text = render(&s, &moe_screen(1, 0, MoeMode::Heatmap));
        assert!(text.contains("moe · experts · heatmap"), "{text}");
        assert!(text.contains("L0  ▓▓▓▓▓▓▓▓  1.00"), "{text}");
        assert!(text.contains("L1  ██······  0.25"), "{text}");
    }

    #[test]
    fn rl_pane_shows_values_with_units() {
        let s = session();
        // The selected run has no RL metrics: the pane shows the run that has.
        let text = render(&s, &Screen::default());
        for needle in ["rl health · reward · policy", "2.000 ± 0.2000", "β 0.0500", "1.500 nats", "4.2%", "24.00 tok"] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        let mut kl = Screen::default();
        kl.panes.of_mut::<RlHealth>().unwrap().metric = 1;
        let text = render(&s, &kl);
        assert!(text.contains("rl health · kl · policy") && text.contains("kl (nats)"), "{text}");
    }

    #[test]
    fn representation_pane_plots_each_layer() {
        let s = session();
        let text = render(&s, &moe_screen(1, 0, MoeMode::Bars));
        assert!(text.contains("representation · stable_rank · experts"), "{text}");
        assert!(text.contains("L0 5.000") && text.contains("L1 9.000"), "legend with current values: {text}");
        let mut pr = moe_screen(1, 0, MoeMode::Bars);
        pr.panes.of_mut::<Representation>().unwrap().measure = 1;
        let text = render(&s, &pr);
        assert!(text.contains("no dimensionality measured yet"), "{text}");
    }

    #[test]
    fn moe_over_time_shows_each_experts_share_per_column_of_steps() {
        let mut s = session();
        // Layer 0 collapses onto expert 0 from step 21 on.
        let mut hub = crate::session::Hub::new(s);
        for step in 21..=40u64 {
            let t = step as f64 * 0.1;
            let values = (0..4).map(|e| (format!("moe/L0/load/E{e}").into(), if e == 0 { 1.0 } else { 0.0 })).collect();
            hub.apply(Event::Metrics { run: 1, step, time_s: t, values }, t);
        }
        s = hub.state;
        let text = render(&s, &moe_screen(1, 0, MoeMode::OverTime));
        assert!(text.contains("moe · experts · over steps"), "{text}");
        assert!(text.contains("L0 [1/2] share of tokens per expert, steps 1–40"), "{text}");
        let row = |e: usize| text.lines().find(|l| l.contains(&format!("│E{e}  "))).unwrap_or_else(|| panic!("no row E{e} in\n{text}")).to_owned();
        // Balanced (▓: about the fair share) for the first half, then E0 takes all.
        assert!(row(0).contains("▓▓▓") && row(0).contains("███") && row(0).contains("100.0%"), "{}", row(0));
        assert!(row(1).contains("▓▓▓") && row(1).contains("···") && row(1).contains("  0.0%"), "{}", row(1));
        let first_cell = |r: String| r.split("│E1  ").nth(1).and_then(|rest| rest.chars().next());
        assert_eq!(first_cell(row(1)), Some('▓'), "oldest steps on the left");
        let axis = text.lines().find_map(|l| l.split("│    1 ").nth(1)).map(str::trim_start);
        assert!(axis.is_some_and(|rest| rest.starts_with("40 ")), "step axis from 1 to 40 under the strip: {text}");
    }
}
