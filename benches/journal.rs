//! Journal cost over long runs: the benchmark session's events (one run, 20 metrics
//! a step, as in the snapshot benchmark) go through a `Recorder` (writer thread,
//! checksummed segments, Parquet checkpoints every 32 MiB of segment) as fast as
//! they can be sent, then the session is finished into its snapshot. Printed per
//! length: seconds until every event is journalled and the snapshot written,
//! microseconds per step, and the checkpoints written. Each compaction writes only
//! the points since the last one, so time per step should not grow with length.
//!   cargo bench --bench journal                   (250k, 500k and 1M steps)
//!   cargo bench --bench journal -- 2000000        (given lengths)
use std::time::{Duration, Instant};

mod common;

use rlmon::record::journal::{Finale, Recorder};
use rlmon::record::model::Meta;

fn main() {
    let mut lengths: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    if lengths.is_empty() {
        lengths = vec![250_000, 500_000, 1_000_000];
    }
    println!("{:>10} {:>11} {:>10} {:>12} {:>12}", "steps", "points", "seconds", "us/step", "checkpoints");
    for steps in lengths {
        let dir = tempfile::tempdir().expect("temp dir");
        let meta = Meta::new("bench", "20260101T000000Z".into(), String::new(), &common::runs(steps));
        let t0 = Instant::now();
        let recorder = Recorder::start(dir.path(), "bench", meta).expect("recorder");
        let journal = recorder.journal.clone();
        // Checkpoints are removed with the journal at the finish: count them while it lasts.
        let watcher = std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while let Ok(entries) = std::fs::read_dir(&journal) {
                seen.extend(entries.filter_map(|e| e.ok()).map(|e| e.file_name()).filter(|n| n.to_string_lossy().starts_with("checkpoint-")));
                std::thread::sleep(Duration::from_millis(50));
            }
            seen.len()
        });
        for (t, e) in common::events(steps) {
            recorder.record(t, &e);
        }
        let snapshot = recorder.finish(Finale::default()).expect("snapshot");
        let secs = t0.elapsed().as_secs_f64();
        let checkpoints = watcher.join().expect("watcher");
        assert!(snapshot.exists());
        println!("{steps:>10} {:>11} {secs:>10.2} {:>12.2} {checkpoints:>12}", steps * 20, 1e6 * secs / steps as f64);
    }
}
