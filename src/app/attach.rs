//! `rlmon watch --attach PATH... [--attach-pid PID]`: the runs that follow jobs
//! rlmon did not start, added to the config's runs (or making a session of their
//! own). Each path is looked at once, here: a file is one run (its format detected
//! as it is read), a folder of TensorBoard event files one run, a folder of log
//! files one run per file.
use std::path::{Path, PathBuf};

use crate::config::{AttachConfig, AttachSource, DeviceRequest, MetricsSource, RunConfig, SessionConfig, Threads, WorkloadConfig};
use crate::error::{Result, RlmonError};
use crate::ingest::tensorboard;
use crate::workload::attach::{process_alive, run_name};
use crate::workload::command::events_dir;

/// File names of a folder's log files, by ending.
const LOG_ENDINGS: &[&str] = &[".jsonl", ".csv", ".tsv", ".log", ".txt", "trainer_state.json"];

/// A session of attached runs only (no `--config`).
pub fn session(paths: &[PathBuf], pid: Option<u32>) -> Result<SessionConfig> {
    let mut config = SessionConfig { name: "attach".into(), path: PathBuf::from("attach"), text: String::new(), runs: Vec::new(), baseline: None, scrape: Vec::new() };
    add_runs(&mut config, paths, pid)?;
    Ok(config)
}

/// Adds one run per attached source to `config` (names made unique); a path that
/// does not exist or a process that is not running is a usage error.
pub fn add_runs(config: &mut SessionConfig, paths: &[PathBuf], pid: Option<u32>) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    if let Some(pid) = pid {
        if pid == 0 || !process_alive(pid) {
            return Err(RlmonError::Usage(format!("--attach-pid {pid}: no such running process")));
        }
    }
    let mut described = Vec::new();
    for path in paths {
        for source in sources(path)? {
            let name = unique_name(&run_name(source.path()), config);
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

/// What one `--attach` path follows.
pub fn sources(path: &Path) -> Result<Vec<AttachSource>> {
    let meta = std::fs::metadata(path).map_err(|e| RlmonError::Usage(format!("--attach {}: {}", path.display(), match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or folder".to_owned(),
        _ => e.to_string(),
    })))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if meta.is_file() {
        return Ok(vec![file_source(path, &name)]);
    }
    if !events_dir::event_files(path).is_empty() {
        return Ok(vec![AttachSource::Stream(MetricsSource::TensorBoard(path.to_path_buf()))]);
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
    if tensorboard::is_event_file(name) {
        // One event file: its folder is the run (the writer may start new files there).
        return AttachSource::Stream(MetricsSource::TensorBoard(path.parent().unwrap_or(Path::new(".")).to_path_buf()));
    }
    if name.ends_with("trainer_state.json") {
        return AttachSource::TrainerState(path.to_path_buf());
    }
    AttachSource::Stream(MetricsSource::File(path.to_path_buf()))
}

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
        let config = session(&[a.join("run/metrics.jsonl"), b.clone()], None).unwrap();
        let names: Vec<&str> = config.runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["metrics", "metrics-2", "train"], "a folder of logs: one run per log file");
        assert!(config.runs.iter().all(|r| r.workload.kind() == "attach"));
        // An empty folder waits for event files.
        let empty = dir.path().join("tb");
        std::fs::create_dir(&empty).unwrap();
        assert_eq!(sources(&empty).unwrap(), vec![AttachSource::Stream(MetricsSource::TensorBoard(empty.clone()))]);
    }

    #[test]
    fn missing_paths_and_processes_are_usage_errors() {
        let e = session(&[PathBuf::from("/no/such/place")], None).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        assert!(e.to_string().contains("no such file or folder"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = session(&[dir.path().to_path_buf()], Some(u32::MAX)).unwrap_err();
        assert!(e.to_string().contains("no such running process"), "{e}");
    }
}
