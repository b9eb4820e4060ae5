//! The screen, as data.
//!
//! ```text
//! ┌ header: session · elapsed · runs by state · alerts · GPU badge · FROZEN ──────┐
//! ├ runs ─────────────────────────────┬ throughput ─────────────────────────────┤
//! │ name  device  step/total ▰▰▱  tok/s│ tokens/s chart · step time · ETA · GPU %│
//! ├ training ─────────────────────────┼ hardware ───────────────────────────────┤
//! │ loss | lr | grad_norm over steps  │ GPU util, VRAM, power, temp; CPU, RAM   │
//! ├ rl health ─────────────┬ moe ─────────────────┬ representation ────────────┤
//! │ reward/KL/entropy/...  │ expert loads, heatmap │ per-layer dimensionality   │
//! ├ events ─────────────────────────────────────────────────────────────────────┤
//! │ run lifecycle, warnings, child output (scrollable)                          │
//! └ footer: key hints ──────────────────────────────────────────────────────────┘
//! ```
//! Panes sit on a grid (row, column); adding a pane is one file under `panes/` and
//! one entry in `PANES`. Optional panes (the workload row) appear only when some
//! run has their metrics; a row with no visible pane takes no space.
use ratatui::layout::{Constraint, Layout, Rect};

pub const HEADER_HEIGHT: u16 = 1;
pub const FOOTER_HEIGHT: u16 = 1;
pub const EVENTS_MIN_HEIGHT: u16 = 5;
/// Share of the body's height for all chart rows together; events get the rest.
pub const CHART_ROWS_PERCENT: u16 = 76;
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
    Rl,
    Moe,
    Repr,
    Events,
}

/// A pane's title and place on the grid; the last row (events) spans the width.
pub struct PaneSpec {
    pub id: PaneId,
    pub title: &'static str,
    pub row: u8,
    pub col: u8,
    /// Shown only when some run has the metrics this pane draws.
    pub optional: bool,
}

const fn pane(id: PaneId, title: &'static str, row: u8, col: u8, optional: bool) -> PaneSpec {
    PaneSpec { id, title, row, col, optional }
}

pub const PANES: &[PaneSpec] = &[
    pane(PaneId::Runs, "runs", 0, 0, false),
    pane(PaneId::Throughput, "throughput", 0, 1, false),
    pane(PaneId::Training, "training", 1, 0, false),
    pane(PaneId::Hardware, "hardware", 1, 1, false),
    pane(PaneId::Rl, "rl health", 2, 0, true),
    pane(PaneId::Moe, "moe", 2, 1, true),
    pane(PaneId::Repr, "representation", 2, 2, true),
    pane(PaneId::Events, "events", 3, 0, false),
];

/// Which panes to show for this session's metrics: the fixed ones always, the
/// optional ones when any run has what they draw.
pub fn visible_panes(state: &crate::session::SessionState) -> Vec<PaneId> {
    let any = |pred: &dyn Fn(&str) -> bool| state.runs.iter().any(|r| r.series.keys().any(|k| pred(k)));
    PANES
        .iter()
        .filter(|p| match p.id {
            PaneId::Rl => any(&|k| k == "kl" || k == "reward"),
            PaneId::Moe => any(&|k| k.starts_with("moe/L")),
            PaneId::Repr => any(&|k| k.starts_with("ndt/")),
            _ => !p.optional,
        })
        .map(|p| p.id)
        .collect()
}

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

/// Splits the screen among the `visible` panes; with `zoomed`, the one pane takes
/// the whole body.
pub fn areas(area: Rect, zoomed: Option<PaneId>, visible: &[PaneId]) -> Areas {
    let [header, body, footer] =
        Layout::vertical([Constraint::Length(HEADER_HEIGHT), Constraint::Min(0), Constraint::Length(FOOTER_HEIGHT)]).areas(area);
    if let Some(id) = zoomed {
        return Areas { header, footer, panes: vec![(id, body)] };
    }
    let shown: Vec<&PaneSpec> = PANES.iter().filter(|p| visible.contains(&p.id)).collect();
    let mut rows: Vec<u8> = shown.iter().map(|p| p.row).collect();
    rows.dedup();
    // Every row but the last (events) is a chart row sharing CHART_ROWS_PERCENT.
    let chart_rows = rows.len().saturating_sub(1).max(1) as u16;
    let constraints: Vec<Constraint> = rows
        .iter()
        .enumerate()
        .map(|(i, _)| if i + 1 == rows.len() { Constraint::Min(EVENTS_MIN_HEIGHT) } else { Constraint::Percentage(CHART_ROWS_PERCENT / chart_rows) })
        .collect();
    let row_rects = Layout::vertical(constraints).split(body);
    let mut panes = Vec::with_capacity(shown.len());
    for (row, rect) in rows.iter().zip(row_rects.iter()) {
        let in_row: Vec<&&PaneSpec> = shown.iter().filter(|p| p.row == *row).collect();
        let columns: Vec<Constraint> = match in_row.len() {
            2 => vec![Constraint::Percentage(LEFT_COLUMN_PERCENT), Constraint::Min(0)],
            n => vec![Constraint::Ratio(1, n as u32); n],
        };
        for (p, r) in in_row.iter().zip(Layout::horizontal(columns).split(*rect).iter()) {
            panes.push((p.id, *r));
        }
    }
    Areas { header, footer, panes }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pane_gets_an_area_inside_the_screen() {
        let screen = Rect::new(0, 0, 120, 40);
        let all: Vec<PaneId> = PANES.iter().map(|p| p.id).collect();
        let a = areas(screen, None, &all);
        assert_eq!(a.panes.len(), PANES.len());
        for (_, r) in &a.panes {
            assert!(r.width > 10 && r.height >= 5, "{r:?}");
            assert_eq!(r.intersection(screen), *r);
        }
        let events = a.panes.iter().find(|(p, _)| *p == PaneId::Events).unwrap().1;
        assert_eq!(events.width, 120, "events spans the width");
    }

    #[test]
    fn zoom_gives_the_body_to_one_pane() {
        let a = areas(Rect::new(0, 0, 100, 30), Some(PaneId::Training), &[]);
        assert_eq!(a.panes, vec![(PaneId::Training, Rect::new(0, 1, 100, 28))]);
    }

    #[test]
    fn hidden_optional_panes_take_no_space() {
        let fixed = [PaneId::Runs, PaneId::Throughput, PaneId::Training, PaneId::Hardware, PaneId::Events];
        let a = areas(Rect::new(0, 0, 100, 30), None, &fixed);
        assert_eq!(a.panes.len(), 5);
        let bottom = |a: &Areas| a.panes.iter().map(|(_, r)| r.bottom()).max().unwrap();
        assert_eq!(bottom(&a), 29, "the panes fill the body");
        let with_moe = [&fixed[..4], &[PaneId::Moe, PaneId::Events]].concat();
        let b = areas(Rect::new(0, 0, 100, 30), None, &with_moe);
        let moe = b.panes.iter().find(|(p, _)| *p == PaneId::Moe).unwrap().1;
        assert_eq!(moe.width, 100, "alone in its row, MoE takes the width");
    }

    #[test]
    fn focus_moves_skip_hidden_rows() {
        let fixed = [PaneId::Runs, PaneId::Throughput, PaneId::Training, PaneId::Hardware, PaneId::Events];
        assert_eq!(PaneId::Training.neighbour(0, 1, &fixed), PaneId::Events);
        let with_rl = [PaneId::Runs, PaneId::Throughput, PaneId::Training, PaneId::Hardware, PaneId::Rl, PaneId::Events];
        assert_eq!(PaneId::Hardware.neighbour(0, 1, &with_rl), PaneId::Rl);
        assert_eq!(PaneId::Rl.neighbour(1, 0, &with_rl), PaneId::Rl, "nothing to its right");
    }
}
