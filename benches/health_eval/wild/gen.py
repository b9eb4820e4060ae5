#!/usr/bin/env python3
"""Generate the "wild" corpus: realistic training logs in the formats real trainers
print (HF Trainer, TRL, Lightning CSV, hand-written scripts, SB3, W&B-style JSONL),
some healthy and some with one injected health fault, plus labels.json.

usage: python3 gen.py OUTDIR [--seed N]      (default seed 4242; stdlib only)

The generator is written independently of the monitor: it models how trainers log,
and injects each fault past the documented alert definition.
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

NAN = float('nan')
INF = float('inf')

KINDS = ['healthy', 'loss_spike', 'loss_divergence', 'slow_drift', 'nonfinite',
         'grad_explosion', 'grad_vanishing', 'kl_spike', 'kl_runaway', 'reward_hacking',
         'reward_saturation', 'entropy_collapse', 'expert_collapse', 'memory_leak',
         'throughput_regression']

# (format, style, kind, count).  style None = chosen inside the generator.
PLAN = [
    ('hf', None, 'healthy', 16), ('hf', None, 'loss_spike', 4), ('hf', None, 'loss_divergence', 3),
    ('hf', None, 'slow_drift', 3), ('hf', None, 'nonfinite', 4), ('hf', None, 'grad_explosion', 4),
    ('hf', None, 'grad_vanishing', 4),
    ('trl', None, 'healthy', 16), ('trl', None, 'kl_spike', 4), ('trl', None, 'kl_runaway', 3),
    ('trl', None, 'reward_hacking', 5), ('trl', None, 'reward_saturation', 5),
    ('trl', None, 'entropy_collapse', 3), ('trl', None, 'slow_drift', 1), ('trl', None, 'nonfinite', 1),
    ('lightning', None, 'healthy', 18), ('lightning', None, 'loss_spike', 3),
    ('lightning', None, 'loss_divergence', 3), ('lightning', None, 'slow_drift', 3),
    ('lightning', None, 'nonfinite', 3), ('lightning', None, 'grad_explosion', 3),
    ('lightning', None, 'grad_vanishing', 3),
    ('plain', 'nanogpt', 'healthy', 2), ('plain', 'nanogpt', 'loss_spike', 1),
    ('plain', 'nanogpt', 'loss_divergence', 1), ('plain', 'nanogpt', 'nonfinite', 1),
    ('plain', 'nanogpt', 'throughput_regression', 1),
    ('plain', 'megatron', 'healthy', 2), ('plain', 'megatron', 'loss_divergence', 1),
    ('plain', 'megatron', 'grad_explosion', 2), ('plain', 'megatron', 'grad_vanishing', 1),
    ('plain', 'megatron', 'throughput_regression', 2),
    ('plain', 'epochstep', 'healthy', 2), ('plain', 'epochstep', 'loss_spike', 1),
    ('plain', 'epochstep', 'slow_drift', 1),
    ('plain', 'keras', 'healthy', 2), ('plain', 'keras', 'loss_spike', 1), ('plain', 'keras', 'nonfinite', 1),
    ('plain', 'logging', 'healthy', 2), ('plain', 'logging', 'loss_divergence', 1),
    ('plain', 'logging', 'nonfinite', 1), ('plain', 'logging', 'grad_explosion', 1),
    ('plain', 'logging', 'grad_vanishing', 1), ('plain', 'logging', 'memory_leak', 2),
    ('plain', 'logging', 'throughput_regression', 1),
    ('plain', 'torchtitan', 'healthy', 2), ('plain', 'torchtitan', 'slow_drift', 1),
    ('plain', 'torchtitan', 'memory_leak', 3), ('plain', 'torchtitan', 'throughput_regression', 2),
    ('sb3', None, 'healthy', 18), ('sb3', None, 'slow_drift', 2), ('sb3', None, 'kl_spike', 4),
    ('sb3', None, 'kl_runaway', 4), ('sb3', None, 'entropy_collapse', 5),
    ('sb3', None, 'throughput_regression', 2),
    ('jsonl', None, 'healthy', 8), ('jsonl', None, 'expert_collapse', 9), ('jsonl', None, 'memory_leak', 4),
    ('jsonl', None, 'throughput_regression', 2), ('jsonl', None, 'reward_hacking', 4),
    ('jsonl', None, 'reward_saturation', 3), ('jsonl', None, 'kl_spike', 2), ('jsonl', None, 'kl_runaway', 2),
    ('jsonl', None, 'entropy_collapse', 2), ('jsonl', None, 'loss_spike', 1),
    ('jsonl', None, 'grad_explosion', 1), ('jsonl', None, 'nonfinite', 1),
]


# =============================================================================
# numeric helpers
# =============================================================================

def f32(x):
    """The python float a float32 tensor's .item() gives back."""
    if x != x or x in (INF, -INF):
        return x
    try:
        return struct.unpack('f', struct.pack('f', x))[0]
    except (OverflowError, struct.error):
        return INF if x > 0 else -INF


def np32str(x):
    """str(np.float32(x)): shortest repr that round-trips in float32."""
    if x != x:
        return 'nan'
    if x in (INF, -INF):
        return 'inf' if x > 0 else '-inf'
    y = f32(x)
    s = repr(y)
    for p in range(1, 10):
        s = '%.*g' % (p, y)
        if f32(float(s)) == y:
            break
    if 'e' not in s and '.' not in s:
        s += '.0'
    return s


def g3(v):
    """SB3 HumanOutputFormat float: f'{v:<8.3g}'."""
    return f'{v:<8.3g}'


def clamp(x, lo, hi):
    return lo if x < lo else hi if x > hi else x


def lerp(a, b, t):
    return a + (b - a) * t


def logu(rng, a, b):
    return math.exp(rng.uniform(math.log(a), math.log(b)))


def geo(a, b, t):
    return a * (b / a) ** t


def tdraw(rng, df=5):
    """Unit-variance Student-t draw (heavy tails)."""
    z = rng.gauss(0.0, 1.0)
    if not df:
        return z
    c = rng.gammavariate(df / 2.0, 2.0)
    return z / math.sqrt(max(c, 1e-9) / df) * math.sqrt((df - 2.0) / df)


def fin(x):
    return x == x and x not in (INF, -INF)


class Ser:
    """One metric over the logged points: trend * noise (mul) or trend + noise (add).
    Noise is heteroscedastic (slowly varying sigma), heavy-tailed, optionally AR(1).
    `ovr` holds exact printed values (NaN, 0.0, pinned maxima) that bypass the noise."""

    def __init__(self, rng, trend, sig, mode='mul', df=5, clip=3.2, rho=0.0, hetero=0.35, cap=None):
        self.trend = list(trend)
        self.mode = mode
        self.sig = sig
        eps = []
        h = 0.0
        zp = 0.0
        for _ in range(len(self.trend)):
            h = 0.97 * h + rng.gauss(0, hetero * 0.25)
            s = sig * math.exp(clamp(h, -0.9, 0.9))
            z = clamp(tdraw(rng, df), -clip, clip)
            if rho:
                z = rho * zp + math.sqrt(1 - rho * rho) * z
                zp = z
            if mode == 'mul':
                e = math.exp(s * z)
                if cap:
                    e = clamp(e, cap[0], cap[1])
            else:
                e = s * z
            eps.append(e)
        self.eps = eps
        self.ovr = {}

    def __len__(self):
        return len(self.trend)

    def quiet(self, i, f=0.3):
        if self.mode == 'mul':
            self.eps[i] = math.exp(math.log(self.eps[i]) * f)
        else:
            self.eps[i] *= f

    def val(self, i):
        if i in self.ovr:
            return self.ovr[i]
        if self.mode == 'mul':
            return self.trend[i] * self.eps[i]
        return self.trend[i] + self.eps[i]

    def vals(self):
        return [self.val(i) for i in range(len(self.trend))]


def bumps(rng, ser, rate, lo=1.06, hi=1.26, start=5):
    """Benign one-point bumps (under 1.3x of trend), never two in a row."""
    last = -5
    for i in range(start, len(ser)):
        if rng.random() < rate and i - last > 3:
            ser.eps[i] = rng.uniform(lo, hi)
            last = i


def decay(n, L0, Linf, tau, alpha):
    """Loss-like curve: fast then slow fall from L0 to Linf over n points."""
    raw = [(1 + (i / max(1, n - 1)) / tau) ** (-alpha) for i in range(n)]
    r1 = raw[-1]
    return [Linf + (L0 - Linf) * (r - r1) / (1 - r1) for r in raw]


def rise(n, a, b, mid, width):
    """Logistic climb from a to b, normalised so it starts at a."""
    f0 = 1 / (1 + math.exp(mid / width))
    out = []
    for i in range(n):
        x = i / max(1, n - 1)
        f = 1 / (1 + math.exp(-(x - mid) / width))
        out.append(a + (b - a) * (f - f0) / (1 - f0))
    return out


def gn_trend(n, level, init_mult, settle, late=1.0):
    out = []
    for i in range(n):
        x = i / max(1, n - 1)
        v = level * (1 + (init_mult - 1) * math.exp(-x / max(settle / 3, 1e-4)))
        v *= 1 + (late - 1) * x * x
        out.append(v)
    return out


def lr_fn(kind, total, peak, warm, floor=0.0, milestones=(), gamma=0.1):
    def f(s):
        if warm > 0 and s < warm:
            return peak * s / warm
        p = clamp((s - warm) / max(1, total - warm), 0.0, 1.0)
        if kind == 'linear':
            return peak + (floor - peak) * p
        if kind == 'cosine':
            return floor + (peak - floor) * 0.5 * (1 + math.cos(math.pi * p))
        if kind == 'constant':
            return peak
        if kind == 'step':
            return peak * gamma ** sum(1 for m in milestones if s >= m)
        if kind == 'wsd':
            return peak if p < 0.8 else peak + (floor - peak) * (p - 0.8) / 0.2
        if kind == 'invsqrt':
            return peak * math.sqrt(max(warm, 1) / max(s, 1))
        return peak
    return f


def acc_of(loss):
    """Rough classification accuracy that goes with a cross-entropy level."""
    if not fin(loss):
        return 0.1
    return clamp(1.0 - 0.38 * loss, 0.1, 0.995)


def pick_k(rng, n, lo=0.32, hi=0.76):
    return max(2, min(n - 3, int(round(rng.uniform(lo, hi) * (n - 1)))))


class Clock:
    def __init__(self, rng):
        self.t = datetime(2023, 3, 1) + timedelta(days=rng.randint(0, 900), seconds=rng.randint(0, 86399),
                                                  microseconds=rng.randint(0, 999999))

    def adv(self, sec):
        self.t += timedelta(seconds=sec)

    def log(self):  # logging module default asctime
        return self.t.strftime('%Y-%m-%d %H:%M:%S') + ',%03d' % (self.t.microsecond // 1000)

    def unix(self):
        return (self.t - datetime(1970, 1, 1)).total_seconds()


def fmt_interval(t):
    mins, s = divmod(int(t), 60)
    h, m = divmod(mins, 60)
    if h:
        return '{0:d}:{1:02d}:{2:02d}'.format(h, m, s)
    return '{0:02d}:{1:02d}'.format(m, s)


def tqdm_str(nn, total, elapsed, rate, desc='', unit='it', postfix=''):
    frac = nn / total if total else 0.0
    bar = '█' * int(frac * 10)
    if len(bar) < 10:
        bar += ' ▏▎▍▌▋▊▉'[int((frac * 10 - int(frac * 10)) * 8)]
        bar += ' ' * (10 - len(bar))
    if rate:
        rem = fmt_interval((total - nn) / rate)
        rs = f'{rate:5.2f}{unit}/s' if rate >= 1 else f'{1 / rate:5.2f}s/{unit}'
    else:
        rem, rs = '?', f'?{unit}/s'
    return f'{desc}{frac * 100:3.0f}%|{bar}| {nn}/{total} [{fmt_interval(elapsed)}<{rem}, {rs}{postfix}]'


class Prog:
    """tqdm bar as it lands in a captured log: 'lines' (one update per line, as CI log
    viewers show it) or 'raw' (carriage returns, as `> log 2>&1` writes it)."""

    def __init__(self, out, total, mode, esc):
        self.out, self.total, self.mode, self.esc = out, total, mode, esc
        self.last = ''

    def bar(self, nn, elapsed, rate):
        s = tqdm_str(nn, self.total, elapsed, rate)
        self.last = s
        self.out.append('\r' + s if self.mode == 'raw' else s + '\n')

    def write(self, msg, eval_prefix=False):
        if self.mode == 'raw':
            self.out.append('\r' + ' ' * len(self.last) + '\r' + msg + '\n\r' + self.last)
        elif eval_prefix and self.esc:
            w = len(self.last) + 2
            self.out.append(' ' * w + '\n' + ' ' * (w - 2) + '\x1b[A' + msg + '\n')
        else:
            self.out.append(msg + '\n')

    def sub(self, s):  # nested (position=1) bar, e.g. the eval loop
        if self.mode == 'raw':
            self.out.append('\n\r' + s + '\x1b[A')
        else:
            self.out.append(s + ('\x1b[A' if self.esc else '') + '\n')

    def plain(self, line):
        # print() to stdout while the bar sits on stderr: glued to the bar in raw captures
        self.out.append(line + '\n')

    def close(self):
        if self.mode == 'raw':
            self.out.append('\n')


# =============================================================================
# fault injectors (operate on a dict of Ser keyed by metric role)
# =============================================================================

def inj_loss_spike(rng, S, k, sev, key='loss'):
    L = S[key]
    m = max(lerp(1.7, 4.8, sev) * rng.uniform(0.93, 1.08), 1.0 + 8.0 * L.sig, 1.65)
    dur = rng.randint(2, 5)
    for d in range(1, 4):
        if k - d >= 0:
            L.quiet(k - d, 0.3)
    for d in range(dur):
        j = k + d
        if d == 0:
            f = m
        elif d == 1:
            f = max(1.6, m * rng.uniform(0.8, 1.05))
        else:
            f = max(1.35, lerp(m, 1.3, d / dur))
        L.trend[j] *= f
        L.eps[j] = math.exp(rng.gauss(0, L.sig * 0.25))
    r = rng.uniform(0.02, 0.1)
    for d in range(rng.randint(2, 10)):
        j = k + dur + d
        if j < len(L):
            L.trend[j] *= 1 + r * math.exp(-d / 3.0)
    if 'gn' in S:
        g = rng.uniform(1.5, 3.5)
        for d in range(dur):
            S['gn'].trend[k + d] *= g
    return f'{key} x{m:.2f} of trend for {dur} logged points, then recovers; noise sigma {L.sig:.3f}'


def inj_divergence(rng, S, k, sev, key='loss'):
    L = S[key]
    n = len(L)
    base = L.trend[k]
    top = lerp(1.9, 6.0, sev) * rng.uniform(0.92, 1.1)
    ceil = S.get('loss_ceiling')
    if ceil:
        top = min(top, max(ceil / base, 1.8))
    rise_n = rng.randint(10, max(11, min(60, (n - k) // 2)))
    p = rng.uniform(1.0, 1.6)
    creep = rng.uniform(0.0, 0.002)
    for j in range(k, n):
        t = min(1.0, (j - k + 1) / rise_n)
        f = math.exp(math.log(top) * t ** p)
        if j - k > rise_n:
            f *= 1 + creep * (j - k - rise_n)
        L.trend[j] = base * f
    if 'gn' in S:
        g = rng.uniform(1.5, 3.0)
        G = S['gn']
        for j in range(k, n):
            G.trend[j] *= lerp(1.0, g, min(1.0, (j - k) / rise_n))
    return f'{key} rises {top:.1f}x over {rise_n} logged points (power {p:.2f}) and stays high; noise sigma {L.sig:.3f}'


def inj_drift_loss(rng, S, k, sev, key='loss'):
    L = S[key]
    n = len(L)
    total = lerp(0.17, 0.45, sev) * rng.uniform(0.95, 1.05)
    p = rng.uniform(0.8, 1.4)
    lvl = L.trend[k]
    for j in range(k, n):
        t = (j - k + 1) / max(1, n - k)
        L.trend[j] = lvl * (1 + total * t ** p)
    return f'{key} creeps up +{total * 100:.0f}% from its best over the last {n - k} logged points (power {p:.2f}); noise sigma {L.sig:.3f}'


def inj_drift_reward(rng, S, k, sev, key='reward'):
    R = S[key]
    n = len(R)
    r0 = S['reward_start']
    lvl = R.trend[k]
    gain = lvl - r0
    frac = lerp(0.2, 0.55, sev) * rng.uniform(0.95, 1.05)
    p = rng.uniform(0.8, 1.3)
    for j in range(k, n):
        t = (j - k + 1) / max(1, n - k)
        R.trend[j] = lvl - frac * gain * t ** p
    return f'{key} loses {frac * 100:.0f}% of its gain ({r0:.3g} -> {lvl:.3g}) over the last {n - k} logged points'


def inj_nonfinite(rng, S, k, sev, variants):
    v = rng.choice(variants)
    L = S['loss']
    G = S.get('gn')
    n = len(L)
    if v == 'persist':
        for j in range(k, n):
            L.ovr[j] = NAN
            if G is not None:
                G.ovr[j] = NAN
        S['nan_from'] = k
        return 'loss (and grad norm) NaN from onset to the end'
    if v == 'inf_loss':
        L.ovr[k] = INF
        for j in range(k + 1, n):
            L.ovr[j] = NAN
        if G is not None:
            for j in range(k, n):
                G.ovr[j] = NAN
        S['nan_from'] = k
        return 'loss inf at onset, NaN afterwards'
    if v == 'grad_once':
        d = rng.randint(1, 3)
        bad = rng.choice([NAN, INF])
        for j in range(k, k + d):
            G.ovr[j] = bad
        return f'grad norm {bad} for {d} logged point(s), loss stays finite, training continues'
    if v == 'nan_then_zero':
        L.ovr[k] = NAN
        for j in range(k + 1, n):
            L.ovr[j] = 0.0
        for j in range(k, n):
            G.ovr[j] = NAN
        S['nan_from'] = k
        return 'loss NaN at onset then printed as 0.0 with grad norm NaN to the end'
    raise ValueError(v)


def inj_gexp(rng, S, k, sev):
    G = S['gn']
    n = len(G)
    lvl = G.trend[k]
    shape = rng.choice(['sudden', 'sudden', 'climb'])
    lossfx = rng.random() < 0.5 and 'loss' in S
    if shape == 'sudden':
        F = math.exp(lerp(math.log(12), math.log(1000), sev)) * rng.uniform(0.85, 1.15)
        ramp = rng.randint(1, 4)
        hold = rng.randint(3, 25)
        after = F if rng.random() < 0.5 else F ** rng.uniform(0.45, 0.75)
        for j in range(k, n):
            d = j - k
            if d < ramp:
                f = F ** ((d + 1) / ramp)
            elif d < ramp + hold:
                f = F
            else:
                f = geo(F, after, min(1.0, (d - ramp - hold) / 8))
            G.trend[j] = lvl * f
            G.quiet(j, 0.6)
        note = f'grad norm x{F:.0f} within {ramp} logged point(s), held {hold}, then x{after:.0f}'
    else:
        rate = lerp(0.05, 0.16, sev) * rng.uniform(0.9, 1.1)
        F = math.exp(lerp(math.log(40), math.log(3000), sev))
        need = math.log(F) / math.log(1 + rate)
        if need > 0.8 * (n - k):
            rate = F ** (1 / (0.8 * (n - k))) - 1
        for j in range(k, n):
            G.trend[j] = lvl * min(F, (1 + rate) ** (j - k + 1))
        note = f'grad norm climbs {rate * 100:.1f}% per logged point to x{F:.0f}'
    if lossfx:
        bump = rng.uniform(0.03, 0.12)
        L = S['loss']
        for j in range(k + 2, n):
            L.trend[j] *= 1 + bump * min(1.0, (j - k - 2) / 10)
        note += f'; loss drifts up {bump * 100:.0f}% afterwards'
    return note


def inj_gvan(rng, S, k, sev):
    G = S['gn']
    n = len(G)
    lvl = G.trend[k]
    zero = rng.random() < 0.2
    target = math.exp(lerp(math.log(6e-3), math.log(1e-5), sev))
    fall = rng.randint(3, 30)
    for j in range(k, n):
        t = min(1.0, (j - k + 1) / fall)
        G.trend[j] = lvl * target ** t
        if zero and j - k + 1 >= fall:
            G.ovr[j] = 0.0
    if 'loss' in S:
        L = S['loss']
        for j in range(k, n):
            L.trend[j] = L.trend[k]
    if 'eval_freeze' in S:
        S['eval_freeze'] = k
    if zero:
        return f'grad norm falls to exactly 0.0 over {fall} logged points; loss freezes at its level'
    return f'grad norm falls to {target:.1e}x its level over {fall} logged points; loss stops improving'


def inj_kl_spike(rng, S, k, sev, key='kl'):
    K = S[key]
    F = lerp(3.7, 20.0, sev) * rng.uniform(0.92, 1.08)
    dur = rng.randint(2, 6)
    for d in range(1, 4):  # no benign bump right before the onset
        if k - d >= 0:
            K.quiet(k - d, 0.3)
    for d in range(dur):
        j = k + d
        if d == 0:
            f = F
        elif d == 1:
            f = max(3.5, F * rng.uniform(0.75, 1.1))
        else:
            f = max(1.4, lerp(F, 1.5, d / dur))
        K.trend[j] *= f
        K.quiet(j, 0.25)
    return f'{key} x{F:.1f} of its settled level for {dur} logged points, then back'


def inj_kl_runaway(rng, S, k, sev, key='kl'):
    K = S[key]
    n = len(K)
    F = math.exp(lerp(math.log(6.5), math.log(100), sev)) * rng.uniform(0.9, 1.1)
    ln = rng.randint(max(15, (n - k) // 3), max(16, n - k - 5))
    shape = rng.choice(['exp', 'linear'])
    for j in range(k, n):
        t = min(1.0, (j - k + 1) / ln)
        K.trend[j] *= F ** t if shape == 'exp' else 1 + (F - 1) * t
    return f'{key} climbs ({shape}) to x{F:.0f} its settled level over {ln} logged points'


def inj_entropy(rng, S, k, sev, key='ent'):
    E = S[key]
    n = len(E)
    target = math.exp(lerp(math.log(0.27), math.log(0.03), sev)) * rng.uniform(0.9, 1.05)
    ln = rng.randint(5, max(6, min(60, (n - k) // 2)))
    for j in range(k, n):
        E.trend[j] *= target ** min(1.0, (j - k + 1) / ln)
    return f'{key} falls to {target * 100:.0f}% of its level over {ln} logged points and stays'


def inj_memleak(rng, S, k, sev, key='mem'):
    M = S[key]
    steps = S['steps']
    n = len(M)
    cap = S['mem_cap']
    lvl = M.trend[k]
    P = max(1, steps[-1] - steps[k])
    rate = lerp(0.2, 1.3, sev) * rng.uniform(0.92, 1.12)
    gmax = (cap * 0.97) / lvl - 1
    if rate * P / 1000 > gmax:
        rate = gmax * 1000 / P
    stairs = rng.random() < 0.3
    stair = max(1, (steps[-1] - steps[0]) // rng.randint(15, 40))
    for j in range(k, n):
        ds = steps[j] - steps[k - 1]
        if stairs:
            ds = (ds // stair + 1) * stair
        M.trend[j] = lvl * (1 + rate * ds / 1000)
    shape = f'staircase every {stair} steps' if stairs else 'linear'
    return (f'{key} grows {rate * 100:.0f}% of its level per 1000 steps ({shape}), '
            f'{lvl:.1f} -> {M.trend[-1]:.1f} of {cap:.0f} GB')


def inj_tput(rng, S, k, sev, key='tps'):
    T = S[key]
    n = len(T)
    f = lerp(0.62, 0.22, sev) * rng.uniform(0.95, 1.05)
    ramp = rng.choice([1, 1, rng.randint(3, 25)])
    for j in range(k, n):
        T.trend[j] *= lerp(1.0, f, min(1.0, (j - k + 1) / ramp))
    return f'{key} drops to {f * 100:.0f}% of its level (over {ramp} logged point(s)) and stays'


def inject_generic(rng, kind, S, k, sev, nf=('persist',)):
    if kind == 'loss_spike':
        return inj_loss_spike(rng, S, k, sev)
    if kind == 'loss_divergence':
        return inj_divergence(rng, S, k, sev)
    if kind == 'slow_drift':
        return inj_drift_loss(rng, S, k, sev)
    if kind == 'nonfinite':
        return inj_nonfinite(rng, S, k, sev, nf)
    if kind == 'grad_explosion':
        return inj_gexp(rng, S, k, sev)
    if kind == 'grad_vanishing':
        return inj_gvan(rng, S, k, sev)
    if kind == 'kl_spike':
        return inj_kl_spike(rng, S, k, sev)
    if kind == 'kl_runaway':
        return inj_kl_runaway(rng, S, k, sev)
    if kind == 'entropy_collapse':
        return inj_entropy(rng, S, k, sev)
    if kind == 'memory_leak':
        return inj_memleak(rng, S, k, sev)
    if kind == 'throughput_regression':
        return inj_tput(rng, S, k, sev)
    raise ValueError(kind)


def onset_range(kind):
    if kind == 'slow_drift':
        return 0.32, 0.62
    if kind in ('kl_runaway', 'memory_leak', 'reward_hacking'):
        return 0.32, 0.7
    return 0.32, 0.76


# =============================================================================
# shared: HF Trainer console stream (used by hf and trl dict logs)
# =============================================================================

WANDB_WORDS = ['likely', 'sweet', 'proud', 'vivid', 'dry', 'fragrant', 'stellar', 'misty', 'glamorous',
               'golden', 'lunar', 'breezy', 'cosmic', 'eager', 'polished', 'hardy', 'copper', 'dutiful']
WANDB_NOUNS = ['sun', 'dream', 'river', 'firefly', 'wave', 'plasma', 'donkey', 'snowflake', 'sea',
               'pond', 'voice', 'cloud', 'sky', 'forest', 'night', 'meadow', 'glade', 'dust']


def wandb_header(rng, clock, project):
    rid = ''.join(rng.choice('abcdefghijklmnopqrstuvwxyz0123456789') for _ in range(8))
    name = f'{rng.choice(WANDB_WORDS)}-{rng.choice(WANDB_NOUNS)}-{rng.randint(1, 400)}'
    ver = rng.choice(['0.16.3', '0.16.6', '0.17.0', '0.17.5', '0.18.3', '0.19.1'])
    stamp = clock.t.strftime('%Y%m%d_%H%M%S')
    user = rng.choice(['mlteam', 'jdoe', 'research-infra', 'ablation-bot'])
    return [
        f'wandb: Currently logged in as: {user}. Use `wandb login --relogin` to force relogin',
        f'wandb: Tracking run with wandb version {ver}',
        f'wandb: Run data is saved locally in /workspace/wandb/run-{stamp}-{rid}',
        'wandb: Run `wandb offline` to turn off syncing.',
        f'wandb: Syncing run {name}',
        f'wandb: ⭐️ View project at https://wandb.ai/{user}/{project}',
        f'wandb: 🚀 View run at https://wandb.ai/{user}/{project}/runs/{rid}',
    ]


def sparkline(vals, width=40):
    v = [x for x in vals if fin(x)]
    if not v:
        return ''
    step = max(1, len(v) // width)
    pts = [sum(v[i:i + step]) / len(v[i:i + step]) for i in range(0, len(v), step)][:width]
    lo, hi = min(pts), max(pts)
    chars = '▁▂▃▄▅▆▇█'
    return ''.join(chars[int((p - lo) / (hi - lo + 1e-12) * 7.999)] for p in pts)


def wandb_footer(rng, hist, summ):
    out = ['wandb: 🚀 View run at https://wandb.ai/...', 'wandb:', 'wandb: Run history:']
    w = max(len(k) for k in list(hist) + list(summ))
    for k, v in hist.items():
        out.append(f'wandb: {k.rjust(w)} {sparkline(v)}')
    out += ['wandb:', 'wandb: Run summary:']
    for k, v in summ.items():
        out.append(f'wandb: {k.rjust(w)} {v}')
    out += ['wandb:', 'wandb: Synced 5 W&B file(s), 0 media file(s), 2 artifact file(s) and 0 other file(s)',
            f'wandb: Find logs at: ./wandb/run-{rng.randint(20230101, 20251231)}_{rng.randint(100000, 235959)}-'
            f'{"".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(8))}/logs']
    return out


def hf_info(clock, line_no, msg, style):
    if style == 'bracket':
        return f'[INFO|trainer.py:{line_no}] {clock.log()} >> {msg}'
    if style == 'example':
        return f'{clock.t.strftime("%m/%d/%Y %H:%M:%S")} - INFO - transformers.trainer - {msg}'
    return None


def trainer_stream(rng, out, clock, total, logs, evals, saves, sps, mode, esc, info, eval_batches,
                   out_dir, extra=None, save_limit=None):
    """Emit what HF Trainer prints to a captured console: the progress bar, the log dicts
    (via tqdm.write), the eval sub-bar, checkpoint lines when INFO logging is on."""
    prog = Prog(out, total, mode, esc)
    prog.bar(0, 0, None)
    elapsed = 0.0
    rate = None
    p = min(1.0, 1400.0 / total)
    saved = []
    for s in range(1, total + 1):
        dt = sps(s)
        elapsed += dt
        clock.adv(dt)
        rate = 1 / dt if rate is None else 0.3 / dt + 0.7 * rate
        if s in logs or s in evals or s == total or rng.random() < p:
            prog.bar(s, elapsed, rate)
        if extra:
            extra(s, prog)
        if s in logs:
            prog.write(str(logs[s]))
        if s in evals:
            if info:
                prog.plain(hf_info(clock, 3719, '***** Running Evaluation *****', info))
                prog.plain(hf_info(clock, 3721, f'  Num examples = {eval_batches * 8:,}', info))
                prog.plain(hf_info(clock, 3724, '  Batch size = 8', info))
            erate = rng.uniform(6, 30)
            prog.sub(tqdm_str(0, eval_batches, 0, None))
            shown = sorted(set([1, 2] + [rng.randint(1, eval_batches) for _ in range(min(8, eval_batches))]
                               + [eval_batches]))
            er = erate
            for b in shown:
                if b <= eval_batches:
                    er = 0.3 * erate * math.exp(rng.gauss(0, 0.1)) + 0.7 * er
                    prog.sub(tqdm_str(b, eval_batches, b / erate, er))
            et = eval_batches / erate
            elapsed += et
            clock.adv(et)
            prog.write(str(evals[s]), eval_prefix=True)
        if s in saves:
            st = rng.uniform(3, 40)
            elapsed += st
            clock.adv(st)
            if info:
                ck = f'{out_dir}/checkpoint-{s}'
                prog.plain(hf_info(clock, 3410, f'Saving model checkpoint to {ck}', info))
                prog.plain(hf_info(clock, 2797, f'Configuration saved in {ck}/config.json', info).replace('trainer.py', 'configuration_utils.py'))
                prog.plain(hf_info(clock, 2620, f'Model weights saved in {ck}/model.safetensors', info).replace('trainer.py', 'modeling_utils.py'))
                prog.plain(hf_info(clock, 2684, f'tokenizer config file saved in {ck}/tokenizer_config.json', info).replace('trainer.py', 'tokenization_utils_base.py'))
                saved.append(s)
                if save_limit and len(saved) > save_limit:
                    old = saved.pop(0)
                    prog.plain(hf_info(clock, 3512, f'Deleting older checkpoint [{out_dir}/checkpoint-{old}] due to args.save_total_limit', info))
    if info:
        prog.plain('')
        prog.plain('')
        prog.plain('Training completed. Do not forget to share your model on huggingface.co/models =)')
        prog.plain('')
        prog.plain('')
    return prog, elapsed


HF_WARN = [
    ['/usr/local/lib/python3.10/dist-packages/transformers/optimization.py:411: FutureWarning: This implementation of AdamW is deprecated and will be removed in a future version. Use the PyTorch implementation torch.optim.AdamW instead, or set `no_deprecation_warning=True` to disable this warning',
     '  warnings.warn('],
    ['`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`.'],
    ['/opt/conda/lib/python3.11/site-packages/torch/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In version 2.4 we will raise an exception if use_reentrant is not passed. use_reentrant=False is recommended, but if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more details on the differences between the two variants.',
     '  warnings.warn('],
    ['Detected kernel version 5.4.0, which is below the recommended minimum of 5.5.0; this can cause the process to hang. It is recommended to upgrade the kernel to the minimum version or higher.'],
    ['max_steps is given, it will override any value given in num_train_epochs'],
    ['/usr/local/lib/python3.10/dist-packages/accelerate/accelerator.py:432: FutureWarning: Passing the following arguments to `Accelerator` is deprecated and will be removed in version 1.0 of Accelerate: dict_keys([\'dispatch_batches\', \'split_batches\']). Please pass an `accelerate.DataLoaderConfiguration` instead: ',
     "dataloader_config = DataLoaderConfiguration(dispatch_batches=None, split_batches=False)",
     '  warnings.warn('],
]

HF_MODELS = {
    'sft': ['meta-llama/Llama-2-7b-hf', 'mistralai/Mistral-7B-v0.1', 'Qwen/Qwen2.5-1.5B', 'google/gemma-2b',
            'meta-llama/Meta-Llama-3-8B', 'TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T'],
    'cls': ['bert-base-uncased', 'roberta-base', 'distilbert-base-uncased', 'microsoft/deberta-v3-base'],
    'clm': ['gpt2', 'gpt2-medium', 'EleutherAI/pythia-410m', 'facebook/opt-350m'],
}


def hf_header(rng, clock, info, task, model, n_ex, epochs, bs, accum, world, total, nparams):
    lines = []
    if task == 'cls':
        arch = {'bert': 'BertForSequenceClassification', 'roberta': 'RobertaForSequenceClassification',
                'distilbert': 'DistilBertForSequenceClassification', 'microsoft': 'DebertaV2ForSequenceClassification'}
        a = arch[model.split('-')[0].split('/')[0]]
        heads = {"Bert": "['classifier.bias', 'classifier.weight']",
                 "Roberta": "['classifier.dense.bias', 'classifier.dense.weight', 'classifier.out_proj.bias', 'classifier.out_proj.weight']",
                 "DistilBert": "['classifier.bias', 'classifier.weight', 'pre_classifier.bias', 'pre_classifier.weight']",
                 "DebertaV2": "['classifier.bias', 'classifier.weight', 'pooler.dense.bias', 'pooler.dense.weight']"}
        lines.append(f'Some weights of {a} were not initialized from the model checkpoint at {model} and are newly initialized: '
                     f'{heads[a.replace("ForSequenceClassification", "")]}')
        lines.append('You should probably TRAIN this model on a down-stream task to be able to use it for predictions and inference.')
    if task == 'sft':
        shards = rng.choice([2, 3, 4])
        lines.append(f'Loading checkpoint shards: 100%|██████████| {shards}/{shards} [00:{rng.randint(3, 40):02d}<00:00,  {rng.uniform(1.1, 9):.2f}s/it]')
    lines.append(f'Map: 100%|██████████| {n_ex}/{n_ex} [00:{rng.randint(2, 59):02d}<00:00, {rng.uniform(800, 9000):.2f} examples/s]')
    for w in rng.sample(HF_WARN, rng.randint(0, 3)):
        lines.extend(w)
    if info:
        hdr = [(2078, '***** Running training *****'), (2079, f'  Num examples = {n_ex:,}'),
               (2080, f'  Num Epochs = {epochs:,}'), (2081, f'  Instantaneous batch size per device = {bs:,}'),
               (2084, f'  Total train batch size (w. parallel, distributed & accumulation) = {bs * accum * world:,}'),
               (2085, f'  Gradient Accumulation steps = {accum}'), (2086, f'  Total optimization steps = {total:,}'),
               (2087, f'  Number of trainable parameters = {nparams:,}')]
        for ln, msg in hdr:
            lines.append(hf_info(clock, ln, msg, info))
    return lines


def hf_epoch(e, full):
    return e if full else round(e, 2)


def gen_hf(rng, kind, sev, style):
    task = rng.choice(['sft', 'sft', 'sft', 'cls', 'clm'])
    ls = rng.choice([1, 5, 10, 10, 10, 20, 25, 50])
    n = rng.randint(100, {1: 700, 5: 900, 10: 1200, 20: 900, 25: 700, 50: 450}[ls])
    if kind == 'slow_drift':
        n = max(n, 280)
    total = n * ls + rng.randint(0, ls - 1)
    epochs = {'sft': rng.choice([1, 1, 2, 3]), 'cls': rng.choice([2, 3, 4, 5]), 'clm': 1}[task]
    if kind == 'slow_drift':
        epochs = 1
    spe = total / epochs
    steps = [(i + 1) * ls for i in range(n)]
    sig = rng.uniform(*{1: (0.05, 0.10), 5: (0.03, 0.06), 10: (0.02, 0.045), 20: (0.015, 0.035),
                        25: (0.015, 0.03), 50: (0.01, 0.025)}[ls]) * (1.25 if task == 'cls' else 1.0)
    if task == 'sft':
        L0 = rng.uniform(1.2, 2.6)
        Linf = L0 * rng.uniform(0.45, 0.72)
    elif task == 'cls':
        L0 = rng.choice([0.693, 1.0986, 1.609]) * rng.uniform(0.98, 1.04)
        Linf = rng.uniform(0.15, 0.35)
    else:
        L0 = rng.uniform(2.9, 3.9)
        Linf = L0 * rng.uniform(0.78, 0.9)
    base = decay(n, L0, Linf, rng.uniform(0.01, 0.06), rng.uniform(0.6, 1.3))
    drop = rng.uniform(0.72, 0.9)
    epf = []
    for s in steps:
        e = s / spe
        ei = int(e)
        epf.append(1.0 if ei == 0 else drop ** (ei - 1 + min(1.0, (e - ei) / 0.03)))
    L = Ser(rng, [b * f for b, f in zip(base, epf)], sig, cap=(0.78, 1.27))
    bumps(rng, L, 0.004)
    lora = task == 'sft' and rng.random() < 0.5
    gl = {'sft': logu(rng, 0.05, 0.4) if lora else logu(rng, 0.3, 1.5), 'cls': logu(rng, 1.5, 8.0),
          'clm': logu(rng, 0.2, 0.6)}[task]
    G = Ser(rng, gn_trend(n, gl, rng.uniform(1.5, 6), rng.uniform(0.03, 0.1), rng.uniform(1.0, 1.6)),
            rng.uniform(0.1, 0.25), cap=(0.55, 2.0))
    bumps(rng, G, 0.003, 1.8, 3.2)
    S = {'loss': L, 'gn': G, 'n': n, 'steps': steps, 'loss_ceiling': L0 * 1.3}
    has_gn = kind != 'healthy' or rng.random() < 0.85
    k = None
    notes = ''
    if kind != 'healthy':
        k = pick_k(rng, n, *onset_range(kind))
        notes = inject_generic(rng, kind, S, k, sev, nf=('persist', 'persist', 'grad_once', 'nan_then_zero'))
    # learning rate
    peak = {'sft': rng.choice([1e-5, 2e-5, 5e-5, 1e-4, 2e-4]) if not lora else rng.choice([1e-4, 2e-4, 3e-4]),
            'cls': rng.choice([1e-5, 2e-5, 3e-5, 5e-5]), 'clm': rng.choice([5e-5, 1e-4, 3e-4])}[task]
    warm = int(total * rng.choice([0.0, 0.03, 0.05, 0.1]))
    lrf = lr_fn(rng.choice(['linear', 'linear', 'cosine', 'constant']), total, peak, warm)
    full_epoch = rng.random() < 0.5
    # evaluation
    evals = {}
    do_eval = rng.random() < 0.75
    q = max(1, n // rng.randint(6, 25))
    gap = rng.uniform(1.0, 1.12)
    acc_hi = rng.uniform(0.82, 0.95)
    nan_from = S.get('nan_from')
    eval_batches = rng.choice([13, 32, 63, 125, 250])
    for i in range(n):
        if do_eval and (i + 1) % q == 0:
            s = steps[i]
            x = i / (n - 1)
            ev = L.trend[i] / epf[i] * gap * (1 + (0.04 * max(0.0, s / spe - 1.5) / max(1, epochs - 1.5) if epochs > 1 else 0))
            ev *= math.exp(rng.gauss(0, 0.006))
            if nan_from is not None and i >= nan_from:
                ev = NAN
            rt = eval_batches * rng.uniform(0.05, 0.2)
            d = {'eval_loss': f32(ev)}
            if task == 'cls':
                acc = NAN if not fin(ev) else clamp(lerp(0.5, acc_hi, 1 - math.exp(-x * 8)) + rng.gauss(0, 0.006), 0, 1)
                d['eval_accuracy'] = acc if not fin(acc) else round(acc, 4)
            d.update({'eval_runtime': round(rt, 4), 'eval_samples_per_second': round(eval_batches * 8 / rt, 3),
                      'eval_steps_per_second': round(eval_batches / rt, 3), 'epoch': hf_epoch(s / spe, full_epoch)})
            evals[s] = d
    logs = {}
    losses = L.vals()
    gns = G.vals()
    for i, s in enumerate(steps):
        lv = losses[i]
        d = {'loss': round(lv, 4) if fin(lv) else lv}
        if has_gn:
            d['grad_norm'] = f32(gns[i])
        d['learning_rate'] = lrf(s)
        d['epoch'] = hf_epoch(s / spe, full_epoch)
        logs[s] = d
    # stream
    clock = Clock(rng)
    info = rng.choice([None, None, 'bracket', 'example'])
    mode = 'raw' if rng.random() < 0.2 else 'lines'
    esc = rng.random() < 0.5
    model = rng.choice(HF_MODELS[task])
    bs = rng.choice([4, 8, 16, 32]) if task != 'sft' else rng.choice([1, 2, 4, 8])
    accum = rng.choice([1, 1, 2, 4, 8])
    world = rng.choice([1, 1, 2, 4, 8])
    n_ex = int(spe * bs * accum * world) - rng.randint(0, bs)
    nparams = {'sft': rng.choice([4194304, 8388608, 20971520]) if lora else rng.choice([1100048384, 1543714304, 6738415616]),
               'cls': rng.choice([109483778, 124647170, 66955010, 184423682]),
               'clm': rng.choice([124439808, 354823168, 405334016, 331196416])}[task]
    out = []
    if rng.random() < 0.5:
        out += [x + '\n' for x in wandb_header(rng, clock, rng.choice(['huggingface', 'sft', 'finetune', 'glue']))]
    out += [x + '\n' for x in hf_header(rng, clock, info, task, model, n_ex, epochs, bs, accum, world, total, nparams)]
    sps0 = {'sft': rng.uniform(0.8, 9.0), 'cls': rng.uniform(0.08, 0.6), 'clm': rng.uniform(0.3, 3.0)}[task]
    saves = set()
    save_every = q * ls * rng.choice([1, 2]) if do_eval else max(ls, total // rng.randint(3, 10))
    for s in range(save_every, total + 1, save_every):
        saves.add(s)
    out_dir = rng.choice(['./output', 'outputs', '/scratch/ckpt/run', './results', f'./{model.split("/")[-1]}-ft'])
    prog, elapsed = trainer_stream(rng, out, clock, total, logs, evals, saves,
                                   lambda s: sps0 * math.exp(rng.gauss(0, 0.04)), mode, esc, info,
                                   eval_batches, out_dir, save_limit=rng.choice([None, 2, 3]))
    fl = [x for x in losses if True]
    tl = sum(fl) / len(fl) if all(fin(x) for x in fl) else NAN
    summary = {'train_runtime': round(elapsed, 4), 'train_samples_per_second': round(n_ex * epochs / elapsed, 3),
               'train_steps_per_second': round(total / elapsed, 3), 'train_loss': tl, 'epoch': float(epochs)}
    prog.write(str(summary))
    prog.bar(total, elapsed, total / elapsed)
    prog.close()
    if rng.random() < 0.35:
        hist = {'train/loss': losses, 'train/learning_rate': [lrf(s) for s in steps], 'train/epoch': [s / spe for s in steps]}
        if has_gn:
            hist['train/grad_norm'] = gns
        summ = {'train/loss': logs[steps[-1]]['loss'], 'train/global_step': total, 'train_runtime': round(elapsed, 4)}
        out += [x + '\n' for x in wandb_footer(rng, hist, summ)]
    return {'text': ''.join(out), 'ext': 'log', 'fmt': 'hf', 'step_of': steps, 'span': (steps[0], steps[-1]),
            'k': k, 'notes': f'{task} model={model} logging_steps={ls} step implied as n*logging_steps; ' + (notes or f'healthy {task}, noise sigma {sig:.3f}')}


# =============================================================================
# TRL (GRPO / PPO)
# =============================================================================

GRPO_FUNCS = {
    'r1': [('accuracy_reward', 1.0, 'acc'), ('format_reward', 1.0, 'fmt')],
    'r1tag': [('accuracy_reward', 1.0, 'acc'), ('format_reward', 1.0, 'fmt'), ('tag_count_reward', 1.0, 'fmt')],
    'gsm': [('xmlcount_reward_func', 0.5, 'fmt'), ('soft_format_reward_func', 0.5, 'fmt'),
            ('strict_format_reward_func', 0.5, 'fmt'), ('int_reward_func', 0.5, 'fmt'),
            ('correctness_reward_func', 2.0, 'acc')],
    'single': [('accuracy_reward', 1.0, 'acc')],
}
RM_NAMES = ['Skywork-Reward-V2-Llama-3.1-8B', 'RM-Gemma-2B', 'ArmoRM-Llama3-8B-v0.1', 'reward_model']
POLICY_MODELS = ['Qwen/Qwen2.5-0.5B-Instruct', 'Qwen/Qwen2.5-1.5B-Instruct', 'Qwen/Qwen2.5-Math-1.5B',
                 'Qwen/Qwen2.5-7B-Instruct', 'meta-llama/Llama-3.2-1B-Instruct', 'Qwen/Qwen3-1.7B']


def grpo_build(rng, n, kind, version):
    """Series for one GRPO run.  Returns S with comps (reward components), kl, ent, len, gn."""
    early = kind not in ('healthy',)
    hack = kind == 'reward_hacking'
    if hack or (kind == 'healthy' and rng.random() < 0.15):
        rm = rng.choice(RM_NAMES)
        funcs = [(rm, None, 'rm')]
        weights = [1.0]
        if hack or rng.random() < 0.5:
            funcs.append(('accuracy_reward', 1.0, 'acc'))
            weights.append(0.0)
    else:
        funcs = GRPO_FUNCS[rng.choice(['r1', 'r1', 'r1tag', 'gsm', 'single'])]
        weights = [1.0] * len(funcs)
    comps = []
    starts = []
    for name, mx, role in funcs:
        mid = rng.uniform(0.04, 0.12) if early else rng.uniform(0.05, 0.35)
        if role == 'fmt':
            a, b = rng.uniform(0.02, 0.3), rng.uniform(0.8, 0.97)
            mid *= 0.6
        elif role == 'acc':
            a = rng.uniform(0.05, 0.4)
            b = min(0.88, a + rng.uniform(0.12, 0.45))
        else:
            a, b = rng.uniform(-2.0, 0.5), 0.0
            b = a + rng.uniform(1.5, 4.0)
        width = rng.uniform(0.02, 0.06) if early else rng.uniform(0.03, 0.12)
        if role == 'rm':
            tr = rise(n, a, b, mid, width)
            sig = rng.uniform(0.12, 0.35)
        else:
            tr = [mx * v for v in rise(n, a, b, mid, width)]
            sig = mx * rng.uniform(0.025, 0.07)
        comps.append({'name': name, 'max': mx, 'role': role, 'ser': Ser(rng, tr, sig, mode='add', df=6),
                      'spread': rng.uniform(0.6, 0.9)})
        starts.append(tr[0])
    beta = rng.choice([0.04, 0.04, 0.02, 0.01, 0.001])
    if kind == 'healthy' and version == '0.19' and rng.random() < 0.15:
        beta = 0.0
    tau = rng.uniform(0.02, 0.08) if early else rng.uniform(0.03, 0.25)
    kset = logu(rng, 0.0006, 0.03)
    late = rng.uniform(1.0, 1.4)
    kl_tr = [kset * (1 - math.exp(-(i / (n - 1)) / tau)) * (1 + (late - 1) * i / (n - 1)) for i in range(n)]
    K = Ser(rng, kl_tr, rng.uniform(0.12, 0.28), cap=(0.5, 1.9))
    K.ovr[0] = 0.0
    e0 = rng.uniform(0.25, 1.2)
    edrop = rng.uniform(0.05, 0.33)
    E = Ser(rng, [e0 * (1 - edrop * (i / (n - 1)) ** rng.uniform(0.7, 1.3)) for i in range(n)], rng.uniform(0.03, 0.07))
    maxlen = rng.choice([256, 512, 1024, 1024, 2048, 4096])
    l0 = maxlen * rng.uniform(0.25, 0.55)
    dip = rng.uniform(0.75, 1.0)
    lgrow = rng.uniform(0.95, 1.45)
    len_tr = []
    for i in range(n):
        x = i / (n - 1)
        f = lerp(1.0, dip, min(1.0, x / 0.15)) if x < 0.15 else lerp(dip, lgrow, (x - 0.15) / 0.85)
        len_tr.append(l0 * f)
    Ln = Ser(rng, len_tr, rng.uniform(0.04, 0.09))
    gl = logu(rng, 0.03, 0.6)
    G = Ser(rng, gn_trend(n, gl, rng.uniform(0.7, 2.0), 0.05), rng.uniform(0.18, 0.35), cap=(0.45, 2.4))
    S = {'n': n, 'comps': comps, 'weights': weights, 'kl': K, 'ent': E, 'len': Ln, 'gn': G, 'maxlen': maxlen,
         'beta': beta, 'reward_start': sum(w * s for w, s in zip(weights, starts)), 'pin_from': None,
         'nan_from': None, 'eacc': None}
    return S


def grpo_inject(rng, kind, S, k, sev, steps):
    n = S['n']
    if kind in ('kl_spike', 'kl_runaway', 'entropy_collapse'):
        note = inject_generic(rng, kind, S, k, sev).replace('ent falls', 'entropy falls', 1)
        if kind == 'entropy_collapse':
            for c in S['comps']:
                c['spread_after'] = (k, rng.uniform(0.3, 0.6))
        if kind == 'kl_spike':
            for d in range(3):
                S['gn'].trend[min(n - 1, k + d)] *= rng.uniform(1.3, 2.0)
        return note
    if kind == 'slow_drift':
        frac = lerp(0.2, 0.55, sev) * rng.uniform(0.95, 1.05)
        p = rng.uniform(0.8, 1.3)
        tot0 = S['reward_start']
        lvl = 0.0
        for c, w in zip(S['comps'], S['weights']):
            R = c['ser']
            lv = R.trend[k]
            g = lv - R.trend[0]
            lvl += w * lv
            for j in range(k, n):
                R.trend[j] = lv - frac * g * ((j - k + 1) / (n - k)) ** p
        return f'reward loses {frac * 100:.0f}% of its gain ({tot0:.3g} -> {lvl:.3g}) over the last {n - k} logged points'
    if kind == 'nonfinite':
        for j in range(k, n):
            S['gn'].ovr[j] = NAN
            S['kl'].ovr[j] = NAN
            S['ent'].ovr[j] = NAN
            for c in S['comps']:
                c['ser'].ovr[j] = 0.0 if c['role'] != 'rm' else -9.5 + rng.gauss(0, 0.05)
            S['len'].ovr[j] = float(S['maxlen'])
        S['nan_from'] = k
        return 'grad_norm/kl/entropy NaN from onset (loss NaN), rewards collapse to 0, completions hit max length'
    if kind == 'reward_saturation':
        A = rng.randint(8, 25)
        for c in S['comps']:
            R = c['ser']
            mx = c['max'] if c['max'] else R.trend[k] + 1.0
            for j in range(max(1, k - A), k):
                t = (j - (k - A)) / A
                R.trend[j] = lerp(R.trend[j], mx * 0.97, t ** 1.5)
                R.quiet(j, 1 - 0.7 * t)
            for j in range(k, n):
                R.ovr[j] = mx
        S['pin_from'] = k
        S['tiny_std'] = rng.random() < 0.35
        gf = rng.uniform(0.08, 0.3)
        for j in range(k, n):
            S['gn'].trend[j] *= gf
        mx = sum(w * (c['max'] or 0) for c, w in zip(S['comps'], S['weights']))
        return f'reward pinned at its max {mx:g} with reward_std ~0 from onset (approach over {A} points); grad norm x{gf:.2f}'
    if kind == 'reward_hacking':
        variant = S['hack_variant']
        rm = S['comps'][0]['ser']
        extra = rng.uniform(0.8, 2.5)
        for j in range(k, n):
            t = (j - k) / (n - 1 - k)
            rm.trend[j] += extra * t
        kf = rng.uniform(1.3, 2.2)
        for j in range(k, n):
            S['kl'].trend[j] *= lerp(1.0, kf, (j - k) / (n - 1 - k))
        accf = math.exp(lerp(math.log(0.6), math.log(0.22), sev))
        for c in S['comps'][1:]:
            R = c['ser']
            lv = R.trend[k]
            for j in range(k, n):
                R.trend[j] = lv * lerp(1.0, accf, min(1.0, (j - k) / (0.7 * (n - 1 - k))))
        if variant == 'length':
            F = lerp(2.6, 6.0, sev) * rng.uniform(0.9, 1.1)
            ef = rng.uniform(0.45, 0.68)
            ln = rng.randint(max(10, (n - k) // 3), max(11, n - k - 3))
            for j in range(k, n):
                t = min(1.0, (j - k) / ln)
                S['len'].trend[j] *= geo(1.0, F, t)
                S['ent'].trend[j] *= lerp(1.0, ef, t)
            S['maxlen'] = max(S['maxlen'], int(S['len'].trend[k] * F * 1.15 // 256 + 1) * 256)
            return (f'RM reward keeps rising (+{extra:.1f}) while completion length balloons x{F:.1f} over {ln} points '
                    f'and entropy falls to {ef * 100:.0f}%; accuracy (weight 0) falls to {accf * 100:.0f}%')
        S['eacc_fall'] = (k, accf)
        return (f'RM reward keeps rising (+{extra:.1f}) while held-out eval accuracy falls to {accf * 100:.0f}% of its peak '
                f'(train accuracy, weight 0, falls too)')
    raise ValueError(kind)


def grpo_rows(rng, S, steps, total, version, lr, spe, full_epoch, batch):
    n = S['n']
    comps = S['comps']
    K = S['kl'].vals()
    E = S['ent'].vals()
    Lm = S['len'].vals()
    G = S['gn'].vals()
    maxlen = S['maxlen']
    beta = S['beta']
    adv = rng.choice([0.0, 0.0, logu(rng, 1e-4, 3e-3), logu(rng, 0.004, 0.04)])
    mu = rng.choice([1, 1, 1, 2, 4])
    pin = S['pin_from']
    nanf = S['nan_from']
    gsize = rng.choice([4, 8, 8, 16])
    tokens = 0
    rows = []
    for i, s in enumerate(steps):
        cv = []
        for c in comps:
            v = c['ser'].val(i)
            if c['max']:
                v = clamp(v, 0.0, c['max'])
                if c['role'] != 'acc' or True:
                    # rewards are means of discrete per-sample scores
                    q = c['max'] / batch
                    v = round(v / q) * q
            cv.append(v)
        rew = sum(w * v for w, v in zip(S['weights'], cv))
        pinned = pin is not None and i >= pin
        cstd = []
        for c, v in zip(comps, cv):
            if pinned:
                cstd.append(0.0)
            elif c['max']:
                p = clamp(v / c['max'], 0, 1)
                cstd.append(c['max'] * math.sqrt(p * (1 - p)) * math.exp(rng.gauss(0, 0.05)))
            else:
                cstd.append(abs(rng.gauss(1.0, 0.15)) * (0.3 if nanf is not None and i >= nanf else 1.0))
        spread = 1.0
        for c in comps:
            if 'spread_after' in c and i >= c['spread_after'][0]:
                kk, f = c['spread_after']
                spread = lerp(1.0, f, min(1.0, (i - kk) / 20))
        if pinned:
            rstd = 0.0 if not S.get('tiny_std') or rng.random() < 0.6 else rng.choice([0.0078125, 0.015625, 0.0110485])
            fz = 1.0
        elif nanf is not None and i >= nanf:
            rstd, fz = 0.0, 1.0
        else:
            var = sum((w * sd) ** 2 for w, sd in zip(S['weights'], cstd))
            rstd = math.sqrt(var) * comps[0]['spread'] * spread * math.exp(rng.gauss(0, 0.06))
            ai = next((j for j, c in enumerate(comps) if c['role'] == 'acc'), 0)
            pm = clamp(cv[ai] / comps[ai]['max'], 0, 1) if comps[ai]['max'] else 0.5
            fz = clamp(pm ** gsize + (1 - pm) ** gsize + rng.gauss(0, 0.04) + (1 - spread) * 0.5, 0, 1)
            fz = round(fz * 16) / 16
        kl = K[i]
        if beta == 0.0:
            loss = rng.gauss(0, adv) if adv else 0.0
        else:
            loss = beta * kl + (rng.gauss(0, adv) if adv else 0.0)
        if nanf is not None and i >= nanf:
            loss = NAN
        ml = Lm[i] if fin(Lm[i]) else maxlen
        ml = min(ml, maxlen)
        clipped = clamp(1 / (1 + math.exp(-(ml / maxlen - 0.8) * 14)) + rng.gauss(0, 0.01), 0, 1)
        if nanf is not None and i >= nanf:
            clipped = 1.0
        tokens += int(batch * (ml + rng.uniform(80, 300)))
        d = {'loss': round(loss, 4) if fin(loss) else loss, 'grad_norm': f32(G[i]), 'learning_rate': lr(s)}
        if version == '0.14':
            d['completion_length'] = f32(ml)
            for c, v in zip(comps, cv):
                d[f'rewards/{c["name"]}'] = f32(v)
        else:
            d['num_tokens'] = float(tokens) if version == '0.19' else tokens
            d['completions/mean_length'] = f32(ml)
            cr = round(clipped * batch) / batch
            mx = float(maxlen) if cr > 0 else float(min(maxlen - 1, int(ml * rng.uniform(1.6, 3.2))))
            d['completions/min_length'] = float(int(ml * rng.uniform(0.15, 0.5))) if cr < 1 else float(maxlen)
            d['completions/max_length'] = mx
            d['completions/clipped_ratio'] = cr
            mt = ml * (1 - 0.5 * cr)
            d['completions/mean_terminated_length'] = f32(mt) if cr < 1 else 0.0
            d['completions/min_terminated_length'] = d['completions/min_length'] if cr < 1 else 0.0
            d['completions/max_terminated_length'] = (mx if cr == 0 else float(min(maxlen - 1, int(mt * rng.uniform(1.3, 2.2))))) if cr < 1 else 0.0
            for c, v, sd in zip(comps, cv, cstd):
                d[f'rewards/{c["name"]}/mean'] = f32(v)
                d[f'rewards/{c["name"]}/std'] = f32(sd)
        d['reward'] = f32(rew)
        d['reward_std'] = f32(rstd)
        if version == '0.19':
            d['frac_reward_zero_std'] = fz
        if beta != 0.0:
            d['kl'] = f32(kl) if fin(kl) else kl
        if version == '0.19':
            d['entropy'] = f32(E[i]) if fin(E[i]) else E[i]
        if version in ('0.16', '0.19'):
            cr = (lambda: f32(abs(rng.gauss(0, 0.002)))) if mu > 1 else (lambda: 0.0)
            if version == '0.16':
                d['clip_ratio'] = cr()
            else:
                d['clip_ratio/low_mean'] = cr()
                d['clip_ratio/low_min'] = 0.0
                d['clip_ratio/high_mean'] = cr()
                d['clip_ratio/high_max'] = cr()
                d['clip_ratio/region_mean'] = cr()
        d['epoch'] = hf_epoch(s / spe, full_epoch)
        rows.append(d)
    return rows


def grpo_eval_rows(rng, S, steps, k_eval, spe, full_epoch, version, hack_eval):
    """Eval dicts at steps[i] for i in k_eval; held-out accuracy may fall (hacking)."""
    out = {}
    comps = S['comps']
    n = S['n']
    peak_acc = rng.uniform(0.35, 0.75)
    fall = S.get('eacc_fall')
    for i in k_eval:
        s = steps[i]
        d = {'eval_loss': round(S['beta'] * S['kl'].trend[i] + rng.gauss(0, 1e-5), 6) if S['beta'] else 0.0}
        rt = rng.uniform(40, 400)
        if version != '0.14':
            d['eval_completions/mean_length'] = f32(S['len'].trend[i] * rng.uniform(0.95, 1.05))
        tot = 0.0
        for c, w in zip(comps, S['weights']):
            if c['role'] == 'acc' and hack_eval:
                kk, f = fall
                base = peak_acc * min(1.0, 0.55 + 0.45 * (i / max(1, kk)))
                v = base if i < kk else peak_acc * lerp(1.0, f, min(1.0, (i - kk) / (0.7 * (n - 1 - kk))))
                v = clamp(v + rng.gauss(0, 0.012), 0, 1)
            else:
                v = c['ser'].trend[i] * rng.uniform(0.93, 1.0)
                if c['max']:
                    v = clamp(v, 0, c['max'])
            tot += w * v
            key = f'eval_rewards/{c["name"]}' + ('' if version == '0.14' else '/mean')
            d[key] = f32(v)
        d['eval_reward'] = f32(tot)
        d['eval_reward_std'] = f32(abs(rng.gauss(0.3, 0.05)))
        if S['beta']:
            d['eval_kl'] = f32(S['kl'].trend[i])
        d['eval_runtime'] = round(rt, 4)
        d['eval_samples_per_second'] = round(rng.choice([100, 200, 500]) / rt, 3)
        d['eval_steps_per_second'] = round(rng.choice([13, 25, 63]) / rt, 3)
        d['epoch'] = hf_epoch(s / spe, full_epoch)
        out[s] = d
    return out


def ppo_build_rows(rng, kind, sev, n, steps, lr, spe, full_epoch):
    """TRL >= 0.12 PPOTrainer metrics (objective/kl is summed over response tokens)."""
    early = kind != 'healthy'
    kset = rng.uniform(2.0, 14.0)
    tau = rng.uniform(0.03, 0.08) if early else rng.uniform(0.05, 0.3)
    K = Ser(rng, [kset * (1 - math.exp(-(i / (n - 1)) / tau)) for i in range(n)], rng.uniform(0.1, 0.22), cap=(0.55, 1.8))
    K.ovr[0] = 0.0
    e0 = rng.uniform(40, 160)
    edrop = rng.uniform(0.1, 0.3)
    E = Ser(rng, [e0 * (1 - edrop * (i / (n - 1))) for i in range(n)], rng.uniform(0.03, 0.06))
    sc0 = rng.uniform(-3, 0)
    SC = Ser(rng, rise(n, sc0, sc0 + rng.uniform(1.5, 5), rng.uniform(0.05, 0.3), rng.uniform(0.04, 0.1)), rng.uniform(0.1, 0.3), mode='add')
    AK = Ser(rng, [logu(rng, 0.002, 0.004)] * n, 0.25, cap=(0.4, 2.5))
    S = {'n': n, 'kl': K, 'ent': E}
    k = None
    note = ''
    if kind != 'healthy':
        k = pick_k(rng, n, *onset_range(kind))
        note = inject_generic(rng, kind, S, k, sev)
    kl_coef = rng.choice([0.05, 0.05, 0.02, 0.1])
    rows = []
    ep = 0
    bs = rng.choice([64, 128, 256, 512])
    tokens_per_resp = rng.uniform(40, 60)
    for i, s in enumerate(steps):
        ep += bs
        kl = K.val(i)
        sc = SC.val(i)
        ent = E.val(i)
        d = {'eps': int(rng.uniform(3, 12)), 'objective/kl': f32(kl), 'objective/entropy': f32(ent),
             'objective/non_score_reward': f32(-kl_coef * kl), 'objective/rlhf_reward': f32(sc - kl_coef * kl),
             'objective/scores': f32(sc), 'policy/approxkl_avg': f32(AK.val(i) if i else 0.0),
             'policy/clipfrac_avg': f32(abs(rng.gauss(0.02, 0.01)) if i else 0.0),
             'loss/policy_avg': f32(rng.gauss(-0.005, 0.01)), 'loss/value_avg': f32(abs(rng.gauss(0.3, 0.1)) * (3 if i < 5 else 1)),
             'val/clipfrac_avg': f32(abs(rng.gauss(0.05, 0.03))), 'policy/entropy_avg': f32(ent / tokens_per_resp),
             'val/ratio': f32(1 + rng.gauss(0, 0.003)), 'val/ratio_var': f32(abs(rng.gauss(2e-5, 1e-5))),
             'val/num_eos_tokens': rng.randint(int(bs * 0.6), bs), 'lr': lr(s), 'episode': ep,
             'epoch': hf_epoch(s / spe, full_epoch)}
        rows.append(d)
    return rows, k, note, {'kl_coef': kl_coef}


RICH_Q = ['SUBREDDIT: r/relationships TITLE: My (24F) boyfriend (26M) forgot', 'SUBREDDIT: r/AskReddit TITLE: What is the',
          'SUBREDDIT: r/personalfinance TITLE: Should I pay off', 'SUBREDDIT: r/tifu TITLE: TIFU by locking myself',
          'Question: Natalia sold clips to 48 of her friends', 'Human: How do I make a good cup of coffee? Assistant:']
RICH_R = ['I (24F) feel ignored by my boyfriend after he forgot our', 'Asking whether to prioritize debt or savings when',
          'locked myself out while the oven was on and had to call', 'Natalia sold 48 clips in April and half as many in May',
          'Use freshly ground beans, water just off the boil and a', 'The best way is to start small and build a habit<|endoftext|>']


def rich_table(rng, rows=4):
    w1, w2 = 30, 30
    top = '┏' + '━' * (w1 + 2) + '┳' + '━' * (w2 + 2) + '┳' + '━' * 9 + '┓'
    hdr = '┃ ' + 'query'.ljust(w1) + ' ┃ ' + 'model response'.ljust(w2) + ' ┃ ' + ' score'.rjust(7) + ' ┃'
    sep = '┡' + '━' * (w1 + 2) + '╇' + '━' * (w2 + 2) + '╇' + '━' * 9 + '┩'
    out = [top, hdr, sep]
    for _ in range(rows):
        q = rng.choice(RICH_Q)
        r = rng.choice(RICH_R)
        for li in range(2):
            qq = q[li * w1:(li + 1) * w1]
            rr = r[li * w2:(li + 1) * w2]
            sc = f'{rng.gauss(0.5, 1.5):.4f}' if li == 0 else ''
            out.append('│ ' + qq.ljust(w1) + ' │ ' + rr.ljust(w2) + ' │ ' + sc.rjust(7) + ' │')
    out.append('└' + '─' * (w1 + 2) + '┴' + '─' * (w2 + 2) + '┴' + '─' * 9 + '┘')
    return out


def gen_trl(rng, kind, sev, style):
    ppo_ok = kind in ('healthy', 'kl_spike', 'kl_runaway', 'entropy_collapse')
    r = rng.random()
    if ppo_ok and r < 0.16:
        algo = 'ppo'
    else:
        algo = 'grpo'
    jsonl = algo == 'grpo' and rng.random() < 0.3
    ls = 1 if algo == 'ppo' else rng.choice([1, 1, 1, 1, 2, 5, 10])
    n = rng.randint(100, 900 if ls == 1 else 400)
    if kind in ('slow_drift', 'kl_runaway', 'reward_hacking'):
        n = max(n, 200)
    total = n * ls + rng.randint(0, ls - 1)
    steps = [(i + 1) * ls for i in range(n)]
    epochs = rng.choice([1, 1, 1, 2])
    spe = total / epochs
    full_epoch = rng.random() < 0.6
    peak = rng.choice([1e-6, 2e-6, 3e-6, 5e-7, 1e-5]) if algo == 'grpo' else rng.choice([3e-6, 1e-6, 5e-6])
    warm = int(total * rng.choice([0.0, 0.0, 0.03, 0.1]))
    lr = lr_fn(rng.choice(['constant', 'linear', 'cosine']), total, peak, warm)
    model = rng.choice(POLICY_MODELS)
    k = None
    note = ''
    evals = {}
    if algo == 'grpo':
        version = rng.choice(['0.14', '0.16', '0.19', '0.19', '0.19'])
        if kind in ('entropy_collapse', 'reward_saturation') or (kind == 'reward_hacking'):
            version = '0.19'
        S = grpo_build(rng, n, kind, version)
        if kind == 'reward_hacking':
            S['hack_variant'] = rng.choice(['length', 'eval', 'eval']) if version == '0.19' else 'eval'
        if kind in ('kl_spike', 'kl_runaway') and S['beta'] == 0.0:
            S['beta'] = 0.04
        if kind != 'healthy':
            k = pick_k(rng, n, *onset_range(kind))
            note = grpo_inject(rng, kind, S, k, sev, steps)
        batch = rng.choice([16, 32, 64, 128, 256])
        rows = grpo_rows(rng, S, steps, total, version, lr, spe, full_epoch, batch)
        hack_eval = kind == 'reward_hacking' and S['hack_variant'] == 'eval'
        if hack_eval or rng.random() < 0.3:
            q = max(1, n // rng.randint(10, 20))
            evals = grpo_eval_rows(rng, S, steps, [i for i in range(n) if (i + 1) % q == 0], spe, full_epoch,
                                   version, hack_eval)
        desc = f'GRPO trl=={version}.x beta={S["beta"]} rewards=[{", ".join(c["name"] for c in S["comps"])}]'
        if not note:
            note = (f'healthy: reward {S["reward_start"]:.2f}->{sum(w * c["ser"].trend[-1] for w, c in zip(S["weights"], S["comps"])):.2f}'
                    f', kl 0 -> ~{S["kl"].trend[-1]:.2g}, entropy -{(1 - S["ent"].trend[-1] / S["ent"].trend[0]) * 100:.0f}%')
    else:
        rows, k, note, meta = ppo_build_rows(rng, kind, sev, n, steps, lr, spe, full_epoch)
        desc = f'PPO (trl>=0.12 PPOTrainer, objective/kl summed over tokens) kl_coef={meta["kl_coef"]}'
        if not note:
            note = 'healthy: objective/kl 0 -> settled, scores rise then plateau'
    logs = {s: d for s, d in zip(steps, rows)}
    clock = Clock(rng)
    if jsonl:
        lines = []
        for s in steps:
            lines.append(json.dumps({**logs[s], 'step': s}))
            if s in evals:
                lines.append(json.dumps({**evals[s], 'step': s}))
        rt = (clock.unix() % 1000) + total * rng.uniform(10, 60)
        lines.append(json.dumps({'train_runtime': round(rt, 4), 'train_samples_per_second': round(rng.uniform(0.5, 5), 3),
                                 'train_steps_per_second': round(total / rt, 3), 'total_flos': 0.0,
                                 'train_loss': rows[-1]['loss'] if 'loss' in rows[-1] else 0.0,
                                 'epoch': float(epochs), 'step': steps[-1]}))
        return {'text': '\n'.join(lines) + '\n', 'ext': 'jsonl', 'fmt': 'trl-jsonl', 'step_of': steps,
                'span': (steps[0], steps[-1]), 'k': k, 'notes': f'{desc} model={model} trainer_state log_history lines; {note}'}
    out = []
    vllm = algo == 'grpo' and rng.random() < 0.45
    if rng.random() < 0.5:
        out += [x + '\n' for x in wandb_header(rng, clock, rng.choice(['grpo', 'rlhf', 'r1-zero', 'open-r1']))]
    if vllm:
        t = clock.t.strftime('%m-%d %H:%M:%S')
        out += [f'INFO {t} [__init__.py:239] Automatically detected platform cuda.\n',
                f'INFO {t} [config.py:717] This model supports multiple tasks: {{\'generate\', \'embed\', \'classify\', \'score\', \'reward\'}}. Defaulting to \'generate\'.\n',
                f'INFO {t} [model_runner.py:1110] Starting to load model {model}...\n',
                f'INFO {t} [model_runner.py:1115] Loading model weights took {rng.uniform(0.9, 15):.4f} GB\n',
                f'INFO {t} [worker.py:267] Memory profiling takes {rng.uniform(1, 5):.2f} seconds\n',
                f'INFO {t} [llm_engine.py:435] init engine (profile, create kv cache, warmup model) took {rng.uniform(10, 60):.2f} seconds\n']
    if algo == 'ppo':
        out.append('===training policy===\n')
    for w in rng.sample(HF_WARN, rng.randint(0, 2)):
        out += [x + '\n' for x in w]
    gen_rate = rng.uniform(4, 40)
    npr = rng.choice([64, 128, 256, 512])
    tables = set(rng.sample(range(1, total), min(3, total - 1))) if algo == 'ppo' else set()

    def extra(s, prog):
        if vllm:
            et = npr / gen_rate * rng.uniform(0.8, 1.2)
            prog.plain(f'Processed prompts: 100%|██████████| {npr}/{npr} [{fmt_interval(et)}<00:00, {npr / et:5.2f}it/s, '
                       f'est. speed input: {rng.uniform(500, 4000):.2f} toks/s, output: {rng.uniform(1500, 9000):.2f} toks/s]')
        if s in tables:
            for x in rich_table(rng):
                prog.plain(x)

    sps0 = rng.uniform(8, 90)
    mode = 'raw' if rng.random() < 0.15 else 'lines'
    prog, elapsed = trainer_stream(rng, out, clock, total, logs, evals, set(), lambda s: sps0 * math.exp(rng.gauss(0, 0.08)),
                                   mode, rng.random() < 0.5, None, rng.choice([13, 25, 63]), './out', extra=extra)
    summary = {'train_runtime': round(elapsed, 4), 'train_samples_per_second': round(npr * total / elapsed, 3),
               'train_steps_per_second': round(total / elapsed, 3), 'train_loss': rows[-1].get('loss', 0.0) if algo == 'grpo' else 0.0,
               'epoch': float(epochs)}
    if algo == 'grpo':
        prog.write(str(summary))
    prog.bar(total, elapsed, total / elapsed)
    prog.close()
    return {'text': ''.join(out), 'ext': 'log', 'fmt': 'trl-dict', 'step_of': steps, 'span': (steps[0], steps[-1]),
            'k': k, 'notes': f'{desc} model={model} logging_steps={ls} step implied as n-th metrics dict*logging_steps; {note}'}


# =============================================================================
# PyTorch Lightning CSVLogger metrics.csv
# =============================================================================

def gen_lightning(rng, kind, sev, style):
    task = rng.choice(['cifar', 'cifar', 'imagenet_ft', 'tabular', 'seg', 'charlm'])
    v2 = rng.random() < 0.7
    every = rng.choice([10, 20, 50, 50, 50, 100])
    spe = rng.choice({'cifar': [98, 196, 391], 'imagenet_ft': [1251, 2502, 5005], 'tabular': [40, 79, 157],
                      'seg': [143, 286, 572], 'charlm': [500, 1000, 2000]}[task])
    n_target = rng.randint(100, 3000)
    epochs = max(2, min(300, -(-n_target * every // spe)))
    if kind == 'slow_drift':
        epochs = max(epochs, 4)
    total = epochs * spe
    tsteps = list(range(every - 1, total, every))
    n = len(tsteps)
    if n < 100:
        epochs = -(-100 * every // spe) + 1
        total = epochs * spe
        tsteps = list(range(every - 1, total, every))
        n = len(tsteps)
    opt = rng.choice(['AdamW', 'AdamW', 'SGD', 'Adam'])
    peak = {'AdamW': rng.choice([1e-3, 3e-4, 5e-4, 2e-3]), 'Adam': rng.choice([1e-3, 3e-4]),
            'SGD': rng.choice([0.1, 0.05, 0.01])}[opt]
    sched = rng.choice(['cosine', 'step', 'onecycle', 'constant']) if task != 'charlm' else rng.choice(['cosine', 'constant'])
    if kind == 'slow_drift' and sched == 'step':
        sched = 'cosine'
    ms = sorted(int(total * f) for f in rng.sample([0.3, 0.5, 0.6, 0.75, 0.9], 2)) if sched == 'step' else ()
    warm = int(total * rng.choice([0.0, 0.02, 0.05])) if sched != 'onecycle' else int(total * 0.3)
    lrf = lr_fn('step' if sched == 'step' else 'cosine' if sched in ('cosine', 'onecycle') else 'constant', total, peak, warm,
                milestones=ms)
    L0, Linf, sig = {'cifar': (2.3, rng.uniform(0.05, 0.35), rng.uniform(0.04, 0.09)),
                     'imagenet_ft': (rng.uniform(2.0, 4.0), rng.uniform(0.5, 1.2), rng.uniform(0.03, 0.06)),
                     'tabular': (rng.uniform(0.8, 1.5), rng.uniform(0.15, 0.4), rng.uniform(0.035, 0.075)),
                     'seg': (rng.uniform(0.7, 1.1), rng.uniform(0.1, 0.25), rng.uniform(0.04, 0.08)),
                     'charlm': (rng.uniform(4.0, 4.4), rng.uniform(1.0, 1.5), rng.uniform(0.015, 0.035))}[task]
    base = decay(n, L0, Linf, rng.uniform(0.01, 0.08), rng.uniform(0.6, 1.4))
    drop = [1.0] * n
    for m in ms:
        f = rng.uniform(0.55, 0.8)
        for i, s in enumerate(tsteps):
            if s >= m:
                drop[i] *= lerp(1.0, f, min(1.0, (s - m) / (0.02 * total + 1)))
    # keep the end level where decay() put it: rescale the post-milestone part
    L = Ser(rng, [b * d for b, d in zip(base, drop)], sig, cap=(0.78, 1.27))
    bumps(rng, L, 0.004)
    gl = logu(rng, 0.5, 6.0)
    G = Ser(rng, gn_trend(n, gl, rng.uniform(1.5, 5), 0.05, rng.uniform(1.0, 1.8)), rng.uniform(0.1, 0.25), cap=(0.55, 2.0))
    S = {'loss': L, 'gn': G, 'n': n, 'steps': tsteps, 'loss_ceiling': L0 * 1.2}
    track_gn = kind in ('grad_explosion', 'grad_vanishing') or rng.random() < 0.4
    k = None
    note = ''
    if kind != 'healthy':
        k = pick_k(rng, n, *onset_range(kind))
        note = inject_generic(rng, kind, S, k, sev, nf=('persist', 'persist', 'inf_loss') if not track_gn else
                              ('persist', 'inf_loss', 'grad_once'))
    lv = L.vals()
    gv = G.vals()
    gkey = 'grad_2.0_norm_total' if rng.random() < 0.6 else 'train/grad_norm'
    loss_key = rng.choice(['train_loss', 'train_loss', 'train/loss', 'loss'])
    step_epoch = rng.random() < 0.3 and loss_key == 'train_loss'
    if step_epoch:
        loss_key = 'train_loss_step'
    acc_key = {'cifar': 'acc', 'imagenet_ft': 'acc', 'seg': 'dice', 'tabular': None, 'charlm': None}[task]
    vprefix = 'val_' if loss_key in ('train_loss', 'train_loss_step', 'loss') else 'val/'
    lr_key = f'lr-{opt}'
    lrmon = rng.random() < 0.8
    rows = []
    gap = rng.uniform(0.98, 1.15)
    nanf = S.get('nan_from')
    ai = 0
    # mean training loss per epoch for *_epoch rows
    for e in range(epochs):
        e_end = (e + 1) * spe - 1
        while ai < n and tsteps[ai] <= e_end:
            s = tsteps[ai]
            if lrmon:
                rows.append({lr_key: lrf(s), 'step': s})
            r = {loss_key: f32(lv[ai]) if fin(lv[ai]) else lv[ai]}
            if acc_key and loss_key != 'loss':
                a = (acc_of(lv[ai]) if task != 'seg' else clamp(1 - lv[ai], 0, 1)) if fin(lv[ai]) else NAN
                r[loss_key.replace('loss', acc_key)] = f32(a) if fin(a) else a
            if track_gn:
                r[gkey] = f32(gv[ai]) if fin(gv[ai]) else gv[ai]
            r['epoch'] = e
            r['step'] = s
            rows.append(r)
            ai += 1
        # validation at epoch end
        idx = min(n - 1, max(0, ai - 1))
        tr = L.trend[idx] / max(1e-9, 1.0)
        vl = tr * gap * (1 + rng.gauss(0, 0.008)) * (1 + 0.03 * max(0.0, e / epochs - 0.7))
        if nanf is not None and idx >= nanf:
            vl = NAN
        vr = {f'{vprefix}loss': f32(vl) if fin(vl) else vl}
        if acc_key:
            va = clamp((acc_of(vl) if task != 'seg' else 1 - vl) + rng.gauss(0, 0.004), 0, 1) if fin(vl) else 0.1
            vr[f'{vprefix}{acc_key}'] = f32(va)
        vr['epoch'] = e
        vr['step'] = e_end
        rows.append(vr)
        if step_epoch:
            lo = [lv[i] for i in range(n) if e * spe <= tsteps[i] <= e_end]
            if lo:
                m = sum(lo) / len(lo)
                rows.append({'train_loss_epoch': f32(m) if fin(m) else m, 'epoch': e, 'step': e_end})
    # columns: v2 sorts, v1 keeps first-seen order
    keys = []
    for r in rows:
        for kk in r:
            if kk not in keys:
                keys.append(kk)
    if v2:
        keys.sort()

    def cell(v):
        if v is None:
            return ''
        if isinstance(v, float):
            return repr(v) if fin(v) else ('nan' if v != v else ('inf' if v > 0 else '-inf'))
        return str(v)

    text = ','.join(keys) + '\n' + ''.join(','.join(cell(r.get(kk)) for kk in keys) + '\n' for r in rows)
    desc = f'{task} {opt} sched={sched} log_every_n_steps={every} steps/epoch={spe} lightning {"2.x" if v2 else "1.x"}'
    if not note:
        note = f'healthy: loss {L0:.2f}->{base[-1] * drop[-1]:.2f}, noise sigma {sig:.3f}' + (
            f', LR step drops at {list(ms)}' if ms else '')
    return {'text': text, 'ext': 'csv', 'fmt': 'lightning', 'step_of': tsteps,
            'span': (min(r['step'] for r in rows), max(r['step'] for r in rows)), 'k': k, 'notes': f'{desc}; {note}'}


# =============================================================================
# Stable-Baselines3 PPO console tables
# =============================================================================

SB3_ENVS = {
    # name: (discrete actions or None, act_dim, rew start, rew end, len start, len end, n_steps*n_envs choices)
    'CartPole-v1': (2, 1, 22, 480, 22, 480, [2048, 512 * 8]),
    'LunarLander-v2': (4, 1, -190, 240, 90, 380, [2048, 1024 * 16, 2048 * 4]),
    'Acrobot-v1': (3, 1, -500, -85, 500, 86, [2048, 256 * 16]),
    'BreakoutNoFrameskip-v4': (4, 1, 1.4, 260, 180, 2400, [128 * 8]),
    'Pendulum-v1': (None, 1, -1300, -190, 200, 200, [1024 * 4, 2048]),
    'HalfCheetah-v4': (None, 6, -350, 2600, 1000, 1000, [2048, 512 * 4]),
    'BipedalWalker-v3': (None, 4, -115, 270, 60, 1200, [2048 * 16, 2048 * 8]),
    'MountainCarContinuous-v0': (None, 1, -40, 92, 999, 120, [2048, 8 * 512]),
}


def sb3_table(items):
    """Exactly stable_baselines3.common.logger.HumanOutputFormat.write."""
    key2str = {}
    tag = ''
    for key, value in sorted(items.items()):
        if isinstance(value, float):
            vs = g3(value)
        else:
            vs = str(value)
        if key.find('/') > 0:
            tag = key[:key.find('/') + 1]
            key2str[(tag, tag)] = ''
        if len(tag) > 0 and tag in key:
            key = f'{"":3}{key[len(tag):]}'
        key2str[(tag, key)] = vs
    kw = max(len(k[1]) for k in key2str)
    vw = max(len(v) for v in key2str.values())
    dashes = '-' * (kw + vw + 7)
    lines = [dashes]
    for (_, key), value in key2str.items():
        lines.append(f'| {key}{" " * (kw - len(key))} | {value}{" " * (vw - len(value))} |')
    lines.append(dashes)
    return lines


class F32:
    """A numpy.float32 value: not a python float, so SB3 prints str(value)."""

    def __init__(self, v):
        self.v = v

    def __str__(self):
        return np32str(self.v)


def gen_sb3(rng, kind, sev, style):
    cands = list(SB3_ENVS)
    if kind == 'entropy_collapse':
        cands = [e for e in cands if SB3_ENVS[e][0]]
    env = rng.choice(cands)
    A, adim, r0, r1, l0, l1, bchoices = SB3_ENVS[env]
    batch = rng.choice(bchoices)
    n = rng.randint(100, 600)
    if kind in ('slow_drift', 'throughput_regression'):
        n = max(n, 200)
    n_epochs = rng.choice([10, 10, 4, 20])
    clip = rng.choice([0.2, 0.2, 0.1])
    lr0 = rng.choice([3e-4, 3e-4, 2.5e-4, 1e-3])
    lin_lr = rng.random() < 0.3
    early = kind != 'healthy'
    mid = rng.uniform(0.08, 0.2) if early else rng.uniform(0.1, 0.45)
    rew_tr = rise(n, r0, r1 * rng.uniform(0.75, 1.0) if r1 > 0 else r1 * rng.uniform(1.0, 1.3), mid, rng.uniform(0.04, 0.12))
    R = Ser(rng, rew_tr, abs(r1 - r0) * rng.uniform(0.01, 0.03), mode='add', rho=0.85, df=4)
    Lnt = rise(n, l0, l1, mid, 0.08)
    kl0 = logu(rng, 0.003, 0.02)
    K = Ser(rng, [kl0 * (1 + rng.uniform(-0.3, 0.3) * i / (n - 1)) for i in range(n)], rng.uniform(0.2, 0.32), cap=(0.4, 2.5))
    if A:
        e0 = math.log(A) * rng.uniform(0.97, 1.0)
        edrop = rng.uniform(0.1, 0.38)
        ent_tr = [e0 * (1 - edrop * (1 - math.exp(-(i / (n - 1)) / 0.3)) / (1 - math.exp(-1 / 0.3))) for i in range(n)]
    else:
        e0 = adim * 1.4189 * rng.uniform(0.98, 1.0)
        ent_tr = [e0 * (1 - 0.3 * (i / (n - 1))) for i in range(n)]
    E = Ser(rng, ent_tr, rng.uniform(0.005, 0.02))
    fps0 = {True: rng.uniform(300, 3000), False: rng.uniform(600, 6000)}[env.startswith('Breakout')]
    T = Ser(rng, [fps0] * n, rng.uniform(0.03, 0.08), rho=0.5)
    S = {'n': n, 'kl': K, 'ent': E, 'tps': T, 'reward': R, 'reward_start': r0, 'steps': list(range(1, n + 1))}
    k = None
    note = ''
    if kind != 'healthy':
        lo, hi = onset_range(kind)
        if kind == 'throughput_regression':
            hi = 0.45  # printed fps is cumulative: needs room after the drop
        k = pick_k(rng, n, lo, hi)
        if kind == 'slow_drift':
            note = inj_drift_reward(rng, S, k, sev)
        elif kind in ('kl_spike', 'kl_runaway', 'entropy_collapse'):
            # train/ numbers of update i are printed in table i+1: inject at k-1 so they
            # first show in table k (iteration k+1 = step_of[k])
            note = inject_generic(rng, kind, S, k - 1, sev)
            note = note.replace('kl ', 'train/approx_kl ', 1)
        elif kind == 'throughput_regression':
            note = inj_tput(rng, S, k, 0.6 + 0.4 * sev)
            note += ' (printed time/fps is cumulative, so it decays gradually)'
        else:
            note = inject_generic(rng, kind, S, k, sev)
        if kind == 'entropy_collapse':
            note = note.replace('ent ', 'policy entropy (-train/entropy_loss) ')
    out = []
    out.append(f'Using {rng.choice(["cuda", "cuda", "cpu"])} device\n')
    if rng.random() < 0.6:
        out.append('Wrapping the env with a `Monitor` wrapper\n')
        out.append('Wrapping the env in a DummyVecEnv.\n')
    if env.startswith('Breakout'):
        out.append('Wrapping the env in a VecTransposeImage.\n')
    if rng.random() < 0.4:
        out.append(f'Logging to ./tb_logs/PPO_{rng.randint(1, 30)}\n')
    if env == 'LunarLander-v2' and rng.random() < 0.5:
        out.append('/usr/local/lib/python3.10/dist-packages/gymnasium/envs/registration.py:513: DeprecationWarning: '
                   '\x1b[33mWARN: The environment LunarLander-v2 is out of date. You should consider upgrading to version `v3`.\x1b[0m\n')
        out.append('  logger.deprecation(\n')
    t = 0.0
    ts = 0
    kv = K.vals()
    ev = E.vals()
    rv = R.vals()
    tv = T.vals()
    target_kl = rng.choice([None, None, None, 0.02, 0.03]) if kind == 'healthy' else None
    std0 = 1.0
    prev_train = None
    for i in range(n):
        ts += batch
        t += batch / tv[i]
        rew = rv[i]
        eplen = Lnt[i] * rng.uniform(0.97, 1.03)
        if env == 'CartPole-v1':  # +1 per step, capped at 500
            rew = clamp(rew, 9.0, 500.0)
            eplen = rew
        elif env == 'Acrobot-v1':  # -1 per step, capped at 500 steps
            rew = clamp(rew, -500.0, -62.0)
            eplen = min(500.0, 1 - rew)
        elif env.startswith('Pendulum') or env.startswith('HalfCheetah'):
            eplen = Lnt[i]
        it = {'rollout/ep_len_mean': float(round(eplen, 1)),
              'rollout/ep_rew_mean': float(rew),
              'time/fps': int(ts / t), 'time/iterations': i + 1, 'time/time_elapsed': int(t), 'time/total_timesteps': ts}
        if prev_train:
            it.update(prev_train)
        out.extend(x + '\n' for x in sb3_table(it))
        # train() after the dump: its numbers appear in the next table
        lr = lr0 * (1 - i / n) if lin_lr else lr0
        ent = ev[i]
        es = None
        if target_kl and kv[i] > 1.5 * target_kl:
            es = rng.randint(0, n_epochs - 1)
            out.append(f'Early stopping at step {es} due to reaching max kl: {kv[i]:.2f}\n')
        tr = {'train/approx_kl': F32(kv[i]),
              'train/clip_fraction': float(clamp(0.02 + 6 * kv[i] * rng.uniform(0.8, 1.2), 0, 0.9)),
              'train/clip_range': clip, 'train/entropy_loss': float(-ent),
              'train/explained_variance': float(clamp(lerp(-0.05, 0.95, 1 - math.exp(-i / (0.1 * n))) + rng.gauss(0, 0.03), -1, 1)),
              'train/learning_rate': lr, 'train/loss': float(abs(rng.gauss(1, 0.5)) * abs(r1 - r0) / 50),
              'train/n_updates': (i + 1) * n_epochs, 'train/policy_gradient_loss': float(rng.gauss(-0.008, 0.005)),
              'train/value_loss': float(abs(rng.gauss(1, 0.4)) * abs(r1 - r0) / 10)}
        if not A:
            std0 = math.exp((ent / adim - 1.4189))
            tr['train/std'] = float(std0)
        prev_train = tr
    desc = f'PPO {env} n_steps*n_envs={batch} n_epochs={n_epochs}; one table per iteration, step=time/iterations'
    if not note:
        note = f'healthy: ep_rew_mean {r0}->{rew_tr[-1]:.0f}, approx_kl ~{kl0:.3f} noisy, entropy -{(1 - ent_tr[-1] / ent_tr[0]) * 100:.0f}%'
    return {'text': ''.join(out), 'ext': rng.choice(['log', 'txt']), 'fmt': 'sb3', 'step_of': list(range(1, n + 1)),
            'span': (1, n), 'k': k, 'notes': f'{desc}; {note}'}


# =============================================================================
# LM pretraining series shared by plain-text styles and JSONL
# =============================================================================

def lm_series(rng, n, steps, L0, Linf, sig, gl, tps0, mem0, mem_cap, tau=None, late_gn=None, tsig=None):
    L = Ser(rng, decay(n, L0, Linf, tau or rng.uniform(0.005, 0.05), rng.uniform(0.5, 1.2)), sig, cap=(0.8, 1.27))
    bumps(rng, L, 0.003)
    G = Ser(rng, gn_trend(n, gl, rng.uniform(2, 8), rng.uniform(0.02, 0.06), late_gn or rng.uniform(1.0, 1.8)),
            rng.uniform(0.08, 0.2), cap=(0.6, 1.9))
    bumps(rng, G, 0.003, 1.6, 3.0)
    T = Ser(rng, [tps0] * n, tsig or rng.uniform(0.015, 0.05), rho=0.3, cap=(0.85, 1.12))
    # memory: ramps in the first points, then flat with an allocator sawtooth
    period = rng.randint(7, 60)
    amp = rng.uniform(0.0, 0.015)
    mt = [mem0 * (lerp(0.8, 1.0, min(1.0, i / 3)) + amp * ((i % period) / period)) for i in range(n)]
    M = Ser(rng, mt, 0.002, df=None)
    return {'loss': L, 'gn': G, 'tps': T, 'mem': M, 'n': n, 'steps': steps, 'mem_cap': mem_cap,
            'loss_ceiling': L0 * 0.95}


def slow_points(rng, n, every):
    """Indices that carry a one-off pause (checkpoint save / eval) in healthy logs."""
    return set(i for i in range(every, n, every))


# ----------------------------------------------------------------------------- nanoGPT
def gen_nanogpt(rng, kind, sev):
    variant = rng.choice(['shakespeare_char', 'owt', 'owt', 'finetune_shakespeare'])
    li = rng.choice([1, 10, 10]) if variant == 'shakespeare_char' else rng.choice([1, 10])
    n = rng.randint(100, 1200 if li == 1 else 3000)
    last_iter = (n - 1) * li
    steps = [i * li for i in range(n)]
    want = max(1, last_iter // rng.randint(6, 25))
    nice = [v for v in (10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000) if v % li == 0]
    ei = min(nice, key=lambda v: abs(math.log(v / want)))
    if variant == 'shakespeare_char':
        L0, Linf, sig, dt0, mfu0 = 4.25, rng.uniform(0.95, 1.2), rng.uniform(0.02, 0.04), rng.uniform(25, 60), rng.uniform(8, 14)
    elif variant == 'owt':
        L0, Linf, sig, dt0, mfu0 = 10.98, rng.uniform(2.85, 3.3), rng.uniform(0.01, 0.025), rng.uniform(120, 480), rng.uniform(28, 45)
    else:
        L0, Linf, sig, dt0, mfu0 = rng.uniform(3.4, 4.0), rng.uniform(2.9, 3.3), rng.uniform(0.03, 0.06), rng.uniform(250, 900), rng.uniform(15, 30)
    S = lm_series(rng, n, steps, L0, Linf, sig, 1.0, 1.0 / dt0, 1.0, 80.0, tsig=rng.uniform(0.01, 0.04))
    k = None
    note = ''
    if kind != 'healthy':
        k = pick_k(rng, n, *onset_range(kind))
        note = inject_generic(rng, kind, S, k, sev, nf=('persist', 'inf_loss'))
        if kind == 'throughput_regression':
            note = note.replace('tps', 'iteration time (1/time)')
    lv = S['loss'].vals()
    tv = S['tps'].vals()
    out = []
    cfg = {'shakespeare_char': 'config/train_shakespeare_char.py', 'owt': 'config/train_gpt2.py',
           'finetune_shakespeare': 'config/finetune_shakespeare.py'}[variant]
    if rng.random() < 0.7:
        out.append(f'Overriding config with {cfg}:\n')
        if variant == 'shakespeare_char':
            out += ['# train a miniature character-level shakespeare model\n', '# good for debugging and playing on macbooks and such\n', '\n',
                    "out_dir = 'out-shakespeare-char'\n", f'eval_interval = {ei} # keep frequent because we\'ll overfit\n',
                    'eval_iters = 200\n', f'log_interval = {li} # don\'t print too too often\n', '\n',
                    '# we expect to overfit on this small dataset, so only save when val improves\n', 'always_save_checkpoint = False\n', '\n',
                    "wandb_log = False # override via command line if you like\n", "wandb_project = 'shakespeare-char'\n", "wandb_run_name = 'mini-gpt'\n", '\n',
                    "dataset = 'shakespeare_char'\n", 'gradient_accumulation_steps = 1\n', 'batch_size = 64\n', 'block_size = 256 # context of up to 256 previous characters\n', '\n',
                    '# baby GPT model :)\n', 'n_layer = 6\n', 'n_head = 6\n', 'n_embd = 384\n', 'dropout = 0.2\n', '\n',
                    'learning_rate = 1e-3 # with baby networks can afford to go a bit higher\n', f'max_iters = {last_iter}\n',
                    f'lr_decay_iters = {last_iter} # make equal to max_iters usually\n', 'min_lr = 1e-4 # learning_rate / 10 usually\n',
                    'beta2 = 0.99 # make a bit bigger because number of tokens per iter is small\n', '\n', 'warmup_iters = 100 # not super necessary potentially\n']
        elif variant == 'owt':
            out += ['# config for training GPT-2 (124M) down to very nice loss of ~2.85 on 1 node of 8X A100 40GB\n',
                    '# launch as the following (e.g. in a screen session) and wait ~5 days:\n', '# $ torchrun --standalone --nproc_per_node=8 train.py config/train_gpt2.py\n', '\n',
                    "wandb_log = True\n", "wandb_project = 'owt'\n", "wandb_run_name='gpt2-124M'\n", '\n',
                    '# these make the total batch size be ~0.5M\n', '# 12 batch size * 1024 block size * 5 gradaccum * 8 GPUs = 491,520\n',
                    'batch_size = 12\n', 'block_size = 1024\n', 'gradient_accumulation_steps = 5 * 8\n', '\n',
                    '# this makes total number of tokens be 300B\n', f'max_iters = {last_iter}\n', f'lr_decay_iters = {last_iter}\n', '\n',
                    '# eval stuff\n', f'eval_interval = {ei}\n', 'eval_iters = 200\n', f'log_interval = {li}\n', '\n', '# weight decay\n', 'weight_decay = 1e-1\n']
        else:
            out += ['import time\n', '\n', "out_dir = 'out-shakespeare'\n", f'eval_interval = {ei}\n', 'eval_iters = 40\n',
                    'wandb_log = False # feel free to turn on\n', "wandb_project = 'shakespeare'\n", "wandb_run_name = 'ft-' + str(time.time())\n", '\n',
                    "dataset = 'shakespeare'\n", "init_from = 'gpt2-xl' # this is the largest GPT-2 model\n", '\n',
                    '# only save checkpoints if the validation loss improves\n', 'always_save_checkpoint = False\n', '\n',
                    'batch_size = 1\n', 'gradient_accumulation_steps = 32\n', f'max_iters = {last_iter}\n', '\n',
                    '# finetune at constant LR\n', 'learning_rate = 3e-5\n', 'decay_lr = False\n']
    if variant == 'shakespeare_char':
        out += ['tokens per iteration will be: 16,384\n', 'found vocab_size = 65 (inside data/shakespeare_char/meta.pkl)\n',
                'Initializing a new model from scratch\n', 'number of parameters: 10.65M\n',
                'num decayed parameter tensors: 26, with 10,740,096 parameters\n', 'num non-decayed parameter tensors: 13, with 4,992 parameters\n']
        ckdir = 'out-shakespeare-char'
    elif variant == 'owt':
        out += ['tokens per iteration will be: 491,520\n', 'Initializing a new model from scratch\n',
                'defaulting to vocab_size of GPT-2 to 50304 (50257 rounded up for efficiency)\n', 'number of parameters: 123.59M\n',
                'num decayed parameter tensors: 50, with 124,354,560 parameters\n', 'num non-decayed parameter tensors: 98, with 121,344 parameters\n']
        ckdir = 'out'
    else:
        out += ['tokens per iteration will be: 32,768\n', 'Initializing from OpenAI GPT-2 weights: gpt2-xl\n',
                'loading weights from pretrained gpt: gpt2-xl\n', 'forcing vocab_size=50257, block_size=1024, bias=True\n',
                'overriding dropout rate to 0.0\n', 'number of parameters: 1555.97M\n',
                'num decayed parameter tensors: 194, with 1,556,609,600 parameters\n', 'num non-decayed parameter tensors: 386, with 1,001,600 parameters\n']
        ckdir = 'out-shakespeare'
    out.append('using fused AdamW: True\n')
    if rng.random() < 0.8:
        out.append('compiling the model... (takes a ~minute)\n')
    gap = rng.uniform(1.0, 1.06) if variant != 'shakespeare_char' else rng.uniform(1.05, 1.2)
    best = 1e9
    running = -1.0
    local = 0
    nanf = S.get('nan_from')
    for i, it in enumerate(steps):
        extra = 0.0
        if it % ei == 0:
            tr = S['loss'].trend[i]
            tl = tr * rng.uniform(0.99, 1.01)
            vl = tr * gap * rng.uniform(0.995, 1.005)
            if nanf is not None and i >= nanf:
                tl = vl = NAN
            out.append(f'step {it}: train loss {tl:.4f}, val loss {vl:.4f}\n')
            extra = rng.uniform(3, 30)
            if it > 0 and (vl < best or rng.random() < 0.1):
                best = min(best, vl) if fin(vl) else best
                out.append(f'saving checkpoint to {ckdir}\n')
                extra += rng.uniform(1, 8)
        dt = 1.0 / tv[i] / 1000.0 + extra
        if i == 0:
            dt = rng.uniform(15, 60)
        if local >= 5:
            mfu = mfu0 / 100 * (dt0 / 1000) / dt
            running = mfu if running == -1.0 else 0.9 * running + 0.1 * mfu
        lo = lv[i]
        lstr = f'{lo:.4f}'
        out.append(f'iter {it}: loss {lstr}, time {dt * 1000:.2f}ms, mfu {running * 100:.2f}%\n')
        local += li
    desc = f'nanoGPT {variant} log_interval={li} eval_interval={ei}'
    if not note:
        note = f'healthy: loss {L0:.2f}->{Linf:.2f}, noise sigma {sig:.3f}, iter time ~{dt0:.0f}ms'
    return {'text': ''.join(out), 'ext': rng.choice(['log', 'txt', 'out']), 'fmt': 'plain-nanogpt', 'step_of': steps,
            'span': (steps[0], steps[-1]), 'k': k, 'notes': f'{desc}; {note}'}


# ----------------------------------------------------------------------------- Megatron-LM
MEG_ARGS = ['accumulate_allreduce_grads_in_fp32', 'adam_beta1', 'adam_beta2', 'adam_eps', 'apply_query_key_layer_scaling',
            'attention_dropout', 'bf16', 'clip_grad', 'data_parallel_size', 'distributed_backend', 'eval_interval', 'eval_iters',
            'ffn_hidden_size', 'fp16', 'global_batch_size', 'hidden_dropout', 'hidden_size', 'init_method_std', 'log_interval',
            'lr', 'lr_decay_style', 'lr_warmup_iters', 'micro_batch_size', 'min_lr', 'num_attention_heads', 'num_layers',
            'pipeline_model_parallel_size', 'save', 'save_interval', 'seq_length', 'tensor_model_parallel_size', 'train_iters',
            'use_distributed_optimizer', 'use_flash_attn', 'weight_decay', 'world_size']


def gen_megatron(rng, kind, sev):
    li = rng.choice([1, 5, 10, 10, 10, 100])
    n = rng.randint(100, 2000 if li < 100 else 600)
    steps = [(i + 1) * li for i in range(n)]
    train_iters = steps[-1] if rng.random() < 0.5 else int(steps[-1] * rng.uniform(1.2, 20) // 1000 * 1000 + 1000)
    gbs = rng.choice([256, 512, 1024, 1536])
    seq = rng.choice([2048, 4096])
    new = rng.random() < 0.6
    fp16 = (not new) and rng.random() < 0.5 and kind == 'healthy'
    lr0 = rng.choice([1.5e-4, 3e-4, 6e-4, 2e-4])
    warm = int(train_iters * rng.uniform(0.005, 0.02)) + 1
    lrf = lr_fn('cosine', train_iters, lr0, warm, floor=lr0 * 0.1)
    ms0 = rng.uniform(300, 8000)
    sig = rng.uniform(0.006, 0.015) * (2.0 if li == 1 else 1.0)
    Linf = rng.uniform(1.9, 2.8)
    S = lm_series(rng, n, steps, rng.uniform(10.7, 11.2), Linf, sig, logu(rng, 0.15, 0.6), 1000.0 / ms0, 1.0, 80.0,
                  tau=rng.uniform(0.003, 0.03))
    k = None
    note = ''
    if kind != 'healthy':
        k = pick_k(rng, n, *onset_range(kind))
        note = inject_generic(rng, kind, S, k, sev)
        if kind == 'throughput_regression':
            note = note.replace('tps', 'iteration rate (1/elapsed time per iteration)')
    lv = S['loss'].vals()
    gv = S['gn'].vals()
    tv = S['tps'].vals()
    tp = rng.choice([1, 2, 4, 8])
    pp = rng.choice([1, 1, 2, 4])
    world = tp * pp * rng.choice([1, 2, 4, 8, 16])
    dp = world // (tp * pp)
    ckpt = rng.choice(['/checkpoints/gpt3-843m', '/lustre/fsw/llm/ckpt/gpt-7b', '/workspace/ckpt/megatron-gpt-1.3b'])
    ev_int = max(li, (steps[-1] // rng.randint(5, 20)) // li * li)
    sv_int = ev_int * rng.choice([1, 2])
    timers = rng.random() < 0.5
    out = [f'using world size: {world}, data-parallel size: {dp}, context-parallel size: 1, tensor-model-parallel size: {tp}, '
           f'pipeline-model-parallel size: {pp} \n',
           f'using {"torch.float16" if fp16 else "torch.bfloat16"} for parameters ...\n',
           '------------------------ arguments ------------------------\n']
    vals = {'accumulate_allreduce_grads_in_fp32': 'True', 'adam_beta1': '0.9', 'adam_beta2': '0.95', 'adam_eps': '1e-08',
            'apply_query_key_layer_scaling': 'False', 'attention_dropout': '0.0', 'bf16': str(not fp16), 'clip_grad': '1.0',
            'data_parallel_size': str(dp), 'distributed_backend': 'nccl', 'eval_interval': str(ev_int), 'eval_iters': '10',
            'ffn_hidden_size': '8192', 'fp16': str(fp16), 'global_batch_size': str(gbs), 'hidden_dropout': '0.0', 'hidden_size': '2048',
            'init_method_std': '0.02', 'log_interval': str(li), 'lr': str(lr0), 'lr_decay_style': 'cosine', 'lr_warmup_iters': str(warm),
            'micro_batch_size': str(rng.choice([1, 2, 4])), 'min_lr': str(lr0 * 0.1), 'num_attention_heads': '16', 'num_layers': '24',
            'pipeline_model_parallel_size': str(pp), 'save': ckpt, 'save_interval': str(sv_int), 'seq_length': str(seq),
            'tensor_model_parallel_size': str(tp), 'train_iters': str(train_iters), 'use_distributed_optimizer': 'True',
            'use_flash_attn': 'True', 'weight_decay': '0.1', 'world_size': str(world)}
    for a in MEG_ARGS:
        out.append(f'  {a} {"." * (48 - len(a))} {vals[a]}\n')
    out.append('-------------------- end of arguments ---------------------\n')
    clock = Clock(rng)
    out += ['> building GPT2BPETokenizer tokenizer ...\n', ' > padded vocab (size: 50257) with 431 dummy tokens (new size: 50688)\n',
            '> initializing torch distributed ...\n', f'> initialized tensor model parallel with size {tp}\n',
            f'> initialized pipeline model parallel with size {pp}\n', '> setting random seeds to 1234 ...\n',
            '> compiling dataset index builder ...\n', '>>> done with dataset index builder. Compilation time: 0.061 seconds\n',
            f'time to initialize megatron (seconds): {rng.uniform(10, 90):.3f}\n',
            f'[after megatron is initialized] datetime: {clock.t.strftime("%Y-%m-%d %H:%M:%S")} \n', 'building GPT model ...\n',
            f' > number of parameters on (tensor, pipeline) model parallel rank (0, 0): {rng.randint(100_000_000, 900_000_000)}\n',
            '> learning rate decay style: cosine\n',
            f'[after model, optimizer, and learning rate scheduler are built] datetime: {clock.t.strftime("%Y-%m-%d %H:%M:%S")} \n',
            '> building train, validation, and test datasets ...\n', f' > datasets target sizes (minimum size):\n',
            f'    train:      {train_iters * gbs}\n', f'    validation: {(train_iters // ev_int + 1) * 10 * gbs}\n', f'    test:       {10 * gbs}\n',
            f'[after dataloaders are built] datetime: {clock.t.strftime("%Y-%m-%d %H:%M:%S")} \n', 'done with setup ...\n',
            'training ...\n', f'[before the start of training step] datetime: {clock.t.strftime("%Y-%m-%d %H:%M:%S")} \n']
    scale = 65536.0 if fp16 else 1.0
    tflops0 = rng.uniform(150, 450)
    for i, it in enumerate(steps):
        ms = 1000.0 / tv[i]
        if i == 0:
            ms *= rng.uniform(2, 5)
        if i > 0 and (steps[i - 1] % sv_int == 0):
            ms += rng.uniform(2000, 30000) / li
        clock.adv(ms / 1000 * li)
        skipped = 0
        if fp16 and rng.random() < 0.01:
            skipped = 1
            scale /= 2
        elif fp16 and rng.random() < 0.02 and scale < 65536.0:
            scale *= 2
        s = f' [{clock.t.strftime("%Y-%m-%d %H:%M:%S")}]' if new else ''
        s += f' iteration {it:8d}/{train_iters:8d} |'
        s += f' consumed samples: {it * gbs:12d} |'
        s += f' elapsed time per iteration (ms): {ms:.1f} |'
        if new:
            s += f' throughput per GPU (TFLOP/s/GPU): {tflops0 * ms0 / ms:.1f} |'
            s += f' learning rate: {lrf(it):.6E} |'
        else:
            s += f' learning rate: {lrf(it):.3E} |'
        s += f' global batch size: {gbs:5d} |'
        if lv[i] > 0.0:
            s += f' lm loss: {lv[i]:.6E} |'
        s += f' loss scale: {scale:.1f} |'
        s += f' grad norm: {gv[i]:.3f} |'
        s += f' number of skipped iterations: {skipped:3d} |'
        s += ' number of nan iterations:   0 |'
        out.append(s + '\n')
        if i == 0:
            a = rng.uniform(8000, 30000)
            out.append(f'[Rank 0] (after {it} iterations) memory (MB) | allocated: {a:.2f} | max allocated: {a * 1.6:.2f} | '
                       f'reserved: {a * 1.8:.2f} | max reserved: {a * 1.8:.2f}\n')
        if timers:
            out.append('(min, max) time across ranks (ms):\n')
            out.append(f'    forward-backward ...............................: ({ms * 0.93:.2f}, {ms * 0.94:.2f})\n')
            out.append(f'    optimizer ......................................: ({ms * 0.03:.2f}, {ms * 0.032:.2f})\n')
        if it % ev_int == 0:
            vl = S['loss'].trend[i] * rng.uniform(1.0, 1.02)
            if timers:
                out.append('(min, max) time across ranks (ms):\n')
                out.append(f'    evaluate .......................................: ({rng.uniform(2000, 9000):.2f}, {rng.uniform(9000, 9100):.2f})\n')
            bar = '-' * 98
            out.append(bar + '\n')
            out.append(f' validation loss at iteration {it} | lm loss value: {vl:.6E} | lm loss PPL: {math.exp(min(vl, 700)):.6E} | \n')
            out.append(bar + '\n')
        if it % sv_int == 0:
            out.append(f'saving checkpoint at iteration {it:7d} to {ckpt}\n')
            out.append(f'  successfully saved checkpoint at iteration {it:7d} to {ckpt}\n')
            if timers:
                out.append('(min, max) time across ranks (ms):\n')
                out.append(f'    save-checkpoint ................................: ({rng.uniform(2000, 30000):.2f}, {rng.uniform(30000, 31000):.2f})\n')
    desc = f'Megatron-LM {"core (timestamped)" if new else "legacy"} log_interval={li} {"fp16" if fp16 else "bf16"}'
    if not note:
        note = f'healthy: lm loss 11->{Linf:.2f}, noise sigma {sig:.3f}, ~{ms0:.0f} ms/iter'
    return {'text': ''.join(out), 'ext': rng.choice(['log', 'out', 'txt']), 'fmt': 'plain-megatron', 'step_of': steps,
            'span': (steps[0], steps[-1]), 'k': k, 'notes': f'{desc}; {note}'}


# ----------------------------------------------------------------------------- Epoch [e/E], Step [s/S]
def gen_epochstep(rng, kind, sev):
    task, spe = rng.choice([('mnist', 600), ('cifar10', 391), ('cifar10', 782), ('fashion', 469), ('svhn', 573)])
    li = rng.choice([100, 50, 20]) if spe >= 400 else rng.choice([50, 20, 10])
    per = spe // li
    n_target = rng.randint(150, 2400)
    E = max(3, -(-n_target // per))
    if kind == 'slow_drift':
        E = max(E, 6)
    pts = []
    for e in range(1, E + 1):
        for s in range(li, spe + 1, li):
            pts.append((e, s))
    n = len(pts)
    steps = [(e - 1) * spe + s for e, s in pts]
    L0 = 2.30 if task != 'mnist' else 2.2
    Linf = {'mnist': rng.uniform(0.05, 0.12), 'cifar10': rng.uniform(0.35, 0.7), 'fashion': rng.uniform(0.22, 0.35),
            'svhn': rng.uniform(0.2, 0.35)}[task]
    sig = rng.uniform(0.05, 0.1)
    L = Ser(rng, decay(n, L0, Linf, rng.uniform(0.01, 0.05), rng.uniform(0.6, 1.2)), sig, cap=(0.75, 1.27))
    bumps(rng, L, 0.004)
    S = {'loss': L, 'n': n, 'steps': steps, 'loss_ceiling': L0 * 1.1}
    k = None
    note = ''
    if kind != 'healthy':
        k = pick_k(rng, n, *onset_range(kind))
        note = inject_generic(rng, kind, S, k, sev)
    lv = L.vals()
    v2 = rng.random() < 0.5
    lr = rng.choice([0.001, 0.01, 0.1])
    out = []
    if rng.random() < 0.5:
        out.append(f'Files already downloaded and verified\n' if task != 'mnist' else
                   'Downloading http://yann.lecun.com/exdb/mnist/train-images-idx3-ubyte.gz\n')
        if task != 'mnist':
            out.append('Files already downloaded and verified\n')
    out.append(f'Device: cuda\n' if rng.random() < 0.5 else '')
    best = 0.0
    for i, (e, s) in enumerate(pts):
        if v2:
            out.append(f'Epoch: [{e}/{E}] | Batch: {s}/{spe} | Loss: {lv[i]:.4f} | LR: {lr:.6f}\n')
        else:
            out.append(f'Epoch [{e}/{E}], Step [{s}/{spe}], Loss: {lv[i]:.4f}\n')
        if s + li > spe:
            tr = L.trend[i]
            vl = tr * rng.uniform(1.02, 1.12)
            acc = clamp(100 * acc_of(vl) + rng.gauss(0, 0.3), 5, 99.6) if fin(vl) else 10.0
            if v2:
                out.append(f'==> Epoch {e} done: val_loss={vl:.4f} val_acc={acc:.2f}%\n')
            else:
                out.append(f'Epoch [{e}/{E}] Validation Loss: {vl:.4f}, Accuracy: {acc:.2f} %\n')
            if acc > best:
                best = acc
                if rng.random() < 0.6:
                    out.append(f'Saving best model (acc {acc:.2f}%) to checkpoints/best.pth\n')
    out.append(f'Accuracy of the network on the 10000 test images: {int(best)} %\n')
    desc = f'{task} spe={spe} print every {li} batches; step = global (epoch-1)*{spe}+step'
    if not note:
        note = f'healthy: loss {L0:.2f}->{Linf:.2f}, noise sigma {sig:.3f}'
    return {'text': ''.join(out), 'ext': rng.choice(['log', 'txt']), 'fmt': 'plain-epochstep', 'step_of': steps,
            'span': (steps[0], steps[-1]), 'k': k, 'notes': f'{desc}; {note}'}


# ----------------------------------------------------------------------------- Keras model.fit
def gen_keras(rng, kind, sev):
    E = rng.randint(100, 300)
    spe = rng.choice([391, 469, 1875, 157, 938])
    k3 = rng.random() < 0.45
    cls = rng.random() < 0.7
    if cls:
        L0, Linf = rng.uniform(1.5, 2.1), rng.uniform(0.15, 0.5)
    else:
        L0, Linf = rng.uniform(0.3, 1.0), rng.uniform(0.02, 0.08)
    sig = rng.uniform(0.01, 0.03)
    L = Ser(rng, decay(E, L0, Linf, rng.uniform(0.02, 0.08), rng.uniform(0.7, 1.3)), sig, cap=(0.85, 1.2))
    bumps(rng, L, 0.01, 1.05, 1.2)
    S = {'loss': L, 'n': E, 'steps': list(range(1, E + 1)), 'loss_ceiling': L0 * 1.2}
    k = None
    note = ''
    if kind != 'healthy':
        k = pick_k(rng, E, *onset_range(kind))
        note = inject_generic(rng, kind, S, k, sev)
    lv = L.vals()
    nanf = S.get('nan_from')
    clock = Clock(rng)
    def ts():
        clock.adv(rng.uniform(0.0005, 1.5))
        return clock.t.strftime('%Y-%m-%d %H:%M:%S') + '.%06d' % clock.t.microsecond
    out = [f'{ts()}: I tensorflow/core/util/port.cc:113] oneDNN custom operations are on. You may see slightly different numerical results due to floating-point round-off errors from different computation orders. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.\n',
           f'{ts()}: I tensorflow/core/platform/cpu_feature_guard.cc:210] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.\n',
           'To enable the following instructions: AVX2 AVX512F AVX512_VNNI FMA, in other operations, rebuild TensorFlow with the appropriate compiler flags.\n',
           f'{ts()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1928] Created device /job:localhost/replica:0/task:0/device:GPU:0 with 38366 MB memory:  -> device: 0, name: NVIDIA A100-SXM4-40GB, pci bus id: 0000:07:00.0, compute capability: 8.0\n']
    lr = rng.choice([1e-3, 1e-3, 3e-4])
    plateau = rng.random() < 0.6
    ckpt = rng.random() < 0.6
    best = INF
    wait = 0
    stime = rng.uniform(2, 40)
    metric = 'accuracy' if cls else 'mae'
    for e in range(1, E + 1):
        i = e - 1
        lo = lv[i]
        vl = L.trend[i] * rng.uniform(1.03, 1.12) if fin(lo) else NAN
        if nanf is not None and i >= nanf:
            vl = NAN
        if cls:
            m = acc_of(lo)
            vm = clamp(acc_of(vl) + rng.gauss(0, 0.003), 0.1, 0.999) if fin(vl) else 0.1
        else:
            m = math.sqrt(lo) * 0.8 if fin(lo) else NAN
            vm = math.sqrt(vl) * 0.8 if fin(vl) else NAN
        out.append(f'Epoch {e}/{E}\n')
        if e == 1 and rng.random() < 0.6:
            out.append('WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n')
            out.append(f'I0000 00:00:{clock.unix():.6f}   {rng.randint(1000, 99999)} service.cc:145] XLA service 0x7f{rng.randint(10**9, 10**10):x} initialized for platform CUDA (this does not guarantee that XLA will be used). Devices:\n')
        secs = stime * (rng.uniform(2, 4) if e == 1 else rng.uniform(0.95, 1.05))
        clock.adv(secs)
        msstep = secs / spe * 1000
        per = f'{int(msstep)}ms/step' if msstep >= 1 else f'{int(msstep * 1000)}us/step'
        fmt = lambda v: (f'{v:.4f}' if abs(v) > 1e-3 else f'{v:.4e}') if fin(v) else 'nan'  # keras Progbar rule
        if k3:
            parts = [f'{metric}: {fmt(m)}', f'loss: {fmt(lo)}', f'val_{metric}: {fmt(vm)}', f'val_loss: {fmt(vl)}']
            if plateau:
                parts.append(f'learning_rate: {fmt(lr)}')
            out.append(f'{spe}/{spe} ' + '━' * 20 + f' {int(secs)}s {per} - ' + ' - '.join(parts) + '\n')
        else:
            parts = [f'loss: {fmt(lo)}', f'{metric}: {fmt(m)}', f'val_loss: {fmt(vl)}', f'val_{metric}: {fmt(vm)}']
            if plateau:
                parts.append(f'lr: {fmt(lr)}')
            out.append(f'{spe}/{spe} [==============================] - {int(secs)}s {per} - ' + ' - '.join(parts) + '\n')
        if ckpt:
            if fin(vl) and vl < best:
                out.append(f'\nEpoch {e}: val_loss improved from {best:.5f} to {vl:.5f}, saving model to checkpoints/best.{"keras" if k3 else "h5"}\n')
                best = vl
            else:
                out.append(f'\nEpoch {e}: val_loss did not improve from {best:.5f}\n')
        if plateau:
            if fin(vl) and vl < best * 0.999 or (not ckpt and fin(vl) and vl < best):
                wait = 0
                if not ckpt:
                    best = vl
            else:
                wait += 1
                if wait >= 10 and lr > 1e-6:
                    lr = lr * 0.5
                    out.append(f'\nEpoch {e}: ReduceLROnPlateau reducing learning rate to {f32(lr)}.\n')
                    wait = 0
    desc = f'Keras {"3" if k3 else "2"} model.fit verbose=1, one line per epoch; steps = epochs'
    if not note:
        note = f'healthy: epoch loss {L0:.2f}->{Linf:.2f}, noise sigma {sig:.3f}'
    return {'text': ''.join(out), 'ext': 'log', 'fmt': 'plain-keras', 'step_of': list(range(1, E + 1)),
            'span': (1, E), 'k': k, 'notes': f'{desc}; {note}'}


# ----------------------------------------------------------------------------- python logging module
def gen_logging(rng, kind, sev):
    var = rng.choice(['kv', 'hydra', 'colon'])
    li = rng.choice([1, 10, 10, 50, 100])
    n = rng.randint(100, 3000 if li < 50 else 1500)
    if kind == 'memory_leak':
        n = min(3000, rng.randint(max(100, 1500 // li), max(120, 6000 // li)))
    steps = [(i + 1) * li for i in range(n)]
    L0, Linf = rng.uniform(9.5, 11.0), rng.uniform(2.2, 3.4)
    if rng.random() < 0.3:
        L0, Linf = rng.uniform(1.5, 2.5), rng.uniform(0.8, 1.3)
    sig = rng.uniform(0.008, 0.02) * (2.5 if li == 1 else 1.0)
    tps0 = rng.choice([4000, 12000, 30000, 90000, 250000]) * rng.uniform(0.8, 1.2)
    host = kind == 'memory_leak' and rng.random() < 0.5
    cap = rng.choice([80.0, 40.0, 94.0]) if not host else rng.choice([256.0, 512.0, 1024.0])
    mem0 = cap * rng.uniform(0.3, 0.45) if not host else rng.uniform(20, 60)
    S = lm_series(rng, n, steps, L0, Linf, sig, logu(rng, 0.2, 1.5), tps0, mem0, cap)
    k = None
    note = ''
    if kind != 'healthy':
        k = pick_k(rng, n, *onset_range(kind))
        note = inject_generic(rng, kind, S, k, sev, nf=('persist', 'inf_loss', 'grad_once'))
        if host:
            note = note.replace('mem ', 'host RSS ', 1)
    lv = S['loss'].vals()
    gv = S['gn'].vals()
    tv = S['tps'].vals()
    mv = S['mem'].vals()
    clock = Clock(rng)
    name = rng.choice(['__main__', 'train', 'trainer', 'pretrain'])
    lrf = lr_fn(rng.choice(['cosine', 'linear', 'wsd']), steps[-1], rng.choice([3e-4, 6e-4, 1e-4, 2e-5]), int(steps[-1] * 0.02))
    memkey = 'rss' if host else rng.choice(['mem', 'gpu_mem', 'max_mem_alloc'])
    tokkey = rng.choice(['tokens_per_sec', 'tok/s', 'throughput'])

    peak_lr = lrf(int(steps[-1] * 0.02) + 1)
    lines_no = {'cfg': rng.randint(40, 120), 'step': rng.randint(180, 400), 'eval': rng.randint(400, 500),
                'ckpt': rng.randint(500, 600), 'warn': rng.randint(60, 140)}
    where = ['step']

    def pre(level='INFO'):
        if var == 'kv':
            return f'{clock.log()} - {level} - ' if name == '__main__' else f'{clock.log()} - {name} - {level} - '
        if var == 'hydra':
            return f'[{clock.log()}][{name}][{level}] - '
        return f'{clock.t.strftime("%Y-%m-%d %H:%M:%S")} {level:<8} [{name}.py:{lines_no[where[0]]}] '

    where[0] = 'cfg'
    out = [pre() + f'Starting training run with config: lr={peak_lr:g}, world_size={rng.choice([8, 16, 64])}\n',
           pre() + f'Model has {rng.uniform(0.1, 8):.2f}B parameters\n']
    if rng.random() < 0.5:
        where[0] = 'warn'
        out.append(pre('WARNING') + 'torch.compile is disabled; falling back to eager mode\n')
    ev = max(li, steps[-1] // rng.randint(5, 25) // li * li)
    sv = ev * rng.choice([1, 2, 4])
    for i, s in enumerate(steps):
        dt = li * 4096 * 8 / tv[i]
        clock.adv(dt)
        lo, g = lv[i], gv[i]
        if var == 'kv':
            body = f'step={s} loss={lo:.4f} lr={lrf(s):.3e} grad_norm={g:.3f} {tokkey.replace("/", "_per_")}={int(tv[i])}'
            body += f' {memkey}={mv[i]:.1f}GB'
        elif var == 'hydra':
            body = f'step {s} | loss {lo:.4f} | lr {lrf(s):.2e} | gnorm {g:.3f} | tok/s {int(tv[i]):,} | {memkey} {mv[i]:.2f}GB'
        else:
            body = f'step: {s}, loss: {lo:.4f}, grad_norm: {g:.4f}, lr: {lrf(s):.4e}, throughput: {tv[i]:.0f} tok/s, {memkey}: {mv[i]:.2f} GiB'
        where[0] = 'step'
        out.append(pre() + body + '\n')
        if s % ev == 0:
            where[0] = 'eval'
            vl = S['loss'].trend[i] * rng.uniform(1.0, 1.03)
            if S.get('nan_from') is not None and i >= S['nan_from']:
                vl = NAN
            out.append(pre() + f'eval step={s} val_loss={vl:.4f} val_ppl={math.exp(min(vl, 50)) if fin(vl) else NAN:.2f}\n')
            clock.adv(rng.uniform(10, 60))
        if s % sv == 0:
            clock.adv(rng.uniform(5, 40))
            where[0] = 'ckpt'
            out.append(pre() + f'Saved checkpoint to /ckpt/run-{rng.randint(1, 99)}/step_{s:07d}.pt\n')
    if kind == 'memory_leak' and rng.random() < 0.3 and not host:
        where[0] = 'warn'
        out.append(pre('WARNING') + f'High memory pressure: {memkey}={mv[-1]:.1f}GB of {cap:.0f}GB\n')
    desc = f'python logging style={var} log every {li} steps; {memkey} is {"host RSS" if host else "GPU memory"}'
    if not note:
        note = f'healthy: loss {L0:.2f}->{Linf:.2f}, noise sigma {sig:.3f}, ~{tps0:.0f} tok/s, memory flat'
    return {'text': ''.join(out), 'ext': 'log', 'fmt': 'plain-logging', 'step_of': steps, 'span': (steps[0], steps[-1]),
            'k': k, 'notes': f'{desc}; {note}'}


# ----------------------------------------------------------------------------- torchtitan
def gen_torchtitan(rng, kind, sev):
    lf = rng.choice([1, 10, 10, 10])
    n = rng.randint(100, 1500 if lf == 1 else 900)
    if kind == 'memory_leak':
        n = min(3000, rng.randint(max(100, 1000 // lf), max(120, 4000 // lf)))
    steps = [1] + [i * lf for i in range(1, n)] if lf > 1 else list(range(1, n + 1))
    model = rng.choice([('Llama 3 8B', 'llama3 8B', 8030261248, 79.11, (4096, 32, 32, 8, 1.3)),
                        ('Llama 3 70B', 'llama3 70B', 70553706496, 139.81, (8192, 80, 64, 8, 1.3)),
                        ('Llama 3 debug', 'llama3 debugmodel', 6139136, 79.11, (256, 6, 16, 16, None)),
                        ('Llama 3.1 405B', 'llama3 405B', 405853388800, 139.81, (16384, 126, 128, 8, 1.2))])
    dim, nly, nh, nkv, ffm = model[4]
    gpu = 'NVIDIA H100 80GB HBM3' if model[3] < 100 else 'NVIDIA H200'
    cap = model[3]
    mem0 = cap * rng.uniform(0.35, 0.55) if kind == 'memory_leak' else cap * rng.uniform(0.4, 0.85)
    tps0 = {8030261248: rng.uniform(5000, 7500), 70553706496: rng.uniform(700, 1000), 6139136: rng.uniform(50000, 120000),
            405853388800: rng.uniform(100, 180)}[model[2]]
    S = lm_series(rng, n, steps, rng.uniform(11.8, 12.4), rng.uniform(2.0, 3.2), rng.uniform(0.006, 0.02), logu(rng, 0.2, 1.0),
                  tps0, mem0, cap)
    k = None
    note = ''
    if kind != 'healthy':
        k = pick_k(rng, n, *onset_range(kind))
        note = inject_generic(rng, kind, S, k, sev)
        note = note.replace('mem ', 'max reserved memory ', 1)
    lv = S['loss'].vals()
    gv = S['gn'].vals()
    tv = S['tps'].vals()
    mv = S['mem'].vals()
    color = rng.random() < 0.5
    C = {'r': '\033[31m', 'g': '\033[32m', 'y': '\033[33m', 'b': '\033[34m', 'm': '\033[35m', 'c': '\033[36m', 'x': '\033[39m'} \
        if color else {c: '' for c in 'rgybmcx'}
    rank = rng.random() < 0.7
    newer = rng.random() < 0.5
    clock = Clock(rng)
    peak_tflops = 989.0  # bf16 dense, H100/H200 SXM

    def pre():
        return ('[rank0]:' if rank else '') + f'[titan] {clock.log()} - root - INFO - '

    out = [pre() + f'Starting job: {model[0]} training\n',
           pre() + f'Building 1-D device mesh with [\'dp_shard\'], [{rng.choice([8, 16, 64, 128])}]\n',
           pre() + '[GC] Initial GC collection. 0.00 seconds.\n',
           pre() + f'Building tiktoken tokenizer locally from ./assets/tokenizer/original/tokenizer.model\n',
           pre() + 'TikTokenizer built: #words 128256, BOS ID 128000, EOS ID 128001\n',
           pre() + 'Preparing c4 dataset from allenai/c4\n',
           pre() + f'Building {model[1]} with ModelArgs(dim={dim}, n_layers={nly}, n_heads={nh}, n_kv_heads={nkv}, vocab_size={128256 if dim > 256 else 2000}, multiple_of={1024 if dim > 256 else 256}, ffn_dim_multiplier={ffm}, norm_eps=1e-05, rope_theta=500000, max_seq_len=8192, depth_init=True, norm_type=\'rmsnorm\')\n',
           pre() + f'{C["b"]}Model {model[1]} {C["r"]}size: {model[2]:,} total parameters{C["x"]}\n',
           pre() + 'Applied selective activation checkpointing to the model\n',
           pre() + 'Applied FSDP to the model\n',
           pre() + f'CUDA capacity: {gpu} with {cap:.2f}GiB memory\n',
           pre() + f'CUDA memory usage for model: {cap * 0.05:.2f}GiB({5.0 + rng.random():.2f}%)\n',
           pre() + f'Training starts at step 1, with local batch size 1, global batch size {rng.choice([8, 16, 64])}, sequence length 8192, total steps {steps[-1]} (warmup {rng.choice([200, 600, 2000])})\n']
    gcf = rng.choice([50, 100])
    ck = rng.choice([500, 1000, 250])
    for i, s in enumerate(steps):
        dt = 8192 / tv[i] * (s - (steps[i - 1] if i else 0))
        clock.adv(dt)
        tfl = tv[i] * 6 * model[2] / 1e12 * 1.05
        mfu = tfl / peak_tflops * 100
        loss = lv[i]
        mem = mv[i]
        line = f'{C["r"]}step: {s:2}  {C["g"]}loss: {loss:7.4f}  '
        if newer:
            line += f'{C["y"]}grad_norm: {gv[i]:7.4f}  '
        line += (f'{C["c" if newer else "y"]}memory: {mem:5.2f}GiB({mem / cap * 100:.2f}%)  '
                 f'{C["b"]}{"tps" if newer else "wps"}: {round(tv[i]):,}  '
                 f'{C["c"]}tflops: {tfl:,.2f}  {C["m"]}mfu: {mfu:.2f}%{C["x"]}')
        out.append(pre() + line + '\n')
        if i == 0:
            out.append(pre() + 'Synchronizing and adjusting timeout for all ProcessGroups to 0:01:40\n')
        if any(steps[i - 1] < g <= s for g in range(gcf, s + 1, gcf)) if i else False:
            out.append(pre() + f'[GC] Performing periodical GC collection. {rng.uniform(0.02, 0.09):.2f} seconds.\n')
        if i and any(steps[i - 1] < c <= s for c in range(ck, s + 1, ck)):
            out.append(pre() + 'Saving the checkpoint (or staging if async is enabled).\n')
            t = rng.uniform(5, 60)
            clock.adv(t)
            out.append(pre() + f'[GC] GC collection invoked by checkpointer. {rng.uniform(0.02, 0.06):.2f} seconds.\n')
            out.append(pre() + f'Finished saving the checkpoint (or staging if async is enabled)in {t:.2f} seconds.\n')
    out.append(pre() + 'Sleeping 2 seconds for other ranks to complete\n')
    out.append(pre() + 'Training completed\n')
    desc = f'torchtitan {model[0]} log_freq={lf} ({"ANSI colours" if color else "no colour"}); memory is max reserved'
    if not note:
        note = f'healthy: loss ~12->{S["loss"].trend[-1]:.2f}, ~{tps0:.0f} tps, memory flat at {mem0:.1f}GiB'
    return {'text': ''.join(out), 'ext': 'log', 'fmt': 'plain-torchtitan', 'step_of': steps, 'span': (steps[0], steps[-1]),
            'k': k, 'notes': f'{desc}; {note}'}


# =============================================================================
# generic W&B-style JSONL
# =============================================================================

def softmax(z):
    m = max(z)
    e = [math.exp(v - m) for v in z]
    s = sum(e)
    return [v / s for v in e]


def eff_frac(p):
    h = -sum(v * math.log(v) for v in p if v > 0)
    return math.exp(h) / len(p)


def moe_state(rng, n, kind, sev, k):
    E = rng.choice([8, 8, 16, 64])
    rep = rng.choice(['perexp', 'perexp', 'counts', 'entnorm']) if E <= 16 else 'entnorm'
    nl = rng.choice([2, 3, 4])
    layers = sorted(rng.sample(range(1, rng.choice([12, 24, 32])), nl))
    drop_metric = rng.random() < 0.5
    variant = None
    if kind == 'expert_collapse':
        variant = 'drop' if rng.random() < 0.33 else 'concentrate'
        drop_metric = drop_metric or variant == 'drop'
    bias = [[rng.gauss(0, 0.12) for _ in range(E)] for _ in layers]
    bad = set([rng.randrange(nl)]) if rng.random() < 0.7 else set(range(nl))
    hot = rng.sample(range(E), max(1, rng.randint(1, max(1, E // 4))))
    target = lerp(0.45, 0.12, sev) * rng.uniform(0.9, 1.05)
    ramp = rng.randint(10, 60)
    delta = 0.0
    if variant == 'concentrate':
        lo, hi = 0.0, 20.0
        for _ in range(50):
            mid = (lo + hi) / 2
            z = [b + (mid if e in hot else 0.0) for e, b in enumerate(bias[0])]
            if eff_frac(softmax(z)) > target:
                lo = mid
            else:
                hi = mid
        delta = hi
        if len(hot) >= E * target:  # hot set too large to go under target: shrink it
            hot = hot[:max(1, int(E * target * 0.5))]
            delta *= 1.5
    drop_top = lerp(0.22, 0.5, sev) * rng.uniform(0.95, 1.05)
    loads, drops = [], []
    walk = [[0.0] * E for _ in layers]
    for i in range(n):
        row = []
        for li_, b in enumerate(bias):
            walk[li_] = [0.995 * w + rng.gauss(0, 0.01) for w in walk[li_]]
            z = [bb + w + rng.gauss(0, 0.04) for bb, w in zip(b, walk[li_])]
            if i < 5:
                z = [v * (1 + (5 - i) * 0.3) for v in z]
            if variant and li_ in bad and i >= k:
                t = min(1.0, (i - k + 1) / ramp)
                if variant == 'concentrate':
                    z = [v + (delta * t if e in hot else 0.0) for e, v in enumerate(z)]
                else:
                    z = [v + (1.2 * t if e in hot else 0.0) for e, v in enumerate(z)]
            row.append(softmax(z))
        loads.append(row)
        d = abs(rng.gauss(0.008, 0.004))
        if variant == 'drop' and i >= k:
            d = lerp(d, drop_top, min(1.0, (i - k + 1) / ramp)) * math.exp(rng.gauss(0, 0.03))
        drops.append(d)
    effs = [eff_frac(loads[-1][li_]) for li_ in range(nl)]
    note = ''
    if variant == 'concentrate':
        note = (f'routing in layer(s) {[layers[b] for b in sorted(bad)]} concentrates on {len(hot)}/{E} experts over {ramp} points: '
                f'effective experts {min(effs) * 100:.0f}% at the end')
    elif variant == 'drop':
        note = f'dropped-token fraction rises to {drop_top * 100:.0f}% over {ramp} points (layers {[layers[b] for b in sorted(bad)]} imbalanced)'
    return {'E': E, 'rep': rep, 'layers': layers, 'loads': loads, 'drops': drops, 'drop_metric': drop_metric,
            'note': note, 'tokens_per_layer': rng.choice([524288, 1048576, 4194304])}


def gen_jsonl(rng, kind, sev, style):
    if kind in ('kl_spike', 'kl_runaway', 'entropy_collapse', 'reward_hacking', 'reward_saturation'):
        dom = 'rl'
    elif kind == 'expert_collapse':
        dom = 'moe'
    elif kind == 'healthy':
        dom = rng.choice(['lm', 'lm', 'moe', 'rl', 'rl'])
    else:
        dom = 'lm' if rng.random() < 0.7 else 'moe'
    if dom == 'rl':
        return gen_jsonl_rl(rng, kind, sev)
    ns = rng.random() < 0.75
    li = rng.choice([1, 5, 10, 10, 50])
    n = rng.randint(200, 3000 if li <= 10 else 1200)
    if kind == 'memory_leak':
        n = min(3000, rng.randint(max(200, 1500 // li), max(220, 5000 // li)))
    steps = [(i + 1) * li for i in range(n)]
    host = kind == 'memory_leak' and rng.random() < 0.4
    cap = rng.choice([80.0, 80.0, 40.0, 141.0]) if not host else rng.choice([512.0, 1024.0, 2048.0])
    mem0 = cap * rng.uniform(0.3, 0.45) if (kind == 'memory_leak' and not host) else (cap * rng.uniform(0.35, 0.9) if not host else rng.uniform(30, 120))
    tps0 = rng.choice([2.5e4, 8e4, 3e5, 1.2e6, 4e6]) * rng.uniform(0.7, 1.3)
    L0, Linf = rng.uniform(10.3, 11.2), rng.uniform(2.0, 3.2)
    sig = rng.uniform(0.006, 0.02) * (2.0 if li == 1 else 1.0)
    S = lm_series(rng, n, steps, L0, Linf, sig, logu(rng, 0.15, 1.2), tps0, mem0, cap)
    if host:
        S['mem'] = Ser(rng, [mem0 * (1 + 0.02 * math.sin(i / 7.0)) for i in range(n)], 0.004, df=None)
    k = None
    note = ''
    if kind != 'healthy' and kind != 'expert_collapse':
        k = pick_k(rng, n, *onset_range(kind))
        note = inject_generic(rng, kind, S, k, sev, nf=('persist', 'inf_loss', 'grad_once'))
        if host:
            note = note.replace('mem ', 'host RSS ', 1)
    if kind == 'expert_collapse':
        k = pick_k(rng, n, *onset_range(kind))
    moe = moe_state(rng, n, kind, sev, k if kind == 'expert_collapse' else n + 10) if dom == 'moe' else None
    if moe and kind == 'expert_collapse':
        note = moe['note']
    lv, gv, tv, mv = S['loss'].vals(), S['gn'].vals(), S['tps'].vals(), S['mem'].vals()
    lrf = lr_fn(rng.choice(['cosine', 'wsd', 'linear']), steps[-1], rng.choice([3e-4, 6e-4, 1.5e-4, 1e-3]), int(steps[-1] * 0.01) + 1,
                floor=3e-5)
    clock = Clock(rng)
    t0 = clock.unix()
    wb = rng.random() < 0.4
    dense = rng.random() < 0.25
    ev = max(li, steps[-1] // rng.randint(6, 25) // li * li)
    K = lambda a, b: a if ns else b
    rows = []
    seqtok = tps0 * rng.uniform(0.3, 8.0)
    for i, s in enumerate(steps):
        st = li * seqtok / tv[i]
        clock.adv(st)
        d = {'step': s}
        if wb:
            d['_step'] = s
            d['_runtime'] = round(clock.unix() - t0, 3)
            d['_timestamp'] = round(clock.unix(), 6)
        d[K('train/loss', 'loss')] = lv[i]
        d[K('train/grad_norm', 'grad_norm')] = gv[i]
        d[K('train/lr', 'lr')] = lrf(s)
        d[K('perf/tokens_per_sec', 'tokens_per_sec')] = round(tv[i], 1)
        d[K('perf/step_time_s', 'step_time')] = round(st / li, 4)
        if rng.random() < 2:
            d[K('perf/mfu', 'mfu')] = round(tv[i] / tps0 * 0.42 * rng.uniform(0.99, 1.01), 4)
        if host:
            d[K('sys/host_rss_gb', 'host_mem_gb')] = round(mv[i], 3)
            d[K('sys/gpu_mem_gb', 'gpu_mem_gb')] = round(cap * 0.0 + 61.2 + rng.gauss(0, 0.05), 2)
        else:
            d[K('sys/gpu_mem_gb', 'gpu_mem_gb')] = round(mv[i], 3)
            d[K('sys/gpu_mem_reserved_gb', 'gpu_mem_reserved_gb')] = round(min(cap, mv[i] * 1.12 + 0.5), 2)
        if moe:
            E = moe['E']
            ld = moe['loads'][i]
            auxs = []
            for li_, L in enumerate(moe['layers']):
                p = ld[li_]
                auxs.append(E * sum(v * v for v in p))
                if moe['rep'] == 'perexp':
                    for e in range(E):
                        d[f'moe/layer_{L}/expert_{e}_load'] = round(p[e], 5)
                elif moe['rep'] == 'counts':
                    tot = moe['tokens_per_layer']
                    for e in range(E):
                        d[f'moe/layer_{L}/tokens_per_expert/{e}'] = int(p[e] * tot)
                else:
                    h = -sum(v * math.log(v) for v in p if v > 0)
                    d[f'moe/layer_{L}/load_entropy_norm'] = round(h / math.log(E), 5)
                    d[f'moe/layer_{L}/max_load_ratio'] = round(max(p) * E, 4)
            if moe['rep'] == 'entnorm':
                d['moe/num_experts'] = E
            d['moe/aux_loss'] = round(sum(auxs) / len(auxs) * 0.01, 6)
            if moe['drop_metric']:
                d['moe/dropped_token_frac'] = round(moe['drops'][i], 5)
        rows.append(d)
        if s % ev == 0:
            vl = S['loss'].trend[i] * rng.uniform(1.0, 1.03)
            if S.get('nan_from') is not None and i >= S['nan_from']:
                vl = NAN
            e = {'step': s}
            if wb:
                e['_step'] = s
                e['_runtime'] = round(clock.unix() - t0, 3)
                e['_timestamp'] = round(clock.unix(), 6)
            e[K('eval/loss', 'val_loss')] = vl
            e[K('eval/ppl', 'val_ppl')] = math.exp(min(vl, 50)) if fin(vl) else NAN
            rows.append(e)
            clock.adv(rng.uniform(20, 120))
    text = jsonl_dump(rows, dense)
    desc = f'{dom} {"slash-namespaced" if ns else "flat"} keys, every {li} steps' + (', W&B _step/_runtime' if wb else '') + \
        (', dense rows with null' if dense else '')
    if moe:
        desc += f', MoE E={moe["E"]} repr={moe["rep"]}'
    if not note:
        note = f'healthy: loss {L0:.2f}->{Linf:.2f}, noise sigma {sig:.3f}, memory flat ~{mem0:.1f}GB'
    return {'text': text, 'ext': 'jsonl', 'fmt': 'jsonl', 'step_of': steps, 'span': (steps[0], steps[-1]), 'k': k,
            'notes': f'{desc}; {note}'}


def jsonl_dump(rows, dense):
    if dense:
        keys = []
        for r in rows:
            for kk in r:
                if kk not in keys:
                    keys.append(kk)
        rows = [{kk: r.get(kk) for kk in keys} for r in rows]
    return ''.join(json.dumps(r) + '\n' for r in rows)


def gen_jsonl_rl(rng, kind, sev):
    verl = rng.random() < 0.35 and kind not in ('reward_saturation',)
    li = rng.choice([1, 1, 1, 5])
    n = rng.randint(150, 1500 if li == 1 else 600)
    if kind in ('kl_runaway', 'reward_hacking'):
        n = max(n, 250)
    steps = [(i + 1) * li for i in range(n)]
    early = kind != 'healthy'
    mid = rng.uniform(0.05, 0.14) if early else rng.uniform(0.08, 0.4)
    rm = kind == 'reward_hacking' or rng.random() < 0.2
    if rm:
        a = rng.uniform(-1.5, 0.5)
        R = Ser(rng, rise(n, a, a + rng.uniform(1.5, 3.5), mid, rng.uniform(0.03, 0.1)), rng.uniform(0.08, 0.25), mode='add')
        rmax = None
    else:
        a = rng.uniform(0.05, 0.35)
        R = Ser(rng, rise(n, a, min(0.86, a + rng.uniform(0.15, 0.5)), mid, rng.uniform(0.03, 0.1)), rng.uniform(0.02, 0.05), mode='add')
        rmax = 1.0
    tau = rng.uniform(0.02, 0.08) if early else rng.uniform(0.03, 0.25)
    kset = logu(rng, 0.0008, 0.02)
    K = Ser(rng, [kset * (1 - math.exp(-(i / (n - 1)) / tau)) for i in range(n)], rng.uniform(0.12, 0.25), cap=(0.5, 1.9))
    K.ovr[0] = 0.0
    e0 = rng.uniform(0.3, 1.3)
    ed = rng.uniform(0.05, 0.33)
    E = Ser(rng, [e0 * (1 - ed * i / (n - 1)) for i in range(n)], rng.uniform(0.02, 0.05))
    maxlen = rng.choice([1024, 2048, 4096, 8192])
    l0 = maxlen * rng.uniform(0.15, 0.4)
    lg = rng.uniform(0.95, 1.5)
    Ln = Ser(rng, [l0 * lerp(1.0, lg, i / (n - 1)) for i in range(n)], rng.uniform(0.03, 0.07))
    G = Ser(rng, gn_trend(n, logu(rng, 0.05, 0.5), rng.uniform(0.8, 2.0), 0.05), rng.uniform(0.15, 0.3), cap=(0.5, 2.2))
    S = {'n': n, 'kl': K, 'ent': E, 'len': Ln, 'gn': G, 'reward': R, 'steps': steps, 'reward_start': R.trend[0]}
    k = None
    note = ''
    pin = None
    eacc_fall = None
    if kind != 'healthy':
        k = pick_k(rng, n, *onset_range(kind))
        if kind in ('kl_spike', 'kl_runaway', 'entropy_collapse'):
            note = inject_generic(rng, kind, S, k, sev)
        elif kind == 'reward_saturation':
            A = rng.randint(8, 25)
            for j in range(max(1, k - A), k):
                t = (j - (k - A)) / A
                R.trend[j] = lerp(R.trend[j], 0.97, t ** 1.5)
                R.quiet(j, 1 - 0.7 * t)
            for j in range(k, n):
                R.ovr[j] = 1.0
            pin = k
            note = f'reward pinned at 1.0 with reward_std 0 from onset (approach over {A} points)'
        elif kind == 'reward_hacking':
            extra = rng.uniform(0.8, 2.0)
            for j in range(k, n):
                R.trend[j] += extra * (j - k) / (n - 1 - k)
            if rng.random() < 0.6:
                f = math.exp(lerp(math.log(0.6), math.log(0.22), sev))
                eacc_fall = (k, f)
                note = f'RM reward keeps rising (+{extra:.1f}) while held-out eval accuracy falls to {f * 100:.0f}% of its peak'
            else:
                F = lerp(2.6, 6.0, sev)
                ef = rng.uniform(0.45, 0.68)
                ln = rng.randint(max(10, (n - k) // 3), max(11, n - k - 3))
                for j in range(k, n):
                    t = min(1.0, (j - k) / ln)
                    Ln.trend[j] *= geo(1.0, F, t)
                    E.trend[j] *= lerp(1.0, ef, t)
                maxlen = max(maxlen, int(l0 * lg * F * 1.2))
                note = (f'RM reward keeps rising (+{extra:.1f}) while response length balloons x{F:.1f} over {ln} points and '
                        f'entropy falls to {ef * 100:.0f}%')
    rv, kv, ev, lv, gv = R.vals(), K.vals(), E.vals(), Ln.vals(), G.vals()
    peak_acc = rng.uniform(0.3, 0.8)
    evi = max(1, n // rng.randint(10, 25))
    clock = Clock(rng)
    beta = rng.choice([0.001, 0.01, 0.04])
    rows = []
    ns = rng.random() < 0.7
    for i, s in enumerate(steps):
        r = rv[i] if rmax is None else clamp(rv[i], 0.0, 1.0)
        if pin is not None and i >= pin:
            rs = 0.0
        elif rmax:
            rs = math.sqrt(max(0.0, r * (1 - r))) * rng.uniform(0.75, 0.85)
        else:
            rs = abs(rng.gauss(0.9, 0.1))
        ml = min(lv[i], maxlen)
        st = rng.uniform(40, 200) * ml / l0
        clock.adv(st)
        if verl:
            d = {'step': s, 'actor/entropy': ev[i], 'actor/kl_loss': kv[i], 'actor/kl_coef': beta,
                 'actor/pg_loss': rng.gauss(0, 0.02), 'actor/pg_clipfrac': abs(rng.gauss(0.002, 0.001)),
                 'actor/ppo_kl': abs(rng.gauss(0, 2e-4)), 'actor/grad_norm': gv[i], 'actor/lr': 1e-6,
                 'critic/score/mean': r, 'critic/score/max': (rmax if rmax else r + 2 * rs) if not (pin is not None and i >= pin) else 1.0,
                 'critic/score/min': (0.0 if rmax else r - 2 * rs) if not (pin is not None and i >= pin) else 1.0,
                 'critic/rewards/mean': r, 'critic/advantages/mean': rng.gauss(0, 1e-3),
                 'response_length/mean': ml, 'response_length/max': float(min(maxlen, int(ml * rng.uniform(2, 4)))),
                 'response_length/min': float(int(ml * rng.uniform(0.05, 0.3))),
                 'response_length/clip_ratio': clamp((ml / maxlen - 0.7) * 2, 0, 1) + abs(rng.gauss(0, 0.002)),
                 'timing_s/step': st, 'perf/throughput': ml * 512 / st}
        else:
            P = (lambda x: 'train/' + x) if ns else (lambda x: x)
            d = {'step': s, P('reward'): r, P('reward_std'): rs, P('kl'): kv[i], P('entropy'): ev[i], P('response_length'): ml,
                 P('loss'): beta * kv[i] + rng.gauss(0, 0.002), P('grad_norm'): gv[i], P('lr'): 1e-6,
                 P('step_time'): st}
        rows.append(d)
        if (i + 1) % evi == 0:
            if eacc_fall:
                kk, f = eacc_fall
                acc = peak_acc * min(1.0, 0.6 + 0.4 * i / kk) if i < kk else peak_acc * lerp(1.0, f, min(1.0, (i - kk) / (0.7 * (n - 1 - kk))))
            else:
                acc = peak_acc * min(1.0, 0.6 + 0.4 * i / (0.3 * n))
            acc = clamp(acc + rng.gauss(0, 0.01), 0, 1)
            if verl:
                rows.append({'step': s, 'val-core/openai/gsm8k/reward/mean@1': acc})
            else:
                rows.append({'step': s, ('eval/accuracy' if ns else 'eval_accuracy'): acc})
    desc = ('verl-style keys (critic/score/*, actor/*)' if verl else ('train/* keys' if ns else 'flat keys')) + f', every {li} steps'
    if not note:
        note = f'healthy RL: reward {R.trend[0]:.2f}->{R.trend[-1]:.2f}, kl 0 -> ~{kset:.2g}, entropy -{ed * 100:.0f}%'
    return {'text': jsonl_dump(rows, False), 'ext': 'jsonl', 'fmt': 'jsonl', 'step_of': steps, 'span': (steps[0], steps[-1]),
            'k': k, 'notes': f'rl {desc}; {note}'}


# =============================================================================
# driver
# =============================================================================

PLAIN = {'nanogpt': gen_nanogpt, 'megatron': gen_megatron, 'epochstep': gen_epochstep, 'keras': gen_keras,
         'logging': gen_logging, 'torchtitan': gen_torchtitan}


def generate(fmt, style, kind, sev, rng):
    if fmt == 'hf':
        return gen_hf(rng, kind, sev, style)
    if fmt == 'trl':
        return gen_trl(rng, kind, sev, style)
    if fmt == 'lightning':
        return gen_lightning(rng, kind, sev, style)
    if fmt == 'sb3':
        return gen_sb3(rng, kind, sev, style)
    if fmt == 'jsonl':
        return gen_jsonl(rng, kind, sev, style)
    return PLAIN[style](rng, kind, sev)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('outdir')
    ap.add_argument('--seed', type=int, default=4242)
    args = ap.parse_args()
    runs_dir = os.path.join(args.outdir, 'runs')
    os.makedirs(runs_dir, exist_ok=True)
    for f in os.listdir(runs_dir):
        os.remove(os.path.join(runs_dir, f))
    master = random.Random(args.seed)
    jobs = []
    for fmt, style, kind, cnt in PLAN:
        for _ in range(cnt):
            jobs.append((fmt, style, kind))
    # severity: spread each kind's runs from "clearly past the definition" to "strongly past"
    by_kind = {}
    for j in jobs:
        by_kind.setdefault(j[2], []).append(j)
    sev_of = {}
    for kind, lst in by_kind.items():
        order = list(range(len(lst)))
        master.shuffle(order)
        for rank, idx in enumerate(order):
            sev_of[(kind, idx)] = rank / max(1, len(lst) - 1)
    labelled = []
    counters = {}
    for idx, (fmt, style, kind) in enumerate(jobs):
        c = counters.get(kind, 0)
        counters[kind] = c + 1
        sev = sev_of[(kind, c)] if kind != 'healthy' else 0.0
        rng = random.Random(f'{args.seed}:{idx}:{fmt}:{style}:{kind}')
        res = generate(fmt, style, kind, sev, rng)
        labelled.append((fmt, style, kind, res))
    master.shuffle(labelled)
    labels = []
    for fmt, style, kind, res in labelled:
        h = hashlib.sha1(f'{args.seed}:{res["fmt"]}:{len(labels)}:{len(res["text"])}'.encode()).hexdigest()[:6]
        name = f'{res["fmt"]}-{h}.{res["ext"]}'
        with open(os.path.join(runs_dir, name), 'w', encoding='utf-8', newline='') as fh:
            fh.write(res['text'])
        first, last = res['span']
        onset = None if res['k'] is None else res['step_of'][res['k']]
        steps = last - first + 1
        if kind != 'healthy':
            frac = (onset - first) / max(1, last - first)
            if not 0.3 <= frac <= 0.8:
                print(f'warning: {name} onset at {frac:.2f} of the run', file=sys.stderr)
        labels.append({'file': name, 'kind': kind, 'onset': onset, 'steps': steps, 'format': res['fmt'],
                       'notes': res['notes']})
    labels.sort(key=lambda d: d['file'])
    with open(os.path.join(args.outdir, 'labels.json'), 'w') as fh:
        json.dump(labels, fh, indent=1)
        fh.write('\n')
    # summary: format x kind
    fmts = sorted(set(l['format'] for l in labels), key=lambda f: (f.split('-')[0], f))
    kinds = [k for k in KINDS if any(l['kind'] == k for l in labels)]
    ab = {k: ''.join(w[0] for w in k.split('_'))[:3] if k != 'healthy' else 'ok' for k in kinds}
    ab.update({'kl_spike': 'kls', 'kl_runaway': 'klr', 'loss_spike': 'lsp', 'loss_divergence': 'ldv',
               'reward_hacking': 'rwh', 'reward_saturation': 'rws', 'grad_explosion': 'gex', 'grad_vanishing': 'gva',
               'entropy_collapse': 'ent', 'expert_collapse': 'exp', 'memory_leak': 'mem', 'throughput_regression': 'tpt',
               'slow_drift': 'drf', 'nonfinite': 'nan'})
    print(f'wrote {len(labels)} runs to {runs_dir}')
    print('legend: ' + ', '.join(f'{ab[k]}={k}' for k in kinds))
    head = f'{"format":<18}' + ''.join(f'{ab[k]:>5}' for k in kinds) + f'{"total":>7}'
    print(head)
    print('-' * len(head))
    majors = {}
    for f in fmts:
        row = [sum(1 for l in labels if l['format'] == f and l['kind'] == k) for k in kinds]
        majors.setdefault(f.split('-')[0], [0] * len(kinds))
        majors[f.split('-')[0]] = [a + b for a, b in zip(majors[f.split('-')[0]], row)]
        print(f'{f:<18}' + ''.join(f'{v:>5}' if v else '    .' for v in row) + f'{sum(row):>7}')
    print('-' * len(head))
    for m, row in majors.items():
        print(f'{"[" + m + "]":<18}' + ''.join(f'{v:>5}' if v else '    .' for v in row) + f'{sum(row):>7}')
    tot = [sum(1 for l in labels if l['kind'] == k) for k in kinds]
    print(f'{"TOTAL":<18}' + ''.join(f'{v:>5}' for v in tot) + f'{sum(tot):>7}')


if __name__ == '__main__':
    main()
