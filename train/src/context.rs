//! What a training loop needs from rlmon, in the worker: its run's settings, a way
//! to report (protocol frames on stdout), and whether rlmon asked it to stop.
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rlmon::config::RunConfig;
use rlmon::metrics::MetricName;
use rlmon::session::RunOutcome;
use rlmon::workload::protocol::{write_message, Message};

pub struct RunContext {
    pub config: RunConfig,
    /// Intra-op threads this run may use.
    pub threads: usize,
    out: Mutex<Box<dyn Write + Send>>,
    cancel: Arc<AtomicBool>,
    started: Instant,
}

/// rlmon stopped listening (it closed the pipe, or is gone): stop training.
#[derive(Debug)]
pub struct Detached;

impl RunContext {
    /// `cancel`: set when rlmon asks the run to stop.
    pub fn new(config: RunConfig, threads: usize, out: Box<dyn Write + Send>, cancel: Arc<AtomicBool>) -> Self {
        RunContext { config, threads, out: Mutex::new(out), cancel, started: Instant::now() }
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Seconds since the worker started the run.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Announces the device the run trains on.
    pub fn started(&self, device: String) -> Result<(), Detached> {
        let libtorch = rlmon::telemetry::libtorch::loaded_libtorch_version();
        self.send(&Message::Started { device, threads: self.threads, libtorch })
    }

    /// Sends one step's metrics, at once.
    pub fn emit(&self, step: u64, values: Vec<(MetricName, f64)>) -> Result<(), Detached> {
        self.send(&Message::Metrics { step, time_s: self.elapsed_s(), values })
    }

    /// The run's end: the last message.
    pub fn ended(&self, outcome: RunOutcome) -> Result<(), Detached> {
        self.send(&Message::Ended { outcome })
    }

    fn send(&self, message: &Message) -> Result<(), Detached> {
        let mut out = self.out.lock().map_err(|_| Detached)?;
        write_message(&mut *out, message).map_err(|_| Detached)
    }
}
