"""The lm workload's model and training step in PyTorch eager, for a side-by-side
throughput comparison with rlmon's tch loop (scripts/bench-throughput.sh,
scripts/bench-moe.sh).

Same architecture, init, batch, sequence length, optimizer, learning-rate schedule,
clipping and thread count as the rlmon config it reads. With a [run.moe] table the
chosen layers use the same top-k routed mixture of experts as src/workload/common/moe.rs
(capacity, drops, Switch aux loss, z-loss, aux-loss-free bias balancing). As in rlmon, the loss and the gradient
norm are read back every step, and for MoE the mean aux loss and each layer's
per-expert loads and dropped fraction. The data are rlmon's own synthetic text
(train/src/common/data.rs, ported below with its random source): a dense model's
throughput does not depend on the text, but an MoE layer's does, since routing decides
how many tokens each expert processes and how many capacity drops (random bytes make
the router drop about 40% of the choices, rlmon's text none). Prints one JSON object:
{"tokens_per_s", "steps", "threads"}.
"""
import argparse
import json
import math
import time
import tomllib

import torch
import torch.nn as nn
import torch.nn.functional as F

INIT_STD = 0.02
MASK64 = (1 << 64) - 1


class SplitMix64:
    """src/workload/rng.rs: rlmon's deterministic random source."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        return self.next_u64() % n

    def pick(self, items):
        return items[self.below(len(items))]


DETERMINERS = ["the", "a", "every", "one", "that"]
ADJECTIVES = ["small", "quiet", "bright", "heavy", "quick", "old", "green", "careful", "distant", "warm"]
NOUNS = ["model", "river", "engineer", "lantern", "garden", "signal", "teacher", "kernel", "harbor", "falcon",
         "matrix", "violin"]
VERBS = ["watches", "follows", "builds", "carries", "finds", "trains", "measures", "paints", "guards", "answers"]
PREPOSITIONS = ["near", "under", "beside", "behind", "above", "with"]


def synthetic_text(seed, length):
    """train/src/common/data.rs `synthetic_text`: the same generator and random source."""
    rng = SplitMix64(seed ^ 0x726C6D6F6E000001)
    parts, size = [], 0
    while size < length:
        for _ in range(1 + rng.below(4)):
            if rng.below(4) == 0:
                a, b = rng.below(100), rng.below(100)
                piece = f"{a} + {b} = {a + b}. "
            else:
                subject = f"{rng.pick(DETERMINERS)} {rng.pick(ADJECTIVES)} {rng.pick(NOUNS)}"
                subject = subject[0].upper() + subject[1:]
                piece = (f"{subject} {rng.pick(VERBS)} {rng.pick(DETERMINERS)} {rng.pick(NOUNS)} "
                         f"{rng.pick(PREPOSITIONS)} the {rng.pick(NOUNS)}. ")
            parts.append(piece)
            size += len(piece)
        parts.append("\n")
        size += 1
    return "".join(parts)[:length].encode()


def linear(d_in, d_out, std):
    lin = nn.Linear(d_in, d_out, bias=False)
    nn.init.normal_(lin.weight, 0.0, std)
    return lin


class MoeMlp(nn.Module):
    """src/workload/common/moe.rs: router d->N, top-k on the logits (plus the
    balancing bias when bias_balancing > 0), gates = renormalised router probabilities
    of the chosen experts, capacity ceil(cf * S * k / N) with choice-major queue
    positions, experts fc_in (d->4d/k) -> GELU(tanh) -> fc_out."""

    def __init__(self, d, experts, top_k, capacity_factor, bias_step, resid_std):
        super().__init__()
        hidden = max(4 * d // top_k, 1)
        self.top_k, self.capacity_factor = top_k, capacity_factor
        self.router = linear(d, experts, INIT_STD)
        self.fc_in = nn.ModuleList(linear(d, hidden, INIT_STD) for _ in range(experts))
        self.fc_out = nn.ModuleList(linear(hidden, d, resid_std) for _ in range(experts))
        # Aux-loss-free selection bias: a buffer, not a parameter (no gradient, no
        # weight decay, not clipped), as in rlmon.
        self.bias_step = bias_step
        self.register_buffer("bias", torch.zeros(experts))

    def forward(self, x):
        s, d = x.shape
        n, k = len(self.fc_in), self.top_k
        logits = self.router(x).float()
        probs = logits.softmax(-1)
        scores = logits + self.bias if self.bias_step > 0 else logits
        choice = scores.topk(k, -1, largest=True, sorted=True).indices  # [s, k]
        gates = probs.gather(-1, choice)
        gates = gates / gates.sum(-1, keepdim=True).clamp_min(1e-9)
        onehot = F.one_hot(choice, n).float()  # [s, k, n]
        by_choice = onehot.transpose(0, 1).reshape(k * s, n)
        position = (by_choice.cumsum(0) * by_choice).sum(-1)
        capacity = max(math.ceil(self.capacity_factor * s * k / n), 1)
        kept = (position <= capacity).reshape(k, s).t()  # [s, k]
        routed = s * k
        loads = (onehot.sum((0, 1)) / routed).detach()
        dropped_frac = (1.0 - kept.float().sum() / routed).detach()
        aux_loss = (loads * probs.mean(0)).sum() * n
        z_loss = logits.logsumexp(-1).square().mean()
        out = torch.zeros_like(x)
        for fc_in, fc_out, e in zip(self.fc_in, self.fc_out, range(n)):
            mine = (choice == e) & kept
            idx = mine.any(-1).nonzero().squeeze(1)
            if idx.numel() == 0:
                continue
            gate = (gates * mine.float()).sum(-1).index_select(0, idx)
            h = fc_out(F.gelu(fc_in(x.index_select(0, idx)), approximate="tanh"))
            h = h * gate.unsqueeze(1).to(h.dtype)
            out = out + torch.zeros(s, d, dtype=h.dtype, device=x.device).index_copy(0, idx, h)
        return out, (loads, dropped_frac, aux_loss, z_loss)

    @torch.no_grad()
    def update_bias(self, loads):
        """MoeMlp::update_bias: raise the bias of under-loaded experts, lower it for
        over-loaded ones, by sign(1/N - load) * bias_step."""
        if self.bias_step <= 0:
            return
        mean = 1.0 / len(self.fc_in)
        self.bias.add_(torch.sign(mean - loads) * self.bias_step)


class Block(nn.Module):
    def __init__(self, d, heads, resid_std, moe=None):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = linear(d, 3 * d, INIT_STD)
        self.proj = linear(d, d, resid_std)
        self.ln2 = nn.LayerNorm(d)
        if moe is None:
            self.moe = None
            self.fc_in = linear(d, 4 * d, INIT_STD)
            self.fc_out = linear(4 * d, d, resid_std)
        else:
            self.moe = MoeMlp(d, moe["experts"], moe.get("top_k", min(2, moe["experts"])),
                              moe.get("capacity_factor", 1.25), moe.get("bias_balancing", 0.0), resid_std)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
        h = self.ln2(x)
        if self.moe is None:
            return x + self.fc_out(F.gelu(self.fc_in(h), approximate="tanh")), None
        out, routing = self.moe(h.view(b * t, d))
        return x + out.view(b, t, d), routing


class Lm(nn.Module):
    def __init__(self, layers, d, heads, seq_len, vocab, moe=None):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq_len, d)
        nn.init.normal_(self.wte.weight, 0.0, INIT_STD)
        nn.init.normal_(self.wpe.weight, 0.0, INIT_STD)
        resid_std = INIT_STD / math.sqrt(2 * layers)
        moe_layers = set(moe.get("layers", range(layers))) if moe else set()
        self.blocks = nn.ModuleList(Block(d, heads, resid_std, moe if i in moe_layers else None)
                                    for i in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        routing = []
        for block in self.blocks:
            x, r = block(x)
            if r is not None:
                routing.append(r)
        return self.ln_f(x) @ self.wte.weight.t(), routing


def lr_at(lr, warmup, min_ratio, step, total):
    """src/workload/common/schedule.rs: linear warm-up, then cosine to lr * min_ratio."""
    warmup = min(warmup, total)
    if step <= warmup:
        return lr * step / warmup
    progress = min(max((step - warmup) / max(total - warmup, 1), 0.0), 1.0)
    min_lr = lr * min_ratio
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * progress))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--device", default="cpu", help="cpu or cuda:N (fp32, TF32 off, as rlmon's worker)")
    args = ap.parse_args()
    with open(args.config, "rb") as f:
        run = tomllib.load(f)["run"][0]
    m = run.get("model", {})
    layers, d, heads = m.get("layers", 2), m.get("d_model", 128), m.get("heads", 4)
    seq_len, vocab = m.get("seq_len", 64), m.get("vocab", 256)
    batch = run.get("batch_size", 16)
    o = run.get("optimizer", {})
    lr, betas = o.get("lr", 3e-3), tuple(o.get("betas", [0.9, 0.95]))
    wd, clip = o.get("weight_decay", 0.1), o.get("grad_clip", 1.0)
    warmup, min_ratio = o.get("warmup_steps", 20), o.get("min_lr_ratio", 0.1)
    moe = run.get("moe")
    aux_coef = moe.get("aux_loss_coef", 0.01) if moe else 0.0
    z_coef = moe.get("z_loss_coef", 0.0) if moe else 0.0

    torch.set_num_threads(args.threads)
    torch.manual_seed(run.get("seed", 0))
    model = Lm(layers, d, heads, seq_len, vocab, moe)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    model.to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=betas, eps=1e-8, foreach=False)
    seed = run.get("seed", 0)
    corpus = torch.tensor(list(synthetic_text(seed, 1 << 20)), dtype=torch.int64)
    data_rng = SplitMix64(seed)

    step_times = []
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr_at(lr, warmup, min_ratio, step, args.steps)
        starts = [data_rng.below(corpus.numel() - seq_len) for _ in range(batch)]
        windows = torch.stack([corpus[s:s + seq_len + 1] for s in starts])
        windows = windows.to(device)
        x, y = windows[:, :-1], windows[:, 1:]
        logits, routing = model(x)
        loss = F.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        objective = loss
        if routing:
            aux = torch.stack([r[2] for r in routing]).sum()
            z = torch.stack([r[3] for r in routing]).sum()
            objective = loss + aux * aux_coef + z * z_coef
            # Host reads of the per-step MoE metrics, as rlmon emits them.
            aux.item()
            for loads, dropped_frac, _, _ in routing:
                loads.double().tolist()
                dropped_frac.item()
        opt.zero_grad(set_to_none=False)
        objective.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip, foreach=False).item()
        opt.step()
        # After the update, as rlmon does: each MoE layer's bias follows its loads.
        moe_layers = [block.moe for block in model.blocks if block.moe is not None]
        for layer, (loads, _, _, _) in zip(moe_layers, routing):
            layer.update_bias(loads)
        loss.item()
        step_times.append(time.perf_counter() - t0)
    # The same warm-up rule as rlmon's summary: skip the first 10% (at most 10 steps).
    skip = min(len(step_times) // 10, 10)
    kept = step_times[skip:]
    print(json.dumps({"tokens_per_s": batch * seq_len * len(kept) / sum(kept),
                      "steps": args.steps, "threads": args.threads, "device": str(device)}))


if __name__ == "__main__":
    main()
