//! Resolves a run's device request against what libtorch can reach.
use tch::{Cuda, Device};

use rlmon::config::DeviceRequest;

/// The libtorch device for a request, or why it cannot be had.
pub fn resolve(request: DeviceRequest) -> Result<Device, String> {
    match request {
        DeviceRequest::Cpu => Ok(Device::Cpu),
        DeviceRequest::Auto => Ok(if Cuda::is_available() { Device::Cuda(0) } else { Device::Cpu }),
        DeviceRequest::Cuda(i) => {
            if !Cuda::is_available() {
                return Err(format!("{request} requested but CUDA is not available (no NVIDIA GPU or driver visible to libtorch)"));
            }
            let count = Cuda::device_count() as usize;
            if i >= count {
                return Err(format!("{request} requested but only {count} CUDA device(s) exist"));
            }
            Ok(Device::Cuda(i))
        }
    }
}

/// The name rlmon shows for a device: `cpu`, `cuda:0`.
pub fn name(device: Device) -> String {
    match device {
        Device::Cuda(i) => format!("cuda:{i}"),
        Device::Mps => "mps".into(),
        Device::Vulkan => "vulkan".into(),
        Device::Cpu => "cpu".into(),
    }
}
