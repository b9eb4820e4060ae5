//! The screen, as data.
//!
//! ```text
//! ┌ header: session · elapsed · runs by state · alerts · GPU badge · FROZEN ──────┐
//! ├ runs ─────────────────────────────┬ throughput ─────────────────────────────┤
//! │ name  device  step/total ▰▰▱  tok/s│ tokens/s chart · step time · ETA · GPU %│
//! ├ training ─────────────────────────┼ hardware ───────────────────────────────┤
//! │ loss | lr | grad_norm over steps  │ GPU util, VRAM, power, temp; CPU, RAM   │
//! ├ events ───────────────────────────┬ alerts ─────────────────────────────────┤
//! │ lifecycle, warnings, child output │ newest first: severity run step kind msg│
//! └ footer: key hints ──────────────────────────────────────────────────────────┘
//! ```
//! Panes sit on a grid (row, column); adding a pane is one file under `panes/` and
//! one entry in `PANES`.
use ratatui::layout::{Constraint, Layout, Rect};

pub const HEADER_HEIGHT: u16 = 1;
pub const FOOTER_HEIGHT: u16 = 1;
pub const EVENTS_MIN_HEIGHT: u16 = 5;
/// Share of the body's height for each of the two chart rows; events get the rest.
pub const CHART_ROW_PERCENT: u16 = 38;
/// Share of the width for the left column.
pub const LEFT_COLUMN_PERCENT: u16 = 45;
/// Below this the layout cannot show its panes: a one-line message instead.
pub const MIN_WIDTH: u16 = 80;
pub const MIN_HEIGHT: u16 = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PaneId {
    Runs,
    Throughput,
    Training,
    Hardware,
    Events,
    Alerts,
}

/// A pane's title and place on the grid (a pane alone in its row spans it).
pub struct PaneSpec {
    pub id: PaneId,
    pub title: &'static str,
    pub row: u8,
    pub col: u8,
}

pub const PANES: &[PaneSpec] = &[
    PaneSpec { id: PaneId::Runs, title: "runs", row: 0, col: 0 },
    PaneSpec { id: PaneId::Throughput, title: "throughput", row: 0, col: 1 },
    PaneSpec { id: PaneId::Training, title: "training", row: 1, col: 0 },
    PaneSpec { id: PaneId::Hardware, title: "hardware", row: 1, col: 1 },
    PaneSpec { id: PaneId::Events, title: "events", row: 2, col: 0 },
    PaneSpec { id: PaneId::Alerts, title: "alerts", row: 2, col: 1 },
];

impl PaneId {
    pub fn spec(self) -> &'static PaneSpec {
        PANES.iter().find(|p| p.id == self).expect("every pane is in PANES")
    }

    /// The pane next to this one in direction (dx, dy), or itself at an edge.
    pub fn neighbour(self, dx: i8, dy: i8) -> PaneId {
        let s = self.spec();
        let row = s.row as i8 + dy;
        let col = s.col as i8 + dx;
        PANES
            .iter()
            .filter(|p| p.row as i8 == row)
            .min_by_key(|p| (p.col as i8 - col).abs())
            .filter(|p| dy != 0 || p.col as i8 == col)
            .map_or(self, |p| p.id)
    }
}

/// Areas of the fixed parts and of every pane.
#[derive(Debug, Clone, PartialEq)]
pub struct Areas {
    pub header: Rect,
    pub footer: Rect,
    pub panes: Vec<(PaneId, Rect)>,
}

pub fn too_small(area: Rect) -> bool {
    area.width < MIN_WIDTH || area.height < MIN_HEIGHT
}

/// Splits the screen; with `zoomed`, the one pane takes the whole body.
pub fn areas(area: Rect, zoomed: Option<PaneId>) -> Areas {
    let [header, body, footer] =
        Layout::vertical([Constraint::Length(HEADER_HEIGHT), Constraint::Min(0), Constraint::Length(FOOTER_HEIGHT)]).areas(area);
    if let Some(id) = zoomed {
        return Areas { header, footer, panes: vec![(id, body)] };
    }
    let [row0, row1, row2] = Layout::vertical([
        Constraint::Percentage(CHART_ROW_PERCENT),
        Constraint::Percentage(CHART_ROW_PERCENT),
        Constraint::Min(EVENTS_MIN_HEIGHT),
    ])
    .areas(body);
    let rows = [row0, row1, row2];
    let mut panes = Vec::with_capacity(PANES.len());
    for p in PANES {
        let row = rows[p.row as usize];
        let in_row = PANES.iter().filter(|q| q.row == p.row).count();
        let rect = if in_row == 1 {
            row
        } else {
            let [left, right] =
                Layout::horizontal([Constraint::Percentage(LEFT_COLUMN_PERCENT), Constraint::Min(0)]).areas(row);
            if p.col == 0 { left } else { right }
        };
        panes.push((p.id, rect));
    }
    Areas { header, footer, panes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pane_gets_an_area_inside_the_screen() {
        let screen = Rect::new(0, 0, 120, 40);
        let a = areas(screen, None);
        assert_eq!(a.panes.len(), PANES.len());
        for (_, r) in &a.panes {
            assert!(r.width > 10 && r.height >= 5, "{r:?}");
            assert_eq!(r.intersection(screen), *r);
        }
        let events = a.panes.iter().find(|(p, _)| *p == PaneId::Events).unwrap().1;
        let alerts = a.panes.iter().find(|(p, _)| *p == PaneId::Alerts).unwrap().1;
        assert_eq!(events.width + alerts.width, 120, "events and alerts share the bottom row");
    }

    #[test]
    fn zoom_gives_the_body_to_one_pane() {
        let a = areas(Rect::new(0, 0, 100, 30), Some(PaneId::Training));
        assert_eq!(a.panes, vec![(PaneId::Training, Rect::new(0, 1, 100, 28))]);
    }
}
