//! An alert's detail, drawn over the panes: its full record (kind, severity and
//! when it escalated, run, metric, first step and value, peak, time, the whole
//! message) and its context: the metrics of its run that moved around its step, as
//! small sparklines aligned on the same steps with the alert's step marked, their
//! change, and what usually causes this kind. Read-only, like the panes.
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use ratatui::Frame;

use super::runs::{fit_middle, short};
use super::Ctx;
use crate::health::context::{self, ContextSettings, Moved};
use crate::health::Alert;
use crate::report::format;
use crate::ui::keys::{self, Action, Scope};

/// The widest the box gets; it is centred on larger screens.
const MAX_WIDTH: u16 = 120;
/// Moved metrics listed: on a full screen, and in the compact layout.
const TOP: usize = 5;
const TOP_COMPACT: usize = 3;
/// Message lines kept before the rest is cut.
const MESSAGE_LINES: usize = 4;
const MESSAGE_LINES_COMPACT: usize = 2;
/// Columns of a value (`1.234e-5`) and of a change (`x1234`).
const VALUE_WIDTH: usize = 9;
const CHANGE_WIDTH: usize = 6;
const NAME_WIDTH: usize = 24;
const NAME_WIDTH_COMPACT: usize = 16;
const SPARKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx, index: usize, compact: bool) {
    let Some(alert) = ctx.state.alerts.get(index) else { return };
    let width = area.width.saturating_sub(2).min(MAX_WIDTH);
    let inner_width = width.saturating_sub(2) as usize;
    let lines = lines(ctx, alert, inner_width, compact);
    let height = (lines.len() as u16 + 2).min(area.height.saturating_sub(2));
    let [v] = Layout::vertical([Constraint::Length(height)]).flex(Flex::Center).areas(area);
    let [rect] = Layout::horizontal([Constraint::Length(width)]).flex(Flex::Center).areas(v);
    let title = format!(" alert {} of {} ", index + 1, ctx.state.alerts.len());
    let block = Block::bordered().title(Span::styled(title, ctx.text().add_modifier(Modifier::BOLD))).border_style(Style::default().fg(ctx.theme.focus));
    frame.render_widget(Clear, rect);
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}

/// The detail's lines for a box `width` cells wide inside.
fn lines<'a>(ctx: &Ctx, a: &Alert, width: usize, compact: bool) -> Vec<Line<'a>> {
    let text = ctx.text();
    let muted = ctx.muted();
    let sev = Style::default().fg(ctx.severity_color(a.severity)).add_modifier(Modifier::BOLD);
    let mut out = vec![Line::from(vec![
        Span::styled(format!("{} ", short(a.severity)), sev),
        Span::styled(a.kind.as_str().to_owned(), text.add_modifier(Modifier::BOLD)),
        Span::styled(format!(" · run {} · metric {}", a.run, a.metric), text),
    ])];
    let mut record = format!("first step {}: {}", a.step, format::value(a.value));
    if let Some(p) = a.peak {
        record.push_str(&format!(" · peak {} at step {}", format::value(p.value), p.step));
    }
    record.push_str(&format!(" · at {}", format::duration(a.time_s)));
    if let Some(at) = a.escalated_at {
        record.push_str(&format!(" · raised as warn, {} from step {at}", a.severity.as_str()));
    }
    out.extend(wrap(&record, width).into_iter().map(|l| Line::from(Span::styled(l, text))));
    let keep = if compact { MESSAGE_LINES_COMPACT } else { MESSAGE_LINES };
    let mut message = wrap(&a.message, width);
    if message.len() > keep {
        message.truncate(keep);
        if let Some(last) = message.last_mut() {
            *last = format!("{}…", fit_middle(last, width.saturating_sub(1)));
        }
    }
    out.extend(message.into_iter().map(|l| Line::from(Span::styled(l, text))));
    out.push(Line::default());

    let run = ctx.state.runs.iter().find(|r| r.name == a.run);
    let settings = ContextSettings { top: if compact { TOP_COMPACT } else { TOP }, ..ContextSettings::default() };
    let c = run.map(|r| context::context(&r.series, &a.metric, a.step, &settings)).unwrap_or_default();
    let name_width = if compact { NAME_WIDTH_COMPACT } else { NAME_WIDTH };
    let rows: Vec<&Moved> = c.subject.iter().chain(&c.moved).collect();
    let name_width = rows.iter().map(|m| m.metric.chars().count()).max().unwrap_or(0).clamp(6, name_width);
    // What is left for the sparkline once name, values and change have their columns.
    let room = width.saturating_sub(name_width + 1 + 1 + VALUE_WIDTH + 3 + VALUE_WIDTH + 1 + CHANGE_WIDTH);
    let (from, to) = visible_columns(c.columns.len(), c.centre, room);
    match (c.columns.get(from), c.columns.get(to.saturating_sub(1))) {
        (Some(first), Some(last)) => {
            // ▾ over the alert's step (absent when the step is past the last point).
            let mut marker = " ".repeat(name_width + 1);
            for k in from..to {
                marker.push(if k == c.centre { '▾' } else { ' ' });
            }
            let head = format!("{marker} {:>VALUE_WIDTH$}   {:<VALUE_WIDTH$}", "before", "around");
            out.push(Line::from(vec![
                Span::styled(format!("around step {} (steps {first}–{last}), most moved first", a.step), text.add_modifier(Modifier::BOLD)),
            ]));
            out.push(Line::from(Span::styled(head, muted)));
        }
        _ => out.push(Line::from(Span::styled(format!("around step {}: no points of this run there", a.step), muted))),
    }
    for (i, m) in rows.iter().enumerate() {
        let is_subject = i == 0 && c.subject.is_some();
        out.push(row(ctx, m, name_width, from..to, c.centre, is_subject));
    }
    if c.moved.is_empty() && !c.columns.is_empty() {
        out.push(Line::from(Span::styled("nothing else in this run left its recent range", muted)));
    }
    out.push(Line::default());
    for (i, l) in wrap(a.kind.advice(), width.saturating_sub(6)).into_iter().enumerate() {
        let lead = if i == 0 { "hint: " } else { "      " };
        out.push(Line::from(vec![Span::styled(lead, muted), Span::styled(l, text)]));
    }
    let close = keys::keys_for(Scope::Detail, Action::CloseDetail);
    let older = keys::keys_for(Scope::Detail, Action::OlderAlert);
    let newer = keys::keys_for(Scope::Detail, Action::NewerAlert);
    out.push(Line::from(Span::styled(format!("{close}: close · {older} / {newer}: older / newer alert"), muted)));
    out
}

/// The range of columns shown in `room` cells, keeping the centre in the middle.
fn visible_columns(n: usize, centre: usize, room: usize) -> (usize, usize) {
    if n <= room {
        return (0, n);
    }
    let from = centre.saturating_sub(room / 2).min(n.saturating_sub(room));
    (from, from + room)
}

/// One metric: name, sparkline (its own scale; the alert's step in the focus colour),
/// before → around and the change.
fn row<'a>(ctx: &Ctx, m: &Moved, name_width: usize, columns: std::ops::Range<usize>, centre: usize, subject: bool) -> Line<'a> {
    let name_style = if subject { ctx.text().add_modifier(Modifier::BOLD) } else { ctx.text() };
    let mut spans = vec![Span::styled(format!("{:<name_width$} ", fit_middle(&m.metric, name_width)), name_style)];
    let slice = m.slice.get(columns.clone()).unwrap_or(&[]);
    let finite = slice.iter().flatten().filter(|v| v.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    let colour = Style::default().fg(ctx.theme.series_color(0));
    for (k, v) in slice.iter().enumerate() {
        let (glyph, style) = match v {
            None => (' ', ctx.muted()),
            Some(v) if !v.is_finite() => ('×', Style::default().fg(ctx.theme.critical)),
            Some(v) => {
                let level = if hi > lo { ((v - lo) / (hi - lo) * 7.0).round() as usize } else { 3 };
                (SPARKS[level.min(7)], colour)
            }
        };
        let style = if columns.start + k == centre { Style::default().fg(ctx.theme.focus).add_modifier(Modifier::BOLD) } else { style };
        spans.push(Span::styled(glyph.to_string(), style));
    }
    let values = format!(" {:>VALUE_WIDTH$} → {:<VALUE_WIDTH$} {:>CHANGE_WIDTH$}", format::compact(m.before), format::compact(m.around), m.change.label());
    spans.push(Span::styled(values, ctx.text()));
    let mut note = match (m.held_since, subject) {
        (Some(since), _) => format!(" held since step {since}"),
        (None, true) => " (alert)".to_owned(),
        _ => String::new(),
    };
    if m.alike > 0 {
        note.push_str(&format!(" +{} alike", m.alike));
    }
    spans.push(Span::styled(note, ctx.muted()));
    Line::from(spans)
}

/// `text` in lines of at most `width` characters, broken between words (a word
/// longer than a line is cut).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: String = word.to_owned();
        loop {
            let used = line.chars().count();
            let len = word.chars().count();
            if used > 0 && used + 1 + len <= width {
                line.push(' ');
                line.push_str(&word);
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            if len <= width {
                line = word;
                break;
            }
            line = word.chars().take(width).collect();
            word = word.chars().skip(width).collect();
            lines.push(std::mem::take(&mut line));
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_breaks_between_words_and_cuts_long_ones() {
        assert_eq!(wrap("loss is 7.1 at step 300", 10), vec!["loss is", "7.1 at", "step 300"]);
        assert_eq!(wrap("abcdefghij klm", 4), vec!["abcd", "efgh", "ij", "klm"]);
        assert!(wrap("", 5).is_empty());
    }

    #[test]
    fn columns_keep_the_alerts_step_in_the_middle() {
        assert_eq!(visible_columns(25, 12, 40), (0, 25));
        assert_eq!(visible_columns(25, 12, 11), (7, 18));
        assert_eq!(visible_columns(25, 2, 11), (0, 11));
        assert_eq!(visible_columns(25, 24, 11), (14, 25));
    }
}
