//! Alerts: newest first, one line each (severity, run, step, kind, message);
//! acknowledged ones dimmed. Focused, it selects a row, jumps the charts to the
//! selected alert's step, and acknowledges one alert or all. The acknowledged set lives here; the header and
//! the runs list read it too (through `Ctx`).
use std::collections::BTreeSet;

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::runs::short;
use super::{Ctx, Pane, PaneAction, Reaction};
use crate::health::Severity;
use crate::session::SessionState;
use crate::ui::targets::PaneId;
use crate::ui::view::ViewState;

#[derive(Debug, Default)]
pub struct Alerts {
    /// Selected row (0 = newest alert).
    pub row: usize,
    /// Alerts acknowledged (indices into the session's alerts): no longer open.
    pub acknowledged: BTreeSet<usize>,
}

impl Pane for Alerts {
    fn act(&mut self, action: PaneAction, state: &SessionState, _: &ViewState) -> Reaction {
        let n = state.alerts.len();
        // Row r shows the r-th newest alert.
        let selected = (n > 0).then(|| n - 1 - self.row.min(n - 1));
        match action {
            PaneAction::Down => self.row = (self.row + 1).min(n.saturating_sub(1)),
            PaneAction::Up => self.row = self.row.saturating_sub(1),
            PaneAction::Open => {
                let Some((index, alert)) = selected.and_then(|i| Some((i, state.alerts.get(i)?))) else { return Reaction::Changed };
                let run = state.runs.iter().position(|r| r.name == alert.run);
                return Reaction::Jump { run, step: alert.step, alert: index };
            }
            PaneAction::Acknowledge => {
                if let Some(i) = selected {
                    self.acknowledged.insert(i);
                }
            }
            PaneAction::AcknowledgeAll => self.acknowledged.extend(0..n),
            _ => return Reaction::Ignored,
        }
        Reaction::Changed
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
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
        let selected = self.row.min(all.len() - 1);
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
}
