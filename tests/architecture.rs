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

/// A file's module path under `src/` (`src/ui/panes/mod.rs` is `ui::panes`); the
/// training worker's own tree (`src/train/`, a separate executable) is left out.
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop()?;
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    if parts.first().is_some_and(|p| p == "train") || stem == "main" {
        return None;
    }
    Some(parts)
}

/// Expands one `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand_use(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else { return vec![tree.to_owned()] };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items.into_iter().filter(|s| !s.trim().is_empty()).flat_map(|item| expand_use(item).into_iter().map(move |p| format!("{prefix}{p}"))).collect()
}

/// The paths a module re-exports (`pub use resolved::ScrapeTarget;`), by the name
/// they are known under there.
type Reexports = std::collections::BTreeMap<Vec<String>, std::collections::BTreeMap<String, String>>;

fn reexports_of(code: &str) -> std::collections::BTreeMap<String, String> {
    let stmt = regex::Regex::new(r"(?s)\bpub(?:\([a-z]+\))?\s+use\s+([^;]*);").unwrap();
    let mut out = std::collections::BTreeMap::new();
    for cap in stmt.captures_iter(code) {
        for path in expand_use(&cap[1].split_whitespace().collect::<Vec<_>>().join(" ")) {
            let path = path.replace(' ', "");
            let (path, name) = match path.split_once("as") {
                Some((p, n)) if !n.contains("::") => (p.to_owned(), n.to_owned()),
                _ => (path.clone(), path.rsplit("::").next().unwrap_or("").to_owned()),
            };
            let path = if path.starts_with("crate::") || path.starts_with("super::") || path.starts_with("self::") { path } else { format!("self::{path}") };
            out.insert(name, path);
        }
    }
    out
}

/// Where a path leads: the longest known module along it, following re-exports.
fn resolve(module: &[String], path: &str, known: &std::collections::BTreeSet<Vec<String>>, reexports: &Reexports, depth: usize) -> Option<Vec<String>> {
    let mut segs: Vec<&str> = path.split("::").collect();
    let mut target: Vec<String> = match segs.first() {
        Some(&"crate") => Vec::new(),
        Some(&"super") | Some(&"self") => module.to_vec(),
        _ => return None,
    };
    while let Some(&s) = segs.first() {
        match s {
            "crate" | "self" => {}
            "super" => {
                target.pop();
            }
            _ => break,
        }
        segs.remove(0);
    }
    let mut rest = segs.into_iter();
    for s in rest.by_ref() {
        let mut next = target.clone();
        next.push(s.to_owned());
        if known.contains(&next) {
            target = next;
            continue;
        }
        // An item the module re-exports from elsewhere counts as that elsewhere.
        if depth < 4 {
            if let Some(origin) = reexports.get(&target).and_then(|r| r.get(s)) {
                if let Some(t) = resolve(&target, origin, known, reexports, depth + 1) {
                    return Some(t);
                }
            }
        }
        break;
    }
    Some(target)
}

/// The modules a file's code names: `use` trees and inline `crate::` / `super::`
/// paths, resolved against the module itself.
fn imports(module: &[String], code: &str, known: &std::collections::BTreeSet<Vec<String>>, reexports: &Reexports) -> Vec<Vec<String>> {
    let code: String = code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let mut paths = Vec::new();
    let use_stmt = regex::Regex::new(r"(?s)\buse\s+((?:crate|super|self)::[^;]*);").unwrap();
    for cap in use_stmt.captures_iter(&code) {
        paths.extend(expand_use(&cap[1].split_whitespace().collect::<String>()));
    }
    let inline = regex::Regex::new(r"\b((?:crate|super)(?:::[A-Za-z_][A-Za-z0-9_]*)+)").unwrap();
    paths.extend(inline.captures_iter(&code).map(|c| c[1].to_owned()));
    let mut out: Vec<Vec<String>> = paths.iter().filter_map(|p| resolve(module, p.split(" as ").next().unwrap_or(p), known, reexports, 0)).collect();
    // A module brought in by name (`use crate::ui::panes;`) and then named through
    // it (`panes::overlay::footer(..)`): follow the rest of the path too.
    for path in &paths {
        let (path, alias) = match path.split_once(" as ") {
            Some((p, a)) => (p, a.trim()),
            None => (path.as_str(), path.rsplit("::").next().unwrap_or("")),
        };
        let Some(target) = resolve(module, path, known, reexports, 0) else { continue };
        if target.last().map(String::as_str) != Some(alias) || alias.is_empty() {
            continue;
        }
        let through = regex::Regex::new(&format!(r"(?:^|[^:A-Za-z0-9_]){}((?:::[A-Za-z_][A-Za-z0-9_]*)+)", regex::escape(alias))).unwrap();
        let rel = target.iter().map(String::as_str).collect::<Vec<_>>().join("::");
        for cap in through.captures_iter(&code) {
            if let Some(t) = resolve(&[], &format!("crate::{rel}{}", &cap[1]), known, reexports, 0) {
                out.push(t);
            }
        }
    }
    out
}

/// Modules (one a file) depend on each other one way only: a cycle (`a` uses `b` and
/// `b` uses `a`, directly or through others) makes either side impossible to take
/// alone. A child naming its parent's items, or a parent its child's, is not counted.
#[test]
fn modules_have_no_import_cycles() {
    use std::collections::{BTreeMap, BTreeSet};
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: Vec<(Vec<String>, PathBuf)> = files.iter().filter_map(|f| module_of(&src, f).map(|m| (m, f.clone()))).collect();
    let known: BTreeSet<Vec<String>> = modules.iter().map(|(m, _)| m.clone()).collect();
    let reexports: Reexports = modules.iter().map(|(m, f)| (m.clone(), reexports_of(&non_test_code(f)))).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &modules {
        for target in imports(module, &non_test_code(file), &known, &reexports) {
            if target.starts_with(module) || module.starts_with(&target) {
                continue; // itself, an ancestor or a descendant
            }
            edges.entry(module.join("::")).or_default().insert(target.join("::"));
        }
    }
    // Each strongly connected group of more than one module is a cycle (Tarjan).
    struct Tarjan<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        groups: Vec<Vec<String>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: &str) {
            let i = self.index.len();
            self.index.insert(v.to_owned(), i);
            self.low.insert(v.to_owned(), i);
            self.stack.push(v.to_owned());
            self.on_stack.insert(v.to_owned());
            for w in self.edges.get(v).cloned().unwrap_or_default() {
                if !self.index.contains_key(&w) {
                    self.visit(&w);
                    let lw = self.low[&w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(&w) {
                    let iw = self.index[&w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(&w);
                    let done = w == v;
                    group.push(w);
                    if done {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    self.groups.push(group);
                }
            }
        }
    }
    let mut t = Tarjan { edges: &edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on_stack: BTreeSet::new(), groups: Vec::new() };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    let cycles: Vec<String> = t
        .groups
        .iter()
        .map(|g| {
            let uses: Vec<String> = g.iter().flat_map(|a| edges[a].iter().filter(|b| g.contains(b)).map(move |b| format!("{a} -> {b}"))).collect();
            format!("{{{}}}: {}", g.join(", "), uses.join("; "))
        })
        .collect();
    assert!(cycles.is_empty(), "import cycles (move the shared type to a module both use, or turn one dependency around):\n{}", cycles.join("\n"));
}

#[test]
fn use_trees_expand() {
    assert_eq!(expand_use("crate::a::{b::C, d::{E, F}}"), vec!["crate::a::b::C", "crate::a::d::E", "crate::a::d::F"]);
}
