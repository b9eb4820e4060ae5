//! Host telemetry through sysinfo: CPU %, memory, and this process's resident memory.
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

use crate::metrics::{catalog::host, MetricName};

pub struct HostSampler {
    sys: System,
    pid: Option<Pid>,
}

impl HostSampler {
    /// `None` when sysinfo cannot read this platform's process tables.
    pub fn new() -> Option<Self> {
        let mut sys = System::new().ok()?;
        sys.refresh_cpu_usage(); // CPU % is a difference between two refreshes.
        Some(HostSampler { sys, pid: sysinfo::get_current_pid().ok() })
    }

    pub fn sample(&mut self, out: &mut Vec<(MetricName, f64)>) {
        self.sys.refresh_cpu_usage();
        self.sys.refresh_memory();
        out.push((host::CPU_PCT.into(), f64::from(self.sys.global_cpu_usage())));
        out.push((host::MEM_USED_BYTES.into(), self.sys.used_memory() as f64));
        out.push((host::MEM_TOTAL_BYTES.into(), self.sys.total_memory() as f64));
        if let Some(pid) = self.pid {
            self.sys.refresh_processes_specifics(ProcessesToUpdate::Some(&[pid]), false, ProcessRefreshKind::nothing().with_memory());
            if let Some(p) = self.sys.process(pid) {
                out.push((host::PROC_RSS_BYTES.into(), p.memory() as f64));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_sample_reports_memory_and_own_rss() {
        let mut h = HostSampler::new().expect("sysinfo works on Linux");
        let mut out = vec![];
        h.sample(&mut out);
        let get = |n: &str| out.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert!(get("host/mem_total_bytes").unwrap() > 0.0);
        assert!(get("host/proc_rss_bytes").unwrap() > 1e6, "a process with libtorch loaded uses megabytes");
        let cpu = get("host/cpu_pct").unwrap();
        assert!((0.0..=100.0).contains(&cpu));
    }
}
