"""The lm workload's model and training step in PyTorch eager, for a side-by-side
throughput comparison with rlmon's tch loop (scripts/bench-throughput.sh).

Same architecture, batch, sequence length, optimizer, clipping and thread count as
the rlmon config it reads; the loss is read back every step as rlmon does. Data are
random byte windows: throughput does not depend on the text.
Prints one JSON object: {"tokens_per_s", "steps", "threads"}.
"""
import argparse
import json
import math
import time
import tomllib

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.ln2 = nn.LayerNorm(d)
        self.fc_in = nn.Linear(d, 4 * d, bias=False)
        self.fc_out = nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, d))
        return x + self.fc_out(F.gelu(self.fc_in(self.ln2(x)), approximate="tanh"))


class Lm(nn.Module):
    def __init__(self, layers, d, heads, seq_len, vocab):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq_len, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1])
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
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

    torch.set_num_threads(args.threads)
    torch.manual_seed(run.get("seed", 0))
    model = Lm(layers, d, heads, seq_len, vocab)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=betas, eps=1e-8, foreach=False)
    corpus = torch.randint(0, 256, (1 << 20,), dtype=torch.int64)

    step_times = []
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        starts = torch.randint(0, corpus.numel() - seq_len - 1, (batch,))
        windows = torch.stack([corpus[s:s + seq_len + 1] for s in starts.tolist()])
        x, y = windows[:, :-1], windows[:, 1:]
        loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip, foreach=False)
        opt.step()
        loss.item()
        step_times.append(time.perf_counter() - t0)
    # The same warm-up rule as rlmon's summary: skip the first 10% (at most 10 steps).
    skip = min(len(step_times) // 10, 10)
    kept = step_times[skip:]
    print(json.dumps({"tokens_per_s": batch * seq_len * len(kept) / sum(kept),
                      "steps": args.steps, "threads": args.threads}))


if __name__ == "__main__":
    main()
