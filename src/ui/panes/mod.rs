//! The panes. Each is a component: a type in its own file that owns its state (the
//! metric it plots, its mode, its scroll or selection), carries out the key-table
//! actions addressed to it, and draws itself from `&self`, the session state and the
//! global view (read-only). `Panes` holds one of each, built from the layout's
//! `PANES` table; the header and the overlays are fixed parts, not panes.
pub mod alerts;
pub mod detail;
pub mod events;
pub mod hardware;
pub mod hardware_hosts;
pub mod header;
pub mod moe;
pub mod repr;
pub mod rl;
pub mod runs;
pub mod throughput;
pub mod training;

use std::any::Any;
use std::collections::BTreeSet;

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::Span;
use ratatui::widgets::{Axis, Block, BorderType, Chart, Dataset, GraphType};
use ratatui::Frame;

use super::chart::Reduced;
pub use super::targets::PaneAction;
use super::targets::PaneId;
use super::theme::Theme;
use super::view::ViewState;
use crate::health::Severity;
use crate::report::format;
use crate::session::SessionState;


/// What a pane's action asks of the display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reaction {
    /// Not the pane's, or nothing to do: no redraw.
    Ignored,
    /// The pane changed: redraw.
    Changed,
    /// Select `run` and show the steps around `step` (alert `alert`'s, highlighted).
    Jump { run: Option<usize>, step: u64, alert: usize },
}

/// A pane of the screen.
pub trait Pane: Any {
    /// Whether it has something to show for this session (optional panes: RL health,
    /// MoE, representation appear only with their metrics).
    fn visible(&self, _state: &SessionState) -> bool {
        true
    }

    /// The rows (borders included) the pane has to show when they are fewer than a
    /// grid row would give it; `None`: it uses whatever it gets.
    fn rows(&self, _state: &SessionState) -> Option<u16> {
        None
    }

    /// Carries out a key-table action bound in this pane's scope; `state` is the
    /// state on screen (the frozen one while frozen).
    fn act(&mut self, _action: PaneAction, _state: &SessionState, _view: &ViewState) -> Reaction {
        Reaction::Ignored
    }

    /// Draws the pane. Read-only: everything it shows comes from `self` and `ctx`.
    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx);
}

/// A pane's title, place on the grid and constructor; the last row holds events and alerts.
pub struct PaneSpec {
    pub id: PaneId,
    pub title: &'static str,
    pub row: u8,
    pub col: u8,
    pub make: fn() -> Box<dyn Pane>,
}

const fn pane(id: PaneId, title: &'static str, row: u8, col: u8, make: fn() -> Box<dyn Pane>) -> PaneSpec {
    PaneSpec { id, title, row, col, make }
}

/// Every pane, in the order the compact layout cycles them.
pub const PANES: &[PaneSpec] = &[
    pane(PaneId::Runs, "runs", 0, 0, || Box::new(runs::Runs)),
    pane(PaneId::Throughput, "throughput", 0, 1, || Box::<throughput::Throughput>::default()),
    pane(PaneId::Training, "training", 1, 0, || Box::<training::Training>::default()),
    pane(PaneId::Hardware, "hardware", 1, 1, || Box::new(hardware::Hardware)),
    pane(PaneId::Rl, "rl health", 2, 0, || Box::<rl::RlHealth>::default()),
    pane(PaneId::Moe, "moe", 2, 1, || Box::<moe::Moe>::default()),
    pane(PaneId::Repr, "representation", 2, 2, || Box::<repr::Representation>::default()),
    pane(PaneId::Events, "events", 3, 0, || Box::<events::Events>::default()),
    pane(PaneId::Alerts, "alerts", 3, 1, || Box::<alerts::Alerts>::default()),
];

impl PaneId {
    pub fn spec(self) -> &'static PaneSpec {
        PANES.iter().find(|p| p.id == self).expect("every pane is in PANES")
    }

    /// The visible pane next to this one in direction (dx, dy), or itself at an
    /// edge. Rows without a visible pane are skipped.
    pub fn neighbour(self, dx: i8, dy: i8, visible: &[PaneId]) -> PaneId {
        let s = self.spec();
        let shown = || PANES.iter().filter(|p| visible.contains(&p.id));
        let row = if dy == 0 {
            Some(s.row)
        } else {
            let rows = shown().map(|p| p.row).filter(|r| if dy > 0 { *r > s.row } else { *r < s.row });
            if dy > 0 { rows.min() } else { rows.max() }
        };
        let Some(row) = row else { return self };
        let col = s.col as i8 + dx;
        shown()
            .filter(|p| p.row == row)
            .min_by_key(|p| (p.col as i8 - col).abs())
            .filter(|p| dy != 0 || p.col as i8 == col)
            .map_or(self, |p| p.id)
    }

    /// The visible pane `step` places after this one in `PANES` order, cycling and
    /// skipping the runs list (the compact layout always shows it).
    pub fn cycle(self, step: isize, visible: &[PaneId]) -> PaneId {
        let ring: Vec<PaneId> = PANES.iter().map(|p| p.id).filter(|id| *id != PaneId::Runs && visible.contains(id)).collect();
        if ring.is_empty() {
            return self;
        }
        let n = ring.len() as isize;
        match ring.iter().position(|id| *id == self) {
            Some(i) => ring[(i as isize + step).rem_euclid(n) as usize],
            None => ring[if step > 0 { 0 } else { ring.len() - 1 }],
        }
    }
}

/// One of each pane, in `PANES` order.
pub struct Panes {
    list: Vec<(PaneId, Box<dyn Pane>)>,
}

impl Default for Panes {
    fn default() -> Self {
        Panes { list: PANES.iter().map(|p| (p.id, (p.make)())).collect() }
    }
}

static NONE_ACKNOWLEDGED: BTreeSet<usize> = BTreeSet::new();

impl Panes {
    pub fn get(&self, id: PaneId) -> &dyn Pane {
        self.list.iter().find(|(p, _)| *p == id).map(|(_, pane)| pane.as_ref()).expect("every pane is in PANES")
    }

    pub fn get_mut(&mut self, id: PaneId) -> &mut dyn Pane {
        self.list.iter_mut().find(|(p, _)| *p == id).map(|(_, pane)| pane.as_mut()).expect("every pane is in PANES")
    }

    /// The pane of type `P`, for reading or setting its state.
    pub fn of<P: Pane>(&self) -> Option<&P> {
        self.list.iter().find_map(|(_, pane)| (pane.as_ref() as &dyn Any).downcast_ref::<P>())
    }

    pub fn of_mut<P: Pane>(&mut self) -> Option<&mut P> {
        self.list.iter_mut().find_map(|(_, pane)| (pane.as_mut() as &mut dyn Any).downcast_mut::<P>())
    }

    /// The panes to show for this session, in `PANES` order.
    pub fn visible(&self, state: &SessionState) -> Vec<PaneId> {
        self.list.iter().filter(|(_, pane)| pane.visible(state)).map(|(id, _)| *id).collect()
    }

    /// Alerts the user acknowledged (the alerts pane keeps them; the header and the
    /// runs list stop counting them too).
    pub fn acknowledged(&self) -> &BTreeSet<usize> {
        self.of::<alerts::Alerts>().map_or(&NONE_ACKNOWLEDGED, |a| &a.acknowledged)
    }
}

/// What every pane draws from, besides itself. Panes only read.
pub struct Ctx<'a> {
    pub state: &'a SessionState,
    pub view: &'a ViewState,
    pub theme: &'a Theme,
    /// Indices of acknowledged alerts: no longer open.
    pub acknowledged: &'a BTreeSet<usize>,
}

impl Ctx<'_> {
    pub fn block(&self, pane: PaneId, title: String) -> Block<'static> {
        let focused = self.view.focus == pane;
        let (border, border_type) =
            if focused { (self.theme.focus, BorderType::Thick) } else { (self.theme.border, BorderType::Plain) };
        Block::bordered()
            .border_type(border_type)
            .border_style(Style::default().fg(border))
            .title(Span::styled(format!(" {title} "), Style::default().fg(self.theme.text).add_modifier(Modifier::BOLD)))
    }

    pub fn text(&self) -> Style {
        Style::default().fg(self.theme.text)
    }

    pub fn muted(&self) -> Style {
        Style::default().fg(self.theme.muted)
    }

    pub fn severity_color(&self, s: Severity) -> Color {
        match s {
            Severity::Info => self.theme.marker,
            Severity::Warn => self.theme.warn,
            Severity::Critical => self.theme.critical,
        }
    }

    /// Whether alert `i` (an index into the session's alerts) is still open.
    pub fn alert_open(&self, i: usize) -> bool {
        !self.acknowledged.contains(&i)
    }

    /// The markers of run `run`'s alerts on its charts: warn and critical ones as
    /// lines, info ones (bumps that recovered) as ticks unless hidden, the alert
    /// jumped to in the focus colour.
    pub fn alert_markers(&self, run: usize) -> Vec<AlertMarker> {
        let Some(r) = self.state.runs.get(run) else { return Vec::new() };
        r.alerts
            .iter()
            .filter_map(|i| Some((*i, self.state.alerts.get(*i)?)))
            .filter(|(_, a)| a.severity > Severity::Info || self.view.info_markers)
            .map(|(i, a)| {
                let highlighted = self.view.highlight == Some(i);
                let color = if highlighted { self.theme.focus } else { self.severity_color(a.severity) };
                AlertMarker { step: a.step, color, tick: a.severity == Severity::Info && !highlighted }
            })
            .collect()
    }
}

/// Where an alert is marked on a chart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlertMarker {
    pub step: u64,
    pub color: Color,
    /// A short tick at the bottom of the chart rather than a full-height line.
    pub tick: bool,
}

/// The share of the chart's height an info tick takes.
const TICK_FRACTION: f64 = 0.08;

/// Marker lines for the markers inside the chart's x range: full height, or a tick
/// rising from the bottom.
pub fn marker_lines(markers: &[AlertMarker], lines: &[Line]) -> Vec<(Vec<(f64, f64)>, Color)> {
    let (x, y) = bounds(lines);
    markers
        .iter()
        .filter(|m| (x[0]..=x[1]).contains(&(m.step as f64)))
        .map(|m| {
            let top = if m.tick { y[0] + (y[1] - y[0]) * TICK_FRACTION } else { y[1] };
            (vec![(m.step as f64, y[0]), (m.step as f64, top)], m.color)
        })
        .collect()
}

/// The x and y bounds of a chart's lines.
fn bounds(lines: &[Line]) -> ([f64; 2], [f64; 2]) {
    let mut x = [f64::INFINITY, f64::NEG_INFINITY];
    let mut y = [f64::INFINITY, f64::NEG_INFINITY];
    for l in lines.iter().filter(|l| !l.data.points.is_empty()) {
        x = [x[0].min(l.data.x_bounds[0]), x[1].max(l.data.x_bounds[1])];
        y = [y[0].min(l.data.y_bounds[0]), y[1].max(l.data.y_bounds[1])];
    }
    if !x[0].is_finite() {
        x = [0.0, 1.0];
        y = [0.0, 1.0];
    }
    (x, y)
}

/// One line of a chart: its label, reduced points and style.
pub struct Line<'a> {
    pub label: String,
    pub data: &'a Reduced,
    pub style: Style,
}

/// A line chart with labelled axes. `log10` labels the y axis in original units.
pub fn line_chart<'a>(lines: &'a [Line<'a>], x_title: &'a str, y_title: String, log10: bool, ctx: &Ctx) -> Chart<'a> {
    line_chart_marked(lines, &[], x_title, y_title, log10, ctx)
}

/// A line chart with vertical markers (from [`marker_lines`]) drawn under the lines.
pub fn line_chart_marked<'a>(
    lines: &'a [Line<'a>],
    markers: &'a [(Vec<(f64, f64)>, Color)],
    x_title: &'a str,
    y_title: String,
    log10: bool,
    ctx: &Ctx,
) -> Chart<'a> {
    let (x, y) = bounds(lines);
    let y_label = |v: f64| if log10 { format::value(10f64.powf(v)) } else { format::value(v) };
    let marker_sets = markers.iter().map(|(points, color)| {
        Dataset::default().marker(Marker::Braille).graph_type(GraphType::Line).style(Style::default().fg(*color)).data(points)
    });
    let datasets = marker_sets
        .chain(lines.iter().map(|l| {
            Dataset::default()
                .name(l.label.clone())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(l.style)
                .data(&l.data.points)
        }))
        .collect();
    let chart = Chart::new(datasets);
    // A legend only helps when there is more than one line.
    let chart = if lines.len() > 1 { chart } else { chart.legend_position(None) };
    chart
        .x_axis(
            Axis::default()
                .title(Span::styled(x_title, ctx.muted()))
                .style(ctx.muted())
                .bounds(x)
                .labels([format!("{:.0}", x[0]), format!("{:.0}", (x[0] + x[1]) / 2.0), format!("{:.0}", x[1])]),
        )
        .y_axis(
            Axis::default()
                .title(Span::styled(y_title, ctx.muted()))
                .style(ctx.muted())
                .bounds(y)
                .labels([y_label(y[0]), y_label((y[0] + y[1]) / 2.0), y_label(y[1])]),
        )
        .hidden_legend_constraints((ratatui::layout::Constraint::Ratio(1, 2), ratatui::layout::Constraint::Ratio(1, 2)))
}

/// One line of a multi-line chart before reduction.
pub struct SeriesLine<'a> {
    pub label: String,
    pub series: &'a crate::metrics::Series,
    /// Index into the theme's series colours.
    pub color: usize,
    /// Drawn bold and on top (the selected run).
    pub bold: bool,
    /// A baseline's curve: dimmed and drawn first, under the live ones.
    pub ghost: bool,
}

/// The baseline's curves of `metric` under the session's runs (`runs`: which run
/// indices get one), dimmed: every chart draws them, so a live run or B in a
/// comparison is seen against its reference.
pub fn ghost_lines<'a>(ctx: &Ctx<'a>, metric: &str, runs: impl IntoIterator<Item = usize>) -> Vec<SeriesLine<'a>> {
    let state = ctx.state;
    runs.into_iter()
        .filter_map(|i| {
            let b = state.baseline_run(i)?;
            Some(SeriesLine { label: format!("{} ({})", b.name, state.baseline_label), series: b.series(metric)?, color: i, bold: false, ghost: true })
        })
        .collect()
}

/// Reduces each series to the pane's width with the view's window and smoothing (and
/// `log10`, the pane's log scale), and draws them; `empty` is shown when there is
/// nothing to draw.
pub fn series_chart(frame: &mut Frame, area: Rect, ctx: &Ctx, mut items: Vec<SeriesLine>, y_title: String, log10: bool, empty: &str) {
    use crate::ui::chart::{reduce, Transform};
    if items.is_empty() {
        frame.render_widget(ratatui::widgets::Paragraph::new(Span::styled(empty.to_owned(), ctx.muted())), area);
        return;
    }
    let v = ctx.view;
    let transform = Transform { ema_alpha: v.smoothing.then_some(crate::ui::view::SMOOTHING_ALPHA), log10 };
    let columns = area.width.saturating_sub(8) as usize;
    items.sort_by_key(|i| (!i.ghost, i.bold));
    let reduced: Vec<Reduced> = items.iter().map(|i| reduce(i.series, v.window, columns, transform)).collect();
    let lines: Vec<Line> = items
        .iter()
        .zip(&reduced)
        .map(|(i, data)| {
            let mut style = Style::default().fg(ctx.theme.series_color(i.color));
            if i.ghost {
                style = Style::default().fg(ctx.theme.muted).add_modifier(Modifier::DIM);
            } else if i.bold {
                style = style.add_modifier(Modifier::BOLD);
            }
            Line { label: i.label.clone(), data, style }
        })
        .collect();
    // Alert markers of the selected run, coloured by severity.
    let markers = marker_lines(&ctx.alert_markers(v.selected_run), &lines);
    frame.render_widget(line_chart_marked(&lines, &markers, "step", y_title, log10, ctx), area);
}

/// A text bar `▰▰▰▱▱` of `width` cells for a fraction in [0, 1].
pub fn bar(fraction: f64, width: usize) -> String {
    let filled = ((fraction.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    format!("{}{}", "▰".repeat(filled), "▱".repeat(width - filled))
}

#[cfg(test)]
pub(crate) mod test_support {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    /// The buffer's text, one string per row, trailing spaces trimmed.
    pub fn rows(terminal: &Terminal<TestBackend>) -> Vec<String> {
        let buf = terminal.backend().buffer();
        (0..buf.area.height)
            .map(|y| (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect::<String>().trim_end().to_owned())
            .collect()
    }

    pub fn screen(terminal: &Terminal<TestBackend>) -> String {
        rows(terminal).join("\n")
    }
}
