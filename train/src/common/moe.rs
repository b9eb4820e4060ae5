//! A top-k routed mixture of expert MLPs (Switch / GShard style): a linear router
//! scores experts per token, each token goes to its `top_k` best experts weighted
//! by their renormalised router probabilities, and an expert takes at most its
//! capacity of tokens (first choices before second choices, earlier tokens first);
//! the rest are dropped (they pass through the residual only).
//!
//! Balancing: the Switch auxiliary loss N·Σ f_e·P_e, an optional router z-loss,
//! and optional aux-loss-free balancing (a per-expert bias added to the router
//! scores for selection only, nudged by sign(mean load - load) after each step).
use tch::nn::{self, Module};
use tch::{Kind, Tensor};

use rlmon::config::MoeConfig;

/// Router logit added to experts 0 and 1 by the `router_collapse_at` fault: large
/// enough to saturate the softmax, so the router gets no gradient to undo it and
/// every token's choices land on those two experts.
const COLLAPSE_LOGIT: f64 = 30.0;

#[derive(Debug)]
struct Expert {
    fc_in: nn::Linear,
    fc_out: nn::Linear,
}

#[derive(Debug)]
pub struct MoeMlp {
    router: nn::Linear,
    experts: Vec<Expert>,
    top_k: i64,
    capacity_factor: f64,
    /// Aux-loss-free selection bias, one per expert; updated in place, no gradient.
    bias: Tensor,
    bias_step: f64,
}

/// What one MoE layer's routing did in one forward pass.
#[derive(Debug)]
pub struct Routing {
    /// Fraction of routed (token, choice) pairs per expert, before capacity drops.
    pub loads: Tensor,
    /// Fraction of routed pairs dropped for capacity.
    pub dropped_frac: Tensor,
    /// Switch load-balancing loss (1 at perfect balance), in the autograd graph.
    pub aux_loss: Tensor,
    /// Router z-loss, mean squared log-sum-exp of the router logits.
    pub z_loss: Tensor,
}

impl MoeMlp {
    /// `linear` builds a bias-free linear layer with the model's init.
    pub fn new(p: nn::Path, d: i64, cfg: &MoeConfig, linear: impl Fn(nn::Path, i64, i64, bool) -> nn::Linear) -> Self {
        // Expert width 4d/k keeps the active compute per token near a dense 4d MLP.
        let hidden = (4 * d / cfg.top_k as i64).max(1);
        let experts = (0..cfg.experts)
            .map(|e| Expert { fc_in: linear(&p / "experts" / e / "fc_in", d, hidden, false), fc_out: linear(&p / "experts" / e / "fc_out", hidden, d, true) })
            .collect();
        MoeMlp {
            router: linear(&p / "router", d, cfg.experts as i64, false),
            experts,
            top_k: cfg.top_k as i64,
            capacity_factor: cfg.capacity_factor,
            bias: Tensor::zeros([cfg.experts as i64], (Kind::Float, p.device())),
            bias_step: cfg.bias_balancing,
        }
    }

    /// `x`: `[tokens, d_model]` (already normalised). `collapse`: the router-collapse
    /// fault is active.
    pub fn forward(&self, x: &Tensor, collapse: bool) -> (Tensor, Routing) {
        let (s, d) = x.size2().expect("MoE input is [tokens, d_model]");
        let n = self.experts.len() as i64;
        let k = self.top_k;
        let mut logits = self.router.forward(x).to_kind(Kind::Float);
        if collapse {
            let mut push = vec![0f32; n as usize];
            push[0] = COLLAPSE_LOGIT as f32;
            push[1] = COLLAPSE_LOGIT as f32;
            logits = logits + Tensor::from_slice(&push).to_device(x.device());
        }
        let probs = logits.softmax(-1, Kind::Float);
        let scores = if self.bias_step > 0.0 { &logits + &self.bias } else { logits.shallow_clone() };
        let (_, choice) = scores.topk(k, -1, true, true); // [s, k]
        let gates = probs.gather(-1, &choice, false);
        let gates = &gates / gates.sum_dim_intlist(-1, true, Kind::Float).clamp_min(1e-9);

        // Queue position of each (choice, token) pair in its expert: choice-major
        // order, so every token's first choice is served before any second choice.
        let onehot = choice.one_hot(n).to_kind(Kind::Float); // [s, k, n]
        let by_choice = onehot.transpose(0, 1).reshape([k * s, n]);
        let position = (by_choice.cumsum(0, Kind::Float) * &by_choice).sum_dim_intlist(-1, false, Kind::Float);
        let capacity = (self.capacity_factor * (s * k) as f64 / n as f64).ceil().max(1.0);
        let kept = position.le(capacity).reshape([k, s]).transpose(0, 1); // [s, k]

        let routed = (s * k) as f64;
        let counts = onehot.sum_dim_intlist([0i64, 1].as_slice(), false, Kind::Float); // [n]
        let loads = (&counts / routed).detach();
        let dropped_frac = (kept.to_kind(Kind::Float).sum(Kind::Float) / -routed + 1.0).detach();
        let aux_loss = (&loads * probs.mean_dim(0, false, Kind::Float)).sum(Kind::Float) * n as f64;
        let z_loss = logits.logsumexp(-1, false).square().mean(Kind::Float);

        let mut out = x.zeros_like();
        for (e, expert) in self.experts.iter().enumerate() {
            let mine = choice.eq(e as i64).logical_and(&kept); // [s, k]
            let idx = mine.any_dim(-1, false).nonzero().squeeze_dim(1);
            if idx.numel() == 0 {
                continue;
            }
            let gate = (&gates * mine.to_kind(Kind::Float)).sum_dim_intlist(-1, false, Kind::Float).index_select(0, &idx);
            let h = expert.fc_out.forward(&expert.fc_in.forward(&x.index_select(0, &idx)).gelu("tanh"));
            let kind = h.kind();
            let h = h * gate.unsqueeze(1).to_kind(kind);
            // index_copy (each token at most once per expert), not index_add: no
            // atomic accumulation, so CUDA runs stay bitwise repeatable.
            out = out + Tensor::zeros([s, d], (h.kind(), h.device())).index_copy(0, &idx, &h);
        }
        (out, Routing { loads, dropped_frac, aux_loss, z_loss })
    }

    /// Aux-loss-free balancing: raise the bias of under-loaded experts, lower it for
    /// over-loaded ones.
    pub fn update_bias(&self, loads: &Tensor) {
        if self.bias_step <= 0.0 {
            return;
        }
        tch::no_grad(|| {
            let mean = 1.0 / self.experts.len() as f64;
            let delta = (loads.neg() + mean).sign() * self.bias_step;
            let mut bias = self.bias.shallow_clone();
            let _ = bias.g_add_(&delta.to_kind(Kind::Float));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    fn layer(experts: usize, top_k: usize, capacity_factor: f64, bias_balancing: f64) -> (nn::VarStore, MoeMlp) {
        tch::manual_seed(1);
        let vs = nn::VarStore::new(Device::Cpu);
        let cfg = MoeConfig { experts, top_k, layers: vec![0], capacity_factor, aux_loss_coef: 0.01, z_loss_coef: 0.0, bias_balancing };
        let moe = MoeMlp::new(vs.root(), 16, &cfg, |p, i, o, _| nn::linear(p, i, o, nn::LinearConfig { bias: false, ..Default::default() }));
        (vs, moe)
    }

    #[test]
    fn loads_count_every_routed_token_once() {
        tch::set_num_threads(1);
        let (_vs, moe) = layer(8, 2, 8.0, 0.0);
        let x = Tensor::randn([64, 16], (Kind::Float, Device::Cpu));
        let (out, r) = moe.forward(&x, false);
        assert_eq!(out.size(), vec![64, 16]);
        let loads = Vec::<f64>::try_from(&r.loads).unwrap();
        assert_eq!(loads.len(), 8);
        // Fractions of 64 tokens x 2 choices: they sum to 1 and are multiples of 1/128.
        assert!((loads.iter().sum::<f64>() - 1.0).abs() < 1e-6);
        assert!(loads.iter().all(|l| ((l * 128.0) - (l * 128.0).round()).abs() < 1e-4));
        assert_eq!(r.dropped_frac.double_value(&[]), 0.0, "capacity 8x the fair share drops nothing");
        assert!(r.aux_loss.double_value(&[]) >= 1.0 - 1e-6, "Switch loss is at least 1");
    }

    #[test]
    fn tight_capacity_drops_tokens() {
        let (_vs, moe) = layer(4, 1, 0.5, 0.0);
        let x = Tensor::randn([64, 16], (Kind::Float, Device::Cpu));
        let (_, r) = moe.forward(&x, false);
        // Capacity is half the fair share: at least half the tokens find no room.
        assert!(r.dropped_frac.double_value(&[]) >= 0.5 - 1e-6);
    }

    #[test]
    fn collapse_fault_sends_every_choice_to_two_experts() {
        let (_vs, moe) = layer(4, 2, 4.0, 0.0);
        let x = Tensor::randn([64, 16], (Kind::Float, Device::Cpu)) * 0.1;
        let (_, r) = moe.forward(&x, true);
        let loads = Vec::<f64>::try_from(&r.loads).unwrap();
        assert!((loads[0] - 0.5).abs() < 1e-6 && (loads[1] - 0.5).abs() < 1e-6, "{loads:?}");
    }

    #[test]
    fn bias_balancing_favours_underloaded_experts() {
        let (_vs, moe) = layer(4, 1, 4.0, 0.1);
        moe.update_bias(&Tensor::from_slice(&[0.7f32, 0.1, 0.1, 0.1]));
        let bias = Vec::<f64>::try_from(&moe.bias).unwrap();
        assert!((bias[0] + 0.1).abs() < 1e-6 && (bias[1] - 0.1).abs() < 1e-6);
    }
}
