//! A fifth corpus, for study case by case: the kinds whose recall on data never
//! tuned on is just under the goal (kl_spike, grad_vanishing, reward_saturation,
//! expert_collapse, throughput_regression), written from how these faults look in
//! real runs and from the words, not from the other generators or the
//! detectors' defaults. Each faulty run has a clean twin of the same shape.
//!
//! - Onsets early (5-15% of the run, at least 30 logged points in: right after a
//!   run's warm-up) or late (its last 5%, leaving the event room to be seen).
//! - Runs of 80 to 200,000 logged points, logged every 1-100 steps, some with
//!   gaps (a restart, a logger that drops points).
//! - Noise on the log scale (normal or Student-t 3-6) through AR(1) 0.5-0.95, and
//!   regime changes (the noise grows, or the level moves) part way through.
//! - Magnitudes just past each kind's README definition, and events that last
//!   few points.
//! - kl_spike: KL near its floor (0.001-0.02) or higher, held by an adaptive
//!   controller on half the runs. grad_vanishing: grad norms that fall over
//!   training before vanishing, at once, over a few points, or to exactly zero.
//!   reward_saturation: signed rewards (around zero or negative) pinned at a
//!   bound, with or without `reward_std`. expert_collapse: loads as fractions or
//!   token counts, 8-128 experts, 1-4 layers. throughput_regression: tokens/s,
//!   samples/s or the step time, with eval and checkpoint pauses.
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::indep::Xo;
use super::synth::{Benign, Case, Family, Fault};

pub const INDEP5_VERSION: u32 = 1;

/// The study families, each named by the kind its faulty runs carry.
pub const KINDS: [AlertKind; 5] = [AlertKind::KlSpike, AlertKind::GradVanishing, AlertKind::RewardSaturation, AlertKind::ExpertCollapse, AlertKind::ThroughputRegression];
/// Per kind and seed: three magnitudes, each early and late, and three clean twins.
const FAULTY: u64 = 6;
const CLEAN: u64 = 3;

/// A case and the (training step, wall time) each point was logged at.
pub struct Indep5Case {
    pub case: Case,
    pub logged: Vec<(u64, f64)>,
}

/// When a fault starts: early or late in the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum When {
    Early,
    Late,
}

/// Per seed and kind: (kind, Some((magnitude, when)) for a faulty run or None, case seed).
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (AlertKind, Option<(usize, When)>, u64)> {
    seeds.flat_map(|seed| {
        KINDS.into_iter().flat_map(move |k| {
            (0..FAULTY + CLEAN).map(move |i| {
                let fault = (i < FAULTY).then(|| ((i / 2) as usize, if i % 2 == 0 { When::Early } else { When::Late }));
                (k, fault, seed * 32 + i)
            })
        })
    })
}

/// Noise on the log scale: AR(1) with normal or Student-t innovations, scaled so
/// its stationary spread is `scale`; `regime` multiplies the scale from a point on.
struct LogNoise {
    df: Option<u32>,
    phi: f64,
    scale: f64,
    state: f64,
}

impl LogNoise {
    fn new(rng: &mut Xo, lo: f64, hi: f64) -> Self {
        LogNoise { df: rng.pick(&[None, Some(3), Some(4), Some(6)]), phi: rng.pick(&[0.0, 0.5, 0.7, 0.9, 0.95]), scale: rng.range(lo, hi), state: 0.0 }
    }

    fn next(&mut self, rng: &mut Xo, regime: f64) -> f64 {
        let e = match self.df {
            Some(df) => rng.student_t(df),
            None => rng.normal(),
        };
        self.state = self.phi * self.state + (1.0 - self.phi * self.phi).sqrt() * e;
        self.scale * regime * self.state
    }

    fn label(&self) -> String {
        format!("noise{:.2}-phi{}-{}", self.scale, self.phi, self.df.map_or("normal".into(), |d| format!("t{d}")))
    }
}

/// The run's shape, shared by a faulty run and its clean twin.
struct Shape {
    n: usize,
    every: u64,
    /// Logged-point indices after which the next point comes after a gap of this many steps.
    gaps: Vec<(usize, u64)>,
    /// From this point on the noise is this many times larger, or the level moves by this factor.
    regime: Option<(usize, f64, f64)>,
}

impl Shape {
    fn new(rng: &mut Xo, clean: bool) -> Self {
        let n = if clean { rng.pick(&[80, 150, 400, 1_000, 3_000, 10_000, 50_000, 200_000]) } else { rng.pick(&[80, 150, 400, 1_000, 3_000, 10_000, 50_000]) };
        let every = rng.pick(&[1u64, 1, 10, 20, 50, 100]);
        let gaps = if rng.unit() < 0.3 { (0..rng.pick(&[1usize, 2, 4])).map(|_| ((rng.range(0.1, 0.9) * n as f64) as usize, every * rng.pick(&[5u64, 20, 50]))).collect() } else { Vec::new() };
        let regime = (rng.unit() < 0.4).then(|| ((rng.range(0.2, 0.8) * n as f64) as usize, rng.range(1.3, 2.0), rng.range(0.7, 1.4)));
        Shape { n, every, gaps, regime }
    }

    /// (noise multiplier, level multiplier) at point `i`.
    fn regime(&self, i: usize) -> (f64, f64) {
        match self.regime {
            Some((at, noise, level)) if i >= at => (noise, level),
            _ => (1.0, 1.0),
        }
    }

    /// The (step, time) of every point.
    fn logged(&self) -> Vec<(u64, f64)> {
        let mut step = 0u64;
        (0..self.n)
            .map(|i| {
                let at = (step, step as f64 * 0.5);
                step += self.every + self.gaps.iter().filter(|(g, _)| *g == i).map(|(_, by)| by).sum::<u64>();
                at
            })
            .collect()
    }

    fn label(&self) -> String {
        format!("n{}-every{}{}{}", self.n, self.every, if self.gaps.is_empty() { "" } else { "-gaps" }, self.regime.map_or(String::new(), |(at, nz, lv)| format!("-regime@{at}x{nz:.1}/{lv:.2}")))
    }
}

/// The onset of a fault of `len` points (and `room` more to be seen) in a run of `n`.
fn onset(rng: &mut Xo, n: usize, when: When, len: usize, room: usize) -> usize {
    let latest = n.saturating_sub(len.min(n / 4) + room).max(1);
    match when {
        When::Early => ((rng.range(0.05, 0.15) * n as f64) as usize).max(30).min(latest),
        When::Late => n - ((rng.range(0.01, 0.05) * n as f64) as usize).max(len + room).min(n - 30),
    }
}

fn row(values: Vec<(MetricName, f64)>) -> Vec<(MetricName, f64)> {
    values
}

pub fn generate(kind: AlertKind, fault: Option<(usize, When)>, seed: u64) -> Indep5Case {
    let mut rng = Xo::new(seed.wrapping_mul(0xA24B_AED4_963E_E407) ^ ((kind as u64) << 36) ^ 0x5EED_0005);
    let shape = Shape::new(&mut rng, fault.is_none());
    let (name, family, fault_at, benign, steps) = match kind {
        AlertKind::KlSpike => kl_run(&mut rng, &shape, fault),
        AlertKind::GradVanishing => grad_run(&mut rng, &shape, fault),
        AlertKind::RewardSaturation => reward_run(&mut rng, &shape, fault),
        AlertKind::ExpertCollapse => moe_run(&mut rng, &shape, fault),
        _ => speed_run(&mut rng, &shape, fault),
    };
    let tag = fault.map_or("clean".to_owned(), |(m, w)| format!("m{m}-{}", if w == When::Early { "early" } else { "late" }));
    let fault = fault.zip(fault_at).map(|((m, _), o)| Fault { kind, onset: o as u64, magnitude: m });
    let case = Case { name: format!("indep5-{kind}-{tag}-s{seed}-{}-{name}", shape.label()), family, fault, benign, steps, partner: None };
    Indep5Case { logged: shape.logged(), case }
}

type Generated = (String, Family, Option<usize>, Vec<Benign>, Vec<Vec<(MetricName, f64)>>);

/// An RL run's KL, near its floor or higher, with or without an adaptive controller.
fn kl_run(rng: &mut Xo, shape: &Shape, fault: Option<(usize, When)>) -> Generated {
    let n = shape.n;
    let near_floor = rng.unit() < 0.5;
    let target = if near_floor { rng.range(0.001, 0.02) } else { rng.range(0.02, 0.3) };
    let ramp = rng.range(0.01, 0.05) * n as f64 + 3.0;
    let controller = (rng.unit() < 0.5).then(|| (rng.range(0.1, 0.4), rng.range(40.0, 1_500.0)));
    let mut noise = LogNoise::new(rng, 0.05, 0.25);
    let (by, len) = (fault.map_or(1.0, |(m, _)| [4.0, 6.0, 15.0][m]), rng.pick(&[2usize, 3, 4, 6]));
    let at = fault.map(|(_, w)| onset(rng, n, w, len, 3));
    let coef0 = rng.range(0.01, 0.2);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64;
        let (nz, lv) = shape.regime(i);
        let osc = controller.map_or(1.0, |(amp, period)| (amp * (std::f64::consts::TAU * t / period).sin()).exp());
        let mut level = target * (1.0 - (-t / ramp).exp()).max(0.02) * osc * lv;
        if at.is_some_and(|o| i >= o && i < o + len) {
            level *= by;
        }
        let kl = level * noise.next(rng, nz).exp();
        let coef = controller.map_or(coef0, |(amp, period)| coef0 * (0.8 * amp * (std::f64::consts::TAU * t / period - 1.0).sin()).exp());
        let reward = -0.5 + 0.6 * (t / (0.3 * n as f64 + 10.0)).tanh() + 0.05 * rng.normal();
        steps.push(row(vec![(catalog::KL.into(), kl), (catalog::KL_COEF.into(), coef), (catalog::REWARD.into(), reward), (catalog::LOSS.into(), -0.02 + 0.05 * rng.normal())]));
    }
    let name = format!("target{target:.4}{}-{}-spike{by}x{len}", controller.map_or(String::new(), |(a, p)| format!("-ctl{a:.2}/{p:.0}")), noise.label());
    (name, Family::Rl, at, vec![Benign { what: "kl_ramp", step: 0 }], steps)
}

/// A pretraining run's grad norm, falling over training, then vanishing.
fn grad_run(rng: &mut Xo, shape: &Shape, fault: Option<(usize, When)>) -> Generated {
    let n = shape.n;
    let nf = n as f64;
    let g_end = rng.range(0.05, 2.0);
    let (early, tau) = (rng.range(2.0, 10.0), rng.range(0.01, 0.1) * nf + 5.0);
    // A slow fall over the whole run (to 30-90% of the level after the early fall).
    let fall = rng.range(0.3, 0.9);
    let mut noise = LogNoise::new(rng, 0.05, 0.3);
    // The vanished level (a share of the level), how it gets there and how long it stays.
    let to: f64 = fault.map_or(1.0, |(m, _)| [0.008, 0.002, 0.0][m]);
    let over = rng.pick(&[1usize, 1, 3, 8]);
    let lasts = rng.pick(&[8usize, 15, 40, usize::MAX]);
    let at = fault.map(|(_, w)| onset(rng, n, w, over + 6, 2));
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64;
        let (nz, lv) = shape.regime(i);
        let level = g_end * (1.0 + early * (-t / tau).exp()) * (1.0 - (1.0 - fall) * t / nf) * lv;
        let mut g = level * noise.next(rng, nz).exp();
        let mut loss = (2.0 + 3.0 * (1.0 + t / (0.02 * nf + 5.0)).powf(-0.5)) * (1.0 + 0.01 * rng.normal());
        if let Some(o) = at.filter(|o| i >= *o && i - *o < lasts.saturating_add(over)) {
            let x = (i - o + 1) as f64 / over as f64;
            // Down on the log scale to the vanished share over `over` points.
            g *= if to == 0.0 { if x >= 1.0 { 0.0 } else { 0.001f64.powf(x) } } else { to.powf(x.min(1.0)) };
            loss = loss.max(2.0) * 1.0;
        }
        steps.push(row(vec![(catalog::LOSS.into(), loss), (catalog::GRAD_NORM.into(), g)]));
    }
    let name = format!("fall{fall:.2}-{}-to{to}-over{over}-lasts{}", noise.label(), if lasts == usize::MAX { "end".into() } else { lasts.to_string() });
    (name, Family::Pretrain, at, vec![Benign { what: "early_fall", step: 0 }], steps)
}

/// An RL run's reward (signed: around zero or negative), climbing, then pinned
/// at a bound with its spread collapsed.
fn reward_run(rng: &mut Xo, shape: &Shape, fault: Option<(usize, When)>) -> Generated {
    let n = shape.n;
    let nf = n as f64;
    // The bound the reward saturates at, and where it starts.
    let (start, bound) = rng.pick(&[(-1.0, 0.0), (-0.5, 0.5), (-2.0, -0.2), (0.0, 1.0), (-10.0, 10.0)]);
    let width = bound - start;
    let tau = rng.range(0.1, 0.5) * nf + 10.0;
    let with_std = rng.unit() < 0.7;
    // The batch's spread of rewards, and how many samples a batch mean averages.
    let std0 = rng.range(0.15, 0.4) * width;
    let batch: f64 = rng.pick(&[8.0, 32.0, 128.0, 512.0]);
    let mut noise = LogNoise::new(rng, 0.05, 0.2);
    let to = fault.map_or(1.0, |(m, _)| [0.12, 0.07, 0.02][m]);
    let over = rng.pick(&[1usize, 5, 20]);
    let at = fault.map(|(_, w)| onset(rng, n, w, over + 12, 6));
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64;
        let (nz, _) = shape.regime(i);
        // Climbs towards 80% of the way to its bound; a healthy run's spread stays.
        let mut mean = start + 0.8 * width * (t / tau).tanh();
        let mut std = std0 * (1.0 - 0.3 * (t / tau).tanh()) * noise.next(rng, nz).exp();
        if let Some(o) = at.filter(|o| i >= *o) {
            let x = (((i - o + 1) as f64) / over as f64).min(1.0);
            mean += x * (bound - mean);
            std *= 1.0 - x * (1.0 - to);
        }
        let reward = (mean + std / batch.sqrt() * rng.normal()).min(bound);
        let mut values: Vec<(MetricName, f64)> = vec![(catalog::REWARD.into(), reward)];
        if with_std {
            values.push((catalog::REWARD_STD.into(), std));
        }
        values.push((catalog::KL.into(), 0.02 * (1.0 + 0.1 * rng.normal()).abs()));
        steps.push(row(values));
    }
    let name = format!("from{start}-to{bound}{}-batch{batch}-{}-std{to}-over{over}", if with_std { "-std" } else { "" }, noise.label());
    (name, Family::Rl, at, vec![Benign { what: "reward_climb", step: 0 }], steps)
}

/// Balance exp(H)/N of weights.
fn balance_of(w: &[f64]) -> f64 {
    let total: f64 = w.iter().sum();
    let h: f64 = w.iter().filter(|v| **v > 0.0).map(|v| v / total).map(|p| -p * p.ln()).sum();
    h.exp() / w.len() as f64
}

/// Logits sharpened by `beta`: the routing weights.
fn sharpened(z: &[f64], beta: f64) -> Vec<f64> {
    z.iter().map(|v| (beta * v).exp()).collect()
}

/// The `beta` whose sharpened weights have balance `target` (bisection).
fn beta_for(z: &[f64], target: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 60.0f64);
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        if balance_of(&sharpened(z, mid)) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// An MoE run's per-expert loads, per layer, as fractions or token counts.
fn moe_run(rng: &mut Xo, shape: &Shape, fault: Option<(usize, When)>) -> Generated {
    let n = shape.n.min(50_000);
    let layers = rng.pick(&[1usize, 2, 4]);
    let experts = rng.pick(&[8usize, 16, 32, 64, 128]);
    let counts = rng.unit() < 0.5;
    let tokens = rng.pick(&[2_048.0, 16_384.0, 262_144.0]) * rng.pick(&[1.0, 2.0]);
    // Healthy imbalance: logits with this spread, drifting slowly.
    let spread = rng.range(0.2, 0.7);
    let phi = rng.pick(&[0.9, 0.99, 0.999]);
    let mut z: Vec<Vec<f64>> = (0..layers).map(|_| (0..experts).map(|_| spread * rng.normal()).collect()).collect();
    // The collapsed layer's balance, how fast it gets there and how long it stays.
    let to = fault.map_or(1.0, |(m, _)| [0.45, 0.35, 0.15][m]);
    let over = rng.pick(&[1usize, 5, 30]);
    let lasts = rng.pick(&[10usize, 30, usize::MAX]);
    let at = fault.map(|(_, w)| onset(rng, n, w, over + 8, 2));
    let bad = rng.pick(&(0..layers).collect::<Vec<_>>());
    // One favourite direction the collapsed router sharpens along.
    let favour: Vec<f64> = (0..experts).map(|_| rng.normal()).collect();
    let beta = beta_for(&favour, to);
    let sparse_layers = rng.unit() < 0.3;
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let mut values: Vec<(MetricName, f64)> = vec![(catalog::LOSS.into(), 2.5 + 2.0 / (1.0 + i as f64 / 100.0) + 0.02 * rng.normal())];
        for (l, zl) in z.iter_mut().enumerate() {
            for v in zl.iter_mut() {
                *v = phi * *v + (1.0 - phi * phi).sqrt() * spread * rng.normal();
            }
            let mut w: Vec<f64> = zl.iter().map(|v| v.exp()).collect();
            if let Some(o) = at.filter(|o| l == bad && i >= *o && i - *o < lasts.saturating_add(over)) {
                let x = (((i - o + 1) as f64) / over as f64).min(1.0);
                let sharp = sharpened(&favour, beta * x);
                w.iter_mut().zip(&sharp).for_each(|(a, b)| *a *= b);
            }
            let loads = super::indep::routed_loads(rng, &w, tokens, counts);
            // Some loggers write the layers on alternate points.
            if sparse_layers && layers > 1 && i % layers != l && i % 2 == 1 {
                continue;
            }
            for (e, v) in loads.iter().enumerate() {
                values.push((catalog::moe(l).load(e).into(), *v));
            }
        }
        steps.push(row(values));
    }
    let name = format!("L{layers}-E{experts}-{}-tokens{tokens}-spread{spread:.2}-phi{phi}-to{to}-over{over}-lasts{}", if counts { "counts" } else { "fractions" }, if lasts == usize::MAX { "end".into() } else { lasts.to_string() });
    (name, Family::Moe, at, vec![], steps)
}

/// A run's speed (tokens/s, samples/s or the step time) with eval and checkpoint
/// pauses, then a regression.
fn speed_run(rng: &mut Xo, shape: &Shape, fault: Option<(usize, When)>) -> Generated {
    let n = shape.n;
    let which = rng.pick(&[catalog::TOKENS_PER_S, catalog::SAMPLES_PER_S, catalog::STEP_TIME_S]);
    let speed0 = rng.range(1_000.0, 400_000.0);
    let mut noise = LogNoise::new(rng, 0.01, 0.08);
    let pause_every = rng.pick(&[20usize, 50, 200, 1_000]);
    let pause_len = rng.pick(&[1usize, 1, 2, 3]);
    let pause_by = rng.range(0.05, 0.5);
    let to = fault.map_or(1.0, |(m, _)| [0.62, 0.5, 0.3][m]);
    let lasts = rng.pick(&[8usize, 20, 60, usize::MAX]);
    let at = fault.map(|(_, w)| onset(rng, n, w, 8, 2));
    let mut benign = Vec::new();
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let (nz, lv) = shape.regime(i);
        // A regime change of the level is a smaller one here (a data mix, a node swap): within 15%.
        let lv = 1.0 + 0.4 * (lv - 1.0);
        let mut speed = speed0 * lv * noise.next(rng, nz).exp();
        if i > 0 && i % pause_every < pause_len {
            speed *= pause_by;
            if i % pause_every == 0 {
                benign.push(Benign { what: "eval_pause", step: i as u64 });
            }
        }
        if at.is_some_and(|o| i >= o && i - o < lasts) {
            speed *= to;
        }
        let value = if which == catalog::STEP_TIME_S { 4_096.0 / speed } else { speed };
        steps.push(row(vec![(catalog::LOSS.into(), 2.5 + 2.0 / (1.0 + i as f64 / 100.0) + 0.02 * rng.normal()), (which.into(), value)]));
    }
    let name = format!("{which}-{}-pause{pause_every}x{pause_len}@{pause_by:.2}-to{to}-lasts{}", noise.label(), if lasts == usize::MAX { "end".into() } else { lasts.to_string() });
    (name, Family::Pretrain, at, benign, steps)
}
