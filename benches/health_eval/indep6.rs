//! A sixth corpus, for study case by case: kl_spike, slow_drift and
//! expert_collapse on runs shaped unlike the other generators', each faulty
//! run with a clean twin of the same shape and seed.
//!
//! - Noise: Laplace or Student-t 2.5 innovations (heavy tails), through AR(1)
//!   0-0.98, in a two-state Markov regime (a calm and a rough state, 1.5-3x
//!   the spread, switching every few hundred points).
//! - Scales: a KL from 1e-4 to 5 (k3 estimators, all positive), losses from
//!   0.05 to 40, rewards from -300 to 1,000 (a return, not a score).
//! - Logging every 1-64 steps; a learning-rate warm-up of 1-10% of the run
//!   then cosine or step decay; one-point benign bumps (3-5x on a KL, 20-40%
//!   on a loss) in faulty runs and clean twins alike.
//! - kl_spike: 4x, 6x or 15x the KL's level for 2-8 logged points, the KL
//!   climbing slowly over training (1-4x from start to end) or held by an
//!   adaptive controller.
//! - slow_drift: a loss (or a reward) that improves, flattens, then gives back
//!   15%, 30% or 60% (of the level, or of the reward's gain) linearly from an
//!   onset at 40-70% of the run to its end.
//! - expert_collapse: loads (fractions or counts) of 8-64 experts in 1-6
//!   layers, a fresh router unbalanced over its first 30-80 steps, the
//!   balance swinging with an aux-loss-free bias; one layer's router sharpens
//!   to 40%, 30% or 15% effective experts over 1-20 points and stays 6-40
//!   points or to the end. Some runs log only `moe/L{l}/balance`.
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::indep::Xo;
use super::synth::{Benign, Case, Family, Fault};

pub const INDEP6_VERSION: u32 = 1;

pub const KINDS: [AlertKind; 3] = [AlertKind::KlSpike, AlertKind::SlowDrift, AlertKind::ExpertCollapse];
/// Per kind and seed: three magnitudes, each with its clean twin.
const MAGNITUDES: usize = 3;

pub struct Indep6Case {
    pub case: Case,
    pub logged: Vec<(u64, f64)>,
}

/// Per seed and kind: (kind, magnitude, faulty, case seed); a clean twin shares its faulty run's seed.
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (AlertKind, usize, bool, u64)> {
    seeds.flat_map(|seed| KINDS.into_iter().flat_map(move |k| (0..MAGNITUDES).flat_map(move |m| [true, false].map(|f| (k, m, f, seed * 16 + m as u64)))))
}

/// Heavy-tailed AR(1) noise in a two-state Markov regime.
struct Noise {
    laplace: bool,
    phi: f64,
    scale: f64,
    rough: f64,
    switch: f64,
    state: f64,
    in_rough: bool,
}

impl Noise {
    fn new(rng: &mut Xo, lo: f64, hi: f64) -> Self {
        Noise {
            laplace: rng.unit() < 0.5,
            phi: rng.pick(&[0.0, 0.3, 0.6, 0.85, 0.95, 0.98]),
            scale: rng.range(lo, hi),
            rough: if rng.unit() < 0.5 { rng.range(1.5, 3.0) } else { 1.0 },
            switch: 1.0 / rng.range(100.0, 800.0),
            state: 0.0,
            in_rough: false,
        }
    }

    fn next(&mut self, rng: &mut Xo) -> f64 {
        if rng.unit() < self.switch {
            self.in_rough = !self.in_rough;
        }
        let e = if self.laplace {
            // Laplace with unit variance.
            let u = rng.unit() - 0.5;
            -u.signum() * (1.0 - 2.0 * u.abs()).ln() / std::f64::consts::SQRT_2
        } else {
            // Student-t 2.5 (infinite fourth moment), clipped at 12 and scaled to about unit spread.
            let chi2: f64 = (0..5).map(|_| rng.normal().powi(2)).sum::<f64>() / 2.0;
            (rng.normal() / (chi2 / 2.5).sqrt()).clamp(-12.0, 12.0) * 0.45
        };
        self.state = self.phi * self.state + (1.0 - self.phi * self.phi).sqrt() * e;
        self.scale * if self.in_rough { self.rough } else { 1.0 } * self.state
    }

    fn label(&self) -> String {
        format!("{}{:.3}-phi{}{}", if self.laplace { "laplace" } else { "t2.5" }, self.scale, self.phi, if self.rough > 1.0 { format!("-rough{:.1}", self.rough) } else { String::new() })
    }
}

/// The run's shape: points, logging stride, learning-rate schedule.
struct Shape {
    n: usize,
    every: u64,
    warmup: f64,
    cosine: bool,
}

impl Shape {
    fn new(rng: &mut Xo) -> Self {
        Shape { n: rng.pick(&[120, 300, 1_000, 4_000, 20_000]), every: rng.pick(&[1u64, 2, 5, 16, 64]), warmup: rng.range(0.01, 0.1), cosine: rng.unit() < 0.6 }
    }

    /// The learning rate's share of its peak at point `i`.
    fn lr(&self, i: usize) -> f64 {
        let x = i as f64 / self.n as f64;
        if x < self.warmup {
            return (x / self.warmup).max(0.01);
        }
        let y = (x - self.warmup) / (1.0 - self.warmup);
        if self.cosine {
            0.05 + 0.95 * 0.5 * (1.0 + (std::f64::consts::PI * y).cos())
        } else {
            [1.0, 0.3, 0.1][((y * 3.0) as usize).min(2)]
        }
    }

    fn logged(&self) -> Vec<(u64, f64)> {
        (0..self.n).map(|i| (i as u64 * self.every, i as f64 * self.every as f64 * 0.7)).collect()
    }

    fn label(&self) -> String {
        format!("n{}-every{}-wu{:.2}-{}", self.n, self.every, self.warmup, if self.cosine { "cos" } else { "stepdecay" })
    }
}

type Generated = (String, Family, Option<usize>, Vec<Benign>, Vec<Vec<(MetricName, f64)>>);

pub fn generate(kind: AlertKind, m: usize, faulty: bool, seed: u64) -> Indep6Case {
    let mut rng = Xo::new(seed.wrapping_mul(0x9FB2_1C65_1E98_DF25) ^ ((kind as u64) << 40) ^ 0x1D_E906);
    let shape = Shape::new(&mut rng);
    let (name, family, at, benign, steps) = match kind {
        AlertKind::KlSpike => kl_run(&mut rng, &shape, m, faulty),
        AlertKind::SlowDrift => drift_run(&mut rng, &shape, m, faulty),
        _ => moe_run(&mut rng, &shape, m, faulty),
    };
    let tag = if faulty { format!("m{m}") } else { format!("clean{m}") };
    let fault = at.filter(|_| faulty).map(|o| Fault { kind, onset: o as u64, magnitude: m });
    let case = Case { name: format!("indep6-{kind}-{tag}-s{seed}-{}-{name}", shape.label()), family, fault, benign, steps, partner: None };
    Indep6Case { logged: shape.logged(), case }
}

/// One-point benign bumps: about one every 300 points, never within 10 of `avoid`.
fn bumps(rng: &mut Xo, n: usize, avoid: Option<usize>) -> Vec<usize> {
    let count = (n / 300).clamp(1, 12);
    (0..count).map(|_| (rng.range(0.15, 0.95) * n as f64) as usize).filter(|b| avoid.is_none_or(|a| b.abs_diff(a) > 10)).collect()
}

/// An RL run's KL (k3, positive) with a slow climb or a controller, rewards and a signed policy loss.
fn kl_run(rng: &mut Xo, shape: &Shape, m: usize, faulty: bool) -> Generated {
    let n = shape.n;
    let level = 10f64.powf(rng.range(-4.0, 0.7));
    let climb = rng.range(1.0, 4.0);
    let controller = (rng.unit() < 0.4).then(|| rng.range(30.0, 600.0));
    let mut noise = Noise::new(rng, 0.05, 0.35);
    let by = [4.0, 6.0, 15.0][m];
    let len = rng.pick(&[2usize, 3, 5, 8]);
    let at = ((rng.range(0.2, 0.9) * n as f64) as usize).max(40).min(n - len - 5);
    let ramp = rng.range(0.005, 0.05) * n as f64 + 2.0;
    let bump = bumps(rng, n, Some(at));
    let bump_by = rng.range(3.0, 5.0);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64 / n as f64;
        let mut kl = level * (1.0 - (-(i as f64) / ramp).exp()).max(0.01) * (1.0 + (climb - 1.0) * t);
        if let Some(p) = controller {
            kl *= (0.3 * (std::f64::consts::TAU * i as f64 / p).sin()).exp();
        }
        kl *= noise.next(rng).exp();
        if bump.contains(&i) {
            kl *= bump_by;
        }
        if faulty && i >= at && i < at + len {
            kl *= by;
        }
        let reward = 0.2 + 0.6 * (3.0 * t).tanh() + 0.08 * rng.normal();
        let loss = 0.05 * rng.normal() - 0.01;
        steps.push(vec![(catalog::KL.into(), kl), (catalog::REWARD.into(), reward), (catalog::POLICY_LOSS.into(), loss), (catalog::LR.into(), 1e-6 * shape.lr(i))]);
    }
    let name = format!("kl{level:.5}-climb{climb:.1}{}-{}-spike{by}x{len}@{at}", controller.map_or(String::new(), |p| format!("-ctl{p:.0}")), noise.label());
    let benign = bump.iter().map(|b| Benign { what: "one_point_bump", step: *b as u64 }).collect();
    (name, Family::Rl, Some(at), benign, steps)
}

/// A loss (or a reward) that improves, flattens, then gives part of it back.
fn drift_run(rng: &mut Xo, shape: &Shape, m: usize, faulty: bool) -> Generated {
    let n = shape.n;
    let nf = n as f64;
    let give_back = [0.15, 0.3, 0.6][m];
    let at = (rng.range(0.4, 0.7) * nf) as usize;
    let reward_run = rng.unit() < 0.4;
    let mut noise = Noise::new(rng, 0.005, 0.05);
    // The improvement is mostly done by the onset: a fall with time constant 3-12% of the run.
    let tau = rng.range(0.03, 0.12) * nf + 3.0;
    let bump = bumps(rng, n, None);
    let mut steps = Vec::with_capacity(n);
    let (name, family) = if reward_run {
        let start = rng.range(-300.0, 100.0);
        let gain = rng.range(20.0, 900.0);
        let spread = rng.range(0.01, 0.08) * gain;
        for i in 0..n {
            let t = i as f64;
            let mut reward = start + gain * (1.0 - (-t / tau).exp());
            if faulty && i >= at {
                reward -= give_back * gain * (t - at as f64) / (nf - at as f64);
            }
            reward += spread * noise.next(rng) / noise.scale.max(1e-9) * 0.5;
            if bump.contains(&i) {
                reward -= 0.3 * gain;
            }
            steps.push(vec![(catalog::REWARD.into(), reward), (catalog::LR.into(), 3e-4 * shape.lr(i))]);
        }
        (format!("reward{start:.0}+{gain:.0}-spread{spread:.1}-tau{tau:.0}-{}-back{give_back}@{at}", noise.label()), Family::Rl)
    } else {
        let floor = 10f64.powf(rng.range(-1.3, 1.0));
        let first = floor * rng.range(1.5, 4.0);
        for i in 0..n {
            let t = i as f64;
            let mut loss = floor + (first - floor) * (-t / tau).exp();
            if faulty && i >= at {
                loss *= 1.0 + give_back * (t - at as f64) / (nf - at as f64);
            }
            loss *= noise.next(rng).exp();
            if bump.contains(&i) {
                loss *= rng.range(1.2, 1.4);
            }
            steps.push(vec![(catalog::LOSS.into(), loss), (catalog::LR.into(), 3e-4 * shape.lr(i))]);
        }
        (format!("loss{first:.3}->{floor:.3}-tau{tau:.0}-{}-back{give_back}@{at}", noise.label()), Family::Pretrain)
    };
    let benign = bump.iter().map(|b| Benign { what: "one_point_bump", step: *b as u64 }).collect();
    (name, family, Some(at), benign, steps)
}

/// Balance exp(H)/N of weights.
fn balance_of(w: &[f64]) -> f64 {
    let total: f64 = w.iter().sum();
    let h: f64 = w.iter().filter(|v| **v > 0.0).map(|v| v / total).map(|p| -p * p.ln()).sum();
    h.exp() / w.len() as f64
}

/// The sharpening `beta` of `z` whose weights have balance `target` (bisection).
fn beta_for(z: &[f64], target: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 80.0f64);
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        let w: Vec<f64> = z.iter().map(|v| (mid * v).exp()).collect();
        if balance_of(&w) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// An MoE run's loads per layer: a fresh router's imbalance, an aux-loss-free
/// bias swinging the balance, then one layer collapsing.
fn moe_run(rng: &mut Xo, shape: &Shape, m: usize, faulty: bool) -> Generated {
    let n = shape.n.min(4_000);
    let layers = rng.pick(&[1usize, 2, 3, 6]);
    let experts = rng.pick(&[8usize, 16, 32, 64]);
    let counts = rng.unit() < 0.5;
    let balance_only = rng.unit() < 0.25;
    let tokens = rng.pick(&[4_096.0, 65_536.0, 1_048_576.0]);
    let spread = rng.range(0.15, 0.6);
    // A fresh router: logits this much sharper over its first steps.
    let fresh_steps = rng.range(30.0, 80.0);
    let swing = rng.range(0.0, 0.5);
    let swing_period = rng.range(20.0, 400.0);
    let to = [0.4, 0.3, 0.15][m];
    let over = rng.pick(&[1usize, 4, 20]);
    let lasts = rng.pick(&[6usize, 12, 40, usize::MAX]);
    let at = ((rng.range(0.1, 0.9) * n as f64) as usize).max(25).min(n.saturating_sub(over + 10));
    let bad = rng.pick(&(0..layers).collect::<Vec<_>>());
    let mut z: Vec<Vec<f64>> = (0..layers).map(|_| (0..experts).map(|_| spread * rng.normal()).collect()).collect();
    let fresh: Vec<Vec<f64>> = (0..layers).map(|_| (0..experts).map(|_| rng.normal()).collect()).collect();
    let favour: Vec<f64> = (0..experts).map(|_| rng.normal()).collect();
    let beta = beta_for(&favour, to);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let step = i as f64 * shape.every as f64;
        let mut values: Vec<(MetricName, f64)> = vec![(catalog::LOSS.into(), 2.0 + 3.0 / (1.0 + step / 300.0) + 0.03 * rng.normal())];
        for (l, zl) in z.iter_mut().enumerate() {
            for v in zl.iter_mut() {
                *v = 0.97 * *v + (1.0 - 0.97f64 * 0.97).sqrt() * spread * rng.normal();
            }
            let sharp = 1.0 + swing * (std::f64::consts::TAU * i as f64 / swing_period + l as f64).sin();
            let young = 2.0 * (-step / fresh_steps).exp();
            let mut w: Vec<f64> = zl.iter().zip(&fresh[l]).map(|(v, f)| (sharp * v + young * f).exp()).collect();
            if let Some(o) = Some(at).filter(|o| faulty && l == bad && i >= *o && i - *o < lasts.saturating_add(over)) {
                let x = (((i - o + 1) as f64) / over as f64).min(1.0);
                w.iter_mut().zip(&favour).for_each(|(a, f)| *a *= (beta * x * f).exp());
            }
            let loads = super::indep::routed_loads(rng, &w, tokens, counts);
            if balance_only {
                values.push((catalog::moe(l).balance().into(), balance_of(&loads.iter().map(|v| v.max(1e-12)).collect::<Vec<_>>())));
            } else {
                for (e, v) in loads.iter().enumerate() {
                    values.push((catalog::moe(l).load(e).into(), *v));
                }
            }
        }
        steps.push(values);
    }
    let name = format!(
        "L{layers}-E{experts}-{}-tokens{tokens}-spread{spread:.2}-fresh{fresh_steps:.0}-swing{swing:.2}/{swing_period:.0}-to{to}-over{over}-lasts{}@{at}",
        if balance_only { "balance" } else if counts { "counts" } else { "fractions" },
        if lasts == usize::MAX { "end".into() } else { lasts.to_string() }
    );
    (name, Family::Moe, Some(at), vec![Benign { what: "fresh_router", step: 0 }], steps)
}
