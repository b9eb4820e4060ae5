//! A seeded, versioned generator of metric series for measuring the detectors:
//! every fault kind at several magnitudes, and clean series carrying labelled benign
//! events (one-step bumps, the end of LR warm-up, LR decay steps, periodic slow
//! checkpoint steps, the early KL ramp of RL, MoE router warm-up, allocator
//! warm-up). Same version and seed, same series: change `GENERATOR_VERSION` with
//! any change to what is generated.
use rlmon::health::detect::moe::balance;
use rlmon::health::AlertKind;
use rlmon::metrics::{catalog, MetricName};
use rlmon::workload::rng::SplitMix64;

/// v3: slow_drift faults (a loss climbing back slowly after the onset); the
/// series of the other kinds and the clean ones are those of v2.
/// v2: one-step bumps are at least 3 steps apart (v1 could draw two adjacent
/// ones, a two-step event labelled as one-step); clean series of each family get
/// their own draws (v1 shared them across families for a seed).
pub const GENERATOR_VERSION: u32 = 3;
/// Steps of every generated series.
pub const STEPS: u64 = 600;
/// Memory available to a generated run.
pub const MEM_TOTAL: f64 = 80.0 * GIB;
const GIB: f64 = (1u64 << 30) as f64;
/// Magnitudes generated per fault kind (0 = mild, 2 = severe).
pub const MAGNITUDES: usize = 3;

/// The corpus's generator: the project's SplitMix64 with a fixed seed offset (the
/// algorithm is frozen there, so corpus v2 stays the same series).
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(SplitMix64::new(seed ^ 0x5EED_0FC0_FFEE))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    pub fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// Standard normal (Box-Muller), with heavier tails now and then (5% of
    /// draws have three times the spread), as real training noise has.
    pub fn noise(&mut self) -> f64 {
        let (u1, u2) = (self.uniform().max(1e-300), self.uniform());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        if self.uniform() < 0.05 {
            3.0 * z
        } else {
            z
        }
    }
}

/// What a series looks like when healthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Pretrain,
    Rl,
    Moe,
}

/// A labelled benign event: it must not raise a warn or critical alert.
#[derive(Debug, Clone, PartialEq)]
pub struct Benign {
    pub what: &'static str,
    pub step: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub kind: AlertKind,
    pub onset: u64,
    pub magnitude: usize,
}

/// One generated case: a run (and, for nondeterminism and run_divergence, a second
/// run that should agree with it).
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub family: Family,
    pub fault: Option<Fault>,
    pub benign: Vec<Benign>,
    pub steps: Vec<Vec<(MetricName, f64)>>,
    /// The second run of a pair, step-aligned with `steps`.
    pub partner: Option<Vec<Vec<(MetricName, f64)>>>,
}

/// The family a fault kind's series come from.
pub fn family_of(kind: AlertKind) -> Family {
    use AlertKind::*;
    match kind {
        KlSpike | KlRunaway | RewardHacking | RewardSaturation | EntropyCollapse => Family::Rl,
        ExpertCollapse => Family::Moe,
        _ => Family::Pretrain,
    }
}

/// Columns of a series being built: one Vec per metric, step-indexed.
struct Columns {
    names: Vec<&'static str>,
    data: Vec<Vec<f64>>,
}

impl Columns {
    fn new() -> Self {
        Columns { names: Vec::new(), data: Vec::new() }
    }

    fn add(&mut self, name: &'static str, values: Vec<f64>) {
        self.names.push(name);
        self.data.push(values);
    }

    fn get_mut(&mut self, name: &str) -> &mut Vec<f64> {
        let i = self.names.iter().position(|n| *n == name).expect("generated metric");
        &mut self.data[i]
    }

    fn rows(&self, extra: &[(String, Vec<f64>)]) -> Vec<Vec<(MetricName, f64)>> {
        (0..STEPS as usize)
            .map(|t| {
                let mut row: Vec<(MetricName, f64)> = self.names.iter().zip(&self.data).map(|(n, d)| (MetricName::Borrowed(n), d[t])).collect();
                row.extend(extra.iter().map(|(n, d)| (MetricName::Owned(n.clone()), d[t])));
                row
            })
            .collect()
    }
}

const WARMUP_STEPS: u64 = 50;
const MOE_LAYERS: usize = 3;
const MOE_EXPERTS: usize = 8;

/// Healthy pretraining-like columns with their benign events.
fn pretrain(rng: &mut Rng, benign: &mut Vec<Benign>) -> Columns {
    let n = STEPS as usize;
    let (l_inf, l_amp, l_tau) = (rng.range(1.5, 2.5), rng.range(2.0, 4.0), rng.range(80.0, 200.0));
    let loss_noise = rng.range(0.01, 0.03);
    let grad_noise = rng.range(0.08, 0.2);
    let peak_lr = rng.range(1e-4, 1e-3);
    let decay_at = rng.int(300, 550);
    let ckpt_every = [50, 100][rng.int(0, 1) as usize];
    let base_step_s = rng.range(0.05, 0.5);
    let mem0 = rng.range(10.0, 40.0) * GIB;
    benign.push(Benign { what: "warmup_end", step: WARMUP_STEPS });
    benign.push(Benign { what: "lr_decay", step: decay_at });
    let mut bumps: Vec<u64> = Vec::new();
    for _ in 0..rng.int(2, 4) {
        let b = rng.int(60, STEPS - 5);
        if bumps.iter().all(|x| x.abs_diff(b) >= 3) {
            bumps.push(b);
        }
    }
    for b in &bumps {
        benign.push(Benign { what: "one_step_bump", step: *b });
    }
    let (mut loss, mut grad, mut lr, mut st, mut mem) = (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    for t in 0..n {
        let s = t as u64;
        let tf = t as f64;
        let mut l = l_inf + l_amp * (-tf / l_tau).exp();
        let mut g = 0.5 + 1.5 * (-tf / 40.0).exp();
        // End of warm-up: the peak LR shakes the loss a little.
        if s >= WARMUP_STEPS {
            let since = (s - WARMUP_STEPS) as f64;
            l *= 1.0 + 0.08 * (-since / 20.0).exp();
            g *= 1.0 + 0.5 * (-since / 15.0).exp();
        }
        lr[t] = if s < WARMUP_STEPS { peak_lr * (tf + 1.0) / WARMUP_STEPS as f64 } else { peak_lr };
        if s >= decay_at {
            lr[t] *= 0.1;
            l *= 0.95;
            g *= 0.7;
        }
        if bumps.contains(&s) {
            l *= rng.range(1.5, 4.0);
            g *= rng.range(2.0, 8.0);
        }
        loss[t] = l * (1.0 + loss_noise * rng.noise());
        grad[t] = g * (grad_noise * rng.noise()).exp();
        st[t] = base_step_s * (1.0 + 0.03 * rng.noise()).max(0.5);
        if s > 0 && s.is_multiple_of(ckpt_every) {
            st[t] *= rng.range(5.0, 20.0);
        }
        // Allocator warm-up: the caching allocator grows over the first steps.
        mem[t] = mem0 + 2.0 * GIB * (1.0 - (-tf / 10.0).exp()) + 20e6 * rng.noise();
    }
    for s in (ckpt_every..STEPS).step_by(ckpt_every as usize) {
        benign.push(Benign { what: "checkpoint", step: s });
    }
    let tokens = 4096.0;
    let mut c = Columns::new();
    c.add(catalog::LOSS, loss);
    c.add(catalog::GRAD_NORM, grad);
    c.add(catalog::LR, lr);
    c.add(catalog::TOKENS, vec![tokens; n]);
    c.add(catalog::SAMPLES, vec![16.0; n]);
    c.add(catalog::TOKENS_PER_S, st.iter().map(|s| tokens / s).collect());
    c.add(catalog::STEP_TIME_S, st);
    c.add(catalog::MEM_GPU_BYTES, mem);
    c
}

/// Healthy RL fine-tuning columns (PPO-like) on top of pretraining ones.
fn rl(rng: &mut Rng, benign: &mut Vec<Benign>) -> Columns {
    let mut c = pretrain(rng, benign);
    let n = STEPS as usize;
    let kl_plateau = rng.range(0.02, 0.3);
    let kl_tau = rng.range(15.0, 60.0);
    benign.push(Benign { what: "kl_ramp", step: 0 });
    let (r0, r_gain, r_tau) = (rng.range(-0.5, 0.5), rng.range(0.3, 1.5), rng.range(150.0, 400.0));
    let e0 = rng.range(1.5, 3.0);
    let len0 = rng.range(50.0, 300.0);
    let (mut kl, mut coef, mut reward, mut rstd, mut ent, mut len) = (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let mut beta = rng.range(0.02, 0.2);
    let mut len_walk = 0.0;
    for t in 0..n {
        let tf = t as f64;
        kl[t] = (kl_plateau * (1.0 - (-tf / kl_tau).exp()) * (0.1 * rng.noise()).exp()).max(0.0);
        // An adaptive controller nudges beta toward its target every step.
        beta *= 1.0 + 0.01 * rng.noise();
        coef[t] = beta;
        reward[t] = r0 + r_gain * (1.0 - (-tf / r_tau).exp()) + 0.05 * rng.noise();
        rstd[t] = 0.5 * (1.0 - 0.3 * tf / STEPS as f64) * (1.0 + 0.05 * rng.noise());
        ent[t] = e0 * (1.0 - 0.2 * tf / STEPS as f64) * (1.0 + 0.02 * rng.noise());
        len_walk += 0.002 * rng.noise();
        len[t] = len0 * len_walk.exp() * (1.0 + 0.03 * rng.noise());
    }
    c.add(catalog::KL, kl);
    c.add(catalog::KL_COEF, coef);
    c.add(catalog::REWARD, reward);
    c.add(catalog::REWARD_STD, rstd);
    c.add(catalog::ENTROPY, ent);
    c.add(catalog::RESPONSE_LEN, len);
    c
}

/// Per-expert loads of every MoE layer: near-uniform after a router warm-up.
fn moe_loads(rng: &mut Rng, benign: &mut Vec<Benign>) -> Vec<Vec<Vec<f64>>> {
    benign.push(Benign { what: "router_warmup", step: 0 });
    (0..MOE_LAYERS)
        .map(|_| {
            (0..STEPS as usize)
                .map(|t| {
                    let spread = 0.2 + 1.2 * (-(t as f64) / 10.0).exp();
                    let logits: Vec<f64> = (0..MOE_EXPERTS).map(|_| spread * rng.noise()).collect();
                    softmax(&logits)
                })
                .collect()
        })
        .collect()
}

fn softmax(logits: &[f64]) -> Vec<f64> {
    let m = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = logits.iter().map(|l| (l - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// Effective-experts target of each expert_collapse magnitude.
pub const COLLAPSE_BALANCE: [f64; MAGNITUDES] = [0.4, 0.25, 0.13];

/// Loads whose balance exp(H)/N is about `target`: one expert takes share `p`.
pub fn collapsed_loads(target: f64) -> Vec<f64> {
    // Bisection on the hot expert's share.
    let (mut lo, mut hi) = (1.0 / MOE_EXPERTS as f64, 1.0);
    let loads = |p: f64| {
        let rest = (1.0 - p) / (MOE_EXPERTS - 1) as f64;
        (0..MOE_EXPERTS).map(|e| if e == 0 { p } else { rest }).collect::<Vec<f64>>()
    };
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        let b = balance(&loads(mid)).map_or(0.0, |b| b.balance);
        if b > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    loads(0.5 * (lo + hi))
}

/// Generates one case. `kind: None` is a clean series of `family`.
pub fn generate(kind: Option<AlertKind>, family: Family, magnitude: usize, seed: u64) -> Case {
    let family = kind.map_or(family, family_of);
    let what = kind.map_or(99 + family as u64, |k| k as u64);
    let mut rng = Rng::new(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ (magnitude as u64) << 56 ^ what << 48);
    let mut benign = Vec::new();
    let mut c = match family {
        Family::Pretrain => pretrain(&mut rng, &mut benign),
        Family::Rl => rl(&mut rng, &mut benign),
        Family::Moe => pretrain(&mut rng, &mut benign),
    };
    let mut loads = (family == Family::Moe).then(|| moe_loads(&mut rng, &mut benign));
    let onset = rng.int(250, 400);
    let m = magnitude.min(MAGNITUDES - 1);
    let n = STEPS as usize;
    let o = onset as usize;
    let mut partner = None;
    if let Some(kind) = kind {
        use AlertKind::*;
        match kind {
            LossSpike => {
                let factor = [1.6, 2.5, 5.0][m];
                let len = rng.int(5, 40) as usize;
                let recovers = rng.uniform() < 0.7;
                let loss = c.get_mut(catalog::LOSS);
                for (t, v) in loss.iter_mut().enumerate().skip(o) {
                    let since = (t - o) as f64;
                    let f = if since < len as f64 || !recovers { factor } else { 1.0 + (factor - 1.0) * (-(since - len as f64) / 10.0).exp() };
                    *v *= f;
                }
            }
            SlowDrift => {
                // The loss stops improving and climbs linearly to the end of the run.
                let rise = [0.15, 0.3, 0.6][m];
                for (t, v) in c.get_mut(catalog::LOSS).iter_mut().enumerate().skip(o) {
                    *v *= 1.0 + rise * (t - o) as f64 / (n - o) as f64;
                }
            }
            LossDivergence => {
                let r = [0.005, 0.01, 0.03][m];
                for (t, v) in c.get_mut(catalog::LOSS).iter_mut().enumerate().skip(o) {
                    *v *= (r * (t - o) as f64).exp();
                }
            }
            Nonfinite => {
                let (metric, value, lasting) = [(catalog::GRAD_NORM, f64::INFINITY, false), (catalog::LOSS, f64::NAN, false), (catalog::LOSS, f64::NAN, true)][m];
                let col = c.get_mut(metric);
                let end = if lasting { n } else { o + 1 };
                for v in &mut col[o..end] {
                    *v = value;
                }
            }
            GradExplosion => {
                let factor = [4.0, 10.0, 100.0][m];
                let len = rng.int(10, 60) as usize;
                for v in c.get_mut(catalog::GRAD_NORM).iter_mut().skip(o).take(len) {
                    *v *= factor;
                }
            }
            GradVanishing => {
                let factor = [10f64.powf(-2.5), 1e-4, 1e-6][m];
                for v in c.get_mut(catalog::GRAD_NORM).iter_mut().skip(o) {
                    *v *= factor;
                }
            }
            KlSpike => {
                let factor = [4.0, 8.0, 20.0][m];
                let len = rng.int(3, 20) as usize;
                for v in c.get_mut(catalog::KL).iter_mut().skip(o).take(len) {
                    *v = (*v).max(0.02) * factor;
                }
            }
            KlRunaway => {
                let r = [0.01, 0.02, 0.05][m];
                for (t, v) in c.get_mut(catalog::KL).iter_mut().enumerate().skip(o) {
                    *v *= (r * (t - o) as f64).exp();
                }
                if rng.uniform() < 0.5 {
                    let frozen = c.get_mut(catalog::KL_COEF)[o];
                    for v in c.get_mut(catalog::KL_COEF).iter_mut().skip(o) {
                        *v = frozen;
                    }
                }
            }
            RewardHacking => {
                let r = [0.008, 0.015, 0.03][m];
                for (t, v) in c.get_mut(catalog::RESPONSE_LEN).iter_mut().enumerate().skip(o) {
                    *v *= (r * (t - o) as f64).exp();
                }
                for (t, v) in c.get_mut(catalog::REWARD).iter_mut().enumerate().skip(o) {
                    *v += 0.5 * r * (t - o) as f64;
                }
                for (t, v) in c.get_mut(catalog::ENTROPY).iter_mut().enumerate().skip(o) {
                    *v *= (-0.5 * r * (t - o) as f64).exp();
                }
                for (t, v) in c.get_mut(catalog::KL).iter_mut().enumerate().skip(o) {
                    *v *= (2.0 * r * (t - o) as f64).exp();
                }
            }
            RewardSaturation => {
                let factor = [0.1, 0.05, 0.01][m];
                let ceiling = c.get_mut(catalog::REWARD)[o] + 0.3;
                for (t, v) in c.get_mut(catalog::REWARD).iter_mut().enumerate().skip(o) {
                    let a = (-((t - o) as f64) / 5.0).exp();
                    *v = ceiling + (*v - ceiling) * a * 0.2;
                }
                for (t, v) in c.get_mut(catalog::REWARD_STD).iter_mut().enumerate().skip(o) {
                    let a = (-((t - o) as f64) / 5.0).exp();
                    *v *= factor + (1.0 - factor) * a;
                }
            }
            EntropyCollapse => {
                let r = [0.03, 0.06, 0.15][m];
                for (t, v) in c.get_mut(catalog::ENTROPY).iter_mut().enumerate().skip(o) {
                    *v = (*v * (-r * (t - o) as f64).exp()).max(0.01);
                }
            }
            MemoryLeak => {
                let full_in = [3000.0, 1500.0, 500.0][m];
                let mem = c.get_mut(catalog::MEM_GPU_BYTES);
                let slope = (MEM_TOTAL - mem[o]) / full_in;
                for (t, v) in mem.iter_mut().enumerate().skip(o) {
                    *v = (*v + slope * (t - o) as f64).min(MEM_TOTAL);
                }
            }
            ExpertCollapse => {
                let target = collapsed_loads(COLLAPSE_BALANCE[m]);
                let layer = rng.int(0, MOE_LAYERS as u64 - 1) as usize;
                let ramp = rng.range(5.0, 30.0);
                if let Some(l) = loads.as_mut() {
                    for (t, step) in l[layer].iter_mut().enumerate().skip(o) {
                        let a = (((t - o) as f64) / ramp).min(1.0);
                        let mixed: Vec<f64> = step.iter().zip(&target).map(|(u, c)| (1.0 - a) * u + a * c).collect();
                        *step = mixed;
                    }
                }
            }
            ThroughputRegression => {
                let factor = [0.6, 0.45, 0.25][m];
                let tokens = c.get_mut(catalog::TOKENS)[0];
                for v in c.get_mut(catalog::STEP_TIME_S).iter_mut().skip(o) {
                    *v /= factor;
                }
                let st = c.get_mut(catalog::STEP_TIME_S).clone();
                for (t, v) in c.get_mut(catalog::TOKENS_PER_S).iter_mut().enumerate() {
                    *v = tokens / st[t];
                }
            }
            RankStraggler | UserAlert | Stalled => {}
            Nondeterminism | RunDivergence => {
                // The partner agrees up to float noise (replicas) or run-to-run
                // noise (a new run against its baseline), then drifts from the onset.
                let (noise, drift) = if kind == Nondeterminism { (1e-9, [1e-3, 1e-2, 1e-1][m]) } else { (0.01, [0.1, 0.3, 1.0][m]) };
                partner = Some(pair(&c, &mut rng, noise, Some((o, drift))));
            }
        }
    } else if matches!(family, Family::Pretrain) && seed % 2 == 1 {
        // Clean pairs: replicas that agree (odd seeds) exercise the pair detectors.
        partner = Some(pair(&c, &mut rng, 1e-9, None));
    }
    let extra: Vec<(String, Vec<f64>)> = loads
        .map(|layers| {
            let mut cols = Vec::new();
            for (l, steps) in layers.iter().enumerate() {
                for e in 0..MOE_EXPERTS {
                    cols.push((catalog::moe(l).load(e), steps.iter().map(|s| s[e]).collect()));
                }
            }
            cols
        })
        .unwrap_or_default();
    let name = match kind {
        Some(k) => format!("{k}-m{m}-s{seed}"),
        None => format!("clean-{family:?}-s{seed}").to_lowercase(),
    };
    let fault = kind.map(|kind| Fault { kind, onset, magnitude: m });
    Case { name, family, fault, benign, steps: c.rows(&extra), partner: partner.map(|p| p.rows(&[])) }
}

/// A second run following `c`'s loss and grad norm with relative `noise`, and
/// drifting away from `onset` by `drift` relative per 10 steps.
fn pair(c: &Columns, rng: &mut Rng, noise: f64, drift: Option<(usize, f64)>) -> Columns {
    let mut p = Columns::new();
    for name in [catalog::LOSS, catalog::GRAD_NORM, catalog::LR] {
        let i = c.names.iter().position(|n| *n == name).expect("pretrain column");
        let values = c.data[i]
            .iter()
            .enumerate()
            .map(|(t, v)| {
                let d = drift.filter(|(o, _)| t >= *o).map_or(0.0, |(o, d)| d * (1.0 + (t - o) as f64 / 10.0));
                let n = if name == catalog::LR { 0.0 } else { noise * rng.noise() };
                v * (1.0 + n + d)
            })
            .collect();
        p.add(name, values);
    }
    p
}

/// The corpus of one split: every kind at every magnitude for `seeds`, and clean
/// series of every family for the same seeds.
pub fn corpus(seeds: std::ops::Range<u64>) -> Vec<Case> {
    let mut cases = Vec::new();
    for seed in seeds {
        // rank_straggler compares the ranks of a job: no one run's series shows it.
        for kind in AlertKind::ALL.into_iter().filter(|k| !matches!(k, AlertKind::RankStraggler | AlertKind::UserAlert | AlertKind::Stalled)) {
            for m in 0..MAGNITUDES {
                cases.push(generate(Some(kind), family_of(kind), m, seed));
            }
        }
        for family in [Family::Pretrain, Family::Rl, Family::Moe] {
            cases.push(generate(None, family, 0, seed));
        }
    }
    cases
}
