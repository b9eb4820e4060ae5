//! The policy (the shared transformer, plus a value head for PPO) and the frozen
//! reference, and the per-token quantities both are evaluated for on sampled sequences.
use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

use rlmon::config::ModelConfig;
use crate::common::model::{ForwardOptions, TransformerLm};

pub struct Policy {
    pub vs: nn::VarStore,
    pub lm: TransformerLm,
    /// Scalar value of the state before each token, read from the final hidden state.
    value_head: Option<nn::Linear>,
}

/// Log-probabilities and entropies of the response tokens `[batch, max_new_tokens]`
/// under the temperature-scaled distribution the tokens were sampled from.
pub struct Evaluation {
    pub logp: Tensor,
    pub entropy: Tensor,
    /// Value of the state before each response token (with a value head).
    pub values: Option<Tensor>,
}

impl Policy {
    /// Builds fresh parameters: call under `determinism::seeded_init`.
    /// `deterministic` selects attention without fused kernels (see `common::model`).
    pub fn new(device: Device, model: &ModelConfig, with_value_head: bool, deterministic: bool) -> Self {
        let vs = nn::VarStore::new(device);
        let lm = TransformerLm::new(&vs.root(), model, None).deterministic(deterministic);
        // Zero-initialised: values start at 0, so early advantages are the rewards.
        let value_head = with_value_head.then(|| {
            let cfg = nn::LinearConfig { ws_init: nn::Init::Const(0.0), bs_init: Some(nn::Init::Const(0.0)), bias: true };
            nn::linear(vs.root() / "value_head", model.d_model as i64, 1, cfg)
        });
        Policy { vs, lm, value_head }
    }

    /// A frozen copy of this policy's language model (no value head).
    pub fn frozen_copy(&self, device: Device, model: &ModelConfig, deterministic: bool) -> Self {
        let mut copy = Policy::new(device, model, false, deterministic);
        copy.vs.copy(&self.vs).expect("the reference has the policy's parameter names");
        copy.vs.freeze();
        copy
    }

    /// Makes this (frozen) copy equal to `source` again.
    pub fn reload_from(&mut self, source: &Policy) {
        self.vs.copy(&source.vs).expect("the reference has the policy's parameter names");
    }

    /// Evaluates `sequences` `[batch, prompt_len + n]`: the response token at position
    /// `prompt_len + j` is predicted from the hidden state at `prompt_len + j - 1`.
    pub fn evaluate(&self, sequences: &Tensor, prompt_len: usize, temperature: f64) -> Evaluation {
        let total = sequences.size()[1];
        let (start, n) = (prompt_len as i64 - 1, total - prompt_len as i64);
        let inputs = sequences.narrow(1, 0, total - 1);
        let out = self.lm.forward_with(&inputs, ForwardOptions::default());
        let (logits, hidden) = (out.logits, out.final_hidden);
        let log_probs = (logits.narrow(1, start, n) / temperature).log_softmax(-1, Kind::Float);
        let targets = sequences.narrow(1, prompt_len as i64, n).unsqueeze(-1);
        let logp = log_probs.gather(2, &targets, false).squeeze_dim(-1);
        let entropy = -(log_probs.exp() * &log_probs).sum_dim_intlist(-1, false, Kind::Float);
        let values = self.value_head.as_ref().map(|head| head.forward(&hidden.narrow(1, start, n)).squeeze_dim(-1));
        Evaluation { logp, entropy, values }
    }
}
