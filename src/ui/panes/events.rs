//! Events: run lifecycle, warnings and errors, newest at the bottom; scrolls with
//! by line (when focused), by page, or with the mouse wheel.
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::{Ctx, Pane, PaneAction, Reaction};
use crate::report::format::duration;
use crate::session::{LogLevel, SessionState};
use crate::ui::targets::PaneId;
use crate::ui::view::ViewState;

/// Lines a page scrolls.
const PAGE: usize = 10;

#[derive(Debug, Default)]
pub struct Events {
    /// Lines scrolled up from the newest.
    pub scroll: usize,
}

impl Pane for Events {
    fn act(&mut self, action: PaneAction, state: &SessionState, _: &ViewState) -> Reaction {
        let scroll = match action {
            PaneAction::Up => self.scroll + 1,
            PaneAction::Down => self.scroll.saturating_sub(1),
            PaneAction::PageUp => self.scroll + PAGE,
            PaneAction::PageDown => self.scroll.saturating_sub(PAGE),
            _ => return Reaction::Ignored,
        };
        // Scrolling stops at the oldest line: keys pressed past it are not stored up
        // (the drawing also keeps the last page full).
        self.scroll = scroll.min(state.log.len().saturating_sub(1));
        Reaction::Changed
    }

    fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let log = &ctx.state.log;
        let height = area.height.saturating_sub(2) as usize;
        let scroll = self.scroll.min(log.len().saturating_sub(height));
        let title = if scroll > 0 { format!("events · {scroll} newer below") } else { "events".into() };
        let block = ctx.block(PaneId::Events, title);
        let end = log.len() - scroll;
        let start = end.saturating_sub(height);
        let lines: Vec<Line> = log
            .range(start..end)
            .map(|l| {
                let run = l.run.and_then(|i| ctx.state.runs.get(i)).map_or("rlmon".to_owned(), |r| r.name.clone());
                let color = match l.level {
                    LogLevel::Info => ctx.theme.text,
                    LogLevel::Warn => ctx.theme.warn,
                    LogLevel::Error => ctx.theme.critical,
                };
                Line::from(vec![
                    Span::styled(format!("{:>7} ", duration(l.time_s)), ctx.muted()),
                    Span::styled(format!("[{run}] "), Style::default().fg(ctx.theme.accent)),
                    Span::styled(l.message.clone(), Style::default().fg(color)),
                ])
            })
            .collect();
        frame.render_widget(Paragraph::new(lines).block(block), area);
    }
}
