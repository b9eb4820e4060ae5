//! Snapshot size and load time on realistic curves: one run of N steps with 20
//! metrics shaped like a real RLHF/LM run (f32 losses and rewards with noise, an f64
//! cosine learning rate, integer token counts, wall-clock step times and times).
//! Prints bytes per metric point for both row orders, and the load time.
//!   cargo bench --bench snapshot            (1M steps x 20 metrics = 20M points)
//!   cargo bench --bench snapshot -- 500000  (steps)
//!   RLMON_BENCH_KEEP=DIR keeps the files (DIR/bench-<order>.rlmon.parquet)
use std::time::Instant;

use rlmon::record::model::{Meta, Recording};
use rlmon::record::snapshot::{self, RowOrder};
use rlmon::session::{Event, RunRecord};

/// A small deterministic generator, so every run measures the same data.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn noise(&mut self) -> f64 {
        self.unit() + self.unit() - 1.0
    }
}

fn recording(steps: u64) -> Recording {
    let runs = vec![RunRecord::new("policy".into(), "rlhf".into(), "cuda:0".into(), steps)];
    let mut rec = Recording::new(Meta::new("bench", "20260101T000000Z".into(), String::new(), &runs));
    rec.record(0.0, &Event::RunStarted { run: 0, device: "cuda:0".into(), threads: 1 });
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut t = 0.0;
    let f32v = |x: f64| x as f32 as f64; // what a framework logging f32 tensors sends
    for step in 1..=steps {
        let x = step as f64 / steps as f64;
        let step_time = 0.25 + 0.01 * rng.noise();
        t += step_time;
        let lr = 1e-5 * (0.1 + 0.9 * 0.5 * (1.0 + (std::f64::consts::PI * x).cos()));
        let values = vec![
            ("loss".into(), f32v(2.0 + 3.0 * (-8.0 * x).exp() + 0.05 * rng.noise())),
            ("lr".into(), lr),
            ("grad_norm".into(), f32v(0.8 + 0.2 * rng.noise())),
            ("tokens".into(), (4096.0 + (rng.unit() * 512.0).floor()).floor()),
            ("samples".into(), 32.0),
            ("step_time_s".into(), step_time),
            ("kl".into(), f32v(0.02 + 0.01 * x + 0.003 * rng.noise())),
            ("kl_coef".into(), 0.05),
            ("reward".into(), f32v(0.2 + 0.6 * x + 0.05 * rng.noise())),
            ("reward_std".into(), f32v(0.3 + 0.02 * rng.noise())),
            ("entropy".into(), f32v(1.5 - 0.5 * x + 0.02 * rng.noise())),
            ("clip_frac".into(), f32v(0.1 + 0.02 * rng.noise())),
            ("approx_kl".into(), f32v(0.005 + 0.001 * rng.noise())),
            ("response_len".into(), f32v(120.0 + 10.0 * rng.noise())),
            ("moe/aux_loss".into(), f32v(0.01 + 0.001 * rng.noise())),
            ("moe/L0/dropped_frac".into(), f32v((0.01 * rng.unit()).max(0.0))),
            ("mem/gpu_bytes".into(), (30e9 + (rng.unit() * 64.0).floor() * 2.0f64.powi(20)).floor()),
            ("ndt/L0/stable_rank".into(), f32v(12.0 + rng.noise())),
            ("ndt/L0/participation_ratio".into(), f32v(0.4 + 0.01 * rng.noise())),
            ("value_loss".into(), f32v(0.5 * (-3.0 * x).exp() + 0.02 * rng.noise())),
        ];
        rec.record(t, &Event::Metrics { run: 0, step, time_s: t, values });
    }
    rec
}

fn main() {
    let steps: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1_000_000);
    let rec = recording(steps);
    let points = rec.points.len();
    let dir = tempfile::tempdir().expect("temp dir");
    println!("{steps} steps x 20 metrics = {points} points");
    for (label, order) in [("run, step, metric", RowOrder::RunStepMetric), ("run, metric, step", RowOrder::RunMetricStep)] {
        let keep = std::env::var_os("RLMON_BENCH_KEEP").map(std::path::PathBuf::from);
        let file = format!("bench-{}.rlmon.parquet", label.replace(", ", "-"));
        let path = keep.unwrap_or_else(|| dir.path().to_path_buf()).join(file);
        let t0 = Instant::now();
        snapshot::write_ordered(&path, &rec, order).expect("write");
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
            "order {label:<18} {bytes:>11} bytes  {:.2} bytes/point  write {write_s:.2} s  load {:.2} s (median of 3, {:.0} M points/s)",
            bytes as f64 / points as f64,
            loads[1],
            points as f64 / loads[1] / 1e6
        );
    }
}
