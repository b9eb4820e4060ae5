//! A third corpus, the hold-out: parameterised apart from `synth` and from
//! `indep`, and never looked at case by case while a detector is changed. Only
//! its totals are read, before and after a change, to see whether the change
//! generalises.
//!
//! What differs from the other two generators:
//! - Random source: PCG32 (XSH-RR), not SplitMix64 or xoshiro.
//! - Noise: Laplace innovations or a Gaussian scale mixture (92% unit, 8% five
//!   times the spread), through AR(1) filters with coefficients 0.3, 0.7 or 0.9,
//!   plus a slow bounded random walk in the baseline (a few percent).
//! - Logging: a point every 1, 5, 10 or 50 training steps, with 1% of the
//!   points dropped, one restart gap (the step counter jumps, memory drops and
//!   climbs again, the loss is a little higher for a while), and a step counter
//!   that starts at a resume point (0 or tens of thousands).
//! - Healthy curves: exponential loss decay with step LR drops (the loss steps
//!   down), a logistic reward, an adaptive KL coefficient, eval dips in
//!   throughput (and a memory bump) every few hundred points.
//! - Event shapes: step-function and exponential onsets, leaks that pause and
//!   resume, rewards that rise then fall back, experts that collapse over
//!   hundreds of points, a KL coefficient that decays instead of freezing.
//!
//! Onsets and lengths are counted in logged points; the scorer reports the index
//! of the point at which an alert was raised (`IndepCase2::logged`).
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::synth::{Benign, Case, Family, Fault};

pub const INDEP2_VERSION: u32 = 1;
/// Memory capacity of a run that declares one.
pub const INDEP2_MEM_TOTAL: f64 = 40.0 * GIB;
const GIB: f64 = (1u64 << 30) as f64;
const EXPERTS: usize = 8;
const LAYERS: usize = 3;

/// PCG32 (XSH-RR, 64-bit state): the third corpus's own random source.
#[derive(Debug, Clone)]
pub struct Pcg(u64, u64);

impl Pcg {
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut p = Pcg(0, (stream << 1) | 1);
        p.u32();
        p.0 = p.0.wrapping_add(seed);
        p.u32();
        p
    }

    pub fn u32(&mut self) -> u32 {
        let old = self.0;
        self.0 = old.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(self.1);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        xorshifted.rotate_right((old >> 59) as u32)
    }

    /// Uniform in (0, 1).
    pub fn unit(&mut self) -> f64 {
        let hi = (self.u32() >> 5) as u64;
        let lo = (self.u32() >> 6) as u64;
        ((hi << 26 | lo) as f64 + 0.5) / (1u64 << 53) as f64
    }

    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.u32() as usize) % items.len()]
    }

    /// Standard normal (inverse of two uniforms through Box-Muller's sine branch).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).sin()
    }

    /// Laplace with unit variance.
    pub fn laplace(&mut self) -> f64 {
        let u = self.unit() - 0.5;
        -u.signum() * (1.0 - 2.0 * u.abs()).max(1e-300).ln() / std::f64::consts::SQRT_2
    }
}

/// Which innovations a noise source draws.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Laplace,
    /// 92% standard normal, 8% five times wider (variance about 2.9).
    Mixture,
}

/// AR(1) noise with Laplace or mixture innovations, and a slow bounded walk.
#[derive(Debug, Clone)]
struct Noise {
    shape: Shape,
    phi: f64,
    scale: f64,
    state: f64,
    /// The baseline's random walk, in units of `scale`, kept within +-`walk_bound`.
    walk: f64,
    walk_step: f64,
    walk_bound: f64,
}

impl Noise {
    fn new(rng: &mut Pcg, lo: f64, hi: f64, walk_bound: f64) -> Self {
        Noise {
            shape: rng.pick(&[Shape::Laplace, Shape::Mixture]),
            phi: rng.pick(&[0.3, 0.7, 0.9]),
            scale: rng.range(lo, hi),
            state: 0.0,
            walk: 0.0,
            walk_step: rng.range(0.02, 0.08),
            walk_bound,
        }
    }

    fn innovation(&mut self, rng: &mut Pcg) -> f64 {
        match self.shape {
            Shape::Laplace => rng.laplace(),
            Shape::Mixture => {
                let z = rng.normal();
                if rng.unit() < 0.08 { 5.0 * z } else { z }
            }
        }
    }

    fn next(&mut self, rng: &mut Pcg) -> f64 {
        let e = self.innovation(rng) * (1.0 - self.phi * self.phi).sqrt();
        self.state = self.phi * self.state + e;
        // Reflect the walk at its bound: it wanders without trending.
        self.walk += self.walk_step * rng.normal();
        if self.walk.abs() > self.walk_bound {
            self.walk = self.walk.signum() * (2.0 * self.walk_bound - self.walk.abs());
        }
        self.scale * (self.state + self.walk)
    }
}

/// Lengths of a run, in logged points.
const LENGTHS: [usize; 6] = [200, 700, 2_500, 10_000, 40_000, 120_000];

/// One generated run: columns of logged points and the step and time of each.
struct Run {
    n: usize,
    cols: Vec<(&'static str, Vec<f64>)>,
    loads: Vec<Vec<Vec<f64>>>,
    steps: Vec<u64>,
    times: Vec<f64>,
}

impl Run {
    fn col(&mut self, name: &str) -> &mut Vec<f64> {
        &mut self.cols.iter_mut().find(|(n, _)| *n == name).expect("generated column").1
    }

    fn rows(&self) -> Vec<Vec<(MetricName, f64)>> {
        let load_names: Vec<String> = (0..self.loads.len()).flat_map(|l| (0..EXPERTS).map(move |e| catalog::moe(l).load(e))).collect();
        (0..self.n)
            .map(|t| {
                let mut row: Vec<(MetricName, f64)> = self.cols.iter().map(|(n, d)| (MetricName::Borrowed(n), d[t])).collect();
                for (l, layer) in self.loads.iter().enumerate() {
                    for e in 0..EXPERTS {
                        row.push((MetricName::Owned(load_names[l * EXPERTS + e].clone()), layer[t][e]));
                    }
                }
                row
            })
            .collect()
    }
}

/// Step numbers and wall times of `n` logged points: every `every` steps from a
/// resume point, 1% of points dropped, one restart gap at `restart`.
fn schedule(rng: &mut Pcg, n: usize, restart: usize) -> (Vec<u64>, Vec<f64>) {
    let every = rng.pick(&[1u64, 5, 10, 50]);
    let mut step = rng.pick(&[0u64, 0, 12_000, 250_000]);
    let secs_per_step = rng.range(0.05, 2.0);
    let mut time = 0.0;
    let (mut steps, mut times) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for t in 0..n {
        let mut advance = every;
        if rng.unit() < 0.01 {
            advance += every; // a dropped point
        }
        if t == restart {
            advance += every * rng.pick(&[20u64, 200, 1_000]);
            time += rng.range(60.0, 900.0);
        }
        if t > 0 {
            step += advance;
        }
        time += advance as f64 * secs_per_step * (1.0 + 0.05 * rng.normal()).max(0.5);
        steps.push(step);
        times.push(time);
    }
    (steps, times)
}

/// A healthy run of `family` with `n` logged points, and its benign events.
fn healthy(rng: &mut Pcg, family: Family, n: usize, signed_loss: bool, benign: &mut Vec<Benign>) -> Run {
    let nf = n as f64;
    let restart = (rng.range(0.35, 0.65) * nf) as usize;
    benign.push(Benign { what: "restart", step: restart as u64 });
    let (steps, times) = schedule(rng, n, restart);
    // Exponential loss decay; the LR drops by 10x at two points for half the runs.
    let (floor, height, tau) = (rng.range(0.8, 3.0), rng.range(2.0, 7.0), rng.range(0.03, 0.25) * nf + 3.0);
    let lr_drops: Vec<usize> = if rng.unit() < 0.5 { vec![(0.6 * nf) as usize, (0.85 * nf) as usize] } else { Vec::new() };
    for d in &lr_drops {
        benign.push(Benign { what: "lr_drop", step: *d as u64 });
    }
    let peak_lr = rng.range(1e-5, 1e-3);
    let warm = rng.range(0.005, 0.03) * nf + 2.0;
    let mut loss_noise = Noise::new(rng, 0.006, 0.03, 1.0);
    let mut grad_noise = Noise::new(rng, 0.06, 0.2, 1.0);
    let mut rate_noise = Noise::new(rng, 0.01, 0.04, 2.0);
    let mut mem_noise = Noise::new(rng, 10e6, 60e6, 0.5);
    let base_rate = rng.range(1e3, 1e6);
    let mem0 = rng.range(4.0, 24.0) * GIB;
    let eval_every = rng.pick(&[97usize, 200, 500]);
    let eval_len = rng.pick(&[1usize, 2, 3]);
    let bumps: Vec<usize> = (0..rng.pick(&[0usize, 2, 4])).map(|_| (rng.range(0.08, 0.97) * nf) as usize).collect();
    for b in &bumps {
        benign.push(Benign { what: "one_step_bump", step: *b as u64 });
    }
    let rl = family == Family::Rl;
    let mut cols: Vec<(&'static str, Vec<f64>)> = [catalog::LOSS, catalog::GRAD_NORM, catalog::LR, catalog::TOKENS_PER_S, catalog::MEM_GPU_BYTES].iter().map(|m| (*m, vec![0.0; n])).collect();
    if rl {
        benign.push(Benign { what: "kl_ramp", step: 0 });
        for m in [catalog::KL, catalog::KL_COEF, catalog::REWARD, catalog::REWARD_STD, catalog::ENTROPY, catalog::RESPONSE_LEN, catalog::REWARD_GOLD] {
            cols.push((m, vec![0.0; n]));
        }
    }
    let (kl_target, kl_tau) = (rng.range(0.01, 0.3), rng.range(0.02, 0.08) * nf + 4.0);
    let (r0, r1, r_mid, r_width) = (rng.range(-1.5, 0.5), rng.range(0.5, 4.0), rng.range(0.15, 0.4) * nf, rng.range(0.04, 0.12) * nf + 2.0);
    let (ent0, len0, rstd0) = (rng.range(0.5, 3.0), rng.range(50.0, 1_200.0), rng.range(0.3, 1.5));
    let mut kl_noise = Noise::new(rng, 0.08, 0.25, 1.0);
    let mut reward_noise = Noise::new(rng, 0.03, 0.12, 1.0);
    let mut ent_noise = Noise::new(rng, 0.01, 0.04, 1.0);
    let mut len_noise = Noise::new(rng, 0.02, 0.06, 3.0);
    let mut rstd_noise = Noise::new(rng, 0.03, 0.1, 1.0);
    let mut coef = rng.range(0.02, 0.2);
    for t in 0..n {
        let tf = t as f64;
        let since_restart = if t >= restart { Some((t - restart) as f64) } else { None };
        let decay = lr_drops.iter().filter(|d| t >= **d).count() as i32;
        let lr = if tf < warm { peak_lr * (tf + 1.0) / warm } else { peak_lr * (1.0 - 0.7 * tf / nf) * 0.1f64.powi(decay) };
        // Each LR drop takes 4% off the loss within a few points.
        let drop_gain: f64 = lr_drops.iter().filter(|d| t >= **d).map(|d| 0.04 * (1.0 - (-((t - d) as f64) / 5.0).exp())).sum();
        let mut loss = (floor + height * (-tf / tau).exp()) * (1.0 - drop_gain) * loss_noise.next(rng).exp();
        // After a restart the loss sits a little higher while the optimiser state warms up.
        if let Some(s) = since_restart {
            loss *= 1.0 + 0.05 * (-s / 30.0).exp();
        }
        let mut g = (0.4 + 2.5 * (-tf / (0.5 * tau)).exp()) * grad_noise.next(rng).exp();
        if bumps.contains(&t) {
            loss *= rng.range(1.3, 2.5);
            g *= rng.range(1.5, 4.0);
        }
        if signed_loss {
            // A policy-gradient loss: small, signed, around a slowly moving mean.
            loss = 0.01 * loss_noise.next(rng) / loss_noise.scale.max(1e-9) + 0.002 * (tf / (0.1 * nf + 1.0)).sin();
        }
        let mut rate = base_rate * rate_noise.next(rng).exp();
        let in_eval = t > 0 && t % eval_every < eval_len;
        if in_eval {
            rate /= rng.range(3.0, 12.0);
        }
        // Memory: an allocator climb of 8-12% at the start and again after the
        // restart, an eval bump of 2%, and noise.
        let climb = |s: f64| 0.1 * (s / (0.02 * nf + 5.0)).min(1.0);
        let mut mem = mem0 * (1.0 + since_restart.map_or(climb(tf), climb)) + mem_noise.next(rng);
        if in_eval {
            mem *= 1.02;
        }
        let mut set = |name: &str, v: f64| cols.iter_mut().find(|(n, _)| *n == name).expect("column").1[t] = v;
        set(catalog::LOSS, loss);
        set(catalog::GRAD_NORM, g);
        set(catalog::LR, lr);
        set(catalog::TOKENS_PER_S, rate);
        set(catalog::MEM_GPU_BYTES, mem);
        if rl {
            let kl = kl_target * (1.0 - (-tf / kl_tau).exp()) * kl_noise.next(rng).exp();
            // Adaptive KL controller: the coefficient follows KL against its target.
            coef = (coef * (0.05 * (kl / kl_target - 1.0)).clamp(-0.1, 0.1).exp()).clamp(1e-4, 5.0);
            let reward = r0 + (r1 - r0) / (1.0 + (-(tf - r_mid) / r_width).exp()) + reward_noise.next(rng);
            set(catalog::KL, kl);
            set(catalog::KL_COEF, coef);
            set(catalog::REWARD, reward);
            set(catalog::REWARD_GOLD, reward * 0.8 + 0.3 * reward_noise.next(rng));
            set(catalog::REWARD_STD, rstd0 * (1.0 - 0.4 * tf / nf) * rstd_noise.next(rng).exp());
            set(catalog::ENTROPY, ent0 * (0.7 + 0.3 * (-tf / (0.5 * nf)).exp()) * ent_noise.next(rng).exp());
            set(catalog::RESPONSE_LEN, len0 * len_noise.next(rng).exp());
        }
    }
    let loads = if family == Family::Moe {
        benign.push(Benign { what: "router_warmup", step: 0 });
        (0..LAYERS)
            .map(|_| {
                let mut drift = vec![0.0; EXPERTS];
                (0..n)
                    .map(|t| {
                        let early = 1.0 + 2.5 * (-(t as f64) / (0.03 * nf + 15.0)).exp();
                        for d in drift.iter_mut() {
                            *d = 0.98 * *d + 0.2 * 0.2 * rng.laplace();
                        }
                        let logits: Vec<f64> = drift.iter().map(|d| early * d + 0.1 * rng.normal()).collect();
                        softmax(&logits)
                    })
                    .collect()
            })
            .collect()
    } else {
        Vec::new()
    };
    Run { n, cols, loads, steps, times }
}

fn softmax(logits: &[f64]) -> Vec<f64> {
    let m = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = logits.iter().map(|l| (l - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// A case of the third corpus: the series, the capacity its run declares, and the
/// training step and wall time of each logged point.
pub struct IndepCase2 {
    pub case: Case,
    pub mem_total: Option<f64>,
    pub logged: Vec<(u64, f64)>,
}

fn family_for(kind: AlertKind) -> Family {
    use AlertKind::*;
    match kind {
        KlSpike | KlRunaway | RewardHacking | RewardSaturation | EntropyCollapse => Family::Rl,
        ExpertCollapse => Family::Moe,
        _ => Family::Pretrain,
    }
}

/// `0` at the onset rising to `1` at `over` points later: linearly, or as an
/// exponential onset (slow at first, then fast).
fn ramp(since: usize, over: f64, exponential: bool) -> f64 {
    let x = (since as f64 / over).min(1.0);
    if exponential { ((4.0 * x).exp() - 1.0) / (4.0f64.exp() - 1.0) } else { x }
}

/// One case: a fault of `kind` at magnitude `m` (0-2), or a clean run of `family`.
pub fn generate(kind: Option<AlertKind>, family: Family, m: usize, seed: u64) -> IndepCase2 {
    let stream = kind.map_or(99, |k| k as u64 + 1) * 16 + m as u64 * 4 + family as u64;
    let mut rng = Pcg::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D), stream);
    let family = match kind {
        // A third of the slow drifts are a reward that rose and falls back.
        Some(AlertKind::SlowDrift) if seed % 3 == 0 => Family::Rl,
        _ => kind.map_or(family, family_for),
    };
    let lengths: &[usize] = match kind {
        Some(AlertKind::SlowDrift | AlertKind::MemoryLeak) => &LENGTHS[2..],
        Some(AlertKind::LossDivergence | AlertKind::KlRunaway | AlertKind::RewardHacking | AlertKind::EntropyCollapse | AlertKind::ExpertCollapse | AlertKind::RewardSaturation) => &LENGTHS[1..5],
        Some(_) => &LENGTHS[..5],
        None => &LENGTHS,
    };
    let n = rng.pick(lengths);
    let signed_loss = kind.is_none() && family == Family::Rl && rng.unit() < 0.5;
    let mut benign = Vec::new();
    let mut r = healthy(&mut rng, family, n, signed_loss, &mut benign);
    let early = rng.unit() < 0.5;
    let onset = ((if early { rng.range(0.12, 0.25) } else { rng.range(0.7, 0.9) }) * n as f64) as usize;
    let o = onset.max(80).min(n - 25);
    let mut mem_total = (rng.unit() < 0.4).then_some(INDEP2_MEM_TOTAL);
    let mut partner = None;
    let m = m.min(2);
    let exp_onset = rng.unit() < 0.5;
    if let Some(kind) = kind {
        use AlertKind::*;
        match kind {
            LossSpike => {
                // A step up (or two points of geometric rise), held, then an exponential return.
                let (factor, hold): (f64, usize) = ([2.2, 4.0, 10.0][m], rng.pick(&[2usize, 6, 20]));
                for (t, v) in r.col(catalog::LOSS).iter_mut().enumerate().skip(o) {
                    let since = t - o;
                    let f = if since < hold { if exp_onset && since == 0 { factor.sqrt() } else { factor } } else { 1.0 + (factor - 1.0) * (-((since - hold) as f64) / 10.0).exp() };
                    *v *= f;
                }
            }
            LossDivergence => {
                // Exponential growth to 4x (capped at 20x), or a step to 1.6x then a linear climb.
                let over = [500.0, 200.0, 60.0][m];
                for (t, v) in r.col(catalog::LOSS).iter_mut().enumerate().skip(o) {
                    let x = (t - o) as f64 / over;
                    *v *= if exp_onset { (x * 4f64.ln()).exp().min(20.0) } else { 1.6 + 2.4 * x };
                }
            }
            RankStraggler | UserAlert | Stalled => {}
            SlowDrift => {
                let span = (n - o) as f64;
                if family == Family::Rl {
                    // The reward rose (the healthy logistic) and falls back 35-100% of its gain.
                    let give = [0.35, 0.6, 1.0][m];
                    let col = r.col(catalog::REWARD);
                    let start = col[..20].iter().sum::<f64>() / 20.0;
                    let gained = (col[o - 50..o].iter().sum::<f64>() / 50.0 - start).max(0.1);
                    for (t, v) in col.iter_mut().enumerate().skip(o) {
                        *v -= give * gained * ramp(t - o, span, exp_onset);
                    }
                } else {
                    // The loss climbs 15-60% by the end, exponentially or with pauses.
                    let rise = [0.15, 0.3, 0.6][m];
                    for (t, v) in r.col(catalog::LOSS).iter_mut().enumerate().skip(o) {
                        let x = ramp(t - o, span, exp_onset);
                        let paused = if exp_onset { x } else { ((x * 8.0).floor() + ((x * 8.0).fract() * 2.0).min(1.0)) / 8.0 };
                        *v *= 1.0 + rise * paused.min(1.0);
                    }
                }
            }
            Nonfinite => {
                let (metric, value) = rng.pick(&[(catalog::LOSS, f64::NAN), (catalog::GRAD_NORM, f64::NAN), (catalog::GRAD_NORM, f64::INFINITY)]);
                let end = if m == 2 { n } else { o + 1 + m * 3 };
                for v in &mut r.col(metric)[o..end] {
                    *v = value;
                }
            }
            GradExplosion => {
                let factor: f64 = [5.0, 20.0, 150.0][m];
                let hold = rng.pick(&[3usize, 12, 60]);
                for (i, v) in r.col(catalog::GRAD_NORM).iter_mut().skip(o).take(hold).enumerate() {
                    // A step, or doubling each point up to the factor.
                    *v *= if exp_onset { 2f64.powi(i as i32 + 1).min(factor) } else { factor };
                }
            }
            GradVanishing => {
                let floor: f64 = [2e-3, 1e-5, 1e-8][m];
                let over = rng.pick(&[5.0, 40.0]);
                for (t, v) in r.col(catalog::GRAD_NORM).iter_mut().enumerate().skip(o) {
                    *v *= if exp_onset { floor.powf(((t - o) as f64 / over).min(1.0)) } else { floor };
                }
            }
            KlSpike => {
                let factor = [6.0, 15.0, 40.0][m];
                let hold = rng.pick(&[1usize, 3, 8]);
                for v in r.col(catalog::KL).iter_mut().skip(o).take(hold) {
                    *v = (*v).max(0.02) * factor;
                }
            }
            KlRunaway => {
                // Exponential growth to 4-20x; the KL coefficient decays to nothing.
                let to: f64 = [4.0, 8.0, 20.0][m];
                let over = rng.pick(&[100.0, 300.0]);
                for (t, v) in r.col(catalog::KL).iter_mut().enumerate().skip(o) {
                    *v *= to.powf(((t - o) as f64 / over).min(1.5));
                }
                for (t, v) in r.col(catalog::KL_COEF).iter_mut().enumerate().skip(o) {
                    *v *= (-((t - o) as f64) / 30.0).exp();
                }
            }
            RewardHacking => {
                // Proxy reward and length rise together, gold reward falls, entropy sags.
                let over = [300.0, 150.0, 60.0][m];
                let up = |t: usize| ramp(t - o, over, exp_onset) * (1.0 + ((t - o) as f64 / over - 1.0).max(0.0).min(2.0));
                for (t, v) in r.col(catalog::RESPONSE_LEN).iter_mut().enumerate().skip(o) {
                    *v *= 1.0 + 1.2 * up(t);
                }
                for (t, v) in r.col(catalog::REWARD).iter_mut().enumerate().skip(o) {
                    *v += 0.6 * up(t);
                }
                for (t, v) in r.col(catalog::REWARD_GOLD).iter_mut().enumerate().skip(o) {
                    *v -= 0.5 * up(t);
                }
                for (t, v) in r.col(catalog::ENTROPY).iter_mut().enumerate().skip(o) {
                    *v /= 1.0 + 0.6 * up(t);
                }
            }
            RewardSaturation => {
                let left = [0.08, 0.03, 0.005][m];
                let over = rng.pick(&[20.0, 80.0]);
                let ceiling = r.col(catalog::REWARD)[o - 20..o].iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let rstd_at = r.col(catalog::REWARD_STD)[o];
                for (t, v) in r.col(catalog::REWARD).iter_mut().enumerate().skip(o) {
                    let a = ((t - o) as f64 / over).min(1.0);
                    *v = (1.0 - a) * *v + a * (ceiling + 0.002 * (t as f64).sin());
                }
                for (t, v) in r.col(catalog::REWARD_STD).iter_mut().enumerate().skip(o) {
                    let a = ramp(t - o, over, exp_onset);
                    *v = (1.0 - a) * *v + a * rstd_at * left * (1.0 + 0.1 * (t as f64 * 0.7).sin());
                }
            }
            EntropyCollapse => {
                let to: f64 = [0.15, 0.06, 0.01][m];
                let over = rng.pick(&[40.0, 150.0]);
                for (t, v) in r.col(catalog::ENTROPY).iter_mut().enumerate().skip(o) {
                    *v *= if exp_onset { to.powf(((t - o) as f64 / over).min(1.0)) } else { 1.0 - (1.0 - to) * ((t - o) as f64 / over).min(1.0) };
                }
            }
            MemoryLeak => {
                // 0.05-0.4% of the start per point; it pauses and resumes, or grows in stairs.
                let per_point = [5e-4, 1.5e-3, 4e-3][m];
                let (on, off) = (rng.pick(&[150usize, 400]), rng.pick(&[50usize, 200]));
                let stairs = rng.pick(&[1usize, 40]);
                let start = r.col(catalog::MEM_GPU_BYTES)[o];
                let mut grown = 0.0;
                for (t, v) in r.col(catalog::MEM_GPU_BYTES).iter_mut().enumerate().skip(o) {
                    let since = t - o;
                    let active = exp_onset || since % (on + off) < on;
                    if active && since % stairs == 0 {
                        grown += start * per_point * stairs as f64;
                    }
                    *v = (*v + grown).min(INDEP2_MEM_TOTAL);
                }
                if rng.unit() < 0.5 {
                    mem_total = None;
                }
            }
            ExpertCollapse => {
                // One expert takes over gradually, over hundreds of points.
                let hot = [0.65, 0.8, 0.95][m];
                let layer = rng.pick(&[0usize, 1, 2]);
                let over = rng.pick(&[150.0, 500.0]);
                let e_hot = rng.pick(&[0usize, 5]);
                for (t, loads) in r.loads[layer].iter_mut().enumerate().skip(o) {
                    let a = ramp(t - o, over, exp_onset);
                    for (e, v) in loads.iter_mut().enumerate() {
                        let target = if e == e_hot { hot } else { (1.0 - hot) / (EXPERTS - 1) as f64 };
                        *v = (1.0 - a) * *v + a * target;
                    }
                }
            }
            ThroughputRegression => {
                let to: f64 = [0.5, 0.3, 0.1][m];
                for (t, v) in r.col(catalog::TOKENS_PER_S).iter_mut().enumerate().skip(o) {
                    *v *= if exp_onset { to.powf(((t - o) as f64 / 40.0).min(1.0)) } else { to };
                }
            }
            Nondeterminism | RunDivergence => {
                let (noise, drift) = if kind == Nondeterminism { (0.0, [1e-3, 1e-2, 1e-1][m]) } else { (0.03, [0.2, 0.5, 2.0][m]) };
                let mut p = Run { n, cols: Vec::new(), loads: Vec::new(), steps: Vec::new(), times: Vec::new() };
                for name in [catalog::LOSS, catalog::GRAD_NORM] {
                    let col: Vec<f64> = r
                        .col(name)
                        .iter()
                        .enumerate()
                        .map(|(t, v)| {
                            let d = if t >= o { drift * ramp(t - o, 30.0, exp_onset).max(0.2) } else { 0.0 };
                            v * (1.0 + noise * rng.laplace() + d)
                        })
                        .collect();
                    p.cols.push((name, col));
                }
                partner = Some(p.rows());
            }
        }
    } else if family == Family::Pretrain && seed % 2 == 0 {
        // Replicas that agree bit for bit.
        let mut p = Run { n, cols: Vec::new(), loads: Vec::new(), steps: Vec::new(), times: Vec::new() };
        for name in [catalog::LOSS, catalog::GRAD_NORM] {
            p.cols.push((name, r.col(name).clone()));
        }
        partner = Some(p.rows());
    }
    let name = match kind {
        Some(k) => format!("indep2-{k}-m{m}-n{n}-{}-s{seed}", if early { "early" } else { "late" }),
        None => format!("indep2-clean-{family:?}{}-n{n}-s{seed}", if signed_loss { "-signed" } else { "" }).to_lowercase(),
    };
    let fault = kind.map(|kind| Fault { kind, onset: o as u64, magnitude: m });
    let logged = r.steps.iter().copied().zip(r.times.iter().copied()).collect();
    IndepCase2 { case: Case { name, family, fault, benign, steps: r.rows(), partner }, mem_total, logged }
}

/// The corpus: every kind at three magnitudes for each seed, and six clean runs
/// (two per family) for each seed.
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (Option<AlertKind>, Family, usize, u64)> {
    seeds.flat_map(|seed| {
        let faults = AlertKind::ALL.into_iter().filter(|k| !matches!(k, AlertKind::RankStraggler | AlertKind::UserAlert | AlertKind::Stalled)).flat_map(move |k| (0..3).map(move |m| (Some(k), family_for(k), m, seed)));
        let clean = [Family::Pretrain, Family::Rl, Family::Moe, Family::Pretrain, Family::Rl, Family::Moe].into_iter().enumerate().map(move |(i, f)| (None, f, i, seed));
        faults.chain(clean)
    })
}
