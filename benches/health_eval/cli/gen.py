#!/usr/bin/env python3
"""Independent synthetic training-run generator for a health-monitor CLI.

usage: python3 gen.py [OUTDIR]      (default: target/health-cli-corpus)
Writes OUTDIR/runs/run_XXX.jsonl (one run per file) and OUTDIR/labels.json.
Standard library only; fixed seed, so the same files every time.
Written from the README's alert table and metric names alone, without reading the
detectors: its faults and benign events are another author's idea of a training run.
"""
import json
import math
import os
import random
import sys

SEED = 7_2024
HERE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "target", "health-cli-corpus")
RUNS = os.path.join(HERE, "runs")
GB = 1e9
NAN = float("nan")
INF = float("inf")

FAULTS = ["loss_spike", "loss_divergence", "nonfinite", "grad_explosion",
          "grad_vanishing", "kl_spike", "kl_runaway", "reward_hacking",
          "entropy_collapse", "memory_leak", "throughput_regression", "slow_drift"]
N_PER_FAULT = 12
N_HEALTHY = 96

METRIC_OF = {"loss_spike": "loss", "loss_divergence": "loss", "slow_drift": "loss",
             "grad_explosion": "grad_norm", "grad_vanishing": "grad_norm",
             "kl_spike": "kl", "kl_runaway": "kl", "reward_hacking": "eval_accuracy",
             "entropy_collapse": "entropy", "memory_leak": "mem/gpu_bytes",
             "throughput_regression": "tokens_per_s"}


# ----------------------------------------------------------------- helpers
def logu(rng, a, b):
    return math.exp(rng.uniform(math.log(a), math.log(b)))


def pick_style(rng):
    """Noise family for one series: iid Gaussian, iid Student-t, or AR(1)."""
    r = rng.random()
    if r < 0.4:
        return dict(dist="gauss", df=0, phi=0.0, clip=4.5)
    if r < 0.7:
        return dict(dist="t", df=rng.choice([3, 4, 5, 8]), phi=0.0, clip=6.0)
    return dict(dist=rng.choice(["gauss", "t"]), df=rng.choice([4, 6]),
                phi=rng.uniform(0.5, 0.95), clip=5.0)


def std_noise(rng, n, style, clip=None):
    """Unit-variance noise sequence of the given style."""
    c = style["clip"] if clip is None else min(clip, style["clip"])
    phi = style["phi"]
    innov = math.sqrt(1 - phi * phi)
    out, e = [], 0.0
    for _ in range(n):
        if style["dist"] == "t":
            df = style["df"]
            z = rng.gauss(0, 1) / math.sqrt(rng.gammavariate(df / 2, 2) / df)
            z *= math.sqrt((df - 2) / df)
        else:
            z = rng.gauss(0, 1)
        z = max(-c, min(c, z))
        e = phi * e + innov * z if phi > 0 else z
        out.append(e)
    return out


def ramp(i, i0, nl):
    """0 before i0; rises linearly to 1 over nl lines (nl<=0: step)."""
    if i < i0:
        return 0.0
    if nl <= 0:
        return 1.0
    return min(1.0, (i - i0 + 1) / nl)


def smoothstep(x):
    x = max(0.0, min(1.0, x))
    return x * x * (3 - 2 * x)


def rnd(x, sig=6):
    if x != x or x in (INF, -INF):
        return x
    return float(f"{x:.{sig}g}")


# ----------------------------------------------------------------- run builder
def build_run(rng, kind, rtype):
    healthy = kind == "healthy"
    notes = []

    # ---- length / logging grid
    min_n = {"memory_leak": 1500, "slow_drift": 1000, "kl_runaway": 800,
             "reward_hacking": 800, "loss_divergence": 400, "grad_vanishing": 500,
             "grad_explosion": 300, "entropy_collapse": 400,
             "throughput_regression": 300}.get(kind, 150)
    T = int(logu(rng, min_n, 5000))
    opts = [1, 1]
    if T >= 600:
        opts += [1, 2]
    if T >= 1200:
        opts += [5]
    if T >= 2500:
        opts += [10]
    if rtype == "rl":
        opts = [1] * 4 + [x for x in opts if x > 1][:1]
    k = rng.choice(opts)
    s0 = rng.choice([0, 1]) if k == 1 else rng.choice([0, k])
    steps = list(range(s0, s0 + T, k))
    N = len(steps)
    t = [float(s - s0) for s in steps]

    def idx_at(frac):
        return max(1, min(N - 2, int(round(frac * (N - 1)))))

    # ---- which metrics
    P = {"pre": dict(lr=.9, grad_norm=.9, tokens_per_s=.8, mem=.65, val_loss=.6, eval_accuracy=.3),
         "ft": dict(lr=.9, grad_norm=.85, tokens_per_s=.6, mem=.5, val_loss=.7, eval_accuracy=.5),
         "rl": dict(lr=.6, grad_norm=.8, tokens_per_s=.6, mem=.5, eval_accuracy=.6, kl=.95,
                    entropy=.8, policy_loss=.8, value_loss=.8, loss=.3)}[rtype]
    has = {m: rng.random() < p for m, p in P.items()}
    if rtype != "rl":
        has["loss"] = True
    algo = rng.choice(["ppo", "grpo"]) if rtype == "rl" else None
    if rtype == "rl":
        has["reward"] = True
        if algo == "grpo":
            has["value_loss"] = False
    need = {"loss_spike": ["loss"], "loss_divergence": ["loss"], "slow_drift": ["loss"],
            "grad_vanishing": ["loss", "grad_norm"], "grad_explosion": ["grad_norm"],
            "kl_spike": ["kl"], "kl_runaway": ["kl"],
            "reward_hacking": ["reward", "eval_accuracy"], "entropy_collapse": ["entropy"],
            "memory_leak": ["mem"], "throughput_regression": ["tokens_per_s"]}.get(kind, [])
    for m in need:
        has[m] = True
    if kind == "nonfinite" and not (has.get("loss") or has.get("grad_norm")):
        has["grad_norm"] = True

    # ---- eval intervals (multiples of k)
    def pick_interval(cands):
        c = [m for m in cands if m % k == 0 and T / m >= 4]
        return rng.choice(c) if c else None
    m_val = pick_interval([50, 100, 200, 250, 500])
    m_acc = pick_interval([20, 25, 40, 50, 100] if rtype == "rl" else [50, 100, 200, 250, 500])
    if kind == "reward_hacking":
        m_acc = None  # chosen later once onset is known
    if m_val is None:
        has["val_loss"] = False
    if m_acc is None and kind != "reward_hacking":
        has["eval_accuracy"] = False

    # ---- learning-rate schedule
    peak = {"pre": logu(rng, 1e-4, 3e-3), "ft": logu(rng, 1e-6, 5e-5), "rl": logu(rng, 1e-7, 5e-6)}[rtype]
    W = 0 if (rtype == "rl" and rng.random() < 0.4) else max(1, int(rng.uniform(0.005, 0.08) * T))
    sched = rng.choice(["cosine", "cosine", "linear", "constant"] +
                       (["restarts"] if T >= 1000 and rtype != "rl" else []))
    if rtype == "rl" and rng.random() < 0.5:
        sched = "constant"
    min_ratio = rng.choice([0.0, 0.1, rng.uniform(0, 0.1)])
    n_cycles = rng.randint(2, 4)
    restarts = []
    if sched == "restarts":
        restarts = [W + (T - W) * c / n_cycles for c in range(1, n_cycles)]
        notes.append(f"lr restarts at {[int(r) for r in restarts]}")

    def lr_at(x):
        if x < W:
            return peak * (x + 1) / W
        p = (x - W) / max(1, T - W)
        lo = peak * min_ratio
        if sched == "cosine":
            return lo + (peak - lo) * 0.5 * (1 + math.cos(math.pi * p))
        if sched == "linear":
            return lo + (peak - lo) * (1 - p)
        if sched == "restarts":
            q = (p * n_cycles) % 1.0
            return lo + (peak - lo) * 0.5 * (1 + math.cos(math.pi * q))
        return peak
    lr = [lr_at(x) for x in t]

    def restart_bump(x, amp, w):
        b = 0.0
        for r in restarts:
            if x >= r:
                b += amp * math.exp(-(x - r) / w)
        return b

    # ---- loss trend
    scale = 1.0 if rng.random() < 0.7 else logu(rng, 0.005, 2.0)
    epochs = 1
    if rtype == "pre":
        L0, floor = rng.uniform(9.5, 11.0), rng.uniform(1.8, 3.2)
        alpha, tau = rng.uniform(0.3, 0.8), logu(rng, 8, 0.03 * T + 12)
        loss_tr = [floor + (L0 - floor) * (1 + x / tau) ** -alpha for x in t]
        loss_sig = rng.uniform(0.005, 0.04)
    elif rtype == "ft":
        L0 = rng.uniform(0.8, 3.0)
        floor = L0 * rng.uniform(0.35, 0.75)
        tau = rng.uniform(0.03, 0.3) * T
        loss_tr = [floor + (L0 - floor) * math.exp(-x / tau) for x in t]
        loss_sig = rng.uniform(0.01, 0.08)
        if kind not in ("slow_drift", "loss_divergence") and T >= 400 and rng.random() < 0.4:
            epochs = rng.randint(2, 4)
            drop = rng.uniform(0.04, 0.15)
            loss_tr = [v * (1 - drop) ** min(epochs - 1, int(x * epochs / T)) for v, x in zip(loss_tr, t)]
            notes.append(f"{epochs} epochs, train loss steps down {drop:.0%} at each epoch boundary")
    else:
        L0 = floor = None
        loss_tr = None
        loss_sig = 0.0
    if loss_tr is not None:
        rb_amp, rb_w = rng.uniform(0.02, 0.1), rng.uniform(10, 60)
        loss_tr = [v * scale * (1 + restart_bump(x, rb_amp, rb_w)) for v, x in zip(loss_tr, t)]
    loss_start = loss_tr[0] if loss_tr else None

    # ---- grad norm trend
    if rtype == "pre":
        g0 = rng.uniform(0.3, 2.0) if rng.random() < 0.7 else logu(rng, 0.01, 100)
        A, te, gsig = rng.uniform(1, 8), rng.uniform(0.01, 0.05) * T, rng.uniform(0.05, 0.2)
    elif rtype == "ft":
        g0 = logu(rng, 0.05, 5)
        A, te, gsig = rng.uniform(0, 3), rng.uniform(0.01, 0.1) * T, rng.uniform(0.08, 0.25)
    else:
        g0 = logu(rng, 0.05, 10)
        A, te, gsig = rng.uniform(0, 1.5), rng.uniform(0.01, 0.1) * T, rng.uniform(0.15, 0.3)
    B = rng.uniform(0.2, 1.0) if rng.random() < 0.4 else 0.0
    g_tr = [g0 * (1 + A * math.exp(-x / te)) * (1 + B * (x / T) ** 2) *
            (1 + restart_bump(x, rng.uniform(0.5, 1.5), 30)) for x in t]
    if B:
        notes.append(f"grad_norm drifts up {1 + B:.1f}x late in training (benign)")

    # ---- RL trends
    kl_tr = rew_tr = ent_tr = acc_rl_tr = None
    if rtype == "rl":
        kf = logu(rng, 0.01, 0.3) if rng.random() < 0.75 else logu(rng, 1e-3, 1.0)
        tk = rng.uniform(0.1, 0.6) * T
        shape = rng.choice(["sat", "sat", "linear", "overshoot"])
        if shape == "sat":
            kl_tr = [kf * (1 - math.exp(-x / tk)) for x in t]
        elif shape == "linear":
            kl_tr = [kf * x / T for x in t]
        else:
            kl_tr = [kf * (1 - math.exp(-x / tk)) + 0.8 * kf * (x / tk) * math.exp(1 - x / tk) for x in t]
        notes.append(f"{algo}, kl->{kf:.3g} ({shape})")
        if rng.random() < 0.5:
            r0, dr, rsd, rclip = rng.uniform(0.05, 0.4), rng.uniform(0.1, 0.4), rng.uniform(0.02, 0.08), True
        else:
            r0, dr, rsd, rclip = rng.uniform(-2, 1), rng.uniform(0.5, 3), rng.uniform(0.1, 0.5), False
        tr_ = rng.uniform(0.1, 0.5) * T
        rew_tr = [r0 + dr * (1 - math.exp(-x / tr_)) for x in t]
        e0, ed, tent = rng.uniform(0.3, 3.0), rng.uniform(0.05, 0.5), rng.uniform(0.2, 1.0) * T
        ent_tr = [e0 * (1 - ed * (1 - math.exp(-x / tent))) for x in t]
        a0, da, ta = rng.uniform(0.2, 0.6), rng.uniform(0.03, 0.2), rng.uniform(0.1, 0.5) * T
        acc_rl_tr = [min(0.99, a0 + da * (1 - math.exp(-x / ta))) for x in t]
        v0 = rng.uniform(0.1, 5)
        vl_tr = [v0 * (0.3 + 0.7 * math.exp(-x / (0.2 * T))) for x in t]

    # ---- throughput / memory trends
    tps_base = logu(rng, 2e3, 4e5)
    tps_tr = [tps_base] * N
    mem_base = rng.uniform(20, 70) * GB if kind != "memory_leak" else rng.uniform(20, 45) * GB
    mramp = max(1, int(rng.uniform(0.01, 0.05) * N))
    mstart = rng.uniform(0.5, 0.9)
    mem_tr = [mem_base * (mstart + (1 - mstart) * min(1, i / mramp)) for i in range(N)]
    if rng.random() < 0.3:
        amp, per = rng.uniform(0.2, 1.0) * GB, rng.uniform(50, 200)
        mem_tr = [v + amp * ((x % per) / per) for v, x in zip(mem_tr, t)]
        notes.append("bounded allocator sawtooth in mem")
    first_eval = None
    if m_val or m_acc:
        mm = m_val or m_acc
        first_eval = next((i for i, s in enumerate(steps) if s > 0 and s % mm == 0), None)
    if first_eval is not None and rng.random() < 0.4:
        jump = rng.uniform(0.5, 3) * GB
        mem_tr = [v + (jump if i >= first_eval else 0) for i, v in enumerate(mem_tr)]
        notes.append("one-time mem step at first eval")

    # ---- trend-type faults
    onset_i = None
    end = N
    if kind == "loss_divergence":
        onset_i = idx_at(rng.uniform(0.3, 0.75))
        F = rng.uniform(3, 30)
        rem_lines = N - onset_i
        L = min(rem_lines, max(20, int(rng.uniform(150, 1200) / k)))
        end = onset_i + L
        expo = rng.random() < 0.6
        base = loss_tr[onset_i]
        for i in range(onset_i, N):
            u = min(1.0, (i - onset_i + 1) / L)
            loss_tr[i] = base * (F ** u if expo else 1 + (F - 1) * u)
            g_tr[i] *= (F ** u) ** 0.5
        notes.append(f"loss rises {'exponentially' if expo else 'linearly'} to {F:.1f}x over {L * k} steps; run killed")
    elif kind == "slow_drift":
        onset_i = idx_at(rng.uniform(0.35, 0.65))
        while (N - onset_i) * k < 300 and onset_i > 1:
            onset_i -= 1
        frac = rng.uniform(0.15, 0.6)
        shp = rng.choice(["linear", "smooth", "sqrt"])
        base = loss_tr[onset_i]
        for i in range(onset_i, N):
            u = (i - onset_i) / max(1, N - 1 - onset_i)
            f = {"linear": u, "smooth": smoothstep(u), "sqrt": math.sqrt(u)}[shp]
            loss_tr[i] = base * (1 + frac * f)
        notes.append(f"loss flat then climbs {frac:.0%} ({shp}) over {(N - onset_i) * k} steps")
    elif kind == "grad_vanishing":
        onset_i = idx_at(rng.uniform(0.25, 0.6))
        R = rng.uniform(50, 600)
        nl = max(2, int(R / k))
        fin = 10 ** -rng.uniform(4, 6)
        base_l = loss_tr[onset_i]
        for i in range(onset_i, N):
            g_tr[i] *= fin ** ramp(i, onset_i, nl)
            loss_tr[i] = base_l
        notes.append(f"grad_norm decays to {fin:.0e}x over {int(R)} steps, loss freezes")
    elif kind == "grad_explosion":
        onset_i = idx_at(rng.uniform(0.25, 0.8))
        F = logu(rng, 10, 10000)
        R = 0 if rng.random() < 0.45 else rng.uniform(20, 300)
        nl = int(R / k)
        for i in range(onset_i, N):
            g_tr[i] *= F ** ramp(i, onset_i, nl)
        if loss_tr and rng.random() < 0.5:
            for i in range(onset_i, N):
                loss_tr[i] *= 1 + 0.25 * ramp(i, onset_i, nl)
        if rng.random() < 0.4:
            end = min(N, onset_i + max(nl + 10, int(rng.uniform(50, 400) / k)))
        notes.append(f"grad_norm x{F:.0f} " + ("suddenly" if R == 0 else f"over {int(R)} steps"))
    elif kind == "kl_runaway":
        Pd = rng.uniform(50, 200)
        nd = rng.uniform(3, 9)
        t0 = max(0.2 * T, T - Pd * nd)
        onset_i = min(N - 5, max(1, int(t0 / k)))
        # make sure the trend is meaningfully positive at onset
        base = max(kl_tr[onset_i], 0.3 * max(kl_tr))
        for i in range(onset_i, N):
            kl_tr[i] = max(kl_tr[i], base * 2 ** ((t[i] - t[onset_i]) / Pd))
        notes.append(f"kl doubles every {Pd:.0f} steps ({(T - t[onset_i]) / Pd:.1f} doublings)")
    elif kind == "reward_hacking":
        onset_i = idx_at(rng.uniform(0.3, 0.6))
        rem = T - t[onset_i]
        cands = [m for m in [20, 25, 40, 50, 100] if m % k == 0 and rem / m >= 6]
        m_acc = rng.choice(cands)
        drop = rng.uniform(0.3, 0.8)
        D = rng.uniform(0.3, 1.0) * rem
        peak_acc = acc_rl_tr[onset_i]
        slope = (dr * rng.uniform(0.5, 2.0)) / rem
        rbase = rew_tr[onset_i]
        for i in range(onset_i, N):
            dt = t[i] - t[onset_i]
            acc_rl_tr[i] = peak_acc * (1 - drop * min(1.0, dt / D))
            rew_tr[i] = rbase + slope * dt
            if rclip:
                rew_tr[i] = min(0.995, rew_tr[i])
            kl_tr[i] *= 1 + rng.uniform(0.3, 0.6) * dt / rem
        notes.append(f"reward keeps rising, eval_accuracy falls {drop:.0%} from peak over {int(D)} steps (eval every {m_acc})")
    elif kind == "entropy_collapse":
        onset_i = idx_at(rng.uniform(0.25, 0.7))
        D = rng.uniform(20, 200)
        nl = max(1, int(D / k))
        f = rng.uniform(0.01, 0.05)
        target = ent_tr[0] * f
        eb = ent_tr[onset_i]
        for i in range(onset_i, N):
            u = ramp(i, onset_i, nl)
            ent_tr[i] = eb * (target / eb) ** u
        notes.append(f"entropy falls to {f:.1%} of start over {int(D)} steps")
    elif kind == "memory_leak":
        onset_i = 0 if rng.random() < 0.3 else idx_at(rng.uniform(0.1, 0.5))
        rem = T - t[onset_i]
        rate = rng.uniform(0.5, 5.0)
        if rate * rem / 1000 < 3:
            rate = 3 * 1000 / rem
        stair = rng.random() < 0.35
        S = rng.uniform(100, 500)
        for i in range(onset_i, N):
            dt = t[i] - t[onset_i]
            if stair:
                dt = S * (1 + math.floor(dt / S))
            mem_tr[i] += rate * GB * dt / 1000
        if onset_i == 0:
            onset_i = max(1, mramp)  # leak visible once allocator warm-up ramp ends
        notes.append(f"mem leak {rate:.2f} GB/1000 steps ({'staircase' if stair else 'linear'})")
    elif kind == "throughput_regression":
        onset_i = idx_at(rng.uniform(0.2, 0.8))
        drop = rng.uniform(0.25, 0.7)
        R = 0 if rng.random() < 0.6 else rng.uniform(5, 50)
        nl = int(R / k)
        for i in range(onset_i, N):
            tps_tr[i] *= 1 - drop * ramp(i, onset_i, nl)
        notes.append(f"tokens_per_s drops {drop:.0%}" + (" suddenly" if R == 0 else f" over {int(R)} steps"))

    # ---- compose observed train series
    def mult_noise(sig, clip=None):
        st = pick_style(rng)
        return [math.exp(sig * z) for z in std_noise(rng, N, st, clip)]

    series = {}
    if has.get("loss"):
        if rtype == "rl":
            pass  # composed below from policy/value losses
        else:
            series["loss"] = [a * b for a, b in zip(loss_tr, mult_noise(loss_sig))]
    if has.get("grad_norm"):
        series["grad_norm"] = [a * b for a, b in zip(g_tr, mult_noise(gsig, clip=4.5))]
    if has.get("lr"):
        series["lr"] = lr
    tps = [a * b for a, b in zip(tps_tr, mult_noise(rng.uniform(0.005, 0.04) if rtype != "rl" else rng.uniform(0.03, 0.1)))]
    for i in range(min(N, rng.randint(0, 5))):
        tps[i] *= rng.uniform(0.2, 0.8)
    mn = std_noise(rng, N, pick_style(rng))
    msig = rng.uniform(0.02, 0.3) * GB
    mem = [a + msig * z for a, z in zip(mem_tr, mn)]
    if rtype == "rl":
        series["kl"] = [a * b for a, b in zip(kl_tr, mult_noise(rng.uniform(0.05, 0.2), clip=4.5))]
        series["kl"][0] = 0.0
        rz = std_noise(rng, N, pick_style(rng), clip=4.5)
        rew = [a + rsd * z for a, z in zip(rew_tr, rz)]
        if rclip:
            rew = [min(1.0, max(0.0, v)) for v in rew]
        series["reward"] = rew
        series["entropy"] = [a * b for a, b in zip(ent_tr, mult_noise(rng.uniform(0.01, 0.05)))]
        sp = rng.uniform(0.005, 0.1)
        pz = rng.uniform(0.2, 0.7) if algo == "grpo" else 0.0
        pn = std_noise(rng, N, pick_style(rng))
        pol = []
        for i in range(N):
            ent_ratio = ent_tr[i] / ent_tr[0]
            if rng.random() < pz or (kind == "entropy_collapse" and ent_ratio < 0.1 and algo == "grpo" and rng.random() < 0.8):
                pol.append(0.0)
            else:
                pol.append(sp * pn[i] * min(1.0, 0.2 + ent_ratio) - 0.1 * sp)
        series["policy_loss"] = pol
        if algo == "ppo":
            series["value_loss"] = [a * b for a, b in zip(vl_tr, mult_noise(rng.uniform(0.1, 0.3)))]
        if has.get("loss"):
            beta = rng.uniform(0.01, 0.1)
            if algo == "ppo":
                series["loss"] = [p + 0.5 * v for p, v in zip(pol, series["value_loss"])]
            else:
                series["loss"] = [p + beta * kv for p, kv in zip(pol, series["kl"])]
            notes.append("rl loss logged (signed, near 0)" if algo == "grpo" else "rl loss = pg + 0.5 vf")
        for m in ("kl", "entropy", "policy_loss", "value_loss"):
            if not has.get(m) and m in series:
                del series[m]
        if pz:
            notes.append(f"policy_loss exactly 0 on ~{pz:.0%} of steps")

    # ---- benign events
    n_events = int(T / 800 * rng.uniform(0.5, 2.0)) + (1 if healthy and rng.random() < 0.5 else 0)
    if "loss" in series and rtype != "rl":
        for _ in range(n_events):
            i = rng.randrange(N)
            series["loss"][i] *= rng.uniform(1.15, 1.6)
    if "grad_norm" in series:
        for _ in range(n_events):
            i, L = rng.randrange(N), rng.randint(1, 5)
            f = rng.uniform(1.5, 3.5)
            for j in range(i, min(N, i + L)):
                series["grad_norm"][j] *= f
    hic = int(T / 600 * rng.uniform(0.5, 2.0)) + (1 if healthy and rng.random() < 0.7 else 0)
    for _ in range(hic):
        i, L = rng.randrange(N), rng.randint(1, 3)
        f = rng.uniform(0.1, 0.6)
        for j in range(i, min(N, i + L)):
            tps[j] *= f
    if hic:
        notes.append(f"{hic} dataloader hiccups")
    if rng.random() < 0.3:
        C = rng.choice([250, 500, 1000])
        for i, s in enumerate(steps):
            if s > 0 and s % C < k:
                tps[i] *= rng.uniform(0.3, 0.7)
        notes.append(f"checkpoint slowdown every {C}")
    if has.get("tokens_per_s"):
        series["tokens_per_s"] = tps
    if has.get("mem"):
        series["mem/gpu_bytes"] = mem

    # ---- spike-type faults (on observed values)
    if kind == "loss_spike":
        onset_i = idx_at(rng.uniform(0.25, 0.85))
        F = rng.uniform(3, 20)
        d = rng.randint(1, 10)
        nl = max(1, math.ceil(d / k))
        recover = rng.random() < 0.65
        for j in range(onset_i, min(N, onset_i + nl)):
            series["loss"][j] *= F * rng.uniform(0.85, 1.15)
            if "grad_norm" in series:
                series["grad_norm"][j] *= rng.uniform(2, 20)
        if not recover:
            lvl = rng.uniform(1.5, 3.0)
            for j in range(onset_i + nl, N):
                series["loss"][j] *= lvl
                loss_tr[j] *= lvl
        notes.append(f"loss x{F:.1f} for {d} steps, " + ("recovers" if recover else "stays elevated"))
    elif kind == "kl_spike":
        onset_i = idx_at(rng.uniform(0.25, 0.85))
        F = rng.uniform(5, 50)
        d = rng.randint(1, 5)
        ref = max(kl_tr[onset_i], 0.3 * max(kl_tr))
        for j in range(onset_i, min(N, onset_i + d)):
            series["kl"][j] = ref * F * rng.uniform(0.8, 1.2)
        notes.append(f"kl x{F:.0f} for {d} lines")

    # ---- eval metrics
    eval_rows = {}
    if has.get("val_loss"):
        gap = rng.uniform(0.0, 0.1) if rtype == "pre" else rng.uniform(0.05, 0.3)
        ovf = rng.uniform(0.0, 0.06) if epochs > 1 else 0.0
        vs = rng.uniform(0.003, 0.02)
        for i, s in enumerate(steps):
            if s > 0 and s % m_val == 0:
                ep = int(t[i] * epochs / T)
                o = 1 + (ovf * ep / (epochs - 1) if epochs > 1 else 0)
                eval_rows.setdefault(i, {})["val_loss"] = loss_tr[i] * (1 + gap) * o * math.exp(vs * rng.gauss(0, 1))
    if has.get("eval_accuracy"):
        asd = rng.uniform(0.003, 0.015)
        if rtype == "rl":
            acc_f = lambda i: acc_rl_tr[i]
        else:
            a_lo, a_hi = rng.uniform(0.05, 0.3), rng.uniform(0.4, 0.9)
            den = loss_start - loss_tr[-1] if loss_start > loss_tr[-1] else loss_start * 0.3
            acc_f = lambda i: a_lo + (a_hi - a_lo) * min(1.1, max(-0.2, (loss_start - loss_tr[i]) / den))
        for i, s in enumerate(steps):
            if s > 0 and s % m_acc == 0:
                eval_rows.setdefault(i, {})["eval_accuracy"] = min(1.0, max(0.0, acc_f(i) + asd * rng.gauss(0, 1)))

    # ---- nonfinite (last, on observed values)
    nan_style = rng.choice(["token", "string"])
    if kind == "nonfinite":
        onset_i = idx_at(rng.uniform(0.2, 0.85))
        cands = [m for m in ("loss", "grad_norm") if m in series]
        tgt = rng.choice(cands)
        var = rng.choice(["persist", "persist", "inf_then_nan", "isolated", "crash"])
        bad = NAN if rng.random() < 0.7 else INF
        if var == "persist":
            for j in range(onset_i, N):
                for m in cands:
                    series[m][j] = NAN
            series[tgt][onset_i] = bad
            for i in eval_rows:
                if i >= onset_i:
                    eval_rows[i] = {m: NAN for m in eval_rows[i]}
            end = min(N, onset_i + max(3, int(rng.uniform(10, 500) / k)))
        elif var == "inf_then_nan":
            if "grad_norm" in series:
                tgt = "grad_norm"
                series["grad_norm"][onset_i] = INF
            else:
                series[tgt][onset_i] = INF
            for j in range(onset_i + 1, N):
                for m in cands:
                    series[m][j] = NAN
            end = min(N, onset_i + 1 + rng.randint(0, 30))
        elif var == "isolated":
            L = rng.randint(1, 3)
            for j in range(onset_i, min(N, onset_i + L)):
                series[tgt][j] = bad
        else:
            series[tgt][onset_i] = bad
            end = min(N, onset_i + 1 + rng.randint(0, 3))
        notes.append(f"{tgt} non-finite ({var}, {'nan' if bad != INF else 'inf'}, {nan_style})")
        metric = tgt
    else:
        metric = METRIC_OF.get(kind)

    # ---- write lines
    order = list(series.keys())
    rng.shuffle(order)
    merge_eval = rng.random() < 0.5

    def enc(m, v):
        if v != v or v in (INF, -INF):
            if nan_style == "string":
                return "nan" if v != v else ("inf" if v > 0 else "-inf")
            return v
        if m == "mem/gpu_bytes":
            return int(v)
        if m == "tokens_per_s":
            return round(v, 1)
        return rnd(v)

    lines = []
    for i in range(end):
        obj = {"step": steps[i]}
        for m in order:
            obj[m] = enc(m, series[m][i])
        ev = {m: enc(m, v) for m, v in eval_rows.get(i, {}).items()}
        if ev and merge_eval:
            obj.update(ev)
            lines.append(obj)
        else:
            lines.append(obj)
            if ev:
                lines.append({"step": steps[i], **ev})
    onset = steps[onset_i] if onset_i is not None else None
    desc = f"{rtype} T={T} every {k}; " + "; ".join(notes)
    return lines, dict(kind=kind, onset=onset, metric=metric, notes=desc)


def main():
    rng = random.Random(SEED)
    os.makedirs(RUNS, exist_ok=True)
    for f in os.listdir(RUNS):
        if f.endswith(".jsonl"):
            os.remove(os.path.join(RUNS, f))
    plan = []
    for kind in FAULTS:
        for _ in range(N_PER_FAULT):
            if kind in ("loss_spike", "loss_divergence", "slow_drift", "grad_vanishing"):
                rt = "pre" if rng.random() < 0.6 else "ft"
            elif kind in ("kl_spike", "kl_runaway", "reward_hacking", "entropy_collapse"):
                rt = "rl"
            else:
                r = rng.random()
                rt = "pre" if r < 0.45 else ("ft" if r < 0.7 else "rl")
            plan.append((kind, rt))
    for _ in range(N_HEALTHY):
        r = rng.random()
        plan.append(("healthy", "pre" if r < 0.4 else ("ft" if r < 0.7 else "rl")))
    rng.shuffle(plan)
    labels = []
    for n, (kind, rt) in enumerate(plan):
        name = f"run_{n:03d}.jsonl"
        lines, lab = build_run(random.Random(rng.getrandbits(64)), kind, rt)
        with open(os.path.join(RUNS, name), "w") as fh:
            for obj in lines:
                fh.write(json.dumps(obj) + "\n")
        labels.append({"file": name, **lab})
    with open(os.path.join(HERE, "labels.json"), "w") as fh:
        json.dump(labels, fh, indent=1)
    print(f"wrote {len(labels)} runs to {RUNS}")


if __name__ == "__main__":
    main()
