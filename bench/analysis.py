"""Randomized-response logistic regression: fit time at n = 10^5 and 10^6, 3 covariates.

Usage::

    python -m uv run python bench/analysis.py [--reps 3] [--out docs/analysis-bench.md]

Measured in one run on this machine:

- ``rr_logit`` (formula parsing, exact Newton, observed-information standard errors);
- ``rr_logit`` with the stochastic lie detector (two groups, unknown honesty ``t``);
- a generic peer: the same log-likelihood maximised by SciPy's BFGS with a numeric
  gradient and a numeric Hessian for the standard errors (what one writes without a
  package), started from zero;
- the accuracy check: our estimates minus the peer's (both maximise the same function).

R is not installed here (and CRAN is not reachable), so R's packages cannot be timed in
the same run; the issue quotes ``rr::rrreg`` at about 3 s and ``GLMMRR`` at about 0.8 s
for n = 10^5 on this kind of machine, and the table prints our speed-up against those
quoted figures, labelled as such.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import expit

from deniable import ForcedResponse
from deniable.analysis import (
    StochasticLieDetector,
    designs_by_row,
    rr_correlation,
    rr_linear,
    rr_logit,
    rr_mixed_logit,
)
from deniable.datasets import load_rr_survey

HERE = Path(__file__).resolve().parent
QUOTED_R_SECONDS_1E5 = {"rr::rrreg": 3.0, "GLMMRR": 0.8}
BETA = np.array([-1.0, 0.8, -0.5, 0.3])


def simulate(n: int, rng: np.random.Generator) -> pd.DataFrame:
    df = pd.DataFrame(
        {
            "x1": rng.standard_normal(n),
            "x2": (rng.random(n) < 0.4).astype(float),
            "x3": rng.uniform(-1, 1, n),
        }
    )
    X = np.column_stack([np.ones(n), df.x1, df.x2, df.x3])
    truth = rng.random(n) < expit(X @ BETA)
    design = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    df["r"] = design.randomize(truth, rng).astype(float)
    group = rng.integers(1, 3, n)
    p_g = np.where(group == 1, 2 / 12, 10 / 12)
    yes = np.where(truth, rng.random(n) < 0.85, rng.random(n) < 1 - p_g)
    df["sld"] = yes.astype(float)
    df["group"] = group
    return df


def peer_fit(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    X = np.column_stack([np.ones(len(df)), df.x1, df.x2, df.x3])
    y = df.r.to_numpy()

    def nll(b: np.ndarray) -> float:
        lam = 1 / 6 + 2 / 3 * expit(X @ b)
        return -float(np.sum(y * np.log(lam) + (1 - y) * np.log1p(-lam)))

    res = optimize.minimize(nll, np.zeros(4), method="BFGS")
    # numeric Hessian for standard errors
    k, h = 4, 1e-4
    H = np.empty((k, k))
    for i in range(k):
        for j in range(k):
            ei, ej = np.eye(k)[i] * h, np.eye(k)[j] * h
            H[i, j] = (
                nll(res.x + ei + ej)
                - nll(res.x + ei - ej)
                - nll(res.x - ei + ej)
                + nll(res.x - ei - ej)
            ) / (4 * h * h)
    return res.x, np.sqrt(np.diag(np.linalg.inv(H)))


def best_of(fn, reps: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    best, out = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE.parent / "docs" / "analysis-bench.md")
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    design = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    sld = StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2])
    rows = []
    for n in (10**5, 10**6):
        df = simulate(n, rng)
        t_ours, fit = best_of(lambda d=df: rr_logit("r ~ x1 + x2 + x3", d, design), args.reps)
        t_sld, fit_sld = best_of(
            lambda d=df: rr_logit("sld ~ x1 + x2 + x3", d, sld, group="group"), args.reps
        )
        t_cor, _ = best_of(
            lambda d=df: rr_correlation(d, ["r", "x1", "x2"], {"r": design}), args.reps
        )
        t_lin, _ = best_of(lambda d=df: rr_linear("x1 ~ r + x2", d, design, "r"), args.reps)
        t_peer, (b_peer, se_peer) = best_of(lambda d=df: peer_fit(d), 1)
        diff = float(np.max(np.abs(fit.params.to_numpy() - b_peer)))  # type: ignore[attr-defined]
        se_diff = float(np.max(np.abs(fit.bse.to_numpy() / se_peer - 1)))  # type: ignore[attr-defined]
        row = {
            "n": n,
            "ours_s": t_ours,
            "ours_sld_s": t_sld,
            "rr_correlation_s": t_cor,
            "rr_linear_s": t_lin,
            "peer_bfgs_s": t_peer,
            "x_peer": t_peer / t_ours,
            "max_abs_coef_diff": diff,
            "max_rel_se_diff": se_diff,
            "sld_t": float(fit_sld.params["t"]),  # type: ignore[attr-defined]
        }
        for name, sec in QUOTED_R_SECONDS_1E5.items():
            row[f"x_{name}_quoted"] = (sec * n / 10**5) / t_ours if n == 10**5 else float("nan")
        rows.append(row)
        print(
            f"n={n:>8,}  rr_logit {t_ours:6.3f}s  SLD {t_sld:6.3f}s  rr_correlation "
            f"{t_cor:6.3f}s  rr_linear {t_lin:6.3f}s  BFGS peer {t_peer:7.3f}s "
            f"(x{t_peer / t_ours:5.1f})  |coef diff| {diff:.1e}  |SE rel diff| {se_diff:.1e}",
            flush=True,
        )
    lines = [
        "# Regression benchmark",
        "",
        "Produced by `python -m uv run python bench/analysis.py` (2 cores). Data: forced "
        "response (p_yes = p_no = 1/6) on a logistic model with 3 covariates; SLD: two "
        "groups, p = (2/12, 10/12), honesty t = 0.85. Times are the best of "
        f"{args.reps} fits (formula parsing included). The SLD fit runs from 12 starts (the "
        "default, a 3-point grid over t and 8 seeded random starts) and keeps the best. "
        "rr_correlation: the correlations of the randomized answer with x1 and x2 "
        "(3 variables), with 200 bootstrap replicates; rr_linear: x1 on the randomized "
        "answer and x2 (finite-mixture ML).",
        "",
        "| n | rr_logit s | rr_logit SLD s | rr_correlation s | rr_linear s "
        "| SciPy BFGS peer s | x peer "
        "| max abs coef diff | max rel SE diff | x rr::rrreg (quoted 3 s) "
        "| x GLMMRR (quoted 0.8 s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']:,} | {r['ours_s']:.3f} | {r['ours_sld_s']:.3f} | "
            f"{r['rr_correlation_s']:.3f} | {r['rr_linear_s']:.3f} | {r['peer_bfgs_s']:.2f} | "
            f"{r['x_peer']:.1f} | {r['max_abs_coef_diff']:.1e} | {r['max_rel_se_diff']:.1e} | "
            + (
                f"{r['x_rr::rrreg_quoted']:.0f} | {r['x_GLMMRR_quoted']:.0f} |"
                if r["n"] == 10**5
                else "- | - |"
            )
        )
    plag = load_rr_survey("GLMMRR/Plagiarism")
    keys, designs = designs_by_row(plag, p1="RRp1", p2="RRp2")
    plag = plag.assign(design=keys)
    t_mixed, mixed = best_of(
        lambda: rr_mixed_logit("response ~ Gender + (1 | age)", plag, designs, group="design"),
        args.reps,
    )
    print(f"rr_mixed_logit on Plagiarism (n = {mixed.nobs}): {t_mixed:.3f}s", flush=True)  # type: ignore[attr-defined]
    lines += [
        "",
        f"rr_mixed_logit on GLMMRR's Plagiarism (n = {mixed.nobs}, crosswise and direct "  # type: ignore[attr-defined]
        "questioning by row, random intercept by age, Laplace): "
        f"{t_mixed:.3f} s (best of {args.reps}).",
        "",
        "R is not installed on this machine (CRAN is not reachable), so the R columns divide "
        "the issue's quoted R timings at n = 10^5 by ours; they are not measured in this run.",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
