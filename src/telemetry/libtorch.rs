//! Which libtorch this process has loaded, read from `/proc/self/maps`: for
//! `doctor` and for the hardware a snapshot records.
use std::path::{Path, PathBuf};

/// Path of a shared library mapped into this process, from `/proc/self/maps` text.
pub fn loaded_library(maps: &str, file_name: &str) -> Option<PathBuf> {
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(Path::new)
        .find(|p| p.file_name().is_some_and(|n| n == file_name))
        .map(Path::to_path_buf)
}

/// Version of the libtorch loaded into this process, if it can be told.
pub fn loaded_libtorch_version() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    read_torch_version(loaded_library(&maps, "libtorch_cpu.so")?.parent()?)
}

/// `__version__` from the `version.py` beside a torch `lib/` folder (pip's layout).
pub fn read_torch_version(lib_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(lib_dir.parent()?.join("version.py")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("__version__ = "))
        .map(|v| v.trim().trim_matches(|c| c == '\'' || c == '"').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_library_is_found_by_file_name() {
        let maps = "7f00-7f01 r-xp 00000000 08:01 1 /opt/torch/lib/libtorch_cpu.so\n7f02-7f03 r-xp 00000000 08:01 2 /usr/lib/libc.so.6\n";
        assert_eq!(loaded_library(maps, "libtorch_cpu.so"), Some(PathBuf::from("/opt/torch/lib/libtorch_cpu.so")));
        assert_eq!(loaded_library(maps, "libtorch_cuda.so"), None);
    }
}
