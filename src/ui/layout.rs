//! The screen, as data.
//!
//! Normal layout (120 columns and 30 rows or more):
//! ```text
//! ┌ header: session · elapsed · runs by state · alerts · GPU badge · FROZEN ──────┐
//! ├ runs ─────────────────────────────┬ throughput ─────────────────────────────┤
//! │ name  device  step/total ▰▰▱  tok/s│ tokens/s chart · step time · ETA · GPU %│
//! ├ training ─────────────────────────┼ hardware ───────────────────────────────┤
//! │ loss | lr | grad_norm over steps  │ GPU util, VRAM, power, temp; CPU, RAM   │
//! ├ rl health ─────────────┬ moe ─────────────────┬ representation ────────────┤
//! │ reward/KL/entropy/...  │ expert loads, heatmap │ per-layer dimensionality   │
//! ├ events ───────────────────────────┬ alerts ─────────────────────────────────┤
//! │ lifecycle, warnings, child output │ newest first: severity run step kind msg│
//! └ footer: key hints ──────────────────────────────────────────────────────────┘
//! ```
//! Compact layout (smaller terminals, down to 80x24): the runs list over the whole
//! width, and one pane at a time under it (the next / previous pane actions cycle,
//! focus moves across the grid above, zoom still zooms):
//! ```text
//! ┌ header ──────────────────────────────────┐
//! ├ runs: # run device step tok/s state ─────┤
//! ├ the focused pane (training, ...) ────────┤
//! │                                          │
//! └ footer: key hints, pane cycling ──────────┘
//! ```
//! Panes sit on a grid (row, column). Adding a pane is one file under `panes/`
//! implementing `Pane`, its name in `PaneId` (`targets.rs`) and one line in `PANES` (`panes/mod.rs`); its keys go in
//! the key table (`keys.rs`). A pane whose `visible` says no takes no space; a row
//! with no visible pane takes none either.
use ratatui::layout::{Constraint, Layout, Rect};

use super::panes::{PaneSpec, PANES};
use super::targets::PaneId;

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
/// Below either of these the compact layout shows one pane at a time: the grid would
/// squeeze every chart to a few rows and drop the runs list's columns.
pub const COMPACT_BELOW_WIDTH: u16 = 120;
pub const COMPACT_BELOW_HEIGHT: u16 = 30;
/// The grid's top row at its shortest: the throughput chart beside the runs list
/// stays readable.
pub const GRID_TOP_MIN_HEIGHT: u16 = 10;
/// Rows of the compact layout's runs list around its run rows: borders, the column
/// header, and the selected run's failure reason.
const COMPACT_RUNS_CHROME: u16 = 4;

/// How the body is divided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrangement {
    /// Every visible pane on the grid; the top row no taller than `runs` runs need
    /// (its throughput chart keeps `GRID_TOP_MIN_HEIGHT`). `hardware`: the rows the
    /// hardware pane has to show when they are few (no GPU): it takes only those.
    Grid { runs: u16, hardware: Option<u16> },
    /// One pane takes the whole body.
    Zoomed(PaneId),
    /// The runs list (with room for `runs` rows) over one large pane.
    Compact { shown: PaneId, runs: u16 },
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

/// Whether a screen of this size gets the compact layout.
pub fn is_compact(area: Rect) -> bool {
    area.width < COMPACT_BELOW_WIDTH || area.height < COMPACT_BELOW_HEIGHT
}

/// Splits the screen among the `visible` panes as `arrangement` says.
pub fn areas(area: Rect, arrangement: Arrangement, visible: &[PaneId]) -> Areas {
    let [header, body, footer] =
        Layout::vertical([Constraint::Length(HEADER_HEIGHT), Constraint::Min(0), Constraint::Length(FOOTER_HEIGHT)]).areas(area);
    let panes = match arrangement {
        Arrangement::Zoomed(id) => vec![(id, body)],
        Arrangement::Compact { shown, runs } => {
            // The runs list keeps every run's row while it can, up to a third of the body.
            let runs_height = (runs + COMPACT_RUNS_CHROME).min((body.height / 3).max(COMPACT_RUNS_CHROME + 1));
            let [top, rest] = Layout::vertical([Constraint::Length(runs_height), Constraint::Min(0)]).areas(body);
            if shown == PaneId::Runs {
                vec![(PaneId::Runs, body)]
            } else {
                vec![(PaneId::Runs, top), (shown, rest)]
            }
        }
        Arrangement::Grid { runs, hardware } => {
            let mut panes = grid(body, visible, runs);
            if let Some(rows) = hardware {
                fit_hardware(&mut panes, rows, runs);
            }
            panes
        }
    };
    Areas { header, footer, panes }
}

fn grid(body: Rect, visible: &[PaneId], runs: u16) -> Vec<(PaneId, Rect)> {
    let shown: Vec<&PaneSpec> = PANES.iter().filter(|p| visible.contains(&p.id)).collect();
    let mut rows: Vec<u8> = shown.iter().map(|p| p.row).collect();
    rows.dedup();
    // Every row but the last (events) is a chart row sharing CHART_ROWS_PERCENT.
    let chart_rows = rows.len().saturating_sub(1).max(1) as u16;
    let chart_height = body.height * CHART_ROWS_PERCENT / 100;
    let share = chart_height / chart_rows;
    // The runs list's row takes what its runs need; the other chart rows get the rest.
    let top = if chart_rows > 1 && shown.first().is_some_and(|p| p.id == PaneId::Runs) {
        (runs + COMPACT_RUNS_CHROME).max(GRID_TOP_MIN_HEIGHT).min(share)
    } else {
        share
    };
    // Chart rows other than the top one share what it leaves; the first gets the remainder.
    let others = if chart_rows > 1 { (chart_height - top) / (chart_rows - 1) } else { share };
    let remainder = if chart_rows > 1 { (chart_height - top) % (chart_rows - 1) } else { 0 };
    let constraints: Vec<Constraint> = rows
        .iter()
        .enumerate()
        .map(|(i, _)| match i {
            _ if i + 1 == rows.len() => Constraint::Min(EVENTS_MIN_HEIGHT),
            // Not shortened: every chart row its percentage, as without the runs' height.
            _ if top >= share => Constraint::Percentage(CHART_ROWS_PERCENT / chart_rows),
            0 => Constraint::Length(top),
            1 => Constraint::Length(others + remainder),
            _ => Constraint::Length(others),
        })
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
    panes
}

/// The hardware pane with only `rows` to show (no GPU) takes those rows at the foot
/// of its column and the throughput chart above it the rest; the runs list beside
/// the chart keeps only the rows its `runs` need, and the training chart under it
/// the rest. Nothing changes when the hardware pane's row is no taller than `rows`,
/// or the four panes are not where the grid puts them (two rows of two columns).
fn fit_hardware(panes: &mut [(PaneId, Rect)], rows: u16, runs: u16) {
    let at = |panes: &[(PaneId, Rect)], id: PaneId| panes.iter().position(|(p, _)| *p == id);
    let (Some(r), Some(t), Some(tr), Some(h)) = (at(panes, PaneId::Runs), at(panes, PaneId::Throughput), at(panes, PaneId::Training), at(panes, PaneId::Hardware)) else { return };
    let (runs_area, throughput, training, hardware) = (panes[r].1, panes[t].1, panes[tr].1, panes[h].1);
    let stacked = |above: Rect, below: Rect| above.x == below.x && above.width == below.width && above.bottom() == below.y;
    if hardware.height <= rows || !stacked(runs_area, training) || !stacked(throughput, hardware) || runs_area.y != throughput.y || training.bottom() != hardware.bottom() {
        return;
    }
    let bottom = hardware.bottom();
    panes[h].1 = Rect { y: bottom - rows, height: rows, ..hardware };
    panes[t].1 = Rect { height: bottom - rows - throughput.y, ..throughput };
    let runs_height = (runs + COMPACT_RUNS_CHROME).min(runs_area.height);
    panes[r].1 = Rect { height: runs_height, ..runs_area };
    panes[tr].1 = Rect { y: runs_area.y + runs_height, height: bottom - runs_area.y - runs_height, ..training };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pane_gets_an_area_inside_the_screen() {
        let screen = Rect::new(0, 0, 120, 40);
        let all: Vec<PaneId> = PANES.iter().map(|p| p.id).collect();
        let a = areas(screen, Arrangement::Grid { runs: 3, hardware: None }, &all);
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
        let a = areas(Rect::new(0, 0, 100, 30), Arrangement::Zoomed(PaneId::Training), &[]);
        assert_eq!(a.panes, vec![(PaneId::Training, Rect::new(0, 1, 100, 28))]);
    }

    #[test]
    fn hidden_optional_panes_take_no_space() {
        let fixed = [PaneId::Runs, PaneId::Throughput, PaneId::Training, PaneId::Hardware, PaneId::Events];
        let a = areas(Rect::new(0, 0, 100, 30), Arrangement::Grid { runs: 3, hardware: None }, &fixed);
        assert_eq!(a.panes.len(), 5);
        let bottom = |a: &Areas| a.panes.iter().map(|(_, r)| r.bottom()).max().unwrap();
        assert_eq!(bottom(&a), 29, "the panes fill the body");
        let with_moe = [&fixed[..4], &[PaneId::Moe, PaneId::Events]].concat();
        let b = areas(Rect::new(0, 0, 100, 30), Arrangement::Grid { runs: 3, hardware: None }, &with_moe);
        let moe = b.panes.iter().find(|(p, _)| *p == PaneId::Moe).unwrap().1;
        assert_eq!(moe.width, 100, "alone in its row, MoE takes the width");
    }

    #[test]
    fn the_runs_row_takes_the_height_its_runs_need() {
        let all = [PaneId::Runs, PaneId::Throughput, PaneId::Training, PaneId::Hardware, PaneId::Events, PaneId::Alerts];
        let height = |runs: u16, id: PaneId| areas(Rect::new(0, 0, 160, 48), Arrangement::Grid { runs, hardware: None }, &all).panes.iter().find(|(p, _)| *p == id).unwrap().1.height;
        assert_eq!(height(1, PaneId::Runs), GRID_TOP_MIN_HEIGHT, "one run: a short row");
        assert!(height(1, PaneId::Training) > height(12, PaneId::Training), "the training row gets the rest");
        assert_eq!(height(1, PaneId::Events), height(12, PaneId::Events), "events keep their share");
        assert_eq!(height(12, PaneId::Runs), 16);
        assert_eq!(height(40, PaneId::Runs), 17, "many runs: no more than an even share");
    }

    #[test]
    fn without_a_gpu_the_hardware_pane_takes_its_rows_and_the_charts_the_rest() {
        let four = [PaneId::Runs, PaneId::Throughput, PaneId::Training, PaneId::Hardware, PaneId::Events, PaneId::Alerts];
        let with_rl = [PaneId::Runs, PaneId::Throughput, PaneId::Training, PaneId::Hardware, PaneId::Rl, PaneId::Events, PaneId::Alerts];
        for (screen, visible) in [(Rect::new(0, 0, 160, 48), &four[..]), (Rect::new(0, 0, 120, 30), &four[..]), (Rect::new(0, 0, 160, 48), &with_rl[..])] {
            let of = |a: &Areas, id: PaneId| a.panes.iter().find(|(p, _)| *p == id).unwrap().1;
            let grid = areas(screen, Arrangement::Grid { runs: 2, hardware: None }, visible);
            let fitted = areas(screen, Arrangement::Grid { runs: 2, hardware: Some(7) }, visible);
            let hardware = of(&fitted, PaneId::Hardware);
            assert_eq!((hardware.height, hardware.bottom(), hardware.x, hardware.width), (7, of(&grid, PaneId::Hardware).bottom(), of(&grid, PaneId::Hardware).x, of(&grid, PaneId::Hardware).width));
            // The throughput chart above it takes the rest of its column.
            let throughput = of(&fitted, PaneId::Throughput);
            assert_eq!((throughput.y, throughput.bottom()), (of(&grid, PaneId::Throughput).y, hardware.y));
            // The runs list keeps the rows of its runs; the training chart under it the rest.
            assert_eq!(of(&fitted, PaneId::Runs).height, 2 + COMPACT_RUNS_CHROME);
            let training = of(&fitted, PaneId::Training);
            assert_eq!((training.y, training.bottom()), (of(&fitted, PaneId::Runs).bottom(), hardware.bottom()));
            assert!(training.height > of(&grid, PaneId::Training).height && throughput.height > of(&grid, PaneId::Throughput).height);
            // Nothing else moves, nothing overlaps.
            for id in [PaneId::Rl, PaneId::Events, PaneId::Alerts].into_iter().filter(|id| visible.contains(id)) {
                assert_eq!(of(&fitted, id), of(&grid, id));
            }
            for (i, (a, ra)) in fitted.panes.iter().enumerate() {
                for (b, rb) in &fitted.panes[i + 1..] {
                    assert!(ra.intersection(*rb).is_empty(), "{a:?} {ra:?} and {b:?} {rb:?}");
                }
            }
        }
        // Rows it would not fill: the grid as it is.
        let grid = areas(Rect::new(0, 0, 160, 48), Arrangement::Grid { runs: 2, hardware: None }, &four);
        assert_eq!(areas(Rect::new(0, 0, 160, 48), Arrangement::Grid { runs: 2, hardware: Some(40) }, &four), grid);
    }

    #[test]
    fn focus_moves_skip_hidden_rows() {
        let fixed = [PaneId::Runs, PaneId::Throughput, PaneId::Training, PaneId::Hardware, PaneId::Events];
        assert_eq!(PaneId::Training.neighbour(0, 1, &fixed), PaneId::Events);
        let with_rl = [PaneId::Runs, PaneId::Throughput, PaneId::Training, PaneId::Hardware, PaneId::Rl, PaneId::Events];
        assert_eq!(PaneId::Hardware.neighbour(0, 1, &with_rl), PaneId::Rl);
        assert_eq!(PaneId::Rl.neighbour(1, 0, &with_rl), PaneId::Rl, "nothing to its right");
    }

    #[test]
    fn compact_gives_the_runs_list_its_rows_and_one_pane_the_rest() {
        let screen = Rect::new(0, 0, 80, 24);
        assert!(is_compact(screen) && !is_compact(Rect::new(0, 0, 160, 48)) && is_compact(Rect::new(0, 0, 160, 24)));
        let a = areas(screen, Arrangement::Compact { shown: PaneId::Training, runs: 3 }, &[]);
        assert_eq!(a.panes, vec![(PaneId::Runs, Rect::new(0, 1, 80, 7)), (PaneId::Training, Rect::new(0, 8, 80, 15))]);
        let many = areas(screen, Arrangement::Compact { shown: PaneId::Events, runs: 40 }, &[]);
        assert_eq!(many.panes[1].1.height, 15, "many runs: the list is capped and scrolls out of view");
    }

    #[test]
    fn cycling_skips_the_runs_list_and_hidden_panes() {
        let fixed = [PaneId::Runs, PaneId::Throughput, PaneId::Training, PaneId::Hardware, PaneId::Events, PaneId::Alerts];
        assert_eq!(PaneId::Throughput.cycle(1, &fixed), PaneId::Training);
        assert_eq!(PaneId::Alerts.cycle(1, &fixed), PaneId::Throughput, "wraps");
        assert_eq!(PaneId::Throughput.cycle(-1, &fixed), PaneId::Alerts);
        assert_eq!(PaneId::Hardware.cycle(1, &fixed), PaneId::Events, "RL, MoE, representation hidden");
        assert_eq!(PaneId::Runs.cycle(1, &fixed), PaneId::Throughput);
    }
}
