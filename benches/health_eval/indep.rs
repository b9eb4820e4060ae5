//! A second corpus, parameterised independently of `synth` (and of the detectors'
//! defaults, which were tuned on synth's tune split only): its own random source,
//! its own noise models and its own event shapes. Nothing here was adjusted to
//! what the detectors do; it is only scored.
//!
//! Noise: Student-t innovations (3 to 6 degrees of freedom) through an AR(1)
//! filter with coefficients 0, 0.5, 0.8 or 0.95, and regime changes (stretches
//! of two to four times the noise). Healthy curves: power-law losses, a cosine
//! LR schedule with an optional warm restart, a saturating (tanh) reward, a
//! policy loss that crosses zero. Faults start early (10-20% of the run) or late
//! (75-90%); runs are 150 to 200,000 steps long; memory leaks come as ramps or
//! staircases, with or without a known capacity.
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};

use super::synth::{Benign, Case, Family, Fault};

pub const INDEP_VERSION: u32 = 1;
/// Memory capacity of a run that declares one.
pub const INDEP_MEM_TOTAL: f64 = 48.0 * GIB;
const GIB: f64 = (1u64 << 30) as f64;
const EXPERTS: usize = 8;
const LAYERS: usize = 2;

/// xoshiro256** seeded by SplitMix-style mixing: not the generator synth uses.
#[derive(Debug, Clone)]
pub struct Xo([u64; 4]);

/// A batch of `tokens` routed by the experts' weights `w` (about multinomial): each
/// expert's token count, or its share of the batch when not `counts`.
pub fn routed_loads(rng: &mut Xo, w: &[f64], tokens: f64, counts: bool) -> Vec<f64> {
    let total: f64 = w.iter().sum();
    w.iter()
        .map(|v| {
            let mean = tokens * v / total;
            let c = (mean + mean.sqrt() * rng.normal()).round().max(0.0);
            if counts { c } else { c / tokens }
        })
        .collect()
}

impl Xo {
    pub fn new(seed: u64) -> Self {
        let mut z = seed ^ 0xD1B5_4A32_D192_ED03;
        let mut next = || {
            z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut x = z;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x ^ (x >> 31)
        };
        Xo([next(), next(), next(), next()])
    }

    pub fn u64(&mut self) -> u64 {
        let s = &mut self.0;
        let out = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    pub fn unit(&mut self) -> f64 {
        ((self.u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.u64() % items.len() as u64) as usize]
    }

    /// Standard normal (Marsaglia's polar method).
    pub fn normal(&mut self) -> f64 {
        loop {
            let (a, b) = (2.0 * self.unit() - 1.0, 2.0 * self.unit() - 1.0);
            let s = a * a + b * b;
            if s > 0.0 && s < 1.0 {
                return a * (-2.0 * s.ln() / s).sqrt();
            }
        }
    }

    /// Student-t with `df` degrees of freedom, scaled to unit variance.
    pub fn student_t(&mut self, df: u32) -> f64 {
        let chi2: f64 = (0..df).map(|_| self.normal().powi(2)).sum();
        let t = self.normal() / (chi2 / df as f64).sqrt();
        t * ((df as f64 - 2.0) / df as f64).sqrt()
    }
}

/// Heavy-tailed AR(1) noise with regime changes.
#[derive(Debug, Clone)]
struct Noise {
    df: u32,
    phi: f64,
    scale: f64,
    state: f64,
}

impl Noise {
    /// Noise of a spread drawn from `lo..hi`.
    fn new(rng: &mut Xo, lo: f64, hi: f64) -> Self {
        let scale = rng.range(lo, hi);
        Noise { df: rng.pick(&[3, 4, 6]), phi: rng.pick(&[0.0, 0.5, 0.8, 0.95]), scale, state: 0.0 }
    }

    /// The next value; `regime` multiplies the innovation's spread.
    fn next(&mut self, rng: &mut Xo, regime: f64) -> f64 {
        let innovation = rng.student_t(self.df) * (1.0 - self.phi * self.phi).sqrt();
        self.state = self.phi * self.state + innovation * regime;
        self.scale * self.state
    }
}

/// Lengths a run can have.
const LENGTHS: [usize; 6] = [150, 400, 1_500, 6_000, 30_000, 200_000];

struct Cols {
    n: usize,
    cols: Vec<(&'static str, Vec<f64>)>,
    loads: Vec<Vec<Vec<f64>>>,
}

impl Cols {
    fn get(&mut self, name: &str) -> &mut Vec<f64> {
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

/// Healthy series of `family`, `n` steps, with their benign events.
fn healthy(rng: &mut Xo, family: Family, n: usize, signed_loss: bool, benign: &mut Vec<Benign>) -> Cols {
    let nf = n as f64;
    // Power-law loss: L = a + b (1 + t / t0)^-c.
    let (a, b, c, t0) = (rng.range(1.0, 3.5), rng.range(3.0, 8.0), rng.range(0.4, 1.2), rng.range(5.0, 0.02 * nf + 10.0));
    let mut loss_noise = Noise::new(rng, 0.005, 0.025);
    let mut grad_noise = Noise::new(rng, 0.05, 0.25);
    let mut rate_noise = Noise::new(rng, 0.01, 0.05);
    let mut mem_noise = Noise::new(rng, 30e6, 30e6);
    let peak_lr = rng.range(3e-5, 3e-3);
    let warm = (0.02 * nf).max(5.0);
    let restart = (rng.unit() < 0.3 && n >= 1_500).then(|| (rng.range(0.4, 0.6) * nf) as usize);
    if let Some(r) = restart {
        benign.push(Benign { what: "lr_restart", step: r as u64 });
    }
    // Noise regimes: a stretch of 2-4x the noise, somewhere in the run.
    let regime_at = (rng.range(0.3, 0.7) * nf) as usize;
    let regime_len = (rng.range(0.05, 0.15) * nf) as usize;
    let regime_mult = rng.range(2.0, 4.0);
    benign.push(Benign { what: "regime_change", step: regime_at as u64 });
    let bumps: Vec<usize> = (0..rng.pick(&[1usize, 3, 6])).map(|_| (rng.range(0.1, 0.95) * nf) as usize).collect();
    for b in &bumps {
        benign.push(Benign { what: "one_step_bump", step: *b as u64 });
    }
    let eval_every = rng.pick(&[100usize, 250, 1000]);
    let base_rate = rng.range(2e3, 4e5);
    let mem0 = rng.range(6.0, 30.0) * GIB;
    let mut cols: Vec<(&'static str, Vec<f64>)> = [catalog::LOSS, catalog::GRAD_NORM, catalog::LR, catalog::TOKENS_PER_S, catalog::MEM_GPU_BYTES].iter().map(|m| (*m, vec![0.0; n])).collect();
    let mut rl_cols: Vec<(&'static str, Vec<f64>)> = Vec::new();
    let rl = family == Family::Rl;
    let (kl_level, kl_tau, r_lo, r_hi, r_tau, ent0, len0) =
        (rng.range(0.005, 0.5), rng.range(0.01, 0.1) * nf + 5.0, rng.range(-2.0, 0.5), rng.range(0.3, 3.0), rng.range(0.1, 0.5) * nf, rng.range(0.8, 4.0), rng.range(30.0, 800.0));
    let mut kl_noise = Noise::new(rng, 0.05, 0.2);
    let mut reward_noise = Noise::new(rng, 0.02, 0.15);
    let mut ent_noise = Noise::new(rng, 0.005, 0.03);
    let mut len_noise = Noise::new(rng, 0.01, 0.05);
    let mut coef = rng.range(0.01, 0.3);
    if rl {
        benign.push(Benign { what: "kl_ramp", step: 0 });
        for m in [catalog::KL, catalog::KL_COEF, catalog::REWARD, catalog::REWARD_STD, catalog::ENTROPY, catalog::RESPONSE_LEN] {
            rl_cols.push((m, vec![0.0; n]));
        }
    }
    for t in 0..n {
        let tf = t as f64;
        let regime = if (regime_at..regime_at + regime_len).contains(&t) { regime_mult } else { 1.0 };
        let progress = tf / nf;
        let lr = if tf < warm { peak_lr * (tf + 1.0) / warm } else { peak_lr * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos()) + 0.05 * peak_lr };
        let mut l = a + b * (1.0 + tf / t0).powf(-c);
        if let Some(r) = restart.filter(|r| t >= *r) {
            l *= 1.0 + 0.04 * (-((t - r) as f64) / (0.01 * nf)).exp();
        }
        let bump = bumps.contains(&t);
        let mut loss = l * (loss_noise.next(rng, regime)).exp();
        if bump {
            loss *= rng.range(1.5, 4.0);
        }
        if signed_loss {
            // A PPO policy loss: around zero, crossing it.
            loss = 0.02 * loss_noise.next(rng, regime) / loss_noise.scale.max(1e-9) * 0.5 - 0.003;
        }
        let mut g = (0.3 + 2.0 * (1.0 + tf / t0).powf(-1.0)) * grad_noise.next(rng, regime).exp();
        if bump {
            g *= rng.range(1.5, 5.0);
        }
        let mut rate = base_rate * rate_noise.next(rng, 1.0).exp();
        if t > 0 && t % eval_every == 0 {
            rate /= rng.range(4.0, 30.0);
        }
        // Allocator warm-up: a few steps up in the first 3% of the run.
        let mem = mem0 * (1.0 + 0.15 * (tf / (0.03 * nf + 3.0)).min(1.0)) + mem_noise.next(rng, 1.0);
        for (name, col) in cols.iter_mut() {
            col[t] = match *name {
                catalog::LOSS => loss,
                catalog::GRAD_NORM => g,
                catalog::LR => lr,
                catalog::TOKENS_PER_S => rate,
                _ => mem,
            };
        }
        if rl {
            coef *= (0.02 * rng.normal()).exp();
            let kl = kl_level * (1.0 - (-tf / kl_tau).exp()) * kl_noise.next(rng, regime).exp();
            let reward = r_lo + (r_hi - r_lo) * (tf / r_tau).tanh() + reward_noise.next(rng, regime);
            let rstd = (0.3 + 0.4 * (1.0 - progress)) * (0.1 * rng.normal()).exp();
            let ent = ent0 * (1.0 - 0.25 * progress) * ent_noise.next(rng, regime).exp();
            let len = len0 * (1.0 + 0.2 * (progress * 3.0).sin()) * len_noise.next(rng, 1.0).exp();
            for (name, col) in rl_cols.iter_mut() {
                col[t] = match *name {
                    catalog::KL => kl,
                    catalog::KL_COEF => coef,
                    catalog::REWARD => reward,
                    catalog::REWARD_STD => rstd,
                    catalog::ENTROPY => ent,
                    _ => len,
                };
            }
        }
    }
    if t0 > 0.0 {
        benign.push(Benign { what: "warmup_end", step: warm as u64 });
    }
    cols.extend(rl_cols);
    let loads = if family == Family::Moe {
        benign.push(Benign { what: "router_warmup", step: 0 });
        (0..LAYERS)
            .map(|_| {
                let mut walk = vec![0.0; EXPERTS];
                (0..n)
                    .map(|t| {
                        let early = 1.0 + 3.0 * (-(t as f64) / (0.02 * nf + 10.0)).exp();
                        for w in walk.iter_mut() {
                            *w = 0.9 * *w + 0.1 * rng.normal();
                        }
                        let logits: Vec<f64> = walk.iter().map(|w| 0.6 * early * w + 0.15 * rng.normal()).collect();
                        let m = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        let e: Vec<f64> = logits.iter().map(|l| (l - m).exp()).collect();
                        let s: f64 = e.iter().sum();
                        e.iter().map(|v| v / s).collect()
                    })
                    .collect()
            })
            .collect()
    } else {
        Vec::new()
    };
    Cols { n, cols, loads }
}

/// A case of the independent corpus, with the memory capacity its run declares.
pub struct IndepCase {
    pub case: Case,
    pub mem_total: Option<f64>,
}

fn family_for(kind: AlertKind) -> Family {
    use AlertKind::*;
    match kind {
        KlSpike | KlRunaway | RewardHacking | RewardSaturation | EntropyCollapse => Family::Rl,
        ExpertCollapse => Family::Moe,
        _ => Family::Pretrain,
    }
}

/// One case: a fault of `kind` at magnitude `m` (0-2), or a clean run of `family`.
pub fn generate(kind: Option<AlertKind>, family: Family, m: usize, seed: u64) -> IndepCase {
    let mut rng = Xo::new(seed.wrapping_mul(0x9E37_79B9) ^ (kind.map_or(77, |k| k as u64) << 40) ^ ((m as u64) << 52) ^ ((family as u64) << 58));
    let family = match kind {
        // Half the slow drifts are a reward sliding on an RL run.
        Some(AlertKind::SlowDrift) if seed % 2 == 1 => Family::Rl,
        _ => kind.map_or(family, family_for),
    };
    // Slow faults need room; spikes and NaN can be anywhere.
    let lengths: &[usize] = match kind {
        Some(AlertKind::SlowDrift | AlertKind::MemoryLeak) => &LENGTHS[2..],
        Some(AlertKind::LossDivergence | AlertKind::KlRunaway | AlertKind::RewardHacking | AlertKind::EntropyCollapse | AlertKind::ExpertCollapse | AlertKind::RewardSaturation) => &LENGTHS[1..5],
        Some(_) => &LENGTHS[..5],
        None => &LENGTHS,
    };
    let n = rng.pick(lengths);
    let signed_loss = kind.is_none() && family == Family::Rl && rng.unit() < 0.5;
    let mut benign = Vec::new();
    let mut c = healthy(&mut rng, family, n, signed_loss, &mut benign);
    let early = rng.unit() < 0.5;
    let onset = ((if early { rng.range(0.1, 0.2) } else { rng.range(0.75, 0.9) }) * n as f64) as usize;
    let onset = onset.max(60).min(n - 20);
    let mut mem_total = (rng.unit() < 0.5).then_some(INDEP_MEM_TOTAL);
    let mut partner = None;
    let m = m.min(2);
    if let Some(kind) = kind {
        use AlertKind::*;
        let o = onset;
        match kind {
            LossSpike => {
                let (factor, len) = ([1.8, 3.0, 8.0][m], rng.pick(&[3usize, 8, 30]));
                for (t, v) in c.get(catalog::LOSS).iter_mut().enumerate().skip(o) {
                    let since = t - o;
                    *v *= if since < len { factor } else { 1.0 + (factor - 1.0) * (-((since - len) as f64) / 25.0).exp() };
                }
            }
            LossDivergence => {
                // Polynomial climb: 3x after `reach` steps, and on.
                let reach = [400.0, 150.0, 50.0][m];
                for (t, v) in c.get(catalog::LOSS).iter_mut().enumerate().skip(o) {
                    *v *= 1.0 + 2.0 * ((t - o) as f64 / reach).powi(2);
                }
            }
            // A single run cannot show a straggler: the independent corpus has none.
            RankStraggler | UserAlert | Stalled => {}
            SlowDrift => {
                // The loss levels off and climbs back 12-50% by the end, as a ramp or
                // in stairs; on an RL run (half the cases) the reward slides instead.
                let rise = [0.12, 0.25, 0.5][m];
                let stairs = rng.unit() < 0.5;
                let span = (n - o) as f64;
                let shape = |t: usize| {
                    let x = (t - o) as f64 / span;
                    if stairs { (x * 5.0).floor() / 5.0 } else { x }
                };
                if family == Family::Rl {
                    // The reward gives back 25-90% of what it had gained by the onset.
                    let r = c.get(catalog::REWARD);
                    let first = r[..20].iter().sum::<f64>() / 20.0;
                    let gained = (r[o - 50..o].iter().sum::<f64>() / 50.0 - first).max(0.05);
                    let slide = [0.25, 0.5, 0.9][m];
                    for (t, v) in r.iter_mut().enumerate().skip(o) {
                        *v -= slide * gained * shape(t);
                    }
                } else {
                    for (t, v) in c.get(catalog::LOSS).iter_mut().enumerate().skip(o) {
                        *v *= 1.0 + rise * shape(t);
                    }
                }
            }
            Nonfinite => {
                let (metric, value) = rng.pick(&[(catalog::LOSS, f64::NAN), (catalog::GRAD_NORM, f64::INFINITY), (catalog::LOSS, f64::NEG_INFINITY)]);
                let lasting = m == 2;
                let col = c.get(metric);
                let end = if lasting { n } else { o + 1 };
                for v in &mut col[o..end] {
                    *v = value;
                }
            }
            GradExplosion => {
                let factor: f64 = [3.5, 12.0, 60.0][m];
                let len = rng.pick(&[5usize, 20, 80]);
                for (i, v) in c.get(catalog::GRAD_NORM).iter_mut().skip(o).take(len).enumerate() {
                    // Geometric growth to the factor within three steps.
                    *v *= factor.powf(((i + 1) as f64 / 3.0).min(1.0));
                }
            }
            GradVanishing => {
                let floor: f64 = [3e-3, 1e-4, 1e-7][m];
                for (t, v) in c.get(catalog::GRAD_NORM).iter_mut().enumerate().skip(o) {
                    *v *= floor.powf(((t - o) as f64 / 20.0).min(1.0));
                }
            }
            KlSpike => {
                let factor = [5.0, 12.0, 30.0][m];
                let len = rng.pick(&[2usize, 5, 10]);
                for v in c.get(catalog::KL).iter_mut().skip(o).take(len) {
                    *v = (*v).max(0.03) * factor;
                }
            }
            KlRunaway => {
                let to = [3.0, 6.0, 15.0][m];
                let over = rng.pick(&[60.0, 150.0]);
                for (t, v) in c.get(catalog::KL).iter_mut().enumerate().skip(o) {
                    *v *= 1.0 + (to - 1.0) * ((t - o) as f64 / over).min(2.0);
                }
                if rng.unit() < 0.5 {
                    let frozen = c.get(catalog::KL_COEF)[o];
                    c.get(catalog::KL_COEF)[o..].iter_mut().for_each(|v| *v = frozen);
                }
            }
            RewardHacking => {
                let over = [200.0, 120.0, 60.0][m];
                let up = |t: usize| ((t - o) as f64 / over).min(3.0);
                for (t, v) in c.get(catalog::RESPONSE_LEN).iter_mut().enumerate().skip(o) {
                    *v *= 1.0 + up(t);
                }
                for (t, v) in c.get(catalog::REWARD).iter_mut().enumerate().skip(o) {
                    *v += 0.4 * up(t);
                }
                for (t, v) in c.get(catalog::ENTROPY).iter_mut().enumerate().skip(o) {
                    *v *= 1.0 / (1.0 + 0.5 * up(t));
                }
            }
            RewardSaturation => {
                let left = [0.1, 0.03, 0.005][m];
                let ceiling = c.get(catalog::REWARD)[o..o + 10].iter().copied().fold(f64::NEG_INFINITY, f64::max) + 0.2;
                for v in c.get(catalog::REWARD).iter_mut().skip(o) {
                    *v = ceiling - 0.001 * (ceiling - *v).abs();
                }
                for (t, v) in c.get(catalog::REWARD_STD).iter_mut().enumerate().skip(o) {
                    *v *= left + (1.0 - left) * (-((t - o) as f64) / 15.0).exp();
                }
            }
            EntropyCollapse => {
                let to = [0.2, 0.08, 0.02][m];
                let over = rng.pick(&[30.0, 100.0]);
                for (t, v) in c.get(catalog::ENTROPY).iter_mut().enumerate().skip(o) {
                    *v *= 1.0 - (1.0 - to) * ((t - o) as f64 / over).min(1.0);
                }
            }
            MemoryLeak => {
                // 0.03% to 0.3% of the start per step, as a ramp or stairs.
                let per_step = [3e-4, 1e-3, 3e-3][m];
                let every = rng.pick(&[1usize, 25, 100]);
                let start = c.get(catalog::MEM_GPU_BYTES)[o];
                let cap = INDEP_MEM_TOTAL;
                for (t, v) in c.get(catalog::MEM_GPU_BYTES).iter_mut().enumerate().skip(o) {
                    let k = ((t - o) / every * every) as f64;
                    *v = (*v + start * per_step * k).min(cap);
                }
                if rng.unit() < 0.5 {
                    mem_total = None;
                }
            }
            ExpertCollapse => {
                let hot = [0.5, 0.7, 0.9][m];
                let layer = rng.pick(&[0usize, 1]);
                let over = rng.pick(&[10.0, 50.0]);
                for (t, loads) in c.loads[layer].iter_mut().enumerate().skip(o) {
                    let a = ((t - o) as f64 / over).min(1.0);
                    for (e, v) in loads.iter_mut().enumerate() {
                        let target = if e == 3 { hot } else { (1.0 - hot) / (EXPERTS - 1) as f64 };
                        *v = (1.0 - a) * *v + a * target;
                    }
                }
            }
            ThroughputRegression => {
                let to = [0.55, 0.35, 0.15][m];
                let ramp = rng.pick(&[1.0, 30.0]);
                for (t, v) in c.get(catalog::TOKENS_PER_S).iter_mut().enumerate().skip(o) {
                    *v *= 1.0 - (1.0 - to) * (((t - o) as f64 + 1.0) / ramp).min(1.0);
                }
            }
            Nondeterminism | RunDivergence => {
                let (noise, drift) = if kind == Nondeterminism { (0.0, [2e-3, 2e-2, 2e-1][m]) } else { (0.02, [0.15, 0.4, 1.5][m]) };
                let mut p = Cols { n, cols: Vec::new(), loads: Vec::new() };
                for name in [catalog::LOSS, catalog::GRAD_NORM] {
                    let col: Vec<f64> = c.get(name).iter().enumerate().map(|(t, v)| {
                        let d = if t >= o { drift * ((t - o) as f64 / 20.0).min(1.0) + drift * 0.25 } else { 0.0 };
                        v * (1.0 + noise * rng.normal() + d)
                    }).collect();
                    p.cols.push((name, col));
                }
                partner = Some(p.rows());
            }
        }
    } else if family == Family::Pretrain && seed % 3 == 0 {
        // Replicas that agree bit for bit.
        let mut p = Cols { n, cols: Vec::new(), loads: Vec::new() };
        for name in [catalog::LOSS, catalog::GRAD_NORM] {
            p.cols.push((name, c.get(name).clone()));
        }
        partner = Some(p.rows());
    }
    let name = match kind {
        Some(k) => format!("indep-{k}-m{m}-n{n}-{}-s{seed}", if early { "early" } else { "late" }),
        None => format!("indep-clean-{family:?}{}-n{n}-s{seed}", if signed_loss { "-signed" } else { "" }).to_lowercase(),
    };
    let fault = kind.map(|kind| Fault { kind, onset: onset as u64, magnitude: m });
    IndepCase { case: Case { name, family, fault, benign, steps: c.rows(), partner }, mem_total }
}

/// The corpus: every kind at three magnitudes for each seed, and clean runs of
/// every family (two signed-loss RL runs among them, on average) for each seed.
/// Cases are made one at a time: a 200,000-step run is large.
pub fn corpus(seeds: std::ops::Range<u64>) -> impl Iterator<Item = (Option<AlertKind>, Family, usize, u64)> {
    seeds.flat_map(|seed| {
        let faults = AlertKind::ALL.into_iter().filter(|k| !matches!(k, AlertKind::RankStraggler | AlertKind::UserAlert | AlertKind::Stalled)).flat_map(move |k| (0..3).map(move |m| (Some(k), family_for(k), m, seed)));
        let clean = [Family::Pretrain, Family::Rl, Family::Moe, Family::Pretrain, Family::Rl].into_iter().enumerate().map(move |(i, f)| (None, f, i, seed));
        faults.chain(clean)
    })
}
