//! Expert load balance of one MoE layer, from the fraction of routed tokens each
//! expert received. Loads arrive as one metric per expert, `moe/L{l}/load/E{e}`
//! (the snapshot's flattened form of the per-layer load vector).
use super::catalog::{self, MoeLayer};

/// Summaries of one layer's loads (see ../shared design notes: effective experts,
/// routing entropy, coefficient of variation, MaxVio, dead experts).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadStats {
    /// exp(H) / N: 1 when perfectly balanced, 1/N when one expert takes everything.
    pub balance: f64,
    /// Routing entropy H in bits; at most log2 N.
    pub entropy_bits: f64,
    /// Standard deviation of the loads over their mean.
    pub cv: f64,
    /// (max - mean) / mean.
    pub max_vio: f64,
    /// Experts below a tenth of their fair share, 1 / (10 N).
    pub dead: usize,
}

impl LoadStats {
    /// `loads` need not sum to exactly 1; they are normalised first. `None` for no
    /// experts or no routed tokens.
    pub fn from_loads(loads: &[f64]) -> Option<Self> {
        let n = loads.len();
        let total: f64 = loads.iter().filter(|l| l.is_finite() && **l > 0.0).sum();
        if n == 0 || total <= 0.0 {
            return None;
        }
        let p: Vec<f64> = loads.iter().map(|l| if l.is_finite() && *l > 0.0 { l / total } else { 0.0 }).collect();
        let entropy_nats: f64 = p.iter().filter(|x| **x > 0.0).map(|x| -x * x.ln()).sum();
        // One expert alone sums to -0.0: report it as 0.
        let entropy_nats = entropy_nats.max(0.0) + 0.0;
        let mean = 1.0 / n as f64;
        let var = p.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        let max = p.iter().cloned().fold(0.0, f64::max);
        Some(LoadStats {
            balance: entropy_nats.exp() / n as f64,
            entropy_bits: entropy_nats / std::f64::consts::LN_2,
            cv: var.sqrt() / mean,
            max_vio: (max - mean) / mean,
            dead: p.iter().filter(|x| **x < mean / 10.0).count(),
        })
    }
}

/// The MoE layers and expert counts among metric names, ascending by layer.
pub fn layers<'a>(names: impl Iterator<Item = &'a str>) -> Vec<(usize, usize)> {
    let mut experts: std::collections::BTreeMap<usize, usize> = Default::default();
    for (layer, expert) in names.filter_map(MoeLayer::parse_load) {
        let n = experts.entry(layer).or_default();
        *n = (*n).max(expert + 1);
    }
    experts.into_iter().collect()
}

/// The metrics derived from the loads in one step's values, per layer:
/// `moe/L{l}/{balance, entropy_bits, cv, max_vio, dead_experts}`.
pub fn derive<'a>(values: impl Iterator<Item = (&'a str, f64)>) -> Vec<(String, f64)> {
    let mut layers: std::collections::BTreeMap<usize, Vec<(usize, f64)>> = Default::default();
    for (name, value) in values {
        if let Some((layer, expert)) = MoeLayer::parse_load(name) {
            layers.entry(layer).or_default().push((expert, value));
        }
    }
    let mut out = Vec::new();
    for (layer, mut loads) in layers {
        loads.sort_by_key(|(e, _)| *e);
        let loads: Vec<f64> = loads.into_iter().map(|(_, v)| v).collect();
        if let Some(s) = LoadStats::from_loads(&loads) {
            let l = catalog::moe(layer);
            out.push((l.balance(), s.balance));
            out.push((l.entropy_bits(), s.entropy_bits));
            out.push((l.cv(), s.cv));
            out.push((l.max_vio(), s.max_vio));
            out.push((l.dead_experts(), s.dead as f64));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn uniform_loads_are_perfectly_balanced() {
        let s = LoadStats::from_loads(&[0.125; 8]).unwrap();
        assert!(close(s.balance, 1.0));
        assert!(close(s.entropy_bits, 3.0));
        assert!(close(s.cv, 0.0) && close(s.max_vio, 0.0));
        assert_eq!(s.dead, 0);
    }

    #[test]
    fn one_expert_taking_everything_is_one_over_n() {
        let mut loads = [0.0; 8];
        loads[3] = 1.0;
        let s = LoadStats::from_loads(&loads).unwrap();
        assert!(close(s.balance, 1.0 / 8.0));
        assert!(close(s.entropy_bits, 0.0));
        assert!(close(s.max_vio, 7.0));
        assert_eq!(s.dead, 7);
    }

    #[test]
    fn two_of_four_experts() {
        let s = LoadStats::from_loads(&[0.5, 0.5, 0.0, 0.0]).unwrap();
        assert!(close(s.balance, 0.5));
        assert!(close(s.entropy_bits, 1.0));
        assert!(close(s.cv, 1.0));
        assert_eq!(s.dead, 2);
        assert!(LoadStats::from_loads(&[]).is_none());
        assert!(LoadStats::from_loads(&[0.0, 0.0]).is_none());
    }

    #[test]
    fn derive_groups_loads_by_layer() {
        let values = [("moe/L1/load/E1", 0.5), ("loss", 2.0), ("moe/L1/load/E0", 0.5), ("moe/L0/load/E0", 1.0), ("moe/L0/load/E1", 0.0)];
        let out = derive(values.iter().map(|(n, v)| (*n, *v)));
        let get = |n: &str| out.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!(get("moe/L0/balance"), Some(0.5));
        assert_eq!(get("moe/L1/balance"), Some(1.0));
        assert_eq!(get("moe/L0/dead_experts"), Some(1.0));
        assert_eq!(MoeLayer::parse_load("moe/L12/load/E3"), Some((12, 3)));
        assert_eq!(MoeLayer::parse_load("moe/L1/balance"), None);
    }
}
