//! Header: session, elapsed time, runs by state, alerts, GPU badge, FROZEN badge.
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::Ctx;
use crate::health::Severity;
use crate::report::format::duration;
use crate::session::{GpuStatus, RunState};
use crate::ui::layout::COMPACT_BELOW_WIDTH;

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let s = ctx.state;
    let t = ctx.theme;
    // A narrow header keeps what matters (runs going, alerts, the GPU) in view: no
    // name tag, no zero counts.
    let narrow = area.width < COMPACT_BELOW_WIDTH;
    let sep = || Span::styled(" │ ", ctx.muted());
    let mut spans = Vec::new();
    if narrow {
        spans.push(Span::raw(" "));
    } else {
        spans.extend([Span::styled(" rlmon ", Style::default().fg(t.accent).add_modifier(Modifier::BOLD)), sep()]);
    }
    spans.extend([
        Span::styled(s.name.clone(), ctx.text().add_modifier(Modifier::BOLD)),
        sep(),
        Span::styled(duration(s.time_s), ctx.text()),
        sep(),
    ]);
    let counts = [
        (RunState::Running, t.accent),
        (RunState::Finished, t.ok),
        (RunState::Failed, t.critical),
        (RunState::Cancelled, t.warn),
        (RunState::Stopped, t.critical),
    ];
    let mut first = true;
    for (state, color) in counts {
        let n = s.count(state.clone());
        // Runs stopped by rlmon are rare: counted only when there are some.
        if (narrow || state == RunState::Stopped) && n == 0 {
            continue;
        }
        if !first {
            spans.push(Span::styled(" · ", ctx.muted()));
        }
        first = false;
        let style = if n > 0 { Style::default().fg(color) } else { ctx.muted() };
        spans.push(Span::styled(format!("{n} {}", state.as_str()), style));
    }
    // Runs rlmon stops (or signals) on a critical alert: `armed: stop`.
    let armed: Vec<&str> = s.runs.iter().filter(|r| r.state == RunState::Running).filter_map(|r| r.armed.as_deref()).collect();
    if let Some(first) = armed.first() {
        let what = if armed.iter().all(|a| a == first) { (*first).to_owned() } else { format!("{} runs", armed.len()) };
        spans.extend([sep(), Span::styled(format!("armed: {what}"), Style::default().fg(t.warn).add_modifier(Modifier::BOLD))]);
    }
    spans.push(sep());
    // Open warn/critical alerts, coloured by the worst of them.
    let open: Vec<_> = s.alerts.iter().enumerate().filter(|(i, a)| ctx.alert_open(*i) && a.severity >= Severity::Warn).map(|(_, a)| a.severity).collect();
    let style = open.iter().max().map_or(ctx.muted(), |w| Style::default().fg(ctx.severity_color(*w)).add_modifier(Modifier::BOLD));
    spans.push(Span::styled(format!("alerts {}", open.len()), style));
    spans.push(sep());
    match &s.gpu {
        GpuStatus::Available { gpus, .. } => {
            let name = gpus.first().map_or("GPU", |g| g.name.as_str());
            let extra = if gpus.len() > 1 { format!(" +{}", gpus.len() - 1) } else { String::new() };
            spans.push(Span::styled(format!("GPU {name}{extra}"), Style::default().fg(t.ok)));
        }
        GpuStatus::Unavailable { .. } => {
            // The badge stays short at any width; the reason is in the hardware pane
            // and in `rlmon doctor`.
            spans.push(Span::styled("NO GPU", Style::default().fg(t.warn).add_modifier(Modifier::BOLD)));
        }
        GpuStatus::Unknown => spans.push(Span::styled("GPU ?", ctx.muted())),
    }
    // Other machines (scraped, from Prometheus, attached): how many, how many silent.
    let hosts = crate::telemetry::scrape::remote_hosts(s);
    if !hosts.is_empty() {
        let stale = hosts.iter().filter(|h| h.stale).count();
        spans.extend([sep(), Span::styled(format!("hosts {}", hosts.len()), ctx.text())]);
        if stale > 0 || !narrow {
            let style = if stale > 0 { Style::default().fg(t.warn).add_modifier(Modifier::BOLD) } else { ctx.muted() };
            spans.extend([Span::styled(" · ", ctx.muted()), Span::styled(format!("{stale} stale"), style)]);
        }
    }
    if let Some(badge) = &ctx.view.badge {
        spans.insert(0, Span::styled(format!(" {badge} "), Style::default().fg(t.accent).add_modifier(Modifier::REVERSED | Modifier::BOLD)));
    }
    if ctx.view.frozen.is_some() {
        spans.insert(0, Span::styled(" FROZEN ", Style::default().fg(t.warn).add_modifier(Modifier::REVERSED | Modifier::BOLD)));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
