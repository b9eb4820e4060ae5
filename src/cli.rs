//! The command line (design.md, "Command line"). Parsing only: `crate::run` acts on it.
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "rlmon",
    version,
    about = "A terminal monitor for ML training runs",
    long_about = "rlmon launches training runs (real libtorch training, or your own command) \
                  and shows throughput, GPU, loss and health live; every session can be \
                  recorded, replayed and compared.",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Launch the runs a config describes and monitor them live
    Watch(WatchArgs),
    /// Run the health detectors over a JSONL metrics log or a recorded session
    Check(CheckArgs),
    /// Play a recorded session (snapshot or journal) through the live display or headless
    Replay(ReplayArgs),
    /// Compare two recorded sessions: divergence, throughput and memory regressions
    Compare(CompareArgs),
    /// Write a recorded session's points as CSV or JSONL
    Export(ExportArgs),
    /// Report libtorch, CUDA, NVML, thread and terminal facts
    Doctor(DoctorArgs),
    /// Print a shell completion script to stdout
    Completions {
        /// The shell to complete for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Session config (TOML). Looked up as given, then under workloads/.
    /// Not needed with --attach. With neither, the recent runs of rlmon's Python
    /// client under ./rlmon-runs (or RLMON_DIR) are followed
    #[arg(short, long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Follow a job rlmon did not start: each PATH a metrics file (JSONL, CSV, text
    /// log, trainer_state.json; the format is detected), a folder (TensorBoard event
    /// files, MLflow runs, or log files), a W&B run (`wandb/latest-run`, a `.wandb`
    /// file; `wandb/`: its newest run) or a trackio project (`PROJECT.db`,
    /// `trackio:PROJECT`, `#RUN` for one run), read live as it is written. One run per
    /// file, event folder or tracked run.
    /// `http://HOST:PORT/`: the runs of an rlmon serving there (`--serve`)
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub attach: Vec<PathBuf>,
    /// The attached job's process: its process tree's GPU use is shown, and the
    /// attached runs finish when it exits
    #[arg(long, value_name = "PID", requires = "attach")]
    pub attach_pid: Option<u32>,
    /// With --attach, a `wandb` folder is every run in it, not only its newest (latest-run)
    #[arg(long, requires = "attach")]
    pub all: bool,
    /// No interactive display: progress lines and a summary on stderr.
    /// Automatic when stdout is not a terminal
    #[arg(long)]
    pub headless: bool,
    /// Write the session summary as one JSON object to stdout
    #[arg(long)]
    pub json: bool,
    /// Cap every built-in run at N steps (a command run's program decides its own)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_steps: Option<u64>,
    /// Where session files (log, snapshots) are written
    #[arg(long, value_name = "DIR", default_value = "rlmon-sessions", env = "RLMON_SESSION_DIR")]
    pub session_dir: PathBuf,
    /// Colour theme: a built-in name (default, light, high-contrast) or a theme file
    #[arg(long, value_name = "NAME|PATH", default_value = "default")]
    pub theme: String,
    /// Maximum frames per second of the live display
    #[arg(long, value_name = "N", default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..=120))]
    pub fps: u32,
    /// A recorded session to compare against live: ghost curves, first divergence,
    /// throughput regressions. Overrides `baseline` in the config
    #[arg(long, value_name = "SNAPSHOT")]
    pub baseline: Option<PathBuf>,
    /// Serve the session over HTTP at ADDR (host:port; port 0 picks a free one):
    /// /metrics for Prometheus (each run's latest metrics, each alert) and
    /// /api/points?since=N (recent points, JSON). Off by default. Bind to localhost or
    /// a cluster-internal address: there is no authentication
    #[arg(long, value_name = "ADDR")]
    pub serve: Option<String>,
    /// Send alerts (warn and critical, each once per level) to a webhook: rlmon's
    /// JSON, or Slack, Discord or ntfy (told from the host, or named:
    /// `slack+https://...`). Repeatable; `[[notify]]` in the config has more settings
    #[arg(long, value_name = "URL")]
    pub notify: Vec<String>,
    /// The --notify targets also get each run's end (finished, failed, stopped)
    #[arg(long, requires = "notify")]
    pub notify_on_end: bool,
    /// What to do to a run on a critical alert when its config does not say
    /// (`on_critical`): `stop` (SIGTERM to its process group, SIGKILL after the
    /// grace period), or a signal name (`USR1`) to send. Attached runs need
    /// --attach-pid
    #[arg(long, value_name = "stop|SIGNAL")]
    pub on_critical: Option<String>,
}

/// Replay pace: a multiple of the recorded pace, or as fast as possible.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    Times(f64),
    Max,
}

fn parse_speed(s: &str) -> Result<Speed, String> {
    if s == "max" {
        return Ok(Speed::Max);
    }
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(Speed::Times(x)),
        _ => Err(format!("`{s}` is not a positive number or `max`")),
    }
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A snapshot (*.rlmon.parquet) or a journal folder (*.rlmon.journal)
    #[arg(value_name = "SNAPSHOT")]
    pub snapshot: PathBuf,
    /// Pace: times the recorded pace, or `max`
    #[arg(long, value_name = "X|max", default_value = "1", value_parser = parse_speed)]
    pub speed: Speed,
    /// No interactive display: events and the summary on stderr.
    /// Automatic when stdout is not a terminal
    #[arg(long)]
    pub headless: bool,
    /// Write the session summary as one JSON object to stdout
    #[arg(long)]
    pub json: bool,
    /// Colour theme: a built-in name (default, light, high-contrast) or a theme file
    #[arg(long, value_name = "NAME|PATH", default_value = "default")]
    pub theme: String,
    /// Maximum frames per second of the display
    #[arg(long, value_name = "N", default_value_t = 15, value_parser = clap::value_parser!(u32).range(1..=120))]
    pub fps: u32,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The reference session (snapshot or journal)
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The session compared with it
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Write the comparison as one JSON object to stdout
    #[arg(long)]
    pub json: bool,
    /// Relative slow-down (throughput) or growth (peak memory) of B that counts as
    /// a regression
    #[arg(long, value_name = "FRACTION", default_value_t = 0.05)]
    pub tolerance: f64,
    /// Print the text report only, without the display (automatic when stdout is
    /// not a terminal)
    #[arg(long)]
    pub headless: bool,
    /// Colour theme of the display: a built-in name (default, light, high-contrast)
    /// or a theme file
    #[arg(long, value_name = "NAME|PATH", default_value = "default")]
    pub theme: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// One row per point: run,step,time_s,metric,value
    Csv,
    /// One JSON object per run and step, in rlmon's JSONL input format
    Jsonl,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// A snapshot (*.rlmon.parquet) or a journal folder (*.rlmon.journal); or a
    /// tracker's runs: W&B (`wandb/latest-run`, a `.wandb` file) or trackio
    /// (`PROJECT.db`, `trackio:PROJECT`)
    #[arg(value_name = "SNAPSHOT")]
    pub snapshot: PathBuf,
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Output file (default: stdout)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Metrics log (JSONL, CSV/TSV export, trainer_state.json, printed HF dicts,
    /// Megatron / nanoGPT / DeepSpeed / any trainer's text log), a TensorBoard or
    /// MLflow (mlruns) folder, a W&B run (`wandb/latest-run`, a `.wandb` file;
    /// `wandb/`: every run), a trackio project (`PROJECT.db`, `trackio:PROJECT`,
    /// `#RUN` for one run), or a snapshot or journal (replayed with its recorded
    /// detector settings)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Write the report as one JSON object to stdout
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when an alert at or above this severity is raised
    #[arg(long, value_enum, value_name = "SEVERITY", default_value_t = FailOn::Critical)]
    pub fail_on: FailOn,
    /// The log's format, when telling it from the file is not enough: jsonl, csv,
    /// tsv, trainer-state, hf-log, megatron, nanogpt, deepspeed, text (any
    /// `key: value` / `key=value` lines), tensorboard
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<String>,
    /// Read lines with this regex: the named group `step` is the step, every other
    /// named group a metric (e.g. 'ep (?P<step>\d+) loss=(?P<loss>\S+)')
    #[arg(long, value_name = "REGEX", conflicts_with = "format")]
    pub pattern: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    Warn,
    Critical,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Write the report as one JSON object to stdout
    #[arg(long)]
    pub json: bool,
}
