//! Finding MLflow runs on disk for `rlmon check`: a run folder, an experiment or a
//! whole `mlruns` store. What the files hold is read by `ingest::mlflow`.
use std::path::{Path, PathBuf};

/// Whether `dir` is an MLflow run: it has a `metrics` folder and MLflow's
/// `meta.yaml`.
pub fn is_run(dir: &Path) -> bool {
    dir.join("metrics").is_dir() && dir.join("meta.yaml").is_file()
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

/// A run's name: its `mlflow.runName` tag, else its folder's name (the run id).
pub fn run_name(run: &Path) -> String {
    std::fs::read_to_string(run.join("tags").join("mlflow.runName"))
        .ok()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| run.file_name().map_or_else(|| "run".into(), |n| n.to_string_lossy().into_owned()))
}

/// A run's metric files `(name, text)`, names with `/` from sub-folders, sorted.
pub fn metric_files(run: &Path) -> std::io::Result<Vec<(String, String)>> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, String)>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if entry.path().is_dir() {
                walk(&entry.path(), &format!("{name}/"), out)?;
            } else {
                let bytes = std::fs::read(entry.path())?;
                out.push((name, String::from_utf8_lossy(&bytes).into_owned()));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(&run.join("metrics"), "", &mut out)?;
    out.sort();
    Ok(out)
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
}
