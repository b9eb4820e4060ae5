//! What draws over or instead of the panes: the help overlay, the confirmation
//! dialog, the key-hint footer and the too-small message. Help and footer are read
//! from the key table, showing only the bindings in effect for this source and
//! session.
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::ui::panes::Ctx;
use crate::ui::keys::{self, Action, Binding, Footer, Key, Scope, KEYS, MOUSE};
use crate::ui::layout::{MIN_HEIGHT, MIN_WIDTH};
use super::Screen;
use crate::ui::view::Confirm;

const HELP_WIDTH: u16 = 120;

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(height.min(area.height))]).flex(Flex::Center).areas(area);
    let [h] = Layout::horizontal([Constraint::Length(width.min(area.width))]).flex(Flex::Center).areas(v);
    h
}

/// Whether help lists a binding: in effect for this source and session (dialog
/// answers are said by the dialog itself).
fn listed(b: &Binding, ctx: &Ctx, screen: &Screen) -> bool {
    match b.scope {
        Scope::Confirm => false,
        // Listed: help says they need an open detail.
        Scope::Detail => true,
        // Listed whatever has focus: help says which pane they need.
        Scope::Focused(p) => screen.panes.get(p).visible(ctx.state),
        _ => screen.in_effect(b, ctx.state),
    }
}

pub fn help(frame: &mut Frame, area: Rect, ctx: &Ctx, screen: &Screen) {
    let key_style = Style::default().fg(ctx.theme.accent);
    let mut entries: Vec<(String, String)> = keys::help_lines(|b| listed(b, ctx, screen)).into_iter().map(|l| (l.keys, l.what)).collect();
    entries.extend(MOUSE.iter().map(|(k, what)| ((*k).to_owned(), (*what).to_owned())));
    let width = entries.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    let mut lines: Vec<Line> =
        entries.into_iter().map(|(k, what)| Line::from(vec![Span::styled(format!("{k:>width$}  "), key_style), Span::styled(what, ctx.text())])).collect();
    let rect = centered(area, HELP_WIDTH, lines.len() as u16 + 2);
    // A short terminal shows what fits and says so.
    let room = rect.height.saturating_sub(2) as usize;
    if lines.len() > room && room > 0 {
        let more = lines.len() - (room - 1);
        lines.truncate(room - 1);
        lines.push(Line::from(Span::styled(format!("… {more} more lines on a taller terminal"), ctx.muted())));
    }
    frame.render_widget(Clear, rect);
    let block = Block::bordered().title(" keys ").border_style(Style::default().fg(ctx.theme.focus));
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}

pub fn confirm(frame: &mut Frame, area: Rect, ctx: &Ctx, what: Confirm) {
    let yes = keys::keys_for(Scope::Confirm, Action::Confirm);
    let question = match what {
        Confirm::Quit => {
            let running = ctx.state.runs.iter().filter(|r| !r.state.is_over()).count();
            let again = keys::keys_for(Scope::Confirm, Action::ConfirmQuit);
            format!("{running} run(s) still going. Quit and cancel them? ({yes}, {again}: yes; any other key: no)")
        }
        Confirm::CancelRun(i) => {
            let name = ctx.state.runs.get(i).map_or("?", |r| r.name.as_str());
            format!("Cancel run {name}? ({yes}: yes; any other key: no)")
        }
    };
    let rect = centered(area, 60, 4);
    frame.render_widget(Clear, rect);
    let block = Block::bordered().title(" confirm ").border_style(Style::default().fg(ctx.theme.warn));
    frame.render_widget(Paragraph::new(Span::styled(question, ctx.text().add_modifier(Modifier::BOLD))).wrap(Wrap { trim: true }).block(block), rect);
}

/// The footer's hints: (keys, label) for the bindings in effect that have a footer
/// label, in table order. A key another binding takes first now (replay's ← seeks)
/// is replaced by the binding's next key (h), or left out.
pub fn footer_hints(ctx: &Ctx, screen: &Screen, compact: bool) -> Vec<(String, &'static str)> {
    let takes_first = |key: Key, b: &Binding| {
        let earlier = |other: &Binding| match other.scope {
            Scope::Source => b.scope != Scope::Source,
            Scope::Focused(_) => matches!(b.scope, Scope::Pane(_) | Scope::Global),
            _ => false,
        };
        KEYS.iter().any(|o| o.keys.contains(&key) && earlier(o) && screen.in_effect(o, ctx.state))
    };
    let shown_key = |b: &Binding| b.keys.iter().copied().find(|k| !takes_first(*k, b)).map(Key::label);
    // A run being cancellable is what makes `c` worth a hint.
    let cancellable = !ctx.state.all_over();
    let mut hints: Vec<(String, &'static str)> = Vec::new();
    let mut group: Option<&Binding> = None;
    for b in KEYS.iter().filter(|b| screen.in_effect(b, ctx.state)) {
        let same_group = group.is_some_and(|g| g.scope == b.scope && g.help == b.help);
        let label = match b.footer {
            Footer::Yes(label) => Some(label),
            Footer::Compact(label) if compact => Some(label),
            _ => None,
        };
        if let Some(label) = label.filter(|_| b.action != Action::CancelRun || cancellable) {
            if let Some(key) = shown_key(b) {
                hints.push((key, label));
                group = Some(b);
                continue;
            }
        } else if same_group {
            // The other one-character keys of a hint's group join it: ←/→/↑/↓, +/-.
            if let (Some(key), Some(last)) = (shown_key(b).filter(|k| k.chars().count() == 1), hints.last_mut()) {
                last.0.push('/');
                last.0.push_str(&key);
            }
            continue;
        }
        group = None;
    }
    hints
}

pub fn footer(frame: &mut Frame, area: Rect, ctx: &Ctx, screen: &Screen, compact: bool) {
    let mut spans = Vec::new();
    for (k, what) in footer_hints(ctx, screen, compact) {
        spans.push(Span::styled(format!(" {k}"), Style::default().fg(ctx.theme.accent)));
        spans.push(Span::styled(format!(" {what} "), ctx.muted()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

pub fn too_small(frame: &mut Frame, area: Rect) {
    let quit = keys::keys_for(Scope::Global, Action::Quit);
    let quit = quit.split(", ").next().unwrap_or("q");
    let msg = format!("terminal too small: {}x{}, rlmon needs {MIN_WIDTH}x{MIN_HEIGHT} ({quit} quits)", area.width, area.height);
    frame.render_widget(Paragraph::new(msg), Rect { height: 1.min(area.height), ..area });
}
