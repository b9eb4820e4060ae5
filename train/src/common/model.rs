//! A small decoder-only transformer: token + position embeddings, pre-LayerNorm blocks
//! of causal self-attention (libtorch's scaled-dot-product attention) and a GELU MLP,
//! and an output head tied to the token embedding. With `[run.moe]`, chosen
//! layers replace the dense MLP with a routed mixture of experts (`moe.rs`).
use tch::nn::{self, Module};
use tch::{Kind, Tensor};

use super::moe::{MoeMlp, Routing};
use rlmon::config::{ModelConfig, MoeConfig};

/// Parameter group without weight decay (LayerNorm gains and biases).
pub const NO_DECAY_GROUP: usize = 1;
const INIT_STD: f64 = 0.02;

#[derive(Debug)]
struct Block {
    ln1: nn::LayerNorm,
    qkv: nn::Linear,
    proj: nn::Linear,
    ln2: nn::LayerNorm,
    mlp: Mlp,
    heads: i64,
    /// Plain matmul-softmax attention instead of SDPA, whose fused CUDA backward
    /// kernels may accumulate atomically (not bitwise repeatable).
    math_attention: bool,
}

#[derive(Debug)]
enum Mlp {
    Dense { fc_in: nn::Linear, fc_out: nn::Linear },
    Moe(MoeMlp),
}

/// What a forward pass should return besides logits.
#[derive(Debug, Default, Clone, Copy)]
pub struct ForwardOptions<'a> {
    /// The router-collapse fault is active.
    pub collapse_router: bool,
    /// Layers whose output (the residual stream after the block) to keep.
    pub keep_hidden: &'a [usize],
}

pub struct ForwardOutput {
    pub logits: Tensor,
    /// Per MoE layer (by layer index), what its router did.
    pub routing: Vec<(usize, Routing)>,
    /// Requested layer outputs `[batch * time, d_model]`, detached.
    pub hidden: Vec<(usize, Tensor)>,
    /// The normalised last hidden state `[batch, time, d_model]` the logits are read
    /// from (the rlhf value head reads it too).
    pub final_hidden: Tensor,
}

fn linear(p: nn::Path, d_in: i64, d_out: i64, std: f64) -> nn::Linear {
    let cfg = nn::LinearConfig { ws_init: nn::Init::Randn { mean: 0.0, stdev: std }, bias: false, ..Default::default() };
    nn::linear(p, d_in, d_out, cfg)
}

fn layer_norm(p: nn::Path, d: i64) -> nn::LayerNorm {
    nn::layer_norm(p.set_group(NO_DECAY_GROUP), vec![d], Default::default())
}

impl Block {
    fn new(p: nn::Path, m: &ModelConfig, moe: Option<&MoeConfig>) -> Self {
        let d = m.d_model as i64;
        // GPT-2's scaled init for the projections that write into the residual stream.
        let resid_std = INIT_STD / (2.0 * m.layers as f64).sqrt();
        let mlp = match moe {
            Some(cfg) => Mlp::Moe(MoeMlp::new(&p / "moe", d, cfg, |p, i, o, resid| linear(p, i, o, if resid { resid_std } else { INIT_STD }))),
            None => Mlp::Dense { fc_in: linear(&p / "fc_in", d, 4 * d, INIT_STD), fc_out: linear(&p / "fc_out", 4 * d, d, resid_std) },
        };
        Block {
            ln1: layer_norm(&p / "ln1", d),
            qkv: linear(&p / "qkv", d, 3 * d, INIT_STD),
            proj: linear(&p / "proj", d, d, resid_std),
            ln2: layer_norm(&p / "ln2", d),
            mlp,
            heads: m.heads as i64,
            math_attention: false,
        }
    }

    fn forward(&self, x: &Tensor, collapse_router: bool) -> (Tensor, Option<Routing>) {
        let (b, t, d) = x.size3().expect("block input is [batch, time, d_model]");
        let head_dim = d / self.heads;
        let qkv = self.qkv.forward(&self.ln1.forward(x));
        // One split, not three narrows: its backward concatenates the three gradients,
        // where each narrow's would zero a full-width buffer and autograd then add them.
        let heads = |x: &Tensor| x.view([b, t, self.heads, head_dim]).transpose(1, 2);
        let parts = qkv.split(d, 2);
        let (q, k, v) = (heads(&parts[0]), heads(&parts[1]), heads(&parts[2]));
        let att = if self.math_attention {
            let scores = q.matmul(&k.transpose(-2, -1)) / (head_dim as f64).sqrt();
            let future = Tensor::ones([t, t], (Kind::Bool, x.device())).triu(1);
            scores.masked_fill(&future, f64::NEG_INFINITY).softmax(-1, scores.kind()).matmul(&v)
        } else {
            Tensor::scaled_dot_product_attention(&q, &k, &v, None::<Tensor>, 0.0, true, None, false)
        };
        let att = att.transpose(1, 2).contiguous().view([b, t, d]);
        let x = x + self.proj.forward(&att);
        let h = self.ln2.forward(&x);
        match &self.mlp {
            Mlp::Dense { fc_in, fc_out } => (&x + fc_out.forward(&fc_in.forward(&h).gelu("tanh")), None),
            Mlp::Moe(moe) => {
                let (out, routing) = moe.forward(&h.view([b * t, d]), collapse_router);
                (x + out.view([b, t, d]), Some(routing))
            }
        }
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
    pub fn new(p: &nn::Path, m: &ModelConfig, moe: Option<&MoeConfig>) -> Self {
        let moe_at = |i: usize| moe.filter(|c| c.layers.contains(&i));
        let emb_cfg = nn::EmbeddingConfig { ws_init: nn::Init::Randn { mean: 0.0, stdev: INIT_STD }, ..Default::default() };
        TransformerLm {
            wte: nn::embedding(p / "wte", m.vocab as i64, m.d_model as i64, emb_cfg),
            wpe: nn::embedding(p / "wpe", m.seq_len as i64, m.d_model as i64, emb_cfg),
            blocks: (0..m.layers).map(|i| Block::new(p / "blocks" / i, m, moe_at(i))).collect(),
            ln_f: layer_norm(p / "ln_f", m.d_model as i64),
            vocab: m.vocab as i64,
        }
    }

    /// Logits `[batch, time, vocab]` for token ids `[batch, time]`.
    pub fn forward(&self, tokens: &Tensor) -> Tensor {
        self.forward_with(tokens, ForwardOptions::default()).logits
    }

    /// Logits plus routing statistics and the requested layer outputs.
    pub fn forward_with(&self, tokens: &Tensor, opts: ForwardOptions) -> ForwardOutput {
        let t = tokens.size()[1];
        let pos = Tensor::arange(t, (Kind::Int64, tokens.device()));
        let mut x = self.wte.forward(tokens) + self.wpe.forward(&pos);
        let (mut routing, mut hidden) = (Vec::new(), Vec::new());
        for (i, block) in self.blocks.iter().enumerate() {
            let (next, r) = block.forward(&x, opts.collapse_router);
            x = next;
            if let Some(r) = r {
                routing.push((i, r));
            }
            if opts.keep_hidden.contains(&i) {
                let d = x.size()[2];
                hidden.push((i, x.detach().reshape([-1, d])));
            }
        }
        let final_hidden = self.ln_f.forward(&x);
        // Tied head: the token embedding matrix maps hidden states back to the vocabulary.
        let logits = final_hidden.matmul(&self.wte.ws.tr());
        ForwardOutput { logits, routing, hidden, final_hidden }
    }

    /// Mean next-token cross-entropy of `logits` predicting `targets`.
    pub fn cross_entropy(&self, logits: &Tensor, targets: &Tensor) -> Tensor {
        logits.reshape([-1, self.vocab]).cross_entropy_for_logits(&targets.reshape([-1]))
    }

    /// Mean next-token cross-entropy of `inputs` predicting `targets`.
    pub fn loss(&self, inputs: &Tensor, targets: &Tensor) -> Tensor {
        self.cross_entropy(&self.forward(inputs), targets)
    }

    /// `deterministic = true`: attention without fused kernels (see `Block`).
    pub fn deterministic(mut self, yes: bool) -> Self {
        for b in &mut self.blocks {
            b.math_attention = yes;
        }
        self
    }

    /// The MoE layers, by layer index.
    pub fn moe_layers(&self) -> impl Iterator<Item = (usize, &MoeMlp)> {
        self.blocks.iter().enumerate().filter_map(|(i, b)| match &b.mlp {
            Mlp::Moe(m) => Some((i, m)),
            Mlp::Dense { .. } => None,
        })
    }
}
