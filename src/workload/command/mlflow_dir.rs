//! MLflow runs on disk: found under a run folder, an experiment or a whole
//! `mlruns` store (for `rlmon check` and `--attach`), and one run's metric files
//! followed as the run writes them. What the files hold is read by `ingest::mlflow`.
use std::path::{Path, PathBuf};

use crate::ingest::mlflow::RunMerge;
use crate::ingest::Line;

/// Whether `dir` is an MLflow run: MLflow's `meta.yaml` and the `metrics` or
/// `params` folder it makes with the run (an experiment has neither).
pub fn is_run(dir: &Path) -> bool {
    dir.join("meta.yaml").is_file() && (dir.join("metrics").is_dir() || dir.join("params").is_dir())
}

/// The MLflow runs at or under `dir` (a run, an experiment or a whole `mlruns`
/// store), sorted by path.
pub fn runs_under(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        if is_run(dir) {
            out.push(dir.to_path_buf());
            return;
        }
        if depth == 2 {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            // `.trash` holds deleted runs.
            if path.is_dir() && !entry.file_name().to_string_lossy().starts_with('.') {
                walk(&path, depth + 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, 0, &mut out);
    out.sort();
    out
}

/// Whether the run's `mlflow.runName` tag is written yet.
pub fn has_run_name(run: &Path) -> bool {
    std::fs::metadata(run.join("tags").join("mlflow.runName")).is_ok_and(|m| m.len() > 0)
}

/// A run's name: its `mlflow.runName` tag, else its folder's name (the run id).
pub fn run_name(run: &Path) -> String {
    std::fs::read_to_string(run.join("tags").join("mlflow.runName"))
        .ok()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| run.file_name().map_or_else(|| "run".into(), |n| n.to_string_lossy().into_owned()))
}

/// A run's metric files `(name, path)`, names with `/` from sub-folders, sorted.
fn metric_paths(run: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if entry.path().is_dir() {
                walk(&entry.path(), &format!("{name}/"), out)?;
            } else {
                out.push((name, entry.path()));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(&run.join("metrics"), "", &mut out)?;
    out.sort();
    Ok(out)
}

/// A run's metric files `(name, text)`, names with `/` from sub-folders, sorted.
pub fn metric_files(run: &Path) -> std::io::Result<Vec<(String, String)>> {
    metric_paths(run)?
        .into_iter()
        .map(|(name, path)| std::fs::read(path).map(|bytes| (name, String::from_utf8_lossy(&bytes).into_owned())))
        .collect()
}

/// One run's metric files read as the run writes them: each file from where the
/// last poll stopped (from its start again if it shrank), a line cut short kept
/// for the next poll, the values merged by step.
pub struct RunFiles {
    run: PathBuf,
    /// Per file: bytes read so far, and the start of a line not yet ended.
    files: std::collections::BTreeMap<String, (u64, Vec<u8>)>,
    merge: RunMerge,
}

impl RunFiles {
    pub fn new(run: PathBuf) -> Self {
        RunFiles { run, files: Default::default(), merge: RunMerge::default() }
    }

    /// Metric files seen so far.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// What is new since the last poll: records of the steps settled (every step
    /// before the newest one) and lines that could not be read.
    pub fn poll(&mut self) -> std::io::Result<Vec<Line>> {
        use std::io::{Read, Seek, SeekFrom};
        let paths = match metric_paths(&self.run) {
            Ok(paths) => paths,
            // The run has logged no metric yet.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for (name, path) in paths {
            let (read, partial) = self.files.entry(name.clone()).or_default();
            // Most files of a run with many metrics did not grow since the last poll.
            let len = std::fs::metadata(&path)?.len();
            if len == *read {
                continue;
            }
            let mut file = std::fs::File::open(&path)?;
            if len < *read {
                *read = 0;
                partial.clear();
            }
            file.seek(SeekFrom::Start(*read))?;
            let before = partial.len();
            file.read_to_end(partial)?;
            *read += (partial.len() - before) as u64;
            if let Some(end) = partial.iter().rposition(|b| *b == b'\n') {
                let complete: Vec<u8> = partial.drain(..=end).collect();
                out.extend(String::from_utf8_lossy(&complete).lines().filter_map(|l| self.merge.line(&name, l)));
            }
        }
        out.extend(self.merge.settled());
        Ok(out)
    }

    /// The run's end: what was written since the last poll, its last lines ended
    /// or not, and every step left.
    pub fn finish(&mut self) -> Vec<Line> {
        // A file that cannot be read now was read as far as it could be.
        let mut out = self.poll().unwrap_or_default();
        for (name, (_, partial)) in &mut self.files {
            let rest = String::from_utf8_lossy(&std::mem::take(partial)).into_owned();
            out.extend(rest.lines().filter_map(|l| self.merge.line(name, l)));
        }
        out.extend(self.merge.finish());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_found_under_a_store_and_named_by_their_tag() {
        let dir = tempfile::tempdir().unwrap();
        for (exp, run, name) in [("0", "abc123", Some("baseline")), ("1", "def456", None)] {
            let run_dir = dir.path().join(exp).join(run);
            std::fs::create_dir_all(run_dir.join("metrics/train")).unwrap();
            std::fs::write(run_dir.join("meta.yaml"), "run_id: x\n").unwrap();
            std::fs::write(run_dir.join("metrics/train/loss"), "1 2.0 1\n").unwrap();
            if let Some(name) = name {
                std::fs::create_dir_all(run_dir.join("tags")).unwrap();
                std::fs::write(run_dir.join("tags/mlflow.runName"), name).unwrap();
            }
        }
        std::fs::create_dir_all(dir.path().join(".trash/zzz/metrics")).unwrap();
        let runs = runs_under(dir.path());
        assert_eq!(runs.iter().map(|r| run_name(r)).collect::<Vec<_>>(), ["baseline", "def456"]);
        assert_eq!(runs_under(&runs[0]), [runs[0].clone()], "a run itself");
        let files = metric_files(&runs[0]).unwrap();
        assert_eq!(files, [("train/loss".to_owned(), "1 2.0 1\n".to_owned())]);
    }

    #[test]
    fn a_runs_files_are_followed_as_they_grow() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("meta.yaml"), "run_id: x\n").unwrap();
        let mut follow = RunFiles::new(dir.path().to_path_buf());
        assert!(follow.poll().unwrap().is_empty(), "no metrics folder yet");
        std::fs::create_dir_all(dir.path().join("metrics")).unwrap();
        let append = |name: &str, text: &str| std::fs::OpenOptions::new().create(true).append(true).open(dir.path().join("metrics").join(name)).unwrap().write_all(text.as_bytes()).unwrap();
        let steps = |lines: Vec<Line>| lines.into_iter().filter_map(|l| if let Line::Metrics(r) = l { r.step } else { None }).collect::<Vec<_>>();
        append("loss", "1 3.0 0\n2 2.9 1\n3 2.8");
        append("lr", "1 0.1 0\n");
        assert_eq!(steps(follow.poll().unwrap()), [0; 0], "step 1 is the newest; step 2's line is not ended");
        append("loss", " 2\n4 2.7 3\n");
        append("lr", "2 0.1 1\n");
        assert_eq!(steps(follow.poll().unwrap()), [0], "steps before the newest one at the last poll");
        assert_eq!(steps(follow.poll().unwrap()), [1, 2]);
        append("loss", "5 2.6 4");
        assert_eq!(steps(follow.finish()), [3, 4], "the rest at the end, the last line too");
        assert_eq!(follow.files(), 2);
    }
}
