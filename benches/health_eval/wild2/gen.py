#!/usr/bin/env python3
"""wild2: a second corpus of realistic trainer logs with labelled health faults.

    python3 gen.py OUTDIR [--seed N]        (stdlib only; default seed 5151)

Writes OUTDIR/runs/<format>-<hash>.<ext> and OUTDIR/labels.json, a list of
{"file", "kind", "onset", "steps", "format", "notes"} (kind "healthy" and onset
null for a healthy run, as benches/health_eval/cli/score.py reads them; onset is the step as the log prints it at the first logged point
where the fault shows; steps = last printed step - first printed step + 1).

Formats (none of them in the first "wild" corpus): fairseq, mmengine, detectron2,
ultralytics, timm, torchtune, openrlhf, verl, nemo, composer, deepspeed, rllib,
clu, paddlenlp. See README.md for the step numbering of each.

Written from how these tools print their logs and from the alert definitions in
the monitor's README / docs/alerts.md, independently of the monitor's code.
"""

import argparse
import hashlib
import json
import math
import os
import random
import struct
import sys
from datetime import datetime, timedelta

NAN = float("nan")
INF = float("inf")

KINDS = [
    "loss_spike", "loss_divergence", "slow_drift", "nonfinite", "grad_explosion",
    "grad_vanishing", "kl_spike", "kl_runaway", "reward_hacking", "reward_saturation",
    "entropy_collapse", "memory_leak", "expert_collapse", "throughput_regression",
]

FORMATS = [
    "fairseq", "mmengine", "detectron2", "ultralytics", "timm", "torchtune", "openrlhf",
    "verl", "nemo", "composer", "deepspeed", "rllib", "clu", "paddlenlp",
]

# Which fault kinds each format can carry (it must log the metric the fault shows in).
ELIGIBLE = {
    "fairseq": ["loss_spike", "loss_divergence", "slow_drift", "grad_explosion", "grad_vanishing",
                "throughput_regression", "expert_collapse"],
    "mmengine": ["loss_spike", "loss_divergence", "slow_drift", "nonfinite", "grad_explosion",
                 "grad_vanishing", "memory_leak", "throughput_regression"],
    "detectron2": ["loss_spike", "loss_divergence", "slow_drift", "nonfinite", "memory_leak",
                   "throughput_regression"],
    "ultralytics": ["loss_spike", "loss_divergence", "slow_drift", "nonfinite"],
    "timm": ["loss_spike", "loss_divergence", "slow_drift", "nonfinite", "throughput_regression"],
    "torchtune": ["loss_spike", "loss_divergence", "slow_drift", "nonfinite", "grad_explosion",
                  "grad_vanishing", "memory_leak", "throughput_regression", "kl_spike",
                  "kl_runaway", "reward_hacking", "reward_saturation"],
    "openrlhf": ["kl_spike", "kl_runaway", "reward_hacking", "reward_saturation",
                 "entropy_collapse", "nonfinite"],
    "verl": ["kl_spike", "kl_runaway", "reward_hacking", "reward_saturation", "entropy_collapse",
             "grad_explosion", "nonfinite", "memory_leak", "throughput_regression"],
    "nemo": ["loss_spike", "loss_divergence", "slow_drift", "nonfinite", "throughput_regression"],
    "composer": ["loss_spike", "loss_divergence", "slow_drift", "nonfinite", "grad_explosion",
                 "grad_vanishing", "memory_leak", "throughput_regression"],
    "deepspeed": ["loss_spike", "loss_divergence", "slow_drift", "nonfinite", "memory_leak",
                  "throughput_regression", "expert_collapse"],
    "rllib": ["kl_spike", "kl_runaway", "reward_saturation", "entropy_collapse", "grad_explosion",
              "nonfinite", "memory_leak", "throughput_regression", "slow_drift"],
    "clu": ["loss_spike", "loss_divergence", "slow_drift", "nonfinite", "grad_explosion",
            "grad_vanishing", "throughput_regression", "expert_collapse"],
    "paddlenlp": ["loss_spike", "loss_divergence", "slow_drift", "nonfinite", "memory_leak",
                  "throughput_regression"],
}

# ----------------------------------------------------------------------------------------
# small numeric helpers
# ----------------------------------------------------------------------------------------


def isfin(v):
    return isinstance(v, (int, float)) and not (math.isnan(v) or math.isinf(v))


def tdev(rng, df=4, clip=3.5):
    """Student-t deviate (heavy tails), clipped so that no healthy point runs away."""
    z = rng.gauss(0.0, 1.0)
    chi = sum(rng.gauss(0.0, 1.0) ** 2 for _ in range(df)) / df
    v = z / math.sqrt(max(chi, 1e-6))
    return max(-clip, min(clip, v))


def median(xs):
    ys = sorted(x for x in xs if isfin(x))
    if not ys:
        return NAN
    m = len(ys) // 2
    return ys[m] if len(ys) % 2 else 0.5 * (ys[m - 1] + ys[m])


def decay_shape(p, c, a):
    """1 at p=0, 0 at p=1; a fast fall then a long tail."""
    p = min(max(p, 0.0), 1.0)
    e = (1.0 + c) ** -a
    return ((1.0 + c * p) ** -a - e) / (1.0 - e)


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def lr_fn(kind, T, peak, warm, final=0.0, milestones=(), gamma=0.1, start_factor=0.0):
    warm = max(0, int(warm))

    def f(s):
        if warm and s < warm:
            return peak * (start_factor + (1.0 - start_factor) * (s + 1) / warm)
        p = (s - warm) / max(1.0, T - warm)
        p = min(max(p, 0.0), 1.0)
        if kind == "cosine":
            return final + (peak - final) * 0.5 * (1.0 + math.cos(math.pi * p))
        if kind == "linear":
            return peak + (final - peak) * p
        if kind == "step":
            v = peak
            for m in milestones:
                if s >= m:
                    v *= gamma
            return v
        if kind == "inv_sqrt":
            return peak * math.sqrt(max(warm, 1) / max(s, 1))
        if kind == "wsd":
            if p < 0.8:
                return peak
            return peak + (final - peak) * (p - 0.8) / 0.2
        return peak
    return f


# ----------------------------------------------------------------------------------------
# healthy base curves
# ----------------------------------------------------------------------------------------


def loss_curve(rng, steps, T, L0, Lf, noise, epoch_len=None, epoch_drop=0.0, drops=(),
               bump_p=0.006, c=None, a=None):
    """Returns (values, deterministic trend). Heavy-tailed multiplicative noise, larger
    early, rare single-point bumps (< 1.3x), optional epoch-boundary and LR-step drops."""
    c = c if c is not None else rng.uniform(12.0, 120.0)
    a = a if a is not None else rng.uniform(0.5, 1.1)
    vals, det = [], []
    for s in steps:
        p = s / float(T)
        L = Lf + (L0 - Lf) * decay_shape(p, c, a)
        if epoch_len:
            L *= (1.0 - epoch_drop) ** (s // epoch_len)
        for (ds, fac) in drops:
            if s >= ds:
                # an LR step: the loss falls to a new level within a few hundred steps
                L *= fac + (1.0 - fac) * math.exp(-(s - ds) / max(1.0, 0.01 * T))
        det.append(L)
        sig = noise * (1.0 + 0.5 * (1.0 - min(p, 1.0)))
        vals.append(L * math.exp(sig * tdev(rng)))
    last = -10
    for i in range(5, len(vals)):
        if i - last > 3 and rng.random() < bump_p:
            vals[i] = det[i] * rng.uniform(1.08, 1.24)
            last = i
    return vals, det


def gnorm_curve(rng, steps, T, g0, gf, noise=0.18, late_rise=0.35, bump_p=0.006):
    tau = rng.uniform(0.015, 0.07) * T
    out = []
    for s in steps:
        p = s / float(T)
        g = gf * (1.0 + late_rise * p * p) + (g0 - gf) * math.exp(-s / tau)
        out.append(g * math.exp(noise * tdev(rng)))
    for i in range(10, len(out)):
        if rng.random() < bump_p:
            out[i] *= rng.uniform(1.3, 1.9)
    return out


def tput_curve(rng, n, base, noise=0.035, slow_first=True, pauses=()):
    out = []
    for i in range(n):
        v = base * (1.0 + max(-0.1, min(0.1, noise * tdev(rng))))
        out.append(v)
    if slow_first and n:
        out[0] *= rng.uniform(0.35, 0.75)
    for i in pauses:
        if 0 <= i < n:
            out[i] *= rng.uniform(0.55, 0.85)
    return out


def mem_curve(rng, n, base, saw=0.03, period=None, startup=True, noise=0.003):
    period = period or rng.randint(6, 40)
    ph = rng.randint(0, period - 1)
    out = []
    warm = max(2, n // rng.randint(25, 60))
    for i in range(n):
        v = base * (1.0 + saw * (((i + ph) % period) / float(period)))
        if startup and i < warm:
            v *= 0.75 + 0.25 * (i + 1) / warm
        v *= 1.0 + noise * tdev(rng)
        out.append(v)
    return out


def kl_curve(rng, n, plateau, tau=None, noise=0.15, drift=0.0):
    tau = tau or rng.uniform(0.06, 0.25) * n
    out = [0.0]
    for i in range(1, n):
        v = plateau * (1.0 - math.exp(-i / tau)) * (1.0 + drift * i / n)
        out.append(max(0.0, v * math.exp(noise * tdev(rng))))
    return out


def rise_curve(rng, n, start, end, tau=None, noise_abs=0.0, noise_rel=0.0):
    tau = tau or rng.uniform(0.15, 0.4) * n
    out, det = [], []
    norm = 1.0 - math.exp(-n / tau)
    for i in range(n):
        d = start + (end - start) * (1.0 - math.exp(-i / tau)) / norm
        det.append(d)
        out.append(d * (1.0 + noise_rel * tdev(rng)) + noise_abs * tdev(rng))
    return out, det


def onset_index(rng, steps, lo=0.3, hi=0.8):
    s0, s1 = steps[0], steps[-1]
    target = s0 + (s1 - s0) * rng.uniform(lo + 0.02, hi - 0.02)
    for i, s in enumerate(steps):
        if s >= target:
            return i
    return len(steps) - 1


# ----------------------------------------------------------------------------------------
# fault injectors: each modifies series in place from index o and describes itself
# ----------------------------------------------------------------------------------------


def inj_spike(rng, x, o):
    F = math.exp(rng.uniform(math.log(1.8), math.log(4.8)))
    D = rng.randint(2, 5)
    n = len(x)
    for j in range(D):
        if o + j >= n:
            break
        f = F if j == 0 else max(1.6, F * rng.uniform(0.8, 1.08))
        x[o + j] *= f
    extra = F - 1.0
    r = rng.uniform(0.3, 0.6)
    k = o + D
    while k < n and extra > 0.02:
        extra *= r
        x[k] *= 1.0 + extra
        k += 1
    return "loss jumps to %.2fx its level for %d logged points (bad batch), then recovers" % (F, D)


def inj_divergence(rng, x, o):
    n = len(x)
    Fmax = math.exp(rng.uniform(math.log(2.2), math.log(8.0)))
    rem = n - o
    K = max(8, int(rem * rng.uniform(0.25, 0.7)))
    r = math.log(Fmax) / K
    for i in range(o, n):
        f = min(Fmax, math.exp(r * (i - o + 1)))
        x[i] *= f
    return "loss climbs exponentially to %.1fx over %d logged points and stays up" % (Fmax, K)


def inj_drift(rng, x, det, o):
    n = len(x)
    D = rng.uniform(0.18, 0.55)
    shape = rng.choice(["linear", "convex", "smooth"])
    base = det[o]
    for i in range(o, n):
        t = (i - o) / float(max(1, n - 1 - o))
        ramp = t if shape == "linear" else (t ** 1.5 if shape == "convex" else 3 * t * t - 2 * t ** 3)
        x[i] = (x[i] / det[i]) * base * (1.0 + D * ramp)
    return "loss stops improving and climbs back %d%% above its best by the end (%s)" % (
        round(100 * D), shape)


def inj_gexplode(rng, g, o, loss=None):
    n = len(g)
    if rng.random() < 0.5:
        J = math.exp(rng.uniform(math.log(6.0), math.log(80.0)))
        for i in range(o, n):
            g[i] *= J * math.exp(0.25 * tdev(rng)) * (1.0 + 0.01 * (i - o))
            if loss is not None and i >= o + 1:
                loss[i] *= 1.0 + min(0.3, 0.03 * (i - o))
        return "grad norm jumps %.0fx and stays there; the loss creeps up after it" % J
    r = rng.uniform(0.04, 0.14)
    cap = math.exp(rng.uniform(math.log(20.0), math.log(1000.0)))
    for i in range(o, n):
        f = min(cap, math.exp(r * (i - o + 1)))
        g[i] *= f
        if loss is not None and f > 4:
            loss[i] *= 1.0 + min(0.35, 0.05 * math.log(f))
    return "grad norm climbs %.0f%% per logged point up to %.0fx" % (100 * r, cap)


def inj_gvanish(rng, g, o, loss=None, ldet=None):
    n = len(g)
    zero = rng.random() < 0.25
    target = 10 ** rng.uniform(-5.0, -2.3)
    K = rng.randint(3, 25)
    for i in range(o, n):
        fr = min(1.0, (i - o + 1) / float(K))
        if zero and i - o + 1 >= K:
            g[i] = 0.0
        else:
            g[i] *= target ** fr
    if loss is not None and ldet is not None:
        lvl = ldet[o]
        for i in range(o, n):
            ratio = loss[i] / ldet[i] if ldet[i] else 1.0
            loss[i] = lvl * ratio ** 0.3
    if zero:
        return "grad norm falls to exactly 0 within %d logged points; the loss freezes" % K
    return "grad norm decays to %.0e of its level over %d logged points; the loss freezes" % (target, K)


def inj_klspike(rng, kl, o, floor=0.01):
    n = len(kl)
    F = math.exp(rng.uniform(math.log(4.5), math.log(25.0)))
    D = rng.randint(2, 6)
    lvl = median(kl[max(0, o - 20):o])
    f = min(floor, lvl / 4.0) if lvl > 0 else floor
    v = max(F * lvl, 3.8 * (lvl + f) - f)
    for j in range(D):
        if o + j < n:
            kl[o + j] = v * rng.uniform(0.85, 1.15)
    extra = v - lvl
    k = o + D
    while k < n and extra > 0.05 * lvl:
        extra *= rng.uniform(0.3, 0.5)
        kl[k] += extra
        k += 1
    return "KL jumps to %.1fx its level (%.4g -> %.4g) for %d steps, then recovers" % (
        v / lvl if lvl else F, lvl, v, D)


def inj_klrunaway(rng, kl, o):
    n = len(kl)
    F = math.exp(rng.uniform(math.log(6.0), math.log(60.0)))
    rem = n - o
    K = max(10, int(rem * rng.uniform(0.5, 0.95)))
    lvl = median(kl[max(0, o - 30):o])
    target = F * (lvl + 0.01) - 0.01
    G = max(2.0, target / max(lvl, 1e-6))
    a = rng.uniform(2.0, 5.0)
    for i in range(o, n):
        t = min(1.0, (i - o + 1) / float(K))
        ramp = (math.exp(a * t) - 1.0) / (math.exp(a) - 1.0)
        kl[i] *= 1.0 + (G - 1.0) * ramp
    return "KL runs away: %.1fx its settled level (%.4g) over %d steps" % (G, lvl, K)


def inj_entropy(rng, e, o):
    n = len(e)
    f = math.exp(rng.uniform(math.log(0.03), math.log(0.25)))
    K = rng.randint(8, 40)
    for i in range(o, n):
        e[i] *= f ** min(1.0, (i - o + 1) / float(K))
    return "entropy collapses to %.0f%% of its level over %d steps" % (100 * f, K)


def inj_leak(rng, m, o, cap=None):
    n = len(m)
    rem = n - o
    base = median(m[max(0, o - 20):o])
    G = max(rng.uniform(0.35, 2.0), 0.25 * rem / 1000.0 * rng.uniform(1.3, 2.2))
    if cap is not None:
        G = min(G, (cap - base) / base)
    for i in range(o, n):
        m[i] += base * G * (i - o + 1) / float(rem)
    return "memory grows steadily by %.0f%% of its level (%.4g) by the end (%d logged points)" % (
        100 * G, base, rem)


def inj_tput(rng, t, o):
    n = len(t)
    f = rng.uniform(0.25, 0.62)
    ramp = rng.randint(1, 3)
    for i in range(o, n):
        k = min(1.0, (i - o + 1) / float(ramp))
        t[i] *= 1.0 + (f - 1.0) * k
    return "throughput drops to %.0f%% (data-loader / host change) from the onset, over %d point(s)" % (
        100 * f, ramp)


# ----------------------------------------------------------------------------------------
# formatting helpers
# ----------------------------------------------------------------------------------------


def fmt_interval(sec):
    sec = int(max(0, sec))
    m, s = divmod(sec, 60)
    h, m = divmod(m, 60)
    if h:
        return "%d:%02d:%02d" % (h, m, s)
    return "%02d:%02d" % (m, s)


def eta_str(sec):
    return str(timedelta(seconds=int(max(0, sec))))


def tqdm_num(v):
    """tqdm.format_num"""
    if isinstance(v, int):
        return str(v)
    f = "{0:.3g}".format(v).replace("+0", "+").replace("-0", "-")
    n = str(v)
    return f if len(f) < len(n) else n


def pl_num(v):
    """pytorch_lightning's Tqdm.format_num: tqdm's, padded to 5 characters."""
    should_pad = isinstance(v, float)
    s = tqdm_num(v)
    if should_pad and "e" not in s:
        if "." not in s and len(s) < 5:
            s += "."
        s += "0" * (5 - len(s))
    return s


BLOCKS = " ▏▎▍▌▋▊▉█"


def tqdm_bar(n, total, elapsed, per_it, desc="", postfix=None, width=10, show_rate=True):
    frac = n / float(total) if total else 0.0
    frac = min(1.0, frac)
    fill = frac * width
    full = int(fill)
    bar = "█" * full
    if full < width:
        bar += BLOCKS[int((fill - full) * 8)]
        bar += " " * (width - full - 1)
    remaining = (total - n) * per_it if per_it else 0
    if per_it and per_it > 0:
        rate = ("%5.2fs/it" % per_it) if per_it >= 1 else ("%5.2fit/s" % (1.0 / per_it))
    else:
        rate = "?it/s"
    rem_s = fmt_interval(remaining) if per_it else "?"
    pf = ""
    if postfix:
        pf = ", " + ", ".join("%s=%s" % (k, v) for k, v in postfix)
    lead = (desc + ": ") if desc else ""
    if not show_rate:
        return "%s%3.0f%%|%s| %d/%d [%s<%s%s]" % (lead, 100 * frac, bar, n, total, fmt_interval(elapsed), rem_s, pf)
    return "%s%3.0f%%|%s| %d/%d [%s<%s, %s%s]" % (lead, 100 * frac, bar, n, total, fmt_interval(elapsed),
                                                 rem_s, rate, pf)


def torch_repr(v, device="cuda:0", dtype=None):
    if isinstance(v, int):
        s = str(v)
    elif math.isnan(v):
        s = "nan"
    elif math.isinf(v):
        s = "inf" if v > 0 else "-inf"
    elif v == int(v) and abs(v) < 1e8:
        s = "%d." % int(v) if v != 0 or math.copysign(1, v) > 0 else "-0."
    elif abs(v) < 1e-4 or abs(v) >= 1e8:
        s = "%.4e" % v
    else:
        s = "%.4f" % v
    extra = ", device='%s'" % device
    if dtype:
        extra += ", dtype=%s" % dtype
    return "tensor(%s%s)" % (s, extra)


def yaml_float(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return ".nan"
    if math.isinf(v):
        return ".inf" if v > 0 else "-.inf"
    r = repr(v).lower()
    if "." not in r and "e" in r:
        r = r.replace("e", ".0e", 1)
    return r


def g6(v):
    """'{:g}' as fairseq's format_stat"""
    return "{:g}".format(v)


def rnd(v, k):
    return round(v, k) if isfin(v) else v


class Clock:
    def __init__(self, rng):
        base = datetime(2022, 3, 1) + timedelta(seconds=rng.randint(0, 3 * 365 * 86400))
        self.t = base
        self.t0 = base

    def adv(self, sec):
        self.t += timedelta(seconds=max(0.0, sec))

    def el(self):
        return (self.t - self.t0).total_seconds()


class Out:
    def __init__(self, text, ext, onset, first, last, notes, fmt=None):
        self.text, self.ext, self.onset, self.first, self.last, self.notes = (
            text, ext, onset, first, last, notes)
        self.fmt = fmt

# ========================================================================================
# fairseq
# ========================================================================================


def gen_fairseq(rng, kind):
    if kind == "expert_collapse":
        task = "moe"
    else:
        task = rng.choice(["translation"] * 3 + ["lm"] * 2 + (["moe"] if kind is None else []))
    variant = rng.choice(["hydra", "hydra", "json"] if task == "moe" else ["hydra", "hydra", "legacy", "json"])
    interval = rng.choice([10, 20, 25, 50, 100])
    n = min(rng.randint(160, 1100), 20000 // interval)
    T = n * interval
    steps = [interval * (i + 1) for i in range(n)]
    fp16 = rng.random() < 0.75
    ngpu = rng.choice([1, 2, 4, 8])
    uf = rng.choice([1, 1, 2, 4])
    if task == "translation":
        ds = rng.choice([("iwslt14.tokenized.de-en", "de", "en", 8848, 6632, 160239, 7283),
                         ("wmt16_en_de_bpe32k", "en", "de", 32768, 32768, 4500966, 3000),
                         ("wmt14_en_fr", "en", "fr", 44512, 44512, 35762532, 3000)])
        U = rng.randint(550, 3000)
        max_tokens = rng.choice([4096, 3584, 8192])
        L0, Lf = rng.uniform(13.4, 14.3), rng.uniform(3.8, 4.6)
        lrf = lr_fn("inv_sqrt", T, rng.choice([5e-4, 7e-4, 1e-3]), min(4000, T // 5))
        arch = rng.choice(["transformer_iwslt_de_en", "transformer_wmt_en_de", "transformer_vaswani_wmt_en_de_big"])
        avg_len = rng.uniform(26, 32)
    else:
        ds = ("wikitext-103" if task == "lm" else "cc100_en_shard", "", "", 267744, 0, 1801350, 3760)
        U = rng.randint(4000, 40000) if task == "lm" else rng.randint(150000, 400000)
        max_tokens = rng.choice([2048, 4096])
        L0, Lf = rng.uniform(15.6, 16.4), rng.uniform(4.2, 5.4) if task == "lm" else rng.uniform(3.1, 4.0)
        lrf = lr_fn(rng.choice(["cosine", "linear"]), T, rng.choice([5e-4, 6e-4, 1e-3]), min(2000, T // 8))
        arch = "transformer_lm_gpt" if task == "lm" else "transformer_lm_gpt2_small"
        avg_len = 512.0
    E = rng.choice([16, 32, 64, 128]) if task == "moe" else 0
    wpb = max_tokens * ngpu * uf * rng.uniform(0.86, 0.95)
    bsz = wpb / avg_len
    wps0 = wpb * rng.uniform(1.5, 6.0)
    noise = 0.02 / math.sqrt(interval / 10.0) + 0.004
    loss, ldet = loss_curve(rng, steps, T, L0, Lf, noise)
    g = gnorm_curve(rng, steps, T, rng.uniform(4, 12), rng.uniform(0.35, 1.2), noise=rng.uniform(0.05, 0.12))
    tp = tput_curve(rng, n, wps0, noise=0.03)
    # MoE router health
    eff_end = rng.uniform(0.88, 0.95)
    eff = [min(0.97, eff_end * (1 - math.exp(-(i + 1) / max(2.0, 0.04 * n))) + 0.68 * math.exp(-(i + 1) / max(2.0, 0.04 * n))
               + 0.015 * tdev(rng)) for i in range(n)] if E else []
    cf = rng.uniform(1.0, 1.5)
    notes = ["fairseq %s (%s, %s), %s, log-interval %d, %d GPU x update-freq %d%s" % (
        variant, task, arch, ds[0], interval, ngpu, uf, ", fp16" if fp16 else "")]
    onset_i = None
    if kind:
        onset_i = onset_index(rng, steps)
        o = onset_i
        if kind == "loss_spike":
            notes.append(inj_spike(rng, loss, o))
            g[o] *= rng.uniform(1.5, 2.0)
        elif kind == "loss_divergence":
            notes.append(inj_divergence(rng, loss, o))
            for i in range(o, n):
                g[i] *= math.sqrt(loss[i] / ldet[i])
        elif kind == "slow_drift":
            notes.append(inj_drift(rng, loss, ldet, o))
        elif kind == "grad_explosion":
            notes.append(inj_gexplode(rng, g, o, loss))
        elif kind == "grad_vanishing":
            notes.append(inj_gvanish(rng, g, o, loss, ldet))
        elif kind == "throughput_regression":
            notes.append(inj_tput(rng, tp, o))
        elif kind == "expert_collapse":
            f = rng.uniform(0.1, 0.42)
            K = rng.randint(5, 30)
            for i in range(o, n):
                fr = min(1.0, (i - o + 1) / float(K))
                eff[i] = eff[i] * (1 - fr) + f * fr * (1 + 0.03 * tdev(rng))
                loss[i] *= 1.0 + 0.06 * fr
            notes.append("router collapses: %.0f%% of %d experts effective within %d logged points, "
                         "overflow_expert1 %.0f%%" % (100 * f, E, K, 100 * max(0, 1 - cf * f)))
    # --- render
    clock = Clock(rng)
    L = []
    host = "%s" % rng.choice(["gpu-node-07", "a100-42", "learnfair0418", "ip-172-31-12-9"])

    def ts():
        return clock.t.strftime("%Y-%m-%d %H:%M:%S")

    def info(mod, msg):
        if variant == "legacy":
            L.append("| " + msg)
        else:
            L.append("%s | INFO | %s | %s" % (ts(), mod, msg))

    save_dir = "checkpoints/%s" % rng.choice({"translation": ["transformer", "wmt_big", "run%d" % rng.randint(1, 99)],
                                               "lm": ["transformer_wikitext-103", "lm_run%d" % rng.randint(1, 99)],
                                               "moe": ["moe_lm", "moe_%de" % E]}[task])
    data_bin = "data-bin/%s" % ds[0]
    if variant == "legacy":
        L.append("Namespace(activation_dropout=0.0, activation_fn='relu', adam_betas='(0.9, 0.98)', adam_eps=1e-08, "
                 "arch='%s', attention_dropout=0.0, best_checkpoint_metric='loss', bpe=None, bucket_cap_mb=25, "
                 "clip_norm=25, criterion='label_smoothed_cross_entropy', data='%s', ddp_backend='c10d', "
                 "distributed_world_size=%d, dropout=0.3, fp16=%s, keep_last_epochs=-1, label_smoothing=0.1, "
                 "log_format='simple', log_interval=%d, lr=[%g], lr_scheduler='inverse_sqrt', max_tokens=%d, "
                 "max_update=%d, min_lr=1e-09, optimizer='adam', save_dir='%s', seed=1, share_decoder_input_output_embed=True, "
                 "task='translation', update_freq=[%d], warmup_init_lr=1e-07, warmup_updates=4000, weight_decay=0.0001)"
                 % (arch, data_bin, ngpu, fp16, interval, lrf(10 ** 9) if False else 5e-4, max_tokens, T, save_dir, uf))
        if task == "translation":
            L.append("| [%s] dictionary: %d types" % (ds[1], ds[3]))
            L.append("| [%s] dictionary: %d types" % (ds[2], ds[4]))
            L.append("| loaded %d examples from: %s/valid.%s-%s.%s" % (ds[6], data_bin, ds[1], ds[2], ds[1]))
            L.append("| loaded %d examples from: %s/valid.%s-%s.%s" % (ds[6], data_bin, ds[1], ds[2], ds[2]))
            L.append("| %s %s-%s %d examples" % (data_bin, ds[1], ds[2], ds[6]))
        L.append("TransformerModel(")
        L.append("  (encoder): TransformerEncoder(")
        L.append("    (embed_tokens): Embedding(%d, 512, padding_idx=1)" % ds[3])
        L.append("    (embed_positions): SinusoidalPositionalEmbedding()")
        L.append("    (layers): ModuleList(")
        L.append("      (0): TransformerEncoderLayer(")
        L.append("        (self_attn): MultiheadAttention(")
        L.append("          (out_proj): Linear(in_features=512, out_features=512, bias=True)")
        L.append("        )")
        L.append("        (self_attn_layer_norm): LayerNorm((512,), eps=1e-05, elementwise_affine=True)")
        L.append("        (fc1): Linear(in_features=512, out_features=1024, bias=True)")
        L.append("        (fc2): Linear(in_features=1024, out_features=512, bias=True)")
        L.append("        (final_layer_norm): LayerNorm((512,), eps=1e-05, elementwise_affine=True)")
        L.append("      )")
        L.append("    )")
        L.append("  )")
        L.append(")")
        L.append("| model %s, criterion LabelSmoothedCrossEntropyCriterion" % arch)
        L.append("| num. model params: %d (num. trained: %d)" % (39469056, 39469056))
        L.append("| training on %d GPUs" % ngpu)
        L.append("| max tokens per GPU = %d and max sentences per GPU = None" % max_tokens)
        L.append("| no existing checkpoint found %s/checkpoint_last.pt" % save_dir)
        L.append("| loading train data for epoch 0")
        L.append("| loaded %d examples from: %s/train.%s-%s.%s" % (ds[5], data_bin, ds[1], ds[2], ds[1]))
    else:
        cfg = ("{'_name': None, 'common': {'_name': None, 'no_progress_bar': True, 'log_interval': %d, 'log_format': %s, "
               "'log_file': None, 'tensorboard_logdir': None, 'wandb_project': None, 'seed': 1, 'cpu': False, 'tpu': False, "
               "'bf16': False, 'memory_efficient_bf16': False, 'fp16': %s, 'memory_efficient_fp16': False, "
               "'fp16_no_flatten_grads': False, 'fp16_init_scale': 128, 'fp16_scale_window': None, 'fp16_scale_tolerance': 0.0, "
               "'on_cpu_convert_precision': False, 'min_loss_scale': 0.0001, 'threshold_loss_scale': None, 'amp': False, "
               "'user_dir': None, 'empty_cache_freq': 0, 'all_gather_list_size': 16384, 'model_parallel_size': 1}, "
               "'distributed_training': {'distributed_world_size': %d, 'distributed_backend': 'nccl', 'ddp_backend': "
               "'pytorch_ddp'}, 'dataset': {'max_tokens': %d, 'validate_interval': 1}, 'optimization': {'max_epoch': 0, "
               "'max_update': %d, 'clip_norm': %s, 'update_freq': [%d], 'lr': [%g]}, 'checkpoint': {'save_dir': '%s'}, "
               "'task': {'_name': '%s', 'data': '%s'}, 'criterion': {'_name': '%s'}, 'lr_scheduler': {'_name': '%s'}}"
               % (interval, "'json'" if variant == "json" else "None", fp16, ngpu, max_tokens, T,
                  "0.0" if task == "translation" else "1.0", uf, 5e-4, save_dir,
                  "translation" if task == "translation" else "language_modeling", data_bin,
                  {"translation": "label_smoothed_cross_entropy", "lm": "cross_entropy", "moe": "moe_cross_entropy"}[task],
                  "inverse_sqrt" if task == "translation" else "polynomial_decay"))
        info("fairseq_cli.train", cfg)
        if task == "translation":
            info("fairseq.tasks.translation", "[%s] dictionary: %d types" % (ds[1], ds[3]))
            info("fairseq.tasks.translation", "[%s] dictionary: %d types" % (ds[2], ds[4]))
        else:
            info("fairseq.tasks.language_modeling", "dictionary: %d types" % ds[3])
        info("fairseq_cli.train", "TransformerModel(" if task == "translation" else "TransformerLanguageModel(")
        L.append("  (decoder): TransformerDecoderBase(")
        L.append("    (dropout_module): FairseqDropout()")
        L.append("    (embed_tokens): Embedding(%d, 512, padding_idx=1)" % ds[3])
        if E:
            L.append("    (layers): ModuleList(")
            L.append("      (1): TransformerDecoderLayer(")
            L.append("        (moe_layer): MOELayer(")
            L.append("          (gate): Top2Gate(")
            L.append("            (wg): Linear(in_features=768, out_features=%d, bias=False)" % E)
            L.append("          )")
            L.append("          (experts): ModuleList(")
            L.append("            (0): FeedForwardNetwork(")
            L.append("              (fc1): Linear(in_features=768, out_features=3072, bias=True)")
            L.append("              (fc2): Linear(in_features=3072, out_features=768, bias=True)")
            L.append("            )")
            L.append("          )")
            L.append("        )")
            L.append("      )")
            L.append("    )")
        L.append("    (output_projection): Linear(in_features=512, out_features=%d, bias=False)" % ds[3])
        L.append("  )")
        L.append(")")
        info("fairseq_cli.train", "task: %s" % ("TranslationTask" if task == "translation" else "LanguageModelingTask"))
        info("fairseq_cli.train", "model: %s" % ("TransformerModel" if task == "translation" else "TransformerLanguageModel"))
        info("fairseq_cli.train", "criterion: %s" % {"translation": "LabelSmoothedCrossEntropyCriterion",
                                                    "lm": "CrossEntropyCriterion", "moe": "MoECrossEntropyCriterion"}[task])
        info("fairseq_cli.train", "num. shared model params: %s (num. trained: %s)" % ("{:,}".format(39469056), "{:,}".format(39469056)))
        info("fairseq_cli.train", "num. expert model params: %s (num. trained: %s)" % (
            "{:,}".format(E * 4722432), "{:,}".format(E * 4722432)))
        info("fairseq.data.data_utils", "loaded %s examples from: %s/valid" % ("{:,}".format(ds[6]), data_bin))
        info("fairseq.utils", "***********************CUDA enviroments for all %d workers***********************" % ngpu)
        for r in range(ngpu):
            info("fairseq.utils", "rank %3d: capabilities =  8.0  ; total memory = 79.347 GB ; name = NVIDIA A100-SXM4-80GB" % r)
        info("fairseq.utils", "***********************CUDA enviroments for all %d workers***********************" % ngpu)
        info("fairseq_cli.train", "training on %d devices (GPUs/TPUs)" % ngpu)
        info("fairseq_cli.train", "max tokens per device = %d and max sentences per device = None" % max_tokens)
        info("fairseq.trainer", "Preparing to load checkpoint %s/checkpoint_last.pt" % save_dir)
        info("fairseq.trainer", "No existing checkpoint found %s/checkpoint_last.pt" % save_dir)
        info("fairseq.trainer", "loading train data for epoch 1")
        info("fairseq.data.data_utils", "loaded %s examples from: %s/train" % ("{:,}".format(ds[5]), data_bin))
        info("fairseq.optim.adam", "using FusedAdam")
        info("fairseq.data.iterators", "grouped total_num_itrs = %d" % U)
        info("fairseq.trainer", "begin training epoch 1")
        info("fairseq_cli.train", "Start iterating over samples")
    scale = 128.0
    window = max(128, 2 ** 14 // ngpu // uf)
    last_rescale = 0
    overflow_rate = rng.uniform(800, 3000)  # updates per overflow while the scale sits at its equilibrium
    scale_eq = 2.0 ** rng.randint(4, 8)  # the scale the gradients tolerate: 16 .. 256
    wall = rng.uniform(4, 12)
    train_wall = 0.0
    total_mem = 79.347
    gb_free0 = rng.uniform(20, 50)
    epoch = 1
    ep_losses, ep_g = [], []
    skipped_in_epoch = 0
    best_valid = None
    base_g = median(g[:max(3, n // 10)])
    crashed = False
    last_printed = None

    def fmt_pairs(pairs, sep_kv="=", sep=", "):
        return sep.join("%s%s%s" % (k, sep_kv, v) for k, v in pairs)

    def end_of_epoch(ep, upd):
        nonlocal best_valid
        vloss = median(ep_losses[-5:]) * rng.uniform(0.93, 0.99) if ep_losses else NAN
        if task == "translation":
            vnll = vloss * 0.8
            vppl = 2 ** vnll if isfin(vnll) else NAN
        else:
            vnll = None
            vppl = 2 ** vloss if isfin(vloss) else NAN
        if best_valid is None or (isfin(vloss) and vloss < best_valid):
            best_valid = vloss
        clock.adv(rng.uniform(5, 40))
        vw = wps0 * rng.uniform(2.0, 3.0)
        if variant == "legacy":
            parts = [("loss", "%.3f" % vloss)] + ([("nll_loss", "%.3f" % vnll)] if vnll is not None else []) + [
                ("ppl", "%.2f" % vppl), ("num_updates", "%d" % upd), ("best_loss", "%.3f" % best_valid)]
            L.append("| epoch %03d | valid on 'valid' subset | %s" % (ep, " | ".join("%s %s" % kv for kv in parts)))
            L.append("| saved checkpoint %s/checkpoint%d.pt (epoch %d @ %d updates) (writing took %.2f seconds)"
                     % (save_dir, ep, ep, upd, rng.uniform(1, 6)))
            return
        info("fairseq_cli.train", 'begin validation on "valid" subset')
        parts = [("loss", g6(rnd(vloss, 3)))] + ([("nll_loss", g6(rnd(vnll, 3)))] if vnll is not None else []) + [
            ("ppl", g6(rnd(vppl, 2))), ("wps", g6(round(vw, 1))), ("wpb", g6(round(wpb * 0.7, 1))),
            ("bsz", g6(round(bsz * 0.7, 1))), ("num_updates", "%d" % upd), ("best_loss", g6(rnd(best_valid, 3)))]
        if variant == "json":
            d = {"epoch": ep}
            for k, v in parts:
                d["valid_" + k] = v
            info("valid", json.dumps(d))
        else:
            info("valid", "epoch %03d | valid on 'valid' subset | %s" % (ep, " | ".join("%s %s" % kv for kv in parts)))
        info("fairseq.checkpoint_utils", "Preparing to save checkpoint for epoch %d @ %d updates" % (ep, upd))
        info("fairseq.trainer", "Saving checkpoint to %s/checkpoint%d.pt" % (save_dir, ep))
        clock.adv(rng.uniform(1, 5))
        info("fairseq.trainer", "Finished saving checkpoint to %s/checkpoint%d.pt" % (save_dir, ep))
        info("fairseq.checkpoint_utils", "Saved checkpoint %s/checkpoint%d.pt (epoch %d @ %d updates, score %s) "
             "(writing took %.2f seconds)" % (save_dir, ep, ep, upd, g6(rnd(vloss, 3)), rng.uniform(1, 6)))

    def epoch_summary(ep, upd, last=False):
        if not ep_losses:
            return
        el = sum(ep_losses) / len(ep_losses)
        eg = sum(ep_g) / len(ep_g)
        nll = el * 0.8 if task == "translation" else None
        ppl = 2 ** (nll if nll is not None else el) if isfin(el) else NAN
        if variant == "legacy":
            parts = [("loss", "%.3f" % el)] + ([("nll_loss", "%.3f" % nll)] if nll is not None else []) + [
                ("ppl", "%.2f" % ppl), ("wps", "%d" % round(wps0)), ("ups", "%d" % round(wps0 / wpb)),
                ("wpb", "%.3f" % wpb), ("bsz", "%.3f" % bsz), ("num_updates", "%d" % upd), ("lr", g6(lrf(upd))),
                ("gnorm", "%.3f" % eg), ("clip", "0.000"), ("oom", "0.000")] + (
                [("loss_scale", "%.3f" % scale)] if fp16 else []) + [("wall", "%d" % wall), ("train_wall", "%d" % train_wall)]
            L.append("| epoch %03d | %s" % (ep, " | ".join("%s %s" % kv for kv in parts)))
            return
        info("fairseq_cli.train", "end of epoch %d (average epoch stats below)" % ep)
        parts = [("loss", g6(rnd(el, 3)))] + ([("nll_loss", g6(rnd(nll, 3)))] if nll is not None else []) + [
            ("ppl", g6(rnd(ppl, 2))), ("wps", g6(round(wps0, 1))), ("ups", g6(round(wps0 / wpb, 2))),
            ("wpb", g6(round(wpb, 1))), ("bsz", g6(round(bsz, 1))), ("num_updates", "%d" % upd),
            ("lr", g6(lrf(upd))), ("gnorm", g6(rnd(eg, 3)))] + ([("loss_scale", g6(round(scale, 4)))] if fp16 else []) + [
            ("train_wall", "%d" % train_wall), ("gb_free", g6(round(gb_free0, 1))), ("wall", "%d" % wall)]
        if variant == "json":
            d = {"epoch": ep}
            for k, v in parts:
                d["train_" + k] = v
            info("train", json.dumps(d))
        else:
            info("train", "epoch %03d | %s" % (ep, " | ".join("%s %s" % kv for kv in parts)))
        if last:
            return
        info("fairseq.data.iterators", "grouped total_num_itrs = %d" % U)
        info("fairseq.trainer", "begin training epoch %d" % (ep + 1))
        info("fairseq_cli.train", "Start iterating over samples")

    for i, s in enumerate(steps):
        ep_now = (s - 1) // U + 1
        while ep_now > epoch:
            upd = epoch * U
            if variant == "legacy":
                epoch_summary(epoch, upd)
                end_of_epoch(epoch, upd)
            else:
                end_of_epoch(epoch, upd)
                epoch_summary(epoch, upd)
            epoch += 1
            ep_losses, ep_g = [], []
            skipped_in_epoch = 0
        secs = interval * wpb / tp[i]
        clock.adv(secs)
        wall += secs
        train_wall += secs * 0.97
        # fp16 loss scaler
        if fp16:
            n_over = 0
            m = g[i] / base_g if base_g else 1.0
            if m > 8:
                n_over = min(3, int(math.log2(m / 8.0)) + 1)
            elif rng.random() < min(0.9, interval / overflow_rate * (scale / scale_eq) ** 2):
                n_over = 1
            for _ in range(n_over):
                scale /= 2.0
                last_rescale = s
                skipped_in_epoch += 1
                if variant == "legacy":
                    L.append("| WARNING: overflow detected, setting loss scale to: %s" % (scale,))
                else:
                    info("fairseq.trainer", "NOTE: gradient overflow detected, ignoring gradient, setting loss scale to: %s" % (scale,))
                if scale < 1e-4:
                    crashed = True
                    break
            if crashed:
                L.append("Traceback (most recent call last):")
                L.append('  File "/opt/conda/bin/fairseq-train", line 33, in <module>')
                L.append("    sys.exit(load_entry_point('fairseq', 'console_scripts', 'fairseq-train')())")
                L.append('  File "/workspace/fairseq/fairseq/trainer.py", line 1010, in train_step')
                L.append("    raise FloatingPointError(")
                L.append('  File "/workspace/fairseq/fairseq/optim/dynamic_loss_scaler.py", line 61, in check_overflow')
                L.append("    raise FloatingPointError(")
                L.append("FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. "
                         "Try lowering the learning rate, using gradient clipping or increasing the batch size.")
                break
            if s - last_rescale >= window:
                scale *= 2.0
                last_rescale = s
        pos = s - (epoch - 1) * U + skipped_in_epoch
        lr = lrf(s)
        li = loss[i]
        nll = li * (0.6 + 0.38 * min(1.0, max(0.0, (ldet[i] - Lf) / (L0 - Lf)))) if task == "translation" else None
        ppl = 2 ** (nll if nll is not None else li) if isfin(li) else NAN
        if isfin(ppl) and ppl > 1e300:
            ppl = INF
        ups = tp[i] / wpb
        gbf = gb_free0 * (1 + 0.01 * tdev(rng))
        ep_losses.append(li)
        ep_g.append(g[i])
        last_printed = s
        if variant == "legacy":
            pairs = [("loss", "%.3f" % li)] + ([("nll_loss", "%.3f" % nll)] if nll is not None else []) + [
                ("ppl", "%.2f" % ppl), ("wps", "%d" % round(tp[i])), ("ups", "%d" % round(ups)),
                ("wpb", "%.3f" % wpb), ("bsz", "%.3f" % (bsz * (1 + 0.01 * tdev(rng)))), ("num_updates", "%d" % s),
                ("lr", g6(lr)), ("gnorm", "%.3f" % g[i]), ("clip", "%.3f" % (1.0 if g[i] > 25 else 0.0)),
                ("oom", "0.000")] + ([("loss_scale", "%.3f" % scale)] if fp16 else []) + [
                ("wall", "%d" % wall), ("train_wall", "%d" % train_wall)]
            L.append("| epoch %03d:  %5d / %d %s" % (epoch, pos, U, fmt_pairs(pairs)))
            continue
        pairs = [("loss", g6(rnd(li, 3)))]
        if E:
            ef = max(0.02, min(1.0, eff[i]))
            over1 = 100.0 * max(0.0, 1.0 - cf * ef) + (0 if ef < 0.6 else rng.uniform(1.5, 6.0) * (1 + 3 * math.exp(-i / (0.05 * n))))
            over2 = min(99.0, over1 * 1.8 + rng.uniform(8, 18))
            unused = 0 if ef > 0.6 else int(round(E * (1 - ef) * rng.uniform(0.6, 0.9)))
            ent = math.log(max(1.0, ef * E)) * rng.uniform(0.78, 0.86)
            top = min(100.0, (20.0 / max(ef, 0.2)) * rng.uniform(1.15, 1.45)) if ef < 0.9 else rng.uniform(24, 34)
            bottom = max(0.0, 20.0 * (ef - 0.45) / 0.55 * rng.uniform(0.4, 0.7)) if ef < 0.95 else rng.uniform(9, 14)
            gate = (1.0 / max(ef, 0.05)) * rng.uniform(0.98, 1.05)
            pairs += [("moe_gate_loss", g6(round(gate, 3))), ("overflow_expert1", g6(round(over1, 3))),
                      ("overflow_expert2", g6(round(over2, 3))), ("entropy_gating", g6(round(ent, 3))),
                      ("expert1_balance_top", g6(round(top, 3))), ("expert1_balance_bottom", g6(round(bottom, 3))),
                      ("unused_expert1_count", g6(unused)),
                      ("expert2_balance_top", g6(round(min(100.0, top * 0.8), 3))),
                      ("expert2_balance_bottom", g6(round(bottom * 1.2, 3))),
                      ("unused_expert2_count", g6(int(unused * 0.7))), ("all_to_all_cpu_time_ms", "0"),
                      ("all_to_all_cuda_time_ms", g6(round(rng.uniform(8, 30), 3))),
                      ("inner_loss", g6(rnd(li - 0.01 * gate if isfin(li) else li, 3)))]
        if nll is not None:
            pairs.append(("nll_loss", g6(rnd(nll, 3))))
        pairs += [("ppl", g6(rnd(ppl, 2))), ("wps", g6(round(tp[i], 1))), ("ups", g6(round(ups, 2))),
                  ("wpb", g6(round(wpb * (1 + 0.004 * tdev(rng)), 1))), ("bsz", g6(round(bsz * (1 + 0.01 * tdev(rng)), 1))),
                  ("num_updates", "%d" % s), ("lr", g6(lr)), ("gnorm", g6(rnd(g[i], 3)))]
        if task != "translation":
            pairs.append(("clip", g6(round(100.0 / (1.0 + math.exp(-(g[i] - 1.0) / 0.15)) if isfin(g[i]) else 100.0, 1))))
        if fp16:
            pairs.append(("loss_scale", g6(round(scale, 4))))
        pairs += [("train_wall", "%d" % round(secs * 0.97)), ("gb_free", g6(round(gbf, 1))), ("wall", "%d" % wall)]
        if variant == "json":
            d = {"epoch": epoch, "update": round(epoch - 1 + pos / float(U), 3)}
            for k, v in pairs:
                d[k] = v
            info("train_inner", json.dumps(d))
        else:
            info("train_inner", "epoch %03d:  %5d / %d %s" % (epoch, pos, U, fmt_pairs(pairs)))
    if not crashed:
        if variant != "legacy":
            info("fairseq_cli.train", "Stopping training due to num_updates: %d >= max_update: %d" % (T, T))
        if variant == "legacy":
            epoch_summary(epoch, T, last=True)
            end_of_epoch(epoch, T)
            L.append("| done training in %.1f seconds" % wall)
        else:
            end_of_epoch(epoch, T)
            epoch_summary(epoch, T, last=True)
            info("fairseq_cli.train", "done training in %.1f seconds" % wall)
    onset = steps[onset_i] if onset_i is not None else None
    if crashed and onset is not None and onset > last_printed:
        onset = None
    return Out("\n".join(L) + "\n", "log", onset, steps[0], last_printed, "; ".join(notes))

# ========================================================================================
# MMEngine (MMDetection / MMSegmentation / MMPretrain)
# ========================================================================================


def gen_mmengine(rng, kind):
    variant = rng.choice(["det_epoch", "det_epoch", "seg_iter", "cls_epoch"])
    has_g = kind in ("grad_explosion", "grad_vanishing") or rng.random() < 0.35
    long_ts = rng.random() < 0.5
    base_lr_field = rng.random() < 0.6
    k = rng.choice([10, 20, 50, 50])
    if variant == "seg_iter":
        T = rng.choice([8000, 16000, 20000]) if k >= 50 else rng.choice([4000, 8000, 16000])
        N = None
        E = None
        steps = list(range(k, T + 1, k))
        model = rng.choice(["pspnet_r50-d8_4xb2-40k_cityscapes-512x1024", "deeplabv3plus_r50-d8_4xb4-20k_voc12aug-512x512",
                            "segformer_mit-b0_8xb2-160k_ade20k-512x512"])
    else:
        N = rng.randint(400, 1600)
        E = max(3, min(rng.choice([12, 12, 24, 36, 50]), 20000 // N))
        T = N * E
        steps = []
        for e in range(1, E + 1):
            for i in range(k, N + 1, k):
                steps.append((e - 1) * N + i)
        if variant == "det_epoch":
            model = rng.choice(["faster-rcnn_r50_fpn_1x_voc0712", "retinanet_r50_fpn_1x_coco-subset",
                                "rtmdet_s_8xb32-300e_balloon", "faster-rcnn_r50_fpn_2x_cityscapes-detection"])
        else:
            model = rng.choice(["resnet18_8xb16_cifar10", "resnet50_8xb32_in1k-subset", "vit-base-p16_32xb128-mae_in1k-ft"])
    n = len(steps)
    while n < 150:
        k = max(1, k // 2)
        steps = [s for s in range(k, T + 1, k)] if N is None else [
            (e - 1) * N + i for e in range(1, E + 1) for i in range(k, N + 1, k)]
        n = len(steps)
    noise = rng.uniform(0.025, 0.05)
    if variant == "det_epoch":
        L0, Lf = rng.uniform(1.9, 2.6), rng.uniform(0.38, 0.65)
        milestones = [int(T * 8 / 12.0), int(T * 11 / 12.0)]
        lrf = lr_fn("step", T, rng.choice([0.02, 0.01, 0.004]), 500, milestones=milestones, start_factor=0.001)
        drops = [(m, rng.uniform(0.8, 0.9)) for m in milestones]
    elif variant == "seg_iter":
        L0, Lf = rng.uniform(2.6, 3.4), rng.uniform(0.22, 0.4)
        lr0 = rng.choice([0.01, 0.006])
        lrf = lambda s: (lr0 - 1e-4) * (1 - min(s, T) / float(T)) ** 0.9 + 1e-4  # noqa: E731
        drops = []
    else:
        L0, Lf = rng.uniform(2.2, 2.4), rng.uniform(0.1, 0.35)
        if rng.random() < 0.5:
            milestones = [int(T * f) for f in (0.5, 0.75)]
            lrf = lr_fn("step", T, 0.1, 0, milestones=milestones)
            drops = [(m, rng.uniform(0.55, 0.75)) for m in milestones]
        else:
            lrf = lr_fn("cosine", T, 0.1, N or 500, final=1e-5, start_factor=0.001)
            drops = []
    loss, ldet = loss_curve(rng, steps, T, L0, Lf, noise, drops=drops)
    g = gnorm_curve(rng, steps, T, rng.uniform(8, 25), rng.uniform(1.5, 6), noise=rng.uniform(0.12, 0.25))
    t_step = rng.uniform(0.12, 0.6)
    tp = tput_curve(rng, n, 1.0 / t_step, noise=0.03)
    mem_base = {"det_epoch": rng.uniform(2600, 9000), "seg_iter": rng.uniform(3500, 9500),
                "cls_epoch": rng.uniform(200, 6000)}[variant]
    mem = mem_curve(rng, n, mem_base, saw=0.05 if variant == "det_epoch" else 0.01,
                    noise=0.015 if variant == "det_epoch" else 0.002)
    dtime = [rng.uniform(0.002, 0.03) * (1 + 0.1 * tdev(rng)) for _ in range(n)]
    notes = ["MMEngine %s (%s), log interval %d, %s%s" % (
        variant, model, k, "%d epochs x %d iters" % (E, N) if N else "%d iters" % T,
        ", clip_grad (grad_norm logged)" if has_g else "")]
    onset_i = None
    if kind:
        onset_i = onset_index(rng, steps)
        o = onset_i
        if kind == "loss_spike":
            notes.append(inj_spike(rng, loss, o))
        elif kind == "loss_divergence":
            notes.append(inj_divergence(rng, loss, o))
            for i in range(o, n):
                g[i] *= (loss[i] / ldet[i]) ** 0.7
        elif kind == "slow_drift":
            notes.append(inj_drift(rng, loss, ldet, o))
        elif kind == "nonfinite":
            for i in range(o, n):
                loss[i] = NAN
                g[i] = NAN
            notes.append("loss and grad_norm turn NaN at the onset and stay NaN (no NaN hook; training continues)")
        elif kind == "grad_explosion":
            notes.append(inj_gexplode(rng, g, o, loss))
        elif kind == "grad_vanishing":
            notes.append(inj_gvanish(rng, g, o, loss, ldet))
        elif kind == "memory_leak":
            notes.append(inj_leak(rng, mem, o))
        elif kind == "throughput_regression":
            notes.append(inj_tput(rng, tp, o))
            f = tp[-1] / median(tp[:o])
            for i in range(o, n):
                dtime[i] += (1.0 / tp[i] - t_step) * rng.uniform(0.8, 0.95)
    clock = Clock(rng)
    L = []

    def ts():
        return clock.t.strftime("%Y/%m/%d %H:%M:%S" if long_ts else "%m/%d %H:%M:%S")

    def log(level, msg):
        L.append("%s - mmengine - %s - %s" % (ts(), level, msg))

    exp = "%s_%s" % (model, clock.t.strftime("%Y%m%d_%H%M%S"))
    log("INFO", "")
    L.append("------------------------------------------------------------")
    L.append("System environment:")
    L.append("    sys.platform: linux")
    L.append("    Python: 3.8.16 (default, Mar  2 2023, 03:21:46) [GCC 11.2.0]")
    L.append("    CUDA available: True")
    L.append("    numpy_random_seed: %d" % rng.randint(1, 2 ** 31 - 1))
    L.append("    GPU 0,1,2,3,4,5,6,7: NVIDIA A100-SXM4-80GB")
    L.append("    CUDA_HOME: /usr/local/cuda")
    L.append("    NVCC: Cuda compilation tools, release 11.7, V11.7.99")
    L.append("    GCC: gcc (GCC) 9.3.0")
    L.append("    PyTorch: 1.13.1+cu117")
    L.append("    TorchVision: 0.14.1+cu117")
    L.append("    OpenCV: 4.7.0")
    L.append("    MMEngine: 0.%d.%d" % (rng.randint(7, 10), rng.randint(0, 4)))
    L.append("")
    L.append("Runtime environment:")
    L.append("    cudnn_benchmark: False")
    L.append("    mp_cfg: {'mp_start_method': 'fork', 'opencv_num_threads': 0}")
    L.append("    dist_cfg: {'backend': 'nccl'}")
    L.append("    seed: %d" % rng.randint(1, 2 ** 31 - 1))
    L.append("    Distributed launcher: pytorch")
    L.append("    Distributed training: True")
    L.append("    GPU number: 8")
    L.append("------------------------------------------------------------")
    L.append("")
    log("INFO", "Config:")
    L.append("default_scope = '%s'" % {"det_epoch": "mmdet", "seg_iter": "mmseg", "cls_epoch": "mmpretrain"}[variant])
    L.append("default_hooks = dict(")
    L.append("    timer=dict(type='IterTimerHook'),")
    L.append("    logger=dict(type='LoggerHook', interval=%d)," % k)
    L.append("    param_scheduler=dict(type='ParamSchedulerHook'),")
    L.append("    checkpoint=dict(type='CheckpointHook', interval=%s)," % ("1" if N else "4000, by_epoch=False"))
    L.append("    sampler_seed=dict(type='DistSamplerSeedHook'),")
    L.append("    visualization=dict(type='%sVisualizationHook'))" % {"det_epoch": "Det", "seg_iter": "Segmentation",
                                                                      "cls_epoch": "Visualization"}[variant])
    L.append("optim_wrapper = dict(")
    L.append("    type='OptimWrapper',")
    L.append("    optimizer=dict(type='SGD', lr=%g, momentum=0.9, weight_decay=0.0001)%s)" % (
        lrf(T // 2) if False else lrf(max(501, steps[0])), ",\n    clip_grad=dict(max_norm=35, norm_type=2)" if has_g else ""))
    L.append("train_cfg = dict(%s)" % ("type='EpochBasedTrainLoop', max_epochs=%d, val_interval=1" % E if N
                                       else "type='IterBasedTrainLoop', max_iters=%d, val_interval=%d" % (T, T // 4)))
    L.append("work_dir = './work_dirs/%s'" % model)
    L.append("")
    log("WARNING", "The prefix is not set in metric class %s." % {"det_epoch": "VOCMetric", "seg_iter": "IoUMetric",
                                                                   "cls_epoch": "Accuracy"}[variant])
    log("INFO", "Distributed training is not used, all SyncBatchNorm (SyncBN) layers in the model will be automatically reverted to BatchNormXd layers if they are used.")
    log("INFO", "Hooks will be executed in the following order:")
    L.append("before_run:")
    L.append("(VERY_HIGH   ) RuntimeInfoHook                    ")
    L.append("(BELOW_NORMAL) LoggerHook                         ")
    L.append(" -------------------- ")
    if variant != "seg_iter":
        log("INFO", "load model from: torchvision://resnet50")
        log("INFO", "Loads checkpoint by torchvision backend from path: torchvision://resnet50")
        log("WARNING", "The model and loaded state dict do not match exactly")
        L.append("")
        L.append("unexpected key in source state_dict: fc.weight, fc.bias")
        L.append("")
    log("WARNING", '"FileClient" will be deprecated in future. Please use io functions in https://mmengine.readthedocs.io/en/latest/api/fileio.html#file-io')
    log("WARNING", '"HardDiskBackend" is the alias of "LocalBackend" and the former will be deprecated in future.')
    log("INFO", "Checkpoints will be saved to /workspace/work_dirs/%s." % model)
    if variant == "det_epoch":
        comps = rng.choice([[("loss_rpn_cls", 0.08), ("loss_rpn_bbox", 0.06), ("loss_cls", 0.48), ("acc", None), ("loss_bbox", 0.38)],
                            [("loss_cls", 0.6), ("loss_bbox", 0.4)]])
    elif variant == "seg_iter":
        comps = [("decode.loss_ce", 0.714), ("decode.acc_seg", None), ("aux.loss_ce", 0.286), ("aux.acc_seg", None)]
    else:
        comps = []
    Nv = rng.choice([625, 500, 1238])
    best = None
    prev_s = 0
    for i, s in enumerate(steps):
        dt = (s - prev_s) / tp[i]
        prev_s = s
        clock.adv(dt)
        lr = lrf(s)
        t_now = 1.0 / tp[i]
        eta = (T - s) * t_now
        if N:
            e = (s - 1) // N + 1
            it = s - (e - 1) * N
            head = "Epoch(train) %s[%d][%*d/%d]" % (" " * (len(str(E)) - len(str(e))), e, len(str(N)), it, N)
        else:
            head = "Iter(train) [%*d/%d]" % (len(str(T)), s, T)
        parts = [head]
        lrs = ("base_lr: %.4e lr: %.4e" % (lr, lr)) if base_lr_field else ("lr: %.4e" % lr)
        parts.append(lrs)
        parts.append("eta: %s" % eta_str(eta))
        parts.append("time: %.4f" % t_now)
        parts.append("data_time: %.4f" % dtime[i])
        parts.append("memory: %d" % round(mem[i]))
        if has_g:
            parts.append("grad_norm: %.4f" % g[i])
        parts.append("loss: %.4f" % loss[i])
        for name, share in comps:
            if share is None:
                p = min(1.0, max(0.0, 1.0 - loss[i] / (L0 * 1.6))) if isfin(loss[i]) else 0.0
                acc = (60 + 38 * p + rng.uniform(-2, 2)) if "seg" in name else (90 + 8 * p + rng.uniform(-1.5, 1.5))
                parts.append("%s: %.4f" % (name, acc))
            else:
                parts.append("%s: %.4f" % (name, loss[i] * share * (1 + 0.05 * tdev(rng))))
        log("INFO", "  ".join(parts))
        if s % 1000 < k and s >= 1000:
            log("INFO", "Exp name: %s" % exp)
        # checkpoint / validation
        end_epoch = N and (s % N) + k > N
        if N and end_epoch:
            e = (s - 1) // N + 1
            if s % 1000 >= k:
                log("INFO", "Exp name: %s" % exp)
            log("INFO", "Saving checkpoint at %d epochs" % e)
            clock.adv(rng.uniform(2, 8))
            for vi in range(50, Nv + 1, 50):
                clock.adv(50 * rng.uniform(0.04, 0.06))
                log("INFO", "Epoch(val) %s[%d][%*d/%d]    eta: %s  time: %.4f  data_time: %.4f  memory: %d  " % (
                    " " * (len(str(E)) - len(str(e))), e, len(str(Nv)), vi, Nv, eta_str((Nv - vi) * 0.05),
                    rng.uniform(0.04, 0.06), rng.uniform(0.001, 0.004), round(mem_base * 0.2)))
            score = 0.3 + 0.45 * (1 - math.exp(-3.0 * s / T)) if isfin(loss[i]) else 0.0
            if variant == "det_epoch":
                L.append("---------------iou_thr: 0.5---------------")
                log("INFO", "\n+-------------+------+------+--------+-------+\n| class       | gts  | dets | recall | ap    |\n"
                            "+-------------+------+------+--------+-------+\n| aeroplane   | 285  | 1211 | 0.951  | %.3f |\n"
                            "| bicycle     | 337  | 1623 | 0.926  | %.3f |\n+-------------+------+------+--------+-------+\n"
                            "| mAP         |      |      |        | %.3f |\n+-------------+------+------+--------+-------+"
                    % (score + 0.05, score + 0.03, score))
                log("INFO", "Epoch(val) %s[%d][%d/%d]    pascal_voc/mAP: %.4f  pascal_voc/AP50: %.4f  data_time: %.4f  time: %.4f" % (
                    " " * (len(str(E)) - len(str(e))), e, Nv, Nv, score, score, rng.uniform(0.001, 0.003), rng.uniform(0.04, 0.06)))
                key = "pascal_voc/mAP"
            else:
                acc1 = 100 * (0.35 + 0.55 * (1 - math.exp(-3.0 * s / T))) if isfin(loss[i]) else 10.0
                log("INFO", "Epoch(val) %s[%d][%d/%d]    accuracy/top1: %.4f  accuracy/top5: %.4f  data_time: %.4f  time: %.4f" % (
                    " " * (len(str(E)) - len(str(e))), e, Nv, Nv, acc1, min(99.9, acc1 + 20), rng.uniform(0.001, 0.003),
                    rng.uniform(0.02, 0.04)))
                score = acc1
                key = "accuracy/top1"
            if best is None or score > best:
                if best is not None:
                    log("INFO", "The previous best checkpoint /workspace/work_dirs/%s/best_%s_epoch_%d.pth is removed" % (
                        model, key.replace("/", "_"), e - 1))
                best = score
                log("INFO", "The best checkpoint with %.4f %s at %d epoch is saved to best_%s_epoch_%d.pth." % (
                    score, key, e, key.replace("/", "_"), e))
            clock.adv(Nv * 0.05)
        if not N and s % 4000 == 0:
            log("INFO", "Saving checkpoint at %d iterations" % s)
            if s % (T // 4) == 0:
                for vi in range(50, 501, 50):
                    clock.adv(50 * 0.1)
                    log("INFO", "Iter(val) [%3d/500]    eta: %s  time: %.4f  data_time: %.4f  memory: %d  " % (
                        vi, eta_str((500 - vi) * 0.1), rng.uniform(0.08, 0.12), rng.uniform(0.002, 0.004), round(mem_base * 0.25)))
                miou = 40 + 35 * (1 - math.exp(-3.0 * s / T)) if isfin(loss[i]) else 1.0
                log("INFO", "per class results:")
                L.append("+---------------+-------+-------+")
                L.append("|     Class     |  IoU  |  Acc  |")
                L.append("+---------------+-------+-------+")
                L.append("|      road     | %5.2f | %5.2f |" % (min(99.0, miou + 30), min(99.5, miou + 32)))
                L.append("|    sidewalk   | %5.2f | %5.2f |" % (miou + 5, miou + 12))
                L.append("+---------------+-------+-------+")
                log("INFO", "Iter(val) [500/500]    aAcc: %.4f  mIoU: %.4f  mAcc: %.4f  data_time: %.4f  time: %.4f" % (
                    min(99.0, miou + 45), miou, miou + 8, rng.uniform(0.002, 0.004), rng.uniform(0.08, 0.12)))
    onset = steps[onset_i] if onset_i is not None else None
    return Out("\n".join(L) + "\n", "log", onset, steps[0], steps[-1], "; ".join(notes))

# ========================================================================================
# Detectron2
# ========================================================================================


def gen_detectron2(rng, kind):
    ansi = rng.random() < 0.55
    newer = rng.random() < 0.5
    model = rng.choice(["mask_rcnn_R_50_FPN_1x", "faster_rcnn_R_50_FPN_3x", "retinanet_R_50_FPN_1x",
                        "mask_rcnn_R_101_FPN_3x", "faster_rcnn_R_50_C4_1x"])
    n_all = rng.randint(150, 1000)
    T = 20 * n_all
    resume_at = 0
    if kind is None and rng.random() < 0.25 and T >= 10000:
        resume_at = rng.choice([5000, 10000 if T > 15000 else 5000])
    steps = [20 * j - 1 for j in range(1, n_all + 1) if 20 * j - 1 >= resume_at]
    n = len(steps)
    if model.startswith("mask"):
        early = [("loss_cls", 0.76), ("loss_box_reg", 0.08), ("loss_mask", 0.69), ("loss_rpn_cls", 0.61), ("loss_rpn_loc", 0.08)]
        late = [("loss_cls", 0.22), ("loss_box_reg", 0.28), ("loss_mask", 0.26), ("loss_rpn_cls", 0.04), ("loss_rpn_loc", 0.07)]
        L0, Lf = 2.22, rng.uniform(0.62, 0.9)
    elif model.startswith("faster"):
        early = [("loss_cls", 0.7), ("loss_box_reg", 0.1), ("loss_rpn_cls", 0.6), ("loss_rpn_loc", 0.12)]
        late = [("loss_cls", 0.2), ("loss_box_reg", 0.25), ("loss_rpn_cls", 0.03), ("loss_rpn_loc", 0.06)]
        L0, Lf = 1.52, rng.uniform(0.42, 0.62)
    else:
        early = [("loss_cls", 1.15), ("loss_box_reg", 0.69)]
        late = [("loss_cls", 0.25), ("loss_box_reg", 0.2)]
        L0, Lf = 1.84, rng.uniform(0.38, 0.55)
    e_tot = sum(v for _, v in early)
    l_tot = sum(v for _, v in late)
    milestones = [int(T * rng.uniform(0.64, 0.7)), int(T * rng.uniform(0.86, 0.9))]
    base_lr = rng.choice([0.02, 0.01, 0.0025])
    lrf = lr_fn("step", T, base_lr, 1000, milestones=milestones, start_factor=0.001)
    loss, ldet = loss_curve(rng, steps, T, L0, Lf, rng.uniform(0.015, 0.035),
                            drops=[(m, rng.uniform(0.82, 0.92)) for m in milestones])
    t_it = rng.uniform(0.18, 0.55)
    tp = tput_curve(rng, n, 1.0 / t_it, noise=0.03)
    mem_raw = mem_curve(rng, n, rng.uniform(2300, 5200), saw=0.0, noise=0.02)
    notes = ["detectron2 %s (%s%s), period 20, MAX_ITER %d%s" % (
        model, "console with ANSI colours" if ansi else "log.txt", ", with last_time" if newer else "", T,
        ", resumed from iteration %d" % resume_at if resume_at else "")]
    onset_i = None
    nan_iter = None
    if kind:
        onset_i = onset_index(rng, steps)
        o = onset_i
        if kind == "loss_spike":
            notes.append(inj_spike(rng, loss, o))
        elif kind == "loss_divergence":
            notes.append(inj_divergence(rng, loss, o))
        elif kind == "slow_drift":
            notes.append(inj_drift(rng, loss, ldet, o))
        elif kind == "memory_leak":
            notes.append(inj_leak(rng, mem_raw, o))
        elif kind == "throughput_regression":
            notes.append(inj_tput(rng, tp, o))
        elif kind == "nonfinite":
            nan_iter = steps[o] - rng.randint(0, 18)
            if o > 0 and nan_iter <= steps[o - 1]:
                nan_iter = steps[o - 1] + 1
            notes.append("loss becomes NaN at iteration %d: detectron2 raises FloatingPointError and the run stops "
                         "(the NaN shows only in the error's loss_dict)" % nan_iter)
    clock = Clock(rng)
    L = []

    def pre(name, level="INFO"):
        t = clock.t.strftime("%m/%d %H:%M:%S")
        if ansi:
            if level == "WARNING":
                return "\x1b[5m\x1b[31mWARNING\x1b[0m \x1b[32m[%s %s]: \x1b[0m" % (t, name)
            return "\x1b[32m[%s %s]: \x1b[0m" % (t, name)
        return "[%s] %s %s: " % (t, name, level)

    L.append(pre("detectron2") + "Rank of current process: 0. World size: 8")
    L.append(pre("detectron2") + "Environment info:")
    L.append("----------------------  ----------------------------------------------------------------")
    L.append("sys.platform            linux")
    L.append("Python                  3.9.16 (main, Mar  8 2023, 14:00:05) [GCC 11.2.0]")
    L.append("numpy                   1.24.2")
    L.append("detectron2              0.6 @/opt/detectron2/detectron2")
    L.append("Compiler                GCC 9.4")
    L.append("CUDA compiler           CUDA 11.7")
    L.append("detectron2 arch flags   8.0")
    L.append("DETECTRON2_ENV_MODULE   <not set>")
    L.append("PyTorch                 1.13.1+cu117 @/usr/local/lib/python3.9/site-packages/torch")
    L.append("PyTorch debug build     False")
    L.append("GPU available           Yes")
    L.append("GPU 0,1,2,3,4,5,6,7     NVIDIA A100-SXM4-40GB (arch=8.0)")
    L.append("Driver version          515.65.01")
    L.append("CUDA_HOME               /usr/local/cuda")
    L.append("Pillow                  9.4.0")
    L.append("torchvision             0.14.1+cu117 @/usr/local/lib/python3.9/site-packages/torchvision")
    L.append("fvcore                  0.1.5.post20221221")
    L.append("iopath                  0.1.9")
    L.append("cv2                     4.7.0")
    L.append("----------------------  ----------------------------------------------------------------")
    L.append(pre("detectron2") + "Command line arguments: Namespace(config_file='configs/COCO-%s/%s.yaml', "
             "dist_url='tcp://127.0.0.1:%d', eval_only=False, machine_rank=0, num_gpus=8, num_machines=1, opts=[], resume=%s)"
             % ("InstanceSegmentation" if model.startswith("mask") else "Detection", model, rng.randint(49152, 65000),
                bool(resume_at)))
    L.append(pre("detectron2") + "Running with full config:")
    L.append("CUDNN_BENCHMARK: false")
    L.append("DATALOADER:")
    L.append("  ASPECT_RATIO_GROUPING: true")
    L.append("  NUM_WORKERS: 4")
    L.append("SOLVER:")
    L.append("  BASE_LR: %s" % base_lr)
    L.append("  CHECKPOINT_PERIOD: 5000")
    L.append("  GAMMA: 0.1")
    L.append("  IMS_PER_BATCH: 16")
    L.append("  MAX_ITER: %d" % T)
    L.append("  STEPS:")
    for m in milestones:
        L.append("  - %d" % m)
    L.append("  WARMUP_FACTOR: 0.001")
    L.append("  WARMUP_ITERS: 1000")
    L.append("TEST:")
    L.append("  EVAL_PERIOD: 0")
    L.append("OUTPUT_DIR: ./output")
    L.append(pre("d2.engine.defaults") + "Model:")
    L.append("GeneralizedRCNN(" if not model.startswith("retina") else "RetinaNet(")
    L.append("  (backbone): FPN(")
    L.append("    (fpn_lateral2): Conv2d(256, 256, kernel_size=(1, 1), stride=(1, 1))")
    L.append("  )")
    L.append(")")
    L.append(pre("d2.data.build") + "Removed 1021 images with no usable annotations. 117266 images left.")
    L.append(pre("d2.data.dataset_mapper") + "[DatasetMapper] Augmentations used in training: [ResizeShortestEdge("
             "short_edge_length=(640, 672, 704, 736, 768, 800), max_size=1333, sample_style='choice'), RandomFlip()]")
    L.append(pre("d2.data.build") + "Using training sampler TrainingSampler")
    L.append(pre("d2.data.common") + "Serializing 117266 elements to byte tensors and concatenating them all ...")
    L.append(pre("d2.data.common") + "Serialized dataset takes 451.21 MiB")
    if resume_at:
        L.append(pre("fvcore.common.checkpoint") + "[Checkpointer] Loading from ./output/model_%07d.pth ..." % (resume_at - 1))
        L.append(pre("fvcore.common.checkpoint") + "Loading trainer states from ./output/model_%07d.pth ..." % (resume_at - 1))
    else:
        L.append(pre("fvcore.common.checkpoint") + "[Checkpointer] Loading from detectron2://ImageNetPretrained/MSRA/R-50.pkl ...")
        L.append(pre("d2.checkpoint.c2_model_loading") + "Renaming Caffe2 weights ......")
        L.append(pre("fvcore.common.checkpoint", "WARNING") + "Some model parameters or buffers are not found in the checkpoint:")
        L.append("\x1b[34mproposal_generator.rpn_head.anchor_deltas.{bias, weight}\x1b[0m" if ansi else
                 "proposal_generator.rpn_head.anchor_deltas.{bias, weight}")
    L.append(pre("d2.engine.train_loop") + "Starting training from iteration %d" % resume_at)
    times = []
    dts = []
    max_mem = 0.0
    prev = resume_at - 1
    for i, s in enumerate(steps):
        if nan_iter is not None and s >= nan_iter:
            clock.adv((nan_iter - prev) / tp[i])
            L.append(pre("d2.engine.train_loop", "ERROR") + "Exception during training:")
            L.append("Traceback (most recent call last):")
            L.append('  File "/opt/detectron2/detectron2/engine/train_loop.py", line 155, in train')
            L.append("    self.run_step()")
            L.append('  File "/opt/detectron2/detectron2/engine/defaults.py", line 496, in run_step')
            L.append("    self._trainer.run_step()")
            L.append('  File "/opt/detectron2/detectron2/engine/train_loop.py", line 310, in run_step')
            L.append("    self._write_metrics(loss_dict, data_time)")
            L.append('  File "/opt/detectron2/detectron2/engine/train_loop.py", line 369, in write_metrics')
            L.append("    raise FloatingPointError(")
            d = ", ".join("'%s': nan" % nm for nm, _ in late)
            L.append("FloatingPointError: Loss became infinite or NaN at iteration=%d!" % nan_iter)
            L.append("loss_dict = {%s}" % d)
            tot = clock.el()
            L.append(pre("d2.engine.hooks") + "Overall training speed: %d iterations in %s (%.4f s / it)" % (
                nan_iter - resume_at - 2, eta_str(tot), tot / max(1, nan_iter - resume_at)))
            L.append(pre("d2.engine.hooks") + "Total training time: %s (0:00:%02d on hooks)" % (eta_str(tot * 1.01), rng.randint(10, 59)))
            L.append(pre("d2.utils.events") + F_last.replace("iter: %d " % prev, "iter: %d " % nan_iter))
            return Out("\n".join(L) + "\n", "log", nan_iter, steps[0], nan_iter, "; ".join(notes))
        its = s - prev
        t_now = 1.0 / tp[i]
        clock.adv(its * t_now)
        times.extend([t_now] * min(its, 20))
        dts.append(rng.uniform(0.004, 0.03))
        max_mem = max(max_mem, mem_raw[i])
        p = min(1.0, s / (0.3 * T))
        comps = [(nm, (ev / e_tot) * (1 - p) + (lv / l_tot) * p) for (nm, ev), (_, lv) in zip(early, late)]
        losses = "  ".join("%s: %.4g" % (nm, loss[i] * sh * (1 + 0.04 * tdev(rng))) for nm, sh in comps)
        avg_t = sum(times[2:]) / max(1, len(times) - 2) if len(times) > 2 else t_now
        eta = (T - 1 - s) * median(times[-1000:])
        lr = lrf(s)
        fields = " eta: %s  iter: %d  total_loss: %.4g  %s    time: %.4f  " % (eta_str(eta), s, loss[i], losses, avg_t)
        if newer:
            fields += "last_time: %.4f  " % (t_now * (1 + 0.05 * tdev(rng)))
        fields += "data_time: %.4f  " % dts[-1]
        if newer:
            fields += "last_data_time: %.4f   " % (dts[-1] * rng.uniform(0.5, 1.2))
        fields += "lr: %s  max_mem: %dM" % ("{:.5g}".format(lr), round(max_mem))
        F_last = fields
        L.append(pre("d2.utils.events") + fields)
        prev = s
        if (s + 1) % 5000 == 0 and s + 1 < T:
            L.append(pre("fvcore.common.checkpoint") + "Saving checkpoint to ./output/model_%07d.pth" % s)
            clock.adv(rng.uniform(3, 9))
    L.append(pre("fvcore.common.checkpoint") + "Saving checkpoint to ./output/model_final.pth")
    tot = clock.el()
    L.append(pre("d2.data.datasets.coco") + "Loaded 5000 images in COCO format from datasets/coco/annotations/instances_val2017.json")
    L.append(pre("d2.evaluation.evaluator") + "Start inference on 625 batches")
    for b in (11, 120, 230, 340, 450, 560):
        L.append(pre("d2.evaluation.evaluator") + "Inference done %d/625. Dataloading: 0.0009 s/iter. Inference: 0.0512 s/iter. "
                 "Eval: 0.0002 s/iter. Total: 0.0523 s/iter. ETA=0:00:%02d" % (b, (625 - b) * 0.0523))
    ap = 30 + 10 * rng.random() if isfin(loss[-1]) else 0.0
    L.append(pre("d2.evaluation.evaluator") + "Total inference time: 0:00:33.1 (0.053 s / iter per device, on 8 devices)")
    L.append(pre("d2.evaluation.coco_evaluation") + "Evaluation results for bbox: ")
    L.append("|   AP   |  AP50  |  AP75  |  APs   |  APm   |  APl   |")
    L.append("|:------:|:------:|:------:|:------:|:------:|:------:|")
    L.append("| %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |" % (ap, ap * 1.55, ap * 1.08, ap * 0.57, ap * 1.09, ap * 1.3))
    L.append(pre("d2.engine.defaults") + "Evaluation results for coco_2017_val in csv format:")
    L.append(pre("d2.evaluation.testing") + "copypaste: Task: bbox")
    L.append(pre("d2.evaluation.testing") + "copypaste: AP,AP50,AP75,APs,APm,APl")
    L.append(pre("d2.evaluation.testing") + "copypaste: %.4f,%.4f,%.4f,%.4f,%.4f,%.4f" % (
        ap, ap * 1.55, ap * 1.08, ap * 0.57, ap * 1.09, ap * 1.3))
    L.append(pre("d2.engine.hooks") + "Overall training speed: %d iterations in %s (%.4f s / it)" % (
        T - resume_at - 2, eta_str(tot), tot / max(1, T - resume_at)))
    L.append(pre("d2.engine.hooks") + "Total training time: %s (0:%02d:%02d on hooks)" % (
        eta_str(tot * 1.02), rng.randint(0, 9), rng.randint(0, 59)))
    onset = steps[onset_i] if onset_i is not None else None
    return Out("\n".join(L) + "\n", "log", onset, steps[0], steps[-1], "; ".join(notes))

# ========================================================================================
# Ultralytics YOLO results.csv
# ========================================================================================


def gen_ultralytics(rng, kind):
    ver = rng.choice(["v5", "v8", "v8", "v11"])
    E = rng.randint(150, 300)
    ep_print = list(range(0, E)) if ver == "v5" else list(range(1, E + 1))
    steps = list(range(1, E + 1))
    n = E
    noise = rng.uniform(0.006, 0.014)
    if ver == "v5":
        specs = [("train/box_loss", rng.uniform(0.09, 0.11), rng.uniform(0.025, 0.04)),
                 ("train/obj_loss", rng.uniform(0.06, 0.08), rng.uniform(0.035, 0.05)),
                 ("train/cls_loss", rng.uniform(0.04, 0.06), rng.uniform(0.004, 0.01))]
    else:
        specs = [("train/box_loss", rng.uniform(1.45, 1.7), rng.uniform(0.75, 1.05)),
                 ("train/cls_loss", rng.uniform(2.4, 3.2), rng.uniform(0.45, 0.8)),
                 ("train/dfl_loss", rng.uniform(1.35, 1.6), rng.uniform(0.95, 1.15))]
    c = rng.uniform(8, 40)
    a = rng.uniform(0.6, 1.0)
    close = 10 if ver != "v5" else 0
    shared = [math.exp(noise * tdev(rng)) for _ in range(n)]
    tr = []
    dets = []
    for name, l0, lf in specs:
        vals, det = loss_curve(rng, steps, E, l0, lf, noise * 0.5, c=c, a=a, bump_p=0.004)
        for i in range(n):
            if close and steps[i] > E - close:
                f = rng.uniform(0.86, 0.92) if i == 0 else None
                vals[i] *= 0.89
                det[i] *= 0.89
            vals[i] *= shared[i]
        tr.append(vals)
        dets.append(det)
    # total (for fault injection) = sum of parts; faults scale every part alike
    tot = [sum(t[i] for t in tr) for i in range(n)]
    tdet = [sum(d[i] for d in dets) for i in range(n)]
    tot0 = list(tot)
    notes = ["Ultralytics YOLO%s results.csv, %d epochs, %s" % (
        ver[1:], E, "epoch column 0-based" if ver == "v5" else "epoch column 1-based")]
    onset_i = None
    nan_from = None
    if kind:
        onset_i = onset_index(rng, steps)
        o = onset_i
        if kind == "loss_spike":
            notes.append(inj_spike(rng, tot, o).replace("bad batch", "an AMP overflow streak") + " (every train loss alike)")
        elif kind == "loss_divergence":
            notes.append(inj_divergence(rng, tot, o) + " (every train loss alike)")
        elif kind == "slow_drift":
            notes.append(inj_drift(rng, tot, tdet, o) + " (every train loss alike)")
        elif kind == "nonfinite":
            nan_from = o
            notes.append("AMP NaN: every train and val loss is nan from the onset epoch on, metrics fall to 0")
    ratio = [tot[i] / tot0[i] if tot0[i] else 1.0 for i in range(n)]
    # metrics
    m50_end = rng.uniform(0.55, 0.85)
    rows = []
    for i in range(n):
        p = steps[i] / float(E)
        bad = (ratio[i] - 1.0)
        m50 = m50_end * (1 - math.exp(-p * rng.uniform(4.5, 5.5))) / (1 - math.exp(-5.0)) * (1 + 0.012 * tdev(rng))
        m50 = max(0.0, m50 * (1.0 - min(0.8, 0.35 * max(0.0, bad))))
        m5095 = m50 * rng.uniform(0.6, 0.66)
        prec = max(0.001, min(0.99, m50 * 1.08 + 0.05 + 0.015 * tdev(rng)))
        rec = max(0.001, min(0.99, m50 * 0.98 + 0.03 + 0.01 * tdev(rng)))
        vals = [tr[j][i] * ratio[i] for j in range(3)]
        vl = [dets[j][i] * rng.uniform(0.98, 1.02) * (1.0 + 0.04 * max(0.0, p - 0.8)) * ratio[i] ** 0.8 for j in range(3)]
        if ver != "v5":
            vl = [vl[0] * 1.05, vl[1] * 1.3, vl[2] * 1.08]
        if nan_from is not None and i >= nan_from:
            vals = [NAN] * 3
            vl = [NAN] * 3
            prec = rec = m50 = m5095 = 0.0
        lr0, lrf = 0.01, 0.01
        e = steps[i]
        lr_e = lr0 * ((1 - (e - 1) / float(E)) * (1 - lrf) + lrf)
        if e <= 3:
            pg0 = 0.1 - (0.1 - lr_e) * (e / 3.0) + (-0.0333 if ver == "v5" else 0.0)
            pg12 = lr_e * (e / 3.0) * (0.9995 if ver != "v5" else 1.0)
        else:
            pg0 = pg12 = lr_e
        rows.append([ep_print[i]] + vals + [prec, rec, m50, m5095] + vl + [max(pg0, lr_e * 0.3), pg12, pg12])
    if ver == "v5":
        cols = ["epoch", "train/box_loss", "train/obj_loss", "train/cls_loss", "metrics/precision", "metrics/recall",
                "metrics/mAP_0.5", "metrics/mAP_0.5:0.95", "val/box_loss", "val/obj_loss", "val/cls_loss", "x/lr0", "x/lr1", "x/lr2"]
        lines = [",".join("%20s" % c for c in cols)]
        for r in rows:
            lines.append(",".join("%20.5g" % v for v in r))
    elif ver == "v8":
        cols = ["epoch", "train/box_loss", "train/cls_loss", "train/dfl_loss", "metrics/precision(B)", "metrics/recall(B)",
                "metrics/mAP50(B)", "metrics/mAP50-95(B)", "val/box_loss", "val/cls_loss", "val/dfl_loss", "lr/pg0", "lr/pg1", "lr/pg2"]
        lines = [",".join("%23s" % c for c in cols)]
        for r in rows:
            lines.append(",".join("%23.5g" % v for v in r))
    else:
        cols = ["epoch", "time", "train/box_loss", "train/cls_loss", "train/dfl_loss", "metrics/precision(B)",
                "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)", "val/box_loss", "val/cls_loss",
                "val/dfl_loss", "lr/pg0", "lr/pg1", "lr/pg2"]
        lines = [",".join(cols)]
        t = 0.0
        per = rng.uniform(20, 200)
        for r in rows:
            t += per * (1 + 0.05 * tdev(rng))
            lines.append(",".join("%.6g" % v for v in [r[0], t] + r[1:]))
    onset = ep_print[onset_i] if onset_i is not None else None
    return Out("\n".join(lines) + "\n", "csv", onset, ep_print[0], ep_print[-1], "; ".join(notes))

# ========================================================================================
# timm train.py
# ========================================================================================


def gen_timm(rng, kind):
    ver = rng.choice(["0.9", "0.9", "1.0", "0.6"])
    li = rng.choice([20, 50, 50, 100])
    ds = rng.choice(["cifar", "cifar", "imagenet"])
    if ds == "cifar":
        N = rng.choice([390, 391, 195, 196, 781])
        model = rng.choice(["resnet18", "resnet50", "vit_small_patch16_224", "convnext_nano"])
        L0, Lf = 2.30, rng.uniform(0.45, 0.75)
        bs = {390: 128, 391: 128, 195: 256, 196: 256, 781: 64}[N]
        nval = 40 if bs == 128 else 20
    else:
        N = rng.choice([1251, 625, 312, 160])
        model = rng.choice(["resnet50", "efficientnet_b0", "deit_small_patch16_224", "resnetv2_50x1_bit"])
        L0, Lf = 6.91, rng.uniform(2.6, 3.3)
        bs = {1251: 1024, 625: 2048, 312: 4096, 160: 1024}[N]
        nval = 49
    E = max(6, min(rng.randint(30, 300), 20000 // N))
    idxs = [b for b in range(0, N) if b % li == 0 or (ver != "1.0" and b == N - 1)]
    steps = [e * N + b for e in range(E) for b in idxs]
    n = len(steps)
    T = E * N
    sched = rng.choice(["cosine", "cosine", "step"])
    warm_ep = rng.choice([0, 3, 5])
    peak = rng.choice([0.1, 0.05, 1e-3, 5e-4]) if ds == "cifar" else rng.choice([0.4, 2e-3, 1e-3])
    if sched == "step":
        ms = [int(E * f) * N for f in (0.5, 0.75)]
        lr_ep = lambda e: peak * (0.1 ** sum(1 for m in ms if e * N >= m)) if e >= warm_ep else 1e-6 + (peak - 1e-6) * e / max(1, warm_ep)  # noqa
        drops = [(m, rng.uniform(0.6, 0.8)) for m in ms]
    else:
        lr_ep = lambda e: (1e-6 + (peak - 1e-6) * e / max(1, warm_ep)) if e < warm_ep else 1e-5 + (peak - 1e-5) * 0.5 * (1 + math.cos(math.pi * (e - warm_ep) / max(1, E - warm_ep)))  # noqa
        drops = []
    noise = rng.uniform(0.035, 0.06)
    loss, ldet = loss_curve(rng, steps, T, L0, Lf, noise, drops=drops, bump_p=0.004)
    t_b = rng.uniform(0.08, 0.45)
    tp = tput_curve(rng, n, bs / t_b, noise=0.04, slow_first=False)
    dtime = [rng.uniform(0.005, 0.03) for _ in range(n)]
    for i, s in enumerate(steps):
        if s % N == 0:  # first batch of each epoch waits for the workers
            tp[i] *= rng.uniform(0.08, 0.3)
            dtime[i] = bs / tp[i] * rng.uniform(0.7, 0.9)
    notes = ["timm %s %s on %s, %d epochs x %d updates, log_interval %d, %s lr%s" % (
        ver, model, "CIFAR" if ds == "cifar" else "ImageNet", E, N, li, sched,
        ", warmup %d epochs" % warm_ep if warm_ep else "")]
    onset_i = None
    if kind:
        onset_i = onset_index(rng, steps)
        while steps[onset_i] % N == 0:
            onset_i += 1
        o = onset_i
        if kind == "loss_spike":
            notes.append(inj_spike(rng, loss, o))
        elif kind == "loss_divergence":
            notes.append(inj_divergence(rng, loss, o))
        elif kind == "slow_drift":
            notes.append(inj_drift(rng, loss, ldet, o))
        elif kind == "nonfinite":
            for i in range(o, n):
                loss[i] = NAN
            notes.append("loss is nan from the onset batch and stays nan (timm has no NaN guard)")
        elif kind == "throughput_regression":
            notes.append(inj_tput(rng, tp, o))
            for i in range(o, n):
                dtime[i] += bs / tp[i] - t_b
    clock = Clock(rng)
    out_dir = "./output/train/%s-%s-%d" % (clock.t.strftime("%Y%m%d-%H%M%S"), model, 224 if ds == "imagenet" else 32)
    L = []
    L.append("Training with a single process on 1 device (cuda:0)." if rng.random() < 0.4 else
             "Training in distributed mode with multiple processes, 1 device per process.Process 0, total 8, device cuda:0.")
    L.append("Model %s created, param count:%d" % (model, rng.randint(5, 90) * 1000000 + rng.randint(0, 999999)))
    L.append("Data processing configuration for current model + dataset:")
    L.append("\tinput_size: (3, 224, 224)")
    L.append("\tinterpolation: bicubic")
    L.append("\tmean: (0.485, 0.456, 0.406)")
    L.append("\tstd: (0.229, 0.224, 0.225)")
    L.append("\tcrop_pct: 0.95")
    L.append("\tcrop_mode: center")
    L.append("Using native Torch AMP. Training in mixed precision.")
    L.append("Using native Torch DistributedDataParallel.")
    L.append("Scheduled epochs: %d. LR stepped per epoch." % E)
    ep_loss_sum = 0.0
    ep_cnt = 0
    ep_t_sum = 0.0
    ep_dt_sum = 0.0
    checkpoints = []
    best = None
    prev = -1
    prev_s = 0
    for i, s in enumerate(steps):
        e, b = divmod(s, N)
        if b == 0:
            ep_loss_sum = ep_cnt = 0
            ep_t_sum = ep_dt_sum = 0.0
        t_now = bs / tp[i]
        clock.adv((s - prev) * t_now if b else t_now)
        prev = s
        w = (s - prev_s) if b else 1
        prev_s = s
        ep_cnt += w
        ep_loss_sum += loss[i] * w if b == 0 else (loss[i] + (w - 1) * ldet[i]) if isfin(loss[i]) else NAN
        ep_t_sum += t_now * w
        ep_dt_sum += dtime[i] if b == 0 else dtime[i] + (w - 1) * min(dtime[i], 0.03)
        avg_l = ep_loss_sum / ep_cnt
        t_avg = ep_t_sum / ep_cnt
        lr = lr_ep(e)
        if ver == "0.6":
            head = "Train: %d [%4d/%d (%3.0f%%)]  Loss: %s (%s)  " % (e, b, N, 100.0 * b / (N - 1), "%#.4g" % loss[i], "%#.3g" % avg_l)
        elif ver == "1.0":
            head = "Train: %d [%4d/%d (%3.0f%%)]  Loss: %s (%s)  " % (e, b, N, 100.0 * (b + 1) / N, "%#.3g" % loss[i], "%#.3g" % avg_l)
        else:
            head = "Train: %d [%4d/%d (%3.0f%%)]  Loss: %s (%s)  " % (e, b, N, 100.0 * b / (N - 1), "%#.3g" % loss[i], "%#.3g" % avg_l)
        L.append(head + "Time: %.3fs, %7.2f/s  (%.3fs, %7.2f/s)  LR: %.3e  Data: %.3f (%.3f)" % (
            t_now, bs / t_now, t_avg, bs / t_avg, lr, dtime[i], ep_dt_sum / ep_cnt))
        last_of_epoch = (i + 1 == n) or (steps[i + 1] // N != e)
        if last_of_epoch:
            p = (e + 1) / float(E)
            ok = isfin(loss[i])
            base_acc = (95.0 if ds == "cifar" else 78.0) * (1 - math.exp(-4 * p)) / (1 - math.exp(-4))
            if ok:
                bad = max(0.0, loss[i] / ldet[i] - 1.0)
                acc1 = max(1.0, base_acc * (1 - min(0.9, 0.4 * bad)) + 0.3 * tdev(rng))
            else:
                acc1 = 100.0 / (10 if ds == "cifar" else 1000)
            vloss = (ldet[i] * rng.uniform(0.6, 0.8)) if ok else NAN
            vacc = vl = 0.0
            for vb in list(range(0, nval, li if li < nval else 10)) + [nval - 1]:
                vt = rng.uniform(0.03, 0.08) if vb else rng.uniform(0.8, 2.0)
                clock.adv(vt * 10)
                L.append("Test: [%4d/%d]  Time: %.3f (%.3f)  Loss: %7.3f (%6.3f)  Acc@1: %7.3f (%7.3f)  Acc@5: %7.3f (%7.3f)" % (
                    vb, nval - 1, vt, vt * 1.1, vloss * (1 + 0.1 * tdev(rng)) if ok else NAN, vloss,
                    min(100.0, acc1 + 3 * tdev(rng)), acc1, min(100.0, acc1 + 15 + 2 * tdev(rng)), min(100.0, acc1 + 15)))
            checkpoints.append(("%s/checkpoint-%d.pth.tar" % (out_dir, e), acc1))
            checkpoints.sort(key=lambda x: -x[1])
            checkpoints = checkpoints[:10]
            if best is None or acc1 > best[0]:
                best = (acc1, e)
            L.append("Current checkpoints:")
            for pth, a in checkpoints:
                L.append(" ('%s', %s)" % (pth, repr(round(a, 4) if rng.random() < 0.0 else a)))
            L.append("")
    if best:
        L.append("*** Best metric: %s (epoch %d)" % (best[0], best[1]))
    onset = steps[onset_i] if onset_i is not None else None
    return Out("\n".join(L) + "\n", "log", onset, steps[0], steps[-1], "; ".join(notes))

# ========================================================================================
# torchtune (DiskLogger / StdoutLogger "Step N | k:v ..." lines)
# ========================================================================================


def gen_torchtune(rng, kind):
    rl_kinds = ("kl_spike", "kl_runaway", "reward_hacking", "reward_saturation")
    if kind in rl_kinds:
        if kind == "reward_saturation":
            mode = "grpo"
        elif kind == "reward_hacking":
            mode = rng.choice(["ppo", "ppo", "grpo"])
        else:
            mode = rng.choice(["ppo", "grpo"])
    elif kind is None:
        mode = rng.choice(["sft", "sft", "sft", "ppo", "grpo"])
    else:
        mode = "sft"
    if mode == "sft":
        return _torchtune_sft(rng, kind)
    return _torchtune_rl(rng, kind, mode)


def _tt_config_dump(rng, recipe, model, lr, bs, epochs, log_every, mem, extra=()):
    L = ["INFO:torchtune.utils._logging:Running %s with resolved config:" % recipe, ""]
    L += ["batch_size: %d" % bs,
          "checkpointer:",
          "  _component_: torchtune.training.FullModelHFCheckpointer",
          "  checkpoint_dir: /tmp/%s/" % model,
          "  model_type: %s" % ("LLAMA3" if "llama" in model.lower() else "QWEN2"),
          "  output_dir: /tmp/torchtune/%s/full" % model,
          "clip_grad_norm: %s" % ("1.0" if "clip" in extra else "null"),
          "compile: false",
          "dataset:",
          "  _component_: torchtune.datasets.alpaca_cleaned_dataset",
          "  packed: false",
          "device: cuda",
          "dtype: bf16",
          "enable_activation_checkpointing: true",
          "epochs: %d" % epochs,
          "gradient_accumulation_steps: %d" % rng.choice([1, 4, 8]),
          "log_every_n_steps: %d" % log_every,
          "log_peak_memory_stats: %s" % ("true" if mem else "false"),
          "lr_scheduler:",
          "  _component_: torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
          "  num_warmup_steps: 100",
          "metric_logger:",
          "  _component_: torchtune.training.metric_logging.DiskLogger",
          "  log_dir: /tmp/torchtune/%s/full/logs" % model,
          "model:",
          "  _component_: torchtune.models.%s" % model,
          "optimizer:",
          "  _component_: torch.optim.AdamW",
          "  fused: true",
          "  lr: %g" % lr,
          "output_dir: /tmp/torchtune/%s/full" % model,
          "seed: null",
          "shuffle: true",
          ""]
    return L


def _torchtune_sft(rng, kind):
    console = rng.random() < 0.45
    k = rng.choice([1, 1, 1, 5, 10])
    n = rng.randint(150, 1500 if k == 1 else 800)
    T = n * k
    epochs = rng.choice([1, 1, 2, 3])
    spe = int(math.ceil(T / float(epochs)))
    steps = [k * (i + 1) for i in range(n)]
    model = rng.choice(["llama3_2_1b", "llama3_1_8b", "qwen2_5_3b", "llama3_2_3b", "gemma2_2b"])
    lora = rng.random() < 0.4
    lr = rng.choice([2e-5, 1e-5, 5e-6]) if not lora else rng.choice([3e-4, 1e-4])
    has_mem = kind == "memory_leak" or rng.random() < 0.7
    has_g = kind in ("grad_explosion", "grad_vanishing") or rng.random() < 0.5
    lrf = lr_fn("cosine", T, lr, min(100, T // 10), final=0.0)
    noise = rng.uniform(0.04, 0.07) if k == 1 else rng.uniform(0.02, 0.035)
    loss, ldet = loss_curve(rng, steps, T, rng.uniform(1.6, 2.6), rng.uniform(0.75, 1.3), noise,
                            epoch_len=spe if epochs > 1 else None, epoch_drop=rng.uniform(0.06, 0.15))
    g = gnorm_curve(rng, steps, T, rng.uniform(3, 12), rng.uniform(0.4, 1.5), noise=rng.uniform(0.15, 0.3))
    tps0 = rng.uniform(700, 5200)
    tp = tput_curve(rng, n, tps0, noise=0.05)
    memb = rng.uniform(12, 62)
    mem = mem_curve(rng, n, memb, saw=0.02, noise=0.004)
    notes = ["torchtune %s (%s%s), %s, log_every_n_steps %d, %d epoch(s)%s%s" % (
        "full_finetune" if not lora else "lora_finetune", model, ", LoRA" if lora else "",
        "StdoutLogger console with tqdm" if console else "DiskLogger file", k, epochs,
        ", peak memory logged" if has_mem else "", ", grad_norm logged as a tensor" if has_g else "")]
    onset_i = None
    if kind:
        onset_i = onset_index(rng, steps)
        o = onset_i
        if kind == "loss_spike":
            notes.append(inj_spike(rng, loss, o))
            g[o] *= rng.uniform(1.5, 2.0)
        elif kind == "loss_divergence":
            notes.append(inj_divergence(rng, loss, o))
            for i in range(o, n):
                g[i] *= (loss[i] / ldet[i]) ** 0.8
        elif kind == "slow_drift":
            notes.append(inj_drift(rng, loss, ldet, o))
        elif kind == "nonfinite":
            for i in range(o, n):
                loss[i] = NAN
                g[i] = NAN
            notes.append("loss (and grad_norm) nan from the onset step, persisting")
        elif kind == "grad_explosion":
            notes.append(inj_gexplode(rng, g, o, loss))
        elif kind == "grad_vanishing":
            notes.append(inj_gvanish(rng, g, o, loss, ldet))
        elif kind == "memory_leak":
            notes.append(inj_leak(rng, mem, o, cap=79.0))
        elif kind == "throughput_regression":
            notes.append(inj_tput(rng, tp, o))
    L = []
    recipe = "LoRAFinetuneRecipeSingleDevice" if lora else rng.choice(["FullFinetuneRecipeSingleDevice", "FullFinetuneRecipeDistributed"])
    if console:
        L += _tt_config_dump(rng, recipe, model, lr, rng.choice([2, 4, 8]), epochs, k, has_mem,
                             extra=("clip",) if has_g else ())
        L.append("DEBUG:torchtune.utils._logging:Setting manual seed to local seed %d. Local seed is seed + rank = %d + 0" % (
            rng.randint(1, 4 * 10 ** 9), rng.randint(1, 4 * 10 ** 9)))
        L.append("Writing logs to /tmp/torchtune/%s/full/logs/log_%d.txt" % (model, 1700000000 + rng.randint(0, 10 ** 8)))
        L.append("INFO:torchtune.utils._logging:Model is initialized with precision torch.bfloat16.")
        L.append("INFO:torchtune.utils._logging:Memory stats after model init:")
        L.append("\tGPU peak memory allocation: %.2f GiB" % (memb * 0.3))
        L.append("\tGPU peak memory reserved: %.2f GiB" % (memb * 0.31))
        L.append("\tGPU peak memory active: %.2f GiB" % (memb * 0.3))
        L.append("INFO:torchtune.utils._logging:Tokenizer is initialized from file.")
        L.append("INFO:torchtune.utils._logging:Optimizer is initialized.")
        L.append("INFO:torchtune.utils._logging:Loss is initialized.")
        L.append("INFO:torchtune.utils._logging:Dataset and Sampler are initialized.")
        L.append("INFO:torchtune.utils._logging:Learning rate scheduler is initialized.")
        L.append("WARNING:torchtune.utils._logging: Profiling disabled.")
        L.append("INFO:torchtune.utils._logging: Profiler config after instantiation: {'enabled': False}")
    line = ""
    t_el = 0.0
    ema = None
    for i, s in enumerate(steps):
        ntok = rng.uniform(3000, 9000)
        st = ntok / tp[i]
        ep = (s - 1) // spe
        if console:
            for sub in range(s - k + 1, s + 1):
                st_sub = st if sub == s else rng.uniform(3000, 9000) / tp[i]
                t_el += st_sub
                ema = st_sub if ema is None else 0.3 * st_sub + 0.7 * ema  # tqdm's smoothing
                bar_n = sub - ep * spe
                desc = "%d|%d|Loss: %r" % (ep + 1, sub, loss[i] if sub == s else ldet[i] * math.exp(noise * tdev(rng)))
                line += "\r" + tqdm_bar(bar_n, spe, t_el, ema, desc=desc)
        d = [("loss", repr(loss[i])), ("lr", repr(lrf(s))), ("tokens_per_second_per_gpu", repr(tp[i]))]
        if has_mem:
            d += [("peak_memory_active", repr(mem[i] * 0.998)), ("peak_memory_alloc", repr(mem[i])),
                  ("peak_memory_reserved", repr(mem[i] * 1.04 + 0.9))]
        if has_g:
            d.append(("grad_norm", torch_repr(g[i])))
        txt = "Step %d | " % s + "".join("%s:%s " % kv for kv in d)
        if console:
            L.append(line + txt)
            line = ""
        else:
            L.append(txt)
        if console and (s % spe == 0) and s < T:
            L.append("INFO:torchtune.utils._logging:Saving checkpoint. This may take some time. Retrieving full model state dict...")
            L.append("INFO:torchtune.utils._logging:Model checkpoint of size 2.47 GiB saved to /tmp/torchtune/%s/full/epoch_%d/model-00001-of-00001.safetensors" % (model, ep))
            L.append("INFO:torchtune.utils._logging:Saving final epoch checkpoint.")
    onset = steps[onset_i] if onset_i is not None else None
    return Out("\n".join(L) + "\n", "log" if console else "txt", onset, steps[0], steps[-1], "; ".join(notes))


def _torchtune_rl(rng, kind, mode):
    n = rng.randint(150, 600)
    steps = list(range(1, n + 1))
    model = rng.choice(["llama3_2_1b", "qwen2_5_3b", "mistral_7b"] if mode == "ppo" else ["llama3_2_3b", "qwen2_5_3b", "llama3_1_8b"])
    noise = 0.1
    notes = ["torchtune %s recipe (%s), DiskLogger (tensor reprs), every step" % (
        "ppo_full_finetune_single_device" if mode == "ppo" else "dev/grpo_full_finetune_distributed", model)]
    onset_i = onset_index(rng, steps, 0.3, 0.75) if kind else None
    o = onset_i
    if mode == "ppo":
        kl_plateau = rng.uniform(4.0, 18.0)  # summed over tokens
        kl = kl_curve(rng, n, kl_plateau, noise=0.12)
        sc, scd = rise_curve(rng, n, rng.uniform(-4.0, -1.5), rng.uniform(0.5, 3.0), noise_abs=0.25)
        lmax = rng.choice([58, 96, 128, 256])
        l0 = lmax * rng.uniform(0.3, 0.45)
        length = [min(lmax, l0 * (1 + 0.15 * i / n) * (1 + 0.05 * tdev(rng))) for i in range(n)]
        kl_coef = rng.choice([0.05, 0.02, 0.1])
        if kind == "kl_spike":
            notes.append(inj_klspike(rng, kl, o))
        elif kind == "kl_runaway":
            notes.append(inj_klrunaway(rng, kl, o))
            for i in range(o, n):
                sc[i] += 0.15 * math.log(kl[i] / max(1e-6, kl_plateau))
        elif kind == "reward_hacking":
            Lm = min(lmax / l0 * 0.98, rng.uniform(1.8, 3.5))
            r = rng.uniform(0.008, 0.025)
            K = min(n - o, int(math.log(Lm) / r) + 1)
            for i in range(o, n):
                f = min(Lm, math.exp(r * (i - o + 1)))
                length[i] = min(lmax, length[i] * f)
                sc[i] += 1.2 * math.log(f) + 0.02 * (i - o)
                kl[i] *= 1.0 + 1.5 * (f - 1.0) ** 1.5
            notes.append("reward hacking: response length grows %.1fx (%.1f%%/step, capped at max_generated_tokens %d) "
                         "while the RM score climbs and the KL accelerates" % (Lm, 100 * r, lmax))
        rows = []
        for i in range(n):
            klr = -kl_coef * kl[i]
            pol = 0.02 * tdev(rng) - 0.01
            val = abs(0.3 * math.exp(-i / (0.2 * n)) + 0.05 + 0.02 * tdev(rng))
            d = [("scores", torch_repr(sc[i])), ("num_stop_tokens", torch_repr(int(min(64, 64 * (1 - length[i] / lmax) + 20)))),
                 ("rlhf_reward", torch_repr(sc[i] + klr)), ("kl", torch_repr(kl[i])), ("kl_reward", torch_repr(klr)),
                 ("loss", torch_repr(pol + 0.1 * val)), ("policy_loss", torch_repr(pol)), ("value_loss", torch_repr(val)),
                 ("clipfrac", torch_repr(abs(0.02 + 0.01 * tdev(rng)))), ("ratios", torch_repr(1.0 + 0.002 * tdev(rng))),
                 ("approx_policy_kl", torch_repr(abs(0.0008 + 0.0004 * tdev(rng)))),
                 ("response_lengths", torch_repr(float(round(length[i], 4)))),
                 ("peak_memory_active", repr(rng.uniform(60.1, 61.0))), ("peak_memory_alloc", repr(rng.uniform(60.1, 61.0))),
                 ("peak_memory_reserved", repr(rng.uniform(70.2, 72.0))),
                 ("tokens_per_second_per_gpu", repr(rng.uniform(900, 1100)))]
            rows.append("Step %d | " % (i + 1) + "".join("%s:%s " % kv for kv in d))
        return Out("\n".join(rows) + "\n", "txt", steps[o] if o is not None else None, 1, n, "; ".join(notes))
    # GRPO
    kl = kl_curve(rng, n, rng.uniform(0.002, 0.02), noise=0.2)
    rmax = 100.0
    succ, sdet = rise_curve(rng, n, rng.uniform(0.05, 0.2), rng.uniform(0.45, 0.75), noise_abs=0.05)
    rew = [max(0.0, s * 88 + 8 + 4 * tdev(rng)) for s in succ]
    length = [rng.uniform(180, 260) * (1 + 0.2 * i / n) * (1 + 0.06 * tdev(rng)) for i in range(n)]
    g = [abs(0.25 * math.exp(0.3 * tdev(rng))) for _ in range(n)]
    beta = 0.04
    if kind == "kl_spike":
        notes.append(inj_klspike(rng, kl, o))
    elif kind == "kl_runaway":
        notes.append(inj_klrunaway(rng, kl, o))
    elif kind == "reward_saturation":
        K = rng.randint(5, 20)
        for i in range(o, n):
            fr = min(1.0, (i - o + 1) / float(K))
            succ[i] = succ[i] * (1 - fr) + 1.0 * fr
            rew[i] = rew[i] * (1 - fr) + rmax * fr
            if fr >= 1.0:
                succ[i] = 1.0
                rew[i] = rmax
            g[i] *= (1 - fr) + 0.02 * fr
        notes.append("reward saturates: every group solves every prompt (rewards %.0f = max, successes 1.0) within %d steps; "
                     "advantages vanish" % (rmax, K))
    elif kind == "reward_hacking":
        K = rng.randint(20, 60)
        P = rng.uniform(0.25, 0.6)
        peak = median(succ[max(0, o - 10):o])
        for i in range(o, n):
            fr = min(1.0, (i - o + 1) / float(K))
            succ[i] = max(0.0, peak * (1 - (1 - P) * fr) + 0.04 * tdev(rng))
            rew[i] = max(rew[i], median(rew[max(0, o - 10):o])) * (1 + 0.3 * fr) + 2 * tdev(rng)
            length[i] *= 1 + 0.8 * fr
        notes.append("reward hacking: total rewards keep rising (format credit) while successes (correctness) fall to "
                     "%.0f%% of their peak over %d steps" % (100 * P, K))
    rows = []
    lr = rng.choice([1e-5, 2e-5, 5e-6])
    for i in range(n):
        p_tie = 0.1 + 0.3 * (1 - 4 * succ[i] * (1 - succ[i])) if 0.0 < succ[i] < 1.0 else 1.0
        tie = rng.random() < p_tie
        pol = 0.0 if tie else 0.002 * tdev(rng)
        if tie and isfin(g[i]):
            g[i] *= 0.05
        d = [("rewards", torch_repr(rew[i])), ("successes", torch_repr(succ[i])),
             ("num_stop_tokens", torch_repr(int(rng.randint(40, 64)))),
             ("loss", torch_repr(pol + beta * kl[i])), ("policy_loss", torch_repr(pol)), ("kl_loss", torch_repr(kl[i])),
             ("clipfrac", torch_repr(0.0 if tie else abs(0.003 * tdev(rng)))), ("ratios", torch_repr(1.0 if tie else 1 + 0.001 * tdev(rng))),
             ("approx_policy_kl", torch_repr(0.0 if i == 0 else abs(1e-4 * (1 + 0.3 * tdev(rng))))),
             ("response_lengths", torch_repr(float(round(length[i], 4)))), ("lr", repr(lr)),
             ("grad_norm", torch_repr(g[i])),
             ("peak_memory_active", repr(rng.uniform(55.0, 57.0))), ("peak_memory_alloc", repr(rng.uniform(55.0, 57.0))),
             ("peak_memory_reserved", repr(rng.uniform(70.0, 74.0)))]
        rows.append("Step %d | " % (i + 1) + "".join("%s:%s " % kv for kv in d))
    return Out("\n".join(rows) + "\n", "txt", steps[o] if o is not None else None, 1, n, "; ".join(notes))

# ========================================================================================
# OpenRLHF (Ray PPO / GRPO: tqdm postfix dicts)
# ========================================================================================


def gen_openrlhf(rng, kind):
    if kind in ("entropy_collapse", "reward_saturation"):
        ver = "new"
    else:
        ver = rng.choice(["old", "new"])
    cr = rng.random() < 0.5
    n = rng.randint(150, 480)
    rule = ver == "new" and (kind == "reward_saturation" or rng.random() < 0.6)
    ent_on = ver == "new" and (kind == "entropy_collapse" or rng.random() < 0.5)
    model = rng.choice(["Llama-3-8b-sft-mixture", "Qwen2.5-7B-Instruct", "Qwen2.5-Math-1.5B", "Mistral-7B-Instruct-v0.3"])
    per_step = rng.uniform(60, 300)
    kl = kl_curve(rng, n, rng.uniform(0.01, 0.12) if not rule else rng.uniform(0.002, 0.03), noise=0.18)
    if rule:
        rew, rdet = rise_curve(rng, n, rng.uniform(0.15, 0.35), rng.uniform(0.55, 0.8), noise_abs=0.035)
        rew = [min(0.98, max(0.0, r)) for r in rew]
    else:
        rew, rdet = rise_curve(rng, n, rng.uniform(-1.5, -0.3), rng.uniform(0.6, 2.2), noise_abs=0.08)
    rlen0 = rng.uniform(180, 520)
    length = [rlen0 * (1 + rng.uniform(-0.15, 0.25) * i / n) * (1 + 0.04 * tdev(rng)) for i in range(n)]
    ent = [e for e in rise_curve(rng, n, rng.uniform(0.9, 1.6), 0.0, noise_rel=0.03)[0]] if ent_on else None
    if ent_on:
        e0 = rng.uniform(0.9, 1.6)
        ent = [e0 * (1 - rng.uniform(0.15, 0.35) * (1 - math.exp(-i / (0.3 * n)))) * (1 + 0.03 * tdev(rng)) for i in range(n)]
    pol = [0.01 * tdev(rng) for _ in range(n)]
    notes = ["OpenRLHF %s (%s, %s, %s), %s capture, %d rollout steps" % (
        "0.3-style PPO with critic" if ver == "old" else "0.6+ GRPO/REINFORCE++", model,
        "rule reward" if rule else "reward model", "entropy logged" if ent_on else "no entropy",
        "raw \\r" if cr else "line-per-refresh", n)]
    onset_i = onset_index(rng, list(range(1, n + 1)), 0.3, 0.75) if kind else None
    o = onset_i
    if kind == "kl_spike":
        notes.append(inj_klspike(rng, kl, o))
    elif kind == "kl_runaway":
        notes.append(inj_klrunaway(rng, kl, o))
    elif kind == "entropy_collapse":
        notes.append(inj_entropy(rng, ent, o))
        for i in range(o, n):
            length[i] *= 0.85
    elif kind == "reward_hacking":
        Lm = rng.uniform(1.8, 4.0)
        r = rng.uniform(0.008, 0.03)
        gain = (max(rew[:o]) - min(rew[:o])) if not rule else 0.2
        for i in range(o, n):
            f = min(Lm, math.exp(r * (i - o + 1)))
            length[i] *= f
            rew[i] += gain * 0.8 * math.log(f) / math.log(Lm)
            if rule:
                rew[i] = min(0.99, rew[i])
            kl[i] *= 1.0 + 1.2 * (f - 1.0) ** 1.6
            if ent_on:
                ent[i] *= 1.0 - 0.3 * (f - 1.0) / (Lm - 1.0)
        notes.append("reward hacking: response_length grows to %.1fx (%.1f%%/step) while the reward climbs and the KL "
                     "accelerates%s" % (Lm, 100 * r, ", entropy falls ~30%" if ent_on else ""))
    elif kind == "reward_saturation":
        K = rng.randint(5, 20)
        for i in range(o, n):
            fr = min(1.0, (i - o + 1) / float(K))
            rew[i] = rew[i] * (1 - fr) + 1.0 * fr
            pol[i] *= 1 - fr
            if fr >= 1.0:
                rew[i] = 1.0
                pol[i] = 0.0
        notes.append("reward saturates at 1.0 (every sample correct) within %d steps; policy_loss goes to 0" % K)
    elif kind == "nonfinite":
        for i in range(o, n):
            kl[i] = NAN
            pol[i] = NAN
            if ent_on:
                ent[i] = NAN
        notes.append("policy_loss and kl turn nan at the onset step and stay nan")
    clock = Clock(rng)
    L = []
    pid_a, pid_c, pid_v = rng.randint(1000, 9999), rng.randint(1000, 9999), rng.randint(1000, 9999)

    def dsl(msg, who="ActorModelRayActor", pid=None):
        return "(%s pid=%d) [%s] [INFO] %s" % (who, pid or pid_a, clock.t.strftime("%Y-%m-%d %H:%M:%S,") + "%03d" % rng.randint(0, 999), msg)

    L.append("%s,%03d\tINFO worker.py:1749 -- Started a local Ray instance. View the dashboard at \x1b[1m\x1b[32mhttp://127.0.0.1:8265 \x1b[39m\x1b[22m" % (
        clock.t.strftime("%Y-%m-%d %H:%M:%S"), rng.randint(0, 999)))
    L.append(dsl("[real_accelerator.py:203:get_accelerator] Setting ds_accelerator to cuda (auto detect)"))
    L.append("(LLMRayActor pid=%d) INFO %s llm_engine.py:176] Initializing an LLM engine (v0.6.3.post1) with config: model='%s', "
             "speculative_config=None, tokenizer='%s', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
             "trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=4096, download_dir=None, load_format=LoadFormat.AUTO, "
             "tensor_parallel_size=1, seed=%d, enforce_eager=False)" % (pid_v, clock.t.strftime("%m-%d %H:%M:%S"), model, model, rng.randint(0, 99)))
    L.append("(LLMRayActor pid=%d) INFO %s model_runner.py:1067] Loading model weights took 14.9596 GB" % (pid_v, clock.t.strftime("%m-%d %H:%M:%S")))
    L.append(dsl("[comm.py:652:init_distributed] cdb=None"))
    L.append(dsl("[config.py:733:__init__] Config mesh_device None world_size = 8"))
    L.append("(ActorModelRayActor pid=%d) Actor(" % pid_a)
    L.append("(ActorModelRayActor pid=%d)   (model): %s" % (pid_a, "Qwen2ForCausalLM(" if "Qwen" in model else "LlamaForCausalLM("))
    L.append("(ActorModelRayActor pid=%d) )" % pid_a)
    L.append(dsl("[logging.py:128:log_dist] [Rank 0] DeepSpeed info: version=0.15.0, git-hash=unknown, git-branch=unknown"))
    L.append("wandb: Tracking run with wandb version 0.17.5")
    L.append("wandb: Run data is saved locally in /root/wandb/run-%s-%s" % (clock.t.strftime("%Y%m%d_%H%M%S"), "%08x" % rng.getrandbits(32)))
    buf = "Episode [1/1]:   0%%|          | 0/%d [00:00<?, ?it/s]" % n
    out_lines = []

    def flush(extra):
        nonlocal buf
        out_lines.append(buf)
        buf = ""
        out_lines.append(extra)

    def fmt_status(i):
        if ver == "old":
            ret = rew[i] - 0.01 * kl[i] * length[i] / 100.0 if isfin(kl[i]) else NAN
            st = [("policy_loss", pol[i]), ("actor_lr", 5e-7), ("kl", kl[i]), ("reward", rew[i]), ("return", ret),
                  ("response_length", length[i]), ("total_length", length[i] + 160.0),
                  ("critic_loss", abs(0.05 + 0.02 * tdev(rng))), ("values", rew[i] * 0.8 + 0.05 * tdev(rng)), ("critic_lr", 9e-6)]
            short = [("pg", pol[i]), ("rm", rew[i]), ("ret", ret), ("glen", length[i]), ("tlen", length[i] + 160.0),
                     ("kl", kl[i]), ("act_lr", 5e-7)]
            return st, short
        st = [("policy_loss", pol[i]), ("actor_lr", 1e-6)]
        if ent_on:
            st.append(("entropy_loss", ent[i]))
        clip_r = min(0.9, max(0.0, (length[i] - 3000) / 3000.0)) if length[i] > 3000 else 0.0
        st += [("kl", kl[i]), ("ppo_clip_ratio", 0.0 if pol[i] == 0.0 else abs(0.002 + 0.001 * tdev(rng))),
               ("ppo_kl", 0.0 if pol[i] == 0.0 else abs(3e-4 * (1 + 0.3 * tdev(rng)))),
               ("response_clip_ratio", clip_r), ("response_length", length[i]),
               ("return", rew[i] - 0.001 * (kl[i] if isfin(kl[i]) else 0.0)), ("reward", rew[i]), ("score", rew[i]),
               ("total_length", length[i] + 210.0)]
        short = [("act_loss", pol[i]), ("reward", rew[i]), ("return", rew[i]), ("gen_len", length[i]),
                 ("tot_len", length[i] + 210.0), ("kl", kl[i]), ("act_lr", 1e-6)]
        if ent_on:
            short.append(("ent_loss", ent[i]))
        return st, short

    for i in range(n):
        s = i + 1
        dt = per_step * (1 + 0.08 * tdev(rng)) * (length[i] / rlen0) ** 0.6
        clock.adv(dt)
        st, short = fmt_status(i)
        m = rng.choice([4, 8, 16])
        inner_t = dt * 0.3
        pf = [(k, tqdm_num(v)) for k, v in short]
        inner = "(ActorModelRayActor pid=%d) %s" % (pid_a, tqdm_bar(m, m, inner_t, inner_t / m, desc="Train epoch [1/1]", postfix=pf))
        if cr:
            flush(inner)
            if ver == "old":
                flush("(CriticModelRayActor pid=%d) %s" % (pid_c, tqdm_bar(m, m, inner_t, inner_t / m, desc="Train epoch [1/1]",
                      postfix=[("cri", tqdm_num(st[7][1])), ("vals", tqdm_num(st[8][1])), ("cri_lr", tqdm_num(9e-6))])))
        else:
            out_lines.append(inner)
        el = clock.el()
        pfs = [(k, tqdm_num(v)) for k, v in st]
        seg1 = tqdm_bar(i, n, el, el / i if i else None, desc="Episode [1/1]", postfix=pfs)
        seg2 = tqdm_bar(s, n, el, el / s, desc="Episode [1/1]", postfix=pfs)
        if cr:
            buf += "\r" + seg1 + "\r" + seg2
        else:
            out_lines.append(seg1)
            out_lines.append(seg2)
        if s % 50 == 0 and s < n:
            msg = dsl("[engine.py:3536:_save_checkpoint] Saving model checkpoint: ./ckpt/checkpoints_ppo/global_step%d/mp_rank_00_model_states.pt" % s)
            if cr:
                flush(msg)
            else:
                out_lines.append(msg)
    if buf:
        out_lines.append(buf)
    L += out_lines
    L.append("wandb: Run summary:")
    L.append("wandb:   train/global_step %d" % n)
    onset = (onset_i if onset_i is not None else None)  # first shown at bar count s-1 = index
    return Out("\n".join(L) + "\n", "log", onset, 0, n, "; ".join(notes))

# ========================================================================================
# verl (console logger: "step:N - key:value - ..." with 3 decimals)
# ========================================================================================


def gen_verl(rng, kind):
    rm_mode = kind == "reward_hacking" or (kind not in ("reward_saturation",) and rng.random() < 0.25)
    algo = "grpo" if rng.random() < 0.75 else "ppo"
    resume = 0
    if kind is None and rng.random() < 0.2:
        resume = rng.choice([20, 40, 60, 100])
    n_total = rng.randint(150, 600) + resume
    steps = list(range(resume + 1, n_total + 1))
    n = len(steps)
    test_freq = rng.choice([5, 10, 10, 20])
    save_freq = rng.choice([20, 50, 100, -1])
    prefix = rng.choice(["(TaskRunner pid=%d) " % rng.randint(10000, 99999), "(main_task pid=%d) " % rng.randint(10000, 99999)])
    new_val = prefix.startswith("(TaskRunner") or rng.random() < 0.5
    ds = rng.choice(["openai/gsm8k", "lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval"])
    if new_val:
        valkey = "val-core/%s/%s/mean@1" % (ds, "acc" if rm_mode else rng.choice(["reward", "acc"]))
    else:
        valkey = "val/test_score/%s" % ds
    model = rng.choice(["Qwen2.5-7B-Instruct", "Qwen2.5-3B-Instruct", "deepseek-llm-7b-chat", "Qwen3-8B", "Llama-3.1-8B-Instruct"])
    bsz = rng.choice([256, 512, 1024])
    max_resp = rng.choice([1024, 2048, 4096])
    ngpu = rng.choice([8, 16])
    e0 = rng.uniform(0.35, 1.2)
    ent = [e0 * (1 - rng.uniform(0.1, 0.35) * (1 - math.exp(-i / (0.3 * n_total)))) * (1 + 0.03 * tdev(rng)) for i in range(n_total)]
    kl = kl_curve(rng, n_total, rng.uniform(0.004, 0.04), noise=0.15)
    if rm_mode:
        sc, scd = rise_curve(rng, n_total, rng.uniform(-1.0, 0.5), rng.uniform(1.5, 3.5), noise_abs=0.06)
    else:
        sc, scd = rise_curve(rng, n_total, rng.uniform(0.1, 0.4), rng.uniform(0.6, 0.85), noise_abs=0.02)
    va0, va1 = rng.uniform(0.2, 0.45), rng.uniform(0.6, 0.85)
    vacc = [va0 + (va1 - va0) * (1 - math.exp(-i / (0.25 * n_total))) + 0.012 * tdev(rng) for i in range(n_total)]
    rl0 = rng.uniform(0.25, 0.7) * max_resp
    rlen = [min(max_resp * 0.97, rl0 * (1 + rng.uniform(-0.2, 0.3) * math.sin(math.pi * i / n_total)) * (1 + 0.03 * tdev(rng)))
            for i in range(n_total)]
    g = [abs(rng.uniform(0.15, 0.5) * math.exp(0.25 * tdev(rng))) for _ in range(n_total)]
    gbase = median(g)
    g = [x / gbase * rng.uniform(0.15, 0.5) for x in g]
    pg = [0.008 * tdev(rng) for _ in range(n_total)]
    tput0 = rng.uniform(700, 3500)
    tpf = tput_curve(rng, n_total, 1.0, noise=0.05, slow_first=True)
    cpu_mem = mem_curve(rng, n_total, rng.uniform(60, 220), saw=0.02, noise=0.003)
    gpu_mem = [rng.uniform(38, 70)] * n_total
    gpu_mem = [gm * (1 + 0.01 * tdev(rng)) for gm in gpu_mem]
    sat = [False] * n_total
    warn_nan = False
    notes = ["verl %s (%s, %s, %s), console logger (3 decimals), test_freq %d, %d steps%s" % (
        algo.upper(), model, ds, "reward model score" if rm_mode else "rule reward", test_freq, n_total,
        ", resumed at step %d" % resume if resume else "")]
    onset_i = None
    if kind:
        oi = onset_index(rng, steps, 0.3, 0.75)
        onset_i = oi
        o = steps[oi] - 1  # index into the full-length series
        if kind == "kl_spike":
            notes.append(inj_klspike(rng, kl, o))
        elif kind == "kl_runaway":
            notes.append(inj_klrunaway(rng, kl, o) + "; kl_coef stays 0.001")
        elif kind == "entropy_collapse":
            notes.append(inj_entropy(rng, ent, o))
            for i in range(o, n_total):
                rlen[i] *= 0.8
        elif kind == "grad_explosion":
            notes.append(inj_gexplode(rng, g, o))
        elif kind == "memory_leak":
            if rng.random() < 0.7:
                notes.append(inj_leak(rng, cpu_mem, o) + " (perf/cpu_memory_used_gb, host)")
            else:
                notes.append(inj_leak(rng, gpu_mem, o, cap=79.0) + " (perf/max_memory_allocated_gb)")
        elif kind == "throughput_regression":
            notes.append(inj_tput(rng, tpf, o))
        elif kind == "nonfinite":
            warn_nan = rng.random() < 0.5
            for i in range(o, n_total):
                g[i] = NAN
                if not warn_nan:
                    pg[i] = NAN
                    ent[i] = NAN
                    kl[i] = NAN
            notes.append("actor/grad_norm nan from the onset on%s" % (
                " (verl warns 'grad_norm is not finite' and skips the update; losses stay finite)" if warn_nan
                else ", with pg_loss, entropy and kl_loss nan too"))
        elif kind == "reward_saturation":
            K = rng.randint(5, 20)
            for i in range(o, n_total):
                fr = min(1.0, (i - o + 1) / float(K))
                sc[i] = sc[i] * (1 - fr) + fr
                if fr >= 1.0:
                    sat[i] = True
                    sc[i] = 1.0
                g[i] *= 1 - 0.97 * fr
                pg[i] *= 1 - fr
            notes.append("reward saturates: critic/score/mean pinned at 1.000 (min 1.000) within %d steps; advantages and "
                         "pg_loss 0" % K)
        elif kind == "reward_hacking":
            P = rng.uniform(0.22, 0.6)
            K = max(3 * test_freq, int((n_total - o) * rng.uniform(0.4, 0.9)))
            peak = max(vacc[max(0, o - 3 * test_freq):o + 1])
            for i in range(o, n_total):
                fr = min(1.0, (i - o + 1) / float(K))
                vacc[i] = peak * (1 - (1 - P) * fr) + 0.012 * tdev(rng)
                sc[i] += 0.8 * fr * (scd[-1] - scd[0]) * 0.5
                rlen[i] = min(max_resp * 0.97, rlen[i] * (1 + 0.25 * fr))
            notes.append("reward hacking: the RM score keeps climbing while held-out %s falls to %.0f%% of its peak "
                         "over %d steps (evaluated every %d)" % (valkey, 100 * P, K, test_freq))
    L = []
    clock = Clock(rng)
    L.append("%s,%03d\tINFO worker.py:1832 -- Started a local Ray instance. View the dashboard at \x1b[1m\x1b[32mhttp://127.0.0.1:8265 \x1b[39m\x1b[22m" % (
        clock.t.strftime("%Y-%m-%d %H:%M:%S"), rng.randint(0, 999)))
    P = prefix
    L.append(P + "{'actor_rollout_ref': {'actor': {'checkpoint': {'contents': ['model', 'optimizer', 'extra']},")
    L.append(P + "                                 'clip_ratio': 0.2,")
    L.append(P + "                                 'entropy_coeff': 0,")
    L.append(P + "                                 'grad_clip': 1.0,")
    L.append(P + "                                 'kl_loss_coef': 0.001,")
    L.append(P + "                                 'kl_loss_type': 'low_var_kl',")
    L.append(P + "                                 'optim': {'lr': 1e-06,")
    L.append(P + "                                           'lr_warmup_steps_ratio': 0.0},")
    L.append(P + "                                 'ppo_mini_batch_size': %d," % (bsz // 4))
    L.append(P + "                                 'use_kl_loss': %s}," % (algo == "grpo"))
    L.append(P + "                       'model': {'path': '%s'}," % model)
    L.append(P + "                       'rollout': {'n': %d, 'name': 'vllm', 'response_length': %d}}," % (rng.choice([5, 8, 16]), max_resp))
    L.append(P + " 'algorithm': {'adv_estimator': '%s', 'kl_ctrl': {'kl_coef': 0.001, 'type': 'fixed'}}," % ("grpo" if algo == "grpo" else "gae"))
    L.append(P + " 'data': {'train_batch_size': %d, 'max_response_length': %d}," % (bsz, max_resp))
    L.append(P + " 'trainer': {'logger': ['console', 'wandb'], 'n_gpus_per_node': 8, 'nnodes': %d, 'save_freq': %d, "
             "'test_freq': %d, 'total_epochs': 15, 'val_before_train': True}}" % (ngpu // 8, save_freq, test_freq))
    L.append(P + "Using dataset class: RLHFDataset")
    L.append(P + "dataset len: %d" % rng.randint(7000, 12000))
    L.append(P + "Size of train dataloader: %d, Size of val dataloader: 1" % max(1, n_total // 15))
    L.append(P + "Total training steps: %d" % n_total)
    L.append("(WorkerDict pid=%d) INFO %s [model_runner.py:1071] Loading model weights took 14.2487 GB" % (
        rng.randint(10000, 99999), clock.t.strftime("%m-%d %H:%M:%S")))
    L.append("(WorkerDict pid=%d) kwargs: {'n': 1, 'logprobs': 0, 'max_tokens': %d, 'detokenize': False, 'temperature': 1.0, "
             "'top_k': -1, 'top_p': 1, 'ignore_eos': False}" % (rng.randint(10000, 99999), max_resp))
    if resume:
        L.append(P + "Load from checkpoint folder: checkpoints/verl_examples/%s_%s/global_step_%d" % (algo, model.lower(), resume))
        L.append(P + "Setting global step to %d" % resume)
        L.append(P + "Resuming from checkpoints/verl_examples/%s_%s/global_step_%d" % (algo, model.lower(), resume))
    v0 = vacc[max(0, resume - 1)] if resume else va0 + 0.01 * tdev(rng)
    if new_val:
        L.append(P + "(\"Initial validation metrics: {'%s': \"" % valkey)
        L.append(P + " '%r}')" % v0)
    else:
        L.append(P + "(\"Initial validation metrics: {'%s': %r}\")" % (valkey, v0))
    L.append(P + "step:%d - %s:%.3f" % (resume, valkey, v0))
    for s in steps:
        i = s - 1
        resp = rlen[i]
        prompt = rng.uniform(100, 250)
        ntok = (resp + prompt) * bsz * 5
        t_gen = resp * rng.uniform(0.05, 0.09) / tpf[i]
        t_upd = ntok / (tput0 * ngpu) * 0.45 / tpf[i]
        t_old = t_upd * 0.3
        t_ref = t_upd * 0.3
        t_rew = rng.uniform(0.3, 3.0)
        t_adv = rng.uniform(0.05, 0.2)
        t_test = rng.uniform(20, 60) if s % test_freq == 0 else 0.0
        t_save = rng.uniform(30, 90) if save_freq > 0 and s % save_freq == 0 else 0.0
        t_step = t_gen + t_upd + t_old + t_ref + t_rew + t_adv + t_test + t_save
        clock.adv(t_step)
        m = []
        seq_mean = (resp + prompt) * bsz * 5 / ngpu
        m += [("global_seqlen/min", seq_mean * 0.97), ("global_seqlen/max", seq_mean * 1.03),
              ("global_seqlen/minmax_diff", seq_mean * 0.06), ("global_seqlen/balanced_min", seq_mean - 1),
              ("global_seqlen/balanced_max", seq_mean + 1), ("global_seqlen/mean", seq_mean)]
        if algo == "ppo":
            m += [("critic/vf_loss", abs(0.05 + 0.02 * tdev(rng))), ("critic/vf_clipfrac", abs(0.01 * tdev(rng))),
                  ("critic/vpred_mean", sc[i] * 0.9), ("critic/grad_norm", abs(5 + 2 * tdev(rng))), ("perf/mfu/critic", 0.2),
                  ("critic/lr", 1e-5)]
        m += [("actor/entropy", ent[i]), ("actor/pg_loss", pg[i]),
              ("actor/pg_clipfrac", 0.0 if sat[i] else abs(0.003 + 0.001 * tdev(rng))),
              ("actor/ppo_kl", 0.0 if sat[i] else abs(1e-4 * tdev(rng))), ("actor/pg_clipfrac_lower", 0.0)]
        if algo == "grpo":
            m += [("actor/kl_loss", kl[i]), ("actor/kl_coef", 0.001)]
        m += [("actor/grad_norm", g[i]), ("perf/mfu/actor", rng.uniform(0.25, 0.45) * tpf[i]),
              ("perf/max_memory_allocated_gb", gpu_mem[i]), ("perf/max_memory_reserved_gb", max(gpu_mem[i] + 8, 70.0)),
              ("perf/cpu_memory_used_gb", cpu_mem[i]), ("actor/lr", 1e-6)]
        if s % test_freq == 0 or s == n_total:
            m.append((valkey, vacc[i]))
        m += [("training/global_step", s), ("training/epoch", (s - 1) // max(1, n_total // 15))]
        if rm_mode:
            smax, smin = sc[i] + rng.uniform(2, 4), sc[i] - rng.uniform(2, 4)
        else:
            smax, smin = 1.0, (1.0 if sat[i] else 0.0)
        amax = 0.0 if sat[i] else rng.uniform(1.6, 2.5)
        m += [("critic/score/mean", sc[i]), ("critic/score/max", smax), ("critic/score/min", smin),
              ("critic/rewards/mean", sc[i]), ("critic/rewards/max", smax), ("critic/rewards/min", smin),
              ("critic/advantages/mean", 0.0 if sat[i] else 0.002 * tdev(rng)), ("critic/advantages/max", amax),
              ("critic/advantages/min", -amax), ("critic/returns/mean", 0.0 if sat[i] else 0.002 * tdev(rng)),
              ("critic/returns/max", amax), ("critic/returns/min", -amax),
              ("response_length/mean", resp), ("response_length/max", float(max_resp)), ("response_length/min", rng.uniform(20, 120)),
              ("response_length/clip_ratio", max(0.0, min(1.0, (resp / max_resp - 0.5) * 0.3 + 0.01 * tdev(rng)))),
              ("prompt_length/mean", prompt), ("prompt_length/max", 512.0), ("prompt_length/min", 40.0),
              ("prompt_length/clip_ratio", 0.0),
              ("timing_s/gen", t_gen), ("timing_s/reward", t_rew), ("timing_s/old_log_prob", t_old), ("timing_s/ref", t_ref),
              ("timing_s/adv", t_adv), ("timing_s/update_actor", t_upd)]
        if t_test:
            m.append(("timing_s/testing", t_test))
        if t_save:
            m.append(("timing_s/save_checkpoint", t_save))
        m += [("timing_s/step", t_step), ("timing_per_token_ms/gen", t_gen * 1000 / (resp * bsz * 5)),
              ("timing_per_token_ms/ref", t_ref * 1000 / ntok), ("timing_per_token_ms/update_actor", t_upd * 1000 / ntok),
              ("perf/total_num_tokens", int(ntok)), ("perf/time_per_step", t_step), ("perf/throughput", ntok / t_step / ngpu)]
        if warn_nan and not isfin(g[i]):
            for r in range(min(ngpu, 4)):
                L.append("(WorkerDict pid=%d) WARN: rank %d grad_norm is not finite: nan" % (rng.randint(10000, 99999), r))
        if t_save:
            L.append(P + "local_global_step_folder: checkpoints/verl_examples/%s_%s/global_step_%d" % (algo, model.lower(), s))
        L.append(P + "step:%d - " % s + " - ".join("%s:%.3f" % (k, v) for k, v in m))
    onset = steps[onset_i] if onset_i is not None else None
    return Out("\n".join(L) + "\n", "log", onset, resume, steps[-1], "; ".join(notes))

# ========================================================================================
# NeMo (1.x Lightning progress bar with reduced_train_loss=..., or NeMo 2 ProgressPrinter)
# ========================================================================================


def gen_nemo(rng, kind):
    variant = rng.choice(["ptl", "ptl", "nemo2"])
    cr = rng.random() < 0.6
    model = rng.choice(["megatron_gpt_126m", "megatron_gpt_1.3b", "megatron_llama_7b_sft", "megatron_gpt_350m"])
    sft = "sft" in model
    r = rng.choice([1, 1, 5, 10]) if variant == "ptl" else rng.choice([1, 5, 10, 20])
    n = rng.randint(150, 1500 if r == 1 else 900)
    T = n * r
    gbs = rng.choice([256, 512, 128])
    if variant == "ptl":
        steps = [r * (i + 1) for i in range(n)]
    else:
        steps = [r * i for i in range(n)]
    val_every = rng.choice([200, 500, 1000, 2000])
    while T // val_every < 2 and val_every > 100:
        val_every //= 2
    if sft:
        L0, Lf = rng.uniform(1.6, 2.2), rng.uniform(0.9, 1.3)
    else:
        L0, Lf = rng.uniform(10.8, 11.2), rng.uniform(2.3, 3.3)
    noise = rng.uniform(0.02, 0.035) if r == 1 else rng.uniform(0.012, 0.02)
    loss, ldet = loss_curve(rng, [s + 1 for s in steps], T, L0, Lf, noise)
    st0 = rng.uniform(0.4, 3.0)
    tp = tput_curve(rng, n, 1.0 / st0, noise=0.03)
    peak = rng.choice([3e-4, 6e-4, 1e-4, 2e-5 if sft else 1.5e-4])
    lrf = lr_fn("cosine", T, peak, min(2000, T // 10), final=peak * 0.1)
    notes = ["NeMo %s (%s), %s, every %d steps, val every %d steps, global batch %d" % (
        "1.x Lightning progress bar" if variant == "ptl" else "2.0 ProgressPrinter", model,
        ("raw \\r capture" if cr else "one refresh per line") if variant == "ptl" else "log lines", r, val_every, gbs)]
    onset_i = None
    if kind:
        onset_i = onset_index(rng, steps)
        o = onset_i
        if kind == "loss_spike":
            notes.append(inj_spike(rng, loss, o))
        elif kind == "loss_divergence":
            notes.append(inj_divergence(rng, loss, o))
        elif kind == "slow_drift":
            notes.append(inj_drift(rng, loss, ldet, o))
        elif kind == "nonfinite":
            for i in range(o, n):
                loss[i] = NAN
            notes.append("reduced_train_loss is nan from the onset on (Lightning prints it padded as 'nan.0')")
        elif kind == "throughput_regression":
            notes.append(inj_tput(rng, tp, o) + " (train_step_timing in s rises)")
    clock = Clock(rng)
    L = []

    def nemo(level, mod, msg):
        return "[NeMo %s %s %s] %s" % (level, clock.t.strftime("%Y-%m-%d %H:%M:%S"), mod, msg)

    L.append(nemo("W", "nemo_logging:349", "/usr/local/lib/python3.10/dist-packages/megatron/core/tensor_parallel/layers.py:280: "
                  "UserWarning: async_grad_allreduce is deprecated and will be removed in a future release."))
    L.append(nemo("I", "megatron_gpt_pretraining:37", ""))
    L.append("    ")
    L.append("    ************** Experiment configuration ***********")
    L.append(nemo("I", "megatron_gpt_pretraining:38", ""))
    L.append("    name: %s" % model)
    L.append("    trainer:")
    L.append("      devices: 8")
    L.append("      num_nodes: %d" % rng.choice([1, 2, 4]))
    L.append("      precision: bf16")
    L.append("      max_steps: %d" % T)
    L.append("      log_every_n_steps: %d" % r)
    L.append("      val_check_interval: %d" % val_every)
    L.append("    model:")
    L.append("      micro_batch_size: 4")
    L.append("      global_batch_size: %d" % gbs)
    L.append("      optim:")
    L.append("        name: distributed_fused_adam")
    L.append("        lr: %g" % peak)
    L.append("GPU available: True (cuda), used: True")
    L.append("TPU available: False, using: 0 TPU cores")
    L.append("IPU available: False, using: 0 IPUs")
    L.append("HPU available: False, using: 0 HPUs")
    L.append(nemo("I", "exp_manager:396", "Experiments will be logged at /results/%s" % model))
    L.append(nemo("I", "exp_manager:856", "TensorboardLogger has been set up"))
    L.append(nemo("W", "exp_manager:966", "The checkpoint callback was told to monitor a validation value and trainer's max_steps "
                  "was set to %d. Please ensure that max_steps will run for at least 1 epochs to ensure that checkpointing will not error out." % T))
    L.append(nemo("I", "megatron_init:251", "Rank 0 has data parallel group : [0, 1, 2, 3, 4, 5, 6, 7]"))
    L.append(nemo("I", "tokenizer_utils:182", "Getting Megatron tokenizer for pretrained model name: megatron-gpt-345m"))
    L.append("LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]")
    L.append("")
    L.append("  | Name  | Type     | Params")
    L.append("-----------------------------------")
    L.append("0 | model | GPTModel | 1.3 B ")
    L.append("-----------------------------------")
    L.append("1.3 B     Trainable params")
    L.append("0         Non-trainable params")
    L.append("1.3 B     Total params")
    L.append("5,281.936 Total estimated model params size (MB)")
    L.append("Sanity Checking: |          | 0/? [00:00<?, ?it/s]\rSanity Checking DataLoader 0: 100%|██████████| 2/2 [00:03<00:00,  0.62it/s]")
    buf = ""
    val_loss = None
    best = None
    prev = 0 if variant == "ptl" else -1
    for i, s in enumerate(steps):
        t_now = 1.0 / tp[i]
        clock.adv((s - prev) * t_now)
        prev = s
        gstep = s - 1 if variant == "ptl" else s
        cs = float((gstep + 1) * gbs)
        if variant == "ptl":
            pf = [("reduced_train_loss", pl_num(loss[i])), ("global_step", pl_num(float(gstep))),
                  ("consumed_samples", pl_num(cs)), ("train_step_timing in s", pl_num(round(t_now, 4)))]
            if val_loss is not None:
                pf.append(("val_loss", pl_num(val_loss)))
            seg = tqdm_bar(s, T, clock.el(), clock.el() / s, desc="Epoch 0: ", postfix=pf, show_rate=False)
            if cr:
                buf += "\r" + seg
            else:
                L.append(seg)
        else:
            parts = ["Training epoch 0, iteration %d/%d" % (s, T - 1), "lr: %.4g" % lrf(s), "global_batch_size: %d" % gbs,
                     "global_step: %d" % s, "reduced_train_loss: %.4g" % loss[i], "train_step_timing in s: %.4g" % t_now,
                     "consumed_samples: %d" % int(cs)]
            if val_loss is not None:
                parts.append("val_loss: %.4g" % val_loss)
            L.append(" | ".join(parts))
        done = (gstep + 1) if variant == "ptl" else s
        if done % val_every == 0 and done > 0:
            vl = median(loss[max(0, i - 3):i + 1]) * rng.uniform(1.0, 1.04) if isfin(loss[i]) else NAN
            clock.adv(rng.uniform(10, 60))
            vlines = []
            if variant == "ptl":
                vlines.append("Validation: |          | 0/? [00:00<?, ?it/s]\rValidation DataLoader 0: 100%%|██████████| 50/50 [00:%02d<00:00,  %.2fit/s]\x1b[A"
                              % (rng.randint(5, 30), rng.uniform(2, 9)))
            else:
                for vi in range(1, 3):
                    vlines.append("Validation: iteration %d/2" % vi)
            val_loss = vl
            if isfin(vl) and (best is None or vl < best):
                best = vl
                vlines.append("Epoch 0, global step %d: 'val_loss' reached %.5f (best %.5f), saving model to "
                              "'/results/%s/checkpoints/%s--val_loss=%.2f-step=%d-consumed_samples=%.1f.ckpt' as top 3" % (
                                  done, vl, best, model, model, vl, done, cs))
            else:
                vlines.append("Epoch 0, global step %d: 'val_loss' was not in top 3" % done)
            vlines.append(nemo("I", "nemo_model_checkpoint:226", "Checkpoint save for step %d started at %.1f." % (done, 1.7e9 + clock.el())))
            if variant == "ptl" and cr:
                L.append(buf)
                buf = ""
            L.extend(vlines)
    if buf:
        L.append(buf)
    L.append("`Trainer.fit` stopped: `max_steps=%d` reached." % T)
    onset = steps[onset_i] if onset_i is not None else None
    return Out("\n".join(L) + "\n", "log", onset, steps[0], steps[-1], "; ".join(notes))

# ========================================================================================
# MosaicML Composer / llm-foundry ConsoleLogger
# ========================================================================================


def _c4(v):
    if isinstance(v, int):
        return str(v)
    return "%.4f" % v


def gen_composer(rng, kind):
    k = rng.choice([1, 10, 10, 50, 100])
    n = min(rng.randint(150, 1200), 20000 // k)
    T = n * k
    steps = [k * (i + 1) for i in range(n)]
    moe = kind is None and rng.random() < 0.3
    model = rng.choice(["mpt-125m", "mpt-350m", "mpt-1b", "mpt-760m"]) if not moe else rng.choice(["mpt-moe-8x125m", "mpt-moe-8x350m"])
    gbs = rng.choice([256, 512, 64])
    seq = rng.choice([2048, 1024])
    ngpu = 8
    L0, Lf = rng.uniform(11.3, 12.0), rng.uniform(2.3, 3.3)
    noise = rng.uniform(0.02, 0.04) if k == 1 else rng.uniform(0.015, 0.03)
    loss, ldet = loss_curve(rng, steps, T, L0, Lf, noise)
    g = gnorm_curve(rng, steps, T, rng.uniform(2, 10), rng.uniform(0.15, 0.6), noise=rng.uniform(0.12, 0.25))
    st0 = rng.uniform(0.3, 2.5)
    tp = tput_curve(rng, n, 1.0 / st0, noise=0.03)
    memb = rng.uniform(8, 40)
    mem = mem_curve(rng, n, memb, saw=0.01, noise=0.001)
    peak = rng.choice([6e-4, 3e-4, 2e-4, 1e-3])
    lrf = lr_fn("cosine", T, peak, max(1, int(T * 0.01)), final=peak * 0.1)
    lbl = [0.01 * (1 + 0.5 * math.exp(-i / (0.05 * n))) * (1 + 0.03 * tdev(rng)) for i in range(n)]
    eval_every = rng.choice([500, 1000, 2000])
    while T // eval_every < 2 and eval_every > 100:
        eval_every //= 2
    window = 10
    notes = ["Composer/llm-foundry %s, console_log_interval %dba, max_duration %dba, global batch %d x %d tokens%s" % (
        model, k, T, gbs, seq, ", MegaBlocks dMoE (only the load-balancing loss lbl is logged)" if moe else "")]
    onset_i = None
    if kind:
        onset_i = onset_index(rng, steps)
        o = onset_i
        if kind == "loss_spike":
            notes.append(inj_spike(rng, loss, o))
            g[o] *= rng.uniform(1.5, 2.0)
        elif kind == "loss_divergence":
            notes.append(inj_divergence(rng, loss, o))
            for i in range(o, n):
                g[i] *= (loss[i] / ldet[i]) ** 0.8
        elif kind == "slow_drift":
            notes.append(inj_drift(rng, loss, ldet, o))
        elif kind == "nonfinite":
            for i in range(o, n):
                loss[i] = NAN
                g[i] = NAN
            notes.append("loss/train/total (and the grad norm) nan from the onset on")
        elif kind == "grad_explosion":
            notes.append(inj_gexplode(rng, g, o, loss))
        elif kind == "grad_vanishing":
            notes.append(inj_gvanish(rng, g, o, loss, ldet))
        elif kind == "memory_leak":
            notes.append(inj_leak(rng, mem, o, cap=79.0) + " (memory/current_allocated_mem, GB)")
        elif kind == "throughput_regression":
            notes.append(inj_tput(rng, tp, o))
    clock = Clock(rng)
    L = []

    def pylog(mod, msg, level="INFO"):
        return "%s: rank0[%d][MainThread]: %s: %s: %s" % (clock.t.strftime("%Y-%m-%d %H:%M:%S,") + "%03d" % rng.randint(0, 999),
                                                          pid, level, mod, msg)
    pid = rng.randint(1000, 60000)
    L.append(pylog("llmfoundry.command_utils.train", "Building tokenizer..."))
    L.append(pylog("llmfoundry.command_utils.train", "Building train loader..."))
    L.append(pylog("llmfoundry.command_utils.train", "Building eval loader..."))
    L.append(pylog("llmfoundry.command_utils.train", "Initializing model..."))
    L.append(pylog("llmfoundry.command_utils.train", "cfg.n_params=%.2e" % rng.uniform(1.2e8, 1.3e9)))
    L.append(pylog("llmfoundry.command_utils.train", "Building trainer..."))
    L.append(pylog("composer.utils.reproducibility", "Setting seed to %d" % rng.randint(1, 99999)))
    L.append("******************************")
    L.append("Config:")
    L.append("enabled_algorithms/GradientClipping: true")
    L.append("node_name: unknown because NODENAME environment variable not set")
    L.append("num_gpus_per_node: %d" % ngpu)
    L.append("num_nodes: 1")
    L.append("rank_zero_seed: %d" % rng.randint(1, 99999))
    L.append("******************************")
    L.append(pylog("llmfoundry.command_utils.train", "Starting training..."))
    cum = 0.0
    times = []
    mbs = rng.choice([4, 8, 16])
    res0 = memb * 1.95 + 2.0
    for i, s in enumerate(steps):
        st = 1.0 / tp[i]
        clock.adv(k * st)
        cum += k * st
        times.append(st)
        d = [("time/batch", s - 1), ("time/sample", (s - 1) * gbs), ("time/batch_in_epoch", s - 1),
             ("time/sample_in_epoch", (s - 1) * gbs), ("time/token", (s - 1) * gbs * seq), ("time/token_in_epoch", (s - 1) * gbs * seq),
             ("memory/current_allocated_mem", mem[i]), ("memory/current_active_mem", mem[i]),
             ("memory/current_inactive_mem", mem[i] * 0.03), ("memory/current_reserved_mem", max(mem[i] * 1.95 + 2.0, res0)),
             ("memory/peak_allocated_mem", mem[i] * 1.9), ("memory/peak_active_mem", mem[i] * 1.95),
             ("memory/peak_inactive_mem", mem[i] * 0.4), ("memory/peak_reserved_mem", max(mem[i] * 1.95 + 2.0, res0)),
             ("memory/alloc_retries", 0), ("trainer/device_train_microbatch_size", mbs),
             ("loss/train/total", loss[i])]
        if moe:
            d += [("loss/train/loss", loss[i] - lbl[i]), ("loss/train/lbl", lbl[i])]
        ce = loss[i] - (lbl[i] if moe else 0.0)
        ppl = math.exp(ce) if isfin(ce) and ce < 700 else (INF if isfin(ce) else NAN)
        d += [("metrics/train/LanguageCrossEntropy", ce), ("metrics/train/LanguagePerplexity", ppl),
              ("l2_norm/grad/global", g[i])]
        if i * k >= window:
            w = times[-max(1, window // k):]
            bps = 1.0 / (sum(w) / len(w))
            d += [("throughput/batches_per_sec", bps), ("throughput/samples_per_sec", bps * gbs),
                  ("throughput/device/batches_per_sec", bps / ngpu), ("throughput/device/samples_per_sec", bps * gbs / ngpu),
                  ("throughput/tokens_per_sec", bps * gbs * seq), ("throughput/device/tokens_per_sec", bps * gbs * seq / ngpu),
                  ("throughput/flops_per_sec", bps * gbs * seq * 6 * 3.5e8), ("throughput/device/flops_per_sec", bps * gbs * seq * 6 * 3.5e8 / ngpu),
                  ("throughput/device/mfu", bps * gbs * seq * 6 * 3.5e8 / ngpu / 312e12)]
        d += [("time/train", cum / 3600.0), ("time/val", 0.0), ("time/total", cum / 3600.0),
              ("lr-DecoupledAdamW/group0", lrf(s)), ("time/remaining_estimate", (T - s) * st / 3600.0)]
        L.append("[batch=%d/%d]:" % (s, T) + "".join("\n\t Train %s: %s" % (kk, _c4(v)) for kk, v in d))
        if s % eval_every == 0:
            neval = rng.choice([20, 50, 100])
            for b in sorted(set(int(round(1 + (neval - 1) * q / 10.0)) for q in range(10))):
                if b < neval:
                    L.append("[Eval batch=%d/%d] Eval on eval data" % (b, neval))
            clock.adv(neval * st * 0.3)
            vce = ldet[i] * rng.uniform(1.0, 1.03) if isfin(loss[i]) else NAN
            L.append("[Eval batch=%d/%d] Eval on eval data:\n\t Eval metrics/eval/LanguageCrossEntropy: %s\n\t "
                     "Eval metrics/eval/LanguagePerplexity: %s" % (neval, neval, _c4(vce), _c4(math.exp(vce) if isfin(vce) else NAN)))
            L.append(pylog("composer.callbacks.checkpoint_saver", "Saving checkpoint to ./checkpoints/ep0-ba%d-rank0.pt" % s))
    L.append(pylog("llmfoundry.command_utils.train", "Done."))
    onset = steps[onset_i] if onset_i is not None else None
    return Out("\n".join(L) + "\n", "log", onset, steps[0], steps[-1], "; ".join(notes))

# ========================================================================================
# DeepSpeed engine logs + the training script's own print
# ========================================================================================


def gen_deepspeed(rng, kind):
    moe = kind == "expert_collapse" or (kind is None and rng.random() < 0.3)
    fp16 = (not moe) and kind != "nonfinite" and rng.random() < 0.5
    k = rng.choice([10, 10, 20, 50, 100])
    n = min(rng.randint(150, 1000), 20000 // k)
    T = n * k
    steps = [k * (i + 1) for i in range(n)]
    task = rng.choice(["gpt2-medium", "bert-large-mlm", "llama-1b"]) if not moe else rng.choice(["gpt-moe-350m-8e", "gpt-moe-1.3b-16e"])
    E = (8 if "8e" in task else 16) if moe else 0
    nl = rng.choice([2, 4, 6]) if moe else 0
    if task.startswith("bert"):
        L0, Lf = rng.uniform(10.2, 10.6), rng.uniform(1.7, 2.3)
    else:
        L0, Lf = rng.uniform(10.6, 11.1), rng.uniform(2.5, 3.5)
    noise = rng.uniform(0.02, 0.04)
    loss, ldet = loss_curve(rng, steps, T, L0, Lf, noise)
    bs = rng.choice([64, 128, 256, 512])
    sps0 = rng.uniform(40, 600)
    tp = tput_curve(rng, n, sps0, noise=0.035)
    memb = rng.uniform(4, 30)
    mem = mem_curve(rng, n, memb, saw=0.04, noise=0.002)
    peak = rng.choice([1e-4, 3e-4, 6e-5, 1.5e-4])
    lrf = lr_fn(rng.choice(["cosine", "linear"]), T, peak, min(2000, T // 10))
    eff = [min(0.97, 0.68 + 0.28 * (1 - math.exp(-(i + 1) / (0.02 * n))) + 0.02 * tdev(rng)) for i in range(n)] if moe else []
    notes = ["DeepSpeed %s (%s), steps_per_print %d, %s%s" % (
        "ZeRO-2" if rng.random() < 0.5 else "ZeRO-3", task, k, "fp16 dynamic loss scale" if fp16 else "bf16",
        ", %d MoE layers x %d experts with per-expert exp_counts printed" % (nl, E) if moe else "")]
    onset_i = None
    if kind:
        onset_i = onset_index(rng, steps)
        o = onset_i
        if kind == "loss_spike":
            notes.append(inj_spike(rng, loss, o))
        elif kind == "loss_divergence":
            notes.append(inj_divergence(rng, loss, o))
        elif kind == "slow_drift":
            notes.append(inj_drift(rng, loss, ldet, o))
        elif kind == "nonfinite":
            for i in range(o, n):
                loss[i] = NAN
            notes.append("bf16 loss nan from the onset on, persisting")
        elif kind == "memory_leak":
            notes.append(inj_leak(rng, mem, o, cap=79.0) + " (MemAllocated)")
        elif kind == "throughput_regression":
            notes.append(inj_tput(rng, tp, o))
        elif kind == "expert_collapse":
            f = rng.uniform(0.12, 0.4)
            K = rng.randint(5, 30)
            layers = sorted(rng.sample(range(nl), rng.randint(1, nl)))
            for i in range(o, n):
                fr = min(1.0, (i - o + 1) / float(K))
                eff[i] = eff[i] * (1 - fr) + f * fr
                loss[i] *= 1.0 + 0.05 * fr
            notes.append("router collapse in layer(s) %s: token counts concentrate on %.0f%% of the %d experts within %d "
                         "logged steps" % (",".join(map(str, layers)), 100 * f, E, K))
    clock = Clock(rng)
    L = []

    def ds(src, msg, level="INFO"):
        return "[%s] [%s] [%s] %s" % (clock.t.strftime("%Y-%m-%d %H:%M:%S,") + "%03d" % rng.randint(0, 999), level, src, msg)

    L.append(ds("real_accelerator.py:191:get_accelerator", "Setting ds_accelerator to cuda (auto detect)"))
    L.append(ds("comm.py:637:init_distributed", "cdb=None"))
    L.append(ds("comm.py:668:init_distributed", "Initializing TorchBackend in DeepSpeed with backend nccl"))
    L.append(ds("logging.py:96:log_dist", "[Rank 0] DeepSpeed info: version=0.%d.%d, git-hash=unknown, git-branch=unknown" % (
        rng.randint(10, 14), rng.randint(0, 5))))
    L.append(ds("logging.py:96:log_dist", "[Rank 0] Creating %s optimizer" % ("fp16 ZeRO stage 2" if fp16 else "BF16")))
    L.append(ds("config.py:988:print", "DeepSpeedEngine configuration:"))
    L.append(ds("config.py:992:print", "  activation_checkpointing_config  {"))
    L.append('    "partition_activations": false, ')
    L.append('    "contiguous_memory_optimization": false, ')
    L.append('    "cpu_checkpointing": false')
    L.append("}")
    L.append(ds("config.py:992:print", "  bfloat16_enabled ............. %s" % (not fp16)))
    L.append(ds("config.py:992:print", "  fp16_enabled ................. %s" % fp16))
    L.append(ds("config.py:992:print", "  gradient_clipping ............ 1.0"))
    L.append(ds("config.py:992:print", "  steps_per_print .............. %d" % k))
    L.append(ds("config.py:992:print", "  train_batch_size ............. %d" % bs))
    L.append(ds("config.py:992:print", "  wall_clock_breakdown ......... False"))
    L.append(ds("config.py:978:print_user_config", '  json = {'))
    L.append('    "train_batch_size": %d, ' % bs)
    L.append('    "steps_per_print": %d, ' % k)
    L.append('    "%s": {' % ("fp16" if fp16 else "bf16"))
    L.append('        "enabled": true%s' % (', \n        "initial_scale_power": 16' if fp16 else ""))
    L.append("    }")
    L.append("}")
    scale = 65536.0
    skipped = 0
    scale_eq = 2.0 ** rng.randint(11, 15)
    ds_rate = rng.uniform(500, 2000)
    last_resc = 0
    if fp16:
        while scale > scale_eq:
            L.append(ds("loss_scaler.py:183:update_scale", "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: %d, "
                        "reducing to %d" % (scale, scale / 2)))
            scale /= 2
            skipped += 1
    run_avg = None
    maxmem = 0.0
    ga = rng.choice([1, 2, 4, 8])
    for i, s in enumerate(steps):
        sps = tp[i]
        it_t = bs / sps
        clock.adv(k * it_t)
        if fp16:
            if s - last_resc >= 1000:
                scale *= 2
                last_resc = s
            if rng.random() < min(0.9, k / ds_rate * (scale / scale_eq) ** 2):
                L.append(ds("loss_scaler.py:183:update_scale", "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: %d, "
                            "reducing to %d" % (scale, scale / 2)))
                scale /= 2
                skipped += 1
                last_resc = s
        run_avg = sps if run_avg is None else (run_avg * i + sps) / (i + 1)
        maxmem = max(maxmem, mem[i] * 1.7)
        lr = lrf(s)
        L.append(ds("logging.py:96:log_dist", "[Rank 0] step=%d, skipped=%d, lr=[%r], mom=[(0.9, 0.95)]" % (s, skipped, lr)))
        L.append(ds("timer.py:260:stop", "epoch=0/micro_step=%d/global_step=%d, RunningAvgSamplesPerSec=%r, CurrSamplesPerSec=%r, "
                    "MemAllocated=%.2fGB, MaxMemAllocated=%.2fGB" % (s * ga, s, run_avg, sps * (1 + 0.02 * tdev(rng)), mem[i], maxmem)))
        L.append("steps: %d loss: %.4f iter time (s): %.3f samples/sec: %.3f" % (s, loss[i], it_t, sps))
        if moe:
            for l in range(nl):
                tok = bs * 512 // 8
                ef = eff[i] if (kind != "expert_collapse" or l in layers) else min(0.97, 0.9 + 0.02 * tdev(rng))
                act = max(1, int(round(ef * E)))
                weights = [max(0.05, 1.0 + 0.15 * tdev(rng)) if e < act else (0.02 * rng.random() if ef < 0.6 else
                           max(0.05, 0.6 + 0.1 * tdev(rng))) for e in range(E)]
                perm = list(range(E))
                rng.shuffle(perm) if i == 0 else None
                tw = sum(weights)
                counts = [int(tok * w / tw) for w in weights]
                laux = sum((c / float(tok)) ** 2 for c in counts) * E
                L.append("moe layer %d: exp_counts=%s, l_aux=%.4f" % (l, "[" + ", ".join(str(c) for c in counts) + "]", laux))
        if s % (k * 50) == 0 and s < T:
            L.append(ds("logging.py:96:log_dist", "[Rank 0] Saving model checkpoint: /checkpoints/global_step%d/mp_rank_00_model_states.pt" % s))
            L.append(ds("torch_checkpoint_engine.py:21:save", "[Torch] Saving /checkpoints/global_step%d/mp_rank_00_model_states.pt..." % s))
            clock.adv(rng.uniform(10, 40))
    onset = steps[onset_i] if onset_i is not None else None
    return Out("\n".join(L) + "\n", "log", onset, steps[0], steps[-1], "; ".join(notes))

# ========================================================================================
# RLlib result dicts (Ray Tune "Result for ..." or pretty_print(algo.train()))
# ========================================================================================


def yaml_dump(d, indent=0):
    out = []
    pad = " " * indent
    for k in sorted(d):
        v = d[k]
        if isinstance(v, dict):
            if not v:
                out.append("%s%s: {}" % (pad, k))
            else:
                out.append("%s%s:" % (pad, k))
                out.extend(yaml_dump(v, indent + 2))
        elif isinstance(v, list):
            if not v:
                out.append("%s%s: []" % (pad, k))
            else:
                out.append("%s%s:" % (pad, k))
                for x in v:
                    out.append("%s- %s" % (pad, yaml_float(x) if not isinstance(x, str) else x))
        elif isinstance(v, str):
            out.append("%s%s: %s" % (pad, k, v))
        else:
            out.append("%s%s: %s" % (pad, k, yaml_float(v)))
    return out


def gen_rllib(rng, kind):
    variant = rng.choice(["tune", "pretty"])
    if kind == "reward_saturation":
        env = "CartPole-v1"
    elif kind == "entropy_collapse":
        env = rng.choice(["CartPole-v1", "LunarLander-v2", "BreakoutNoFrameskip-v4"])
    elif kind is None:
        env = rng.choice(["CartPole-v1", "LunarLander-v2", "Pendulum-v1", "HalfCheetah-v4", "BreakoutNoFrameskip-v4"])
    else:
        env = rng.choice(["LunarLander-v2", "Pendulum-v1", "HalfCheetah-v4", "BreakoutNoFrameskip-v4", "CartPole-v1"])
    n = rng.randint(150, 420)
    its = list(range(1, n + 1))
    spec = {
        "CartPole-v1": dict(r0=rng.uniform(18, 25), r1=rng.uniform(200, 430), rmax=500.0, e0=0.693, e1=rng.uniform(0.5, 0.6),
                            spi=4000, disc=True, lenf=lambda r: r),
        "LunarLander-v2": dict(r0=rng.uniform(-250, -150), r1=rng.uniform(140, 230), rmax=None, e0=1.386, e1=rng.uniform(0.85, 1.05),
                               spi=4000, disc=True, lenf=lambda r: 120 + 0.9 * max(0.0, r + 150)),
        "Pendulum-v1": dict(r0=rng.uniform(-1350, -1150), r1=rng.uniform(-320, -180), rmax=None, e0=1.42, e1=rng.uniform(0.2, 0.6),
                            spi=4000, disc=False, lenf=lambda r: 200.0),
        "HalfCheetah-v4": dict(r0=rng.uniform(-400, -200), r1=rng.uniform(1500, 4000), rmax=None, e0=8.5, e1=rng.uniform(2.5, 4.5),
                               spi=16000, disc=False, lenf=lambda r: 1000.0),
        "BreakoutNoFrameskip-v4": dict(r0=rng.uniform(1.0, 2.0), r1=rng.uniform(30, 90), rmax=None, e0=1.386, e1=rng.uniform(0.9, 1.2),
                                       spi=5000, disc=True, lenf=lambda r: 180 + 12 * r),
    }[env]
    rew, rdet = rise_curve(rng, n, spec["r0"], spec["r1"], tau=rng.uniform(0.15, 0.35) * n)
    spread = [abs(spec["r1"] - spec["r0"]) * 0.08 for _ in range(n)]
    for i in range(n):
        rew[i] += spread[i] * 0.25 * tdev(rng)
    if spec["rmax"]:
        rew = [min(spec["rmax"] * 0.93, r) for r in rew]
    ent = [spec["e0"] + (spec["e1"] - spec["e0"]) * (1 - math.exp(-i / (0.3 * n))) + 0.01 * spec["e0"] * tdev(rng) for i in range(n)]
    kl_target = rng.choice([0.01, 0.01, 0.02, 0.03])
    kl = [kl_target * rng.uniform(0.6, 1.4) * math.exp(0.2 * tdev(rng)) for _ in range(n)]
    g = [rng.uniform(0.6, 3.0) * math.exp(0.3 * tdev(rng)) for _ in range(n)]
    thr0 = rng.uniform(400, 5000)
    tp = tput_curve(rng, n, thr0, noise=0.04)
    ram = mem_curve(rng, n, rng.uniform(18, 45), saw=0.02, noise=0.003)
    node_gib = rng.choice([62.8, 125.6, 30.9, 251.4])
    notes = ["RLlib PPO on %s (%s), one result per training_iteration" % (
        env, "Ray Tune verbose output 'Result for ...' with status tables" if variant == "tune" else "pretty_print(algo.train()) loop")]
    onset_i = onset_index(rng, its, 0.3, 0.75) if kind else None
    o = onset_i
    crash_at = None
    if kind == "kl_spike":
        notes.append(inj_klspike(rng, kl, o))
    elif kind == "kl_runaway":
        notes.append(inj_klrunaway(rng, kl, o) + " (kl_coeff fixed: kl_target set far above, so cur_kl_coeff stays flat)")
        for i in range(o, n):
            ent[i] *= 1 - 0.25 * min(1.0, (i - o) / 30.0)
    elif kind == "entropy_collapse":
        notes.append(inj_entropy(rng, ent, o))
        for i in range(o, n):
            rew[i] = rew[o] + (rew[i] - rew[o]) * 0.1
    elif kind == "reward_saturation":
        K = rng.randint(3, 12)
        for i in range(o, n):
            fr = min(1.0, (i - o + 1) / float(K))
            rew[i] = rew[i] * (1 - fr) + 500.0 * fr
            spread[i] *= (1 - fr)
        notes.append("CartPole solved and pinned: episode_reward_mean/min/max all 500.0 within %d iterations" % K)
    elif kind == "slow_drift":
        P = rng.uniform(0.25, 0.6)
        gain = rdet[o] - spec["r0"]
        for i in range(o, n):
            t = (i - o) / float(max(1, n - 1 - o))
            rew[i] = (rew[i] - rdet[i]) + rdet[o] - P * gain * t
        notes.append("reward slides: episode_reward_mean loses %.0f%% of its gain by the end, linearly" % (100 * P))
    elif kind == "grad_explosion":
        notes.append(inj_gexplode(rng, g, o))
    elif kind == "memory_leak":
        notes.append(inj_leak(rng, ram, o, cap=92.0) + " (perf/ram_util_percent; Tune's 'Memory usage on this node')")
    elif kind == "throughput_regression":
        notes.append(inj_tput(rng, tp, o))
    elif kind == "nonfinite":
        crash_at = min(n - 1, o + rng.randint(1, 3))
        notes.append("learner stats (total_loss, policy_loss, kl, entropy, grad_gnorm) .nan from the onset iteration; "
                     "%d iteration(s) later sampling fails on NaN logits and the trial errors" % (crash_at - o))
    clock = Clock(rng)
    trial = "%05x_00000" % rng.getrandbits(20)
    tname = "PPO_%s_%s" % (env, trial)
    host = rng.choice(["ip-10-0-0-12", "node-1", "rl-box"])
    ip = "10.0.%d.%d" % (rng.randint(0, 9), rng.randint(2, 250))
    pid = rng.randint(1000, 60000)
    L = []
    if variant == "tune":
        L.append("%s,%03d\tINFO worker.py:1625 -- Started a local Ray instance." % (clock.t.strftime("%Y-%m-%d %H:%M:%S"), rng.randint(0, 999)))
        L.append("== Status ==")
        L.append("Current time: %s (running for 00:00:00.12)" % clock.t.strftime("%Y-%m-%d %H:%M:%S"))
        L.append("Memory usage on this node: %.1f/%.1f GiB " % (ram[0] * node_gib / 100, node_gib))
        L.append("Using FIFO scheduling algorithm.")
        L.append("Resources requested: 3.0/16 CPUs, 0/1 GPUs, 0.0/35.2 GiB heap, 0.0/17.6 GiB objects")
        L.append("Result logdir: /home/ray/ray_results/PPO")
        L.append("Number of trials: 1/1 (1 PENDING)")
        L.append("")
    else:
        L.append("%s,%03d\tWARNING deprecation.py:50 -- DeprecationWarning: `build` has been deprecated. Use "
                 "`AlgorithmConfig.build_algo` instead. This will raise an error in the future!" % (
                     clock.t.strftime("%Y-%m-%d %H:%M:%S"), rng.randint(0, 999)))
        L.append("(RolloutWorker pid=%d) %s,%03d\tWARNING env.py:162 -- Your env doesn't have a .spec.max_episode_steps attribute." % (
            pid + 7, clock.t.strftime("%Y-%m-%d %H:%M:%S"), rng.randint(0, 999)))
    coeff = 0.2
    tot_steps = 0
    eps_total = 0
    t_total = 0.0
    grad_updates = 0.0
    for i in range(n):
        it = i + 1
        spi = spec["spi"]
        tt = spi / tp[i]
        clock.adv(tt)
        t_total += tt
        tot_steps += spi
        mean = rew[i]
        elen = max(1.0, spec["lenf"](mean)) if env != "CartPole-v1" else max(9.0, mean)
        eps = max(1, int(spi / elen))
        eps_total += eps
        sp = spread[i]
        rmax = mean + 2.2 * sp + abs(0.3 * sp * tdev(rng))
        rmin = mean - 2.2 * sp - abs(0.3 * sp * tdev(rng))
        if spec["rmax"]:
            rmax = min(spec["rmax"], rmax)
            if sp < 1e-9:
                rmax = rmin = mean = 500.0
                elen = 500.0
        nanstats = kind == "nonfinite" and i >= o
        if nanstats:
            pol = vf = tot = klv = en = gg = NAN
        else:
            pol = -0.01 + 0.012 * tdev(rng)
            vf = min(10.0, abs(0.4 * math.sqrt(abs(mean) + 1) * (1 + 0.3 * tdev(rng))))
            klv = kl[i]
            en = ent[i]
            gg = g[i]
            tot = pol + coeff * klv + vf
        hist = [round(mean + sp * tdev(rng), 1) if sp > 0 else mean for _ in range(min(eps, 100 if spi < 16000 else 16))]
        if spec["rmax"]:
            hist = [min(spec["rmax"], max(9.0, h)) for h in hist]
        stats = {"allreduce_latency": 0.0, "cur_kl_coeff": f32(coeff), "cur_lr": f32(5e-5), "entropy": en if nanstats else f32(en),
                 "entropy_coeff": 0.0, "grad_gnorm": gg if nanstats else f32(gg), "kl": klv if nanstats else f32(klv),
                 "policy_loss": pol if nanstats else f32(pol), "total_loss": tot if nanstats else f32(tot),
                 "vf_explained_var": f32(NAN if nanstats else min(0.98, 0.9 * (1 - math.exp(-i / (0.2 * n))) + 0.03 * tdev(rng))),
                 "vf_loss": vf if nanstats else f32(vf)}
        grad_updates += 30 * (spi / 4000.0)
        sampler = {"custom_metrics": {}, "episode_len_mean": elen, "episode_media": {}, "episode_reward_max": rmax,
                   "episode_reward_mean": mean, "episode_reward_min": rmin, "episodes_this_iter": eps,
                   "hist_stats": {"episode_lengths": [int(elen) for _ in hist], "episode_reward": hist},
                   "num_faulty_episodes": 0, "policy_reward_max": {}, "policy_reward_mean": {}, "policy_reward_min": {},
                   "sampler_perf": {"mean_action_processing_ms": round(0.05 + 0.01 * rng.random(), 6),
                                    "mean_env_render_ms": 0.0, "mean_env_wait_ms": round(0.04 + 0.02 * rng.random(), 6),
                                    "mean_inference_ms": round(0.5 + 0.1 * rng.random(), 6),
                                    "mean_raw_obs_processing_ms": round(0.12 + 0.02 * rng.random(), 6)}}
        res = {"agent_timesteps_total": tot_steps,
               "connector_metrics": {"ObsPreprocessorConnector_ms": round(0.0035 + 0.001 * rng.random(), 6),
                                     "StateBufferConnector_ms": round(0.003 + 0.001 * rng.random(), 6),
                                     "ViewRequirementAgentConnector_ms": round(0.08 + 0.01 * rng.random(), 6)},
               "counters": {"num_agent_steps_sampled": tot_steps, "num_agent_steps_trained": tot_steps,
                            "num_env_steps_sampled": tot_steps, "num_env_steps_trained": tot_steps},
               "custom_metrics": {}, "date": clock.t.strftime("%Y-%m-%d_%H-%M-%S"), "done": False,
               "episode_len_mean": elen, "episode_media": {}, "episode_reward_max": rmax, "episode_reward_mean": mean,
               "episode_reward_min": rmin, "episodes_this_iter": eps, "episodes_total": eps_total, "hostname": host,
               "info": {"learner": {"default_policy": {"custom_metrics": {}, "diff_num_grad_updates_vs_sampler_policy": 464.5,
                                                       "learner_stats": stats, "model": {}, "num_agent_steps_trained": 128.0,
                                                       "num_grad_updates_lifetime": grad_updates}},
                        "num_agent_steps_sampled": tot_steps, "num_agent_steps_trained": tot_steps,
                        "num_env_steps_sampled": tot_steps, "num_env_steps_trained": tot_steps},
               "iterations_since_restore": it, "node_ip": ip, "num_agent_steps_sampled": tot_steps,
               "num_agent_steps_trained": tot_steps, "num_env_steps_sampled": tot_steps,
               "num_env_steps_sampled_this_iter": spi, "num_env_steps_sampled_throughput_per_sec": tp[i],
               "num_env_steps_trained": tot_steps, "num_env_steps_trained_this_iter": spi,
               "num_env_steps_trained_throughput_per_sec": tp[i] * rng.uniform(0.98, 1.02), "num_faulty_episodes": 0,
               "num_healthy_workers": 2, "num_in_flight_async_reqs": 0, "num_remote_worker_restarts": 0,
               "num_steps_trained_this_iter": spi,
               "perf": {"cpu_util_percent": round(20 + 10 * rng.random(), 12), "ram_util_percent": round(ram[i], 12)},
               "pid": pid, "policy_reward_max": {}, "policy_reward_mean": {}, "policy_reward_min": {},
               "sampler_perf": sampler["sampler_perf"], "sampler_results": sampler,
               "time_since_restore": t_total, "time_this_iter_s": tt, "time_total_s": t_total,
               "timers": {"learn_throughput": round(spi / (tt * 0.45), 3), "learn_time_ms": round(tt * 450, 3),
                          "synch_weights_time_ms": round(2 + rng.random(), 3), "training_iteration_time_ms": round(tt * 1000, 3)},
               "timestamp": int((clock.t - datetime(1970, 1, 1)).total_seconds()), "timesteps_total": tot_steps,
               "training_iteration": it, "trial_id": trial, "warmup_time": 5.123}
        body = yaml_dump(res)
        if kind != "kl_runaway" and isfin(klv):
            if klv > 2.0 * kl_target:
                coeff *= 1.5
            elif klv < 0.5 * kl_target:
                coeff *= 0.5
        if variant == "tune":
            L.append("Result for %s:" % tname)
            L.extend("  " + b for b in body)
            L.append("  ")
            if rng.random() < 0.5 or it == 1:
                L.append("== Status ==")
                L.append("Current time: %s (running for %s)" % (clock.t.strftime("%Y-%m-%d %H:%M:%S"), eta_str(t_total) + ".%02d" % rng.randint(0, 99)))
                L.append("Memory usage on this node: %.1f/%.1f GiB " % (ram[i] * node_gib / 100, node_gib))
                L.append("Using FIFO scheduling algorithm.")
                L.append("Resources requested: 3.0/16 CPUs, 0/1 GPUs, 0.0/35.2 GiB heap, 0.0/17.6 GiB objects")
                L.append("Result logdir: /home/ray/ray_results/PPO")
                L.append("Number of trials: 1/1 (1 RUNNING)")
                L.append("+%s+" % "+".join("-" * w for w in (29, 10, 16, 8, 18, 8, 10)))
                L.append("| %-27s | status   | loc            |   iter |   total time (s) |     ts |   reward |" % "Trial name")
                L.append("|%s|" % "+".join("-" * w for w in (29, 10, 16, 8, 18, 8, 10)))
                L.append("| %-27s | RUNNING  | %-14s | %6d | %16.2f | %6d | %8.3g |" % (
                    tname[:27], "%s:%d" % (ip, pid), it, t_total, tot_steps % 1000000, mean))
                L.append("+%s+" % "+".join("-" * w for w in (29, 10, 16, 8, 18, 8, 10)))
                L.append("")
                L.append("")
        else:
            L.extend(body)
            if it % 50 == 0:
                L.append("Checkpoint saved in directory /tmp/ppo/checkpoint_%06d" % it)
        if crash_at is not None and i >= crash_at:
            err = ["Traceback (most recent call last):",
                   '  File "/home/ray/anaconda3/lib/python3.9/site-packages/ray/rllib/evaluation/rollout_worker.py", line 696, in sample',
                   "    batches = [self.input_reader.next()]",
                   '  File "/home/ray/anaconda3/lib/python3.9/site-packages/torch/distributions/distribution.py", line 62, in __init__',
                   "    raise ValueError(",
                   "ValueError: Expected parameter logits (Tensor of shape (200, %d)) of distribution Categorical(logits: "
                   "torch.Size([200, %d])) to satisfy the constraint IndependentConstraint(Real(), 1), but found invalid values:" % (2, 2),
                   "tensor([[nan, nan],", "        [nan, nan],", "        [nan, nan]], grad_fn=<SubBackward0>)"]
            if variant == "tune":
                L.append("%s,%03d\tERROR trial_runner.py:1450 -- Trial %s: Error processing event." % (
                    clock.t.strftime("%Y-%m-%d %H:%M:%S"), rng.randint(0, 999), tname))
                L.append("ray.exceptions.RayTaskError(ValueError): \x1b[36mray::PPO.train()\x1b[39m (pid=%d, ip=%s, repr=PPO)" % (pid, ip))
                L.extend(err)
                L.append("Result for %s:" % tname)
                L.append("  trial_id: %s" % trial)
                L.append("== Status ==")
                L.append("Number of trials: 1/1 (1 ERROR)")
                L.append("Number of errored trials: 1")
            else:
                L.extend(err)
            return Out("\n".join(L) + "\n", "log", its[o], 1, it, "; ".join(notes))
    if variant == "tune":
        L.append("%s,%03d\tINFO tune.py:945 -- Total run time: %.2f seconds (%.2f seconds for the tuning loop)." % (
            clock.t.strftime("%Y-%m-%d %H:%M:%S"), rng.randint(0, 999), t_total + 10, t_total))
    onset = its[o] if o is not None else None
    return Out("\n".join(L) + "\n", "log", onset, 1, n, "; ".join(notes))

# ========================================================================================
# JAX: CLU metric writers (LoggingWriter through absl) in a Flax loop, or T5X
# ========================================================================================


def gen_clu(rng, kind):
    if kind == "expert_collapse":
        variant = "t5x_moe"
    elif kind in ("grad_explosion", "grad_vanishing"):
        variant = "flax"
    else:
        variant = rng.choice(["flax", "flax", "t5x", "t5x_moe"] if kind is None else ["flax", "t5x"])
    k = rng.choice([50, 100, 100, 200]) if variant != "flax" else rng.choice([10, 20, 50, 100])
    n = min(rng.randint(150, 900), 20000 // k)
    T = n * k
    steps = [k * (i + 1) for i in range(n)]
    if variant == "flax":
        task = rng.choice(["imagenet/resnet50", "wmt/transformer", "lm1b/transformer", "vit/cifar100"])
        L0, Lf = (rng.uniform(6.8, 7.0), rng.uniform(1.2, 1.9)) if "imagenet" in task else (
            rng.uniform(9.5, 10.5), rng.uniform(2.0, 3.5)) if "wmt" in task or "lm1b" in task else (4.6, rng.uniform(0.3, 0.9))
    else:
        task = rng.choice(["t5.1.1 base c4 span corruption", "t5 small c4", "switch base 8e c4" if variant == "t5x_moe" else "t5 large c4"])
        if variant == "t5x_moe":
            task = rng.choice(["switch_base_8 c4 span corruption", "st_moe base 32e c4"])
        L0, Lf = rng.uniform(9.0, 10.5), rng.uniform(1.7, 2.6)
    E = (32 if "32e" in task else 8) if variant == "t5x_moe" else 0
    noise = rng.uniform(0.012, 0.03)
    loss, ldet = loss_curve(rng, steps, T, L0, Lf, noise)
    g = gnorm_curve(rng, steps, T, rng.uniform(2, 8), rng.uniform(0.2, 1.0), noise=rng.uniform(0.1, 0.2))
    sps0 = rng.uniform(1.5, 30)
    tp = tput_curve(rng, n, sps0, noise=0.03)
    peak = rng.choice([1e-3, 0.01, 0.1, 3e-4])
    lrf = lr_fn(rng.choice(["cosine", "inv_sqrt", "constant"]), T, peak, min(10000, T // 10))
    eff = [min(1.0, 0.7 + 0.28 * (1 - math.exp(-(i + 1) / (0.05 * n))) + 0.01 * tdev(rng)) for i in range(n)]
    left = [max(0.0, 0.3 * math.exp(-(i + 1) / (0.05 * n)) + rng.uniform(0.02, 0.06)) for i in range(n)]
    notes = ["CLU LoggingWriter via absl, %s (%s), every %d steps" % (
        {"flax": "Flax training loop", "t5x": "T5X (collection=train)", "t5x_moe": "T5X MoE (experts/* router metrics)"}[variant],
        task, k)]
    onset_i = None
    if kind:
        onset_i = onset_index(rng, steps)
        o = onset_i
        if kind == "loss_spike":
            notes.append(inj_spike(rng, loss, o))
        elif kind == "loss_divergence":
            notes.append(inj_divergence(rng, loss, o))
        elif kind == "slow_drift":
            notes.append(inj_drift(rng, loss, ldet, o))
        elif kind == "nonfinite":
            for i in range(o, n):
                loss[i] = NAN
                g[i] = NAN
            notes.append("loss (and every loss-derived scalar) nan from the onset on")
        elif kind == "grad_explosion":
            notes.append(inj_gexplode(rng, g, o, loss))
        elif kind == "grad_vanishing":
            notes.append(inj_gvanish(rng, g, o, loss, ldet))
        elif kind == "throughput_regression":
            notes.append(inj_tput(rng, tp, o))
        elif kind == "expert_collapse":
            f = rng.uniform(0.1, 0.4)
            d = rng.uniform(0.25, 0.7)
            K = rng.randint(5, 30)
            for i in range(o, n):
                fr = min(1.0, (i - o + 1) / float(K))
                eff[i] = eff[i] * (1 - fr) + f * fr
                left[i] = left[i] * (1 - fr) + d * fr
                loss[i] *= 1 + 0.05 * fr
            notes.append("router collapse: expert_usage falls to %.2f and fraction_tokens_left_behind rises to %.2f "
                         "within %d logged points" % (f, d, K))
    clock = Clock(rng)
    tid = rng.randint(139000000000000, 140999999999999)
    L = []

    def absl(src, msg, lvl="I"):
        return "%s%s %s %d %s] %s" % (lvl, clock.t.strftime("%m%d"), clock.t.strftime("%H:%M:%S.%f"), tid, src, msg)

    def g6s(v):
        return "%.6g" % v if isinstance(v, float) else str(v)

    if variant == "flax":
        L.append(absl("xla_bridge.py:863", "Unable to initialize backend 'rocm': NOT_FOUND: Could not find registered platform with name: \"rocm\". Available platform names are: CUDA"))
        L.append(absl("main.py:56", "JAX process: 0 / 1"))
        L.append(absl("main.py:57", "JAX local devices: [cuda(id=0), cuda(id=1), cuda(id=2), cuda(id=3)]"))
        L.append(absl("local.py:45", "Setting task status: process_index: 0, process_count: 1"))
        L.append(absl("train.py:312", "Initial compilation, this might take some minutes..."))
        L.append(absl("train.py:330", "Initial compilation completed."))
        names = rng.choice([("loss", "train_accuracy", "learning_rate", "grad_norm"),
                            ("train_loss", "train_accuracy", "train_learning_rate", "train_grad_norm")])
    else:
        L.append(absl("train.py:261", "Process ID: 0"))
        L.append(absl("utils.py:1150", "Initializing dataset for task '%s' with a replica batch size of 256 and a seed of None" % task.split()[0]))
        L.append(absl("train.py:397", "Initialize/restore complete (%.2f seconds)." % rng.uniform(30, 200)))
        L.append(absl("utils.py:152", "Using checkpoint directory: gs://bucket/t5x/%s/checkpoint_0" % task.split()[0]))
        L.append(absl("train.py:568", "Starting training loop."))
        L.append(absl("train.py:593", "Starting main loop over steps %d-%d" % (0, T)))
    for i, s in enumerate(steps):
        st = 1.0 / tp[i]
        clock.adv(k * st)
        lr = lrf(s)
        if variant == "flax":
            acc = max(0.0, min(1.0, 0.95 * (1 - (loss[i] - Lf * 0.5) / L0))) if isfin(loss[i]) else NAN
            vals = {names[0]: loss[i], names[1]: acc, names[2]: lr, names[3]: g[i]}
            L.append(absl("logging_writer.py:48", "[%d] %s" % (s, ", ".join("%s=%s" % (kk, g6s(vals[kk])) for kk in sorted(vals)))))
            L.append(absl("logging_writer.py:48", "[%d] steps_per_sec=%s" % (s, g6s(tp[i]))))
            L.append(absl("logging_writer.py:48", "[%d] uptime=%s" % (s, g6s(clock.el()))))
            L.append(absl("periodic_actions.py:128", "Setting work unit notes: %.1f steps/s, %.1f%% (%d/%d), ETA: %s" % (
                tp[i], 100.0 * s / T, s, T, "%dm" % ((T - s) * st / 60))))
            if s % (k * 20) == 0:
                L.append(absl("logging_writer.py:48", "[%d] eval_accuracy=%s, eval_loss=%s" % (
                    s, g6s(acc * 0.95 if isfin(acc) else NAN), g6s(ldet[i] * 1.05 if isfin(loss[i]) else NAN))))
                L.append(absl("checkpoints.py:571", "Saving checkpoint at step: %d" % s))
        else:
            vals = {"accuracy": max(0.0, 1 - loss[i] / (L0 * 1.05)) if isfin(loss[i]) else NAN,
                    "cross_ent_loss": loss[i] * 0.998, "cross_ent_loss_per_all_target_tokens": loss[i] * 0.998 / 114.0,
                    "learning_rate": lr, "learning_rate/current": lr, "loss": loss[i], "loss_per_all_target_tokens": loss[i] / 114.0,
                    "loss_per_nonpadding_target_token": loss[i] * 1.001, "nonpadding_fraction": 0.9991,
                    "timing/seconds": k * st, "timing/seqs": k * 256, "timing/seqs_per_second": 256 * tp[i],
                    "timing/seqs_per_second_per_core": 256 * tp[i] / 32, "timing/steps_per_second": tp[i],
                    "timing/target_tokens_per_second": 256 * 114 * tp[i], "timing/target_tokens_per_second_per_core": 256 * 114 * tp[i] / 32,
                    "timing/uptime": clock.el(), "z_loss": 1e-4 * (1 + 0.2 * tdev(rng)) if isfin(loss[i]) else NAN,
                    "z_loss_per_all_target_tokens": 1e-6}
            if variant == "t5x_moe":
                ef = eff[i]
                vals.update({"experts/auxiliary_loss": 0.01 * (1.0 / max(0.05, ef)) * (1 + 0.02 * tdev(rng)),
                             "experts/router_z_loss": 3e-4 * (1 + 0.2 * tdev(rng)) * (1 + 3 * (1 - ef)),
                             "experts/fraction_tokens_left_behind": left[i], "experts/expert_usage": ef,
                             "experts/router_confidence": min(0.99, 0.35 + 0.6 * (1 - ef) + 0.02 * tdev(rng))})
            L.append(absl("logging_writer.py:48", "[%d] collection=train %s" % (s, ", ".join(
                "%s=%s" % (kk, g6s(vals[kk])) for kk in sorted(vals)))))
            if s % 1000 == 0:
                L.append(absl("checkpoints.py:762", "Saving checkpoint for step %d to gs://bucket/t5x/checkpoint_%d.tmp-%d" % (
                    s, s, int(1.7e9 + clock.el()))))
                L.append(absl("checkpoints.py:911", "Saved checkpoint for step %d to gs://bucket/t5x/checkpoint_%d" % (s, s)))
                clock.adv(rng.uniform(5, 30))
    onset = steps[onset_i] if onset_i is not None else None
    return Out("\n".join(L) + "\n", "log", onset, steps[0], steps[-1], "; ".join(notes))

# ========================================================================================
# PaddleNLP (Trainer log lines, or the model_zoo GPT pretraining script)
# ========================================================================================


def gen_paddlenlp(rng, kind):
    if kind == "memory_leak":
        variant = "llm"
    else:
        variant = rng.choice(["trainer", "llm", "llm", "gpt"])
    ansi = rng.random() < 0.5
    k = rng.choice([1, 5, 10, 10, 20])
    n = min(rng.randint(150, 1200), 20000 // k)
    T = n * k
    steps = [k * (i + 1) for i in range(n)]
    model = rng.choice(["ernie-3.0-medium-zh", "llama-7b", "qwen-7b", "gpt2-medium-en", "baichuan2-7b"])
    if variant == "trainer":
        L0, Lf = rng.uniform(2.5, 3.5), rng.uniform(0.3, 0.9)
    elif variant == "llm":
        L0, Lf = rng.uniform(1.6, 2.4), rng.uniform(0.7, 1.2)
    else:
        L0, Lf = rng.uniform(10.8, 11.0), rng.uniform(2.8, 3.6)
    noise = rng.uniform(0.03, 0.06) if k == 1 else rng.uniform(0.015, 0.03)
    epochs = rng.choice([1, 1, 2, 3]) if variant != "gpt" else 1
    spe = int(math.ceil(T / float(epochs)))
    loss, ldet = loss_curve(rng, steps, T, L0, Lf, noise, epoch_len=spe if epochs > 1 else None, epoch_drop=rng.uniform(0.05, 0.12))
    sps0 = rng.uniform(2, 60)
    tp = tput_curve(rng, n, sps0, noise=0.03)
    memb = rng.uniform(7, 60)
    mem = mem_curve(rng, n, memb, saw=0.01, noise=0.0005)
    peak = rng.choice([3e-5, 2e-5, 1e-4, 3e-4])
    lrf = lr_fn(rng.choice(["linear", "cosine"]), T, peak, min(500, T // 20))
    eval_every = rng.choice([100, 200, 500, 1000])
    while T // eval_every < 2 and eval_every > 50:
        eval_every //= 2
    bs = rng.choice([8, 16, 32])
    seq = rng.choice([1024, 2048, 4096])
    notes = ["PaddleNLP %s (%s), logging_steps %d, %d epoch(s)%s" % (
        {"trainer": "Trainer", "llm": "LLM Trainer (memory and per-device token rate)", "gpt": "model_zoo GPT pretraining script"}[variant],
        model, k, epochs, ", colorlog ANSI" if ansi else "")]
    onset_i = None
    if kind:
        onset_i = onset_index(rng, steps)
        o = onset_i
        if kind == "loss_spike":
            notes.append(inj_spike(rng, loss, o))
        elif kind == "loss_divergence":
            notes.append(inj_divergence(rng, loss, o))
        elif kind == "slow_drift":
            notes.append(inj_drift(rng, loss, ldet, o))
        elif kind == "nonfinite":
            for i in range(o, n):
                loss[i] = NAN
            notes.append("loss nan from the onset on, persisting")
        elif kind == "memory_leak":
            notes.append(inj_leak(rng, mem, o, cap=79.0) + " (current_memory_allocated, GB)")
        elif kind == "throughput_regression":
            notes.append(inj_tput(rng, tp, o))
    clock = Clock(rng)
    L = []

    def log(msg, level="INFO"):
        t = clock.t.strftime("%Y-%m-%d %H:%M:%S,") + "%03d" % rng.randint(0, 999)
        if ansi:
            return "\x1b[32m[%s] [%8s]\x1b[0m - %s" % (t, level, msg)
        return "[%s] [%8s] - %s" % (t, level, msg)

    if variant != "gpt":
        L.append(log("The default value for the training argument `--report_to` will change in v5 (from all installed integrations to none)."))
        L.append(log("============================================================"))
        L.append(log("     Training Configuration Arguments    "))
        L.append(log("paddle commit id              : %s" % ("%040x" % rng.getrandbits(160))))
        for kk, vv in [("adam_beta1", "0.9"), ("adam_beta2", "0.999"), ("bf16", "True"), ("dataloader_num_workers", "1"),
                       ("eval_steps", str(eval_every)), ("gradient_accumulation_steps", "4"), ("learning_rate", repr(peak)),
                       ("logging_steps", str(k)), ("lr_scheduler_type", "SchedulerType.COSINE"), ("max_steps", str(T)),
                       ("num_train_epochs", str(float(epochs))), ("output_dir", "./checkpoints/%s" % model),
                       ("per_device_train_batch_size", str(bs)), ("save_steps", str(eval_every)), ("warmup_steps", "0"),
                       ("weight_decay", "0.0"), ("world_size", "8")]:
            L.append(log("%-30s:%s" % (kk, vv)))
        L.append(log(""))
        L.append(log("***** Running training *****"))
        L.append(log("  Num examples = %s" % "{:,}".format(T * bs * 8 // epochs)))
        L.append(log("  Num Epochs = %d" % epochs))
        L.append(log("  Instantaneous batch size per device = %d" % bs))
        L.append(log("  Total train batch size (w. parallel, distributed & accumulation) = %d" % (bs * 8 * 4)))
        L.append(log("  Gradient Accumulation steps = 4"))
        L.append(log("  Total optimization steps = %d" % T))
        L.append(log("  Total num train samples = %d" % (T * bs * 32)))
        L.append(log("  Number of trainable parameters = %d (per device)" % rng.randint(10 ** 8, 8 * 10 ** 9)))
    else:
        L.append(log("The global seed is set to %d and local seed is set to %d." % (rng.randint(1, 9999), rng.randint(1, 9999))))
        L.append(log("Model config: {'vocab_size': 50304, 'hidden_size': 1024, 'num_hidden_layers': 24}"))
    after_eval = False
    for i, s in enumerate(steps):
        dt = k / tp[i]
        if after_eval:
            dt += rng.uniform(15, 90)
            after_eval = False
        clock.adv(dt)
        sps = k / dt
        lr = lrf(s)
        if variant == "gpt":
            ep = 0
            L.append(log("global step %d/%d, epoch: %d, batch: %d, rank_id: 0, loss: %.9f, avg_reader_cost: %.5f sec, "
                         "avg_batch_cost: %.5f sec, speed: %.2f step/s, ips_total: %.0f tokens/s, ips: %.0f tokens/s, "
                         "learning rate: %.5e" % (s, T, ep, s - 1, loss[i], rng.uniform(0.0002, 0.002), 1.0 / sps, sps,
                                                  sps * bs * seq * 8, sps * bs * seq, lr)))
        else:
            parts = [("loss", ("%.8f" % loss[i]).rstrip("0") if isfin(loss[i]) else str(loss[i])),
                     ("learning_rate", repr(float("%.3e" % lr))), ("global_step", str(s))]
            if variant == "llm":
                parts += [("current_memory_allocated", repr(mem[i])), ("current_memory_reserved", repr(max(mem[i] * 1.1, memb * 1.15))),
                          ("max_memory_allocated", repr(mem[i] * 1.3)), ("max_memory_reserved", repr(max(mem[i] * 1.4, memb * 1.45)))]
            parts += [("interval_runtime", "%g" % round(dt, 4)), ("interval_samples_per_second", "%g" % round(sps * bs, 4))]
            if variant == "llm":
                parts += [("interval_tokens_per_second_per_device", "%g" % round(sps * bs * seq / 8.0, 4)),
                          ("interval_hardware_tflops_per_device", "%g" % round(sps * bs * seq * 6 * 7e9 / 8e12 / 8, 2))]
            parts += [("interval_steps_per_second", "%g" % round(sps, 4)),
                      ("progress_or_epoch" if variant == "llm" else "epoch", "%g" % round(s / float(spe), 4))]
            L.append(log(", ".join("%s: %s" % kv for kv in parts)))
        if s % eval_every == 0 and s < T:
            if variant != "gpt":
                L.append(log("***** Running Evaluation *****"))
                L.append(log("  Num examples = %d" % 1373))
                L.append(log("  Total prediction steps = %d" % 43))
                L.append(log("  Pre device batch size = %d" % bs))
                L.append(log("  Total Batch size = %d" % (bs * 8)))
                clock.adv(rng.uniform(10, 60))
                ev = ldet[i] * rng.uniform(1.0, 1.05) if isfin(loss[i]) else NAN
                L.append(log("eval_loss: %r, eval_runtime: %g, eval_samples_per_second: %g, eval_steps_per_second: %g, %s: %g" % (
                    ev, round(rng.uniform(10, 60), 4), round(rng.uniform(50, 200), 3), round(rng.uniform(2, 5), 3),
                    "progress_or_epoch" if variant == "llm" else "epoch", round(s / float(spe), 4))))
                L.append(log("Saving model checkpoint to ./checkpoints/%s/checkpoint-%d" % (model, s)))
                L.append(log("tokenizer config file saved in ./checkpoints/%s/checkpoint-%d/tokenizer_config.json" % (model, s)))
                L.append(log("Special tokens file saved in ./checkpoints/%s/checkpoint-%d/special_tokens_map.json" % (model, s)))
            else:
                L.append(log("[eval] epoch: 0, batch: %d, loss: %.9f, avg_eval_cost: %.5f s, speed: %.2f step/s" % (
                    s, ldet[i] * 1.02 if isfin(loss[i]) else NAN, rng.uniform(0.1, 0.5), rng.uniform(2, 8))))
                L.append(log("Save model to output/gpt/model_%d" % s))
            after_eval = True
    if variant != "gpt":
        L.append(log(""))
        L.append(log("Training completed. "))
        L.append(log("train_runtime: %g, train_samples_per_second: %g, train_steps_per_second: %g, train_loss: %r, %s: %g" % (
            round(clock.el(), 4), round(T * bs / clock.el(), 4), round(T / clock.el(), 4),
            sum(x for x in loss if isfin(x)) / max(1, sum(1 for x in loss if isfin(x))),
            "progress_or_epoch" if variant == "llm" else "epoch", float(epochs))))
    onset = steps[onset_i] if onset_i is not None else None
    return Out("\n".join(L) + "\n", "log", onset, steps[0], steps[-1], "; ".join(notes))

# ========================================================================================
# corpus plan and output
# ========================================================================================

GENS = {
    "fairseq": gen_fairseq, "mmengine": gen_mmengine, "detectron2": gen_detectron2, "ultralytics": gen_ultralytics,
    "timm": gen_timm, "torchtune": gen_torchtune, "openrlhf": gen_openrlhf, "verl": gen_verl, "nemo": gen_nemo,
    "composer": gen_composer, "deepspeed": gen_deepspeed, "rllib": gen_rllib, "clu": gen_clu, "paddlenlp": gen_paddlenlp,
}

N_HEALTHY = 96
PER_KIND = {k: 10 for k in KINDS}
for _k in ("loss_spike", "nonfinite", "grad_explosion", "throughput_regression"):
    PER_KIND[_k] = 11


def plan(rng):
    load = {f: 0 for f in FORMATS}
    per = {}
    items = []
    order = sorted(KINDS, key=lambda k: (sum(1 for f in FORMATS if k in ELIGIBLE[f]), KINDS.index(k)))
    for kind in order:
        elig = [f for f in FORMATS if kind in ELIGIBLE[f]]
        for _ in range(PER_KIND[kind]):
            f = min(elig, key=lambda f: (per.get((f, kind), 0), load[f], rng.random()))
            per[(f, kind)] = per.get((f, kind), 0) + 1
            load[f] += 1
            items.append((f, kind))
    fl = list(FORMATS)
    rng.shuffle(fl)
    for j in range(N_HEALTHY):
        items.append((fl[j % len(fl)], None))
    rng.shuffle(items)
    return items


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=5151)
    args = ap.parse_args()
    master = random.Random(args.seed)
    items = plan(master)
    runs_dir = os.path.join(args.outdir, "runs")
    os.makedirs(runs_dir, exist_ok=True)
    labels = []
    table = {}
    for idx, (fmt, kind) in enumerate(items):
        sub = random.Random(master.getrandbits(64))
        out = GENS[fmt](sub, kind)
        if kind is not None and out.onset is None:
            raise SystemExit("internal error: %s %s without onset" % (fmt, kind))
        h = hashlib.sha1(("%d-%d-%s" % (args.seed, idx, fmt)).encode()).hexdigest()[:8]
        name = "%s-%s.%s" % (fmt, h, out.ext)
        with open(os.path.join(runs_dir, name), "w", encoding="utf-8", newline="") as fh:
            fh.write(out.text)
        labels.append({"file": name, "kind": kind or "healthy", "onset": out.onset, "steps": out.last - out.first + 1,
                       "format": fmt, "notes": out.notes})
        table[(fmt, kind)] = table.get((fmt, kind), 0) + 1
    with open(os.path.join(args.outdir, "labels.json"), "w") as fh:
        json.dump(labels, fh, indent=1)
    cols = ["healthy"] + KINDS
    short = {"healthy": "ok", "loss_spike": "lspk", "loss_divergence": "ldiv", "slow_drift": "drift", "nonfinite": "nan",
             "grad_explosion": "gexp", "grad_vanishing": "gvan", "kl_spike": "klsp", "kl_runaway": "klrun",
             "reward_hacking": "rhack", "reward_saturation": "rsat", "entropy_collapse": "ent", "memory_leak": "mem",
             "expert_collapse": "moe", "throughput_regression": "tput"}
    print("%-12s" % "format" + "".join("%6s" % short[c] for c in cols) + "%7s" % "total")
    for f in FORMATS:
        row = [table.get((f, None if c == "healthy" else c), 0) for c in cols]
        print("%-12s" % f + "".join("%6s" % (v or ".") for v in row) + "%7d" % sum(row))
    tot = [sum(table.get((f, None if c == "healthy" else c), 0) for f in FORMATS) for c in cols]
    print("%-12s" % "total" + "".join("%6d" % v for v in tot) + "%7d" % sum(tot))
    print("wrote %d runs to %s (%d healthy, %d faulty)" % (len(labels), runs_dir, tot[0], sum(tot) - tot[0]))


if __name__ == "__main__":
    main()
