//! A fourth corpus, for study case by case: long CLEAN runs of the four kinds
//! that raise false alarms (grad_explosion, memory_leak, kl_runaway, kl_spike),
//! written from how real training runs behave, plus a few faulty runs of each
//! kind at moderate magnitudes so that recall stays honest. Not written from the
//! other generators or the detectors' defaults; nothing here was adjusted to what
//! the detectors do.
//!
//! - Gradient norms: fall fast early and drift slowly later (up or down); a jump
//!   at the end of the LR warm-up that relaxes, a lasting jump at an LR schedule
//!   step; heavy-tailed noise on the log scale (Student-t or normal) with memory
//!   (AR(1) up to 0.97: bursts that last); occasional one-step bumps of 3-5x.
//! - GPU memory from a caching allocator: a start-up climb, then stairs up when a
//!   longer batch than any before arrives (rarer and rarer), eval passes that
//!   allocate and free (allocated) or leave a stair (reserved), fragmentation
//!   creep that levels off after thousands of steps, allocated memory that swings
//!   with the batch, a restart that frees everything and climbs again; logged
//!   every 1-100 steps, on some runs only every other logged point (one rank).
//! - KL with an adaptive coefficient: an early ramp, oscillation around the
//!   target as the controller reacts, a slow healthy rise of up to 40% that then
//!   settles, heavy-tailed per-batch noise (with a k1-style estimator that goes
//!   negative), reference-model refreshes (the KL falls to zero and ramps back),
//!   short bumps after a policy refresh, logged every 1-25 steps.
//!
//! Faults: grad norms that explode (4-40x, at once or over a few steps), memory
//! that leaks (0.06-0.3% of the use per sample, linear or in stairs), KL spikes
//! (5-30x for a few points) and KL runaways (4-20x over hundreds of points, the
//! coefficient stuck or fighting).
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::indep::Xo;
use super::synth::{Benign, Case, Family, Fault};

pub const INDEP4_VERSION: u32 = 1;
pub const INDEP4_MEM_TOTAL: f64 = 80.0 * GIB;
const GIB: f64 = (1u64 << 30) as f64;

/// The study families, each named by the kind its faulty runs carry.
pub const KINDS: [AlertKind; 4] = [AlertKind::GradExplosion, AlertKind::MemoryLeak, AlertKind::KlRunaway, AlertKind::KlSpike];
/// Clean runs per kind and seed (faulty ones: one per magnitude, three).
const CLEAN_RUNS: u64 = 5;

/// A case, the (training step, wall time) each point was logged at, and the
/// memory total its run declares (if any).
pub struct Indep4Case {
    pub case: Case,
    pub logged: Vec<(u64, f64)>,
    pub mem_total: Option<f64>,
}

/// Per seed: every kind at magnitudes 0-2 (faulty) and [`CLEAN_RUNS`] clean runs.
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (AlertKind, Option<usize>, u64)> {
    seeds.flat_map(|seed| KINDS.into_iter().flat_map(move |k| (0..3 + CLEAN_RUNS).map(move |i| (k, (i < 3).then_some(i as usize), seed * 16 + i))))
}

/// Noise on the log scale with memory: AR(1) with heavy-tailed innovations,
/// scaled so that its stationary spread is `scale`.
struct LogNoise {
    df: Option<u32>,
    phi: f64,
    scale: f64,
    state: f64,
}

impl LogNoise {
    fn new(rng: &mut Xo, lo: f64, hi: f64, phis: &[f64]) -> Self {
        LogNoise { df: rng.pick(&[None, Some(3), Some(4), Some(6)]), phi: rng.pick(phis), scale: rng.range(lo, hi), state: 0.0 }
    }

    fn next(&mut self, rng: &mut Xo) -> f64 {
        let e = match self.df {
            Some(df) => rng.student_t(df),
            None => rng.normal(),
        };
        self.state = self.phi * self.state + (1.0 - self.phi * self.phi).sqrt() * e;
        self.scale * self.state
    }
}

fn row(values: &[(&'static str, f64)]) -> Vec<(MetricName, f64)> {
    values.iter().map(|(n, v)| (MetricName::Borrowed(n), *v)).collect()
}

/// Run lengths in logged points: mostly long.
fn length(rng: &mut Xo, clean: bool) -> usize {
    if clean {
        rng.pick(&[5_000, 10_000, 20_000, 50_000, 50_000, 200_000])
    } else {
        rng.pick(&[5_000, 10_000, 20_000, 50_000])
    }
}

/// A smooth step from 0 (before `a`) to 1 (after `b`).
fn smooth(x: f64, a: f64, b: f64) -> f64 {
    let t = ((x - a) / (b - a).max(1e-9)).clamp(0.0, 1.0);
    t * t * (3.0 - 2.0 * t)
}

pub fn generate(kind: AlertKind, m: Option<usize>, seed: u64) -> Indep4Case {
    let mut rng = Xo::new(seed.wrapping_mul(0x9FB2_1C65_1E98_DF25) ^ ((kind as u64) << 40) ^ (m.map_or(7, |m| m as u64) << 52));
    let mut c = match kind {
        AlertKind::GradExplosion => grad_run(&mut rng, m),
        AlertKind::MemoryLeak => memory_run(&mut rng, m),
        _ => kl_run(&mut rng, kind, m),
    };
    let mag = m.map_or("clean".to_owned(), |m| format!("m{m}"));
    c.case.name = format!("indep4-{kind}-{mag}-s{seed}-{}", c.case.name);
    c
}

/// A pretraining run's loss and gradient norm.
fn grad_run(rng: &mut Xo, m: Option<usize>) -> Indep4Case {
    let n = length(rng, m.is_none());
    let nf = n as f64;
    let every = rng.pick(&[1u64, 1, 10, 20]);
    let g_inf = rng.range(0.15, 3.0);
    // Falls fast early (from several times its later level)...
    let (early, tau) = (rng.range(2.0, 15.0), rng.range(0.002, 0.02) * nf + 20.0);
    // ...and drifts slowly later, up or down.
    let drift = rng.range(-0.4, 0.8);
    // The LR warm-up ends with a jump that relaxes; a schedule step may leave one.
    let warm_end = rng.range(0.005, 0.03) * nf + 30.0;
    let warm_jump = rng.pick(&[1.0, 1.3, 1.6, 2.0]);
    let warm_relax = rng.range(50.0, 1_500.0);
    let lr_step = (rng.unit() < 0.5).then(|| (rng.range(0.5, 0.85) * nf, rng.range(1.2, 2.0)));
    let mut noise = LogNoise::new(rng, 0.04, 0.25, &[0.0, 0.5, 0.8, 0.95, 0.97]);
    let bump_rate = rng.range(1.0 / 4_000.0, 1.0 / 800.0);
    let (curve_floor, curve_height, curve_pow) = (rng.range(1.8, 3.2), rng.range(3.0, 8.0), rng.range(0.3, 0.8));
    let mut loss_noise = LogNoise::new(rng, 0.005, 0.02, &[0.0, 0.5, 0.8]);
    let onset = m.map(|_| (rng.range(0.3, 0.85) * nf) as usize);
    let (to, over, lasts) = (m.map_or(1.0f64, |m| [4.0, 10.0, 40.0][m]), rng.pick(&[1.0, 1.0, 5.0, 20.0]), rng.range(30.0, 400.0));
    let mut benign = vec![Benign { what: "warmup_end", step: warm_end as u64 }];
    if let Some((at, _)) = lr_step {
        benign.push(Benign { what: "lr_step", step: at as u64 });
    }
    let (mut steps, mut logged) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let t = i as f64;
        let mut level = g_inf * (1.0 + early * (-t / tau).exp()) * (1.0 + drift * t / nf);
        if t >= warm_end {
            level *= 1.0 + (warm_jump - 1.0) * (-(t - warm_end) / warm_relax).exp();
        }
        if let Some((at, by)) = lr_step.filter(|(at, _)| t >= *at) {
            level *= 1.0 + (by - 1.0) * smooth(t, at, at + 3.0);
        }
        let mut bump = 1.0;
        if rng.unit() < bump_rate {
            bump = rng.range(3.0, 5.0);
            benign.push(Benign { what: "one_step_bump", step: i as u64 });
        }
        let mut loss = (curve_floor + curve_height * (1.0 + t / (0.01 * nf + 10.0)).powf(-curve_pow)) * loss_noise.next(rng).exp();
        let mut g = level * noise.next(rng).exp() * bump;
        if let Some(o) = onset.filter(|o| i >= *o) {
            let x = (i - o) as f64;
            if x < lasts {
                let grown = to.powf(((x + 1.0) / over).min(1.0));
                g *= grown;
                loss *= 1.0 + 0.05 * grown.ln();
            }
        }
        loss *= 1.0 + 0.1 * (bump - 1.0);
        steps.push(row(&[(catalog::LOSS, loss), (catalog::GRAD_NORM, g)]));
        logged.push((i as u64 * every, (i as u64 * every) as f64));
    }
    let fault = m.zip(onset).map(|(m, o)| Fault { kind: AlertKind::GradExplosion, onset: o as u64, magnitude: m });
    let name = format!("n{n}-phi{}-{}-drift{:.1}{}", noise.phi, noise.df.map_or("normal".into(), |d| format!("t{d}")), drift, if lr_step.is_some() { "-lrstep" } else { "" });
    Indep4Case { case: Case { name, family: Family::Pretrain, fault, benign, steps, partner: None }, logged, mem_total: None }
}

/// A run's GPU memory from a caching allocator, with its loss.
fn memory_run(rng: &mut Xo, m: Option<usize>) -> Indep4Case {
    let n = length(rng, m.is_none()).min(50_000);
    let nf = n as f64;
    let every = rng.pick(&[1u64, 5, 10, 50, 100]);
    let base = rng.range(6.0, 40.0) * GIB;
    let reserved = rng.unit() < 0.5;
    // Activations scale with the batch's sequence length (drawn each step).
    let act = rng.range(0.05, 0.4) * base;
    // Start-up: the allocator's first steps, from a third of the base.
    let startup = rng.range(20.0, 150.0);
    // Fragmentation creep that levels off, over thousands of steps.
    let (creep, creep_tau) = (rng.range(0.0, 0.25) * base, rng.range(1_000.0, 8_000.0) / every as f64);
    // Eval passes every so many points: 1-3 points of extra memory.
    let (eval_every, eval_mem, eval_len) = (rng.pick(&[200usize, 500, 1_000, 2_000]), rng.range(0.05, 0.25) * base, rng.pick(&[1usize, 2, 3]));
    // One rank logs memory: on some runs, only every other logged point has it.
    let sparse = rng.unit() < 0.3;
    let restart = (rng.unit() < 0.3).then(|| (rng.range(0.2, 0.8) * nf) as usize);
    let mem_total = (rng.unit() < 0.5).then_some(INDEP4_MEM_TOTAL);
    let onset = m.map(|_| (rng.range(0.25, 0.7) * nf) as usize);
    let rate = m.map_or(0.0, |m| [0.0006, 0.0012, 0.003][m]) * base;
    let stairs = rng.pick(&[1usize, 1, 20, 50, 100]);
    let mut loss_noise = LogNoise::new(rng, 0.005, 0.02, &[0.0, 0.5]);
    let mut benign = vec![Benign { what: "allocator_warmup", step: 0 }];
    let (mut steps, mut logged) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut longest, mut eval_kept, mut since_start) = (0.0f64, 0.0f64, 0usize);
    for i in 0..n {
        if restart == Some(i) {
            longest = 0.0;
            eval_kept = 0.0;
            since_start = 0;
            benign.push(Benign { what: "restart", step: i as u64 });
        }
        let t = since_start as f64;
        since_start += 1;
        let len = rng.unit().powf(0.5);
        if len > longest && i > 0 && len - longest > 0.01 && reserved {
            benign.push(Benign { what: "longer_batch", step: i as u64 });
        }
        longest = longest.max(len);
        let in_eval = i > 0 && i % eval_every < eval_len;
        if in_eval && i % eval_every == 0 {
            benign.push(Benign { what: "eval", step: i as u64 });
        }
        let warm = 0.35 + 0.65 * (1.0 - (-t / startup).exp());
        let frag = creep * (1.0 - (-(i as f64) / creep_tau).exp());
        let mut bytes = if reserved {
            // Reserved: the cache keeps the largest batch's and the eval's blocks.
            if in_eval {
                eval_kept = eval_mem;
            }
            (base + act * longest + eval_kept) * warm + frag
        } else {
            // Allocated: this step's batch, and the eval's memory while it runs.
            (base + act * len + if in_eval { eval_mem } else { 0.0 }) * warm + frag
        };
        if let Some(o) = onset.filter(|o| i >= *o) {
            let k = (i - o) / stairs * stairs;
            bytes += rate * k as f64;
        }
        let loss = (2.0 + 4.0 * (1.0 + i as f64 / (0.01 * nf + 10.0)).powf(-0.5)) * loss_noise.next(rng).exp();
        let mut values = vec![(catalog::LOSS, loss)];
        if !sparse || i % 2 == 0 {
            values.push((catalog::MEM_GPU_BYTES, bytes.round()));
        }
        steps.push(row(&values));
        logged.push((i as u64 * every, (i as u64 * every) as f64));
    }
    let fault = m.zip(onset).map(|(m, o)| Fault { kind: AlertKind::MemoryLeak, onset: o as u64, magnitude: m });
    let name = format!(
        "n{n}-every{every}-{}-creep{:.0}%{}{}{}",
        if reserved { "reserved" } else { "allocated" },
        100.0 * creep / base,
        if restart.is_some() { "-restart" } else { "" },
        if sparse { "-one-rank" } else { "" },
        if mem_total.is_some() { "-total" } else { "" }
    );
    Indep4Case { case: Case { name, family: Family::Pretrain, fault, benign, steps, partner: None }, logged, mem_total }
}

/// An RL run's KL held near its target by an adaptive coefficient.
fn kl_run(rng: &mut Xo, kind: AlertKind, m: Option<usize>) -> Indep4Case {
    let n = length(rng, m.is_none()).min(50_000);
    let nf = n as f64;
    let every = rng.pick(&[1u64, 4, 10, 25]);
    let target = rng.range(0.01, 0.2);
    let ramp = rng.range(0.005, 0.03) * nf + 20.0;
    // The controller: the KL oscillates around its target, the coefficient lags.
    let (amp, period, phase) = (rng.range(0.1, 0.5), rng.range(80.0, 2_000.0), rng.range(0.0, 6.3));
    let coef0 = rng.range(0.02, 0.3);
    // A healthy slow rise of up to 40% that settles.
    let (rise, rise_from, rise_to) = (rng.range(0.0, 0.4), rng.range(0.1, 0.4) * nf, rng.range(0.5, 0.9) * nf);
    let mut noise = LogNoise::new(rng, 0.05, 0.4, &[0.0, 0.3, 0.6, 0.9]);
    // k1 estimator: additive noise that can take a small KL below zero.
    let k1 = rng.unit() < 0.3;
    let refresh = (rng.unit() < 0.3).then(|| rng.pick(&[1_000usize, 3_000, 8_000]));
    let refresh_ramp = rng.range(20.0, 200.0);
    let bump_rate = rng.range(1.0 / 3_000.0, 1.0 / 500.0);
    let (r_lo, r_hi, r_tau) = (rng.range(-1.0, 0.2), rng.range(0.5, 2.0), rng.range(0.1, 0.4) * nf);
    let signed_loss = rng.unit() < 0.5;
    let onset = m.map(|_| (rng.range(0.3, 0.8) * nf) as usize);
    let spike = (kind == AlertKind::KlSpike).then(|| (m.map_or(1.0, |m| [5.0, 10.0, 30.0][m]), rng.pick(&[3usize, 5, 10, 20])));
    let runaway = (kind == AlertKind::KlRunaway).then(|| (m.map_or(1.0f64, |m| [4.0, 8.0, 20.0][m]), rng.range(100.0, 600.0), rng.unit() < 0.5, rng.unit() < 0.5));
    let mut benign = vec![Benign { what: "kl_ramp", step: 0 }];
    if rise > 0.0 {
        benign.push(Benign { what: "kl_rise", step: rise_from as u64 });
    }
    let (mut steps, mut logged) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut since_refresh, mut bump_left, mut bump_by) = (0usize, 0usize, 1.0);
    for i in 0..n {
        let t = i as f64;
        if let Some(r) = refresh.filter(|r| i > 0 && i % r == 0) {
            since_refresh = 0;
            benign.push(Benign { what: "ref_refresh", step: i as u64 });
            let _ = r;
        }
        let fresh = if refresh.is_some() && i >= refresh.unwrap_or(usize::MAX) { 1.0 - (-(since_refresh as f64) / refresh_ramp).exp() } else { 1.0 };
        since_refresh += 1;
        let start = 1.0 - (-t / ramp).exp();
        let osc = (amp * (std::f64::consts::TAU * t / period + phase).sin()).exp();
        let mut level = target * start * fresh * osc * (1.0 + rise * smooth(t, rise_from, rise_to));
        let mut coef = coef0 * (0.8 * amp * (std::f64::consts::TAU * t / period + phase - 1.2).sin()).exp();
        if bump_left == 0 && rng.unit() < bump_rate {
            bump_left = rng.pick(&[1usize, 1, 2, 3]);
            bump_by = rng.range(1.5, 2.8);
            benign.push(Benign { what: "policy_refresh", step: i as u64 });
        }
        if bump_left > 0 {
            level *= bump_by;
            bump_left -= 1;
        }
        if let Some(o) = onset.filter(|o| i >= *o) {
            let x = (i - o) as f64;
            if let Some((by, len)) = spike {
                if (x as usize) < len {
                    level *= by;
                }
            }
            if let Some((to, span, exponential, stuck)) = runaway {
                let f = (x / span).min(1.5);
                level *= if exponential { to.powf(f) } else { 1.0 + (to - 1.0) * f };
                if stuck {
                    coef = coef0;
                }
            }
        }
        let kl = if k1 { level * (0.5 * noise.next(rng)).exp() + 0.3 * level.max(0.3 * target) * noise.scale * rng.normal() } else { level * noise.next(rng).exp() };
        let reward = r_lo + (r_hi - r_lo) * (t / r_tau).tanh() + 0.1 * rng.normal();
        let loss = if signed_loss { -0.01 + 0.03 * rng.normal() } else { 0.5 * (1.0 + 0.2 * rng.normal()).abs() + 0.05 };
        steps.push(row(&[(catalog::KL, kl), (catalog::KL_COEF, coef), (catalog::REWARD, reward), (catalog::LOSS, loss)]));
        logged.push((i as u64 * every, (i as u64 * every) as f64));
    }
    let fault = m.zip(onset).map(|(m, o)| Fault { kind, onset: o as u64, magnitude: m });
    let name = format!(
        "n{n}-every{every}-target{target:.3}-noise{:.2}-phi{}{}{}{}",
        noise.scale,
        noise.phi,
        if k1 { "-k1" } else { "" },
        refresh.map_or(String::new(), |r| format!("-refresh{r}")),
        runaway.map_or(String::new(), |(_, _, e, s)| format!("-{}{}", if e { "exp" } else { "linear" }, if s { "-stuck" } else { "" }))
    );
    Indep4Case { case: Case { name, family: Family::Rl, fault, benign, steps, partner: None }, logged, mem_total: None }
}
