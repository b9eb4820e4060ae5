//! Every saved fuzz input (fuzz/corpus/TARGET/*: the seeds and each crash found and
//! fixed) goes through its target here, so plain `cargo test` catches a regression
//! without the fuzzer. A panic fails the test, naming the file.
use std::path::Path;

#[test]
fn every_corpus_input_passes_through_its_target_without_panicking() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    let mut total = 0;
    for (name, target) in rlmon::fuzzing::TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).map(|e| e.unwrap().path()).collect();
        files.sort();
        assert!(!files.is_empty(), "target {name} has no seed in {}", dir.display());
        for file in files {
            let data = std::fs::read(&file).unwrap();
            let outcome = std::panic::catch_unwind(|| target(&data));
            assert!(outcome.is_ok(), "target {name} panicked on {}", file.display());
            total += 1;
        }
    }
    eprintln!("{total} corpus inputs replayed");
}

#[test]
fn every_fuzz_target_has_a_corpus_folder_and_a_name_the_script_knows() {
    let script = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fuzz.sh")).unwrap();
    for (name, _) in rlmon::fuzzing::TARGETS {
        assert!(rlmon::fuzzing::target(name).is_some());
        assert!(script.contains("rlmon::fuzzing::TARGETS") || script.contains(name), "scripts/fuzz.sh runs {name}");
    }
}
