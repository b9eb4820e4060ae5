//! Runs list: one row per run with progress, throughput, state and its worst open alert.
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};
use ratatui::Frame;

use super::{bar, Ctx, Pane};
use crate::health::Severity;
use crate::metrics::catalog;
use crate::report::format::si;
use crate::report::progress::RATE_WINDOW;
use crate::session::{RunRecord, RunState};
use crate::ui::targets::PaneId;

/// The state column: "cancelled CRIT".
const STATE_WIDTH: u16 = 14;
/// The device column: "external", "attached", "cuda:0".
const DEVICE_WIDTH: u16 = 8;
/// Below this many cells for the name, narrower columns give way first.
const NAME_MIN: u16 = 16;
/// Below this many cells for the name even without the device column, the
/// progress bar goes (the step's digits stay).
const NAME_FLOOR: u16 = 8;

/// Column layout for a pane `inner` cells wide whose widest step text (`1229/1500`)
/// is `step_text` characters. The name column takes the slack; when it would get
/// fewer than [`NAME_MIN`] cells the progress bar shrinks, then the device column
/// goes, then (under [`NAME_FLOOR`]) the bar: the step's digits are never cut.
/// Every width is exact, so `fit_middle` cuts names to the width they really get.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Columns {
    /// Cells of the progress bar; 0: no bar.
    bar_cells: usize,
    device: bool,
    name: u16,
    /// The step column: the bar, a space and the step text.
    step: u16,
}

impl Columns {
    fn fit(inner: u16, step_text: u16) -> Columns {
        let step_for = |bar_cells: usize| if bar_cells == 0 { step_text } else { bar_cells as u16 + 1 + step_text };
        let name_for = |bar_cells: usize, device: bool| {
            let cols = [2, step_for(bar_cells), 7, STATE_WIDTH];
            let fixed: u16 = cols.iter().sum::<u16>() + if device { DEVICE_WIDTH } else { 0 };
            let spacing = if device { 5 } else { 4 };
            inner.saturating_sub(fixed + spacing)
        };
        let choices = [(8, true, NAME_MIN), (4, true, NAME_MIN), (4, false, NAME_FLOOR)];
        let (bar_cells, device) = choices.into_iter().find(|&(b, d, least)| name_for(b, d) >= least).map_or((0, false), |(b, d, _)| (b, d));
        Columns { bar_cells, device, name: name_for(bar_cells, device).max(1), step: step_for(bar_cells) }
    }

    fn widths(&self) -> Vec<Constraint> {
        let mut w = vec![Constraint::Length(2), Constraint::Length(self.name)];
        if self.device {
            w.push(Constraint::Length(DEVICE_WIDTH));
        }
        w.extend([Constraint::Length(self.step), Constraint::Length(7), Constraint::Length(STATE_WIDTH)]);
        w
    }
}

/// The width the step column's text is given at least (`60/120`, `999/1000`); a
/// longer text widens the column.
const STEP_TEXT_MIN: u16 = 8;

/// A step as the runs list writes it: every digit while it has six or fewer, then
/// `1.23M`.
fn step_number(step: u64) -> String {
    if step < 1_000_000 {
        step.to_string()
    } else {
        si(step as f64)
    }
}

/// A run's step and total (`1229/1500`), or its step alone when it has no total.
fn step_text(r: &RunRecord) -> String {
    match r.total_steps {
        0 => step_number(r.step),
        total => format!("{}/{}", step_number(r.step), step_number(total)),
    }
}

/// Screen rows of each run, for mouse selection: (run index, row area). `order`:
/// the runs in the order shown (a job's ranks under it).
pub fn row_areas(area: Rect, order: &[usize]) -> Vec<(usize, Rect)> {
    let inner_top = area.y + 2; // border + header row
    order
        .iter()
        .enumerate()
        .filter(|(row, _)| inner_top + (*row as u16) < area.bottom().saturating_sub(1))
        .map(|(row, run)| (*run, Rect::new(area.x + 1, inner_top + row as u16, area.width.saturating_sub(2), 1)))
        .collect()
}

/// A severity in four cells.
pub fn short(s: Severity) -> &'static str {
    match s {
        Severity::Info => "info",
        Severity::Warn => "WARN",
        Severity::Critical => "CRIT",
    }
}

/// The run's state, then its worst open (unacknowledged) alert.
fn state_cell<'a>(r: &RunRecord, ctx: &Ctx) -> Cell<'a> {
    let t = ctx.theme;
    let (text, color) = match r.state {
        RunState::Pending => ("pending".to_owned(), t.muted),
        // A job rlmon did not start: followed, with no exit status of rlmon's to show.
        RunState::Running if r.device == crate::session::ATTACHED_DEVICE => ("attached".to_owned(), t.accent),
        RunState::Running => ("running".to_owned(), t.accent),
        RunState::Finished => ("finished".to_owned(), t.ok),
        RunState::Cancelled => ("cancelled".to_owned(), t.warn),
        RunState::Stopped => ("stopped".to_owned(), t.critical),
        RunState::Failed => ("failed".to_owned(), t.critical),
    };
    let mut spans = vec![Span::styled(text, Style::default().fg(color))];
    if let Some(s) = r.worst_alert(&ctx.state.alerts, |i| ctx.alert_open(i)) {
        spans.push(Span::styled(format!(" {}", short(s)), Style::default().fg(ctx.severity_color(s)).add_modifier(Modifier::BOLD)));
    }
    Cell::from(Line::from(spans))
}

/// The run's device (`cuda:0`, `cpu`); for a job rlmon did not build (a command,
/// an attached job), which has no device of rlmon's to name, the GPU memory of its
/// process tree where NVML attributes some, in the hardware pane's unit.
fn device_cell<'a>(r: &RunRecord, run: usize, ctx: &Ctx) -> Cell<'a> {
    let built = crate::session::is_torch_device(&r.device);
    match super::hardware::job_gpu_memory(ctx, run).filter(|_| !built) {
        Some(bytes) => Cell::from(Span::styled(format!("{} GiB", super::hardware::gib(bytes)), Style::default().fg(ctx.theme.accent))),
        None => Cell::from(r.device.clone()),
    }
}

/// The runs list; no state of its own (the selected run is global).
pub struct Runs;

impl Pane for Runs {
    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        render(frame, area, ctx)
    }
}

/// `text` in at most `width` characters, cut in the middle so that both its start
/// and its distinguishing end stay (`grpo-kl-zero (rlhf)` -> `grpo-kl… (rlhf)`).
pub fn fit_middle(text: &str, width: usize) -> String {
    let n = text.chars().count();
    if n <= width || width < 3 {
        return text.chars().take(width).collect();
    }
    let tail = (width - 1) / 2 + (width - 1) % 2;
    let head = width - 1 - tail;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let block = ctx.block(PaneId::Runs, "runs".into());
    let inner = block.inner(area);
    let order = ctx.state.display_order();
    let widest = order.iter().filter_map(|&i| ctx.state.runs.get(i)).map(|r| step_text(r).chars().count() as u16).max().unwrap_or(0);
    let columns = Columns::fit(inner.width, widest.max(STEP_TEXT_MIN));
    let name_width = columns.name as usize;
    let mut titles = vec!["#", "run", "device", "step", "tok/s", "state · alert"];
    if !columns.device {
        titles.remove(2);
    }
    let header = Row::new(titles).style(ctx.muted().add_modifier(Modifier::BOLD));
    let rows = order.iter().filter_map(|&i| Some((i, ctx.state.runs.get(i)?))).map(|(i, r)| {
        let progress = match r.total_steps {
            // No total (a bar would say nothing), or no room for a bar: the step alone.
            0 => step_text(r),
            _ if columns.bar_cells == 0 => step_text(r),
            total => format!("{} {}", bar(r.step as f64 / total as f64, columns.bar_cells), step_text(r)),
        };
        // A job of several ranks trains at the sum of its ranks' rates.
        let ranks = ctx.state.ranks_of(i);
        let rate = if ranks.is_empty() {
            r.rate(catalog::TOKENS, Some(RATE_WINDOW))
        } else {
            ranks.iter().map(|(_, k)| k.rate(catalog::TOKENS, Some(RATE_WINDOW))).sum::<Option<f64>>()
        };
        let rate = rate.map_or("-".into(), si);
        let mut cells = vec![
            // A rank's number is its place under the job, not a key to press.
            Cell::from(if r.rank_of.is_some() { String::new() } else { format!("{}", i + 1) }),
            // A rank sits under its job, named by its rank alone.
            Cell::from(match r.rank_of {
                Some((_, rank)) => fit_middle(&format!("  └ rank{rank}"), name_width),
                None => fit_middle(&format!("{} ({})", r.name, r.workload), name_width),
            }),
        ];
        if columns.device {
            cells.push(device_cell(r, i, ctx));
        }
        cells.extend([Cell::from(progress), Cell::from(rate), state_cell(r, ctx)]);
        let mut row = Row::new(cells).style(ctx.text());
        if i == ctx.view.selected_run {
            row = row.style(Style::default().fg(ctx.theme.focus).add_modifier(Modifier::BOLD | Modifier::REVERSED));
        }
        row
    });
    frame.render_widget(block, area);
    let table = Table::new(rows, columns.widths()).header(header).column_spacing(1);
    // The selected run's failure reason gets the pane's last line: the state column
    // is too narrow for it.
    let selected = ctx.state.runs.get(ctx.view.selected_run);
    match selected.and_then(|r| r.error.as_ref().map(|e| (r, e))) {
        Some((r, reason)) if inner.height > 2 => {
            let [table_area, reason_area] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
            frame.render_widget(table, table_area);
            let line = Line::from(vec![
                Span::styled(format!("{} failed: ", r.name), Style::default().fg(ctx.theme.critical)),
                Span::styled(reason.clone(), ctx.text()),
            ]);
            frame.render_widget(Paragraph::new(line), reason_area);
        }
        _ => frame.render_widget(table, inner),
    }
}

#[cfg(test)]
mod tests {
    use super::fit_middle;

    #[test]
    fn long_names_keep_their_distinguishing_end() {
        assert_eq!(fit_middle("grpo-kl-zero (rlhf)", 15), "grpo-kl… (rlhf)");
        assert_eq!(fit_middle("tiny (lm)", 15), "tiny (lm)");
        assert_eq!(fit_middle("abcdef", 5).chars().count(), 5);
    }

    #[test]
    fn narrow_panes_shrink_the_bar_then_drop_the_device_then_the_bar_before_the_name() {
        use super::{Columns, NAME_MIN, STEP_TEXT_MIN};
        let sum = |c: &Columns| c.widths().iter().map(|c| match c { ratatui::layout::Constraint::Length(n) => *n, _ => 0 }).sum::<u16>();
        let wide = Columns::fit(100, STEP_TEXT_MIN);
        assert_eq!((wide.bar_cells, wide.device), (8, true));
        assert_eq!(sum(&wide) + 5, 100);
        let mid = Columns::fit(66, STEP_TEXT_MIN);
        assert_eq!((mid.bar_cells, mid.device), (4, true));
        assert!(mid.name >= NAME_MIN);
        let narrow = Columns::fit(50, STEP_TEXT_MIN);
        assert_eq!((narrow.bar_cells, narrow.device), (4, false));
        // Six-digit steps in a narrow pane: the bar goes, the digits stay.
        let long = Columns::fit(50, "123456/150000".len() as u16);
        assert_eq!((long.bar_cells, long.device, long.step), (0, false, 13));
        assert_eq!(sum(&long) + 4, 50);
    }

    #[test]
    fn steps_keep_every_digit() {
        use super::step_number;
        assert_eq!((step_number(1229), step_number(15000), step_number(999_999)), ("1229".into(), "15000".into(), "999999".into()));
        assert_eq!(step_number(1_234_567), "1.23M");
    }
}
