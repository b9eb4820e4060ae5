//! What draws over or instead of the panes: the help overlay, the confirmation
//! dialog, the key-hint footer and the too-small message.
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::Ctx;
use crate::ui::layout::{MIN_HEIGHT, MIN_WIDTH};
use crate::ui::view::Confirm;

/// Every key, as the help overlay and the README list them.
pub const KEYS: &[(&str, &str)] = &[
    ("q / Ctrl-C", "quit (asks while runs are going; q or y again confirms)"),
    ("?", "this help (any key closes it)"),
    ("Tab / Shift-Tab, 1-9", "select run"),
    ("arrows, h j k l", "move focus between panes"),
    ("Enter / Esc", "zoom the focused pane to full screen and back"),
    ("space", "freeze the display (training continues)"),
    ("+ / -", "narrower / wider step window"),
    ("e", "toggle EMA smoothing"),
    ("L", "toggle log scale"),
    ("m", "training chart: loss, lr, grad norm"),
    ("t", "throughput chart: tokens/s or samples/s"),
    ("r", "rl health chart: reward, KL, entropy, clip fraction, response length"),
    ("[ / ]", "moe: previous / next layer"),
    ("b", "moe: per-expert bars or layer x expert heatmap"),
    ("d", "representation: stable rank, participation ratio, 90% energy dim, nuclear ratio"),
    ("c", "cancel the selected run (asks first)"),
    ("s", "write the session snapshot now (the events pane says where)"),
    ("replay: space, < >", "pause / resume, slower / faster"),
    ("replay: ← → (Shift)", "seek 1% (10%); Home / End: start / end"),
    ("j k, PgUp PgDn, wheel", "scroll events (when focused)"),
    ("j k (alerts focused)", "select an alert, newest first"),
    ("Enter (alerts focused)", "jump the charts to the alert's step (Esc: back)"),
    ("a / A (alerts focused)", "acknowledge the selected alert / all alerts"),
    ("mouse click", "select a run or a pane"),
];

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(height.min(area.height))]).flex(Flex::Center).areas(area);
    let [h] = Layout::horizontal([Constraint::Length(width.min(area.width))]).flex(Flex::Center).areas(v);
    h
}

pub fn help(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| Line::from(vec![Span::styled(format!("{k:>22}  "), Style::default().fg(ctx.theme.accent)), Span::styled(*what, ctx.text())]))
        .collect();
    let rect = centered(area, 86, KEYS.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    let block = Block::bordered().title(" keys ").border_style(Style::default().fg(ctx.theme.focus));
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}

pub fn confirm(frame: &mut Frame, area: Rect, ctx: &Ctx, what: Confirm) {
    let question = match what {
        Confirm::Quit => {
            let running = ctx.state.runs.iter().filter(|r| !r.state.is_over()).count();
            format!("{running} run(s) still going. Quit and cancel them? (y / q: yes, any other key: no)")
        }
        Confirm::CancelRun(i) => {
            let name = ctx.state.runs.get(i).map_or("?", |r| r.name.as_str());
            format!("Cancel run {name}? (y: yes, any other key: no)")
        }
    };
    let rect = centered(area, 60, 4);
    frame.render_widget(Clear, rect);
    let block = Block::bordered().title(" confirm ").border_style(Style::default().fg(ctx.theme.warn));
    frame.render_widget(Paragraph::new(Span::styled(question, ctx.text().add_modifier(Modifier::BOLD))).wrap(Wrap { trim: true }).block(block), rect);
}

pub fn footer(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let hints = [("q", "quit"), ("?", "help"), ("Tab", "run"), ("←↑↓→", "focus"), ("Enter", "zoom"), ("space", "freeze"), ("+/-", "window"), ("e", "smooth"), ("L", "log"), ("m", "metric"), ("c", "cancel")];
    // Cancelling only means something while a run is going (not in a replay's end or a comparison).
    let cancellable = !ctx.state.all_over();
    let mut spans = Vec::new();
    for (k, what) in hints.into_iter().filter(|(k, _)| *k != "c" || cancellable) {
        spans.push(Span::styled(format!(" {k}"), Style::default().fg(ctx.theme.accent)));
        spans.push(Span::styled(format!(" {what} "), ctx.muted()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

pub fn too_small(frame: &mut Frame, area: Rect) {
    let msg = format!("terminal too small: {}x{}, rlmon needs {MIN_WIDTH}x{MIN_HEIGHT} (q quits)", area.width, area.height);
    frame.render_widget(Paragraph::new(msg), Rect { height: 1.min(area.height), ..area });
}
