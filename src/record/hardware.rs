//! The machine a session ran on, for the snapshot's metadata.
use super::model::Hardware;
use crate::session::GpuStatus;

/// GPU model and driver from the session's NVML status, CPU model from
/// `/proc/cpuinfo`, libtorch version from the training workers (none when no
/// built-in run started).
pub fn describe(gpu: &GpuStatus) -> Hardware {
    let (gpu_model, gpu_driver) = match gpu {
        GpuStatus::Available { driver, gpus } => {
            let mut models: Vec<&str> = gpus.iter().map(|g| g.name.as_str()).collect();
            models.dedup();
            (Some(models.join(", ")), Some(driver.clone()))
        }
        _ => (None, None),
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| cpu_model(&t));
    Hardware {
        gpu_model,
        gpu_driver,
        cpu,
        cores: Some(crate::workload::threads::available_cores()),
        libtorch_version: crate::workload::builtin::libtorch_version(),
    }
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_owned())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_model_from_cpuinfo() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(super::cpu_model(text).as_deref(), Some("Intel(R) Xeon(R) CPU @ 2.20GHz"));
    }
}
