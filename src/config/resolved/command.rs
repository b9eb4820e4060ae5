//! `workload = "command"`, resolved: the user's own program and where its metrics
//! come from. Paths are already joined to the config file's folder.
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct CommandConfig {
    /// Program and arguments, run as given (never through a shell). Not empty.
    pub argv: Vec<String>,
    /// Working directory of the program.
    pub cwd: PathBuf,
    /// Added to the environment rlmon was started with.
    pub env: Vec<(String, String)>,
    pub metrics: MetricsSource,
    /// A `--format` name (checked); `None`: detected from the first metric lines.
    pub format: Option<String>,
    /// Between SIGTERM and SIGKILL when the run is stopped.
    pub grace: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricsSource {
    /// Metric lines mixed with the program's other output on stdout.
    Stdout,
    /// The same on stderr, where progress bars (tqdm) and Python's `logging` write.
    Stderr,
    /// A file the program writes, tailed from its start.
    File(PathBuf),
    /// A folder of TensorBoard event files (searched recursively), followed as
    /// files grow and appear.
    TensorBoard(PathBuf),
    /// Files matching a pattern (wildcards in the file name), one stream each:
    /// one per rank of a multi-process job. Files that appear later are read too.
    Glob(PathBuf),
    /// An MLflow run folder (`mlruns/EXPERIMENT/RUN`): its metric files followed.
    MlFlow(PathBuf),
    /// An MLflow file store (`mlruns`) the program logs to: the first run created
    /// in it after the program starts is followed.
    MlFlowStore(PathBuf),
    /// A W&B run (its folder, or its `.wandb` file): its records followed.
    Wandb(PathBuf),
    /// A `wandb` folder the program logs to: the first run created in it after
    /// the program starts is followed.
    WandbDir(PathBuf),
    /// A trackio project's database: run `run`, or (`None`) the first run created
    /// in it after the program starts.
    Trackio { db: PathBuf, run: Option<String> },
}

pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);
