//! A study corpus of the classes issue 28 found missed or falsely raised on
//! material never tuned on, written from how these runs look and from the
//! issue's words, not from the other generators or the detectors' defaults.
//! Each faulty run has clean twins of the same shape.
//!
//! - `slow_explosion` (grad_explosion): a gradient norm that climbs steadily,
//!   1.5-6% a step, by up to five orders of magnitude, from an onset anywhere
//!   after the first tenth of the run; clean twins rise during the LR warm-up
//!   (2-6x over the first 5-25% of the run) and slowly late (1.5-3x over the
//!   second half), with noise on the log scale (AR(1) 0-0.9).
//! - `grpo` (clean only): a GRPO run whose `loss` is exactly 0 on 40-90% of the
//!   steps (a group's rewards tied) and signed otherwise, its KL starting at
//!   exactly 0, its reward rising noisily.
//! - `ppo_kl_from_zero` (clean only): a PPO run's KL of exactly 0 at its first
//!   step, at its working level (0.5-8) by the second or a few later, an
//!   adaptive controller holding it there; the reward rises then flattens.
//! - `grpo_grad` (grad_explosion; v2): a GRPO run's gradient norm at two
//!   levels, tiny (1e-6 to 1e-3) on the steps whose group's rewards all tied
//!   (5-97% of the steps in clean runs, 20-70% in faulty ones) and normal
//!   (0.05-2, log-normal spread) on the others; a faulty run's normal steps
//!   grow 10x, 30x or 100x from an onset in 30-80% of the run and stay there.
//! - `slow_vanishing` (grad_vanishing; v3): a gradient norm that falls steadily,
//!   4-12% a step, to 1e-3 to 1e-6 of its level from an onset anywhere after the
//!   first fifth of the run, then stays there; clean twins fall the way healthy
//!   runs do: from an early level 5-30x their later one over the first 5-30% of
//!   the run, then by up to a half more over the rest, with noise on the log
//!   scale (AR(1) 0-0.9).
//! - `held_out` (reward_hacking): a training reward that rises to its ceiling
//!   and holds while a held-out score (named as trainers name one: `eval_acc`,
//!   `val_acc`, `pass@1`, `gsm8k/accuracy`, `eval/reward`, ...) logged every
//!   10-50 steps rises, peaks, then falls to 15-60% of its peak; clean twins
//!   keep the score on a plateau with its evaluation noise.
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::indep::Xo;
use super::synth::{Benign, Case, Family, Fault};

pub const UNSEEN_VERSION: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Class {
    SlowExplosion,
    Grpo,
    PpoKlFromZero,
    HeldOut,
    GrpoGrad,
    SlowVanishing,
}

/// Per seed: (class, Some(magnitude) for a faulty run or None, case seed).
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (Class, Option<usize>, u64)> {
    seeds.flat_map(|seed| {
        let faulty = [Class::SlowExplosion, Class::HeldOut, Class::GrpoGrad, Class::SlowVanishing].into_iter().flat_map(move |c| (0..3).map(move |m| (c, Some(m), seed * 64 + m as u64)));
        let clean = [Class::SlowExplosion, Class::SlowExplosion, Class::Grpo, Class::Grpo, Class::PpoKlFromZero, Class::HeldOut, Class::HeldOut, Class::GrpoGrad, Class::GrpoGrad, Class::SlowVanishing, Class::SlowVanishing]
            .into_iter()
            .enumerate()
            .map(move |(i, c)| (c, None, seed * 64 + 8 + i as u64));
        faulty.chain(clean)
    })
}

pub struct UnseenCase {
    pub case: Case,
    pub logged: Vec<(u64, f64)>,
}

/// AR(1) noise with stationary spread `scale`.
struct Ar {
    phi: f64,
    scale: f64,
    state: f64,
}

impl Ar {
    fn new(rng: &mut Xo, lo: f64, hi: f64) -> Self {
        Ar { phi: rng.pick(&[0.0, 0.5, 0.8, 0.9]), scale: rng.range(lo, hi), state: 0.0 }
    }
    fn next(&mut self, rng: &mut Xo) -> f64 {
        self.state = self.phi * self.state + (1.0 - self.phi * self.phi).sqrt() * rng.normal();
        self.scale * self.state
    }
}

pub fn generate(class: Class, magnitude: Option<usize>, seed: u64) -> UnseenCase {
    let mut rng = Xo::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((class as u64) << 40) ^ 0x0028_0028);
    let n = rng.pick(&[400usize, 800, 1_500, 3_000]);
    let every = rng.pick(&[1u64, 1, 2, 10]);
    let (name, family, kind, onset, benign, steps) = match class {
        Class::SlowExplosion => slow_explosion(&mut rng, n, magnitude),
        Class::Grpo => grpo(&mut rng, n),
        Class::PpoKlFromZero => ppo_kl_from_zero(&mut rng, n),
        Class::HeldOut => held_out(&mut rng, n, every, magnitude),
        Class::GrpoGrad => grpo_grad(&mut rng, n, magnitude),
        Class::SlowVanishing => slow_vanishing(&mut rng, n, magnitude),
    };
    let tag = magnitude.map_or("clean".to_owned(), |m| format!("m{m}"));
    let fault = magnitude.zip(onset).map(|(m, o)| Fault { kind, onset: o as u64, magnitude: m });
    let case = Case { name: format!("unseen-{class:?}-{tag}-s{seed}-n{n}-every{every}-{name}"), family, fault, benign, steps, partner: None };
    let logged = (0..n as u64).map(|i| (i * every, (i * every) as f64 * 0.3)).collect();
    UnseenCase { case, logged }
}

type Generated = (String, Family, AlertKind, Option<usize>, Vec<Benign>, Vec<Vec<(MetricName, f64)>>);

/// A pretraining run's loss and grad norm; a faulty one's grad norm climbs
/// steadily from its onset.
fn slow_explosion(rng: &mut Xo, n: usize, magnitude: Option<usize>) -> Generated {
    let nf = n as f64;
    let g0 = rng.range(0.05, 5.0);
    let mut noise = Ar::new(rng, 0.05, 0.25);
    let warm_rise = rng.range(2.0, 6.0);
    let warm_len = rng.range(0.05, 0.25) * nf + 10.0;
    let late_rise = rng.range(1.5, 3.0);
    let rate = magnitude.map(|m| [0.015, 0.03, 0.05][m] * rng.range(1.0, 1.2));
    let onset = rate.map(|_| (rng.range(0.1, 0.8) * nf) as usize);
    let (l_inf, l_amp, tau) = (rng.range(1.5, 3.0), rng.range(2.0, 6.0), rng.range(0.05, 0.3) * nf);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64;
        // Rises to warm_rise x over the warm-up, then the slow late rise.
        let warm = 1.0 + (warm_rise - 1.0) * (t / warm_len).min(1.0);
        let late = if t > nf / 2.0 { 1.0 + (late_rise - 1.0) * (t - nf / 2.0) / (nf / 2.0) } else { 1.0 };
        let mut g = g0 * warm * late * noise.next(rng).exp();
        if let (Some(r), Some(o)) = (rate, onset) {
            if i >= o {
                // Up to five orders of magnitude, then it stays there.
                g *= (r * (i - o) as f64).min(5.0 * std::f64::consts::LN_10).exp();
            }
        }
        let loss = (l_inf + l_amp * (-t / tau).exp()) * (1.0 + 0.02 * rng.normal());
        steps.push(vec![(catalog::LOSS.into(), loss), (catalog::GRAD_NORM.into(), g), (catalog::LR.into(), 3e-4 * (t / warm_len).min(1.0))]);
    }
    let name = format!("g{g0:.2}-warm{warm_rise:.1}x{warm_len:.0}-late{late_rise:.1}-phi{}-noise{:.2}{}", noise.phi, noise.scale, rate.map_or(String::new(), |r| format!("-rate{r:.3}")));
    (name, Family::Pretrain, AlertKind::GradExplosion, onset, vec![Benign { what: "warmup_end", step: warm_len as u64 }], steps)
}

/// A pretraining run whose grad norm comes down from its early level as healthy
/// runs do; a faulty one's falls steadily to nothing from its onset.
fn slow_vanishing(rng: &mut Xo, n: usize, magnitude: Option<usize>) -> Generated {
    let nf = n as f64;
    let g_late = rng.range(0.05, 2.0);
    let early = rng.range(5.0, 30.0);
    let early_len = rng.range(0.05, 0.3) * nf + 10.0;
    let late_fall = rng.range(0.5, 1.0);
    let mut noise = Ar::new(rng, 0.05, 0.25);
    let rate = magnitude.map(|m| [0.04, 0.07, 0.12][m] * rng.range(1.0, 1.2));
    let depth = rng.range(3.0, 6.0) * std::f64::consts::LN_10;
    let onset = rate.map(|_| (rng.range(0.2, 0.8) * nf) as usize);
    let (l_inf, l_amp, tau) = (rng.range(1.5, 3.0), rng.range(2.0, 6.0), rng.range(0.05, 0.3) * nf);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64;
        // From `early` times the later level down over the early stretch (on
        // the log scale), then the slow late fall.
        let e = early.powf((1.0 - t / early_len).max(0.0));
        let late = 1.0 - (1.0 - late_fall) * t / nf;
        let mut g = g_late * e * late * noise.next(rng).exp();
        if let (Some(r), Some(o)) = (rate, onset) {
            if i >= o {
                g *= (-(r * (i - o) as f64).min(depth)).exp();
            }
        }
        let loss = (l_inf + l_amp * (-t / tau).exp()) * (1.0 + 0.02 * rng.normal());
        steps.push(vec![(catalog::LOSS.into(), loss), (catalog::GRAD_NORM.into(), g), (catalog::LR.into(), 3e-4)]);
    }
    let name = format!("g{g_late:.2}-early{early:.0}x{early_len:.0}-late{late_fall:.2}-phi{}-noise{:.2}{}", noise.phi, noise.scale, rate.map_or(String::new(), |r| format!("-rate{r:.3}-depth{:.0}", depth / std::f64::consts::LN_10)));
    (name, Family::Pretrain, AlertKind::GradVanishing, onset, Vec::new(), steps)
}

/// A healthy GRPO run: a zero-inflated signed policy loss, a KL from exactly 0.
fn grpo(rng: &mut Xo, n: usize) -> Generated {
    let nf = n as f64;
    let zeros = rng.range(0.4, 0.9);
    let loss_scale = rng.range(0.005, 0.2);
    let kl_level = rng.range(0.001, 0.3);
    let kl_ramp = rng.range(0.05, 0.3) * nf;
    let mut kl_noise = Ar::new(rng, 0.1, 0.4);
    let gain = rng.range(0.2, 0.8);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64;
        let loss = if rng.unit() < zeros { 0.0 } else { loss_scale * rng.normal() };
        let kl = if i == 0 { 0.0 } else { kl_level * (t / kl_ramp).min(1.0) * kl_noise.next(rng).exp() };
        let reward = (0.1 + gain * (1.0 - (-t / (0.3 * nf)).exp()) + 0.08 * rng.normal()).clamp(0.0, 1.0);
        let grad = if loss == 0.0 { 1e-4 * rng.range(0.5, 2.0) } else { rng.range(0.05, 0.5) };
        steps.push(vec![(catalog::LOSS.into(), loss), (catalog::KL.into(), kl), (catalog::REWARD.into(), reward), (catalog::GRAD_NORM.into(), grad)]);
    }
    let name = format!("zeros{zeros:.2}-loss{loss_scale:.3}-kl{kl_level:.3}");
    (name, Family::Rl, AlertKind::LossSpike, None, vec![Benign { what: "kl_ramp", step: 0 }], steps)
}

/// A GRPO run's gradient norm at two levels (tied groups: tiny), its
/// normal steps growing `[10, 30, 100][m]` times from the onset of a faulty one.
fn grpo_grad(rng: &mut Xo, n: usize, magnitude: Option<usize>) -> Generated {
    let nf = n as f64;
    let tied = if magnitude.is_some() { rng.range(0.2, 0.7) } else { rng.range(0.05, 0.97) };
    let tiny = 10f64.powf(rng.range(-6.0, -3.0));
    let normal = rng.range(0.05, 2.0);
    let spread = rng.range(0.3, 0.7);
    let factor = magnitude.map(|m| [10.0, 30.0, 100.0][m]);
    let onset = factor.map(|_| (rng.range(0.3, 0.8) * nf) as usize);
    let gain = rng.range(0.2, 0.8);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64;
        let is_tied = rng.unit() < tied;
        let mut grad = if is_tied { tiny * (0.3 * rng.normal()).exp() } else { normal * (spread * rng.normal()).exp() };
        if let (Some(f), Some(o), false) = (factor, onset, is_tied) {
            if i >= o {
                grad *= f;
            }
        }
        let loss = if is_tied { 0.0 } else { 0.05 * rng.normal() };
        let reward = (0.1 + gain * (1.0 - (-t / (0.3 * nf)).exp()) + 0.08 * rng.normal()).clamp(0.0, 1.0);
        let kl = 0.02 * (t / (0.1 * nf)).min(1.0) * (0.2 * rng.normal()).exp();
        steps.push(vec![(catalog::LOSS.into(), loss), (catalog::KL.into(), kl), (catalog::REWARD.into(), reward), (catalog::GRAD_NORM.into(), grad)]);
    }
    let name = format!("tied{tied:.2}-tiny{tiny:.1e}-normal{normal:.2}-spread{spread:.2}{}", factor.map_or(String::new(), |f| format!("-x{f}")));
    (name, Family::Rl, AlertKind::GradExplosion, onset, vec![Benign { what: "tied_groups", step: 0 }], steps)
}

/// A healthy PPO run whose KL is exactly 0 at its first step and at its
/// working level soon after.
fn ppo_kl_from_zero(rng: &mut Xo, n: usize) -> Generated {
    let nf = n as f64;
    let target = rng.range(0.5, 8.0);
    let ramp = rng.pick(&[1.0, 2.0, 5.0]);
    let period = rng.range(50.0, 400.0);
    let gain = rng.range(0.05, 0.5);
    let mut noise = Ar::new(rng, 0.05, 0.2);
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64;
        let kl = if i == 0 { 0.0 } else { target * (t / ramp).min(1.0) * (0.2 * (std::f64::consts::TAU * t / period).sin()).exp() * noise.next(rng).exp() };
        let reward = 0.15 + gain * (t / (0.3 * nf)).tanh() + 0.02 * rng.normal();
        let policy_loss = if rng.unit() < 0.3 { 0.0 } else { 0.05 * rng.normal() };
        steps.push(vec![(catalog::KL.into(), kl), (catalog::REWARD.into(), reward), (catalog::POLICY_LOSS.into(), policy_loss), (catalog::ENTROPY.into(), 2.0 - 0.3 * (t / nf) + 0.02 * rng.normal())]);
    }
    let name = format!("kl{target:.2}-ramp{ramp}-gain{gain:.2}");
    (name, Family::Rl, AlertKind::KlSpike, None, vec![Benign { what: "kl_ramp", step: 0 }], steps)
}

/// The names trainers log a held-out score under.
const HELD_OUT_NAMES: &[&str] = &["eval_acc", "eval_accuracy", "val_acc", "pass@1", "accuracy", "gsm8k/accuracy", "math_score", "eval/reward", "test/score"];

/// A training reward that saturates while a held-out score, logged every
/// 10-50 steps, falls (or, clean, stays on its plateau).
fn held_out(rng: &mut Xo, n: usize, every: u64, magnitude: Option<usize>) -> Generated {
    let nf = n as f64;
    let name = rng.pick(HELD_OUT_NAMES);
    let eval_every = (rng.pick(&[10u64, 25, 50]) / every).max(1) as usize;
    let (r0, r1) = (rng.range(-0.5, 0.3), rng.range(0.6, 1.5));
    let r_tau = rng.range(0.05, 0.2) * nf;
    let r_noise = rng.range(0.02, 0.1);
    let (s0, peak) = (rng.range(0.05, 0.3), rng.range(0.35, 0.8));
    let s_tau = rng.range(0.05, 0.2) * nf;
    let s_noise = rng.range(0.005, 0.03);
    let kept = magnitude.map(|m| [0.6, 0.4, 0.15][m]);
    let onset = kept.map(|_| ((rng.range(0.4, 0.7) * nf) as usize / eval_every) * eval_every);
    let fall_len = rng.range(0.05, 0.2) * nf;
    let mut steps = Vec::with_capacity(n);
    for i in 0..n {
        let t = i as f64;
        let reward = r0 + (r1 - r0) * (1.0 - (-t / r_tau).exp()) + r_noise * rng.normal();
        let mut row: Vec<(MetricName, f64)> = vec![(catalog::REWARD.into(), reward), (catalog::KL.into(), 0.05 * (1.0 + t / nf) * (0.1 * rng.normal()).exp())];
        if i % eval_every == 0 {
            let mut score = s0 + (peak - s0) * (1.0 - (-t / s_tau).exp());
            if let (Some(k), Some(o)) = (kept, onset) {
                if i >= o {
                    score *= 1.0 - (1.0 - k) * ((i - o) as f64 / fall_len).min(1.0);
                }
            }
            row.push((name.into(), (score + s_noise * rng.normal()).max(0.0)));
        }
        steps.push(row);
    }
    let label = format!("{}-evalevery{eval_every}-peak{peak:.2}{}", name.replace('/', "_"), kept.map_or(String::new(), |k| format!("-kept{k}")));
    (label, Family::Rl, AlertKind::RewardHacking, onset, Vec::new(), steps)
}
