//! The metric catalog: every metric rlmon produces, derives or reads, in one place.
//!
//! Each family has one entry: its name (or name pattern, `gpu{i}/util_pct`), unit
//! and display label, which direction is better, whether same-seed replicas must
//! agree on it, what kind of series it is (per step, cumulative on input, derived,
//! telemetry), whether it can be negative, which pane shows it, and the aliases it is
//! accepted under on input. Producers, panes, detectors, comparisons and the ingest
//! path all name metrics through this module; no metric name is spelled anywhere else.
//!
//! Names with dimensions (GPU index, MoE layer and expert, dimensionality layer) are
//! built by [`gpu`], [`moe`] and [`ndt`], and read back by their `parse` functions,
//! so the string form lives only here.

// ---------------------------------------------------------------- per-step names
pub const LOSS: &str = "loss";
/// A language model's negative log-likelihood: fairseq logs it beside its
/// label-smoothed `loss`, fairseq2 (`NLL Loss`) instead of one. The loss
/// detectors judge it where a run logs no `loss` ([`stand_ins`]).
pub const NLL_LOSS: &str = "nll_loss";
/// The exponent of a language model's loss (Sockeye and MXNet's examples log it
/// alone). Its logarithm is the loss, up to the log's base: the loss detectors
/// judge that where a run logs no loss ([`stand_ins`], [`as_judged`]).
pub const PERPLEXITY: &str = "perplexity";
pub const LR: &str = "lr";
pub const GRAD_NORM: &str = "grad_norm";
/// fp16 training's dynamic loss scale: the factor the loss is multiplied by before
/// the backward pass, halved by the scaler at every step whose gradients overflow
/// (a skipped step) and grown back after a stretch without. bf16 runs print a
/// constant 1. A scale that keeps falling says the gradients overflow at every
/// scale tried ([`loss_scale`]).
pub const LOSS_SCALE: &str = "loss_scale";
/// The loss scale's base-2 logarithm (OpenAI's guided-diffusion logger).
const LG_LOSS_SCALE: &str = "lg_loss_scale";
pub const TOKENS: &str = "tokens";
pub const SAMPLES: &str = "samples";
pub const STEP_TIME_S: &str = "step_time_s";
pub const TOKENS_PER_S: &str = "tokens_per_s";
pub const SAMPLES_PER_S: &str = "samples_per_s";
pub const MOE_AUX_LOSS: &str = "moe/aux_loss";
/// The share of the tokens the whole model's MoE layers dropped (a log that
/// gives no layer's own).
pub const MOE_DROPPED_ALL: &str = "moe/dropped_frac";
/// Experts per MoE layer, as a run logs it: what a layer's normalised load
/// entropy ([`MOE_ENTROPY_NORM`]) needs to be read as effective experts.
pub const MOE_EXPERTS: &str = "moe/num_experts";
/// The run's own memory, reported by the run (or attributed from telemetry).
pub const MEM_GPU_BYTES: &str = "mem/gpu_bytes";
pub const MEM_RSS_BYTES: &str = "mem/rss_bytes";
/// The share of the host's memory in use, in percent (psutil's
/// `virtual_memory().percent`, as RLlib's `perf/ram_util_percent` logs it): the
/// host's memory has a known total here, 100%.
pub const MEM_HOST_PCT: &str = "mem/host_pct";
/// Model FLOPs of one step, as `metrics::flops` counts them (the built-in workloads report it).
pub const MODEL_FLOPS: &str = "model_flops";

// RL fine-tuning.
pub const REWARD: &str = "reward";
pub const REWARD_STD: &str = "reward_std";
/// The configured reward while a `reward_gaming_at` fault trains on the length reward:
/// the held-out score that stalls while the proxy `reward` climbs.
pub const REWARD_GOLD: &str = "reward_gold";
pub const KL: &str = "kl";
pub const KL_COEF: &str = "kl_coef";
pub const ENTROPY: &str = "entropy";
pub const CLIP_FRAC: &str = "clip_frac";
pub const APPROX_KL: &str = "approx_kl";
pub const RESPONSE_LEN: &str = "response_len";
pub const POLICY_LOSS: &str = "policy_loss";
pub const VALUE_LOSS: &str = "value_loss";
pub const FRAC_REWARD_ZERO_STD: &str = "frac_reward_zero_std";

/// Host telemetry (2 Hz, under the reserved `_telemetry` run in a snapshot).
pub mod host {
    pub const CPU_PCT: &str = "host/cpu_pct";
    pub const MEM_USED_BYTES: &str = "host/mem_used_bytes";
    pub const MEM_TOTAL_BYTES: &str = "host/mem_total_bytes";
    /// rlmon's own resident memory (the training threads share its process).
    pub const PROC_RSS_BYTES: &str = "host/proc_rss_bytes";
}

// ---------------------------------------------------------------- name builders
/// The names of GPU `index`'s telemetry: `gpu(0).util_pct()` is `gpu0/util_pct`.
pub fn gpu(index: usize) -> Gpu {
    Gpu(index)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gpu(pub usize);

/// The per-GPU measures, in the order the hardware pane lists them.
pub const GPU_MEASURES: [&str; 7] = ["util_pct", "mem_used_bytes", "mem_total_bytes", "power_w", "temp_c", "sm_clock_mhz", "proc_mem_bytes"];

impl Gpu {
    /// `gpu{i}/{measure}`, `measure` one of [`GPU_MEASURES`].
    pub fn measure(self, measure: &str) -> String {
        format!("gpu{}/{measure}", self.0)
    }
    pub fn util_pct(self) -> String {
        self.measure("util_pct")
    }
    pub fn mem_used_bytes(self) -> String {
        self.measure("mem_used_bytes")
    }
    pub fn mem_total_bytes(self) -> String {
        self.measure("mem_total_bytes")
    }
    pub fn power_w(self) -> String {
        self.measure("power_w")
    }
    pub fn temp_c(self) -> String {
        self.measure("temp_c")
    }
    pub fn sm_clock_mhz(self) -> String {
        self.measure("sm_clock_mhz")
    }
    /// GPU memory used by rlmon's own process (its training threads).
    pub fn proc_mem_bytes(self) -> String {
        self.measure("proc_mem_bytes")
    }

    /// GPU memory of run `run`'s job: the processes of its process tree on this GPU
    /// (a command's program and its children, or an `--attach-pid` tree).
    pub fn run_mem_bytes(self, run: usize) -> String {
        self.measure(&format!("run{run}_mem_bytes"))
    }

    /// `gpu{i}/run{r}_mem_bytes` → `(i, r)`.
    pub fn parse_run_mem(name: &str) -> Option<(usize, usize)> {
        let (gpu, measure) = Self::parse(name)?;
        Some((gpu, measure.strip_prefix("run")?.strip_suffix("_mem_bytes")?.parse().ok()?))
    }

    /// `gpu{i}/{measure}` → `(i, measure)`.
    pub fn parse(name: &str) -> Option<(usize, &str)> {
        let rest = name.strip_prefix("gpu")?;
        let (index, measure) = rest.split_once('/')?;
        Some((index.parse().ok()?, measure))
    }
}

/// The names of MoE layer `layer`'s metrics: `moe(1).load(3)` is `moe/L1/load/E3`.
pub fn moe(layer: usize) -> MoeLayer {
    MoeLayer(layer)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoeLayer(pub usize);

/// The per-layer summaries the hub derives from the loads (see `metrics::moe`).
pub const MOE_DERIVED: [&str; 5] = [MOE_BALANCE, MOE_ENTROPY_BITS, MOE_CV, MOE_MAX_VIO, MOE_DEAD_EXPERTS];
/// exp(H)/N: 1 when balanced, 1/N when one expert takes every token.
pub const MOE_BALANCE: &str = "balance";
/// Routing entropy in bits (at most log2 N).
pub const MOE_ENTROPY_BITS: &str = "entropy_bits";
pub const MOE_CV: &str = "cv";
/// (max - mean) / mean of the loads.
pub const MOE_MAX_VIO: &str = "max_vio";
/// Experts below a tenth of their fair share.
pub const MOE_DEAD_EXPERTS: &str = "dead_experts";
pub const MOE_DROPPED_FRAC: &str = "dropped_frac";
/// A layer's load entropy over log N (0 when one expert takes every token, 1
/// when balanced), as a run logs it when it logs no load per expert.
pub const MOE_ENTROPY_NORM: &str = "entropy_norm";

impl MoeLayer {
    /// Measures [`MoeLayer::parse`] returns, as matched by readers (the detectors).
    pub const BALANCE: &'static str = "balance";
    pub const DROPPED_FRAC: &'static str = "dropped_frac";
    pub const ENTROPY_NORM: &'static str = MOE_ENTROPY_NORM;

    /// Share of the layer's routed tokens expert `e` received (before capacity drops).
    pub fn load(self, expert: usize) -> String {
        format!("moe/L{}/load/E{expert}", self.0)
    }
    pub fn dropped_frac(self) -> String {
        self.measure(MOE_DROPPED_FRAC)
    }
    /// `moe/L{l}/{measure}`: `dropped_frac` or one of [`MOE_DERIVED`].
    pub fn measure(self, measure: &str) -> String {
        format!("moe/L{}/{measure}", self.0)
    }
    pub fn balance(self) -> String {
        self.measure(MOE_BALANCE)
    }
    pub fn entropy_bits(self) -> String {
        self.measure(MOE_ENTROPY_BITS)
    }
    pub fn cv(self) -> String {
        self.measure(MOE_CV)
    }
    pub fn max_vio(self) -> String {
        self.measure(MOE_MAX_VIO)
    }
    pub fn dead_experts(self) -> String {
        self.measure(MOE_DEAD_EXPERTS)
    }

    /// `moe/L{l}/load/E{e}` → `(l, e)`.
    pub fn parse_load(name: &str) -> Option<(usize, usize)> {
        // Split at a byte, not a substring: this runs on every value of every step.
        let (layer, rest) = name.strip_prefix("moe/L")?.split_once('/')?;
        Some((layer.parse().ok()?, rest.strip_prefix("load/E")?.parse().ok()?))
    }

    /// `moe/L{l}/{measure}` (not a load) → `(l, measure)`.
    pub fn parse(name: &str) -> Option<(usize, &str)> {
        let (layer, measure) = name.strip_prefix("moe/L")?.split_once('/')?;
        (!measure.contains('/')).then_some(())?;
        Some((layer.parse().ok()?, measure))
    }
}

/// A MoE layer's metric under another trainer's name, as rlmon names it: an
/// expert's load with its layer and expert numbers (`moe/layer_3/expert_5_load`,
/// `moe/layer_3/tokens_per_expert/5`, `router/l3/e5/count`: `moe/L3/load/E5`;
/// no layer number is the one MoE layer, 0), or a layer's dropped-token fraction
/// (`moe/layer_3/dropped_token_frac`: `moe/L3/dropped_frac`; the whole model's,
/// with no layer, `moe/dropped_frac`). Loads may be counts
/// or shares (the balance renormalises them). A name with a word of another
/// quantity (a loss, bias, gradient, norm, weight, logit, entropy) is none.
pub fn moe_alias(name: &str) -> Option<String> {
    // Cheap refusal first: every unknown name of every log comes here once.
    let lower = name.to_ascii_lowercase();
    if !(lower.contains("expert") || lower.contains("moe") || lower.contains("rout")) {
        return None;
    }
    // Words and numbers, a number glued to its word split off (`layer3`, `e5`).
    let mut tokens: Vec<(&str, Option<usize>)> = Vec::new();
    for part in lower.split(|c: char| !c.is_ascii_alphanumeric()).filter(|p| !p.is_empty()) {
        let digits = part.bytes().rev().take_while(u8::is_ascii_digit).count();
        let (word, number) = part.split_at(part.len() - digits);
        if !word.is_empty() {
            tokens.push((word, None));
        }
        if !number.is_empty() {
            tokens.push(("", Some(number.parse().ok()?)));
        }
    }
    let words = || tokens.iter().filter(|(w, _)| !w.is_empty()).map(|(w, _)| *w);
    let numbered = |names: &[&str]| tokens.windows(2).find_map(|w| (names.contains(&w[0].0) && w[0].1.is_none()).then_some(w[1].1).flatten());
    let layer = numbered(&["layer", "layers", "l", "block", "blocks"]);
    // The entropy of the experts' loads over log N (`moe/layer_3/load_entropy_norm`):
    // not a router's per-token entropy (`router_logit_entropy`: low when it is sure).
    if words().any(|w| w == "entropy")
        && words().any(|w| matches!(w, "load" | "loads" | "usage" | "util" | "utilization" | "tokens"))
        && words().any(|w| matches!(w, "norm" | "normalized" | "normalised" | "normed" | "relative"))
        && !words().any(|w| matches!(w, "logit" | "logits" | "prob" | "probs" | "token" | "per"))
    {
        return Some(moe(layer.unwrap_or(0)).measure(MOE_ENTROPY_NORM));
    }
    const OTHER: &[&str] = &["unused", "loss", "bias", "grad", "gradient", "norm", "weight", "weights", "logit", "logits", "entropy", "lr", "score", "scores", "capacity", "z"];
    if words().any(|w| OTHER.contains(&w)) {
        return None;
    }
    // Dropped tokens: `dropped_token_frac`, T5X's `fraction_tokens_left_behind`,
    // fairseq's `overflow_expert1` (a percentage of the first choices).
    let left_behind = words().any(|w| w == "left") && words().any(|w| w == "behind");
    if words().any(|w| w.starts_with("drop") || w == "overflow") || left_behind {
        let share = words().any(|w| matches!(w, "frac" | "fraction" | "rate" | "ratio" | "share" | "overflow"));
        return share.then(|| layer.map_or_else(|| MOE_DROPPED_ALL.to_owned(), |l| moe(l).dropped_frac()));
    }
    let expert = numbered(&["expert", "experts", "e"])?;
    let load = words().any(|w| matches!(w, "load" | "loads" | "tokens" | "token" | "count" | "counts" | "frac" | "fraction" | "share" | "usage" | "util" | "utilization" | "routed" | "assigned"));
    load.then(|| moe(layer.unwrap_or(0)).load(expert))
}

/// The memory in use under a trainer's own name for it (Composer's
/// `memory/current_allocated_mem`, PaddleNLP's `current_memory_allocated`,
/// detectron2's `max_mem`, DeepSpeed's `MemAllocated`, verl's
/// `perf/cpu_memory_used_gb`): the host's RSS when a word says the host's (`cpu`,
/// `host`, `rss`, `ram`), else the GPU's; the factor to bytes its name's unit
/// word gives (`_gb`, `_mb`; `None` when it gives none); and how strongly it stands
/// for the memory beside the run's other memory names (the lower the stronger:
/// memory in use, then reserved, then a peak). A share, a rate, a time, a count
/// or a free or total amount of memory is none (`ram_util_percent`, `mem_bandwidth`,
/// `memory/alloc_retries`).
pub fn memory_alias(name: &str) -> Option<(&'static str, Option<f64>, usize)> {
    let lower = name.to_ascii_lowercase();
    if !(lower.contains("mem") || lower.contains("ram") || lower.contains("rss") || lower.contains("allocated") || lower.contains("reserved")) {
        return None;
    }
    // Words, a camel-case name's too (`memoryAllocated`), and a glued pair split
    // (`memallocated`: `mem` and `allocated`).
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() || (c.is_ascii_uppercase() && prev_lower) {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        }
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_lowercase());
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    if !word.is_empty() {
        words.push(word);
    }
    const KINDS: &[&str] = &["allocated", "alloc", "used", "usage", "reserved", "active", "cached", "peak", "current"];
    let mut split = Vec::with_capacity(words.len() + 1);
    for w in words {
        match ["memory", "mem"].iter().find_map(|m| w.strip_prefix(m).filter(|rest| KINDS.contains(rest))) {
            Some(rest) => {
                split.push("mem".to_owned());
                split.push(rest.to_owned());
            }
            None => split.push(w),
        }
    }
    let has = |set: &[&str]| split.iter().any(|w| set.contains(&w.as_str()));
    // `max_reserved`, `peak_allocated`: a peak of the allocator's is memory too.
    let allocator = has(&["allocated", "reserved"]) && has(&["max", "peak", "current", "cuda", "gpu"]);
    if !(allocator || has(&["mem", "memory", "vram", "rss", "maxrss", "ram"])) {
        return None;
    }
    const NOT_IN_USE: &[&str] = &[
        "percent", "pct", "util", "utilization", "utilisation", "frac", "fraction", "ratio", "share", "bandwidth", "bw", "time", "retries", "retry",
        "count", "num", "efficient", "efficiency", "free", "avail", "available", "total", "limit", "capacity", "tokens", "len", "length", "per", "rate",
        "throughput", "fragmentation", "frag", "saved", "savings", "grad", "loss", "params", "parameters", "bank", "size", "seq", "layers", "steps",
        // An evaluation's memory is another phase's.
        "val", "eval", "valid", "validation", "test",
    ];
    if has(NOT_IN_USE) {
        return None;
    }
    // (A word for the GPU first: `system/peak_gpu_memory` is the GPU's.)
    let gpu = has(&["gpu", "cuda", "vram", "device", "accelerator", "hbm"]);
    let metric = if !gpu && has(&["cpu", "host", "rss", "maxrss", "ram", "virtual", "vm", "node", "proc", "process"]) { MEM_RSS_BYTES } else { MEM_GPU_BYTES };
    let unit = if has(&["gb", "gib", "g"]) {
        Some(GIB)
    } else if has(&["mb", "mib", "m"]) {
        Some(MIB)
    } else if has(&["kb", "kib", "k"]) {
        Some(1024.0)
    } else if has(&["bytes", "b"]) {
        Some(1.0)
    } else {
        None
    };
    let rank = if has(&["peak", "max", "high", "highest", "maximum"]) {
        2
    } else if has(&["reserved", "cached", "cache"]) {
        1
    } else {
        0
    };
    Some((metric, unit, rank))
}

/// The factor to bytes of a memory logged without a unit, from its first value:
/// bytes from ten million on, MiB from 300 (a process on a GPU holds 300 MiB or
/// more), else GiB. Detectors judge a memory against itself; the factor only
/// makes the figures shown right.
pub fn memory_unit_of(first: f64) -> f64 {
    if !(first.is_finite() && first > 0.0) || first < 300.0 {
        GIB
    } else if first < 1e7 {
        MIB
    } else {
        1.0
    }
}

/// The factor a MoE metric under another trainer's name ([`moe_alias`]) takes to
/// rlmon's units: fairseq's `overflow_expert1` is a percentage.
pub fn moe_alias_factor(name: &str) -> f64 {
    if name.to_ascii_lowercase().contains("overflow") { 0.01 } else { 1.0 }
}

/// Whether `name` is any MoE metric (a layer's, the whole model's, the expert count).
pub fn is_moe_metric(name: &str) -> bool {
    name.starts_with("moe/")
}

/// Whether `name` is any per-layer MoE metric (loads, drops, summaries).
pub fn is_moe_layer_metric(name: &str) -> bool {
    name.starts_with("moe/L")
}

/// The names of representation-dimensionality layer `layer`'s measures.
pub fn ndt(layer: usize) -> NdtLayer {
    NdtLayer(layer)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdtLayer(pub usize);

/// Dimensionality measures, in the order the representation pane cycles them.
pub const NDT_MEASURES: [&str; 4] = ["stable_rank", "participation_ratio", "cum_energy_90", "nuclear_norm_ratio"];

impl NdtLayer {
    /// `ndt/L{l}/{measure}`, `measure` one of [`NDT_MEASURES`].
    pub fn measure(self, measure: &str) -> String {
        format!("ndt/L{}/{measure}", self.0)
    }

    /// `ndt/L{l}/{measure}` → `(l, measure)`.
    pub fn parse(name: &str) -> Option<(usize, &str)> {
        let (layer, measure) = name.strip_prefix("ndt/L")?.split_once('/')?;
        Some((layer.parse().ok()?, measure))
    }
}

/// Whether `name` is a dimensionality measure.
pub fn is_ndt_metric(name: &str) -> bool {
    name.starts_with("ndt/")
}

// ---------------------------------------------------------------- the entries
/// What a metric's value is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A pure number (losses, ratios, norms).
    Ratio,
    /// A count within one step (tokens, samples).
    Count,
    Seconds,
    Bytes,
    PerSecond,
    Percent,
    Watts,
    Celsius,
    Megahertz,
}

/// Which way is better, for comparisons and "best" values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    /// Neither (a schedule, a coefficient, a count).
    Neither,
}

/// How a series comes about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    /// Reported by a run for each step.
    PerStep,
    /// Computed by the hub from other metrics of the step (never stored).
    Derived,
    /// Derived by the hub and stored with the step (MoE summaries).
    DerivedStored,
    /// Sampled from the machine (GPU, host), by time rather than by step.
    Telemetry,
}

/// Which pane charts or lists a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneHint {
    Training,
    Throughput,
    Rl,
    Moe,
    Representation,
    Hardware,
    /// Kept and compared but not drawn by a pane of its own.
    None,
}

/// One metric family.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricInfo {
    /// The name, or its pattern with `{i}`, `{l}`, `{e}` for dimensions.
    pub pattern: &'static str,
    /// Short label for charts and tables.
    pub label: &'static str,
    pub unit: Unit,
    pub better: Better,
    /// Same-seed replicas must agree on it bit for bit (it is a function of the
    /// seed and the data, not of timing or memory).
    pub replicas_agree: bool,
    pub kind: SeriesKind,
    /// Can be negative or cross zero (ratios to a median mean nothing then).
    pub signed: bool,
    pub pane: PaneHint,
    /// Names accepted for it on input, renamed as they are (exact, case-sensitive).
    pub aliases: &'static [&'static str],
}

const fn entry(pattern: &'static str, label: &'static str, unit: Unit, better: Better, kind: SeriesKind, pane: PaneHint) -> MetricInfo {
    MetricInfo { pattern, label, unit, better, replicas_agree: false, kind, signed: false, pane, aliases: &[] }
}

impl MetricInfo {
    const fn agree(mut self) -> Self {
        self.replicas_agree = true;
        self
    }
    const fn signed(mut self) -> Self {
        self.signed = true;
        self
    }
    const fn aliases(mut self, aliases: &'static [&'static str]) -> Self {
        self.aliases = aliases;
        self
    }

    /// Whether the metric is a timing, rate or resource measure: it differs between
    /// identical runs, so divergence checks leave it out.
    pub fn is_timing_or_resource(&self) -> bool {
        matches!(self.unit, Unit::Seconds | Unit::Bytes | Unit::PerSecond) || self.kind == SeriesKind::Telemetry
    }
}

use Better::{Higher, Lower, Neither};
use PaneHint as P;
use SeriesKind::{Derived, DerivedStored, PerStep, Telemetry};

/// Every metric family rlmon knows. Order within a pane is the order the pane
/// offers them in.
pub const CATALOG: &[MetricInfo] = &[
    entry(LOSS, "loss", Unit::Ratio, Lower, PerStep, P::Training).agree().aliases(&["train_loss", "train/loss", "lm_loss", "ppo/loss/total", "loss/train/total", "total_loss", "train/CrossEntropyLoss", "losses/total_loss", "train_loss_step", "reduced_train_loss", "cost", "xent", "cross_entropy", "cross_entropy_loss", "cross_ent_loss", "avg_loss", "avr_loss", "average_loss", "mean_loss", "running_loss", "loss_avg", "训练损失", "损失", "batch_loss"]),
    entry(NLL_LOSS, "NLL loss", Unit::Ratio, Lower, PerStep, P::Training),
    entry(PERPLEXITY, "perplexity", Unit::Ratio, Lower, PerStep, P::Training).aliases(&["ppl", "train_ppl", "train_perplexity", "train/ppl", "train/perplexity"]),
    entry(POLICY_LOSS, "policy loss", Unit::Ratio, Lower, PerStep, P::Training).signed().aliases(&["loss/policy_loss", "actor/pg_loss", "loss/policy_avg", "ppo/loss/policy", "policy_gradient_loss", "pol_surr", "pg_loss", "act_loss", "losses/policy_loss", "loss_pi", "pi_loss", "surrogate_loss", "loss/surrogate"]),
    entry(VALUE_LOSS, "value loss", Unit::Ratio, Lower, PerStep, P::Training).aliases(&["loss/value_loss", "critic/vf_loss", "loss/value_avg", "ppo/loss/value", "critic_loss", "vf_loss", "cri_loss", "losses/value_loss", "loss_v", "v_loss", "value_function_loss", "loss/value_function"]),
    entry(LR, "lr", Unit::Ratio, Neither, PerStep, P::Training).agree().aliases(&["learning_rate", "学习率", "actor/lr", "actor_lr", "act_lr", "ppo/learning_rate", "cur_lr", "default_optimizer_learning_rate", "optim0_lr0", "optim/lr", "optimizer/lr", "opt/lr", "train_learning_rate"]),
    entry(GRAD_NORM, "grad norm", Unit::Ratio, Neither, PerStep, P::Training).agree().aliases(&["actor/grad_norm", "actor_grad_norm", "l2_norm/grad/global", "optim/total_grad_norm", "gradient_norm", "grad_norm_total", "total_grad_norm", "global_grad_norm", "gnorm", "grdn", "grad_gnorm", "gradients_default_optimizer_global_norm", "gradient_norms/l2_norm/model", "gradnorm", "grad/norm", "opt/grad_norm", "optim/grad_norm", "optimizer/grad_norm", "train_grad_norm"]),
    entry(LOSS_SCALE, "loss scale", Unit::Ratio, Neither, PerStep, P::None).aliases(&["amp_scaler", "loss_scaler", "grad_scale", "grad_scaler", "cur_scale", "scaler/scale", "optim/loss_scale", "train/loss_scale", "loss_scale_value"]),
    entry(TOKENS, "tokens", Unit::Count, Neither, PerStep, P::None).aliases(&["perf/total_num_tokens", "total_num_tokens"]),
    entry(SAMPLES, "samples", Unit::Count, Neither, PerStep, P::None),
    entry(STEP_TIME_S, "step time", Unit::Seconds, Lower, PerStep, P::Throughput).aliases(&["step_time", "perf/time_per_step", "timing_s/step", "timing/train/total_step_time", "time/ppo/total", "train_step_timing_in_s", "train_step_timing", "iteration_time", "time_this_iter_s", "time_per_iter", "time_per_iteration", "sec_per_iter", "secs_per_iter", "s_per_iter", "time_per_step", "seconds_per_step", "sec_per_step", "batch_time", "time_per_batch"]),
    entry(TOKENS_PER_S, "tokens/s", Unit::PerSecond, Higher, Derived, P::Throughput).aliases(&["tokens_per_sec", "tokens_per_second", "tokens/sec", "throughput/tokens_per_sec", "throughput/device/tokens_per_sec", "throughput/device/tokens_per_second", "perf/throughput", "tokens_per_second_per_gpu", "tokens/s/device", "elements_per_second"]),
    entry(SAMPLES_PER_S, "samples/s", Unit::PerSecond, Higher, Derived, P::Throughput).aliases(&["samples_per_sec", "samples_per_second", "samples/sec", "throughput/samples_per_sec", "throughput/device/samples_per_sec", "time/fps", "img/s", "images/s", "images_per_sec", "interval_samples_per_second"]),
    entry(VAL_LOSS, "val loss", Unit::Ratio, Lower, PerStep, P::None).aliases(&["eval_loss", "eval/loss", "validation_loss", "metrics/eval/LanguageCrossEntropy", "valid_loss", "validation_cross_entropy", "val_cross_entropy", "验证损失"]),
    entry(EVAL_TRAIN_LOSS, "train loss (eval)", Unit::Ratio, Lower, PerStep, P::None),
    entry(STEP_AVG_S, "mean step time", Unit::Seconds, Lower, PerStep, P::None),
    entry(TRAIN_TIME_S, "train time", Unit::Seconds, Neither, PerStep, P::None),
    entry(MEM_GPU_BYTES, "GPU memory", Unit::Bytes, Lower, PerStep, P::None),
    entry(MEM_RSS_BYTES, "RSS", Unit::Bytes, Lower, PerStep, P::None),
    entry(MEM_HOST_PCT, "host memory", Unit::Percent, Lower, PerStep, P::None).aliases(&["ram_util_percent", "ram_percent", "ram_usage_percent", "mem_percent", "host_memory_percent", "cpu_memory_percent", "system_memory_percent"]),
    entry(MODEL_FLOPS, "model FLOPs", Unit::Count, Neither, PerStep, P::None),
    // RL health, in the order the RL pane cycles them.
    entry(REWARD, "reward", Unit::Ratio, Higher, PerStep, P::Rl).agree().signed().aliases(&["returnaverage", "return_mean", "eprewmean", "ep_rewmean", "average_return", "avg_return", "average_episode_return", "avg_episode_return", "return_average", "objective/scores", "scores", "reward_mean", "rewards", "critic/score/mean", "env/reward_mean", "ppo/mean_scores", "rollout/ep_rew_mean", "ep_rew_mean", "mean_reward", "avg_reward", "reward/mean", "episodic_return", "average_reward_score", "episode_reward_mean", "env_runners/episode_return_mean", "env_runners/episode_reward_mean", "rew", "average_ep_ret", "ep_ret_mean", "episode_return", "episode_reward", "avg_episode_reward", "return_per_training_episode", "episode/score", "episode_return_mean", "mean_episode_return", "ep_return", "average_reward", "rlhf_reward"]),
    entry(KL, "KL", Unit::Ratio, Lower, PerStep, P::Rl).agree().signed().aliases(&["objective/kl", "kl_mean", "actor/kl_loss", "kl_loss", "critic/kl", "ref_kl", "kl_ref", "actor/reward_kl_penalty", "kl_penalty", "kl_divergence", "kl_div", "mean_kl_loss"]),
    entry(ENTROPY, "entropy", Unit::Ratio, Neither, PerStep, P::Rl).agree().aliases(&["loss/policy_entropy", "policy/entropy", "policy/entropy_avg", "ppo/policy/entropy", "actor/entropy", "entropy_mean", "entropy_loss", "approx_entropy", "objective/entropy", "policy_entropy", "ent"]),
    entry(CLIP_FRAC, "clip frac", Unit::Ratio, Lower, PerStep, P::Rl).aliases(&["loss/clipfrac", "clipfrac", "policy/clipfrac_avg", "clip_ratio/region_mean", "clip_ratio", "actor/pg_clipfrac", "ppo_clip_ratio", "ppo/policy/clipfrac", "clip_fraction", "policy/clipfrac"]),
    entry(RESPONSE_LEN, "response len", Unit::Ratio, Neither, PerStep, P::Rl).aliases(&["completions/mean_length", "completion_length", "response_length/mean", "response_length", "tokens/responses_len_mean", "mean_gen_tokens_per_sample", "response_lengths", "mean_response_length", "avg_response_length", "response_length_mean"]),
    entry(REWARD_STD, "reward std", Unit::Ratio, Neither, PerStep, P::None).aliases(&["env/reward_std", "ppo/std_scores"]),
    entry(REWARD_GOLD, "gold reward", Unit::Ratio, Higher, PerStep, P::None).signed(),
    entry(KL_COEF, "KL coef", Unit::Ratio, Neither, PerStep, P::None).aliases(&["beta", "objective/kl_coef", "actor/kl_coef", "actor/reward_kl_penalty_coeff", "cur_kl_coeff", "curr_kl_coeff"]),
    entry(APPROX_KL, "approx KL", Unit::Ratio, Lower, PerStep, P::None).signed().aliases(&["loss/approxkl", "policy/approxkl_avg", "ppo/policy/approxkl", "actor/ppo_kl", "ppo_kl", "approxkl", "policy/approx_kl"]),
    entry(FRAC_REWARD_ZERO_STD, "zero-std groups", Unit::Ratio, Lower, PerStep, P::None),
    // MoE.
    entry(MOE_AUX_LOSS, "aux loss", Unit::Ratio, Lower, PerStep, P::Moe).aliases(&["aux_loss", "load_balancing_loss", "load_balance_loss"]),
    entry(MOE_DROPPED_ALL, "dropped tokens", Unit::Ratio, Lower, PerStep, P::Moe),
    entry(MOE_EXPERTS, "experts", Unit::Count, Neither, PerStep, P::None).aliases(&["num_experts", "n_experts", "moe/n_experts"]),
    entry("moe/L{l}/load/E{e}", "load", Unit::Ratio, Neither, PerStep, P::Moe),
    entry("moe/L{l}/dropped_frac", "dropped", Unit::Ratio, Lower, PerStep, P::Moe),
    entry("moe/L{l}/entropy_norm", "load entropy", Unit::Ratio, Higher, PerStep, P::Moe),
    entry("moe/L{l}/balance", "balance", Unit::Ratio, Higher, DerivedStored, P::Moe),
    entry("moe/L{l}/entropy_bits", "entropy", Unit::Ratio, Higher, DerivedStored, P::Moe),
    entry("moe/L{l}/cv", "CV", Unit::Ratio, Lower, DerivedStored, P::Moe),
    entry("moe/L{l}/max_vio", "MaxVio", Unit::Ratio, Lower, DerivedStored, P::Moe),
    entry("moe/L{l}/dead_experts", "dead", Unit::Count, Lower, DerivedStored, P::Moe),
    // Representation dimensionality, in the order the pane cycles them.
    entry("ndt/L{l}/stable_rank", "stable rank", Unit::Ratio, Neither, PerStep, P::Representation),
    entry("ndt/L{l}/participation_ratio", "participation ratio", Unit::Ratio, Neither, PerStep, P::Representation),
    entry("ndt/L{l}/cum_energy_90", "90% energy dim", Unit::Ratio, Neither, PerStep, P::Representation),
    entry("ndt/L{l}/nuclear_norm_ratio", "nuclear norm ratio", Unit::Ratio, Neither, PerStep, P::Representation),
    // Telemetry.
    entry("gpu{i}/util_pct", "GPU util", Unit::Percent, Neither, Telemetry, P::Hardware),
    entry("gpu{i}/mem_used_bytes", "VRAM used", Unit::Bytes, Neither, Telemetry, P::Hardware),
    entry("gpu{i}/mem_total_bytes", "VRAM total", Unit::Bytes, Neither, Telemetry, P::Hardware),
    entry("gpu{i}/power_w", "power", Unit::Watts, Neither, Telemetry, P::Hardware),
    entry("gpu{i}/temp_c", "temperature", Unit::Celsius, Neither, Telemetry, P::Hardware),
    entry("gpu{i}/sm_clock_mhz", "SM clock", Unit::Megahertz, Neither, Telemetry, P::Hardware),
    entry("gpu{i}/proc_mem_bytes", "rlmon VRAM", Unit::Bytes, Lower, Telemetry, P::Hardware),
    entry(host::CPU_PCT, "CPU", Unit::Percent, Neither, Telemetry, P::Hardware),
    entry(host::MEM_USED_BYTES, "RAM used", Unit::Bytes, Neither, Telemetry, P::Hardware),
    entry(host::MEM_TOTAL_BYTES, "RAM total", Unit::Bytes, Neither, Telemetry, P::Hardware),
    entry(host::PROC_RSS_BYTES, "rlmon RSS", Unit::Bytes, Lower, Telemetry, P::Hardware),
];

/// The catalog entry for a metric name (a concrete name: `gpu0/util_pct`,
/// `moe/L1/load/E3`), or `None` for a name rlmon does not know (a user's own metric,
/// kept under its own name).
pub fn info(name: &str) -> Option<&'static MetricInfo> {
    let pattern: std::borrow::Cow<str> = if let Some((_, measure)) = Gpu::parse(name) {
        format!("gpu{{i}}/{measure}").into()
    } else if MoeLayer::parse_load(name).is_some() {
        "moe/L{l}/load/E{e}".into()
    } else if let Some((_, measure)) = MoeLayer::parse(name) {
        format!("moe/L{{l}}/{measure}").into()
    } else if let Some((_, measure)) = NdtLayer::parse(name) {
        format!("ndt/L{{l}}/{measure}").into()
    } else {
        name.into()
    };
    match CATALOG.iter().find(|m| m.pattern == pattern) {
        Some(m) => Some(m),
        // A remote host's telemetry is the same family as the local one.
        None => parse_remote(name).and_then(|(_, local)| info(local)),
    }
}

// ---------------------------------------------------------------- remote hosts
/// The name of a remote host's telemetry (scraped from its exporters): `node7` and
/// `gpu0/util_pct` give `node7/gpu0/util_pct`; `host/cpu_pct` gives `node7/host/cpu_pct`.
pub fn remote(host: &str, local: &str) -> String {
    format!("{host}/{local}")
}

/// `node7/gpu0/util_pct` → `("node7", "gpu0/util_pct")`: a host name followed by a
/// local telemetry name (`gpu{i}/...` or `host/...`); `None` for any other name.
pub fn parse_remote(name: &str) -> Option<(&str, &str)> {
    let (host, local) = name.split_once('/')?;
    let telemetry = Gpu::parse(local).is_some() || local.starts_with("host/");
    (!host.is_empty() && telemetry).then_some((host, local))
}

// ---------------------------------------------------------------- OpenMetrics
/// A catalog metric as an OpenMetrics / Prometheus gauge: the family name (prefixed
/// `rlmon_`, dimensions moved to labels, base units spelt out) and the labels of this
/// series (`gpu`, `layer`, `expert`, `host`).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenMetric {
    pub family: String,
    pub labels: Vec<(&'static str, String)>,
    pub info: &'static MetricInfo,
}

/// `tokens_per_s` → `rlmon_tokens_per_second`; `gpu0/util_pct` →
/// `rlmon_gpu_util_percent{gpu="0"}`; `node7/host/cpu_pct` →
/// `rlmon_host_cpu_percent{host="node7"}`. `None` for a name the catalog lacks (a
/// user's own metric is not published: its name is not ours to promise).
pub fn openmetric(name: &str) -> Option<OpenMetric> {
    let info = info(name)?;
    let (host, local) = match parse_remote(name) {
        Some((host, local)) => (Some(host), local),
        None => (None, name),
    };
    let mut labels: Vec<(&'static str, String)> = host.map(|h| ("host", h.to_owned())).into_iter().collect();
    if let Some((gpu, _)) = Gpu::parse(local) {
        labels.push(("gpu", gpu.to_string()));
    } else if let Some((layer, expert)) = MoeLayer::parse_load(local) {
        labels.push(("layer", layer.to_string()));
        labels.push(("expert", expert.to_string()));
    } else if let Some((layer, _)) = MoeLayer::parse(local).or_else(|| NdtLayer::parse(local)) {
        labels.push(("layer", layer.to_string()));
    }
    // The pattern without its dimensions: `moe/L{l}/load/E{e}` → `moe_load`.
    let mut base = String::with_capacity(info.pattern.len());
    for part in info.pattern.split('/') {
        let part = part.split('{').next().unwrap_or("");
        let part = if part.len() == 1 && info.pattern.contains('{') && part.chars().all(|c| c.is_ascii_uppercase()) { "" } else { part };
        if !part.is_empty() {
            if !base.is_empty() {
                base.push('_');
            }
            base.push_str(part);
        }
    }
    let base: String = base.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    let suffixes: &[(&str, &str)] = match info.unit {
        Unit::PerSecond => &[("_per_s", "_per_second")],
        Unit::Seconds => &[("_s", "_seconds")],
        Unit::Percent => &[("_pct", "_percent")],
        Unit::Watts => &[("_w", "_watts")],
        Unit::Celsius => &[("_c", "_celsius")],
        _ => &[],
    };
    let base = suffixes.iter().find_map(|(short, long)| base.strip_suffix(short).map(|b| format!("{b}{long}"))).unwrap_or(base);
    Some(OpenMetric { family: format!("rlmon_{base}"), labels, info })
}

/// The metrics a pane offers, in the catalog's order (plain names only: patterns
/// with dimensions are left out).
pub fn in_pane(pane: PaneHint) -> impl Iterator<Item = &'static str> {
    CATALOG.iter().filter(move |m| m.pane == pane && !m.pattern.contains('{')).map(|m| m.pattern)
}

/// Whether same-seed replicas must agree on `name`; unknown metrics (a user's own)
/// are compared too, unless they look like timings or memory.
pub fn replicas_agree(name: &str) -> bool {
    match info(name) {
        Some(m) => m.replicas_agree,
        None => false,
    }
}

/// Whether `name` is a timing, rate or resource measure (never a divergence).
/// Unknown names count as timing when their name says so (`*_per_s`, `*_time*`,
/// `mem/*`, `*_bytes`).
pub fn is_timing_or_resource(name: &str) -> bool {
    match info(name) {
        Some(m) => m.is_timing_or_resource(),
        None => name.ends_with("_per_s") || name.contains("time") || name.starts_with("mem/") || name.ends_with("_bytes"),
    }
}

/// Which way is better for `name`. Unknown names: higher for rewards, accuracies
/// and rates, lower otherwise (losses, errors).
pub fn better(name: &str) -> Better {
    match info(name) {
        Some(m) => m.better,
        None if name.contains("reward") || name.contains("acc") || name.ends_with("_per_s") => Higher,
        None => Lower,
    }
}

/// Whether `name` can be negative or cross zero.
pub fn is_signed(name: &str) -> bool {
    info(name).is_some_and(|m| m.signed)
}

/// What a detector watching `name` reads instead when a run does not log it, in
/// order of preference: Stable-Baselines3 logs only its approx KL (no KL to a
/// reference); nanoGPT, Megatron and MLX log a step time or a sample rate, no
/// tokens/s; fairseq2 logs its loss as the NLL.
pub fn stand_ins(name: &str) -> &'static [&'static str] {
    match name {
        LOSS => &[NLL_LOSS, PERPLEXITY],
        KL => &[APPROX_KL],
        TOKENS_PER_S => &[SAMPLES_PER_S, STEP_TIME_S],
        _ => &[],
    }
}

/// Whether a name (lower case) speaks of a perplexity: `perplexity`, or `ppl` in
/// any name (`valid_ppl`, `val_ppl`).
pub fn names_a_perplexity(lower: &str) -> bool {
    lower.contains(PERPLEXITY) || lower.contains("ppl")
}

/// Whether a name (lower case) is a GAN's generator or discriminator loss in
/// pix2pix's and CycleGAN's style, the net's letter first: `d_a`, `g_gan`,
/// `d_real` (the names with `loss` in them are losses already).
pub fn names_a_gan_loss(lower: &str) -> bool {
    let b = lower.as_bytes();
    b.len() >= 3 && matches!(b[0], b'd' | b'g') && matches!(b[1], b'_' | b'/') && b[2].is_ascii_alphabetic()
}

/// Whether `name` is one part of a training loss a run logs only in parts
/// (Ultralytics' `train/box_loss`, `train/cls_loss`, `train/dfl_loss`; a detector's
/// `loss_cls`, `loss_bbox`): a name rlmon does not know with `loss` as a word of
/// it, not an evaluation's, a GAN's net's, a loss's scale, weight or mean. A
/// record holding two or more parts and no loss has their sum as its loss.
pub fn is_loss_part(name: &str) -> bool {
    if knows(name) || info(name).is_some() {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    if !lower.contains(LOSS) || EVALUATION_PREFIXES.iter().any(|p| lower.starts_with(p)) {
        return false;
    }
    let rest = INPUT_PREFIXES.iter().find_map(|p| lower.strip_prefix(p)).unwrap_or(&lower);
    let words = name_words(rest);
    let has = |set: &[&str]| has_word(&words, set);
    has(&[LOSS])
        && !names_a_gan_loss(rest)
        && !has(&["val", "valid", "validation", "eval", "test", "scale", "weight", "coef", "coeff", "mean", "avg", "average", "ema", "running", "std", "min", "max", "g", "d", "gen", "disc", "generator", "discriminator", "critic", "actor", "policy", "value", "kl", "aux", "z", "total"])
}

/// Whether a name is a gradient's measure (`grad_norm`, `gnorm`, `grad_norm_0`,
/// `Grad Norm`), not a loss or a weight's norm.
pub fn names_a_gradient(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (lower.contains("grad") || lower.contains("gnorm")) && !lower.contains(LOSS)
}

/// The loss scale a metric of the run says, if it names one: [`LOSS_SCALE`], or two
/// to the power of the logged base-2 logarithm.
pub fn loss_scale(name: &str, value: f64) -> Option<f64> {
    match name {
        LOSS_SCALE => Some(value),
        LG_LOSS_SCALE => Some(value.exp2()),
        _ => None,
    }
}

/// Whether a stand-in is judged on its logarithm (a perplexity: its log is the loss).
pub fn judged_on_its_log(name: &str) -> bool {
    name == PERPLEXITY
}

/// A stand-in's value as its detectors judge it: a perplexity's logarithm (not a
/// number for a perplexity of zero or below), any other metric's value as logged.
pub fn as_judged(name: &str, value: f64) -> f64 {
    match judged_on_its_log(name) {
        true if value > 0.0 => value.ln(),
        true => f64::NAN,
        false => value,
    }
}

/// Whether a run with these metric names is an RL fine-tuning run.
pub fn is_rl_run<'a>(mut names: impl Iterator<Item = &'a str>) -> bool {
    names.any(|n| n == KL || n == REWARD)
}

// ---------------------------------------------------------------- roles in a run
/// What a loss of a run is to the detectors that judge losses for spikes,
/// divergence and drift (loss_spike, loss_divergence, slow_drift).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossRole {
    /// A loss to judge: a language model's loss, a validation loss, a value
    /// (critic) loss, an auxiliary loss.
    Loss,
    /// A policy objective: signed, zero-inflated or clipped by design (the
    /// policy or actor loss of PPO and GRPO). Its spikes and drifts are no fault
    /// on their own; the KL, reward and entropy kinds judge the policy.
    PolicyObjective,
}

/// The role of `name` in a run that logs a KL or a reward (`rl_run`, an RL
/// run): a policy loss is always a policy objective, and so is an RL run's
/// `loss`, the trainer's total objective: GRPO trainers log the policy loss
/// under it (signed, exactly 0 whenever a group's rewards tie); PPO's sums the
/// signed policy term, the entropy bonus and a value loss that grows with the
/// returns as the policy improves (Stable-Baselines3's `train/loss`); a DQN's
/// TD loss grows with its Q-values alike. None falls as a model's loss does, so
/// its rise is no divergence; the KL, reward, entropy and gradient kinds judge
/// the run. Everything else is a loss (a value loss logged on its own too).
pub fn loss_role(name: &str, rl_run: bool) -> LossRole {
    match name {
        POLICY_LOSS => LossRole::PolicyObjective,
        LOSS if rl_run => LossRole::PolicyObjective,
        _ => LossRole::Loss,
    }
}

/// Words that make a name a score (higher is better)...
const SCORE_WORDS: &[&str] = &[
    "acc", "accuracy", "score", "reward", "return", "returns", "f1", "em", "exact", "correct", "solved", "solve_rate", "win_rate", "winrate",
    // translation, summarisation, segmentation and detection scores
    "bleu", "sacrebleu", "chrf", "rouge", "rouge1", "rouge2", "rougel", "meteor", "iou", "miou", "aacc", "macc", "map", "auc",
];
/// ...a score of held-out data (an evaluation, a benchmark, a gold reward)...
const HELD_OUT_WORDS: &[&str] = &["eval", "evaluation", "val", "valid", "validation", "test", "heldout", "holdout", "held", "gold", "benchmark"];
/// ...and benchmarks, as a name's word or the start of one (`gsm8k`, `math500`).
const BENCHMARKS: &[&str] = &["gsm8k", "math", "humaneval", "mbpp", "mmlu", "aime", "arc", "hellaswag", "truthfulqa", "gpqa", "livecodebench"];
/// Words that make a name no held-out score whatever else it says.
const NOT_HELD_OUT: &[&str] = &["train", "training", "loss", "std", "min", "max", "time", "count", "num", "len", "length", "lr", "kl", "entropy", "tokens"];

/// Whether `name` is a held-out score, higher is better: an evaluation on data
/// the policy is not trained on, or the gold reward. Reward hacking compares
/// the training reward against it. Told by the name's words: a score word
/// (`acc`, `accuracy`, `score`, `reward`, `return`, `pass@k`) with a held-out
/// word (`eval`, `evaluation`, `val`, `test`, `gold`: RLlib's
/// `evaluation/env_runners/episode_return_mean`) or a benchmark's name (`gsm8k`, `math`), or
/// an accuracy or pass@k with no training word (`accuracy`, `pass@1`): a
/// reward alone is the training reward (`rewards/accuracy_reward` too).
pub fn is_held_out_score(name: &str) -> bool {
    if name == REWARD_GOLD {
        return true;
    }
    if info(name).is_some() {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    let words = name_words(&lower);
    let has = |set: &[&str]| has_word(&words, set);
    let pass_at = words.iter().any(|w| w.strip_prefix("pass@").is_some_and(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_digit())));
    if has(NOT_HELD_OUT) || !(pass_at || has(SCORE_WORDS)) {
        return false;
    }
    let held_out = has(HELD_OUT_WORDS) || words.iter().any(|w| BENCHMARKS.iter().any(|b| w.starts_with(b) && w[b.len()..].chars().all(|c| c.is_ascii_digit())));
    let accuracy = pass_at || has(&["acc", "accuracy", "exact", "correct", "solved", "solve_rate"]);
    held_out || accuracy && !has(&["reward", "rewards"])
}

/// How well a held-out score witnesses reward hacking, best first (`None` for
/// a name that is no held-out score): the gold reward (0); a correctness, an
/// accuracy or pass@k (1: what the task asks, whatever the reward model says);
/// another score, such as BLEU or a return (2); a reward on held-out prompts
/// (3: `eval_reward`, `eval_rewards/RM/mean`, the same reward model a hacking
/// policy pleases, so it rises with the hack).
pub fn held_out_rank(name: &str) -> Option<u8> {
    if !is_held_out_score(name) {
        return None;
    }
    if name == REWARD_GOLD {
        return Some(0);
    }
    let lower = name.to_ascii_lowercase();
    let words = name_words(&lower);
    let has = |set: &[&str]| has_word(&words, set);
    let pass_at = words.iter().any(|w| w.starts_with("pass@"));
    Some(if pass_at || has(&["acc", "accuracy", "exact", "correct", "correctness", "solved", "solve_rate"]) {
        1
    } else if has(&["reward", "rewards"]) {
        3
    } else {
        2
    })
}

/// Whether `name` is a part of the training loss (InternLM's per-domain
/// `loss/cn`, a `loss/aux` beside the total): a loss word in a longer name, no
/// held-out word, no gradient.
pub fn is_part_of_loss(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let words = name_words(&lower);
    lower != LOSS && has_word(&words, &[LOSS]) && !has_word(&words, HELD_OUT_WORDS) && !names_a_gradient(name)
}

/// The words of a lower-cased metric name (`eval/pass@1` is `eval`, `pass@1`).
fn name_words(lower: &str) -> Vec<&str> {
    lower.split(|c: char| !(c.is_ascii_alphanumeric() || c == '@')).filter(|w| !w.is_empty()).collect()
}

/// Whether `words` hold one of `set`: a word, or two joined by an underscore
/// (`solve_rate`, `win_rate`: [`name_words`] cuts them apart).
fn has_word(words: &[&str], set: &[&str]) -> bool {
    words.iter().any(|w| set.contains(w)) || words.windows(2).any(|p| set.iter().any(|s| s.split_once('_') == Some((p[0], p[1]))))
}

/// Whether `name` is the part of a composite training reward that checks the
/// answer (TRL's `rewards/accuracy_reward/mean`, `rewards/correctness_reward_func`):
/// a verifier's judgement, logged beside parts a policy can please without
/// solving the task (a format or length reward). Reward hacking holds the total
/// reward against it as against a held-out score, when the run logs none.
pub fn is_correctness_reward(name: &str) -> bool {
    if info(name).is_some() {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    let words = name_words(&lower);
    let has = |set: &[&str]| has_word(&words, set);
    has(&["reward", "rewards"]) && has(&["acc", "accuracy", "correct", "correctness", "exact", "solved", "verifier", "verified"]) && !has(&["std", "min", "max", "count", "num", "len", "length", "time", "format"])
}

// ---------------------------------------------------------------- input names
/// A metric name as `&'static str`, each distinct name stored once per process, so
/// replaying a recorded session (millions of points over a few dozen names) clones
/// names for free instead of allocating one per point.
pub fn intern(name: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = names.get(name) {
        return known;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// How an input field turns into a canonical metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Conversion {
    /// Same value under the canonical name.
    Rename(&'static str),
    /// Value times a factor (milliseconds to seconds).
    Scale(&'static str, f64),
    /// A running total: the metric is the difference from the previous value.
    Cumulative(&'static str),
}

/// Prompt and completion tokens logged apart: their sum is the step's `tokens`.
pub const TOKENS_IN: &str = "tokens_in";
pub const TOKENS_OUT: &str = "tokens_out";

const MIB: f64 = (1u64 << 20) as f64;
const GIB: f64 = (1u64 << 30) as f64;

/// Input names that need arithmetic, besides the plain renames of the entries'
/// aliases.
const CONVERSIONS: &[(&str, Conversion)] = &[
    ("wall_time_ms", Conversion::Scale(STEP_TIME_S, 1e-3)),
    ("step_time_ms", Conversion::Scale(STEP_TIME_S, 1e-3)),
    ("iter_time_ms", Conversion::Scale(STEP_TIME_S, 1e-3)),
    // PyTorch's allocated-memory counter in bytes, and the usual ways scripts
    // print it (`torch.cuda.memory_allocated() / 2**30` labelled GB). A peak
    // (`max_memory_allocated`) only ever rises: it is not the memory in use.
    ("memory_allocated", Conversion::Rename(MEM_GPU_BYTES)),
    ("memory_allocated_mb", Conversion::Scale(MEM_GPU_BYTES, MIB)),
    ("gpu_mem_mb", Conversion::Scale(MEM_GPU_BYTES, MIB)),
    ("gpu_memory_mb", Conversion::Scale(MEM_GPU_BYTES, MIB)),
    ("memory_allocated_gb", Conversion::Scale(MEM_GPU_BYTES, GIB)),
    ("gpu_mem_gb", Conversion::Scale(MEM_GPU_BYTES, GIB)),
    ("gpu_memory_gb", Conversion::Scale(MEM_GPU_BYTES, GIB)),
    // StyleGAN's peak memories, in GiB.
    ("gpumem", Conversion::Scale(MEM_GPU_BYTES, GIB)),
    ("cpumem", Conversion::Scale(MEM_RSS_BYTES, GIB)),
    ("rss_mb", Conversion::Scale(MEM_RSS_BYTES, MIB)),
    ("rss_gb", Conversion::Scale(MEM_RSS_BYTES, GIB)),
    // TRL: tokens and episodes seen so far.
    ("num_tokens", Conversion::Cumulative(TOKENS)),
    ("episode", Conversion::Cumulative(SAMPLES)),
    // Stable-Baselines3 logs the entropy bonus's loss: minus the entropy.
    ("train/entropy_loss", Conversion::Scale(ENTROPY, -1.0)),
];

/// Prefixes loggers put before a trainer's own names (the Hugging Face W&B callback,
/// NeMo-RL, OpenRLHF): `train/kl` is read as `kl` when `kl` is known; Sacred's
/// dotted names (`train.loss`, `training.loss`) likewise.
/// (And the groups a tracker's names are filed under that say nothing of the
/// quantity: `perf/tokens_per_sec`, `sys/gpu_mem_gb`, `system/rss_mb`.)
const INPUT_PREFIXES: &[&str] = &["train/", "train.", "training/", "training.", "training_", "main/", "perf/", "performance/", "throughput/", "speed/", "timing/", "sys/", "system/", "memory/", "hardware/"];
/// Prefixes of an evaluation's names: the loss under one is the validation loss
/// (Chainer's `validation/main/loss`, `val/loss`, `test/loss`).
const EVALUATION_PREFIXES: &[&str] = &["validation/", "val/", "valid/", "eval/", "test/", "validation.", "val.", "valid.", "eval.", "test."];

/// Text-log dialects whose field names are not rlmon's: each maps the words its
/// trainer prints to a canonical metric (and a factor for milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// Megatron-LM: `iteration N/ M | lm loss: X | grad norm: Y | ...`.
    Megatron,
    /// nanoGPT: `iter N: loss X, time Yms, mfu Z%`; modded-nanogpt: `step:N/M train_loss:X step_avg:Sms`.
    NanoGpt,
    /// DeepSpeed: `step=N, skipped=K, lr=[X]`, throughput lines, DeepSpeed-Chat's `Step: N | Actor Loss: X`.
    DeepSpeed,
    /// Any other trainer's `key: value`, `key=value` or `key value` lines
    /// (torchtitan, fairseq, Lightning and tqdm postfixes, MLX, Keras, verl's console).
    Generic,
}

/// `(preset, word as printed, conversion)`. Words not listed are kept under their own
/// name, lower-cased with spaces as underscores.
const PRESET_NAMES: &[(Preset, &str, Conversion)] = &[
    (Preset::Megatron, "lm loss", Conversion::Rename(LOSS)),
    (Preset::Megatron, "learning rate", Conversion::Rename(LR)),
    (Preset::Megatron, "grad norm", Conversion::Rename(GRAD_NORM)),
    (Preset::Megatron, "elapsed time per iteration (ms)", Conversion::Scale(STEP_TIME_S, 1e-3)),
    (Preset::Megatron, "global batch size", Conversion::Rename(SAMPLES)),
    // Megatron-DeepSpeed's newer `key=value` iteration lines.
    (Preset::Megatron, "elapsed_time_per_iteration_ms", Conversion::Scale(STEP_TIME_S, 1e-3)),
    (Preset::Megatron, "global_batch_size", Conversion::Rename(SAMPLES)),
    (Preset::NanoGpt, "loss", Conversion::Rename(LOSS)),
    (Preset::NanoGpt, "train_loss", Conversion::Rename(LOSS)),
    (Preset::NanoGpt, "time", Conversion::Scale(STEP_TIME_S, 1e-3)),
    (Preset::NanoGpt, "val loss", Conversion::Rename(VAL_LOSS)),
    (Preset::NanoGpt, "val_loss", Conversion::Rename(VAL_LOSS)),
    (Preset::NanoGpt, "train loss", Conversion::Rename(EVAL_TRAIN_LOSS)),
    (Preset::NanoGpt, "step_avg", Conversion::Scale(STEP_AVG_S, 1e-3)),
    (Preset::NanoGpt, "train_time", Conversion::Scale(TRAIN_TIME_S, 1e-3)),
    (Preset::DeepSpeed, "lr", Conversion::Rename(LR)),
    (Preset::DeepSpeed, "loss", Conversion::Rename(LOSS)),
    (Preset::DeepSpeed, "actor loss", Conversion::Rename(POLICY_LOSS)),
    (Preset::DeepSpeed, "critic loss", Conversion::Rename(VALUE_LOSS)),
    (Preset::DeepSpeed, "iter time (s)", Conversion::Rename(STEP_TIME_S)),
    (Preset::DeepSpeed, "average reward score", Conversion::Rename(REWARD)),
    // The engine's throughput timer: `CurrSamplesPerSec=30.5` (the step's own rate).
    (Preset::DeepSpeed, "CurrSamplesPerSec", Conversion::Rename(SAMPLES_PER_S)),
    (Preset::Generic, "lm loss", Conversion::Rename(LOSS)),
    (Preset::Generic, "train loss", Conversion::Rename(LOSS)),
    (Preset::Generic, "training loss", Conversion::Rename(LOSS)),
    (Preset::Generic, "total loss", Conversion::Rename(LOSS)),
    (Preset::Generic, "val loss", Conversion::Rename(VAL_LOSS)),
    (Preset::Generic, "valid loss", Conversion::Rename(VAL_LOSS)),
    (Preset::Generic, "valid_loss", Conversion::Rename(VAL_LOSS)),
    (Preset::Generic, "validation loss", Conversion::Rename(VAL_LOSS)),
    (Preset::Generic, "eval loss", Conversion::Rename(VAL_LOSS)),
    (Preset::Generic, "learning rate", Conversion::Rename(LR)),
    // BigDL's `Current learning rate is 0.05`.
    (Preset::Generic, "current learning rate", Conversion::Rename(LR)),
    (Preset::Generic, "grad norm", Conversion::Rename(GRAD_NORM)),
    (Preset::Generic, "gnorm", Conversion::Rename(GRAD_NORM)),
    // llm.c's `norm`, next to its `train loss`.
    (Preset::Generic, "norm", Conversion::Rename(GRAD_NORM)),
    (Preset::Generic, "gradient norm", Conversion::Rename(GRAD_NORM)),
    (Preset::Generic, "grad_norm_total", Conversion::Rename(GRAD_NORM)),
    // torchtitan's tokens per second, fairseq's words (its tokens) per second.
    (Preset::Generic, "tps", Conversion::Rename(TOKENS_PER_S)),
    (Preset::Generic, "wps", Conversion::Rename(TOKENS_PER_S)),
    // CleanRL's `SPS`: environment steps per second.
    (Preset::Generic, "sps", Conversion::Rename(SAMPLES_PER_S)),
    // NeMo's Lightning progress bar.
    (Preset::Generic, "reduced_train_loss", Conversion::Rename(LOSS)),
    (Preset::Generic, "train_step_timing in s", Conversion::Rename(STEP_TIME_S)),
    (Preset::Generic, "train_step_timing", Conversion::Rename(STEP_TIME_S)),
    // Composer's console log (its names lower-cased as text-log words are).
    (Preset::Generic, "metrics/eval/languagecrossentropy", Conversion::Rename(VAL_LOSS)),
    // OLMo's console log.
    (Preset::Generic, "train/crossentropyloss", Conversion::Rename(LOSS)),
    // LitGPT's `iter time: 1106.53ms`.
    (Preset::NanoGpt, "iter time", Conversion::Scale(STEP_TIME_S, 1e-3)),
    // PyTorch's word-language-model example: `ms/batch 11.61`.
    (Preset::Generic, "ms/batch", Conversion::Scale(STEP_TIME_S, 1e-3)),
    // Megatron-LM's evaluation line: `validation loss at iteration 30 | lm loss value: 8.9E+00`.
    (Preset::Megatron, "lm loss value", Conversion::Rename(VAL_LOSS)),
    // Megatron-LM's newer lines: `throughput per GPU (TFLOP/s/GPU): 412.3` is kept as
    // `tflops` next to torchtitan's.
    (Preset::Megatron, "throughput per GPU (TFLOP/s/GPU)", Conversion::Rename("tflops")),
];

/// Loss on held-out data, as trainers print it next to the training loss.
pub const VAL_LOSS: &str = "val_loss";
/// The training loss re-estimated at evaluation time (nanoGPT's `train loss`).
pub const EVAL_TRAIN_LOSS: &str = "eval_train_loss";
/// Mean step time so far (modded-nanogpt's `step_avg`).
pub const STEP_AVG_S: &str = "step_avg_s";
/// Training wall time so far.
pub const TRAIN_TIME_S: &str = "train_time_s";
/// The epoch a step is in, as logged: a counter, not a measure of the training.
pub const EPOCH: &str = "epoch";

/// How a word printed by a trainer of `preset` becomes a metric: the preset's own
/// table first, then the catalog's aliases, else its own name (tidied).
pub fn preset_conversion(preset: Preset, word: &str) -> Conversion {
    if let Some((_, _, c)) = PRESET_NAMES.iter().find(|(p, w, _)| *p == preset && w.eq_ignore_ascii_case(word)) {
        return *c;
    }
    let tidy = tidy_word(word);
    conversion(tidy).unwrap_or(Conversion::Rename(tidy))
}

/// A text log's word as a metric name: lower case, `_` for anything but letters
/// (of any script: `整体测试集上的Loss`, "the test set's loss", is no `loss`),
/// digits and `/`.
pub fn tidy_word(word: &str) -> &'static str {
    // A possessive names a metric of a part (LightGBM's `valid_0's auc`): `valid_0/auc`.
    let possessive;
    let word = if word.as_bytes().contains(&b'\'') && word.contains("'s ") {
        possessive = word.replace("'s ", "/");
        possessive.as_str()
    } else {
        word
    };
    // (Punctuation runs make one `_`: an abbreviation's `Avg. reward` is `avg_reward`.)
    let mut tidy = String::with_capacity(word.len());
    for c in word.trim().chars() {
        match c {
            c if c.is_alphanumeric() || c == '/' => tidy.push(c.to_ascii_lowercase()),
            _ if tidy.ends_with('_') => {}
            _ => tidy.push('_'),
        }
    }
    intern(tidy.trim_matches('_'))
}

/// The loss's aliases that name a mean or a running average of it (kohya's
/// `avr_loss`, Ignite's `Avg loss`): the loss when a line has no other, and
/// the mean itself beside one (BigDL's evaluation: `Loss: 11.48, count: 79,
/// Average Loss: 0.1453`, a sum and its mean).
const MEAN_LOSS_NAMES: &[&str] = &["avg_loss", "avr_loss", "average_loss", "mean_loss", "running_loss", "loss_avg"];

/// A mean of the loss printed beside the loss itself.
pub const MEAN_LOSS: &str = "loss_mean";

/// Whether a text log's word names a mean of the loss ([`MEAN_LOSS_NAMES`]).
pub fn is_mean_loss_word(word: &str) -> bool {
    MEAN_LOSS_NAMES.contains(&tidy_word(word))
}

/// The catalog name closest to an unknown `name` (a likely typo or variant), when
/// one is close: for the ingest report's "did you mean".
pub fn closest(name: &str) -> Option<&'static str> {
    fn distance(a: &str, b: &str) -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for j in 0..b.len() {
                let cur = row[j + 1];
                row[j + 1] = if ca == b[j] { prev } else { 1 + prev.min(row[j]).min(row[j + 1]) };
                prev = cur;
            }
        }
        row[b.len()]
    }
    let lower = name.to_ascii_lowercase();
    // (A mean's spelling is no near miss: `loss_att` is no `loss_avg`.)
    let names = CATALOG.iter().filter(|m| !m.pattern.contains('{')).flat_map(|m| std::iter::once(m.pattern).chain(m.aliases.iter().copied())).filter(|n| !MEAN_LOSS_NAMES.contains(n));
    // (Nor is one whole word swapped for another among the same others: `box_loss`
    // is no `aux_loss`, `cls_loss` no `cri_loss`, `train/val` no `train/ppl`.)
    let words = |n: &str| n.split(['_', '/']).map(str::to_owned).collect::<Vec<_>>();
    let own = words(&lower);
    let another_word = |n: &str| {
        let theirs = words(n);
        // (Or one more word around the same: `actor_loss` is no `actor/kl_loss`;
        // a unit's letter is no word: `train_time` may be `train_time_s`.)
        let more = theirs.len() > own.len() && own.iter().all(|w| theirs.contains(w)) && theirs.iter().any(|w| w.len() > 1 && !own.contains(w));
        more || (theirs.len() == own.len() && own.len() > 1 && own.iter().zip(&theirs).filter(|(a, b)| a != b).count() == 1)
    };
    names
        .map(|n| (distance(&lower, n), n))
        .filter(|(d, n)| *d > 0 && *d <= (n.len() / 4).clamp(1, 3))
        .filter(|(d, n)| *d < 2 || !another_word(n))
        .min()
        .map(|(_, n)| canonical(n))
}

/// The conversion for an input name, or `None` when the name is canonical or unknown
/// (unknown names are kept as metrics under their own name).
pub fn conversion(name: &str) -> Option<Conversion> {
    if let Some((_, c)) = CONVERSIONS.iter().find(|(alias, _)| *alias == name) {
        return Some(*c);
    }
    // A family's own name (the most common word of all, `loss`) is no alias: one
    // look along the families rather than along every alias.
    if CATALOG.iter().any(|m| m.pattern == name) {
        return None;
    }
    if let Some(m) = CATALOG.iter().find(|m| m.aliases.contains(&name)) {
        return Some(Conversion::Rename(m.pattern));
    }
    if is_optimizer_lr(name) {
        return Some(Conversion::Rename(LR));
    }
    // A rate named by its unit (`tok/s`, `samples/sec`, `img/s`), or in words
    // (T5X's `timing/target_tokens_per_second`, RLlib's `num_env_steps_sampled_throughput_per_sec`).
    if let Some(rate) = rate_named_by_unit(name).or_else(|| rate_named_in_words(name)) {
        return Some(Conversion::Rename(rate));
    }
    if let Some(stat) = rllib_learner_stat(name) {
        return conversion(stat).or_else(|| info(stat).map(|m| Conversion::Rename(m.pattern)));
    }
    if let Some(rest) = EVALUATION_PREFIXES.iter().find_map(|p| name.strip_prefix(p)) {
        return (rest == LOSS || canonical(rest) == LOSS).then_some(Conversion::Rename(VAL_LOSS));
    }
    let rest = INPUT_PREFIXES.iter().find_map(|p| name.strip_prefix(p))?;
    match conversion(rest) {
        Some(c) => Some(c),
        None => CATALOG.iter().find(|m| m.pattern == rest).map(|m| Conversion::Rename(m.pattern)),
    }
}

/// A learning-rate monitor's name for the first parameter group's rate:
/// `lr-AdamW` (Lightning), `lr-DecoupledAdamW/group0` (Composer), `lr-Adam/pg1`;
/// a text log's words come lower-cased with `_` for `-` (`lr_adamw/group0`), and
/// then need the group, so `lr_scale` stays a metric of its own.
fn is_optimizer_lr(name: &str) -> bool {
    let (optimizer, group) = match name.split_once('/') {
        Some((o, g)) => (o, Some(g)),
        None => (name, None),
    };
    let first_group = matches!(group, Some("group0" | "pg1"));
    let optimizer_name = |o: &str| !o.is_empty() && o.len() <= 40 && o.chars().all(|c| c.is_ascii_alphanumeric());
    match (optimizer.strip_prefix("lr-"), optimizer.strip_prefix("lr_")) {
        (Some(o), _) => optimizer_name(o) && (group.is_none() || first_group),
        (_, Some(o)) => optimizer_name(o) && first_group,
        _ => false,
    }
}

/// An RLlib learner's result under its flattened path (Ray Tune's `progress.csv`,
/// an export of its results): `info/learner/<policy>/learner_stats/kl` (the old
/// API stack) or `learners/<module>/entropy` (the new one) is the stat's name.
fn rllib_learner_stat(name: &str) -> Option<&str> {
    fn one_segment(rest: &str) -> Option<&str> {
        rest.split_once('/').filter(|(policy, _)| !policy.is_empty() && !policy.starts_with("__")).map(|(_, stat)| stat)
    }
    match (name.strip_prefix("info/learner/"), name.strip_prefix("learners/")) {
        (Some(rest), _) => one_segment(rest)?.strip_prefix("learner_stats/"),
        (_, Some(rest)) => one_segment(rest),
        _ => None,
    }
    .filter(|stat| !stat.is_empty() && !stat.contains('/'))
}

/// The rate a unit names, written after a value (`1230.7 records/second`, `7334
/// tokens/sec`) or as a metric's name (`tok/s`): [`TOKENS_PER_S`] or
/// [`SAMPLES_PER_S`].
pub fn rate_named_by_unit(unit: &str) -> Option<&'static str> {
    const SAMPLE_WORDS: &[&str] = &["records", SAMPLES, "examples", "images", "img", "imgs", "sequences", "seqs", "sentences"];
    const TOKEN_WORDS: &[&str] = &[TOKENS, "tok", "toks"];
    // A count per device may name the device between or after (InternLM's
    // `tokens/gpu/second`, `tokens/s/gpu`): the rate is the same kind.
    const DEVICE_WORDS: &[&str] = &["gpu", "device", "dev", "chip", "rank", "worker"];
    let mut parts = unit.split('/');
    let (what, per) = match (parts.next()?, parts.next()?, parts.next(), parts.next()) {
        (what, per, None, _) => (what, per),
        (what, dev, Some(per), None) if DEVICE_WORDS.iter().any(|d| d.eq_ignore_ascii_case(dev)) => (what, per),
        (what, per, Some(dev), None) if DEVICE_WORDS.iter().any(|d| d.eq_ignore_ascii_case(dev)) => (what, per),
        _ => return None,
    };
    if !matches!(per, "s" | "sec" | "second") {
        return None;
    }
    let among = |words: &[&str]| words.iter().any(|w| w.eq_ignore_ascii_case(what));
    if among(TOKEN_WORDS) {
        Some(TOKENS_PER_S)
    } else if among(SAMPLE_WORDS) {
        Some(SAMPLES_PER_S)
    } else {
        None
    }
}

/// A training rate named in words: what is counted, `per`, and a second
/// (`target_tokens_per_second`, `seqs_per_second_per_core`, `env_steps_sampled_throughput_per_sec`):
/// tokens, or samples (sequences, examples, images, an RL environment's steps or
/// frames). Steps, batches and updates per second are not (a step's rate), nor an
/// evaluation's rate (`eval_samples_per_second`).
fn rate_named_in_words(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    if !lower.contains("per") {
        return None;
    }
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let per = words.iter().position(|w| *w == "per")?;
    if !matches!(words.get(per + 1), Some(&("s" | "sec" | "second" | "secs" | "seconds"))) {
        return None;
    }
    let counted = &words[..per];
    let any = |set: &[&str]| counted.iter().any(|w| set.contains(w));
    if any(&["eval", "val", "valid", "validation", "test", "predict", "inference", "generation", "gen"]) {
        return None;
    }
    if any(&["token", "tokens", "tok", "toks", "words"]) {
        Some(TOKENS_PER_S)
    } else if any(&["sample", "samples", "seq", "seqs", "sequences", "examples", "images", "imgs", "img", "records", "sentences", "frames"]) || (any(&["env"]) && any(&["steps", "step", "timesteps"])) {
        Some(SAMPLES_PER_S)
    } else {
        None
    }
}

/// Whether rlmon knows `name`: a family of the catalog or a name it reads as one.
pub fn knows(name: &str) -> bool {
    info(name).is_some() || conversion(name).is_some()
}

/// How strongly an input name stands for its metric when a record has several that
/// map to one (TRL's PPO logs `policy/entropy_avg` and the proxy `objective/entropy`):
/// the canonical name first, then aliases in the catalog's order.
/// A name read by a rule rather than listed (a rate named in words, a
/// conversion) stands after every listed one.
pub fn alias_rank(name: &str) -> usize {
    let name = INPUT_PREFIXES.iter().find_map(|p| name.strip_prefix(p)).filter(|rest| knows(rest)).unwrap_or(name);
    if CATALOG.iter().any(|m| m.pattern == name) {
        return 0;
    }
    CATALOG.iter().find_map(|m| m.aliases.iter().position(|a| *a == name)).map_or(RULE_RANK, |i| i + 1)
}

/// [`alias_rank`] of a name read by a rule.
const RULE_RANK: usize = 500;

/// The canonical name of a metric (itself when it is not an alias).
pub fn canonical(name: &str) -> &str {
    match conversion(name) {
        Some(Conversion::Rename(c) | Conversion::Scale(c, _) | Conversion::Cumulative(c)) => c,
        None => name,
    }
}

/// Every accepted input name with the canonical metric it becomes, for docs and
/// `--help`: `(alias, canonical, note)`.
pub fn input_names() -> Vec<(&'static str, &'static str, &'static str)> {
    let mut out: Vec<_> = CATALOG.iter().flat_map(|m| m.aliases.iter().map(move |a| (*a, m.pattern, ""))).collect();
    out.push(("wall_time_ms", STEP_TIME_S, "milliseconds, divided by 1000"));
    out.push(("train/entropy_loss", ENTROPY, "minus the entropy (Stable-Baselines3): negated"));
    out.push(("lr-OPTIMIZER", LR, "a learning-rate monitor's first group: lr-AdamW, lr-AdamW/group0, lr-Adam/pg1"));
    out.push(("num_tokens", TOKENS, "running total: the difference is taken"));
    out.push(("tokens_in + tokens_out", TOKENS, "summed when no tokens field is given"));
    out
}

/// The catalog as a Markdown table, as the README lists it (a test keeps the two
/// the same).
pub fn markdown_table() -> String {
    let mut out = String::from("| metric | label | unit | better | series | pane | accepted as |\n|---|---|---|---|---|---|---|\n");
    for m in CATALOG {
        let unit = match m.unit {
            Unit::Ratio => "",
            Unit::Count => "count",
            Unit::Seconds => "s",
            Unit::Bytes => "bytes",
            Unit::PerSecond => "/s",
            Unit::Percent => "%",
            Unit::Watts => "W",
            Unit::Celsius => "°C",
            Unit::Megahertz => "MHz",
        };
        let better = match m.better {
            Higher => "higher",
            Lower => "lower",
            Neither => "",
        };
        let mut series = match m.kind {
            PerStep => "per step",
            Derived => "derived",
            DerivedStored => "derived, stored",
            Telemetry => "telemetry",
        }
        .to_owned();
        if m.replicas_agree {
            series.push_str("; replicas agree");
        }
        if m.signed {
            series.push_str("; signed");
        }
        let pane = match m.pane {
            P::Training => "training",
            P::Throughput => "throughput",
            P::Rl => "RL health",
            P::Moe => "MoE",
            P::Representation => "representation",
            P::Hardware => "hardware",
            P::None => "",
        };
        let mut aliases: Vec<String> = m.aliases.iter().map(|a| format!("`{a}`")).collect();
        aliases.extend(CONVERSIONS.iter().filter(|(_, c)| matches!(c, Conversion::Scale(n, _) | Conversion::Cumulative(n) if *n == m.pattern)).map(|(a, _)| format!("`{a}`")));
        if m.pattern == TOKENS {
            aliases.push(format!("`{TOKENS_IN}` + `{TOKENS_OUT}`"));
        }
        out.push_str(&format!("| `{}` | {} | {unit} | {better} | {series} | {pane} | {} |\n", m.pattern, m.label, aliases.join(", ")));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn another_trainers_names_for_an_experts_load_are_rlmons() {
        for (name, want) in [
            ("moe/layer_27/expert_0_load", Some("moe/L27/load/E0")),
            ("moe/layer_1/tokens_per_expert/7", Some("moe/L1/load/E7")),
            ("router/l3/e5/count", Some("moe/L3/load/E5")),
            ("expert_load/expert3", Some("moe/L0/load/E3")),
            ("moe/L2/load/E4", Some("moe/L2/load/E4")),
            ("moe/layer_15/dropped_token_frac", Some("moe/L15/dropped_frac")),
            ("moe/dropped_token_frac", Some("moe/dropped_frac")),
            ("experts/fraction_tokens_left_behind", Some("moe/dropped_frac")),
            ("overflow_expert1", Some("moe/dropped_frac")),
            ("decoder/layers_3/moe/overflow_expert2", Some("moe/L3/dropped_frac")),
            ("experts/expert_usage", None),
            ("unused_expert1_count", None),
            ("moe/layer_3/load_entropy_norm", Some("moe/L3/entropy_norm")),
            ("router/block2/normalized_load_entropy", Some("moe/L2/entropy_norm")),
            ("moe/expert_usage_entropy_normalized", Some("moe/L0/entropy_norm")),
            // A router's entropy per token is another quantity.
            ("moe/layer_3/router_logit_entropy_norm", None),
            ("moe/layer_3/load_entropy", None),
            // A count of experts, other quantities: none.
            ("moe/num_experts", None),
            ("moe/layer_2/max_load_ratio", None),
            ("moe/layer_3/expert_5/grad_norm", None),
            ("moe/layer_3/router_z_loss", None),
            ("layer_3/expert_5/bias", None),
            ("loss", None),
        ] {
            assert_eq!(moe_alias(name).as_deref(), want, "{name}");
        }
    }

    #[test]
    fn a_trainers_own_name_for_the_memory_in_use_is_the_gpus_or_the_hosts() {
        let gpu = |unit: Option<f64>, rank| Some((MEM_GPU_BYTES, unit, rank));
        let host = |unit: Option<f64>, rank| Some((MEM_RSS_BYTES, unit, rank));
        for (name, want) in [
            ("memory/current_allocated_mem", gpu(None, 0)),
            ("memory/peak_reserved_mem", gpu(None, 2)),
            ("current_memory_reserved", gpu(None, 1)),
            ("max_mem", gpu(None, 2)),
            ("memallocated", gpu(None, 0)),
            ("MemAllocated", gpu(None, 0)),
            ("gpu.0.memoryAllocated", gpu(None, 0)),
            ("peak_memory_alloc", gpu(None, 2)),
            ("perf/max_memory_allocated_gb", gpu(Some(GIB), 2)),
            ("perf/cpu_memory_used_gb", host(Some(GIB), 0)),
            ("host_rss_mb", host(Some(MIB), 0)),
            ("ram", host(None, 0)),
            ("System/Peak GPU Memory", gpu(None, 2)),
            ("memory", gpu(None, 0)),
            ("max_reserved", gpu(None, 2)),
            ("max_allocated", gpu(None, 2)),
            // Shares, rates, counts and other quantities are none.
            ("perf/ram_util_percent", None),
            ("memory/alloc_retries", None),
            ("mem_bandwidth_gbps", None),
            ("gpu_memory_total_gb", None),
            ("memory_free", None),
            ("val_gpu_max_cached_mem_gb", None),
            ("memo", None),
            ("parameters", None),
            ("framerate", None),
            ("num_params_in_memory", None),
        ] {
            assert_eq!(memory_alias(name), want, "{name}");
        }
        assert_eq!((memory_unit_of(27.35), memory_unit_of(3108.0), memory_unit_of(2.4e10)), (GIB, MIB, 1.0));
    }

    #[test]
    fn a_loss_logged_only_in_parts_is_read_from_its_parts() {
        for (name, want) in [
            ("train/box_loss", true),
            ("train/dfl_loss", true),
            ("loss_cls", true),
            ("loss_rpn_bbox", true),
            ("val/box_loss", false),
            ("loss", false),
            ("val_loss", false),
            ("loss_scale", false),
            ("G_loss", false),
            ("d_loss", false),
            ("loss_G", false),
            ("aux_loss", false),
            ("avg_loss", false),
            ("box", false),
        ] {
            assert_eq!(is_loss_part(name), want, "{name}");
        }
    }

    #[test]
    fn a_rate_named_in_words_is_a_tokens_or_samples_rate() {
        for (name, want) in [
            ("timing/target_tokens_per_second", Some(TOKENS_PER_S)),
            ("timing/seqs_per_second_per_core", Some(SAMPLES_PER_S)),
            ("num_env_steps_sampled_throughput_per_sec", Some(SAMPLES_PER_S)),
            ("images_per_second", Some(SAMPLES_PER_S)),
            ("interval_tokens_per_second_per_device", Some(TOKENS_PER_S)),
            ("timing/steps_per_second", None),
            ("eval_samples_per_second", None),
            ("tokens_per_batch", None),
            ("reward_per_episode", None),
        ] {
            assert_eq!(rate_named_in_words(name), want, "{name}");
        }
    }

    #[test]
    fn no_familys_name_is_another_familys_alias_or_a_conversion() {
        for m in CATALOG {
            assert!(!CATALOG.iter().any(|other| other.aliases.contains(&m.pattern)), "{} is an alias", m.pattern);
            assert!(!CONVERSIONS.iter().any(|(alias, _)| *alias == m.pattern), "{} is converted", m.pattern);
        }
    }

    #[test]
    fn a_near_miss_is_a_typo_not_another_word_before_the_same_rest() {
        assert_eq!(closest("gradnrom"), Some(GRAD_NORM));
        assert_eq!(closest("learning_rat"), Some(LR));
        // YOLO's `box_loss` and `cls_loss` are losses of their own, no misspelt `aux_loss`/`cri_loss`.
        assert_eq!(closest("box_loss"), None);
        assert_eq!(closest("cls_loss"), None);
        assert_eq!(closest("train/val"), None);
        assert_eq!(closest("actor_loss"), None);
        assert_eq!(closest("train_time"), Some(TRAIN_TIME_S));
    }

    #[test]
    fn an_rllib_learners_flattened_stats_are_its_own() {
        assert_eq!(canonical("info/learner/default_policy/learner_stats/kl"), KL);
        assert_eq!(canonical("info/learner/policy_0/learner_stats/entropy"), ENTROPY);
        assert_eq!(canonical("learners/default_policy/entropy"), ENTROPY);
        // The totals over modules, and a stat that is not a metric, stay as written.
        assert_eq!(canonical("learners/__all_modules__/num_trainable_parameters"), "learners/__all_modules__/num_trainable_parameters");
        assert_eq!(canonical("info/learner/default_policy/num_agent_steps_trained"), "info/learner/default_policy/num_agent_steps_trained");
    }

    #[test]
    fn names_other_trainers_print_are_the_catalogs() {
        // TorchRL's tutorial prints `average reward=`; fairseq2 `Elements per Second`.
        assert_eq!(canonical("average_reward"), REWARD);
        assert_eq!(canonical("elements_per_second"), TOKENS_PER_S);
        // fairseq2's `NLL Loss` is a metric of its own, the loss's stand-in.
        assert_eq!(canonical("nll_loss"), NLL_LOSS);
        assert!(info(NLL_LOSS).is_some() && stand_ins(LOSS).contains(&NLL_LOSS));
        // A perplexity is the loss's exponent: its logarithm is judged.
        assert_eq!((canonical("ppl"), canonical("train/perplexity")), (PERPLEXITY, PERPLEXITY));
        assert!(stand_ins(LOSS).contains(&PERPLEXITY));
        assert!((as_judged(PERPLEXITY, 2.5f64.exp()) - 2.5).abs() < 1e-12);
        assert!(as_judged(PERPLEXITY, 0.0).is_nan() && as_judged(LOSS, 0.0) == 0.0);
    }

    #[test]
    fn a_rate_named_by_its_unit_is_that_rate() {
        assert_eq!(canonical("tok/s"), TOKENS_PER_S);
        assert_eq!(canonical("Tokens/sec"), TOKENS_PER_S);
        assert_eq!(canonical("img/s"), SAMPLES_PER_S);
        assert_eq!(canonical("samples/second"), SAMPLES_PER_S);
        // Not a count a second, or not per second.
        assert_eq!(canonical("it/s"), "it/s");
        assert_eq!(canonical("tokens/step"), "tokens/step");
    }

    #[test]
    fn an_evaluations_prefix_makes_the_loss_the_validation_loss() {
        use super::{canonical, VAL_LOSS};
        for name in ["validation/main/loss", "val/loss", "test/loss", "valid/train_loss", "eval.loss"] {
            assert_eq!(canonical(name), VAL_LOSS, "{name}");
        }
        assert_eq!(canonical("main/loss"), super::LOSS);
        assert_eq!(canonical("validation/main/accuracy"), "validation/main/accuracy");
        assert_eq!(canonical("val/kl"), "val/kl", "only the loss");
    }

    #[test]
    fn openmetric_names_move_dimensions_to_labels_and_spell_units() {
        let om = |n: &str| openmetric(n).map(|m| (m.family, m.labels.into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")));
        assert_eq!(om("tokens_per_s"), Some(("rlmon_tokens_per_second".into(), "".into())));
        assert_eq!(om("step_time_s"), Some(("rlmon_step_time_seconds".into(), "".into())));
        assert_eq!(om("mem/gpu_bytes"), Some(("rlmon_mem_gpu_bytes".into(), "".into())));
        assert_eq!(om("gpu3/util_pct"), Some(("rlmon_gpu_util_percent".into(), "gpu=3".into())));
        assert_eq!(om("gpu0/power_w"), Some(("rlmon_gpu_power_watts".into(), "gpu=0".into())));
        assert_eq!(om("moe/L1/load/E7"), Some(("rlmon_moe_load".into(), "layer=1,expert=7".into())));
        assert_eq!(om("moe/L2/balance"), Some(("rlmon_moe_balance".into(), "layer=2".into())));
        assert_eq!(om("ndt/L0/stable_rank"), Some(("rlmon_ndt_stable_rank".into(), "layer=0".into())));
        assert_eq!(om("node7/host/cpu_pct"), Some(("rlmon_host_cpu_percent".into(), "host=node7".into())));
        assert_eq!(om("node7/gpu1/temp_c"), Some(("rlmon_gpu_temp_celsius".into(), "host=node7,gpu=1".into())));
        assert_eq!(om("my_own_metric"), None);
    }

    #[test]
    fn remote_names_split_into_host_and_local_telemetry() {
        assert_eq!(remote("node7", &gpu(0).util_pct()), "node7/gpu0/util_pct");
        assert_eq!(parse_remote("node7/gpu0/util_pct"), Some(("node7", "gpu0/util_pct")));
        assert_eq!(parse_remote("node7/host/mem_used_bytes"), Some(("node7", "host/mem_used_bytes")));
        assert_eq!(parse_remote("gpu0/util_pct"), None);
        assert_eq!(parse_remote("host/cpu_pct"), None);
        assert_eq!(parse_remote("moe/L1/balance"), None);
        assert!(is_timing_or_resource("node7/gpu0/mem_used_bytes"));
    }
    use super::*;

    #[test]
    fn aliases_map_to_canonical_names() {
        assert_eq!(canonical("train/loss"), "loss");
        assert_eq!(canonical("objective/kl"), "kl");
        assert_eq!(canonical("policy/approxkl_avg"), "approx_kl");
        assert_eq!(canonical("loss"), "loss");
        assert_eq!(canonical("my_custom_metric"), "my_custom_metric");
        // OpenAI Baselines' PPO table (tests/fixtures/real/baselines-975-ppo-kl.log).
        assert_eq!((canonical("vf_loss"), canonical("pol_surr")), (VALUE_LOSS, POLICY_LOSS));
    }

    #[test]
    fn learning_rate_monitors_name_the_first_group() {
        for name in ["lr-AdamW", "lr-DecoupledAdamW/group0", "lr-Adam/pg1", "lr_decoupledadamw/group0"] {
            assert_eq!(canonical(name), LR, "{name}");
        }
        for name in ["lr-AdamW/group1", "lr-Adam/pg2", "lr_scale", "lr_warmup_steps", "lr-", "lr-a b"] {
            assert_ne!(canonical(name), LR, "{name}");
        }
    }

    #[test]
    fn conversions_carry_their_arithmetic() {
        assert_eq!(conversion("wall_time_ms"), Some(Conversion::Scale("step_time_s", 1e-3)));
        assert_eq!(conversion("gpu_memory_gb"), Some(Conversion::Scale(MEM_GPU_BYTES, GIB)));
        assert_eq!(conversion("max_memory_allocated"), None, "a peak is not the memory in use");
        // Chinese scripts' training loss, loss, validation loss and learning rate.
        assert_eq!([conversion("训练损失"), conversion("损失"), conversion("验证损失"), conversion("学习率")], [Some(Conversion::Rename(LOSS)), Some(Conversion::Rename(LOSS)), Some(Conversion::Rename(VAL_LOSS)), Some(Conversion::Rename(LR))]);
        assert_eq!(conversion("kl_divergence"), Some(Conversion::Rename(KL)));
        // The names RL trainers log a KL to the reference under (verl, OpenRLHF).
        for kl in ["kl_loss", "actor/kl_loss", "train/kl_loss", "critic/kl", "objective/kl"] {
            assert_eq!(conversion(kl), Some(Conversion::Rename(KL)), "{kl}");
        }
        assert_eq!(conversion("num_tokens"), Some(Conversion::Cumulative("tokens")));
        assert_eq!(conversion("beta"), Some(Conversion::Rename("kl_coef")));
        assert_eq!(conversion("loss"), None);
        assert_eq!(conversion("train/kl"), Some(Conversion::Rename("kl")), "a logger's prefix");
        assert_eq!(conversion("train/actor_lr"), Some(Conversion::Rename("lr")));
        assert_eq!(conversion("train/my_metric"), None);
        assert_eq!((conversion("train.kl"), conversion("training.lr")), (Some(Conversion::Rename("kl")), Some(Conversion::Rename("lr"))));
        // CLU's training summaries (`train_grad_norm`, `train_learning_rate`).
        assert_eq!((conversion("train_grad_norm"), conversion("train_learning_rate")), (Some(Conversion::Rename(GRAD_NORM)), Some(Conversion::Rename(LR))));
        // torchtune's PPO statistics: the reward model's `scores`, `response_lengths`.
        assert_eq!((conversion("scores"), conversion("response_lengths")), (Some(Conversion::Rename(REWARD)), Some(Conversion::Rename(RESPONSE_LEN))));
        assert!(alias_rank("scores") < alias_rank("rlhf_reward"), "the score before the score less its KL penalty");
        assert!(alias_rank("policy/entropy_avg") < alias_rank("objective/entropy"));
        assert_eq!(alias_rank("entropy"), 0);
    }

    #[test]
    fn builders_and_parsers_round_trip() {
        assert_eq!(gpu(3).util_pct(), "gpu3/util_pct");
        assert_eq!(Gpu::parse("gpu3/util_pct"), Some((3, "util_pct")));
        assert_eq!(moe(1).load(7), "moe/L1/load/E7");
        assert_eq!(MoeLayer::parse_load("moe/L1/load/E7"), Some((1, 7)));
        assert_eq!(MoeLayer::parse("moe/L2/balance"), Some((2, "balance")));
        assert_eq!(MoeLayer::parse("moe/L2/load/E0"), None, "a load is not a layer summary");
        assert_eq!(ndt(0).measure("stable_rank"), "ndt/L0/stable_rank");
        assert_eq!(NdtLayer::parse("ndt/L4/cum_energy_90"), Some((4, "cum_energy_90")));
    }

    #[test]
    fn every_built_name_has_an_entry() {
        for m in GPU_MEASURES {
            assert!(info(&gpu(2).measure(m)).is_some(), "{m}");
        }
        for m in MOE_DERIVED.iter().chain(&[MOE_DROPPED_FRAC, MOE_ENTROPY_NORM]) {
            assert!(info(&moe(5).measure(m)).is_some(), "{m}");
        }
        for m in NDT_MEASURES {
            assert!(info(&ndt(1).measure(m)).is_some(), "{m}");
        }
        assert_eq!(info(&moe(0).load(3)).unwrap().pane, PaneHint::Moe);
        assert!(info("gpu0/bogus").is_none());
    }

    #[test]
    fn entries_are_unique_and_aliases_unambiguous() {
        let mut patterns: Vec<_> = CATALOG.iter().map(|m| m.pattern).collect();
        patterns.sort();
        patterns.dedup();
        assert_eq!(patterns.len(), CATALOG.len(), "one entry per family");
        let aliases: Vec<_> = CATALOG.iter().flat_map(|m| m.aliases.iter()).collect();
        for a in &aliases {
            assert!(info(a).is_none(), "alias {a} is also a canonical name");
            assert_eq!(aliases.iter().filter(|b| b == &a).count(), 1, "alias {a} maps to one metric");
        }
    }

    #[test]
    fn properties_decide_comparisons() {
        assert!(is_timing_or_resource(STEP_TIME_S) && is_timing_or_resource(TOKENS_PER_S) && is_timing_or_resource(MEM_GPU_BYTES));
        assert!(!is_timing_or_resource(LOSS) && !is_timing_or_resource("my_metric"));
        assert!(is_timing_or_resource("my_fwd_time_s"));
        assert!(replicas_agree(LOSS) && replicas_agree(KL) && !replicas_agree(STEP_TIME_S));
        assert_eq!(better(LOSS), Better::Lower);
        assert_eq!(better(REWARD), Better::Higher);
        assert_eq!(better("eval/accuracy"), Better::Higher);
        assert!(is_signed(POLICY_LOSS) && !is_signed(LOSS));
        assert_eq!(in_pane(PaneHint::Rl).collect::<Vec<_>>(), vec![REWARD, KL, ENTROPY, CLIP_FRAC, RESPONSE_LEN]);
        assert!(is_rl_run([LOSS, KL].into_iter()) && !is_rl_run([LOSS].into_iter()));
    }

    #[test]
    fn the_catalog_says_which_rl_metrics_are_objectives_and_which_are_held_out_scores() {
        // A policy loss is an objective; so is an RL run's `loss`.
        assert_eq!(loss_role(POLICY_LOSS, false), LossRole::PolicyObjective);
        assert_eq!(loss_role(canonical("actor/pg_loss"), true), LossRole::PolicyObjective);
        assert_eq!(loss_role(LOSS, true), LossRole::PolicyObjective, "an RL trainer's total objective");
        assert_eq!(loss_role(LOSS, false), LossRole::Loss, "a model's loss, signed or not, outside RL");
        assert_eq!(loss_role(VALUE_LOSS, true), LossRole::Loss);
        for held_out in ["eval_acc", "eval_accuracy", "val_acc", "valid/accuracy", "pass@1", "eval/pass@8", "accuracy", "eval/reward", "eval_reward_mean", "test/score", "gsm8k/accuracy", "math_score", "math500/acc", "reward_gold", "heldout_f1", "evaluation/episode_reward_mean", "evaluation/env_runners/episode_reward_mean", "evaluation/env_runners/episode_return_mean", "eval/mean_return", "eval/solve_rate", "test_win_rate", "eval/exact_match", "val_bleu", "eval_rouge1", "val_miou", "validation/sacrebleu", "val_bbox_map"] {
            assert!(is_held_out_score(held_out), "{held_out}");
        }
        for part in ["rewards/accuracy_reward/mean", "rewards/accuracy_reward", "rewards/correctness_reward_func", "train/rewards/exact_match_reward", "reward/acc"] {
            assert!(is_correctness_reward(part) && !is_held_out_score(part), "{part}");
        }
        for not in ["reward", "rewards/format_reward/mean", "rewards/accuracy_reward/std", "eval_acc", "reward_std", "rewards/strict_format_reward_func"] {
            assert!(!is_correctness_reward(not), "{not}");
        }
        for not in ["reward", "rewards/accuracy_reward", "train_acc", "train/accuracy", "eval_loss", "val_loss", "eval/reward_std", "interval_score_len", "kl", "passage", "pass@", "accumulated", "mathematics_loss", "env_runners/episode_return_mean", "evaluation/env_runners/episode_return_max", "evaluation/env_runners/episode_len_mean", "train/solve_rate", "win_rate_std", "bleu", "train_miou", "val_perplexity"] {
            assert!(!is_held_out_score(not), "{not}");
        }
    }
}
