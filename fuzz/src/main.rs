//! One fuzzing binary for every target: `RLMON_FUZZ_TARGET=NAME` picks it (the names
//! are `rlmon::fuzzing::TARGETS`); scripts/fuzz.sh runs each in turn.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

fn chosen() -> fn(&[u8]) {
    static TARGET: OnceLock<fn(&[u8])> = OnceLock::new();
    *TARGET.get_or_init(|| {
        // libFuzzer's hook aborts on every panic; rlmon contains the panics of
        // third-party readers on purpose (`rlmon::error::contain_panic`), and those are
        // handled input, not crashes.
        let libfuzzer_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !rlmon::error::panic_contained() {
                libfuzzer_hook(info);
            }
        }));
        let name = std::env::var("RLMON_FUZZ_TARGET").unwrap_or_default();
        rlmon::fuzzing::target(&name).unwrap_or_else(|| {
            let names: Vec<&str> = rlmon::fuzzing::TARGETS.iter().map(|(n, _)| *n).collect();
            eprintln!("set RLMON_FUZZ_TARGET to one of: {}", names.join(", "));
            std::process::exit(2)
        })
    })
}

fuzz_target!(|data: &[u8]| chosen()(data));
