//! `rlmon watch --attach PATH... [--attach-pid PID]`: the runs that follow jobs
//! rlmon did not start, added to the config's runs (or making a session of their
//! own). Each path is looked at once, here: a file is one run (its format detected
//! as it is read), a folder of TensorBoard event files one run, MLflow's runs
//! (a run folder, an experiment or `mlruns`) one run each, named by their
//! `mlflow.runName`, a W&B run (its folder or `.wandb` file; a `wandb` folder: its
//! newest run, or every run with `--all`) one run named by its display name, a
//! trackio project (its `.db`, or `trackio:PROJECT`; `#RUN` for one run) one run
//! per run, a run folder of rlmon's Python client one run (named as `rlmon.init`
//! named it) and a folder of them one run each, a folder of log files one run per file. An `http://` address is an rlmon serving on another
//! machine (`--serve`): one run per run it has, named `host:run`; a run of the same
//! name on several machines is one job whose ranks run there (named `run`).
use std::path::{Path, PathBuf};

use crate::config::{AttachConfig, AttachSource, DeviceRequest, MetricsSource, RemoteRun, RunConfig, SessionConfig, Threads, WorkloadConfig};
use crate::error::{Result, RlmonError};
use crate::ingest::tensorboard;
use crate::workload::attach::{process_alive, run_name};
use crate::workload::command::{events_dir, mlflow_dir, trackio_db, wandb_dir};
use crate::workload::client_run;

/// File names of a folder's log files, by ending.
const LOG_ENDINGS: &[&str] = &[".jsonl", ".csv", ".tsv", ".log", ".txt", "trainer_state.json"];

/// A session of attached runs only (no `--config`).
pub fn session(paths: &[PathBuf], pid: Option<u32>, all: bool) -> Result<SessionConfig> {
    let mut config = SessionConfig { name: "attach".into(), path: PathBuf::from("attach"), text: String::new(), runs: Vec::new(), baseline: None, scrape: Vec::new(), prometheus: None, notify: Vec::new() };
    add_runs(&mut config, paths, pid, all)?;
    Ok(config)
}

/// The session of a plain `rlmon watch` (no config, nothing attached): the recent
/// runs of the Python client under `root` (`RLMON_DIR`, else ./rlmon-runs). None
/// there is a usage error that says what `watch` takes.
pub fn recent_client_runs(root: &Path) -> Result<SessionConfig> {
    let runs = client_run::recent(root, std::time::SystemTime::now(), process_alive);
    if runs.is_empty() {
        return Err(RlmonError::Usage(no_recent_runs(root)));
    }
    session(&runs, None, false)
}

pub fn no_recent_runs(root: &Path) -> String {
    format!(
        "nothing to watch: no recent run of rlmon's Python client under {} (rlmon.init in a script writes one); \
         give a session config (--config FILE) or what a job writes (--attach PATH)",
        root.display()
    )
}

/// Adds one run per attached source to `config` (names made unique); a path that
/// does not exist or a process that is not running is a usage error. `all`: every
/// run of a `wandb` folder, not only its newest.
pub fn add_runs(config: &mut SessionConfig, paths: &[PathBuf], pid: Option<u32>, all: bool) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    if let Some(pid) = pid {
        if pid == 0 || !process_alive(pid) {
            return Err(RlmonError::Usage(format!("--attach-pid {pid}: no such running process")));
        }
    }
    let mut described = Vec::new();
    let (urls, files): (Vec<&PathBuf>, Vec<&PathBuf>) = paths.iter().partition(|p| p.to_str().is_some_and(is_remote));
    let urls: Vec<&str> = urls.iter().filter_map(|p| p.to_str()).collect();
    for (name, remotes) in remote_runs(&urls, |url| crate::serve::follow::discover(url).map(|r| r.runs))? {
        let name = unique_name(&name, config);
        let hosts: Vec<&str> = remotes.iter().map(|r| r.url.as_str()).collect();
        described.push(format!("# {name}: {}", hosts.join(" ")));
        config.runs.push(attached_run(name, AttachConfig { source: AttachSource::Remote(remotes), pid }));
    }
    for path in files {
        for source in sources_of(path, all)? {
            let base = match &source {
                AttachSource::Stream(MetricsSource::MlFlow(run)) => mlflow_dir::run_name(run),
                AttachSource::Stream(MetricsSource::Wandb(run)) => wandb_dir::run_name(run),
                AttachSource::Stream(MetricsSource::WandbDir(_)) => "wandb".into(),
                AttachSource::Stream(MetricsSource::Trackio { run: Some(run), .. }) => run.clone(),
                AttachSource::Client(dir) => client_run::start(dir).map_or_else(|| run_name(dir), |s| s.name),
                _ => run_name(source.path()),
            };
            let name = unique_name(&base, config);
            described.push(format!("# {name}: {}", source.path().display()));
            config.runs.push(attached_run(name, AttachConfig { source, pid }));
        }
    }
    // The snapshot keeps the config text: say what was attached.
    let pid_arg = pid.map_or(String::new(), |p| format!(" --attach-pid {p}"));
    let args: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    config.text += &format!("\n# rlmon watch --attach {}{pid_arg}\n{}\n", args.join(" "), described.join("\n"));
    Ok(())
}

/// Whether an `--attach` argument is an rlmon serving on another machine.
pub fn is_remote(arg: &str) -> bool {
    arg.starts_with("http://") || arg.starts_with("https://")
}

/// The local runs that follow the runs of the rlmons at `urls` (`list` asks one
/// for its runs): `host:run` for a run on one machine, `run` for a job whose run
/// is on several (its ranks come from each). Ranks are followed through their
/// job. A machine that does not answer, or serves no runs, is a usage error: the
/// runs to show are known only from it.
pub fn remote_runs(urls: &[&str], list: impl Fn(&str) -> Result<Vec<crate::serve::feed::RunSummary>, String>) -> Result<Vec<(String, Vec<RemoteRun>)>> {
    let usage = |url: &str, why: String| RlmonError::Usage(format!("--attach {url}: {why}"));
    let endpoints = urls.iter().map(|u| crate::telemetry::scrape::Endpoint::parse(u).map_err(|e| usage(u, e))).collect::<Result<Vec<_>>>()?;
    // A machine's name: its host, or host:port where two share a host.
    let host_of = |i: usize| {
        let shared = endpoints.iter().filter(|e| e.host == endpoints[i].host).count() > 1;
        if shared { endpoints[i].authority.clone() } else { endpoints[i].host.clone() }
    };
    // Run name -> the machines that have it, in the order given.
    let mut by_name: Vec<(String, Vec<RemoteRun>)> = Vec::new();
    for (i, url) in urls.iter().enumerate() {
        let runs = list(url).map_err(|e| usage(url, format!("{e} (is `rlmon watch --serve` running there?)")))?;
        let host = host_of(i);
        let mut telemetry = true;
        let tops: Vec<_> = runs.iter().filter(|r| r.job.is_none()).collect();
        if tops.is_empty() {
            return Err(usage(url, "it has no runs".into()));
        }
        for r in tops {
            let remote = RemoteRun { url: (*url).to_owned(), host: host.clone(), run: r.name.clone(), telemetry };
            // The machine's telemetry comes once, with its first run.
            telemetry = false;
            match by_name.iter_mut().find(|(n, _)| *n == r.name) {
                Some((_, v)) => v.push(remote),
                None => by_name.push((r.name.clone(), vec![remote])),
            }
        }
    }
    Ok(by_name
        .into_iter()
        .map(|(name, remotes)| {
            let local = if remotes.len() == 1 { format!("{}:{name}", remotes[0].host) } else { name };
            (local, remotes)
        })
        .collect())
}

/// What one `--attach` path follows.
pub fn sources(path: &Path) -> Result<Vec<AttachSource>> {
    sources_of(path, false)
}

/// The runs of a trackio project: `run` alone, or every run logged so far (the
/// first new one when there is none yet).
fn trackio_sources(db: &Path, run: Option<&str>) -> Result<Vec<AttachSource>> {
    let source = |run: Option<String>| AttachSource::Stream(MetricsSource::Trackio { db: db.to_path_buf(), run });
    if let Some(run) = run {
        return Ok(vec![source(Some(run.to_owned()))]);
    }
    if !db.exists() {
        return Ok(vec![source(None)]);
    }
    let project = trackio_db::Project::open(db).map_err(|e| RlmonError::Usage(format!("--attach {e}")))?;
    let runs = project.runs().map_err(|e| RlmonError::Usage(format!("--attach {e}")))?;
    if runs.is_empty() {
        return Ok(vec![source(None)]);
    }
    Ok(runs.into_iter().map(|r| source(Some(r))).collect())
}

/// [`sources`], with every run of a `wandb` folder when `all`.
pub fn sources_of(path: &Path, all: bool) -> Result<Vec<AttachSource>> {
    let arg = path.to_string_lossy();
    // `trackio:PROJECT[#RUN]`: a project in trackio's folder.
    if let Some(project) = arg.strip_prefix("trackio:") {
        let (project, run) = trackio_db::split_run(project);
        let db = trackio_db::project_db(project, Path::new(".")).map_err(|e| RlmonError::Usage(format!("--attach {arg}: {e}")))?;
        return trackio_sources(&db, run);
    }
    // `PATH.db#RUN`: one run of a project.
    if let (db, Some(run)) = trackio_db::split_run(&arg) {
        if !path.exists() && Path::new(db).is_file() {
            return trackio_sources(Path::new(db), Some(run));
        }
    }
    let meta = std::fs::metadata(path).map_err(|e| RlmonError::Usage(format!("--attach {}: {}", path.display(), match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".to_owned(),
        _ => e.to_string(),
    })))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if meta.is_file() {
        if trackio_db::is_sqlite(path) {
            return trackio_sources(path, None);
        }
        return Ok(vec![file_source(path, &name)]);
    }
    // Runs of rlmon's Python client: a run folder, or the folder of runs (rlmon-runs).
    let client_runs = client_run::runs_under(path);
    if !client_runs.is_empty() {
        return Ok(client_runs.into_iter().map(AttachSource::Client).collect());
    }
    if !events_dir::event_files(path).is_empty() {
        return Ok(vec![AttachSource::Stream(MetricsSource::TensorBoard(path.to_path_buf()))]);
    }
    let mlflow_runs = mlflow_dir::runs_under(path);
    if !mlflow_runs.is_empty() {
        return Ok(mlflow_runs.into_iter().map(|run| AttachSource::Stream(MetricsSource::MlFlow(run))).collect());
    }
    if wandb_dir::is_run_dir(path) || wandb_dir::is_wandb_dir(path) || name == "wandb" {
        let runs = wandb_dir::runs_at(path, all);
        if runs.is_empty() {
            // No run yet: the first one W&B makes here.
            return Ok(vec![AttachSource::Stream(MetricsSource::WandbDir(path.to_path_buf()))]);
        }
        return Ok(runs.into_iter().map(|run| AttachSource::Stream(MetricsSource::Wandb(run))).collect());
    }
    let projects = trackio_db::projects_in(path);
    if !projects.is_empty() {
        let mut out = Vec::new();
        for db in projects {
            out.extend(trackio_sources(&db, None)?);
        }
        return Ok(out);
    }
    let mut logs: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| RlmonError::Usage(format!("--attach {}: {e}", path.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| LOG_ENDINGS.iter().any(|end| n.to_string_lossy().ends_with(end))))
        .collect();
    logs.sort();
    if logs.is_empty() {
        // Nothing written yet: a TensorBoard writer creates its event files later.
        return Ok(vec![AttachSource::Stream(MetricsSource::TensorBoard(path.to_path_buf()))]);
    }
    Ok(logs.iter().map(|p| file_source(p, &p.file_name().unwrap_or_default().to_string_lossy())).collect())
}

fn file_source(path: &Path, name: &str) -> AttachSource {
    if crate::ingest::wandb::is_run_file(name) {
        return AttachSource::Stream(MetricsSource::Wandb(path.to_path_buf()));
    }
    if tensorboard::is_event_file(name) {
        // One event file: its folder is the run (the writer may start new files there).
        return AttachSource::Stream(MetricsSource::TensorBoard(path.parent().unwrap_or(Path::new(".")).to_path_buf()));
    }
    if name.ends_with("trainer_state.json") || is_document(path, name) {
        return AttachSource::Document(path.to_path_buf());
    }
    AttachSource::Stream(MetricsSource::File(path.to_path_buf()))
}

/// Whether a file's start reads as a document written whole (a JSON list or
/// object of metrics), which is followed by reading it again when it changes.
fn is_document(path: &Path, name: &str) -> bool {
    use std::io::Read;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    let read = std::fs::File::open(path).and_then(|f| f.take(HEAD_BYTES as u64).read_to_end(&mut head));
    read.is_ok() && crate::ingest::detect(Path::new(name), &String::from_utf8_lossy(&head)).is_document()
}

/// How much of a file tells a document from a log.
const HEAD_BYTES: usize = 64 * 1024;

/// `base`, or `base-2`, `base-3`, ... : a name no run of `config` has.
fn unique_name(base: &str, config: &SessionConfig) -> String {
    let taken = |n: &str| config.runs.iter().any(|r| r.name == n);
    let base = base.replace('#', "_");
    if !taken(&base) {
        return base;
    }
    (2..).map(|i| format!("{base}-{i}")).find(|n| !taken(n)).unwrap_or(base)
}

fn attached_run(name: String, cfg: AttachConfig) -> RunConfig {
    RunConfig {
        name,
        device: DeviceRequest::Auto,
        seed: 0,
        steps: 0,
        threads: Threads::Fixed(0),
        workload: WorkloadConfig::Attach(cfg),
        replica: None,
        deterministic: false,
        faults: Default::default(),
        health: Default::default(),
        price_per_hour: None,
        on_critical: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uniquely_named_runs() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::create_dir_all(a.join("run")).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(a.join("run/metrics.jsonl"), "").unwrap();
        std::fs::write(b.join("metrics.jsonl"), "").unwrap();
        std::fs::write(b.join("train.log"), "").unwrap();
        std::fs::write(b.join("notes.md"), "").unwrap();
        let config = session(&[a.join("run/metrics.jsonl"), b.clone()], None, false).unwrap();
        let names: Vec<&str> = config.runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["metrics", "metrics-2", "train"], "a folder of logs: one run per log file");
        assert!(config.runs.iter().all(|r| r.workload.kind() == "attach"));
        // An empty folder waits for event files.
        let empty = dir.path().join("tb");
        std::fs::create_dir(&empty).unwrap();
        assert_eq!(sources(&empty).unwrap(), vec![AttachSource::Stream(MetricsSource::TensorBoard(empty.clone()))]);
    }

    #[test]
    fn remote_runs_are_named_by_host_and_a_job_on_several_hosts_is_one_run() {
        use crate::serve::feed::RunSummary;
        let run = |name: &str, job: Option<&str>| RunSummary { name: name.into(), state: "running".into(), step: 0, error: None, job: job.map(Into::into), rank: job.map(|_| 0) };
        let list = |url: &str| match url {
            "http://node3:9464/" => Ok(vec![run("lm-a", None), run("lm-a/rank0", Some("lm-a")), run("eval", None)]),
            "http://node4:9464/" => Ok(vec![run("lm-a", None)]),
            "http://10.0.0.5:1/" | "http://10.0.0.5:2/" => Ok(vec![run("x", None)]),
            "http://empty:1/" => Ok(vec![]),
            _ => Err("connection refused".into()),
        };
        let runs = remote_runs(&["http://node3:9464/", "http://node4:9464/"], list).unwrap();
        let names: Vec<&str> = runs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["lm-a", "node3:eval"]);
        let hosts: Vec<(&str, bool)> = runs[0].1.iter().map(|r| (r.host.as_str(), r.telemetry)).collect();
        assert_eq!(hosts, [("node3", true), ("node4", true)], "each machine's telemetry once");
        assert!(!runs[1].1[0].telemetry);
        // Two machines behind one address keep their ports apart.
        let runs = remote_runs(&["http://10.0.0.5:1/", "http://10.0.0.5:2/"], list).unwrap();
        assert_eq!(runs[0].1.iter().map(|r| r.host.as_str()).collect::<Vec<_>>(), ["10.0.0.5:1", "10.0.0.5:2"]);
        for bad in ["http://down:9464/", "http://empty:1/", "https://node3/"] {
            let e = remote_runs(&[bad], list).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::EXIT_USAGE, "{bad}: {e}");
        }
        assert!(is_remote("http://node3:9464/") && !is_remote("runs/http/metrics.jsonl"));
    }

    #[test]
    fn missing_paths_and_processes_are_usage_errors() {
        let e = session(&[PathBuf::from("/no/such/place")], None, false).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        assert!(e.to_string().contains("no such file or folder"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = session(&[dir.path().to_path_buf()], Some(u32::MAX), false).unwrap_err();
        assert!(e.to_string().contains("no such running process"), "{e}");
    }
}
