//! A third corpus, for study case by case: the ways the slow and pair kinds show
//! up in real training runs that a detector written against per-step synthetic
//! series may not expect. Written from how runs are logged and behave, not from
//! the other generators or the detectors' defaults; nothing here was adjusted to
//! what the detectors do.
//!
//! Five families, each with faulty runs at three magnitudes and clean runs of the
//! same shape (so false alarms are measured on the same logging and noise):
//! - run_divergence: a run against its baseline, with its own seed's noise, its
//!   own logging interval and phase (every 1-50 steps, offset), a restart that
//!   re-logs steps from its last checkpoint, a baseline that ends before the run;
//!   the run parts by a level shift or gradually.
//! - slow_drift: pretraining logged every 10-50 steps with step-down or cosine LR
//!   schedules and noise regimes; the loss stops improving and climbs back from
//!   30-70% of the run, or (RL) the reward slides back.
//! - kl_runaway: a KL held near its target by an adaptive coefficient, then
//!   climbing linearly or exponentially (the coefficient fighting it or stuck),
//!   logged every 1-20 steps; clean runs include a slow healthy KL rise.
//! - reward_saturation: the reward's spread collapsing while its level keeps
//!   moving, or the reward clipped at a bound.
//! - throughput_regression: a run that logs only its step time (nanoGPT's `time`,
//!   Megatron's iteration time), with checkpoint pauses.
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::indep::Xo;
use super::synth::{Benign, Case, Family, Fault};

pub const INDEP3_VERSION: u32 = 1;

/// A case with the training steps its points were logged at (the baseline's and,
/// for a pair, the run's own).
pub struct Indep3Case {
    pub case: Case,
    pub logged: Vec<(u64, f64)>,
    pub partner_logged: Option<Vec<(u64, f64)>>,
}

/// The study families, each named by the kind its faulty runs carry.
pub const KINDS: [AlertKind; 5] = [AlertKind::RunDivergence, AlertKind::SlowDrift, AlertKind::KlRunaway, AlertKind::RewardSaturation, AlertKind::ThroughputRegression];

/// Per seed: every kind at magnitudes 0-2 (faulty) and three clean runs of its family.
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (AlertKind, Option<usize>, u64)> {
    seeds.flat_map(|seed| KINDS.into_iter().flat_map(move |k| (0..6u64).map(move |i| (k, (i < 3).then_some(i as usize), seed * 8 + i))))
}

/// AR(1) noise with heavy-tailed innovations (a normal with a 5% chance of 4x
/// spread) and a regime multiplier.
struct Ar {
    phi: f64,
    scale: f64,
    state: f64,
}

impl Ar {
    fn new(rng: &mut Xo, lo: f64, hi: f64) -> Self {
        Ar { phi: rng.pick(&[0.0, 0.3, 0.7, 0.9]), scale: rng.range(lo, hi), state: 0.0 }
    }

    fn next(&mut self, rng: &mut Xo, regime: f64) -> f64 {
        let tail = if rng.unit() < 0.05 { 4.0 } else { 1.0 };
        self.state = self.phi * self.state + (1.0 - self.phi * self.phi).sqrt() * rng.normal() * tail * regime;
        self.scale * self.state
    }
}

/// A power-law pretraining loss at training step `t` of `total`.
struct Curve {
    floor: f64,
    height: f64,
    power: f64,
    t0: f64,
}

impl Curve {
    fn new(rng: &mut Xo, total: f64) -> Self {
        Curve { floor: rng.range(1.8, 3.2), height: rng.range(2.0, 7.0), power: rng.range(0.3, 0.9), t0: rng.range(0.002, 0.03) * total + 5.0 }
    }

    fn at(&self, t: f64) -> f64 {
        self.floor + self.height * (1.0 + t / self.t0).powf(-self.power)
    }
}

fn row(values: &[(&'static str, f64)]) -> Vec<(MetricName, f64)> {
    values.iter().map(|(n, v)| (MetricName::Borrowed(n), *v)).collect()
}

/// Index of the first logged point at or after training step `step`.
fn index_at(logged: &[(u64, f64)], step: u64) -> u64 {
    logged.iter().position(|(s, _)| *s >= step).unwrap_or(logged.len().saturating_sub(1)) as u64
}

pub fn generate(kind: AlertKind, m: Option<usize>, seed: u64) -> Indep3Case {
    let mut rng = Xo::new(seed.wrapping_mul(0xA24B_AED4_963E_E407) ^ ((kind as u64) << 44) ^ (m.map_or(9, |m| m as u64) << 56));
    let c = match kind {
        AlertKind::RunDivergence => divergence(&mut rng, m),
        AlertKind::SlowDrift => drift(&mut rng, m),
        AlertKind::KlRunaway => kl_climb(&mut rng, m),
        AlertKind::RewardSaturation => saturation(&mut rng, m),
        _ => step_time(&mut rng, m),
    };
    let mut c = c;
    let mag = m.map_or("clean".to_owned(), |m| format!("m{m}"));
    c.case.name = format!("indep3-{kind}-{mag}-s{seed}-{}", c.case.name);
    c
}

/// A baseline and a run of the same recipe, different seeds; the run may part.
fn divergence(rng: &mut Xo, m: Option<usize>) -> Indep3Case {
    let every_a = rng.pick(&[1u64, 10, 25, 50]);
    let every_b = every_a * rng.pick(&[1u64, 1, 2]) / rng.pick(&[1u64, 1, 2]).min(every_a);
    let offset_b = if rng.unit() < 0.5 { every_b / 2 } else { 0 };
    let points = rng.pick(&[300u64, 800, 2_000]);
    let total = every_a * points;
    let curve = Curve::new(rng, total as f64);
    let grad_level = rng.range(0.3, 3.0);
    // Each run its own seed: its own noise, of the recipe's size.
    let loss_sigma = rng.range(0.004, 0.03);
    let grad_sigma = rng.range(0.03, 0.15);
    let (mut la, mut lb) = (Ar { phi: 0.5, scale: loss_sigma, state: 0.0 }, Ar { phi: 0.5, scale: loss_sigma, state: 0.0 });
    let (mut ga, mut gb) = (Ar { phi: 0.3, scale: grad_sigma, state: 0.0 }, Ar { phi: 0.3, scale: grad_sigma, state: 0.0 });
    // The baseline may end first (a shorter reference run).
    let end_a = if rng.unit() < 0.3 { (total as f64 * rng.range(0.6, 0.85)) as u64 } else { total };
    let onset = (total as f64 * rng.range(0.2, 0.55)) as u64;
    let shift = m.map(|m| [0.12, 0.25, 0.6][m]);
    let ramp = if rng.unit() < 0.5 { 0.0 } else { rng.range(0.02, 0.1) * total as f64 };
    let mut benign = Vec::new();
    let mut steps = Vec::new();
    let mut logged = Vec::new();
    let mut t = 0;
    while t <= end_a {
        let bump = if rng.unit() < 0.003 { rng.range(1.3, 2.5) } else { 1.0 };
        if bump > 1.0 {
            benign.push(Benign { what: "one_step_bump", step: logged.len() as u64 });
        }
        let tf = t as f64;
        steps.push(row(&[(catalog::LOSS, curve.at(tf) * la.next(rng, 1.0).exp() * bump), (catalog::GRAD_NORM, grad_level * (1.0 + 3.0 * curve.t0 / (curve.t0 + tf)) * ga.next(rng, 1.0).exp() * bump)]));
        logged.push((t, tf));
        t += every_a;
    }
    // The run: its own logging phase, and a restart (30%) that goes back to its
    // last checkpoint and logs those steps again, some time later.
    let restart = (rng.unit() < 0.3).then(|| {
        let at = (total as f64 * rng.range(0.1, 0.8)) as u64;
        // Back to a checkpoint, not to the start.
        let back = rng.pick(&[100u64, 500, 1000]).min(at / 2);
        (at, back)
    });
    let mut partner = Vec::new();
    let mut partner_logged = Vec::new();
    let mut delay = 0.0;
    let mut t = offset_b;
    let mut restarted = false;
    while t <= total {
        if let Some((at, back)) = restart.filter(|_| !restarted) {
            if t >= at {
                restarted = true;
                // Minutes to restart, then the steps since the checkpoint again.
                delay += 600.0 + back as f64;
                t -= back / every_b * every_b;
                benign.push(Benign { what: "restart", step: index_at(&logged, t) });
            }
        }
        let tf = t as f64;
        let parted = match shift {
            Some(s) if t >= onset => 1.0 + s * if ramp > 0.0 { ((tf - onset as f64) / ramp).min(1.0) } else { 1.0 },
            _ => 1.0,
        };
        let bump = if rng.unit() < 0.003 { rng.range(1.3, 2.5) } else { 1.0 };
        partner.push(row(&[
            (catalog::LOSS, curve.at(tf) * lb.next(rng, 1.0).exp() * bump * parted),
            (catalog::GRAD_NORM, grad_level * (1.0 + 3.0 * curve.t0 / (curve.t0 + tf)) * gb.next(rng, 1.0).exp() * bump * parted.powi(2)),
        ]));
        partner_logged.push((t, tf + delay));
        t += every_b;
    }
    let fault = m.map(|m| Fault { kind: AlertKind::RunDivergence, onset: index_at(&logged, onset), magnitude: m });
    let name = format!("every{every_a}/{every_b}+{offset_b}-n{}{}{}{}", logged.len(), if end_a < total { "-short-baseline" } else { "" }, if restart.is_some() { "-restart" } else { "" }, if ramp > 0.0 { "-gradual" } else { "-shift" });
    Indep3Case { case: Case { name, family: Family::Pretrain, fault, benign, steps, partner: Some(partner) }, logged, partner_logged: Some(partner_logged) }
}

/// Long pretraining logged sparsely, or an RL reward, drifting the wrong way late.
fn drift(rng: &mut Xo, m: Option<usize>) -> Indep3Case {
    let every = rng.pick(&[10u64, 20, 50]);
    let n = rng.pick(&[600usize, 2_000, 6_000]);
    let total = every as f64 * n as f64;
    let rl = rng.unit() < 0.4;
    let curve = Curve::new(rng, total);
    let mut noise = Ar::new(rng, 0.005, 0.03);
    // Step-down LR schedule (drops of the loss at 50% and 80%) or cosine (none).
    let step_down = rng.unit() < 0.5;
    let (regime_at, regime_len, regime) = (rng.range(0.2, 0.8) * n as f64, rng.range(0.03, 0.1) * n as f64, rng.range(1.5, 3.0));
    let start = rng.pick(&[0.3, 0.5, 0.7]);
    let onset = (start * n as f64) as usize;
    let (r_lo, r_hi, r_tau) = (rng.range(-1.0, 0.5), rng.range(0.8, 3.0), rng.range(0.1, 0.3) * n as f64);
    let mut r_noise = Ar::new(rng, 0.03, 0.15);
    let mut benign = vec![Benign { what: "regime_change", step: regime_at as u64 }];
    if step_down {
        benign.push(Benign { what: "lr_decay", step: n as u64 / 2 });
        benign.push(Benign { what: "lr_decay", step: n as u64 * 4 / 5 });
    }
    let mut steps = Vec::with_capacity(n);
    let mut logged = Vec::with_capacity(n);
    let mut at_onset = None;
    for i in 0..n {
        let t = i as f64 * every as f64;
        let reg = if (regime_at..regime_at + regime_len).contains(&(i as f64)) { regime } else { 1.0 };
        let mut level = curve.at(t);
        if step_down {
            level *= if i >= n * 4 / 5 { 0.93 } else if i >= n / 2 { 0.96 } else { 1.0 };
        }
        let x = (i as f64 - onset as f64) / (n - onset) as f64;
        let mut reward = r_lo + (r_hi - r_lo) * (i as f64 / r_tau).tanh();
        if let Some(m) = m.filter(|_| i >= onset) {
            if rl {
                // The reward gives back part of its gain, slowly.
                reward -= [0.3, 0.5, 0.9][m] * (r_hi - r_lo) * (i as f64 / r_tau).tanh() * x;
            } else {
                // The loss stops improving and climbs back from its level at the onset.
                let base = *at_onset.get_or_insert(level);
                level = base * (1.0 + [0.15, 0.3, 0.6][m] * x);
            }
        }
        let loss = level * noise.next(rng, reg).exp();
        let mut values = vec![(catalog::LOSS, loss)];
        if rl {
            values.push((catalog::REWARD, reward + r_noise.next(rng, reg)));
        }
        steps.push(row(&values));
        logged.push((t as u64, t));
    }
    let fault = m.map(|m| Fault { kind: AlertKind::SlowDrift, onset: onset as u64, magnitude: m });
    let name = format!("{}every{every}-n{n}-from{start}{}", if rl { "reward-" } else { "" }, if step_down { "-stepdown" } else { "-cosine" });
    Indep3Case { case: Case { name, family: if rl { Family::Rl } else { Family::Pretrain }, fault, benign, steps, partner: None }, logged, partner_logged: None }
}

/// A KL held at its target by an adaptive coefficient, then climbing.
fn kl_climb(rng: &mut Xo, m: Option<usize>) -> Indep3Case {
    let every = rng.pick(&[1u64, 5, 20]);
    let n = rng.pick(&[400usize, 1_200, 3_000]);
    let target = rng.range(0.02, 0.3);
    let mut noise = Ar::new(rng, 0.05, 0.2);
    let ramp_in = rng.range(0.03, 0.1) * n as f64;
    let onset = (rng.range(0.3, 0.7) * n as f64) as usize;
    let span = rng.range(0.08, 0.25) * n as f64;
    let exponential = rng.unit() < 0.5;
    let fights = rng.unit() < 0.5;
    // Clean runs: the KL level drifts up by up to 40% over the whole run.
    let healthy_rise = rng.range(0.0, 0.4);
    let mut coef = rng.range(0.02, 0.2);
    let mut benign = vec![Benign { what: "kl_ramp", step: 0 }];
    let (mut steps, mut logged) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut kl_prev = 0.0f64;
    for i in 0..n {
        let ramp = 1.0 - (-(i as f64) / ramp_in).exp();
        let mut level = target * ramp * (1.0 + healthy_rise * i as f64 / n as f64);
        if let Some(m) = m.filter(|_| i >= onset) {
            let to: f64 = [3.0, 6.0, 15.0][m];
            let x = ((i - onset) as f64 / span).min(1.5);
            level *= if exponential { to.powf(x) } else { 1.0 + (to - 1.0) * x };
        }
        let kl = level * noise.next(rng, 1.0).exp();
        // The controller raises the coefficient while the KL is over target (in a
        // faulty run it may be stuck instead).
        let stuck = m.is_some() && i >= onset && !fights;
        if !stuck {
            coef *= (0.05 * (kl_prev / target).max(0.2).ln().clamp(-1.0, 1.0) + 0.005 * rng.normal()).exp();
        }
        kl_prev = kl;
        steps.push(row(&[(catalog::KL, kl), (catalog::KL_COEF, coef), (catalog::REWARD, 0.5 * ramp + 0.05 * rng.normal()), (catalog::LOSS, -0.01 + 0.02 * rng.normal())]));
        logged.push((i as u64 * every, (i as u64 * every) as f64));
    }
    if healthy_rise > 0.0 {
        benign.push(Benign { what: "kl_drift", step: 0 });
    }
    let fault = m.map(|m| Fault { kind: AlertKind::KlRunaway, onset: onset as u64, magnitude: m });
    let name = format!("every{every}-n{n}-{}-{}", if exponential { "exp" } else { "linear" }, if fights { "coef-fights" } else { "coef-stuck" });
    Indep3Case { case: Case { name, family: Family::Rl, fault, benign, steps, partner: None }, logged, partner_logged: None }
}

/// Reward whose spread collapses while its level keeps moving, or clipped at a bound.
fn saturation(rng: &mut Xo, m: Option<usize>) -> Indep3Case {
    let every = rng.pick(&[1u64, 5, 10]);
    let n = rng.pick(&[300usize, 1_000, 3_000]);
    let clipped = rng.unit() < 0.5;
    let (lo, hi, tau) = (rng.range(-0.5, 0.3), rng.range(0.6, 2.0), rng.range(0.2, 0.6) * n as f64);
    let std0 = rng.range(0.2, 0.8);
    let onset = (rng.range(0.3, 0.7) * n as f64) as usize;
    let collapse = rng.range(10.0, 60.0);
    let mut r_noise = Ar::new(rng, 0.3, 0.6);
    let groups = 16.0f64;
    let bound = hi;
    let (mut steps, mut logged) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let tf = i as f64;
        let mut mean = lo + (hi - lo) * (tf / tau).tanh();
        let mut std = std0 * (1.0 - 0.3 * tf / n as f64);
        if let Some(m) = m.filter(|_| i >= onset) {
            let left = [0.1, 0.03, 0.005][m];
            let k = (-((i - onset) as f64) / collapse).exp();
            std *= left + (1.0 - left) * k;
            if clipped {
                // The policy exceeds the bound: every sample is clipped to it.
                mean = bound - (bound - mean).abs() * (left + (1.0 - left) * k) * 0.2;
            } else {
                // No signal left, but the level keeps moving (a slow wander).
                mean += 0.1 * (hi - lo) * ((i - onset) as f64 / 40.0).sin();
            }
        } else if clipped {
            mean = mean.min(bound);
        }
        // The logged reward is a batch mean: its noise is the spread over the batch.
        let reward = mean + std / groups.sqrt() * r_noise.next(rng, 1.0) / r_noise.scale.max(1e-9);
        let reward = if clipped { reward.min(bound) } else { reward };
        steps.push(row(&[(catalog::REWARD, reward), (catalog::REWARD_STD, std * (0.1 * rng.normal()).exp()), (catalog::KL, 0.05 * (0.2 * rng.normal()).exp()), (catalog::LOSS, -0.01 + 0.02 * rng.normal())]));
        logged.push((i as u64 * every, (i as u64 * every) as f64));
    }
    let fault = m.map(|m| Fault { kind: AlertKind::RewardSaturation, onset: onset as u64, magnitude: m });
    let name = format!("every{every}-n{n}-{}", if clipped { "clipped" } else { "moving" });
    Indep3Case { case: Case { name, family: Family::Rl, fault, benign: vec![Benign { what: "kl_ramp", step: 0 }], steps, partner: None }, logged, partner_logged: None }
}

/// A run that logs its step time (no tokens/s), with checkpoint pauses.
fn step_time(rng: &mut Xo, m: Option<usize>) -> Indep3Case {
    let every = rng.pick(&[1u64, 10]);
    let n = rng.pick(&[300usize, 1_500, 5_000]);
    let base = rng.range(0.05, 3.0);
    let mut noise = Ar::new(rng, 0.01, 0.08);
    let ckpt = rng.pick(&[50usize, 100, 250]);
    let onset = (rng.range(0.3, 0.8) * n as f64) as usize;
    let ramp = rng.pick(&[1.0, 20.0]);
    let curve = Curve::new(rng, n as f64 * every as f64);
    let mut benign = Vec::new();
    let (mut steps, mut logged) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let mut dt = base * noise.next(rng, 1.0).exp();
        if i > 0 && i % ckpt == 0 {
            dt *= rng.range(4.0, 15.0);
            benign.push(Benign { what: "checkpoint", step: i as u64 });
        }
        if let Some(m) = m.filter(|_| i >= onset) {
            let to = [0.55, 0.35, 0.15][m];
            let speed = 1.0 - (1.0 - to) * (((i - onset) as f64 + 1.0) / ramp).min(1.0);
            dt /= speed;
        }
        let t = i as f64 * every as f64;
        steps.push(row(&[(catalog::LOSS, curve.at(t) * (0.01 * rng.normal()).exp()), (catalog::STEP_TIME_S, dt)]));
        logged.push((t as u64, t));
    }
    let fault = m.map(|m| Fault { kind: AlertKind::ThroughputRegression, onset: onset as u64, magnitude: m });
    Indep3Case { case: Case { name: format!("every{every}-n{n}-ckpt{ckpt}"), family: Family::Pretrain, fault, benign, steps, partner: None }, logged, partner_logged: None }
}
