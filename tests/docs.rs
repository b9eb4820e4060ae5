//! The user docs stay true to the code: every config key the parser accepts is
//! documented in docs/config.md (found by asking the parser itself, so a new key
//! cannot be added without its line), every key documented there is one the parser
//! accepts, the metric table in docs/metrics.md is the catalog's, and every relative
//! link in README.md and docs/ leads to a file and heading that exist.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rlmon::config::SessionConfig;
use rlmon::metrics::catalog;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// A table's place in a config: each segment with whether it is an array of tables.
type TablePath = Vec<(String, bool)>;

/// The TOML that opens the table at `path` (its ancestors' headers first), then `body`.
fn probe_text(path: &TablePath, body: &str) -> String {
    let mut text = String::new();
    for i in 0..path.len() {
        let name: Vec<&str> = path[..=i].iter().map(|(s, _)| s.as_str()).collect();
        let name = name.join(".");
        if path[i].1 {
            text.push_str(&format!("[[{name}]]\n"));
        } else {
            text.push_str(&format!("[{name}]\n"));
        }
    }
    text.push_str(body);
    text
}

fn parse_error(text: &str) -> Option<String> {
    SessionConfig::from_str(text, Path::new("probe.toml")).err().map(|e| e.to_string())
}

/// The keys serde expects at `path`, read from its "unknown field" message; `None`
/// when `path` is not a table of named keys.
fn expected_keys(path: &TablePath) -> Option<Vec<String>> {
    let msg = parse_error(&probe_text(path, "zz_probe = 1\n"))?;
    let line = msg.lines().find(|l| l.contains("unknown field `zz_probe`"))?;
    let (_, expected) = line.split_once("expected")?;
    Some(expected.split('`').skip(1).step_by(2).map(str::to_owned).collect())
}

/// Every key of every table the parser accepts, as `table.key` paths.
fn accepted_keys() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut todo: Vec<TablePath> = vec![Vec::new()];
    while let Some(path) = todo.pop() {
        let Some(keys) = expected_keys(&path) else { continue };
        for key in keys {
            let dotted: Vec<&str> = path.iter().map(|(s, _)| s.as_str()).filter(|s| *s != "zz_map_key").chain([key.as_str()]).collect();
            found.insert(dotted.join("."));
            if path.len() > 4 {
                continue;
            }
            // The key as a table, as an array of tables, or as a map of tables
            // (`[run.health.<kind>]`): whichever the parser answers with its keys.
            for is_array in [false, true] {
                let mut child = path.clone();
                child.push((key.clone(), is_array));
                if expected_keys(&child).is_some() {
                    todo.push(child);
                    break;
                }
                let mut map_child = child.clone();
                map_child.push(("zz_map_key".to_owned(), false));
                if expected_keys(&map_child).is_some() {
                    todo.push(map_child);
                    break;
                }
            }
        }
    }
    found
}

fn documents_key(doc: &str, key: &str) -> bool {
    // `key`, `key = ...`, a line or an inline table that sets it (`{ at, factor }`
    // lists an inline table's keys), or a table header that names it (`[run.model]`).
    let re = regex::Regex::new(&format!(r"(?m)(`{k}`|`{k} ?=|^\s*#?\s*{k}\s*=|[{{,;]\s*{k}\s*[=,}}]|[.\[]{k}\]\]?)", k = regex::escape(key))).unwrap();
    re.is_match(doc)
}

#[test]
fn every_config_key_is_documented() {
    let keys = accepted_keys();
    for known in ["session", "run.model.d_model", "run.health.warn", "run.metrics.file", "telemetry.scrape.url"] {
        assert!(keys.contains(known), "the probe did not find {known}: {keys:?}");
    }
    assert!(keys.len() > 60, "the probe found too few keys: {keys:?}");
    let doc = read("docs/config.md");
    let missing: Vec<&String> = keys.iter().filter(|k| !documents_key(&doc, k.rsplit('.').next().unwrap())).collect();
    assert!(missing.is_empty(), "docs/config.md does not document these config keys (write each as `key` or `key = ...`): {missing:?}");
}

#[test]
fn the_documented_config_examples_parse() {
    let doc = read("docs/config.md");
    let mut blocks = 0;
    for block in doc.split("```toml\n").skip(1) {
        let block = block.split("```").next().unwrap();
        blocks += 1;
        // An example of a run's sub-table alone is read inside a run.
        let text = if block.contains("[run.") && !block.contains("[[run]]") { format!("[[run]]\nname = \"x\"\nworkload = \"lm\"\n{block}") } else { block.to_owned() };
        if let Some(msg) = parse_error(&text) {
            assert!(!msg.contains("unknown field") && !msg.contains("invalid type"), "a docs/config.md example does not parse:\n{block}\n{msg}");
        }
    }
    assert!(blocks >= 3, "docs/config.md has {blocks} toml examples");
}

#[test]
fn the_metrics_doc_lists_the_catalog() {
    let doc = read("docs/metrics.md");
    let (start, end) = ("<!-- catalog: start -->\n", "<!-- catalog: end -->");
    let listed = doc.split_once(start).and_then(|(_, rest)| rest.split_once(end)).map(|(table, _)| table).unwrap_or_default();
    let table = catalog::markdown_table();
    assert_eq!(listed, table, "docs/metrics.md's metric table differs from the catalog; put this between the catalog markers:\n{table}");
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(doc: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in doc.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
        if let Some(rest) = line.split("<a id=\"").nth(1) {
            out.insert(rest.split('"').next().unwrap().to_owned());
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut docs = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            docs.push(p);
        }
    }
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut broken = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for cap in link.captures_iter(&text) {
            let target = &cap[1];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, frag) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() { doc.clone() } else { doc.parent().unwrap().join(file) };
            if !path.exists() {
                broken.push(format!("{}: {target} (no such file)", doc.display()));
                continue;
            }
            if !frag.is_empty() && path.extension().is_some_and(|x| x == "md") {
                let heads = anchors(&std::fs::read_to_string(&path).unwrap());
                if !heads.contains(frag) {
                    broken.push(format!("{}: {target} (no such heading)", doc.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_stays_short() {
    let lines = read("README.md").lines().count();
    assert!(lines <= 260, "README.md has {lines} lines; reference material belongs in docs/");
}
