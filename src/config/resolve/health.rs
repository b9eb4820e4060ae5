//! `[run.health.<kind>]`: detector overrides per alert kind.
use std::collections::BTreeMap;

use crate::config::checker::{Checker, Seg};
use crate::config::error::ConfigError;
use crate::config::raw::RawHealthKind;
use crate::health::{AlertKind, HealthConfig, KindOverride};

/// `[run.health.<kind>]` tables: each kind's overrides on top of its defaults.
pub(super) fn resolve(c: &Checker, i: usize, raw: BTreeMap<String, RawHealthKind>) -> Result<HealthConfig, ConfigError> {
    let mut health = HealthConfig::default();
    for (name, o) in raw {
        let at = |key: &'static str| [Seg::Key("run"), Seg::Index(i), Seg::Key("health"), Seg::Key(&name), Seg::Key(key)];
        let Some(kind) = AlertKind::parse(&name) else {
            let known: Vec<&str> = AlertKind::ALL.iter().map(|k| k.as_str()).collect();
            return Err(c.err(&[Seg::Key("run"), Seg::Index(i), Seg::Key("health"), Seg::Key(&name)], format!("unknown alert kind `{name}`, expected one of {}", known.join(", "))));
        };
        for (key, v) in [("warn", o.warn), ("critical", o.critical)] {
            if v.is_some_and(|v| !v.is_finite()) {
                return Err(c.err(&at(key), format!("health.{name}.{key} must be a finite number")));
            }
        }
        if kind != AlertKind::Stalled {
            for (key, v) in [("k", o.k), ("floor_s", o.floor_s)] {
                if v.is_some() {
                    return Err(c.err(&at(key), format!("`{key}` applies to health.stalled only")));
                }
            }
        }
        for (key, v) in [("k", o.k), ("floor_s", o.floor_s)] {
            if v.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                return Err(c.err(&at(key), format!("health.{name}.{key} must be a positive number")));
            }
        }
        if o.persistence == Some(0) {
            return Err(c.err(&at("persistence"), format!("health.{name}.persistence must be at least 1")));
        }
        if o.metric.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return Err(c.err(&at("metric"), format!("health.{name}.metric must not be empty")));
        }
        let over = KindOverride {
            enabled: o.enabled,
            // stalled: `k` is its warn, `floor_s` its critical (see health::config).
            warn: o.k.or(o.warn),
            critical: o.floor_s.or(o.critical),
            warmup: o.warmup,
            persistence: o.persistence,
            cooldown: o.cooldown,
            window: o.window.map(|w| w as usize),
            metric: o.metric,
        };
        health.apply(kind, &over);
    }
    Ok(health)
}
