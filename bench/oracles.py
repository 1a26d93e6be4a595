"""Frequency oracles against pure-ldp and multi-freq-ldpy: speed and accuracy, one run.

Usage::

    python -m uv run python bench/oracles.py [--quick] [--no-peers] [--out docs] [--oracles oue,olh]

The peers are installed into their own virtual environment (``bench/.peers``, created
on first use with pip: ``pure-ldp``, ``multi-freq-ldpy`` and, so that they import and
hash correctly on current releases, ``statsmodels``, ``scikit-learn`` and
``xxhash<4``) and driven by ``bench/_peer_worker.py`` in a subprocess.

For every setting (k in {10, 100, 1000, 10^4, 10^6}, epsilon in {0.5, 1, 2, 4} nats,
n in {10^5, 10^6}; ``--quick``: k <= 1000, epsilon in {1, 4}, n = 10^5) and oracle
(OUE, OLH, Hadamard response):

- **client**: reports per second of our vectorised ``randomize`` with the secure
  default source (an AES-256-CTR keystream keyed from os.urandom), median of 3 runs,
  against each peer's per-report client timed on
  as many reports as fit a few seconds;
- **server**: seconds to decode n reports (tally + estimate), median of 3 runs; the
  peers' per-report aggregation is timed on a prefix and scaled to n (it is linear in
  n);
- **MSE ratio**: mean over values and R simulated surveys of the squared error of our
  unbiased estimate, divided by the mean exact variance
  ``[f p*(1-p*) + (1-f) q*(1-q*)] / (n (p*-q*)^2)`` of the same population; its
  standard error comes from the spread over the R surveys. The population is fixed
  (Zipf, s = 1.1) so the estimand is known exactly;
- **post-processed MSE** (sum over values; n = 10^5, k <= 100, epsilon in {1, 4}): our
  projection onto the simplex, Norm-Sub, empirical Bayes and EM against the peers' own
  post-processings (pure-ldp: simplex projection and additive normalisation;
  multi-freq-ldpy: clip + normalise and IBU), on the same population: paired (the
  peers' post-processing code on the support counts of our 100 surveys; OUE and OLH,
  whose mechanisms are the same as the peers') and through the peers' whole pipeline
  on their own surveys.

Writes ``OUT/oracles-bench.json``, ``OUT/oracles-bench.md`` (the tables) and
``OUT/oracles-bench.png`` (speed-ups and MSE ratios).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from deniable import HadamardResponse, LocalHashing, UnaryEncoding, estimate
from deniable.estimation._postprocess import empirical_bayes, norm_sub, oracle_em, project_simplex

HERE = Path(__file__).resolve().parent
PEERS_ENV = HERE / ".peers"
PEER_PACKAGES = [
    "pure-ldp==1.2.0",
    "multi-freq-ldpy==0.2.5",
    "statsmodels",
    "scikit-learn",
    "xxhash<4",
]
ORACLES = {
    "oue": lambda k, e: UnaryEncoding(k, e),
    "olh": lambda k, e: LocalHashing(k, e),
    "hadamard": lambda k, e: HadamardResponse(k, e),
}
PEERS = {
    "oue": ["pure-ldp", "multi-freq-ldpy"],
    "olh": ["pure-ldp", "multi-freq-ldpy"],
    "hadamard": ["pure-ldp"],
}


def peer_python() -> Path:
    """The peers' interpreter, creating their environment on first use."""
    python = PEERS_ENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEERS_ENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES], check=True)
    return python


def population(k: int, n: int, seed: int = 0) -> np.ndarray:
    """n values from a Zipf(1.1) distribution over 0..k-1 (shuffled ranks)."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, k + 1) ** 1.1
    perm = rng.permutation(k)
    return perm[rng.choice(k, size=n, p=w / w.sum())].astype(np.int64)


def feasible(name: str, k: int, n: int) -> bool:
    """UE reports are k bits (n k / 8 bytes per survey); OLH decoding is n k hashes."""
    if name == "oue":
        return n * k <= 10**10
    if name == "olh":
        return n * k <= 10**11
    return True


def ours(name: str, k: int, eps: float, values: np.ndarray, budget: float, surveys: int) -> dict:
    oracle = ORACLES[name](k, eps)
    n = values.size
    truth = np.bincount(values, minlength=k) / n
    # compile the kernels, and fault in the memory a full-size run touches, first
    oracle.tally(oracle.randomize(values[:100]))
    oracle.tally(oracle.randomize(values))
    clients, servers = [], []
    for _ in range(3):  # median of 3 runs: one-off stalls of the machine do not count
        t0 = time.perf_counter()
        reports = oracle.randomize(values)  # secure source
        clients.append(n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        res = estimate(oracle, oracle.tally(reports))
        servers.append(time.perf_counter() - t0)
    client, server = float(np.median(clients)), float(np.median(servers))
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    seeded = oracle.randomize(values, rng)
    client_seeded = n / (time.perf_counter() - t0)
    var = oracle.variance(truth, n)
    ratios, mse = [], {"raw": [], "projection": [], "norm_sub": [], "eb": [], "em": []}
    start, eb_seconds = time.perf_counter(), 0.0
    est = res.estimate
    rep_reports = reports
    while True:
        err2 = (est - truth) ** 2
        ratios.append(err2.mean() / var.mean())
        mse["raw"].append(err2.sum())
        mse["projection"].append(np.sum((project_simplex(est) - truth) ** 2))
        mse["norm_sub"].append(np.sum((norm_sub(est) - truth) ** 2))
        if eb_seconds < budget or len(mse["eb"]) < 2:
            t0 = time.perf_counter()
            mse["eb"].append(np.sum((empirical_bayes(oracle, est, n) - truth) ** 2))
            eb_seconds += time.perf_counter() - t0
        spent = time.perf_counter() - start - eb_seconds  # empirical Bayes: its own budget
        if len(ratios) >= 2 and (spent > budget or len(ratios) >= 400):
            break
        rep_reports = oracle.randomize(values, rng) if len(ratios) > 1 else seeded
        est = estimate(oracle, rep_reports).estimate
    # post-processed error / raw error on the same surveys (empirical Bayes ran on the
    # first of them)
    vs_raw = {m: float(np.mean(mse[m]) / np.mean(mse["raw"][: len(mse[m])])) for m in mse if mse[m]}
    compared = compares_postprocessing(k, eps, n)
    # EM (it needs every report's support set) on further surveys, its own budget
    # (where the post-processings are compared with the peers', it runs on those surveys)
    start, raw_em = time.perf_counter(), []
    while not compared and n * k <= 10**7 and len(mse["em"]) < 200:
        em_reports = oracle.randomize(values, rng)
        mse["em"].append(np.sum((oracle_em(oracle, em_reports).frequencies - truth) ** 2))
        raw_em.append(np.sum((estimate(oracle, em_reports).estimate - truth) ** 2))
        if len(mse["em"]) >= 2 and time.perf_counter() - start > 5 * budget:
            break
    if raw_em:
        vs_raw["em"] = float(np.mean(mse["em"]) / np.mean(raw_em))
    r = np.array(ratios)
    paired = paired_surveys(oracle, values, rng, surveys) if compared else None
    if paired is not None:
        sse = paired["sse"]
        vs_raw = {m: float(np.mean(sse[m]) / np.mean(sse["raw"])) for m in sse if m != "raw"}
    return {
        "vs_raw": vs_raw,
        "paired": paired,
        "epsilon_exact": oracle.epsilon,
        "client_per_s": client,
        "client_seeded_per_s": client_seeded,
        "server_seconds": server,
        "reps": len(r),
        "mse_ratio": float(r.mean()),
        "mse_ratio_se": float(r.std(ddof=1) / math.sqrt(len(r))),
        "mse": {key: float(np.mean(v)) for key, v in mse.items() if v},
        "mse_se": {key: _se(v) for key, v in mse.items() if v},
    }


PAIRED_SURVEYS = 100


def compares_postprocessing(k: int, eps: float, n: int) -> bool:
    """The settings where post-processings are compared with the peers'."""
    return n == 10**5 and k <= 100 and eps in (1.0, 4.0)


def paired_surveys(  # type: ignore[no-untyped-def]
    oracle, values: np.ndarray, rng: np.random.Generator, surveys: int
) -> dict:
    """Every post-processing of ours on the same ``surveys`` surveys, with their tallies.

    The peers' post-processings run on these same support counts (``pp`` mode of the
    peer worker), so each comparison is paired: survey-to-survey noise cancels.
    """
    n, k = values.size, oracle.k
    truth = np.bincount(values, minlength=k) / n
    sse: dict[str, list[float]] = {m: [] for m in ("raw", "projection", "norm_sub", "eb", "em")}
    counts = []
    for _ in range(surveys):
        reports = oracle.randomize(values, rng)
        tally = oracle.tally(reports)
        counts.append(tally.counts)
        est = estimate(oracle, tally).estimate
        fits = {
            "raw": est,
            "projection": project_simplex(est),
            "norm_sub": norm_sub(est),
            "eb": empirical_bayes(oracle, est, n),
            "em": oracle_em(oracle, reports).frequencies,
        }
        for m, f in fits.items():
            sse[m].append(float(np.sum((f - truth) ** 2)))
    return {"sse": sse, "counts": np.array(counts).tolist()}


def paired_ratio(ours: list[float], peer: list[float]) -> tuple[float, float]:
    """mean(ours) / mean(peer) over the same surveys and its delta-method standard error."""
    a, b = np.asarray(ours), np.asarray(peer)
    ratio = a.mean() / b.mean()
    resid = a - ratio * b
    return float(ratio), float(resid.std(ddof=1) / math.sqrt(a.size) / b.mean())


def _se(values: list[float]) -> float:
    """Standard error of the mean of independent surveys' values."""
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan


def run_peer(
    python: Path,
    peer: str,
    name: str,
    k: int,
    eps: float,
    n: int,
    path: str,
    mode: str,
    budget: float,
) -> dict | None:
    cmd = [
        str(python),
        str(HERE / "_peer_worker.py"),
        peer,
        name,
        str(k),
        str(eps),
        str(n),
        path,
        mode,
        str(budget),
    ]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=budget * 6 + 120)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0:
        sys.stderr.write(f"[{peer} {name} k={k}] failed: {out.stderr[-400:]}\n")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--budget", type=float, default=3.0, help="seconds per measurement")
    ap.add_argument("--out", type=Path, default=HERE.parent / "docs")
    ap.add_argument(
        "--paired-surveys",
        type=int,
        default=PAIRED_SURVEYS,
        help="surveys behind the paired post-processing comparison",
    )
    ap.add_argument(
        "--oracles",
        default=",".join(ORACLES),
        help="comma-separated subset to measure again; the other oracles' rows are kept "
        "from OUT/oracles-bench.json",
    )
    args = ap.parse_args()
    chosen = [o.strip() for o in args.oracles.split(",") if o.strip()]
    unknown = [o for o in chosen if o not in ORACLES]
    if unknown:
        ap.error(f"--oracles: unknown {unknown}; allowed: {', '.join(ORACLES)}")
    ks = [10, 100, 1000] if args.quick else [10, 100, 1000, 10**4, 10**6]
    epss = [1.0, 4.0] if args.quick else [0.5, 1.0, 2.0, 4.0]
    ns = [10**5] if args.quick else [10**5, 10**6]
    python = None if args.no_peers else peer_python()
    rows = []
    speeds: dict[tuple[str, str, int, float], dict | None] = {}
    tmp = tempfile.TemporaryDirectory()
    for n in ns:
        for k in ks:
            values = population(k, n)
            path = os.path.join(tmp.name, f"values-{k}-{n}.npy")
            np.save(path, values)
            for eps in epss:
                for name in chosen:
                    if not feasible(name, k, n):
                        continue
                    row = {"k": k, "epsilon": eps, "n": n, "oracle": name}
                    row["ours"] = ours(name, k, eps, values, args.budget, args.paired_surveys)
                    row["peers"] = {}
                    paired = row["ours"]["paired"]
                    counts_path = os.path.join(tmp.name, f"counts-{name}-{k}-{eps}-{n}.npz")
                    if paired is not None:
                        truth = np.bincount(values, minlength=k) / n
                        np.savez(counts_path, counts=np.array(paired.pop("counts")), truth=truth)
                    for peer in [] if python is None else PEERS[name]:
                        # a peer's per-report speed does not depend on n: measure once
                        key = (peer, name, k, eps)
                        if key not in speeds:
                            speeds[key] = run_peer(
                                python, peer, name, k, eps, n, path, "speed", args.budget
                            )
                        speed = speeds[key]
                        if speed is None:
                            continue
                        entry = dict(speed)
                        entry["server_seconds_for_n"] = (
                            speed["server_seconds_for_n"] / speed["n"] * n
                            if "n" in speed
                            else speed["server_seconds_for_n"]
                        )
                        if compares_postprocessing(k, eps, n):
                            # their whole pipeline on their own surveys (unpaired) ...
                            # (Hadamard response has no paired comparison: more surveys)
                            budget = args.budget * (30 if name == "hadamard" else 10)
                            got = run_peer(python, peer, name, k, eps, n, path, "mse", budget)
                            if got:
                                entry["mse"] = {m: float(np.mean(v)) for m, v in got["sse"].items()}
                                entry["mse_se"] = {m: _se(v) for m, v in got["sse"].items()}
                                entry["mse_reps"] = min(len(v) for v in got["sse"].values())
                            # ... and their post-processing code on our surveys' support
                            # counts (paired; same mechanism: OUE and OLH only)
                            got = (
                                run_peer(
                                    python, peer, name, k, eps, n, counts_path, "pp", args.budget
                                )
                                if name != "hadamard"
                                else None
                            )
                            if got:
                                entry["paired_sse"] = got["sse"]
                        row["peers"][peer] = entry
                    rows.append(row)
                    print(summary_line(row), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    previous = args.out / "oracles-bench.json"
    if set(chosen) != set(ORACLES) and previous.exists():
        kept = [r for r in json.loads(previous.read_text()) if r["oracle"] not in chosen]
        order = {name: i for i, name in enumerate(ORACLES)}
        rows = sorted(kept + rows, key=lambda r: (r["n"], r["k"], r["epsilon"], order[r["oracle"]]))
    previous.write_text(json.dumps(rows, indent=1))
    (args.out / "oracles-bench.md").write_text(markdown(rows, args))
    plot(rows, args.out / "oracles-bench.png")
    print(f"wrote {args.out / 'oracles-bench.md'} and .png")


def _best_peer(row: dict, key: str, higher: bool = True) -> tuple[str, float] | None:
    vals = [(p, e[key]) for p, e in row["peers"].items() if e.get(key)]
    if not vals:
        return None
    return max(vals, key=lambda t: t[1]) if higher else min(vals, key=lambda t: t[1])


def _best_pp(row: dict) -> tuple[str, float, float, int] | None:
    """The peers' post-processing with the lowest mean SSE: (name, mean, SE, surveys)."""
    vals = [
        (f"{p} {m}", v, e.get("mse_se", {}).get(m, math.nan), e.get("mse_reps", 1))
        for p, e in row["peers"].items()
        for m, v in e.get("mse", {}).items()
        if m != "raw"
    ]
    return min(vals, key=lambda t: t[1]) if vals else None


def summary_line(row: dict) -> str:
    o = row["ours"]
    client = _best_peer(row, "client_per_s")
    server = _best_peer(row, "server_seconds_for_n", higher=False)
    parts = [
        f"{row['oracle']:8s} k={row['k']:<8d} eps={row['epsilon']:<4} n={row['n']:<8d}",
        f"client {o['client_per_s']:12,.0f}/s",
        f"x{o['client_per_s'] / client[1]:8.1f}" if client else "        -",
        f"server {o['server_seconds']:8.3f}s",
        f"x{server[1] / o['server_seconds']:9.1f}" if server else "         -",
        f"mse ratio {o['mse_ratio']:.3f}±{o['mse_ratio_se']:.3f} ({o['reps']} reps)",
    ]
    return "  ".join(parts)


def markdown(rows: list[dict], args: argparse.Namespace) -> str:
    lines = [
        "# Frequency-oracle benchmark",
        "",
        f"Produced by `python -m uv run python bench/oracles.py{' --quick' if args.quick else ''}`"
        f" on {os.cpu_count()} cores. Peers: pure-ldp 1.2.0 and multi-freq-ldpy 0.2.5 in their "
        "own environment. Client: reports/s (ours: vectorised, secure source: an AES-256-CTR "
        "keystream keyed from os.urandom; "
        "peers: one call per report, their own non-cryptographic numpy/random source). "
        "Server: seconds to decode n reports (peers: timed on a prefix, scaled to n). "
        "x = our speed / fastest peer's. MSE ratio = our unbiased estimator's mean squared "
        "error / the exact variance, ± its standard error over the simulated surveys.",
        "",
        "| oracle | k | eps | n | client/s | x client | server s | x server | MSE ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        o = row["ours"]
        client = _best_peer(row, "client_per_s")
        server = _best_peer(row, "server_seconds_for_n", higher=False)
        lines.append(
            f"| {row['oracle']} | {row['k']:,} | {row['epsilon']} | {row['n']:,} | "
            f"{o['client_per_s']:,.0f} | "
            + (f"{o['client_per_s'] / client[1]:,.0f} ({client[0]})" if client else "-")
            + f" | {o['server_seconds']:.3f} | "
            + (f"{server[1] / o['server_seconds']:,.0f} ({server[0]})" if server else "-")
            + f" | {o['mse_ratio']:.3f} ± {o['mse_ratio_se']:.3f} |"
        )
    lines += [
        "",
        "## Post-processed estimators (sum of squared errors over the domain)",
        "",
        f"Ours: every post-processing on the same {args.paired_surveys} simulated surveys of the "
        "population, mean ± standard error. Peers on our surveys: the peers' own "
        "post-processing code run on those surveys' support counts (OUE and OLH, whose "
        "mechanisms are the same as ours), so the ratio is paired survey by survey "
        "(delta-method SE). Peers' pipeline: their own client and post-processing on "
        "their own surveys, as many as fit 10 times the budget (30 times for Hadamard "
        "response, where it is the only comparison: its mechanism differs from "
        "pure-ldp's). Ratio: our best post-processing / the peers' best.",
        "",
        "| oracle | k | eps | ours raw | projection | Norm-Sub | empirical Bayes | EM | "
        "best peer on our surveys | ratio (paired) | best peer pipeline (surveys) | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        paired = row["ours"].get("paired")
        if not paired:
            continue
        sse = paired["sse"]
        cells = [
            f"{np.mean(sse[m]):.3g} ± {_se(sse[m]):.2g}"
            for m in ("raw", "projection", "norm_sub", "eb", "em")
        ]
        best_m = min((m for m in sse if m != "raw"), key=lambda m: np.mean(sse[m]))
        on_ours = [
            (f"{p} {m}", v)
            for p, e in row["peers"].items()
            for m, v in e.get("paired_sse", {}).items()
            if m != "raw"
        ]
        if on_ours:
            name, peer_sse = min(on_ours, key=lambda t: np.mean(t[1]))
            r, r_se = paired_ratio(sse[best_m], peer_sse)
            paired_cells = [f"{np.mean(peer_sse):.3g} ({name})", f"{r:.3f} ± {r_se:.3f}"]
        else:
            paired_cells = ["-", "-"]
        best = _best_pp(row)
        if best is not None:
            m_o, se_o = float(np.mean(sse[best_m])), _se(sse[best_m])
            r = m_o / best[1]
            r_se = r * math.sqrt((se_o / m_o) ** 2 + (best[2] / best[1]) ** 2)
            pipe_cells = [
                f"{best[1]:.3g} ± {best[2]:.2g} ({best[0]}, {best[3]})",
                f"{r:.2f} ± {r_se:.2f}",
            ]
        else:
            pipe_cells = ["-", "-"]
        lines.append(
            f"| {row['oracle']} | {row['k']:,} | {row['epsilon']} | "
            + " | ".join(cells + paired_cells + pipe_cells)
            + " |"
        )
    lines += [
        "",
        "## Post-processing against the raw estimate, every setting",
        "",
        "Mean sum of squared errors after post-processing / before, on the same surveys: "
        "the paired surveys above where there are any; elsewhere those of the MSE-ratio "
        "column (empirical Bayes on as many of them as fit the budget) and, for EM, up to "
        "200 further surveys where n k <= 10^7.",
        "",
        "| oracle | k | eps | n | projection | Norm-Sub | empirical Bayes | EM |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        vs_raw = row["ours"].get("vs_raw", {})
        methods = ("projection", "norm_sub", "eb", "em")
        ratio = [f"{vs_raw[m]:.3f}" if m in vs_raw else "-" for m in methods]
        lines.append(
            f"| {row['oracle']} | {row['k']:,} | {row['epsilon']} | {row['n']:,} | "
            + " | ".join(ratio)
            + " |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for name, marker in (("oue", "o"), ("olh", "s"), ("hadamard", "^")):
        for eps, color in zip((0.5, 1.0, 2.0, 4.0), ("C0", "C1", "C2", "C3"), strict=True):
            sel = [
                r
                for r in rows
                if r["oracle"] == name
                and r["epsilon"] == eps
                and r["n"] == min(x["n"] for x in rows)
            ]
            if not sel:
                continue
            ks = [r["k"] for r in sel]
            c = [
                r["ours"]["client_per_s"] / b[1] if (b := _best_peer(r, "client_per_s")) else np.nan
                for r in sel
            ]
            s = [
                b[1] / r["ours"]["server_seconds"]
                if (b := _best_peer(r, "server_seconds_for_n", higher=False))
                else np.nan
                for r in sel
            ]
            label = f"{name} eps={eps}"
            axes[0].plot(ks, c, marker=marker, color=color, label=label)
            axes[1].plot(ks, s, marker=marker, color=color, label=label)
            axes[2].errorbar(
                ks,
                [r["ours"]["mse_ratio"] for r in sel],
                yerr=[2 * r["ours"]["mse_ratio_se"] for r in sel],
                marker=marker,
                color=color,
                label=label,
                capsize=2,
            )
    for ax, title in zip(
        axes,
        (
            "client speed-up over fastest peer",
            "server speed-up over fastest peer",
            "MSE / exact variance (±2 SE)",
        ),
        strict=True,
    ):
        ax.set_xscale("log")
        ax.set_xlabel("domain size k")
        ax.set_title(title)
    axes[0].set_yscale("log")
    axes[1].set_yscale("log")
    axes[0].axhline(20, color="grey", ls="--", lw=1)
    axes[1].axhline(20, color="grey", ls="--", lw=1)
    axes[2].axhspan(0.95, 1.05, color="grey", alpha=0.2)
    axes[2].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
