//! `rlmon-train`: the training worker. `rlmon watch` starts one for each built-in
//! run (`workload = "lm"` or `"rlhf"`): it reads the run's job on stdin, trains it
//! with libtorch (through `tch`) and reports on stdout in rlmon's worker protocol
//! (`rlmon::workload::protocol`). Only this executable links libtorch, so rlmon's
//! other commands start without loading it, and libtorch aborting or crashing ends
//! this process, that is one run, and nothing else.
//!
//! `driver` is the one training loop; `lm` and `rlhf` are its `Trainer`s, built from
//! the shared model, data and schedule in `common`.
mod common;
mod context;
mod determinism;
mod device;
mod driver;
mod faults;
mod lm;
mod rlhf;

use std::io::Read;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::{Parser, Subcommand};

use rlmon::config::{SessionConfig, WorkloadConfig};
use rlmon::session::RunOutcome;
use rlmon::workload::protocol::{write_message, Job, Message, Probe, PROTOCOL_VERSION};

use context::RunContext;

/// The training worker of rlmon: started by `rlmon watch` for each built-in run.
/// Not meant to be run by hand, except `rlmon-train probe`.
#[derive(Parser)]
#[command(name = "rlmon-train", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Trains the run described by the JSON job on the first line of stdin;
    /// stdin closing stops it. Reports on stdout in rlmon's worker protocol.
    Run,
    /// Prints, as JSON, which libtorch this worker loads and what CUDA it sees.
    Probe,
}

/// glibc's malloc, left to itself, hands a training step's freed activation
/// buffers back to the kernel (its trim threshold, and an mmap threshold that
/// rises only with its own dynamic rule) and the next step faults them back in,
/// zeroed: about 300 page faults a step on the tiny workload. Fixing both
/// thresholds at the dynamic rule's own ceilings (32 MiB allocations from the
/// heap, 64 MiB of free heap kept) keeps the buffers mapped from step to step.
/// The values are glibc's; where malloc is another one, `mallopt` is absent or
/// ignores them.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes two tuning parameters of glibc's allocator;
    // it is called before the training threads start.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Run => run(),
        Command::Probe => probe(),
    }
}

fn run() -> ExitCode {
    keep_freed_memory();
    let mut line = String::new();
    if let Err(e) = std::io::stdin().read_line(&mut line) {
        eprintln!("rlmon-train: cannot read the job from stdin: {e}");
        return ExitCode::from(2);
    }
    let job: Job = match serde_json::from_str(&line) {
        Ok(job) => job,
        Err(e) => {
            eprintln!("rlmon-train: the job on stdin is not one rlmon wrote: {e}");
            return ExitCode::from(2);
        }
    };
    // From here on every end is reported as the run's outcome.
    let cancel = Arc::new(AtomicBool::new(false));
    watch_stdin(cancel.clone());
    let mut out = Box::new(std::io::BufWriter::new(std::io::stdout()));
    let config = match job_config(&job) {
        Ok(config) => config,
        Err(reason) => {
            let _ = write_message(&mut out, &Message::Ended { outcome: RunOutcome::Failed(reason) });
            return ExitCode::SUCCESS;
        }
    };
    // A panic in a training loop becomes the run's failure reason (the driver
    // catches it); printing it as well would say it twice.
    std::panic::set_hook(Box::new(|_| {}));
    let ctx = RunContext::new(config, job.threads, out, cancel);
    let outcome = match &ctx.config.workload {
        WorkloadConfig::Lm(cfg) => driver::drive::<lm::LmTrainer>(&ctx, &cfg.clone()),
        WorkloadConfig::Rlhf(cfg) => driver::drive::<rlhf::trainer::RlhfTrainer>(&ctx, &cfg.clone()),
        WorkloadConfig::Command(_) | WorkloadConfig::Attach(_) => RunOutcome::Failed("a command or attached run has no training loop".into()),
    };
    let _ = ctx.ended(outcome);
    ExitCode::SUCCESS
}

/// The job's run, resolved from the config text rlmon read.
fn job_config(job: &Job) -> Result<rlmon::config::RunConfig, String> {
    if job.protocol != PROTOCOL_VERSION {
        return Err(format!(
            "the training worker speaks protocol {PROTOCOL_VERSION}, rlmon sent {}: rlmon and rlmon-train come from different builds (rebuild both with `cargo build --release`)",
            job.protocol
        ));
    }
    let session = SessionConfig::from_str(&job.config_text, &job.config_path).map_err(|e| format!("the training worker cannot read the config: {e}"))?;
    let mut run = session.runs.into_iter().find(|r| r.name == job.run).ok_or_else(|| format!("the config has no run named `{}`", job.run))?;
    run.steps = job.steps;
    Ok(run)
}

/// rlmon keeps stdin open while the run should train: its end (rlmon closed it,
/// or rlmon is gone) stops the run at the next step.
fn watch_stdin(cancel: Arc<AtomicBool>) {
    let _ = std::thread::Builder::new().name("stdin".into()).spawn(move || {
        // Stdin's buffer is shared: what followed the job line is read here.
        let mut stdin = std::io::stdin().lock();
        let mut sink = [0u8; 256];
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        cancel.store(true, Ordering::Relaxed);
    });
}

fn probe() -> ExitCode {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let loaded = |name| rlmon::telemetry::libtorch::loaded_library(&maps, name);
    let path = loaded("libtorch_cpu.so").and_then(|p| p.parent().map(std::path::Path::to_path_buf));
    let probe = Probe {
        version: path.as_deref().and_then(rlmon::telemetry::libtorch::read_torch_version),
        path,
        cuda_library_loaded: loaded("libtorch_cuda.so").is_some(),
        cuda_available: tch::Cuda::is_available(),
        cuda_devices: tch::Cuda::device_count(),
        cudnn: tch::Cuda::cudnn_is_available(),
        default_threads: tch::get_num_threads(),
    };
    match serde_json::to_string(&probe) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rlmon-train: {e}");
            ExitCode::FAILURE
        }
    }
}
