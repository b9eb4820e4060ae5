//! The code's shape, checked: metric names are spelled only in the metric catalog,
//! the display, the recorder, the detectors and the session know no command, and
//! only the training worker (train/, a crate of its own) uses libtorch.
use std::path::{Path, PathBuf};

use rlmon::metrics::catalog::{self, CATALOG};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's text before its `#[cfg(test)]` module (tests may spell names).
fn non_test_code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    // A test module, not an item compiled for tests only (a helper method).
    let module = regex::Regex::new(r"#\[cfg\(test\)\]\s*(pub(\([a-z]+\))? )?mod ").unwrap();
    match module.find(&text).map(|m| m.start()) {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// String literals of a piece of Rust code (plain `"..."` ones; escapes kept).
fn literals(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        // Between quotes: every other piece (escaped quotes are rare enough here).
        out.extend(line.split('"').skip(1).step_by(2).map(|lit| (n + 1, lit.to_owned())));
    }
    out
}

/// Whether a literal spells a metric name or a piece of one.
fn is_metric_name(lit: &str) -> bool {
    let plain = CATALOG.iter().filter(|m| !m.pattern.contains('{')).map(|m| m.pattern);
    let aliases = CATALOG.iter().flat_map(|m| m.aliases.iter().copied());
    let measures = catalog::GPU_MEASURES.iter().chain(&catalog::MOE_DERIVED).chain(&catalog::NDT_MEASURES).chain(&[catalog::MOE_DROPPED_FRAC]).copied();
    plain.chain(aliases).chain(measures).any(|n| n == lit)
        || ["moe/", "ndt/", "host/", "mem/"].iter().any(|p| lit.starts_with(p))
        || (lit.starts_with("gpu{") && lit.contains('/'))
}

#[test]
fn metric_names_are_spelled_only_in_the_catalog() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    // The config's own key names (`lr`, `kl_coef` in `[run.optimizer]`, `[run.rlhf]`)
    // are config vocabulary that happens to coincide with metric names.
    let config = src.join("config");
    for file in files.iter().filter(|f| !f.ends_with("metrics/catalog.rs") && !f.starts_with(&config)) {
        for (line, lit) in literals(&non_test_code(file)) {
            if is_metric_name(&lit) {
                found.push(format!("{}:{line}: \"{lit}\"", file.strip_prefix(&src).unwrap().display()));
            }
        }
    }
    assert!(found.is_empty(), "metric names outside src/metrics/catalog.rs (use the catalog):\n{}", found.join("\n"));
}

#[test]
fn the_display_recorder_detectors_and_session_import_no_command() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for part in ["ui", "record", "health", "session"] {
        let mut files = Vec::new();
        rust_files(&src.join(part), &mut files);
        for file in files {
            for (n, line) in std::fs::read_to_string(&file).unwrap().lines().enumerate() {
                if line.contains("crate::app") {
                    found.push(format!("{}:{}: {}", file.strip_prefix(&src).unwrap().display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "imports of crate::app:\n{}", found.join("\n"));
}

#[test]
fn the_literal_scanner_sees_names() {
    let code = "let a = \"loss\"; let b = format!(\"gpu{i}/util_pct\");\n// \"kl\" in a comment\nlet c = \"not a metric\";";
    let hits: Vec<_> = literals(code).into_iter().filter(|(_, l)| is_metric_name(l)).map(|(_, l)| l).collect();
    assert_eq!(hits, vec!["loss", "gpu{i}/util_pct"]);
}

#[test]
fn the_readme_lists_the_catalog() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let (start, end) = ("<!-- catalog: start -->\n", "<!-- catalog: end -->");
    let listed = readme.split_once(start).and_then(|(_, rest)| rest.split_once(end)).map(|(table, _)| table).unwrap_or_default();
    let table = catalog::markdown_table();
    assert_eq!(listed, table, "README.md's metric table differs from the catalog; put this between the catalog markers:\n{table}");
}

/// Inputs never become code: rlmon runs the user's command as an argument list (no
/// shell ever parses a config value) and opens no network socket of its own, with
/// one exemption: `src/serve/http.rs` listens for `rlmon watch --serve ADDR`, which
/// the user asks for by name (off by default; `tests/serve.rs` checks that no port is
/// open without it). Every other file still may not listen.
#[test]
fn no_shell_and_no_listening_socket() {
    let mut files = Vec::new();
    rust_files(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")), &mut files);
    let forbidden = [
        ("Command::new(\"sh\")", "a shell"),
        ("Command::new(\"bash\")", "a shell"),
        ("\"/bin/sh\"", "a shell"),
        ("\"-c\"", "a shell's command string"),
        ("TcpListener", "a listening socket"),
        ("UdpSocket", "a socket"),
    ];
    let mut found = Vec::new();
    for file in &files {
        let code = non_test_code(file);
        let serve_module = file.ends_with("src/serve/http.rs");
        for (pattern, what) in forbidden {
            if serve_module && pattern == "TcpListener" {
                continue;
            }
            if code.contains(pattern) {
                found.push(format!("{}: {pattern} ({what})", file.display()));
            }
        }
    }
    assert!(found.is_empty(), "inputs must not become code, nor rlmon a server unasked:\n{}", found.join("\n"));
}

/// libtorch is the training worker's alone: `rlmon` itself must start without
/// loading it (`--version`, `check`, `replay` in milliseconds; an abort in libtorch
/// ends one worker, not the monitor), and must build without it (`cargo install
/// --path .`, the wheel). The monitor's package does not depend on tch, and none of
/// its code names it; the worker is the crate in train/.
#[test]
fn only_the_training_worker_uses_libtorch() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest: toml::Table = toml::from_str(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap()).unwrap();
    for table in ["dependencies", "build-dependencies"] {
        let deps = manifest.get(table).and_then(|t| t.as_table());
        assert!(!deps.is_some_and(|d| d.contains_key("tch") || d.contains_key("torch-sys")), "the monitor's [{table}] names tch");
    }
    assert!(!root.join("build.rs").exists(), "the monitor needs no build script: libtorch's link facts are train/build.rs's");
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    let tch = regex::Regex::new(r"(^|[^A-Za-z0-9_])tch::|use tch\b").unwrap();
    let offenders: Vec<String> = files
        .iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.lines().filter(|l| !l.trim_start().starts_with("//")).any(|l| tch.is_match(l))
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(offenders.is_empty(), "tch used in the monitor (only train/ may):\n{}", offenders.join("\n"));
    // And the executable: no torch library among what `rlmon` links.
    let exe = assert_cmd::cargo::cargo_bin("rlmon");
    if let Ok(out) = std::process::Command::new("ldd").arg(&exe).output() {
        let libs = String::from_utf8_lossy(&out.stdout);
        assert!(!libs.contains("libtorch") && !libs.contains("libc10"), "{} links libtorch:\n{libs}", exe.display());
    }
}
