//! The config file as written. Field names are the file's keys (snake_case); unknown
//! keys are rejected so that a typo never silently falls back to a default. Nothing
//! here is checked or defaulted: that is `resolve`'s work.
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// Session name; defaults to the config file's stem.
    pub session: Option<String>,
    /// A recorded session to compare the live runs against (`--baseline` wins).
    pub baseline: Option<String>,
    #[serde(rename = "run", default)]
    pub runs: Vec<RawRun>,
    /// `[telemetry]`: figures from other machines.
    pub telemetry: Option<RawTelemetry>,
    /// `[[notify]]`: where alerts are sent.
    #[serde(default)]
    pub notify: Vec<RawNotify>,
}

/// `[[notify]]`: a webhook (`url`, or `url_env` naming the variable that holds
/// it) or a `command`, and which notices it gets.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNotify {
    pub url: Option<String>,
    pub url_env: Option<String>,
    pub command: Option<Vec<String>>,
    /// json (default), slack, discord or ntfy.
    pub format: Option<String>,
    /// info, warn (default) or critical.
    pub min_severity: Option<String>,
    /// Only these alert kinds.
    pub kinds: Option<Vec<String>>,
    /// Also each run's end.
    pub on_end: Option<bool>,
    /// Seconds between two messages at most (critical alerts and run ends aside).
    pub cooldown_s: Option<f64>,
    /// Alerts within this many seconds of each other go as one message.
    pub group_s: Option<f64>,
}

/// `on_critical = "stop"`, a list of kinds (stopped on at warn or critical), or a
/// table `{ signal = "USR1", kinds = [...] }` / `{ stop = true, kinds = [...] }`.
#[derive(Debug, Clone, PartialEq)]
pub enum RawOnCritical {
    Word(String),
    Kinds(Vec<String>),
    Table { signal: Option<String>, stop: Option<bool>, kinds: Option<Vec<String>> },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOnCriticalTable {
    signal: Option<String>,
    stop: Option<bool>,
    kinds: Option<Vec<String>>,
}

impl<'de> Deserialize<'de> for RawOnCritical {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OnCriticalVisitor;
        impl<'de> Visitor<'de> for OnCriticalVisitor {
            type Value = RawOnCritical;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"stop\", a list of alert kinds, or a table { signal = \"USR1\" }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawOnCritical, E> {
                Ok(RawOnCritical::Word(v.to_owned()))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawOnCritical, A::Error> {
                let mut kinds = Vec::new();
                while let Some(k) = seq.next_element::<String>()? {
                    kinds.push(k);
                }
                Ok(RawOnCritical::Kinds(kinds))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<RawOnCritical, A::Error> {
                let t = RawOnCriticalTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(RawOnCritical::Table { signal: t.signal, stop: t.stop, kinds: t.kinds })
            }
        }
        deserializer.deserialize_any(OnCriticalVisitor)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTelemetry {
    /// `[[telemetry.scrape]]`: Prometheus exporters (node_exporter, dcgm-exporter) read directly.
    #[serde(default)]
    pub scrape: Vec<RawScrape>,
    /// `[telemetry.prometheus]`: the same figures from a central Prometheus server.
    pub prometheus: Option<RawPrometheus>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPrometheus {
    /// `http://prom:9090`
    pub server: String,
    /// Label matchers that pick the job's exporters: `{job="train-42"}`.
    pub selector: Option<String>,
    /// Seconds between queries (default 2).
    pub interval_s: Option<f64>,
    /// Seconds of history read at start (default 300; 0 for none).
    pub history_s: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScrape {
    pub url: String,
    /// Seconds between scrapes (default 2).
    pub interval_s: Option<f64>,
    /// The name its figures go under (`node7/gpu0/util_pct`); the URL's host when left out.
    pub host: Option<String>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RawWorkload {
    /// Decoder-only transformer language model trained with libtorch.
    Lm,
    /// RL fine-tuning (PPO or GRPO) of the lm model against a frozen reference.
    Rlhf,
    /// The user's own program, whose output rlmon reads.
    Command,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRun {
    pub name: String,
    pub workload: RawWorkload,
    pub device: Option<String>,
    pub seed: Option<u64>,
    /// Required for the built-in workloads; a command run's total, when known.
    pub steps: Option<u64>,
    pub batch_size: Option<u64>,
    pub intra_op_threads: Option<RawThreads>,
    pub model: Option<RawModel>,
    pub optimizer: Option<RawOptimizer>,
    pub data: Option<RawData>,
    /// Copies of this run with the same seed and data order (`name#1..N`).
    pub replicas: Option<u64>,
    /// Settings for bitwise-repeatable runs.
    pub deterministic: Option<bool>,
    pub faults: Option<RawFaults>,
    pub rlhf: Option<RawRlhf>,
    pub moe: Option<RawMoe>,
    pub ndt: Option<RawNdt>,
    /// Price of the run's hardware per hour, for cost figures.
    pub price_per_hour: Option<f64>,
    /// Detector overrides by alert kind: `[run.health.loss_spike]`.
    pub health: Option<std::collections::BTreeMap<String, RawHealthKind>>,
    /// `workload = "command"`: the program and its arguments (argv, no shell).
    pub command: Option<Vec<String>>,
    /// The command's working directory, relative to the config file.
    pub cwd: Option<String>,
    /// Variables added to the command's environment.
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// Where the command's metrics come from.
    pub metrics: Option<RawMetrics>,
    /// The metrics' format (a `--format` name); detected when left out.
    pub format: Option<String>,
    /// Seconds between SIGTERM and SIGKILL when the command is stopped.
    pub grace_s: Option<f64>,
    /// What rlmon does to the run on a critical alert: off unless given.
    pub on_critical: Option<RawOnCritical>,
}

/// `metrics = "stdout"` or `"stderr"`, `metrics = { file = "..." }`, `{ tensorboard = "dir" }`, `{ glob = "..." }`, `{ mlflow = "mlruns" }`, `{ wandb = "wandb" }` or `{ trackio = "project" }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawMetrics {
    /// A name: "stdout" or "stderr" (checked when resolved, with its place).
    Named(String),
    File(String),
    /// A folder of TensorBoard event files.
    TensorBoard(String),
    /// `{ glob = "logs/rank*.jsonl" }`: one stream per matching file.
    Glob(String),
    /// `{ mlflow = "mlruns" }`: the MLflow file store the program logs to.
    MlFlow(String),
    /// `{ wandb = "wandb" }`: the folder W&B writes its runs to.
    Wandb(String),
    /// `{ trackio = "project" }`: a trackio project (its name, or its database).
    Trackio(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetricsTable {
    file: Option<String>,
    tensorboard: Option<String>,
    glob: Option<String>,
    mlflow: Option<String>,
    wandb: Option<String>,
    trackio: Option<String>,
}

impl<'de> Deserialize<'de> for RawMetrics {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetricsVisitor;
        impl<'de> Visitor<'de> for MetricsVisitor {
            type Value = RawMetrics;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"stdout\", \"stderr\" or a table { file = \"path\" }, { tensorboard = \"dir\" }, { glob = \"logs/rank*.jsonl\" }, { mlflow = \"mlruns\" }, { wandb = \"wandb\" } or { trackio = \"project\" }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawMetrics, E> {
                Ok(RawMetrics::Named(v.to_owned()))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<RawMetrics, A::Error> {
                let table = RawMetricsTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                match (table.file, table.tensorboard, table.glob, table.mlflow, table.wandb, table.trackio) {
                    (Some(file), None, None, None, None, None) => Ok(RawMetrics::File(file)),
                    (None, Some(dir), None, None, None, None) => Ok(RawMetrics::TensorBoard(dir)),
                    (None, None, Some(glob), None, None, None) => Ok(RawMetrics::Glob(glob)),
                    (None, None, None, Some(store), None, None) => Ok(RawMetrics::MlFlow(store)),
                    (None, None, None, None, Some(dir), None) => Ok(RawMetrics::Wandb(dir)),
                    (None, None, None, None, None, Some(project)) => Ok(RawMetrics::Trackio(project)),
                    _ => Err(de::Error::custom("metrics: give one of `file`, `tensorboard`, `glob`, `mlflow`, `wandb` or `trackio`")),
                }
            }
        }
        deserializer.deserialize_any(MetricsVisitor)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMoe {
    pub experts: u64,
    pub top_k: Option<u64>,
    pub layers: Option<Vec<u64>>,
    pub capacity_factor: Option<f64>,
    pub aux_loss_coef: Option<f64>,
    pub z_loss_coef: Option<f64>,
    pub bias_balancing: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNdt {
    pub every: Option<u64>,
    pub layers: Option<Vec<u64>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawFaults {
    pub lr_spike: Option<RawLrSpike>,
    pub nan_at: Option<u64>,
    pub grad_scale: Option<RawAtFactor>,
    pub kl_coef_zero_at: Option<u64>,
    pub reward_gaming_at: Option<u64>,
    pub router_collapse_at: Option<u64>,
    pub memory_leak_mb_per_step: Option<f64>,
    pub oom_at: Option<u64>,
    pub abort_at: Option<u64>,
    pub segfault_at: Option<u64>,
    pub slowdown: Option<RawAtFactor>,
    pub nondeterminism: Option<RawNondeterminism>,
}

#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct RawLrSpike {
    pub at: u64,
    pub factor: f64,
    pub steps: Option<u64>,
}

#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct RawAtFactor {
    pub at: u64,
    pub factor: f64,
}

#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct RawNondeterminism {
    pub at: u64,
    pub replica: Option<u64>,
}

/// Overrides of one alert kind's detector; see `health::config::defaults` for
/// each kind's units.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawHealthKind {
    pub enabled: Option<bool>,
    pub warn: Option<f64>,
    pub critical: Option<f64>,
    pub warmup: Option<u32>,
    pub persistence: Option<u32>,
    pub cooldown: Option<u32>,
    pub window: Option<u32>,
    /// The metric the kind watches instead of its default (`val_loss` for loss_spike).
    pub metric: Option<String>,
    /// `stalled`: the multiple of the run's usual time between new steps that is a stall (its `warn`).
    pub k: Option<f64>,
    /// `stalled`: the shortest silence that is a stall, in seconds (its `critical`).
    pub floor_s: Option<f64>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    pub layers: Option<u64>,
    pub d_model: Option<u64>,
    pub heads: Option<u64>,
    pub seq_len: Option<u64>,
    pub vocab: Option<u64>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawOptimizer {
    pub lr: Option<f64>,
    pub betas: Option<[f64; 2]>,
    pub weight_decay: Option<f64>,
    pub warmup_steps: Option<u64>,
    pub grad_clip: Option<f64>,
    pub min_lr_ratio: Option<f64>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RawDataSource {
    /// Text generated deterministically by rlmon from the run's seed.
    Synthetic,
    /// The user's own text: a file, or every file in a folder.
    Text,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawData {
    pub source: RawDataSource,
    pub path: Option<String>,
}

/// `[run.rlhf]`: the RL fine-tuning keys of `workload = "rlhf"`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawRlhf {
    pub algorithm: Option<RawAlgorithm>,
    pub reward: Option<RawReward>,
    /// The text `reward = "target"` counts.
    pub target: Option<String>,
    pub kl_coef: Option<f64>,
    pub kl_estimator: Option<RawKlEstimator>,
    pub adaptive_kl: Option<RawAdaptiveKl>,
    pub group_size: Option<u64>,
    pub prompt_len: Option<u64>,
    pub max_new_tokens: Option<u64>,
    /// One character that ends a response.
    pub stop: Option<String>,
    pub temperature: Option<f64>,
    pub clip_range: Option<f64>,
    pub gamma: Option<f64>,
    pub lambda: Option<f64>,
    pub vf_coef: Option<f64>,
    pub epochs: Option<u64>,
    pub minibatches: Option<u64>,
    pub pretrain_steps: Option<u64>,
    pub pretrain_lr: Option<f64>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RawAlgorithm {
    Ppo,
    Grpo,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RawKlEstimator {
    K1,
    K3,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RawReward {
    Target,
    Arithmetic,
    Length,
}

#[derive(Debug, Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
pub struct RawAdaptiveKl {
    pub target: f64,
    pub horizon: Option<f64>,
}

/// `intra_op_threads = "auto"` or a positive integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawThreads {
    Auto,
    Fixed(u64),
}

impl<'de> Deserialize<'de> for RawThreads {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ThreadsVisitor;
        impl<'de> Visitor<'de> for ThreadsVisitor {
            type Value = RawThreads;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"auto\" or a positive integer")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawThreads, E> {
                if v == "auto" {
                    Ok(RawThreads::Auto)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawThreads, E> {
                if v >= 1 {
                    Ok(RawThreads::Fixed(v as u64))
                } else {
                    Err(E::invalid_value(de::Unexpected::Signed(v), &self))
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawThreads, E> {
                if v >= 1 {
                    Ok(RawThreads::Fixed(v))
                } else {
                    Err(E::invalid_value(de::Unexpected::Unsigned(v), &self))
                }
            }
        }
        deserializer.deserialize_any(ThreadsVisitor)
    }
}
