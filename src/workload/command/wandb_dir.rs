//! W&B runs on disk: a `wandb` folder holds a folder per run (`run-DATE_TIME-ID`,
//! `offline-run-DATE_TIME-ID`), `latest-run` links to the newest, and each run
//! folder holds its record file `run-ID.wandb`. Found here (for `rlmon check`,
//! `--attach` and a command's `metrics = { wandb = "wandb" }`), and one run's file
//! followed as W&B writes it. What the file holds is read by `ingest::wandb`.
use std::path::{Path, PathBuf};

use crate::ingest::wandb::{Out, RunInfo, RunReader};

/// The record file of a run folder (`run-ID.wandb`), if it has one yet.
pub fn run_file(run_dir: &Path) -> Option<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(run_dir).ok()?.flatten().map(|e| e.path()).filter(|p| p.is_file() && p.file_name().is_some_and(|n| crate::ingest::wandb::is_run_file(&n.to_string_lossy()))).collect();
    files.sort();
    files.pop()
}

/// Whether a folder's name is a W&B run folder's.
fn is_run_dir_name(name: &str) -> bool {
    name.starts_with("run-") || name.starts_with("offline-run-")
}

/// The part of a run folder's name that orders runs by their start
/// (`20261127_155846-2un7k5zv`): online and offline runs alike.
fn started(dir: &Path) -> String {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.strip_prefix("offline-").unwrap_or(&name).trim_start_matches("run-").to_owned()
}

/// Whether `dir` is a `wandb` folder: its `latest-run` link, or run folders.
pub fn is_wandb_dir(dir: &Path) -> bool {
    dir.join("latest-run").exists() || !runs_in(dir).is_empty()
}

/// Whether `dir` is one run's folder (it holds a `.wandb` file).
pub fn is_run_dir(dir: &Path) -> bool {
    run_file(dir).is_some()
}

/// The run folders of a `wandb` folder, oldest first.
pub fn runs_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut runs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && is_run_dir_name(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    runs.sort_by_key(|r| started(r));
    runs
}

/// A `wandb` folder's newest run: where `latest-run` points, else the last run
/// folder by its start.
pub fn latest(dir: &Path) -> Option<PathBuf> {
    let link = dir.join("latest-run");
    if let Ok(target) = std::fs::read_link(&link) {
        let target = if target.is_absolute() { target } else { dir.join(target) };
        if target.is_dir() {
            return Some(target);
        }
    }
    if link.is_dir() {
        return std::fs::canonicalize(&link).ok();
    }
    runs_in(dir).pop()
}

/// A W&B path as runs: a `.wandb` file or a run folder is that run; a `wandb`
/// folder its newest run, or every run with `all`. Empty when it is none of these.
pub fn runs_at(path: &Path, all: bool) -> Vec<PathBuf> {
    if path.is_file() {
        return if path.file_name().is_some_and(|n| crate::ingest::wandb::is_run_file(&n.to_string_lossy())) { vec![path.to_path_buf()] } else { Vec::new() };
    }
    if is_run_dir(path) {
        return vec![path.to_path_buf()];
    }
    if all {
        return runs_in(path);
    }
    latest(path).into_iter().collect()
}

/// The run a run folder or file is, from its run record (read from the file's
/// start), if it has been written yet.
pub fn run_info(run: &Path) -> Option<RunInfo> {
    let file = if run.is_file() { run.to_path_buf() } else { run_file(run)? };
    let mut head = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(std::fs::File::open(file).ok()?, 256 * 1024), &mut head).ok()?;
    let mut reader = RunReader::default();
    reader.push(&head).ok()?;
    reader.run.info
}

/// A run's name: its display name, else its id (from its record, or from its
/// folder's name: W&B's writer holds the file's first block until it fills, so a
/// run just started has no record yet), else its folder's name.
pub fn run_name(run: &Path) -> String {
    let folder = || {
        let dir = if run.is_file() { run.parent().unwrap_or(run) } else { run };
        let name = dir.file_name().map_or_else(|| "wandb".into(), |n| n.to_string_lossy().into_owned());
        match name.rsplit_once('-') {
            Some((_, id)) if is_run_dir_name(&name) && !id.is_empty() => id.to_owned(),
            _ => name,
        }
    };
    match run_info(run) {
        Some(i) if !i.name.is_empty() => i.name,
        Some(i) if !i.id.is_empty() => i.id,
        _ => folder(),
    }
}

/// Bytes read from a run file at a time.
const CHUNK: usize = 1 << 20;

/// One run's record file read as W&B writes it: from where the last poll stopped,
/// from its start again if it shrank (rewritten). The file may not exist yet (a
/// run folder W&B has just made).
pub struct RunFile {
    /// The run folder, or the file itself.
    run: PathBuf,
    file: Option<PathBuf>,
    reader: RunReader,
    /// Bytes read so far.
    read: u64,
}

impl RunFile {
    pub fn new(run: PathBuf) -> Self {
        let file = run.is_file().then(|| run.clone());
        RunFile { run, file, reader: RunReader::default(), read: 0 }
    }

    /// The file followed, once it exists.
    pub fn path(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// What the records read so far say of the run.
    pub fn run(&self) -> &crate::ingest::wandb::RunSummary {
        &self.reader.run
    }

    /// What was written since the last poll; `notes` say when the file started
    /// over. An error when the file is not a W&B run file.
    pub fn poll(&mut self, notes: &mut Vec<String>) -> std::io::Result<Vec<Out>> {
        use std::io::{Read, Seek, SeekFrom};
        if self.file.is_none() {
            self.file = run_file(&self.run);
        }
        let Some(path) = self.file.clone() else { return Ok(Vec::new()) };
        let len = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        if len < self.read {
            notes.push(format!("{} was rewritten: reading it from the start", path.display()));
            self.reader = RunReader::default();
            self.read = 0;
        }
        if len == self.read {
            return Ok(Vec::new());
        }
        let mut file = std::fs::File::open(&path)?;
        file.seek(SeekFrom::Start(self.read))?;
        let mut out = Vec::new();
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.read += n as u64;
            let outs = self.reader.push(&buf[..n]).map_err(|why| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: {why}", path.display())))?;
            out.extend(outs);
        }
        Ok(out)
    }

    /// The end: what is left, and a record cut short counted.
    pub fn finish(&mut self, notes: &mut Vec<String>) -> Vec<Out> {
        let mut out = self.poll(notes).unwrap_or_default();
        out.extend(self.reader.finish());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::wandb::fixtures;

    #[test]
    fn a_wandb_folder_names_its_runs_and_its_newest() {
        let dir = tempfile::tempdir().unwrap();
        let wandb = dir.path().join("wandb");
        for name in ["run-20261127_100000-aaa", "offline-run-20261127_110000-bbb", "run-20261127_090000-ccc"] {
            std::fs::create_dir_all(wandb.join(name)).unwrap();
        }
        std::fs::write(wandb.join("offline-run-20261127_110000-bbb/run-bbb.wandb"), fixtures::small_run(2, None, 0)).unwrap();
        let names: Vec<String> = runs_in(&wandb).iter().map(|r| r.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["run-20261127_090000-ccc", "run-20261127_100000-aaa", "offline-run-20261127_110000-bbb"]);
        assert!(is_wandb_dir(&wandb) && !is_wandb_dir(dir.path()));
        assert_eq!(latest(&wandb), Some(wandb.join("offline-run-20261127_110000-bbb")), "newest by start, without a link");
        std::os::unix::fs::symlink("run-20261127_100000-aaa", wandb.join("latest-run")).unwrap();
        assert_eq!(latest(&wandb), Some(wandb.join("run-20261127_100000-aaa")), "the link wins");
        assert_eq!(runs_at(&wandb, true).len(), 3);
        let bbb = wandb.join("offline-run-20261127_110000-bbb");
        assert_eq!(runs_at(&bbb, false), [bbb.clone()]);
        assert_eq!(run_name(&bbb), "ppo-small", "the run's display name");
        assert_eq!(run_name(&wandb.join("run-20261127_090000-ccc")), "ccc", "no record yet: the id in its folder's name");
    }

    #[test]
    fn a_run_file_is_followed_as_it_grows() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let mut follow = RunFile::new(dir.path().to_path_buf());
        let mut notes = Vec::new();
        assert!(follow.poll(&mut notes).unwrap().is_empty(), "no file yet");
        let bytes = fixtures::small_run(6, None, 1);
        let path = dir.path().join("run-abc123.wandb");
        let mut f = std::fs::File::create(&path).unwrap();
        let rows = |outs: &[Out]| outs.iter().filter(|o| matches!(o, Out::Line(crate::ingest::Line::Metrics(_)))).count();
        let mut seen = 0;
        for chunk in bytes.chunks(300) {
            f.write_all(chunk).unwrap();
            f.flush().unwrap();
            seen += rows(&follow.poll(&mut notes).unwrap());
        }
        assert_eq!(seen, 6);
        assert_eq!(follow.run().exit.map(|e| e.code), Some(1));
        assert!(follow.finish(&mut notes).is_empty());
        assert_eq!(follow.path(), Some(path.as_path()));
        // Not a W&B file: an error naming it.
        std::fs::write(&path, b"{\"loss\": 1}\n{\"loss\": 2}\n").unwrap();
        let e = follow.poll(&mut notes).unwrap_err();
        assert!(notes.iter().any(|n| n.contains("rewritten")), "{notes:?}");
        assert!(e.to_string().contains("not a W&B run file"), "{e}");
    }
}
