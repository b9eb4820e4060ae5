//! Per-GPU telemetry through NVML: utilization, memory, power, temperature, SM clock,
//! and this process's GPU memory where NVML reports it.
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

use super::procs;
use crate::metrics::{catalog, MetricName};
use crate::session::{GpuInfo, GpuStatus};

pub struct GpuSampler {
    nvml: Nvml,
    count: u32,
    pid: u32,
}

/// Why NVML could not be used, in words a user can act on.
pub fn unavailable_reason(err: &NvmlError) -> String {
    match err {
        NvmlError::LibloadingError(_) => {
            "NVML unavailable: libnvidia-ml.so.1 not found (no NVIDIA driver installed)".into()
        }
        NvmlError::DriverNotLoaded => "NVML unavailable: the NVIDIA driver is not loaded".into(),
        NvmlError::NoPermission => "NVML unavailable: no permission to query the GPUs".into(),
        other => format!("NVML unavailable: {other}"),
    }
}

impl GpuSampler {
    /// Opens NVML, or says why GPU telemetry is not possible here.
    pub fn open() -> Result<Self, String> {
        let nvml = Nvml::init().map_err(|e| unavailable_reason(&e))?;
        let count = nvml.device_count().map_err(|e| format!("NVML cannot count GPUs: {e}"))?;
        if count == 0 {
            return Err("no NVIDIA GPU found (NVML reports 0 devices)".into());
        }
        Ok(GpuSampler { nvml, count, pid: std::process::id() })
    }

    pub fn status(&self) -> GpuStatus {
        let driver = self.nvml.sys_driver_version().unwrap_or_else(|e| format!("unknown ({e})"));
        let gpus = (0..self.count)
            .filter_map(|i| {
                let d = self.nvml.device_by_index(i).ok()?;
                Some(GpuInfo {
                    index: i,
                    name: d.name().unwrap_or_else(|_| "unknown GPU".into()),
                    mem_total_bytes: d.memory_info().map(|m| m.total).unwrap_or(0),
                })
            })
            .collect();
        GpuStatus::Available { driver, gpus }
    }

    /// Appends each job's GPU memory per GPU (`gpu{i}/run{r}_mem_bytes`): the
    /// processes of its tree found in NVML's compute and graphics lists.
    pub fn sample_jobs(&self, jobs: &[(crate::session::RunId, u32)], out: &mut Vec<(MetricName, f64)>) {
        if jobs.is_empty() {
            return;
        }
        let table = procs::snapshot();
        let trees: Vec<_> = jobs.iter().map(|(run, pid)| (*run, procs::tree(&table, *pid))).collect();
        for i in 0..self.count {
            let Ok(d) = self.nvml.device_by_index(i) else { continue };
            let listed = d.running_compute_processes().unwrap_or_default().into_iter().chain(d.running_graphics_processes().unwrap_or_default());
            let on_gpu: Vec<(u32, Option<u64>)> = listed
                .map(|p| {
                    let used = match p.used_gpu_memory {
                        UsedGpuMemory::Used(b) => Some(b),
                        UsedGpuMemory::Unavailable => None,
                    };
                    (p.pid, used)
                })
                .collect();
            for (run, tree) in &trees {
                if let Some(bytes) = procs::job_memory(&on_gpu, tree) {
                    out.push((catalog::gpu(i as usize).run_mem_bytes(*run).into(), bytes as f64));
                }
            }
        }
    }

    /// Appends `gpu{i}/...` samples; a metric NVML does not support on a device is
    /// left out rather than reported as zero.
    pub fn sample(&self, out: &mut Vec<(MetricName, f64)>) {
        for i in 0..self.count {
            let Ok(d) = self.nvml.device_by_index(i) else { continue };
            let g = catalog::gpu(i as usize);
            let mut put = |name: String, v: Option<f64>| {
                if let Some(v) = v {
                    out.push((name.into(), v));
                }
            };
            put(g.util_pct(), d.utilization_rates().ok().map(|u| f64::from(u.gpu)));
            if let Ok(m) = d.memory_info() {
                put(g.mem_used_bytes(), Some(m.used as f64));
                put(g.mem_total_bytes(), Some(m.total as f64));
            }
            put(g.power_w(), d.power_usage().ok().map(|mw| f64::from(mw) / 1000.0));
            put(g.temp_c(), d.temperature(TemperatureSensor::Gpu).ok().map(f64::from));
            put(g.sm_clock_mhz(), d.clock_info(Clock::SM).ok().map(f64::from));
            let own = d.running_compute_processes().ok().and_then(|ps| {
                ps.into_iter().find(|p| p.pid == self.pid).and_then(|p| match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b as f64),
                    UsedGpuMemory::Unavailable => None,
                })
            });
            put(g.proc_mem_bytes(), own);
        }
    }
}
