"""Two-layer randomized response for panels (issue 40): the composed channel, the
ledger's bound, the estimator on simulated panels, and the change between waves."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from deniable.analysis._waves import (
    conditional_variance,
    coverage_grid,
    wave_change,
)
from deniable.collection.model._budget import check_lifetime, lifetime_ledger, wave_charge
from deniable.collection.model._survey import load_survey
from deniable.collection.respondent._client import panel_report, permanent_uniform
from deniable.errors import BudgetExceededError, SurveyError
from deniable.mechanisms import (
    Crosswise,
    ForcedResponse,
    KaryRR,
    TwoLayerDesign,
    Warner,
)


def panel_survey(version: int = 1, k: int = 2, **changes) -> dict:
    question = {
        "id": "q",
        "text": "Did you use it in the last month?",
        "design": {"name": "warner", "params": {"p": 0.9}},
        "panel": {"permanent": {"name": "warner", "params": {"p": 0.9}}},
    }
    if k > 2:
        question = {
            "id": "q",
            "text": "Which one?",
            "choices": [f"c{i}" for i in range(k)],
            "design": {"name": "kary-rr", "params": {"epsilon": 3.0}},
            "panel": {"permanent": {"name": "kary-rr", "params": {"epsilon": 2.0}}},
        }
    return {
        "id": "panel",
        "title": "Panel",
        "version": version,
        "privacy_budget": 5,
        "lifetime_budget": 30,
        "questions": [question],
    } | changes


def test_the_composed_channel_of_warner_on_warner_is_warner_082():
    """Warner p = 0.9 applied to a permanent Warner p = 0.9 report: 0.9 * 0.9 + 0.1 *
    0.1 = 0.82 (Erlingsson et al. 2014's composition); epsilon_1 is the composed
    channel's, epsilon_inf the permanent layer's, epsilon_1 below both layers'."""
    two = TwoLayerDesign(Warner(p=0.9), Warner(p=0.9))
    np.testing.assert_allclose(two.matrix, [[0.82, 0.18], [0.18, 0.82]], atol=1e-15)
    assert two.epsilon_1 == pytest.approx(math.log(0.82 / 0.18), rel=1e-9)
    assert two.epsilon_inf == pytest.approx(math.log(9), rel=1e-9)
    assert two.epsilon_1 < min(two.permanent.epsilon, two.instantaneous.epsilon)


@pytest.mark.parametrize(
    "instantaneous",
    [ForcedResponse(p_yes=1 / 6, p_no=1 / 6), Crosswise(p=0.25), KaryRR(k=2, epsilon=1.0)],
)
def test_the_shared_covariance_is_the_covariance_of_two_waves_sharing_a_permanent_report(
    instantaneous,
):
    """By enumeration: Cov(1[R1 = r], 1[R2 = r'] | t) with R1, R2 independent given S."""
    two = TwoLayerDesign(Warner(p=0.8), instantaneous)
    M, P, C = two.instantaneous.matrix, two.permanent.matrix, two.matrix
    for t in range(2):
        joint = sum(P[s, t] * np.outer(M[:, s], M[:, s]) for s in range(2))
        expected = joint - np.outer(C[:, t], C[:, t])
        np.testing.assert_allclose(two.shared_covariance(t), expected, atol=1e-15)
        assert np.linalg.eigvalsh(expected).min() >= -1e-15  # positive semi-definite


def test_permanent_reports_are_the_inverse_cdf_the_page_draws():
    """The first s with u < P[0, t] + ... + P[s, t], as respond.js's drawReport."""
    two = TwoLayerDesign(KaryRR(k=3, epsilon=1.0), KaryRR(k=3, epsilon=1.0))
    column = two.permanent.matrix[:, 1]
    edges = np.cumsum(column)
    u = np.array([0.0, edges[0] - 1e-12, edges[0], edges[1] - 1e-12, edges[1], 1 - 2**-53])
    got = two.permanent_reports(np.ones(u.size, dtype=np.int64), u)
    assert got.tolist() == [0, 0, 1, 1, 2, 2]


def test_panel_fields_are_checked_and_named():
    good = load_survey(panel_survey())
    q = good.questions[0]
    assert q.cost == pytest.approx(math.log(9)) and q.epsilon < q.cost
    assert q.permanent_key is not None and q.two_layer is not None
    view = good.respondent_view()["questions"][0]
    assert view["panel"]["epsilon_inf"] == pytest.approx(math.log(9))
    np.testing.assert_allclose(view["columns"], Warner(p=0.9).matrix.T)  # instantaneous
    assert view["by_hand"] is False  # a hidden permanent draw: the device's to keep
    bad = [
        ({"name": "kary-rr", "params": {"epsilon": 1, "k": 3}}, "panel.permanent.params.k"),
        ({"name": "forced-response", "params": {"p_yes": 0.2, "p_no": 0}}, "panel.permanent"),
        ({"name": "duchi", "params": {"epsilon": 1}}, "panel.permanent"),
        ({"name": "warner", "params": {"p": 1.3}}, "panel.permanent.params"),
    ]
    for permanent, field in bad:
        data = panel_survey()
        data["questions"][0]["panel"] = {"permanent": permanent}
        with pytest.raises(SurveyError, match=field.replace(".", r"\.")):
            load_survey(data)
    direct = panel_survey()
    direct["questions"][0]["design"] = {"name": "direct"}
    with pytest.raises(SurveyError, match="panel: a 'direct' question takes no panel"):
        load_survey(direct)


def exact_shared_epsilon(two: TwoLayerDesign, reports: int) -> float:
    """The exact epsilon of ``reports`` reports drawn from one permanent report: the
    largest log ratio, over every sequence of reports and every two answers, of the
    sequence's probability (each report independent given the permanent report)."""
    P, M = two.permanent.matrix, two.instantaneous.matrix
    worst = 0.0
    for sequence in itertools.product(range(M.shape[0]), repeat=reports):
        p = np.prod(M[list(sequence), :], axis=0) @ P  # over the answer
        worst = max(worst, math.log(p.max() / p.min()))
    return worst


def most_over_splits(cost, waves: int) -> float:
    """The largest sum of ``cost(m)`` over the ways to split ``waves`` into groups."""
    best = [0.0] * (waves + 1)
    for w in range(1, waves + 1):
        best[w] = max(cost(m) + best[w - m] for m in range(1, w + 1))
    return best[waves]


LAYERS = {
    "warner 0.9 on 0.9": (Warner(p=0.9), Warner(p=0.9)),
    "warner 0.98 under 0.7": (Warner(p=0.98), Warner(p=0.7)),
    "warner 0.6 on 0.6": (Warner(p=0.6), Warner(p=0.6)),
    "kary-rr(4, 1) under (4, 0.5)": (KaryRR(k=4, epsilon=1.0), KaryRR(k=4, epsilon=0.5)),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_the_waves_bound_covers_every_way_devices_can_answer(name):
    """Waves answered on any mix of devices split into groups sharing one permanent
    report: the bound is at least the exact epsilon of every split (computed here from
    the layers' matrices, up to 6 waves), and equals 6 x epsilon_1 where a new device
    for every wave is the worst case (Warner 0.9 on 0.9). For k-ary RR(4, 1) under
    (4, 0.5), two reports of one device reveal more than two reports of two devices
    (0.334 > 2 x 0.161 nats), so charging epsilon_1 a wave would not hold; the bound
    does."""
    two = TwoLayerDesign(*LAYERS[name])
    top = 6 if two.n_truths == 2 else 4
    exact = [0.0] + [exact_shared_epsilon(two, m) for m in range(1, top + 1)]
    assert exact[1] == pytest.approx(two.epsilon_1, rel=1e-12)
    for m in range(1, top + 1):
        assert exact[m] <= two.shared_bound(m) + 1e-12, m
    for w in range(top + 1):
        assert most_over_splits(lambda m: exact[m], w) <= two.waves_bound(w) + 1e-12, w
    if name == "warner 0.9 on 0.9":
        assert two.waves_bound(6) == pytest.approx(6 * two.epsilon_1)
    if name.startswith("kary-rr"):
        assert exact[2] > 2 * two.epsilon_1
        assert two.waves_bound(2) >= exact[2]
    with pytest.raises(ValueError, match="waves must be at least 0"):
        two.waves_bound(-1)


@pytest.mark.parametrize("k", [2, 16])
def test_the_ledger_charges_a_panel_question_in_every_wave_whatever_the_device(k):
    """10 (or 20) waves of unchanged content: each wave adds what the bound over that
    many waves adds (epsilon_1 a wave where a new device is the worst case), with no
    end after k waves; the per-person charge (wave_charge) the same; the words say that
    k epsilon_inf is the bound of one device."""
    waves = 10 if k == 2 else 20
    versions = [load_survey(panel_survey(v, k)) for v in range(1, waves + 1)]
    two = versions[0].questions[0].two_layer
    ledger = lifetime_ledger(versions)
    assert [c for _, _, c in ledger.cumulative] == pytest.approx(
        [two.waves_bound(w) for w in range(1, waves + 1)]
    )
    assert ledger.spent > k * two.epsilon_inf or k == 16
    if k == 2:
        assert ledger.spent == pytest.approx(waves * two.epsilon_1)
    charges = [wave_charge(versions[i], versions[:i]) for i in range(waves)]
    assert math.fsum(charges) == pytest.approx(two.waves_bound(waves))
    words = ledger.entries[0].in_words()
    assert "new device" in words and "a bound per device, not per person" in words


def test_a_one_layer_question_still_costs_once_and_the_budget_still_binds():
    one = panel_survey()
    del one["questions"][0]["panel"]
    versions = [load_survey(one | {"version": v}) for v in (1, 2, 3)]
    assert lifetime_ledger(versions).spent == pytest.approx(math.log(9))
    tight = [load_survey(panel_survey(v, lifetime_budget=5)) for v in (1, 2, 3)]
    check_lifetime(tight[:1], tight[1])  # 2 x 1.516 = 3.03 <= 5
    check_lifetime(tight[:2], tight[2])  # 3 x 1.516 = 4.55 <= 5
    fourth = load_survey(panel_survey(4, lifetime_budget=5))
    with pytest.raises(BudgetExceededError, match="lifetime_budget"):
        check_lifetime(tight, fourth)  # 4 x 1.516 = 6.07 > 5: a new device each wave


@pytest.mark.slow  # about 3 s: over the fast loop's 180-s budget
def test_the_device_keeps_one_permanent_report_per_answer_and_draws_afresh():
    """The client's permanent report is fixed by the secret and the answer; the sent
    report follows the instantaneous layer's column of it, drawn afresh (seeded here)."""
    view = load_survey(panel_survey(k=16)).respondent_view()["questions"][0]
    secret = bytes(range(32))
    u3 = permanent_uniform(secret, view["panel"]["key"], 3)
    assert u3 == permanent_uniform(secret, view["panel"]["key"], 3)
    assert u3 != permanent_uniform(secret, view["panel"]["key"], 7)
    assert u3 != permanent_uniform(bytes(32), view["panel"]["key"], 3)
    gen = np.random.default_rng(4)
    reports = [panel_report(view, 3, secret, gen) for _ in range(4000)]
    two = load_survey(panel_survey(k=16)).questions[0].two_layer
    assert two is not None
    s = int(two.permanent_reports(np.array([3]), np.array([u3]))[0])
    expected = two.instantaneous.matrix[:, s]
    counts = np.bincount(reports, minlength=16)
    sd = np.sqrt(4000 * expected * (1 - expected))
    assert np.all(np.abs(counts - 4000 * expected) <= 4 * sd)


def test_the_estimator_recovers_each_waves_prevalence_on_a_simulated_panel():
    """10^5 panel members, a 16-choice question, three waves (answers move between them):
    each wave's moment estimate of every share within 4 exact standard errors (given
    the truths) of the wave's true share."""
    q = load_survey(panel_survey(k=16)).questions[0]
    two = q.two_layer
    assert two is not None
    gen = np.random.default_rng(40)
    n, k = 100_000, 16
    u = gen.random((n, k))  # the device's permanent uniform per person and answer
    base = gen.dirichlet(np.ones(k))
    t = gen.choice(k, size=n, p=base)
    inverse, C = q.mechanism.inverse, q.mechanism.matrix
    for wave in range(3):
        if wave:
            move = gen.random(n) < 0.2
            t = np.where(move, gen.choice(k, size=n, p=np.roll(base, wave)), t)
        s = two.permanent_reports(t, u[np.arange(n), t])
        r = two.instantaneous_reports(s, gen)
        est = inverse @ (np.bincount(r, minlength=k) / n)
        truth = np.bincount(t, minlength=k) / n
        # exact variance of each share's estimate given the truths
        var = ((inverse**2) @ C - (inverse @ C) ** 2)[:, t].sum(axis=1) / n**2
        assert np.all(np.abs(est - truth) <= 4 * np.sqrt(var)), wave


def test_the_conditional_variance_matches_repeated_randomization():
    """Fixed truths and overlap, 3,000 randomizations: the variance of the estimated
    change against conditional_variance, within 4 standard errors of a sample variance
    (relative SE sqrt(2 / (R - 1)))."""
    two = TwoLayerDesign(Warner(p=0.8), ForcedResponse(p_yes=0.2, p_no=0.2))
    gen = np.random.default_rng(7)
    n, n2 = 400, 300
    t1 = (gen.random(n) < 0.3).astype(np.int64)
    again = np.sort(gen.permutation(n)[:n2])
    t2 = np.where(gen.random(n2) < 0.1, 1, t1[again])
    pairs = np.column_stack([again, np.arange(n2)])
    exact = conditional_variance(two, t1, t2, pairs, 1)
    diffs = []
    for _ in range(3000):
        u = gen.random((n, 2))
        r1 = two.instantaneous_reports(two.permanent_reports(t1, u[np.arange(n), t1]), gen)
        r2 = two.instantaneous_reports(two.permanent_reports(t2, u[again, t2]), gen)
        diffs.append(wave_change(two, r1, two, r2).difference[1])
    observed = float(np.var(diffs, ddof=1))
    assert abs(observed / exact - 1) <= 4 * math.sqrt(2 / 2999)
    independent = conditional_variance(two, t1, t2, np.empty((0, 2)), 1)
    assert exact < independent  # sharing permanent reports only lowers the variance


def test_wave_change_refuses_mismatched_or_empty_waves():
    with pytest.raises(ValueError, match="same answers"):
        wave_change(Warner(p=0.8), [0, 1], KaryRR(k=3, epsilon=1), [0, 2])
    with pytest.raises(ValueError, match="at least one report"):
        wave_change(Warner(p=0.8), np.array([], dtype=np.int64), Warner(p=0.8), [1])
    with pytest.raises(ValueError, match="confidence_level"):
        wave_change(Warner(p=0.8), [0], Warner(p=0.8), [1], confidence_level=1.3)


@pytest.mark.slow  # about 3 s: over the fast loop's 180-s budget
def test_the_change_interval_covers_in_every_cell_of_the_simulation():
    """The docs' table (coverage_grid, the seeds of bench/panel_waves.py): 300 panels of
    1,000 per cell; change 0, 0.05, 0.2; 50% and 100% re-answering; Warner, forced
    response, unrelated question, crosswise and k-ary RR under a permanent layer, and a
    direct arm: coverage of the population change at least 0.93 in every cell, and never
    narrower than the interval that knows the overlap (linked reports)."""
    rows = coverage_grid()
    assert len(rows) == 36
    for r in rows:
        assert r["coverage"] >= 0.93, r
        assert r["median_width"] >= r["oracle_width"], r


def test_survey_check_prints_both_epsilons_and_the_ledger_in_words(tmp_path):
    """`deniable survey check` of three waves of a panel: epsilon_1 and epsilon_inf of
    the question, the bound over any number of waves, and what each version adds."""
    import yaml
    from typer.testing import CliRunner

    from deniable.cli import app

    files = []
    for version in (1, 2, 3):
        path = tmp_path / f"v{version}.yaml"
        path.write_text(yaml.safe_dump(panel_survey(version)))
        files.append(str(path))
    out = CliRunner().invoke(app, ["survey", "check", *files], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())  # whatever width the console wraps at
    assert "Panel q: epsilon_1 1.5163 nats" in text
    assert "epsilon_1 1.516 nats a wave" in text and "2 x 2.197 = 4.394" in text
    assert "a bound per device, not per person" in text
    as_json = CliRunner().invoke(app, ["survey", "check", *files, "--json"])
    data = json.loads(as_json.stdout)
    versions = data["ledger"]["versions"]
    assert [round(v["added"], 4) for v in versions] == [1.5163, 1.5163, 1.5163]


def test_a_numeric_panel_question_estimates_its_mean_through_the_composed_channel():
    """A number in [0, 10] rounded at random to a bound, both layers over the bounds:
    the mean estimate of 10^5 simulated people within 4 exact SE of their mean."""
    data = panel_survey()
    data["questions"][0] = {
        "id": "drinks",
        "text": "How many drinks last week?",
        "range": {"low": 0, "high": 10},
        "design": {"name": "duchi", "params": {"epsilon": 1.0}},
        "panel": {"permanent": {"name": "warner", "params": {"p": 0.8}}},
    }
    q = load_survey(data).questions[0]
    two = q.two_layer
    assert two is not None and q.cost == pytest.approx(math.log(4))
    gen = np.random.default_rng(11)
    n = 100_000
    values = gen.uniform(0, 10, n) ** 1.2 / 10**0.2
    bound = (gen.random(n) < values / 10).astype(np.int64)
    s = two.permanent_reports(bound, gen.random(n))
    r = two.instantaneous_reports(s, gen)
    est = q.mean_estimate(np.bincount(r, minlength=2))
    c = two.matrix[1]  # Pr(report 1 | low), Pr(report 1 | high)
    z = values / 10
    p1 = c[0] + (c[1] - c[0]) * z  # each person's chance of report 1 (rounding included)
    var = float((p1 * (1 - p1)).sum()) / n**2 * (10 / (c[1] - c[0])) ** 2
    assert abs(float(est.estimate) - values.mean()) <= 4 * math.sqrt(var)


def test_a_64_choice_panel_question_at_low_epsilon_is_charged_its_waves_bound():
    """The hard end of the answers (64, the most a question may have) and of epsilon
    (0.05 nats in each layer): the composed channel is still identifiable, and 70 waves
    cost the bound over 70 waves on any devices (two reports of one device reveal at most
    epsilon_inf, more than two reports of two devices at this epsilon: 35 x 0.05)."""
    data = panel_survey(k=2)
    data["questions"][0] = {
        "id": "q",
        "text": "Which one?",
        "choices": [f"c{i}" for i in range(64)],
        "design": {"name": "kary-rr", "params": {"epsilon": 0.05}},
        "panel": {"permanent": {"name": "kary-rr", "params": {"epsilon": 0.05}}},
    }
    data["lifetime_budget"] = 30
    versions = [load_survey(data | {"version": v}) for v in range(1, 71)]
    q = versions[0].questions[0]
    assert q.epsilon < q.epsilon_inf == pytest.approx(0.05)
    assert np.linalg.matrix_rank(q.mechanism.matrix) == 64
    two = q.two_layer
    assert lifetime_ledger(versions).spent == pytest.approx(two.waves_bound(70))
    assert two.waves_bound(70) == pytest.approx(max(35 * 0.05, 70 * q.epsilon))


def test_a_wave_of_a_group_design_says_it_cannot_be_a_panel():
    """A group design (extended crosswise) cannot take a permanent layer: the wave's
    refusal says so and gives no advice the model would then refuse; a one-randomizer
    question is told how to declare its layer, and that advice loads."""
    from deniable.collection.store._wave_store import check_panel

    data = panel_survey()
    data["questions"] = [
        {
            "id": "plagiarism",
            "text": "Have you ever handed in someone else's work as your own?",
            "innocuous_question": "Is your mother's birthday in January, February or March?",
            "design": {"name": "extended-crosswise", "params": {"p": 0.25}},
        },
        {"id": "q", "text": "Did you use it?", "design": {"name": "warner", "params": {"p": 0.9}}},
    ]
    with pytest.raises(SurveyError) as refused:
        check_panel(load_survey(data))
    text = str(refused.value)
    grouped = text[text.index("questions.plagiarism.panel") :]
    assert "cannot be a panel question" in grouped.split("questions.q.panel")[0]
    assert "Declare its permanent layer" not in grouped.split("questions.q.panel")[0]
    assert "Declare its permanent layer" in text[text.index("questions.q.panel") :]
    data["questions"][1]["panel"] = {"permanent": {"name": "warner", "params": {"p": 0.9}}}
    load_survey(data | {"questions": data["questions"][1:]})  # the advice loads
    data["questions"][0]["panel"] = {"permanent": {"name": "warner", "params": {"p": 0.9}}}
    with pytest.raises(SurveyError, match="takes no panel"):
        load_survey(data)  # and the group design would be refused, as the wave says
