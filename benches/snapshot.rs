//! Snapshot size and load time on realistic curves: one run of N steps with 20
//! metrics shaped like a real RLHF/LM run (f32 losses and rewards with noise, an f64
//! cosine learning rate, integer token counts, wall-clock step times and times).
//! Prints bytes per metric point for both row orders and for journal checkpoints'
//! faster setting, and the load time.
//!   cargo bench --bench snapshot            (1M steps x 20 metrics = 20M points)
//!   cargo bench --bench snapshot -- 500000  (steps)
//!   RLMON_BENCH_KEEP=DIR keeps the files (DIR/bench-<order>.rlmon.parquet)
//!   -- 10000000 --session-only: writes only DIR/bench-step-blocks.rlmon.parquet, 1M
//!   steps at a time (memory bounded, for the long-session benchmark), and no timing
use std::time::Instant;

mod common;

use common::recording;
use rlmon::record::model::{Meta, Recording};
use rlmon::record::snapshot::{self, RowOrder, Settings};

/// Steps generated and written at a time by `--session-only`.
const PART_STEPS: usize = 1_000_000;

/// The session written in parts of `PART_STEPS` steps, each part its own row groups
/// (as a journal's snapshot is written): the same points as `recording(steps)`.
fn write_session_in_parts(steps: u64, path: &std::path::Path) {
    // The metadata comes first in the file: one pass for it, one for the points.
    let mut meta = Recording::new(Meta::new("bench", "20260101T000000Z".into(), String::new(), &common::runs(steps)));
    for (t, e) in common::events(steps) {
        match e {
            rlmon::session::Event::Metrics { .. } => meta.meta.elapsed_s = meta.meta.elapsed_s.max(t),
            e => meta.record(t, &e),
        }
    }
    let mut events = common::events(steps);
    let names = meta.points.clone();
    let parts = std::iter::from_fn(|| {
        let mut part = Recording::from_parts(meta.meta.clone(), names.clone());
        for (t, e) in events.by_ref().take(PART_STEPS) {
            part.record(t, &e);
        }
        (!part.points.is_empty()).then_some(std::borrow::Cow::Owned(part.points))
    });
    snapshot::write_parts(path, &meta.meta, parts, snapshot::SNAPSHOT).expect("write");
}

fn main() {
    let steps: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1_000_000);
    if std::env::args().any(|a| a == "--session-only") {
        let dir = std::env::var_os("RLMON_BENCH_KEEP").map(std::path::PathBuf::from).expect("--session-only needs RLMON_BENCH_KEEP");
        let path = dir.join("bench-step-blocks.rlmon.parquet");
        write_session_in_parts(steps, &path);
        println!("{}", path.display());
        return;
    }
    let rec = recording(steps);
    let points = rec.points.len();
    let dir = tempfile::tempdir().expect("temp dir");
    println!("{steps} steps x 20 metrics = {points} points");
    let layouts = [
        ("step blocks", snapshot::SNAPSHOT),
        ("run, step, metric", Settings { order: RowOrder::RunStepMetric, ..snapshot::SNAPSHOT }),
        ("checkpoint (zstd 3)", snapshot::CHECKPOINT),
    ];
    for (label, settings) in layouts {
        let keep = std::env::var_os("RLMON_BENCH_KEEP").map(std::path::PathBuf::from);
        let file = format!("bench-{}.rlmon.parquet", label.replace(", ", "-").replace([' ', '(', ')'], "-"));
        let path = keep.unwrap_or_else(|| dir.path().to_path_buf()).join(file);
        let t0 = Instant::now();
        snapshot::write_with(&path, &rec, settings).expect("write");
        let write_s = t0.elapsed().as_secs_f64();
        let bytes = std::fs::metadata(&path).expect("size").len();
        let mut loads: Vec<f64> = (0..3)
            .map(|_| {
                let t0 = Instant::now();
                let back = snapshot::read(&path).expect("read");
                assert_eq!(back.points.len(), points);
                t0.elapsed().as_secs_f64()
            })
            .collect();
        loads.sort_by(f64::total_cmp);
        println!(
            "{label:<20} {bytes:>11} bytes  {:.2} bytes/point  write {write_s:.2} s  load {:.2} s (median of 3, {:.0} M points/s)",
            bytes as f64 / points as f64,
            loads[1],
            points as f64 / loads[1] / 1e6
        );
    }
}
