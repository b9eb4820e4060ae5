// Each benchmark uses part of this module.
#![allow(dead_code)]
//! The realistic recorded session the snapshot and journal benchmarks share: one
//! run of N steps with 20 metrics shaped like a real RLHF/LM run.
use rlmon::record::model::{Meta, Recording};
use rlmon::session::{Event, RunRecord};

/// A small deterministic generator, so every run measures the same data.
pub struct Rng(u64);

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

/// The runs of the benchmark session: one RLHF policy of `steps` steps.
pub fn runs(steps: u64) -> Vec<RunRecord> {
    vec![RunRecord::new("policy".into(), "rlhf".into(), "cuda:0".into(), steps)]
}

/// The events of `steps` steps (run start, then one metrics event per step), with
/// their session times, generated lazily so a long run needs no memory up front.
pub fn events(steps: u64) -> impl Iterator<Item = (f64, Event)> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut t = 0.0;
    let f32v = |x: f64| x as f32 as f64; // what a framework logging f32 tensors sends
    let start = std::iter::once((0.0, Event::RunStarted { run: 0, device: "cuda:0".into(), threads: 1 }));
    start.chain((1..=steps).map(move |step| {
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
        (t, Event::Metrics { run: 0, step, time_s: t, values })
    }))
}

/// The whole session recorded in memory.
pub fn recording(steps: u64) -> Recording {
    let mut rec = Recording::new(Meta::new("bench", "20260101T000000Z".into(), String::new(), &runs(steps)));
    for (t, e) in events(steps) {
        rec.record(t, &e);
    }
    rec
}
