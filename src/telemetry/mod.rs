//! GPU (NVML) and host (sysinfo) sampling on a thread of its own, a few times a
//! second. Samples go to the hub through the session channel with `try_send`: when
//! the channel is full a sample is dropped rather than ever blocking a producer.
//! When NVML is missing the hub is told why, once; views show that reason instead of
//! zeros.
pub mod gpu;
pub mod host;
pub mod libtorch;
pub mod procs;
pub mod prometheus;
pub mod scrape;

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::metrics::MetricName;
use crate::session::Event;

pub const DEFAULT_SAMPLE_HZ: f64 = 2.0;

/// Starts the sampler thread; it stops when `cancel` fires or the hub goes away.
/// `jobs`: the runs' job processes, whose GPU memory is sampled apart.
pub fn spawn(tx: mpsc::Sender<Event>, cancel: CancellationToken, sample_hz: f64, session_start: Instant, jobs: procs::JobPids) -> std::io::Result<JoinHandle<()>> {
    let period = Duration::from_secs_f64(1.0 / sample_hz.clamp(0.1, 10.0));
    std::thread::Builder::new().name("rlmon-telemetry".into()).spawn(move || {
        // A failure inside the sampler (a driver library misbehaving) stops telemetry
        // only: the session goes on, and the events pane says why the figures froze.
        let report = tx.clone();
        let sampled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sample_until_cancelled(tx, cancel, period, session_start, jobs)));
        if let Err(panic) = sampled {
            let message = format!("telemetry stopped: {}", crate::error::panic_reason(panic.as_ref()));
            let _ = report.blocking_send(Event::Log { run: None, level: crate::session::LogLevel::Warn, message });
        }
    })
}

fn sample_until_cancelled(tx: mpsc::Sender<Event>, cancel: CancellationToken, period: Duration, session_start: Instant, jobs: procs::JobPids) {
    {
        let gpu = gpu::GpuSampler::open();
        let status = match &gpu {
            Ok(g) => g.status(),
            Err(reason) => crate::session::GpuStatus::Unavailable { reason: reason.clone() },
        };
        if tx.blocking_send(Event::GpuStatus(status)).is_err() {
            return;
        }
        let mut host = host::HostSampler::new();
        let mut next = Instant::now();
        let mut samples = 0u32;
        while !cancel.is_cancelled() {
            let mut values: Vec<(MetricName, f64)> = Vec::with_capacity(16);
            if let Ok(g) = &gpu {
                g.sample(&mut values);
                g.sample_jobs(&jobs.get(), &mut values);
            }
            if let Some(h) = host.as_mut() {
                h.sample(&mut values);
            }
            let event = Event::Telemetry { time_s: session_start.elapsed().as_secs_f64(), values };
            if let Err(mpsc::error::TrySendError::Closed(_)) = tx.try_send(event) {
                return;
            }
            samples += 1;
            if samples == 5 {
                // Late enough that the display is up when the tests fire it.
                crate::failpoint::hit(crate::failpoint::TELEMETRY_PANIC);
            }
            next += period;
            sleep_until(next, &cancel);
        }
    }
}

/// Sleeps until `deadline` in short slices so cancellation is noticed promptly.
fn sleep_until(deadline: Instant, cancel: &CancellationToken) {
    const SLICE: Duration = Duration::from_millis(50);
    loop {
        let now = Instant::now();
        if now >= deadline || cancel.is_cancelled() {
            return;
        }
        std::thread::sleep((deadline - now).min(SLICE));
    }
}
