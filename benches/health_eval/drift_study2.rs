//! A second study corpus for `slow_drift` (`-- drift2`, its own seeds), written
//! apart from `drift_study`'s choices: other base curves, the drift written the
//! way most generators and incident write-ups put it, and a clean twin of every
//! faulty run (the same run, the same noise, no drift).
//!
//! Loss curves: an exponential decay to a floor, a power law with an offset, and
//! two phases (a fast drop, then a slow descent still under way at the end),
//! some with a cosine LR annealing the end. The drift: from an onset at 10-90%
//! of the run, the loss is multiplied by 1 + r (t - onset) / (T - onset), r
//! 10-20% / 20-35% / 35-50% (magnitudes 0 / 1 / 2) of the level the run would
//! have had; a reward (rising to a noisy plateau) or a signed return (from below
//! zero to around zero) gives back r of its gain over the same ramp.
//!
//! Runs of 150 to 200,000 points logged every 1-100 training steps; noise
//! gaussian, Laplace or Student-t (3 degrees of freedom), AR(1) with a
//! coefficient of 0.3-0.99, a regime of 2-3x the noise for a stretch, or a
//! periodic sawtooth (data-order epochs). Benign events in both twins: an LR
//! warm-up's bump, a data switch that comes back down, a late healthy rise of
//! 1-7% (what other seeds of one model do).
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::indep::Xo;
use super::synth::{Benign, Case, Family, Fault};

pub const DRIFT_STUDY2_VERSION: u32 = 1;

/// A case with the (training step, wall time) its points were logged at.
pub struct Drift2Case {
    pub case: Case,
    pub logged: Vec<(u64, f64)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Base {
    /// floor + h exp(-t / tau)
    Exponential,
    /// c + a (1 + t / t0)^-p
    PowerOffset,
    /// A fast drop, then a slow linear descent still under way at the end.
    TwoPhase,
    /// An RL reward rising to a noisy plateau.
    Reward,
    /// A signed return: from below zero to around zero.
    SignedReturn,
}

const BASES: [Base; 5] = [Base::Exponential, Base::PowerOffset, Base::TwoPhase, Base::Reward, Base::SignedReturn];

/// Per seed: each base at magnitudes 0-2, each with its clean twin
/// (`(base, magnitude, faulty, seed)`: the twin has the same seed).
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (Base, usize, bool, u64)> {
    seeds.flat_map(|seed| BASES.into_iter().flat_map(move |b| (0..3usize).flat_map(move |m| [true, false].map(|f| (b, m, f, seed * 8 + m as u64)))))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum NoiseKind {
    Gauss,
    Laplace,
    StudentT3,
    Ar,
    Regime,
    Periodic,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    None,
    WarmupBump,
    DataSwitch,
    LateRise,
}

pub fn generate(base: Base, m: usize, faulty: bool, seed: u64) -> Drift2Case {
    // Every draw is made whether the case is faulty or not: the twins share them.
    let mut rng = Xo::new(seed.wrapping_mul(0x9FB2_1C65_1E98_DF25) ^ ((base as u64) << 44) ^ 0x5EED_D21F);
    let n = rng.pick(&[150usize, 300, 600, 1_500, 5_000, 20_000, 60_000, 200_000]);
    let every = rng.pick(&[1u64, 2, 5, 10, 20, 50, 100]);
    let noise_kind = rng.pick(&[NoiseKind::Gauss, NoiseKind::Laplace, NoiseKind::StudentT3, NoiseKind::Ar, NoiseKind::Ar, NoiseKind::Regime, NoiseKind::Periodic]);
    let phi = if noise_kind == NoiseKind::Ar { rng.range(0.3, 0.99) } else { 0.0 };
    let reward = matches!(base, Base::Reward | Base::SignedReturn);
    // Per-point noise: 0.5-3% of a loss (on its log), 3-15% of a reward's gain.
    let scale = if reward { rng.range(0.03, 0.15) } else { rng.range(0.005, 0.03) };
    let (regime_at, regime_len, regime) = (rng.range(0.1, 0.8), rng.range(0.05, 0.2), rng.range(2.0, 3.0));
    // Data-order epochs: a sawtooth of 0.3-1 of the noise's scale on a loss (it
    // drops at each epoch's start and creeps up within it), 0.2-0.5 on a reward.
    let (epochs, wave) = (rng.range(3.0, 20.0).floor(), if reward { rng.range(0.2, 0.5) } else { rng.range(0.3, 1.0) });
    let onset_x = rng.range(0.1, 0.9);
    let onset = ((onset_x * n as f64) as usize).min(n - 1);
    let r = [rng.range(0.1, 0.2), rng.range(0.2, 0.35), rng.range(0.35, 0.5)][m];
    let event = rng.pick(&[Event::None, Event::WarmupBump, Event::DataSwitch, Event::LateRise]);
    let (switch_at, switch_up, switch_back) = (rng.range(0.2, 0.8), rng.range(0.1, 0.3), rng.range(0.01, 0.05));
    let late_rise = rng.range(0.01, 0.07);
    let cosine = rng.unit() < 0.5;
    let anneal = rng.range(0.02, 0.06);
    let warmup = rng.range(0.005, 0.03);
    // Base curves.
    let floor = rng.range(0.3, 3.0);
    let height = rng.range(0.5, 6.0) * floor.max(0.5);
    let tau = rng.range(0.05, 0.4) * n as f64;
    let (t0, p) = (rng.range(0.001, 0.03) * n as f64 + 2.0, rng.range(0.2, 0.9));
    let (fast, slope) = (rng.range(0.01, 0.05) * n as f64, rng.range(0.05, 0.25));
    let (r0, r1, r_tau) = match base {
        Base::SignedReturn => (rng.range(-3.0, -0.5), rng.range(-0.3, 0.5), rng.range(0.05, 0.3) * n as f64),
        _ => (rng.range(0.0, 0.5), rng.range(0.8, 5.0), rng.range(0.05, 0.3) * n as f64),
    };
    let mut noise = 0.0f64;
    let mut steps = Vec::with_capacity(n);
    let mut logged = Vec::with_capacity(n);
    let (mut best_clean, mut first_clean, mut net, mut reach) = (None::<f64>, None::<f64>, 0.0f64, None::<f64>);
    for i in 0..n {
        let x = i as f64 / n as f64;
        let t = i as f64;
        let after = if faulty && i >= onset { (i - onset) as f64 / (n - onset) as f64 } else { 0.0 };
        // The noise of this point, in units of `scale`.
        let reg = if noise_kind == NoiseKind::Regime && (regime_at..regime_at + regime_len).contains(&x) { regime } else { 1.0 };
        let z = match noise_kind {
            NoiseKind::Laplace => {
                let u = rng.unit() - 0.5;
                -u.signum() * (1.0 - 2.0 * u.abs()).max(1e-12).ln() / std::f64::consts::SQRT_2
            }
            NoiseKind::StudentT3 => rng.student_t(3) / 3f64.sqrt(),
            _ => rng.normal(),
        };
        noise = phi * noise + (1.0 - phi * phi).sqrt() * z * reg;
        let periodic = if noise_kind == NoiseKind::Periodic { wave * ((x * epochs).fract() - 0.5) * 2.0 } else { 0.0 };
        let e = scale * (noise + periodic);
        let lr_share = if cosine && x > warmup { 0.5 * (1.0 + (std::f64::consts::PI * (x - warmup) / (1.0 - warmup)).cos()) } else { 1.0 };
        let value = if reward {
            let gain = (r1 - r0) * (1.0 - (-t / r_tau).exp());
            let mut v = r0 + gain - r * gain * after;
            // How much of its gain the noiseless reward gives back (benign events left out).
            let (best, first) = (best_clean.get_or_insert(v), *first_clean.get_or_insert(v));
            *best = best.max(v);
            if faulty && i >= onset {
                net = net.max((*best - v) / (*best - first).max(1e-9));
            }
            if event == Event::DataSwitch {
                let d = (x - switch_at) / switch_back;
                if d >= 0.0 {
                    v -= switch_up * (r1 - r0) * (-3.0 * d).exp();
                }
            }
            v + e * (r1 - r0)
        } else {
            let mut level = match base {
                Base::Exponential => floor + height * (-t / tau).exp(),
                Base::PowerOffset => floor + height * (1.0 + t / t0).powf(-p),
                _ => floor * (1.0 + slope * (1.0 - x)) + height * (-t / fast).exp(),
            };
            level *= 1.0 - anneal * (1.0 - lr_share);
            // The drift, multiplicative on the level the run would have had.
            level *= 1.0 + r * after;
            // How far the noiseless loss rises over its best (benign events left out).
            let best = best_clean.get_or_insert(level);
            *best = best.min(level);
            if faulty && i >= onset {
                net = net.max(level / *best - 1.0);
            }
            match event {
                Event::WarmupBump if x < warmup => level *= 1.0 + 0.15 * (std::f64::consts::PI * x / warmup).sin(),
                Event::DataSwitch => {
                    let d = (x - switch_at) / switch_back;
                    if d >= 0.0 {
                        level *= 1.0 + switch_up * (-3.0 * d).exp();
                    }
                }
                Event::LateRise if x > 0.75 => level *= 1.0 + late_rise * (x - 0.75) / 0.25,
                _ => {}
            }
            level * e.exp()
        };
        if faulty && reach.is_none() && r * after >= 0.1 {
            reach = Some(x);
        }
        let metric = if reward { catalog::REWARD } else { catalog::LOSS };
        steps.push(vec![(MetricName::Borrowed(metric), value)]);
        let step = (i as u64 + 1) * every;
        logged.push((step, step as f64 * 0.25));
    }
    let mut benign = Vec::new();
    match event {
        Event::WarmupBump => benign.push(Benign { what: "warmup_end", step: (warmup * n as f64) as u64 }),
        Event::DataSwitch => benign.push(Benign { what: "data_switch", step: (switch_at * n as f64) as u64 }),
        Event::LateRise => benign.push(Benign { what: "late_rise", step: (0.75 * n as f64) as u64 }),
        Event::None => {}
    }
    if noise_kind == NoiseKind::Regime {
        benign.push(Benign { what: "regime_change", step: (regime_at * n as f64) as u64 });
    }
    let fault = faulty.then(|| Fault { kind: AlertKind::SlowDrift, onset: onset as u64, magnitude: m });
    let noise_name = match noise_kind {
        NoiseKind::Ar => format!("ar{phi:.2}"),
        k => format!("{k:?}").to_lowercase(),
    };
    let name = format!(
        "drift2-{base:?}-{}-r{:.0}%-from{:.0}%-net{:.0}%-reach{}-s{seed}-n{n}-every{every}-{noise_name}-{event:?}{}",
        if faulty { format!("m{m}") } else { format!("twin{m}") },
        100.0 * r,
        100.0 * onset_x,
        100.0 * net,
        reach.map_or("-".to_owned(), |x| format!("{:.0}%", 100.0 * x)),
        if cosine { "-cosine" } else { "" }
    );
    let family = if reward { Family::Rl } else { Family::Pretrain };
    Drift2Case { case: Case { name, family, fault, benign, steps, partner: None }, logged }
}
