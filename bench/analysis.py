"""Randomized-response regression: fit time at n = 10^5 and 10^6, beside R's packages.

Usage::

    python -m uv run python bench/analysis.py [--reps 3] [--out docs/analysis-bench.md]

Measured in one run on this machine:

- ``rr_logit`` (formula parsing, exact Newton, observed-information standard errors),
  also with the stochastic lie detector (two groups, unknown honesty ``t``);
- ``rr_correlation`` (200 bootstrap replicates), ``rr_linear``, and ``rr_mixed_logit`` on
  GLMMRR's Plagiarism data;
- a generic peer: the same log-likelihood maximised by SciPy's BFGS with a numeric
  gradient and a numeric Hessian for the standard errors (what one writes without a
  package), started from zero, and the difference of its estimates from ours;
- R's packages on the same data, when ``Rscript`` is on the PATH and loads RRreg and
  GLMMRR (from its library or ``R_LIBS``; Debian's r-base-core and r-cran-lme4, the
  packages from their CRAN sources with ``R CMD INSTALL``): ``GLMMRR::RRglm``,
  ``RRreg::RRlog`` (forced response and SLD), ``RRreg::RRlin``, ``RRreg::RRcor`` and
  ``GLMMRR::RRglmer``, at n = 10^5 (single runs; RRcor's bootstrap is timed on 10
  replicates and scaled to 200, labelled so). Without R the R columns say why.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
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
from deniable.data import load_rr_survey

HERE = Path(__file__).resolve().parent
R_BOOT_MEASURED = 10  # RRcor bootstrap replicates timed in R (scaled to 200)
R_SCRIPT = r"""
suppressMessages({library(RRreg); library(GLMMRR)})
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1]); plag <- read.csv(args[2])
d$p1 <- 2/3; d$p2 <- 0.5; d$model <- "Forced"
tm <- function(name, expr) cat("TIME", name, system.time(expr)[["elapsed"]], "\n")
tm("RRglm", RRglm(r ~ x1 + x2 + x3, link = "RRlink.logit", RRmodel = model, p1 = p1,
                  p2 = p2, data = d, etastart = rep(0.01, nrow(d))))
tm("RRlog", RRlog(r ~ x1 + x2 + x3, data = d, model = "FR", p = c(1/6, 1/6)))
tm("RRlog_SLD", RRlog(sld ~ x1 + x2 + x3, data = d, model = "SLD", p = c(2/12, 10/12),
                      group = group))
tm("RRlin", RRlin(x1 ~ r + x2, data = d, models = "FR", p.list = list(c(1/6, 1/6))))
tm("RRcor", RRcor(d[, c("r", "x1", "x2")], models = c("FR", "d", "d"),
                  p.list = list(c(1/6, 1/6))))
tm("RRcor_boot", RRcor(d[, c("r", "x1", "x2")], models = c("FR", "d", "d"),
                       p.list = list(c(1/6, 1/6)), bs.n = as.integer(args[3]),
                       bs.type = "se.n"))
tm("RRglmer", RRglmer(response ~ Gender + (1|age), link = "RRlink.logit",
                      RRmodel = RRmodel, p1 = RRp1, p2 = RRp2, data = plag,
                      na.action = "na.omit", etastart = rep(0.01, nrow(plag)),
                      control = glmerControl(optimizer = "Nelder_Mead",
                                             tolPwrss = 1e-03), nAGQ = 1))
"""
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


def r_times(df: pd.DataFrame, plag: pd.DataFrame) -> dict[str, float] | str:
    """Seconds of R's fits on the same data, or why R could not be run."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return "Rscript is not on the PATH"
    check = subprocess.run(
        [rscript, "-e", "library(RRreg); library(GLMMRR)"], capture_output=True, text=True
    )
    if check.returncode != 0:
        return "R cannot load RRreg and GLMMRR: " + check.stderr.strip().splitlines()[-1]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, "sim.csv"), os.path.join(tmp, "plag.csv")]
        df.to_csv(paths[0], index=False)
        plag.to_csv(paths[1], index=False)
        script = os.path.join(tmp, "bench.R")
        Path(script).write_text(R_SCRIPT)
        out = subprocess.run(
            [rscript, script, *paths, str(R_BOOT_MEASURED)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    times = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0] == "TIME":
            times[fields[1]] = float(fields[2])
    times["RRcor_boot"] = times["RRcor_boot"] * 200 / R_BOOT_MEASURED
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE.parent / "docs" / "analysis-bench.md")
    args = ap.parse_args()
    rng = np.random.default_rng(2026)
    design = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    sld = StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2])
    rows = []
    first = pd.DataFrame()
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
        rows.append(row)
        if n == 10**5:
            first = df
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
        "| SciPy BFGS peer s | x peer | max abs coef diff | max rel SE diff |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']:,} | {r['ours_s']:.3f} | {r['ours_sld_s']:.3f} | "
            f"{r['rr_correlation_s']:.3f} | {r['rr_linear_s']:.3f} | {r['peer_bfgs_s']:.2f} | "
            f"{r['x_peer']:.1f} | {r['max_abs_coef_diff']:.1e} | {r['max_rel_se_diff']:.1e} |"
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
        "## Beside R, same data, same run",
        "",
    ]
    r = r_times(first, plag.drop(columns="design"))
    if isinstance(r, str):
        print(f"R not measured: {r}", flush=True)
        lines.append(f"R was not measured in this run: {r}.")
    else:
        ours = rows[0]
        pairs = [
            ("rr_logit", ours["ours_s"], "GLMMRR::RRglm", r["RRglm"]),
            ("rr_logit", ours["ours_s"], "RRreg::RRlog (FR)", r["RRlog"]),
            ("rr_logit SLD", ours["ours_sld_s"], "RRreg::RRlog (SLD)", r["RRlog_SLD"]),
            ("rr_linear", ours["rr_linear_s"], "RRreg::RRlin", r["RRlin"]),
            (
                "rr_correlation, 200 bootstrap",
                ours["rr_correlation_s"],
                f"RRreg::RRcor, 200 bootstrap (timed on {R_BOOT_MEASURED}, scaled)",
                r["RRcor_boot"],
            ),
            (
                "rr_mixed_logit, Plagiarism",
                t_mixed,
                "GLMMRR::RRglmer (its help example's control)",
                r["RRglmer"],
            ),
        ]
        version = subprocess.run(
            [
                "Rscript",
                "-e",
                "cat(R.version.string, 'RRreg', format(packageVersion('RRreg')),"
                " 'GLMMRR', format(packageVersion('GLMMRR')))",
            ],
            capture_output=True,
            text=True,
        ).stdout.strip()
        lines += [
            f"n = 10^5 (Plagiarism: n = 802). {version}; R times are single runs "
            f"(`system.time`); RRcor without a bootstrap took {r['RRcor']:.2f} s.",
            "",
            "| ours | s | R | s | R / ours |",
            "|---|---|---|---|---|",
        ]
        for name, t, r_name, t_r in pairs:
            lines.append(f"| {name} | {t:.3f} | {r_name} | {t_r:.2f} | {t_r / t:.0f} |")
            print(f"{name:32s} {t:7.3f}s  {r_name:40s} {t_r:8.2f}s  x{t_r / t:6.0f}", flush=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
