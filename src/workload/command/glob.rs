//! `metrics = { glob = "logs/rank*.jsonl" }`: which files a pattern names. The
//! wildcards (`*`, `?`) may stand in the file name only, so one folder is listed,
//! never a tree. Pure apart from listing that folder.
use std::path::{Path, PathBuf};

use regex::Regex;

#[derive(Debug, Clone)]
pub struct FileGlob {
    dir: PathBuf,
    name: Regex,
}

impl FileGlob {
    /// The pattern's folder and file-name pattern; why it is unusable otherwise.
    pub fn new(pattern: &Path) -> Result<Self, String> {
        let name = pattern.file_name().map(|n| n.to_string_lossy().into_owned()).filter(|n| !n.is_empty()).ok_or("it must end in a file name pattern")?;
        let dir = pattern.parent().map(Path::to_path_buf).unwrap_or_default();
        if dir.to_string_lossy().contains(['*', '?']) {
            return Err("wildcards may stand in the file name only, not in its folders".into());
        }
        let mut re = String::from("^");
        for c in name.chars() {
            match c {
                '*' => re.push_str(".*"),
                '?' => re.push('.'),
                c => re.push_str(&regex::escape(&c.to_string())),
            }
        }
        re.push('$');
        let name = Regex::new(&re).map_err(|e| e.to_string())?;
        Ok(FileGlob { dir, name })
    }

    pub fn matches(&self, file_name: &str) -> bool {
        self.name.is_match(file_name)
    }

    /// The files matching now, in name order (none while the folder is missing).
    pub fn list(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()) && self.matches(&e.file_name().to_string_lossy()))
            .map(|e| e.path())
            .collect();
        files.sort();
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_file_names_in_one_folder() {
        let g = FileGlob::new(Path::new("logs/rank*.jsonl")).unwrap();
        assert!(g.matches("rank0.jsonl") && g.matches("rank12.jsonl") && g.matches("rank.jsonl"));
        assert!(!g.matches("rank0.jsonl.1") && !g.matches("xrank0.jsonl") && !g.matches("rank0Xjsonl"), "a dot is a dot");
        assert!(FileGlob::new(Path::new("logs/r?.csv")).unwrap().matches("r1.csv"));
        assert!(FileGlob::new(Path::new("*/rank0.jsonl")).is_err());
        let dir = tempfile::tempdir().unwrap();
        for f in ["rank1.jsonl", "rank0.jsonl", "other.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        let g = FileGlob::new(&dir.path().join("rank*.jsonl")).unwrap();
        assert_eq!(g.list(), [dir.path().join("rank0.jsonl"), dir.path().join("rank1.jsonl")]);
        assert!(FileGlob::new(&dir.path().join("missing/rank*.jsonl")).unwrap().list().is_empty());
    }
}
