//! A small decoder-only transformer: token + position embeddings, pre-LayerNorm blocks
//! of causal self-attention (libtorch's scaled-dot-product attention) and a GELU MLP,
//! and an output head tied to the token embedding.
use tch::nn::{self, Module};
use tch::{Kind, Tensor};

use crate::config::ModelConfig;

/// Parameter group without weight decay (LayerNorm gains and biases).
pub const NO_DECAY_GROUP: usize = 1;
const INIT_STD: f64 = 0.02;

#[derive(Debug)]
struct Block {
    ln1: nn::LayerNorm,
    qkv: nn::Linear,
    proj: nn::Linear,
    ln2: nn::LayerNorm,
    fc_in: nn::Linear,
    fc_out: nn::Linear,
    heads: i64,
}

fn linear(p: nn::Path, d_in: i64, d_out: i64, std: f64) -> nn::Linear {
    let cfg = nn::LinearConfig { ws_init: nn::Init::Randn { mean: 0.0, stdev: std }, bias: false, ..Default::default() };
    nn::linear(p, d_in, d_out, cfg)
}

fn layer_norm(p: nn::Path, d: i64) -> nn::LayerNorm {
    nn::layer_norm(p.set_group(NO_DECAY_GROUP), vec![d], Default::default())
}

impl Block {
    fn new(p: nn::Path, m: &ModelConfig) -> Self {
        let d = m.d_model as i64;
        // GPT-2's scaled init for the projections that write into the residual stream.
        let resid_std = INIT_STD / (2.0 * m.layers as f64).sqrt();
        Block {
            ln1: layer_norm(&p / "ln1", d),
            qkv: linear(&p / "qkv", d, 3 * d, INIT_STD),
            proj: linear(&p / "proj", d, d, resid_std),
            ln2: layer_norm(&p / "ln2", d),
            fc_in: linear(&p / "fc_in", d, 4 * d, INIT_STD),
            fc_out: linear(&p / "fc_out", 4 * d, d, resid_std),
            heads: m.heads as i64,
        }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let (b, t, d) = x.size3().expect("block input is [batch, time, d_model]");
        let head_dim = d / self.heads;
        let qkv = self.qkv.forward(&self.ln1.forward(x));
        let split = |i: i64| qkv.narrow(2, i * d, d).view([b, t, self.heads, head_dim]).transpose(1, 2);
        let (q, k, v) = (split(0), split(1), split(2));
        let att = Tensor::scaled_dot_product_attention(&q, &k, &v, None::<Tensor>, 0.0, true, None, false);
        let att = att.transpose(1, 2).contiguous().view([b, t, d]);
        let x = x + self.proj.forward(&att);
        let mlp = self.fc_out.forward(&self.fc_in.forward(&self.ln2.forward(&x)).gelu("tanh"));
        x + mlp
    }
}

#[derive(Debug)]
pub struct TransformerLm {
    wte: nn::Embedding,
    wpe: nn::Embedding,
    blocks: Vec<Block>,
    ln_f: nn::LayerNorm,
    vocab: i64,
}

impl TransformerLm {
    pub fn new(p: &nn::Path, m: &ModelConfig) -> Self {
        let emb_cfg = nn::EmbeddingConfig { ws_init: nn::Init::Randn { mean: 0.0, stdev: INIT_STD }, ..Default::default() };
        TransformerLm {
            wte: nn::embedding(p / "wte", m.vocab as i64, m.d_model as i64, emb_cfg),
            wpe: nn::embedding(p / "wpe", m.seq_len as i64, m.d_model as i64, emb_cfg),
            blocks: (0..m.layers).map(|i| Block::new(p / "blocks" / i, m)).collect(),
            ln_f: layer_norm(p / "ln_f", m.d_model as i64),
            vocab: m.vocab as i64,
        }
    }

    /// Logits `[batch, time, vocab]` for token ids `[batch, time]`.
    pub fn forward(&self, tokens: &Tensor) -> Tensor {
        self.forward_with_hidden(tokens).0
    }

    /// Logits and the final normalised hidden states `[batch, time, d_model]` (what
    /// the rlhf workload's value head reads).
    pub fn forward_with_hidden(&self, tokens: &Tensor) -> (Tensor, Tensor) {
        let t = tokens.size()[1];
        let pos = Tensor::arange(t, (Kind::Int64, tokens.device()));
        let mut x = self.wte.forward(tokens) + self.wpe.forward(&pos);
        for block in &self.blocks {
            x = block.forward(&x);
        }
        let hidden = self.ln_f.forward(&x);
        // Tied head: the token embedding matrix maps hidden states back to the vocabulary.
        let logits = hidden.matmul(&self.wte.ws.tr());
        (logits, hidden)
    }

    /// Mean next-token cross-entropy of `inputs` predicting `targets`.
    pub fn loss(&self, inputs: &Tensor, targets: &Tensor) -> Tensor {
        self.forward(inputs).reshape([-1, self.vocab]).cross_entropy_for_logits(&targets.reshape([-1]))
    }
}
