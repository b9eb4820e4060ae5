//! Link-time facts about libtorch that the `tch` crate leaves to the final binary:
//! a runpath so that `target/release/rlmon-train` and the worker's test binaries find libtorch
//! without LD_LIBRARY_PATH, and an explicit, not-as-needed link to libtorch_cuda.so
//! so that CUDA kernels are registered even though no symbol of that library is used
//! directly (linkers defaulting to --as-needed would drop it, and CUDA would then be
//! unavailable even on a GPU machine). Also compiles csrc/optim.cpp, ATen's
//! multi-tensor optimizer kernels that tch's bindings leave out, against the same
//! libtorch headers and C++ ABI as tch's own C++ part.
use std::env;
use std::path::PathBuf;

const SETUP_HINT: &str = "run ./scripts/setup.sh first (it installs torch==2.11.0 into .venv), \
     or build the monitor alone, without libtorch: cargo build --release -p rlmon";

fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/optim.cpp");
    println!("cargo:rerun-if-env-changed=LIBTORCH_CXX11_ABI");
    // This crate is train/ in the workspace; the virtualenv is at the workspace root.
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().unwrap_or(&manifest_dir);
    let libtorch = env::var_os("LIBTORCH").map(PathBuf::from).unwrap_or_else(|| root.join(".venv/libtorch"));
    let lib_dir = libtorch.join("lib");
    println!("cargo:rerun-if-changed={}", lib_dir.display());

    if !lib_dir.join("libtorch_cpu.so").exists() {
        eprintln!();
        eprintln!("error: libtorch not found at {}", lib_dir.display());
        eprintln!("       rlmon builds against the libtorch of PyPI's torch==2.11.0:");
        eprintln!("       {SETUP_HINT}");
        eprintln!();
        panic!("libtorch not found at {}: {SETUP_HINT}", lib_dir.display());
    }

    // tch's torch-sys builds with LIBTORCH_CXX11_ABI, "1" unless set (PyPI's torch
    // since 2.7 uses the new ABI); the shim must match it to link.
    let cxx11_abi = env::var("LIBTORCH_CXX11_ABI").unwrap_or_else(|_| "1".to_owned());
    cc::Build::new()
        .cpp(true)
        .pic(true)
        .warnings(false)
        .include(libtorch.join("include"))
        .include(libtorch.join("include/torch/csrc/api/include"))
        .flag("-std=c++17")
        .flag(format!("-D_GLIBCXX_USE_CXX11_ABI={cxx11_abi}"))
        .flag("-DGLOG_USE_GLOG_EXPORT")
        .file("csrc/optim.cpp")
        .compile("rlmon_optim");

    // Runpath: the path as configured (follows .venv/libtorch if torch is reinstalled)
    // and the resolved one (survives the link being removed).
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib_dir.display());
    if let Ok(resolved) = lib_dir.canonicalize() {
        if resolved != lib_dir {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", resolved.display());
        }
    }
    if lib_dir.join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-search=native={}", lib_dir.display());
        // The worker executable (this package's one binary); rlmon itself, another
        // package, never sees these arguments and does not load libtorch.
        println!("cargo:rustc-link-arg-bins=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg-bins=-ltorch_cuda");
        println!("cargo:rustc-link-arg-bins=-Wl,--as-needed");
    }
}
