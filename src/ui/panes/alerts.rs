//! Alerts: newest first, one line each (severity, run, step, kind, message);
//! acknowledged ones dimmed. Focused: j/k select, Enter jumps the charts to the
//! alert's step, a / A acknowledge.
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::runs::short;
use super::Ctx;
use crate::health::Severity;
use crate::ui::layout::PaneId;

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let all = &ctx.state.alerts;
    let open = (0..all.len()).filter(|i| ctx.alert_open(*i) && all[*i].severity >= Severity::Warn).count();
    let block = ctx.block(PaneId::Alerts, format!("alerts · {open} open of {}", all.len()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if all.is_empty() {
        frame.render_widget(Paragraph::new(Span::styled("no alerts", ctx.muted())), inner);
        return;
    }
    let rows = inner.height as usize;
    let selected = ctx.view.alert_row.min(all.len() - 1);
    // Keep the selected row on screen.
    let first = selected.saturating_sub(rows.saturating_sub(1));
    let focused = ctx.view.focus == PaneId::Alerts;
    let lines: Vec<Line> = (first..all.len().min(first + rows))
        .map(|row| {
            let i = all.len() - 1 - row;
            let a = &all[i];
            let acked = !ctx.alert_open(i);
            let sev_style = if acked { ctx.muted() } else { Style::default().fg(ctx.severity_color(a.severity)).add_modifier(Modifier::BOLD) };
            let text = if acked { ctx.muted() } else { ctx.text() };
            let mut line = Line::from(vec![
                Span::styled(format!("{} ", short(a.severity)), sev_style),
                Span::styled(if acked { "✓ " } else { "" }, ctx.muted()),
                Span::styled(format!("{} @{} {}: ", a.run, a.step, a.kind.as_str()), text),
                Span::styled(a.message.clone(), text),
            ]);
            if focused && row == selected {
                line = line.style(Style::default().add_modifier(Modifier::REVERSED));
            }
            line
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}
