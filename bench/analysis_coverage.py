"""Coverage of the analysis module's intervals, measured over simulated surveys.

Usage::

    python -m uv run python bench/analysis_coverage.py [--reps 2000]

Prints, for each interval, the share of simulated surveys whose 95% interval covers
the truth, with its binomial standard error: regression coefficients (forced
response, n = 2000), a difference between two groups (two-coin design, n = 4000), a
parity difference with the group collected by Warner's design at epsilon = 1
(n = 5000), the stochastic lie detector's prevalence and honesty (n = 3000), and a
stratified cluster sample (ultimate-cluster and jackknife variances). The numbers are
in docs/analysis.md.

Then ``rr_mixed_logit`` with few clusters (``--mixed-reps`` surveys, default 300): 25
clusters of 20, random-intercept SD tau = 0.5, logit(pi) = -0.5 + 0.5 x + u, forced
response (0.2, 0.2), fitted with the Laplace approximation (1 node) and adaptive
Gauss-Hermite quadrature (7 nodes): tau's mean and bias, the share of fits at the
boundary (tau below 0.01), the coverage of tau's 95% profile-likelihood interval (the
deviance at the true tau at most chi2_1(0.95)) and of the Wald interval of tau, and the
rejection rate of the test of tau = 0 (Self & Liang 1987) at 5%.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from deniable import ForcedResponse, Warner
from deniable.analysis import (
    StochasticLieDetector,
    estimate_channel,
    rr_logit,
    rr_mixed_logit,
    statistical_parity,
    subgroup_prevalence,
    survey_estimate,
)


def line(name: str, hits: float, reps: int) -> str:
    share = hits / reps
    return f"| {name} | {reps} | {share:.3f} | {math.sqrt(share * (1 - share) / reps):.3f} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--mixed-reps", type=int, default=300)
    ap.add_argument("--only-mixed", action="store_true", help="only the mixed-model part")
    args = ap.parse_args()
    if args.only_mixed:
        print(mixed_tau(args.mixed_reps))
        return
    reps = args.reps
    rng = np.random.default_rng(20261122)
    out = ["| interval (95%) | surveys | coverage | SE |", "|---|---|---|---|"]

    blair = ForcedResponse(p_yes=1 / 6, p_no=1 / 6)
    beta = np.array([-0.5, 1.0, -0.5])
    hits = np.zeros(3)
    for _ in range(reps):
        n = 2000
        df = pd.DataFrame({"x1": rng.standard_normal(n), "x2": (rng.random(n) < 0.5) * 1.0})
        X = np.column_stack([np.ones(n), df.x1, df.x2])
        df["r"] = blair.randomize(rng.random(n) < expit(X @ beta), rng).astype(float)
        ci = rr_logit("r ~ x1 + x2", df, blair).conf_int()
        hits += (ci["low"].to_numpy() <= beta) & (beta <= ci["high"].to_numpy())
    for name, h in zip(("intercept", "x1 (normal)", "x2 (binary)"), hits, strict=True):
        out.append(line(f"rr_logit coefficient {name}, n = 2000", h, reps))

    coins = ForcedResponse(p_yes=0.25, p_no=0.25)
    h = 0
    for _ in range(reps):
        g = (rng.random(4000) < 0.4).astype(int)
        reports = coins.randomize(rng.random(4000) < np.where(g == 1, 0.3, 0.15), rng)
        low, high = subgroup_prevalence(coins, reports, g).difference(1, 0).confidence_interval()
        h += low <= 0.15 <= high
    out.append(line("group difference 0.30 - 0.15, two-coin, n = 4000", h, reps))

    warner = Warner(p=math.e / (1 + math.e))
    h = 0
    for _ in range(reps):
        member = rng.random(5000) < 0.3
        outcome = rng.random(5000) < np.where(member, 0.1, 0.3)
        res = statistical_parity(outcome, warner.randomize(member, rng), group_design=warner)
        low, high = res.confidence_interval()
        h += low <= 0.2 <= high
    out.append(line("parity difference, group by Warner at epsilon = 1, n = 5000", h, reps))

    sld = StochasticLieDetector([2 / 12, 10 / 12], group_labels=[1, 2])
    hits2 = np.zeros(2)
    for _ in range(reps):
        groups = rng.integers(1, 3, 3000)
        reports = sld.simulate(rng.random(3000) < 0.3, groups - 1, [0.8], rng)
        est = estimate_channel(sld, reports, groups)
        ci = est.conf_int()
        truth = np.array([0.3, 0.8])
        hits2 += (ci["low"].to_numpy() <= truth) & (truth <= ci["high"].to_numpy())
    out.append(line("SLD prevalence pi = 0.3, n = 3000", hits2[0], reps))
    out.append(line("SLD honesty t = 0.8, n = 3000", hits2[1], reps))

    H, C, m, take = 4, 250, 20, 15
    prob = expit(np.array([-1.5, -1.0, -0.5, 0.0])[:, None] + rng.normal(0, 1, (H, C)))
    y = rng.random((H, C, m)) < prob[:, :, None]
    truth = float(y.mean())
    design = ForcedResponse(p_yes=0.2, p_no=0.2)
    hits_c = {"ultimate_cluster": 0, "jackknife": 0, "deville": 0}
    for _ in range(reps):
        chosen = np.stack([rng.choice(C, take, replace=False) for _ in range(H)])
        ys = y[np.arange(H)[:, None], chosen].reshape(-1)
        z = design.randomize(ys, rng)
        kw = {
            "pi": np.full(ys.size, take / C),
            "N": H * C * m,
            "strata": np.repeat(np.arange(H), take * m),
            "clusters": np.repeat(chosen.reshape(-1), m),
        }
        for method in hits_c:
            low, high = survey_estimate(design, z, variance=method, **kw).confidence_interval()
            hits_c[method] += low <= truth <= high
    for method, hc in hits_c.items():
        out.append(line(f"cluster sample mean, {method} variance (60 of 1000 clusters)", hc, reps))
    print("\n".join(out))
    print()
    print(mixed_tau(args.mixed_reps))


def mixed_tau(reps: int, clusters: int = 25, size: int = 20, tau: float = 0.5) -> str:
    """tau's estimate, boundary share and interval coverage by quadrature (see above)."""
    design = ForcedResponse(p_yes=0.2, p_no=0.2)
    critical = float(stats.chi2.ppf(0.95, 1))
    rows = [
        "| quadrature | surveys | mean tau | bias | at the boundary (< 0.01) | "
        "profile coverage | Wald coverage | rejects tau = 0 at 5% |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for q in (1, 7):
        rng = np.random.default_rng(20261126)
        taus, profile_hits, wald_hits, rejects = [], 0, 0, 0
        for _ in range(reps):
            u = rng.normal(0.0, tau, clusters)
            cluster = np.repeat(np.arange(clusters), size)
            x = rng.standard_normal(clusters * size)
            truth = rng.random(clusters * size) < expit(-0.5 + 0.5 * x + u[cluster])
            df = pd.DataFrame({"r": design.randomize(truth, rng), "x": x, "cl": cluster})
            fit = rr_mixed_logit("r ~ x + (1 | cl)", df, design, quadrature=q)
            est = float(fit.params["tau"])
            taus.append(est)
            assert fit.profile is not None
            deviance = fit.profile.deviance(len(fit.params) - 1, math.log(tau))
            profile_hits += deviance <= critical
            low, high = fit.conf_int().loc["tau"]
            wald_hits += low <= tau <= high
            rejects += fit.tau_test().pvalue < 0.05
        t = np.array(taus)
        rows.append(
            f"| {q} | {reps} | {t.mean():.3f} | {t.mean() - tau:+.3f} | "
            f"{np.mean(t < 0.01):.3f} | {profile_hits / reps:.3f} | {wald_hits / reps:.3f} | "
            f"{rejects / reps:.3f} |"
        )
    return "\n".join(rows)


if __name__ == "__main__":
    main()
