//! `[run.faults]`: fault injection, checked against the run it applies to.
use crate::config::checker::{Checker, Seg};
use crate::config::error::ConfigError;
use crate::config::raw::{RawAtFactor, RawFaults};
use crate::config::resolved::faults::{AtFactor, FaultConfig, LrSpike, Nondeterminism};
use crate::config::resolved::WorkloadConfig;

/// `[run.faults]`; some faults need replicas, an MoE model or the rlhf workload.
pub(super) fn resolve(c: &Checker, i: usize, raw: RawFaults, replicas: usize, workload: &WorkloadConfig) -> Result<FaultConfig, ConfigError> {
    let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key("faults"), Seg::Key(key)];
    let step = |key: &'static str, v: Option<u64>| -> Result<Option<u64>, ConfigError> {
        match v {
            Some(0) => Err(c.err(&at(key), format!("faults.{key}: steps count from 1"))),
            v => Ok(v),
        }
    };
    let factor = |key: &'static str, f: f64| -> Result<f64, ConfigError> {
        if f.is_finite() && f > 0.0 {
            Ok(f)
        } else {
            Err(c.err(&at(key), format!("faults.{key}.factor must be a positive number")))
        }
    };
    let at_factor = |key: &'static str, v: Option<RawAtFactor>| -> Result<Option<AtFactor>, ConfigError> {
        v.map(|v| Ok(AtFactor { at: step(key, Some(v.at))?.unwrap_or(1), factor: factor(key, v.factor)? })).transpose()
    };
    let faults = FaultConfig {
        lr_spike: raw
            .lr_spike
            .map(|v| -> Result<LrSpike, ConfigError> {
                let steps = v.steps.unwrap_or(1);
                if steps == 0 {
                    return Err(c.err(&at("lr_spike"), "faults.lr_spike.steps must be at least 1"));
                }
                Ok(LrSpike { at: step("lr_spike", Some(v.at))?.unwrap_or(1), factor: factor("lr_spike", v.factor)?, steps })
            })
            .transpose()?,
        nan_at: step("nan_at", raw.nan_at)?,
        grad_scale: at_factor("grad_scale", raw.grad_scale)?,
        kl_coef_zero_at: step("kl_coef_zero_at", raw.kl_coef_zero_at)?,
        reward_gaming_at: step("reward_gaming_at", raw.reward_gaming_at)?,
        router_collapse_at: step("router_collapse_at", raw.router_collapse_at)?,
        memory_leak_mb_per_step: match raw.memory_leak_mb_per_step {
            Some(mb) if !(mb.is_finite() && mb > 0.0 && mb <= 1024.0) => {
                return Err(c.err(&at("memory_leak_mb_per_step"), "faults.memory_leak_mb_per_step must be in (0, 1024]"))
            }
            mb => mb,
        },
        oom_at: step("oom_at", raw.oom_at)?,
        abort_at: step("abort_at", raw.abort_at)?,
        segfault_at: step("segfault_at", raw.segfault_at)?,
        slowdown: at_factor("slowdown", raw.slowdown)?,
        nondeterminism: raw
            .nondeterminism
            .map(|v| -> Result<Nondeterminism, ConfigError> {
                if replicas < 2 {
                    return Err(c.err(&at("nondeterminism"), "faults.nondeterminism perturbs one replica: set replicas = 2 or more on this run"));
                }
                let replica = v.replica.unwrap_or(replicas as u64);
                if replica == 0 || replica > replicas as u64 {
                    return Err(c.err(&at("nondeterminism"), format!("faults.nondeterminism.replica must be between 1 and {replicas}")));
                }
                Ok(Nondeterminism { at: step("nondeterminism", Some(v.at))?.unwrap_or(1), replica: replica as usize })
            })
            .transpose()?,
    };
    let has_moe = matches!(workload, WorkloadConfig::Lm(lm) if lm.moe.is_some());
    if faults.router_collapse_at.is_some() && !has_moe {
        return Err(c.err(&at("router_collapse_at"), "faults.router_collapse_at needs a [run.moe] table (an MoE model)"));
    }
    let kind = workload.kind();
    for (key, set, needs) in [
        ("kl_coef_zero_at", faults.kl_coef_zero_at.is_some(), "rlhf"),
        ("reward_gaming_at", faults.reward_gaming_at.is_some(), "rlhf"),
    ] {
        if set && kind != needs {
            return Err(c.err(&at(key), format!("faults.{key} applies to workload = \"{needs}\", not \"{kind}\"")));
        }
    }
    Ok(faults)
}
