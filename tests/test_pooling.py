"""The estimate pooled over a study's arms (issue 43, item 2): the joint maximum
likelihood over the randomized arms, each arm weighted by its information at the common
prevalence; a direct arm only with ``pool: true``; Cochran's Q beside it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from deniable.analysis import cochran_q
from deniable.collection.model import load_survey
from deniable.collection.study import arm_analysis, pooled_estimate
from deniable.estimation import estimate
from deniable.estimation._pooled import moment_covariance_at
from deniable.mechanisms import Crosswise, ForcedResponse, Warner

DESIGNS = {
    "rr": ForcedResponse(p_yes=0.25, p_no=0.25),
    "rr2": Warner(p=0.8),
    "rr3": Crosswise(p=0.2),
}


def study(pool_direct: bool = False) -> dict:
    return {
        "format": 1,
        "id": "pooling",
        "version": 1,
        "title": "Pooling",
        "privacy_budget": 8.0,
        "arms": {
            "dq": {"designs": {"cheat": {"name": "direct"}}, "pool": pool_direct},
            "rr": {},
            "rr2": {"designs": {"cheat": {"name": "warner", "params": {"p": 0.8}}}},
            "rr3": {"designs": {"cheat": {"name": "crosswise", "params": {"p": 0.2}}}},
        },
        "questions": [
            {
                "id": "cheat",
                "text": "Have you cheated in an exam this year?",
                "design": {"name": "forced-response", "params": {"p_yes": 0.25, "p_no": 0.25}},
            }
        ],
    }


def frame_of(arms: dict[str, np.ndarray]) -> pd.DataFrame:
    """A wide export: one row per report code, with its arm."""
    rows = [(1, arm, int(c)) for arm, codes in arms.items() for c in codes]
    return pd.DataFrame(rows, columns=["version", "arm", "cheat"])


def simulate(rng: np.random.Generator, prevalence: float, sizes: dict[str, int]) -> pd.DataFrame:
    arms = {}
    for arm, n in sizes.items():
        truth = (rng.random(n) < prevalence).astype(np.int64)
        arms[arm] = truth if arm == "dq" else DESIGNS[arm].randomize(truth, rng)
    return frame_of(arms)


#: What the direct arm's stored reports went through: the server's post-randomization
#: (k-ary RR at the smallest epsilon of the arms that randomize cheat).
DQ_CHANNEL = load_survey(study()).questions_in("dq")[0].mechanism


def joint_mle(frame: pd.DataFrame, arms: list[str]) -> tuple[float, float]:
    """The joint maximum likelihood over ``arms`` by direct maximisation, and its
    standard error from the expected information at the estimate, written here from
    the designs' matrices: sum over arms of n_a sum_r (P_a[r, 1] - P_a[r, 0])^2 /
    (P_a pi)_r."""
    parts = []
    for arm in arms:
        codes = frame.loc[frame["arm"] == arm, "cheat"].to_numpy()
        P = DQ_CHANNEL.matrix if arm == "dq" else DESIGNS[arm].matrix
        parts.append((P, np.bincount(codes, minlength=P.shape[0])))

    def nll(p: float) -> float:
        return -sum(float(c @ np.log(P @ [1 - p, p])) for P, c in parts)

    p = optimize.minimize_scalar(nll, bounds=(1e-9, 1 - 1e-9), method="bounded",
                                 options={"xatol": 1e-12}).x  # fmt: skip
    info = sum(
        c.sum() * float(np.sum((P[:, 1] - P[:, 0]) ** 2 / (P @ [1 - p, p]))) for P, c in parts
    )
    return float(p), 1 / math.sqrt(info)


def test_the_pooled_estimate_is_the_joint_likelihood_over_the_randomized_arms():
    """Three randomized arms and a direct one: the pooled estimate and its SE are the
    joint maximum likelihood's over the three randomized arms (expected information at
    the common prevalence), and its SE is no larger than the least-squares pooling's."""
    survey = load_survey(study())
    frame = simulate(
        np.random.default_rng(43), 0.3, {"dq": 800, "rr": 900, "rr2": 1000, "rr3": 700}
    )
    (result,) = arm_analysis(frame, survey)
    item = result.to_dict()
    pooled = item["pooled"]
    assert pooled["arms"] == ["rr", "rr2", "rr3"] and pooled["method"] == "mle"
    p, se = joint_mle(frame, ["rr", "rr2", "rr3"])
    # EM stops at a relative change of 1e-10 in the likelihood's argument
    assert pooled["estimate"] == pytest.approx(p, abs=1e-6)
    assert pooled["std_error"] == pytest.approx(se, rel=1e-4)
    assert pooled["n"] == 2600
    least_squares = pooled_estimate(frame, survey, "cheat", method="moment")
    assert pooled["std_error"] <= float(least_squares.std_error[1])
    assert pooled_estimate(frame, survey, "cheat", method="mle").estimate[1] == pytest.approx(
        pooled["estimate"], abs=1e-12
    )


def test_a_direct_arm_joins_only_with_pool_true_and_takes_no_more_than_its_weight():
    """A direct arm where nobody says yes: its plug-in variance is 0, which would give it
    all the weight; at the common prevalence its weight is n / (pi (1 - pi)), and the
    pooled estimate stays the joint likelihood's, strictly between the arms'."""
    rng = np.random.default_rng(7)
    rr = DESIGNS["rr"].randomize((rng.random(1500) < 0.3).astype(np.int64), rng)
    frame = frame_of({"dq": np.zeros(300, dtype=np.int64), "rr": rr})
    for pool in (False, True):
        survey = load_survey(study(pool) | {"arms": {"dq": study(pool)["arms"]["dq"], "rr": {}}})
        (result,) = arm_analysis(frame, survey)
        pooled = result.to_dict()["pooled"]
        assert pooled["arms"] == (["dq", "rr"] if pool else ["rr"])
        p, se = joint_mle(frame, pooled["arms"])
        assert pooled["estimate"] == pytest.approx(p, abs=1e-6)
        assert pooled["std_error"] == pytest.approx(se, rel=1e-4)
    rr_alone = float(estimate(DESIGNS["rr"], rr, "mle").estimate[1])
    assert 0.05 < pooled["estimate"] < rr_alone  # the direct arm pulls, but does not rule
    q = pooled["heterogeneity"]
    assert q["df"] == 1 and q["pvalue"] < 1e-6  # the direct arm under-reports: Q says so


def test_an_arm_with_no_rows_is_left_out_of_the_pool_and_named():
    """The rr2 arm drew nobody: the pool is over the arms with rows, which it names, and
    equals the joint likelihood over them; Cochran's Q has one degree of freedom less."""
    survey = load_survey(study())
    frame = simulate(np.random.default_rng(44), 0.2, {"dq": 300, "rr": 900, "rr3": 700})
    (result,) = arm_analysis(frame, survey)
    item = result.to_dict()
    assert [a["arm"] for a in item["arms"]] == ["dq", "rr", "rr3"]
    pooled = item["pooled"]
    assert pooled["arms"] == ["rr", "rr3"] and pooled["n"] == 1600
    p, se = joint_mle(frame, ["rr", "rr3"])
    assert pooled["estimate"] == pytest.approx(p, abs=1e-6)
    assert pooled["std_error"] == pytest.approx(se, rel=1e-4)
    assert pooled["heterogeneity"]["df"] == 1


def test_sixteen_arms_pool_to_the_joint_likelihood():
    """The most arms a survey file takes (16), each randomizing through its own Warner
    design (p from 0.65 to 0.95): the pooled estimate and SE are the joint likelihood's
    over all 16, and under one prevalence Cochran's Q on 15 df stays below its 4-sigma
    bound (15 + 4 sqrt(30))."""
    ps = np.linspace(0.65, 0.95, 16)
    arms = {f"a{i:02d}": {"designs": {"cheat": {"name": "warner", "params": {"p": float(p)}}}}
            for i, p in enumerate(ps)}  # fmt: skip
    survey = load_survey(study() | {"arms": arms})
    rng = np.random.default_rng(4316)
    codes = {}
    for (name, _), p in zip(arms.items(), ps, strict=True):
        codes[name] = Warner(p=float(p)).randomize((rng.random(250) < 0.3).astype(np.int64), rng)
    frame = frame_of(codes)
    (result,) = arm_analysis(frame, survey)
    pooled = result.to_dict()["pooled"]
    assert pooled["arms"] == sorted(arms) and pooled["n"] == 16 * 250

    def nll(x: float) -> float:
        return -sum(
            float(
                np.bincount(codes[name], minlength=2)
                @ np.log(Warner(p=float(p)).matrix @ [1 - x, x])
            )
            for name, p in zip(arms, ps, strict=True)
        )

    best = optimize.minimize_scalar(nll, bounds=(1e-9, 1 - 1e-9), method="bounded",
                                    options={"xatol": 1e-12}).x  # fmt: skip
    info = sum(250 * (2 * p - 1) ** 2 / ((Warner(p=float(p)).matrix @ [1 - best, best]).prod())
               for p in ps)  # fmt: skip
    assert pooled["estimate"] == pytest.approx(best, abs=1e-6)
    assert pooled["std_error"] == pytest.approx(1 / math.sqrt(info), rel=1e-4)
    q = pooled["heterogeneity"]
    assert q["df"] == 15 and q["statistic"] <= 15 + 4 * math.sqrt(30)


def test_the_survey_file_keeps_its_digest_without_pool():
    """``pool`` was added after publishing began: at its default it is not in the
    canonical JSON, so a published survey's digest does not change."""
    survey = load_survey(study())
    assert '"pool"' not in survey.canonical_json()
    assert '"pool":true' in load_survey(study(True)).canonical_json()


@pytest.mark.slow
@pytest.mark.parametrize("prevalence", [0.05, 0.3])
def test_cochran_q_is_chi_square_under_one_prevalence(prevalence):
    """Two randomized arms (2,000 respondents each) with one prevalence in half of 1,000
    studies: Q at the 5% level rejects 5% of those (binomial 4-sigma band around 0.05
    over 500: +-0.039); with prevalences 0.05 and 0.35 in the other half it rejects
    almost always."""
    rng = np.random.default_rng(2043)
    studies, rejected, power = 1000, 0, 0
    for i in range(studies):
        second = prevalence if i % 2 == 0 else None
        results = []
        for arm, p in (("rr", prevalence), ("rr2", prevalence if second is not None else 0.35)):
            n = 2000
            codes = DESIGNS[arm].randomize((rng.random(n) < p).astype(np.int64), rng)
            results.append((arm, codes))
        keys = np.concatenate([[a] * c.size for a, c in results])
        codes = np.concatenate([c for _, c in results])
        designs = {a: DESIGNS[a] for a, _ in results}
        pooled = float(estimate(designs, codes, "mle", groups=keys).estimate[1])
        means = [float(estimate(DESIGNS[a], c).estimate[1]) for a, c in results]
        var = [
            float(
                moment_covariance_at({a: DESIGNS[a]}, [a] * c.size, c, [1 - pooled, pooled])[1, 1]
            )
            for a, c in results
        ]
        test = cochran_q(means, var, pooled)
        if second is not None:
            rejected += test.pvalue < 0.05
        elif prevalence == 0.05:
            power += test.pvalue < 0.05
    null_studies = studies // 2
    rate = rejected / null_studies
    band = 4 * math.sqrt(0.05 * 0.95 / null_studies)
    assert abs(rate - 0.05) < band, rate
    if prevalence == 0.05:
        assert power / (studies - null_studies) > 0.99
    assert stats.chi2.sf(3.841, 1) == pytest.approx(0.05, abs=1e-4)


def test_cochran_q_refuses_what_it_cannot_weigh():
    with pytest.raises(ValueError, match="length >= 2"):
        cochran_q([0.3], [0.01], 0.3)
    with pytest.raises(ValueError, match="positive and finite"):
        cochran_q([0.3, 0.2], [0.01, 0.0], 0.25)
