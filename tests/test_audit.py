"""The privacy auditor (``deniable.audit``, ``deniable audit SPEC``): its bounds are
Clopper-Pearson's, it never finds a shipped encoder above its claim (99% family-wise, on
both kernel paths), it comes within 0.9 of every claim a pair of inputs attains, and it
catches each of the defects planted below in copies of the encoders, by name."""

from __future__ import annotations

import json
import math
import os
import random
import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binomtest
from typer.testing import CliRunner

from deniable import ForcedResponse, Rappor, Warner
from deniable.audit import (
    TimingCheck,
    audit_epsilon,
    clopper_pearson_high,
    clopper_pearson_low,
    epsilon_lower_bound,
    fit_test,
    node_encoder,
    node_oracle_encoders,
    node_oracle_source_checks,
    node_panel_encoders,
    node_panel_memo_check,
    node_source_check,
    node_timing_check,
    page_encoder,
    page_oracle_encoders,
    page_oracle_source_checks,
    page_source_check,
    page_timing_check,
    paired_gap,
    source_check,
    timing_check,
)
from deniable.cli import app
from deniable.mechanisms import (
    BytePrefixExtension,
    Crosswise,
    DBitFlip,
    DuchiMean,
    HadamardResponse,
    HybridMean,
    KaryRR,
    Kuk,
    LocalHashing,
    Mangat,
    OneBitMean,
    Piecewise,
    PrefixExtension,
    Triangular,
    TwoLayerDesign,
    UnaryEncoding,
    UnrelatedQuestion,
)


def shipped() -> list[Any]:
    """Every kind of shipped randomizer, at moderate parameters."""
    return [
        Warner(p=0.75),
        ForcedResponse(p_yes=0.2, p_no=0.1),
        UnrelatedQuestion(p=0.7, innocuous_prevalence=0.3),
        Crosswise(p=0.25),
        Kuk(p_carrier=0.7, p_noncarrier=0.3),
        Mangat(p=0.6),
        Triangular(p=0.3),
        KaryRR(k=3, epsilon=1.0),
        KaryRR(k=8, epsilon=2.0),
        TwoLayerDesign(Warner(p=0.9), Warner(p=0.75)),
        UnaryEncoding(k=16, epsilon=1.0),
        UnaryEncoding(k=16, epsilon=1.0, optimized=False),
        LocalHashing(k=16, epsilon=2.0),
        HadamardResponse(k=16, epsilon=1.0),
        HadamardResponse(k=16, epsilon=3.0),
        DuchiMean(1.0),
        Piecewise(1.0),
        HybridMean(1.0),
        OneBitMean(1.0, low=0, high=10),
        PrefixExtension(1.0, max_length=5),
        BytePrefixExtension(1.0, max_bytes=16),
        DBitFlip(k=16, epsilon=2.0, d=2),
    ]


# --- the bounds ------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(0, 50), (3, 50), (25, 50), (50, 50), (7_000, 100_000)])
def test_the_bounds_are_clopper_pearsons(k, n):
    """One-sided at level L is the two-sided exact interval at 2L - 1 (scipy's)."""
    ci = binomtest(k, n).proportion_ci(confidence_level=0.98, method="exact")
    assert clopper_pearson_low(k, n, 0.99) == pytest.approx(ci.low, abs=1e-12)
    assert clopper_pearson_high(k, n, 0.99) == pytest.approx(ci.high, abs=1e-12)


def test_the_lower_bound_covers_over_many_simulated_audits():
    """Over 4,000 audits of Warner p = 0.75 with 2,000 draws an input, the bound at 90%
    confidence is below ln 3 in at least 90% of them: the miss rate's 4-sigma upper limit
    is 0.10 + 4 sqrt(0.09 / 4000) = 0.119, so a failure means the bound is not valid."""
    rng = np.random.default_rng(2026)
    k0 = rng.binomial(2_000, 0.75, 4_000)
    k1 = rng.binomial(2_000, 0.25, 4_000)
    bounds = np.array(
        [epsilon_lower_bound(int(a), 2000, int(b), 2000, 0.90) for a, b in zip(k0, k1, strict=True)]
    )
    assert np.mean(bounds > math.log(3)) < 0.10 + 4 * math.sqrt(0.09 / 4_000)
    assert np.mean(bounds > math.log(3)) < 0.05  # Clopper-Pearson is conservative


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: clopper_pearson_low(5, 0, 0.9), "n must be"),
        (lambda: clopper_pearson_low(11, 10, 0.9), "k must be"),
        (lambda: clopper_pearson_high(1, 10, 1.5), "level must be"),
        (lambda: epsilon_lower_bound(1, 10, 1, 10, 0.0), "confidence must be"),
        (lambda: audit_epsilon(Warner(p=0.75), n=0), "n must be"),
        (lambda: audit_epsilon(Warner(p=0.75), runtime="jit"), "runtime must be one of"),
        (lambda: fit_test(Warner(p=0.75), alpha=1.3), "alpha must be"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ValueError, match=field):
        call()


def test_an_unknown_mechanism_is_named():
    with pytest.raises(TypeError, match="cannot audit str"):
        audit_epsilon("warner")


# --- sound and tight on the shipped encoders ------------------------------------------


@pytest.mark.parametrize("runtime", ["numpy", "numba"])
def test_no_shipped_encoder_measures_above_its_claim_and_each_fits_its_channel(runtime):
    """99% family-wise: each bound at 1 - 0.01 / m and each fit test at 0.01 / m over the m
    targets; 40,000 draws an input. A fit's rejection counts only when fresh draws confirm
    it (``confirm=True``): unconfirmed, each such family fails a correct encoder one run in
    a hundred, and the suite holds ten (a CI run failed so on OLH's numba path, adjusted
    p 2.8e-4; 150 fresh fits of it gave p-values no smaller than uniform)."""
    targets = shipped()
    m = sum(2 if isinstance(t, TwoLayerDesign) else 1 for t in targets)
    for mech in targets:
        for audit in audit_epsilon(mech, n=40_000, confidence=1 - 0.01 / m, runtime=runtime):
            assert not audit.exceeds, audit
        for fit in fit_test(mech, n=40_000, alpha=0.01 / m, runtime=runtime, confirm=True):
            assert not fit.rejects, fit
        assert all(s.passes for s in source_check(mech, n=8_192)), mech


@pytest.mark.slow
def test_rappors_two_layers_are_audited_apart_sound_tight_and_secure():
    """The permanent layer (epsilon_inf) and one report (epsilon_1), 400,000 clients an
    input: about 4 times the normal approximation's need for 90% of epsilon_1 at this
    confidence (100,000 gave 89.4% in a CI run); a client's secret and coins are HMACs,
    slower than the other encoders."""
    rappor = Rappor(n_bloom_bits=16, h=2, n_cohorts=1, f=0.5, p=0.5, q=0.75)
    lifetime, report = audit_epsilon(rappor, n=400_000, confidence=1 - 0.01 / 4)
    assert lifetime.claimed == pytest.approx(rappor.epsilon_lifetime)
    assert report.claimed == pytest.approx(rappor.epsilon_report)
    for audit in (lifetime, report):
        assert not audit.exceeds and audit.tightness >= 0.9, audit
    assert not any(f.rejects for f in fit_test(rappor, n=40_000, alpha=0.01 / 4, confirm=True))
    assert all(s.passes for s in source_check(Rappor(n_bloom_bits=16, h=2, n_cohorts=4), n=4_096))


@pytest.mark.parametrize(
    ("mech", "n"),
    [
        (Warner(p=math.exp(0.5) / (1 + math.exp(0.5))), 200_000),  # epsilon 0.5
        (KaryRR(k=4, epsilon=1.0), 100_000),
        (UnaryEncoding(k=16, epsilon=2.0), 100_000),
        (LocalHashing(k=16, epsilon=2.0), 100_000),
        (KaryRR(k=4, epsilon=4.0), 100_000),
        (DuchiMean(2.0), 100_000),
    ],
)
def test_the_bound_comes_within_a_tenth_of_a_claim_a_pair_attains(mech, n):
    """The draws needed for 0.9 at 99%: about 2 x 10^5 an input at epsilon 0.5, 10^5 at 1
    to 4 (docs/audit.md gives the grid to 8, where 10^6 are needed)."""
    (audit,) = audit_epsilon(mech, n=n, confidence=0.99)
    assert 0.9 <= audit.tightness <= 1.0 + 1e-12, audit


# --- planted defects ---------------------------------------------------------------------

Encoder = Callable[[np.ndarray, Any], Any]


def _swap_numba(honest: Any, defective: Any) -> Encoder:
    """An encoder whose compiled path diverges from the NumPy one."""
    import os

    def encode(values: np.ndarray, rng: Any) -> Any:
        chosen = defective if os.environ.get("DENIABLE_KERNELS") == "numba" else honest
        return chosen.randomize(values, rng)

    return encode


def _olh_biased_bucket(values: np.ndarray, rng: Any) -> Any:
    reports = LocalHashing(k=16, epsilon=2.0).randomize(values, rng)
    hit = np.random.default_rng().random(reports.size) < 0.05
    reports["y"][hit] = 0  # bucket 0 more likely than the channel says
    return reports


def _constant_for_yes(values: np.ndarray, rng: Any) -> Any:
    reports = Warner(p=0.75).randomize(values, rng)
    return np.where(values == 1, 1, reports).astype(np.uint8)  # 'yes' never randomized


def _kary_top_unrandomized(values: np.ndarray, rng: Any) -> Any:
    reports = KaryRR(k=4, epsilon=1.0).randomize(values, rng)
    return np.where(values == 3, 3, reports).astype(reports.dtype)


def _seeded(values: np.ndarray, rng: Any) -> Any:
    return Warner(p=0.75).randomize(values, np.random.default_rng(7))


def _numpy_source(values: np.ndarray, rng: Any) -> Any:
    return Warner(p=0.75).randomize(values, np.random.default_rng())


def _python_random(values: np.ndarray, rng: Any) -> Any:
    u = np.array([random.random() for _ in range(values.size)])  # the defect
    return np.where(u < 0.75, values, 1 - values).astype(np.uint8)


def _onebit_flipped(values: np.ndarray, rng: Any) -> Any:
    return 1 - OneBitMean(1.0, low=0, high=10).randomize(values, rng)


def _hybrid_offset(values: np.ndarray, rng: Any) -> Any:
    return HybridMean(1.0).randomize(np.clip(values + 0.05, -1, 1), rng)


PEM = PrefixExtension(1.0, max_length=5)
BPEM = BytePrefixExtension(1.0, max_bytes=16)


def _prefix_rows(mech: Any, values: np.ndarray) -> np.ndarray:
    """Each report's random bytes, a row each, from the secure source (to edit)."""
    raw = np.frombuffer(os.urandom(mech.bytes_per_report * values.size), np.uint8)
    return raw.reshape(values.size, mech.bytes_per_report).copy()


def _pem_keep_raised(values: np.ndarray, rng: Any) -> Any:
    rows = _prefix_rows(PEM, values)
    rows[::4, 20:24] = 0  # the keep word (after level, a, b): a quarter always keep
    return PEM.encode(values, rows.tobytes())


def _pem_level_by_value(values: np.ndarray, rng: Any) -> Any:
    rows = _prefix_rows(PEM, values)
    rows[values == PEM.alphabet[0], :4] = 0  # the first symbol always at level 0
    return PEM.encode(values, rows.tobytes())


def _byte_pem_keep_raised(values: np.ndarray, rng: Any) -> Any:
    rows = _prefix_rows(BPEM, values)
    keep = 4 + 8 * BPEM.r  # the keep word, after the level word and the r hash rows
    rows[::4, keep : keep + 4] = 0
    return BPEM.encode(values, rows.tobytes())


def _byte_pem_bucket_off(values: np.ndarray, rng: Any) -> Any:
    reports = BPEM.randomize(values, rng)
    reports["y"] ^= (np.frombuffer(os.urandom(values.size), np.uint8) < 13).astype(np.uint8)
    return reports  # 5% of buckets one bit off: fewer reports support the truth


def _dbitflip_bits_set(values: np.ndarray, rng: Any) -> Any:
    reports = DBitFlip(k=16, epsilon=2.0, d=2).randomize(values, rng)
    extra = np.frombuffer(os.urandom(reports.bits.size), np.uint8).reshape(reports.bits.shape)
    return type(reports)(reports.buckets, reports.bits | (extra < 13))  # 5% more ones


#: (defect, claimed mechanism, defective encoder, the check that catches it, runtime)
DEFECTS: list[tuple[str, Any, Encoder, str, str | None]] = [
    ("Warner p 0.77 for 0.75", Warner(p=0.75), Warner(p=0.77).randomize, "bound", None),
    ("Warner p 0.74 for 0.75 (more private)", Warner(p=0.75), Warner(p=0.74).randomize,
     "fit", None),
    ("k-ary RR epsilon scaled by 2", KaryRR(k=4, epsilon=1.0),
     KaryRR(k=4, epsilon=2.0).randomize, "bound", None),
    ("forced response p_yes and p_no swapped", ForcedResponse(p_yes=0.3, p_no=0.1),
     ForcedResponse(p_yes=0.1, p_no=0.3).randomize, "fit", None),
    ("a constant report for one answer", Warner(p=0.75), _constant_for_yes, "bound", None),
    ("one k-ary answer never randomized", KaryRR(k=4, epsilon=1.0), _kary_top_unrandomized,
     "fit", None),
    ("crosswise p 0.28 for 0.25", Crosswise(p=0.25), Crosswise(p=0.28).randomize, "fit", None),
    ("unrelated question: innocuous prevalence 0.35 for 0.3",
     UnrelatedQuestion(p=0.7, innocuous_prevalence=0.3),
     UnrelatedQuestion(p=0.7, innocuous_prevalence=0.35).randomize, "fit", None),
    ("Duchi epsilon scaled by 2", DuchiMean(1.0), DuchiMean(2.0).randomize, "bound", None),
    ("piecewise epsilon 1.3 for 1", Piecewise(1.0), Piecewise(1.3).randomize, "bound", None),
    ("1BitMean bits flipped", OneBitMean(1.0, low=0, high=10), _onebit_flipped, "fit", None),
    ("hybrid mean shifted by 0.05", HybridMean(1.0), _hybrid_offset, "fit", None),
    ("OUE epsilon scaled by 2", UnaryEncoding(k=16, epsilon=1.0),
     UnaryEncoding(k=16, epsilon=2.0).randomize, "bound", None),
    ("OUE encoded as SUE (the other unary encoding's p and q)",
     UnaryEncoding(k=16, epsilon=1.0), UnaryEncoding(k=16, epsilon=1.0, optimized=False).randomize,
     "fit", None),
    ("OLH with a biased bucket", LocalHashing(k=16, epsilon=2.0), _olh_biased_bucket, "fit", None),
    ("OLH with g 7 for 8", LocalHashing(k=16, epsilon=2.0),
     LocalHashing(k=16, epsilon=2.0, g=7).randomize, "fit", None),
    ("Hadamard response epsilon scaled by 2 (its blocks change too)",
     HadamardResponse(k=16, epsilon=1.0), HadamardResponse(k=16, epsilon=2.0).randomize,
     "fit", None),
    ("panel permanent layer p 0.95 for 0.9", Warner(p=0.9), Warner(p=0.95).randomize,
     "bound", None),
    ("a seeded source", Warner(p=0.75), _seeded, "source", None),
    ("an unseeded NumPy generator instead of the secure source", Warner(p=0.75), _numpy_source,
     "source", None),
    ("Python's random module instead of the secure source", Warner(p=0.75), _python_random,
     "source", None),
    ("PEM keeps its bucket a quarter more often", PEM, _pem_keep_raised, "bound", None),
    ("PEM's level drawn from the value", PEM, _pem_level_by_value, "fit", None),
    ("byte-PEM keeps its bucket a quarter more often", BPEM, _byte_pem_keep_raised, "bound",
     None),
    ("byte-PEM's bucket one bit off in 5% of reports", BPEM, _byte_pem_bucket_off, "fit", None),
    ("dBitFlip's bit epsilon not halved for two buckets", DBitFlip(k=16, epsilon=2.0, d=2),
     DBitFlip(k=16, epsilon=4.0, d=2).randomize, "bound", None),
    ("dBitFlip's bits 1 in 5% more reports", DBitFlip(k=16, epsilon=2.0, d=2),
     _dbitflip_bits_set, "fit", None),
    ("the numba path diverging from NumPy (k-ary epsilon 2 for 1)", KaryRR(k=4, epsilon=1.0),
     _swap_numba(KaryRR(k=4, epsilon=1.0), KaryRR(k=4, epsilon=2.0)), "bound", "numba"),
]  # fmt: skip


@pytest.mark.parametrize(("defect", "claim", "encode", "check", "runtime"), DEFECTS,
                         ids=[d[0] for d in DEFECTS])  # fmt: skip
def test_each_planted_defect_is_caught_by_name(defect, claim, encode, check, runtime):
    """Each at 99% (bound, fit) or by the source check, 200,000 draws an input; a fit's
    rejection confirmed on fresh draws, as the shipped encoders' tests ask."""
    if check == "bound":
        (audit,) = audit_epsilon(claim, n=200_000, encode=encode, runtime=runtime)
        assert audit.exceeds, (defect, audit)
    elif check == "fit":
        (fit,) = fit_test(claim, n=200_000, encode=encode, runtime=runtime, confirm=True)
        assert fit.rejects, (defect, fit)
    else:
        (source,) = source_check(claim, encode=encode)
        assert not source.passes, (defect, source)


def test_twenty_defects_at_least_and_the_honest_encoders_pass_the_same_checks():
    assert len(DEFECTS) + 1 >= 20  # and the timing defect below
    for _, claim, _, check, runtime in DEFECTS:  # the control: the shipped encoder passes
        if check == "bound":
            assert not audit_epsilon(claim, n=50_000, runtime=runtime)[0].exceeds
        elif check == "source":
            assert source_check(claim)[0].passes


# --- the command ----------------------------------------------------------------------------


def test_the_command_audits_every_kind_of_spec_and_exits_2_on_a_bad_one():
    out = CliRunner().invoke(app, ["audit", "kary-rr:k=5,epsilon=1", "--n", "50000", "--json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.stdout)
    assert payload["passed"] and payload["audits"][0]["claimed"] == pytest.approx(1.0)
    assert 0.9 < payload["audits"][0]["tightness"] <= 1.0
    text = CliRunner().invoke(app, ["audit", "warner:p=0.75", "--n", "20000"])
    assert text.exit_code == 0 and "passes" in text.output
    for spec in ("pem:epsilon=1,max_length=4", "pem-bytes:epsilon=1,max_bytes=16",
                 "dbitflip:k=16,epsilon=2,d=2"):  # fmt: skip
        prefix = CliRunner().invoke(app, ["audit", spec, "--n", "20000", "--json"])
        assert prefix.exit_code == 0 and json.loads(prefix.stdout)["passed"], prefix.output
    wrong = CliRunner().invoke(app, ["audit", "warner:p=1.3"])
    assert wrong.exit_code == 2 and "SPEC" in wrong.output


# --- timing -------------------------------------------------------------------------------


def _slower_for_yes(values: np.ndarray, rng: Any) -> Any:
    reports = Warner(p=0.75).randomize(values, rng)
    if values[0] == 1:  # the defect: an answer-dependent branch
        np.sort(np.arange(20_000)[::-1])
    return reports


@pytest.mark.parametrize(
    "mech", [Warner(p=0.75), KaryRR(k=8, epsilon=2.0), LocalHashing(k=16, epsilon=2.0)]
)
def test_single_call_times_do_not_tell_the_answers_apart(mech):
    """5,000 calls an answer: the AUC's standard deviation under no leak is 0.0058, so
    0.52 is 3.5 of them (and medians within 1% pass too). The other worker shares the
    two cores, so a failure is confirmed on fresh calls before it counts."""
    checks = timing_check(mech, calls=5_000)
    if not all(c.passes for c in checks):
        checks = timing_check(mech, calls=5_000)
    for check in checks:
        assert check.passes, check


def test_an_answer_dependent_branch_is_caught_by_its_timing():
    (check,) = timing_check(Warner(p=0.75), calls=2_000, encode=_slower_for_yes)
    assert not check.passes and check.auc > 0.9, check


def _batch_pairs(rng: Any, pairs: int, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """Timed batches as a busy machine gives them: a drift both of a pair share, noise of
    5% each, and in 5% of batches a pause (a collector, another process) of 1-5 times
    the batch, on whichever batch of the pair it falls."""
    drift = rng.lognormal(0.0, 0.2, pairs)
    a, b = (drift * rng.lognormal(0.0, 0.05, (2, pairs))) * [[1.0], [np.exp(shift)]]
    a, b = (x * (1 + (rng.random(pairs) < 0.05) * rng.uniform(1, 5, pairs)) for x in (a, b))
    return a, b


def test_the_paired_gap_interval_covers_under_pauses_and_drift():
    """1,000 simulated checks of 500 pairs at 95%: the misses are Binomial(1000, 0.05)
    (mean 50, sd 6.9) when the interval is right, so 4 sd allow 23-77; at no gap and at
    a gap of 2%."""
    rng = np.random.default_rng(65)
    for shift in (0.0, 0.02):
        misses = 0
        for _ in range(1_000):
            _, low, high = paired_gap(*_batch_pairs(rng, 500, shift), confidence=0.95)
            misses += not low <= shift <= high
        assert 23 <= misses <= 77, (shift, misses)


def test_a_batch_check_counts_a_gap_only_when_its_interval_is_beyond_one_percent():
    check = partial(TimingCheck, "t", 0.6, (1.0, 1.1), 2_000)
    assert check((-0.005, 0.04)).passes  # a gap of 4% not confirmed: within its noise
    assert check((-0.03, -0.009)).passes
    assert not check((0.011, 0.03)).passes and not check((-0.2, -0.0101)).passes
    for bad in ([1.0] * 19, [1.0] * 19), ([1.0] * 30, [0.0] * 30), ([1.0] * 30, [1.0] * 31):
        with pytest.raises(ValueError):
            paired_gap(np.asarray(bad[0]), np.asarray(bad[1]))
    with pytest.raises(ValueError, match="confidence"):
        paired_gap(np.ones(30), np.ones(30), confidence=1.0)


@pytest.mark.slow
def test_no_shipped_encoder_leaks_its_answer_by_its_timing():
    """Every shipped randomizer, 20,000 calls an answer (bench/privacy_audit.py prints
    the AUCs into docs/audit.md). The other worker's tests share the two cores, so a
    check that fails is run again on fresh calls, as an exceedance is confirmed."""
    for mech in shipped():
        checks = timing_check(mech, calls=20_000)
        if not all(c.passes for c in checks):  # a leak is confirmed afresh before it counts
            checks = timing_check(mech, calls=20_000)
        for check in checks:
            assert check.passes, check


# --- the bench and its page ---------------------------------------------------------------


@pytest.mark.slow
def test_the_whole_bench_is_sound_tight_and_finds_nothing(tmp_path):
    """The whole grid of bench/privacy_audit.py (152 rows: every mechanism at epsilon 0.5
    to 8 on both runtimes, the other binary designs, two panels, RAPPOR, PEM, byte-PEM
    and dBitFlip, the release's PRAM), untimed: about 140 s on two busy cores (the
    timing is test_no_shipped_encoder_leaks_its_answer_by_its_timing's)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "bench" / "privacy_audit.py"
    spec = importlib.util.spec_from_file_location("privacy_audit", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "audit.md"
    assert bench.main(["--timing-calls", "0", "--output", str(out)]) == 0
    text = out.read_text()
    assert "no bound above its claim: **True**" in text
    assert float(text.split("the bound is at least **")[1].split("%")[0]) >= 90.0
    assert text.count("| numpy |") == text.count("| numba |") == 76


def test_the_audit_page_covers_every_kind_on_both_runtimes_and_finds_nothing():
    """docs/audit.md, as the whole bench wrote it: sound, tight and silent."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "audit.md").read_text()
    assert "no bound above its claim: **True**" in text
    assert "Fits rejected: 0; source checks failed: 0; timing leaks: 0." in text
    least = float(text.split("the bound is at least **")[1].split("%")[0])
    assert least >= 90.0
    for kind in ("Warner", "KaryRR", "UnaryEncoding", "LocalHashing", "HadamardResponse",
                 "DuchiMean", "Piecewise", "HybridMean", "OneBitMean", "panel of",
                 "ForcedResponse", "Crosswise", "Kuk", "UnrelatedQuestion"):  # fmt: skip
        for runtime in ("numpy", "numba"):
            assert f"| {runtime} | `{kind}" in text, (kind, runtime)


# --- the release's post-randomization, through the ingest path ----------------------------


def pram_encoder(survey: Any, arm: str, qid: str) -> Encoder:
    """The server's post-randomization of one direct answer, as the ingest path applies
    it (``post_randomize`` on staged responses, before the first write)."""
    from deniable.collection.store._payload import StagedResponse
    from deniable.collection.store._pram import post_randomize

    plan = survey.report_plan
    a, i = plan.arm_index[arm], plan.ids.index(qid)

    def encode(values: np.ndarray, rng: Any) -> Any:
        rows = [
            StagedResponse(survey.id, survey.version, 0,
                           tuple(int(v) if j == i else 0 for j in range(len(plan.ids))), arm=a)
            for v in values
        ]  # fmt: skip
        return np.array([item.codes[i] for item in post_randomize(rows, plan.channels, rng)])

    return encode


@pytest.mark.slow
@pytest.mark.parametrize(("qid", "kind"), [("cheat", "kary-rr"), ("upset", "geometric")])
def test_the_release_post_randomization_is_sound_tight_and_secure(qid, kind):
    """A direct answer (k-ary RR at ln 3) and a list count (the geometric channel at
    ln 9) of the release study, through the ingest path: 30,000 draws an input."""
    import importlib.util

    from deniable.collection.model import load_survey

    path = Path(__file__).resolve().parents[1] / "bench" / "release_attack.py"
    spec = importlib.util.spec_from_file_location("release_attack", path)
    assert spec is not None and spec.loader is not None
    attack = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(attack)
    survey = load_survey(attack.STUDY)
    channel = next(q for q in survey.questions_in("dq") if q.id == qid).release_channel
    assert kind in channel.spec_name
    encode = pram_encoder(survey, "dq", qid)
    (audit,) = audit_epsilon(channel, n=30_000, encode=encode)
    assert not audit.exceeds and audit.tightness >= 0.9, audit
    (fit,) = fit_test(channel, n=30_000, encode=encode, confirm=True)
    assert not fit.rejects, fit
    assert source_check(channel, n=2_048, encode=encode)[0].passes


# --- the browser's randomizer, in Node -----------------------------------------------------

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(
    NODE is None, reason="Node.js 20+ is not installed (.ci/run installs npm)"
)
ROOT = Path(__file__).resolve().parents[1]
#: The npm package's module and the page's own (the package copies the page's).
WEB = ROOT / "src" / "deniable" / "collection" / "respondent" / "web"


@pytest.fixture(scope="module")
def npm_module() -> Path:
    """The npm package's randomizer, built as ``npm pack`` builds it (``js/build.mjs``
    copies the page's module into ``js/dist``, which git does not keep)."""
    import subprocess

    done = subprocess.run(["node", "build.mjs"], cwd=ROOT / "js", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return ROOT / "js" / "dist" / "randomizer.js"


@needs_node
@pytest.mark.slow
@pytest.mark.parametrize("which", ["npm", "page"])
def test_the_browsers_randomizer_in_node_is_sound_tight_fits_and_reads_crypto_only(which, request):
    """Three designs, 60,000 draws an input, 99% family-wise over the 6 checks a design."""
    module = request.getfixturevalue("npm_module") if which == "npm" else WEB / "randomizer.js"
    for design in (Warner(p=0.75), ForcedResponse(p_yes=0.2, p_no=0.1), KaryRR(k=4, epsilon=2.0)):
        encode = node_encoder(design, module)
        (audit,) = audit_epsilon(design, n=60_000, confidence=1 - 0.01 / 6, encode=encode)
        assert not audit.exceeds and audit.tightness >= 0.9, audit
        (fit,) = fit_test(design, n=60_000, alpha=0.01 / 6, encode=encode, confirm=True)
        assert not fit.rejects, fit
        assert node_source_check(design, module, n=8_192).passes


@needs_node
@pytest.mark.slow
def test_the_browsers_randomizer_in_node_keeps_time_and_a_planted_branch_is_caught(tmp_path):
    """Single calls timed in Node, 20,000 an answer (the AUC's sd under no leak 0.0029);
    a leak is confirmed on fresh calls before it counts, as in Python. The defect: an
    answer-dependent loop of 200 square roots."""
    module = WEB / "randomizer.js"
    for design in (Warner(p=0.75), KaryRR(k=4, epsilon=2.0)):
        check = node_timing_check(design, module)
        if not check.passes:
            check = node_timing_check(design, module)
        assert check.passes, check
    slow = "let index = p.length - 1;"
    source = (WEB / "randomizer.js").read_text()
    assert source.count(slow) == 1
    defective = tmp_path / "randomizer.js"
    defective.write_text(source.replace(slow, slow + " if (p[1] > 0.5) { for (let i = 0; "
                                        "i < 200; i++) globalThis.w = (globalThis.w || 0) + "
                                        "Math.sqrt(i); }"))  # fmt: skip
    check = node_timing_check(Warner(p=0.75), defective, calls=5_000)
    assert not check.passes and check.auc > 0.9, check


PANELS = [TwoLayerDesign(Warner(p=0.9), Warner(p=0.75)),
          TwoLayerDesign(KaryRR(k=4, epsilon=3.0), KaryRR(k=4, epsilon=1.0))]  # fmt: skip


@needs_node
@pytest.mark.slow
@pytest.mark.parametrize("panel", PANELS, ids=["Warner", "k-ary"])
def test_the_pages_panel_question_in_node_keeps_both_claims_and_its_memo(panel, npm_module):
    """panelReport, a new owner a respondent (an HMAC each: about 3,000 a second): each
    layer of the page's module sound, at least 90% of its claim and fitting at 60,000
    draws an input (99% family-wise over the 4 checks), and the memo kept across two
    waves with the instantaneous draw fresh; the npm package's copy sound at 10,000 and
    keeping its memo."""
    module = WEB / "randomizer.js"
    encode = node_panel_encoders(panel, module)
    for audit in audit_epsilon(panel, n=60_000, confidence=1 - 0.01 / 4, encode=encode):
        assert not audit.exceeds and audit.tightness >= 0.9, audit
    assert not any(
        f.rejects for f in fit_test(panel, n=60_000, alpha=0.01 / 4, encode=encode, confirm=True)
    )
    assert node_panel_memo_check(panel, module).passes
    encode = node_panel_encoders(panel, npm_module)
    assert not any(a.exceeds for a in audit_epsilon(panel, n=10_000, encode=encode))
    assert node_panel_memo_check(panel, npm_module, n=1_024).passes


#: Defects planted in the page's panelReport: (name, text replaced, replacement, check).
PANEL_DEFECTS = [
    ("the memo skipped: the permanent report drawn afresh each wave",
     "const u = await permanentUniform(secret, q.panel.key, truth);",
     "const u = uniform53();", "memo"),
    ("the instantaneous layer skipped", "return drawReport(q.columns[permanent], uniform53());",
     "return permanent;", "bound"),
]  # fmt: skip


@needs_node
@pytest.mark.slow
@pytest.mark.parametrize(("defect", "old", "new", "check"), PANEL_DEFECTS,
                         ids=[d[0] for d in PANEL_DEFECTS])  # fmt: skip
def test_each_defect_planted_in_the_pages_panel_question_is_caught(
    defect, old, new, check, tmp_path
):
    """The memo skipped (the memo check) and the instantaneous layer skipped (epsilon_1's
    bound)."""
    source = (WEB / "randomizer.js").read_text()
    assert source.count(old) == 1, defect
    module = tmp_path / "randomizer.js"
    module.write_text(source.replace(old, new))
    panel = PANELS[0]
    if check == "memo":
        assert not node_panel_memo_check(panel, module).passes, defect
    else:
        audits = audit_epsilon(panel, n=60_000, encode=node_panel_encoders(panel, module))
        assert audits[1].exceeds, (defect, audits)


#: Defects planted in copies of the browser's randomizer: (name, the text replaced, its
#: replacement, the check that catches it).
JS_DEFECTS = [
    ("Math.random instead of crypto.getRandomValues",
     "crypto.getRandomValues(words);",
     "words[0] = Math.random() * 2 ** 32; words[1] = Math.random() * 2 ** 32;", "source"),
    ("a fixed seed", "crypto.getRandomValues(words);",
     "globalThis.n = (globalThis.n || 0) + 1; "
     "words[0] = Math.imul(globalThis.n, 2654435761); words[1] = Math.imul(globalThis.n, 40503);",
     "source"),
    ("report 1 drawn 5% too often", "u < column[1] ? 1 : 0", "u < column[1] * 1.05 ? 1 : 0",
     "fit"),
    ("the inverse CDF one report off for the last", "return index;",
     "return index === p.length - 1 ? 0 : index;", "fit"),
]  # fmt: skip


@needs_node
@pytest.mark.parametrize(("defect", "old", "new", "check"), JS_DEFECTS,
                         ids=[d[0] for d in JS_DEFECTS])  # fmt: skip
def test_each_defect_planted_in_the_browsers_randomizer_is_caught(
    defect, old, new, check, tmp_path
):
    source = (WEB / "randomizer.js").read_text()  # the npm package's is a copy of it
    assert source.count(old) == 1, defect
    module = tmp_path / "randomizer.js"
    module.write_text(source.replace(old, new))
    design = KaryRR(k=4, epsilon=1.0) if "inverse" in defect else Warner(p=0.75)
    if check == "fit":
        (fit,) = fit_test(design, n=60_000, encode=node_encoder(design, module))
        assert fit.rejects, (defect, fit)
    else:
        assert not node_source_check(design, module, n=8_192).passes, defect


# --- the browser's oracle encoders (oracles.js), in Node ------------------------------------

ORACLES_IN_THE_BROWSER = [
    UnaryEncoding(k=16, epsilon=1.0),
    UnaryEncoding(k=16, epsilon=2.0, optimized=False),
    LocalHashing(k=16, epsilon=2.0),
    PrefixExtension(1.0, max_length=5),
    BytePrefixExtension(1.0, max_bytes=16),
]


@needs_node
@pytest.mark.slow
@pytest.mark.parametrize("oracle", ORACLES_IN_THE_BROWSER, ids=repr)
def test_the_browsers_oracle_encoders_in_node_are_sound_tight_fit_and_read_crypto(oracle):
    """60,000 draws an input (the finite designs' 90% in Node needed as many), 99%
    family-wise over the 3 checks of an oracle."""
    encode = node_oracle_encoders(oracle, WEB / "oracles.js")
    (audit,) = audit_epsilon(oracle, n=60_000, confidence=1 - 0.01 / 3, encode=encode)
    assert not audit.exceeds and audit.tightness >= 0.9, audit
    (fit,) = fit_test(oracle, n=60_000, alpha=0.01 / 3, encode=encode, confirm=True)
    assert not fit.rejects, fit
    assert all(c.passes for c in node_oracle_source_checks(oracle, WEB / "oracles.js", n=2_048))


@needs_node
@pytest.mark.slow
def test_the_browsers_rappor_in_node_is_sound_fits_and_reads_crypto():
    """RAPPOR's two layers from the page's encoder, a fresh client secret a report
    (WebCrypto's HMAC each: about 3,000 reports a second), 20,000 an input: sound and
    fitting; its tightness is the Python encoder's test, at 400,000."""
    rappor = Rappor(n_bloom_bits=16, h=2, n_cohorts=1, f=0.5, p=0.5, q=0.75)
    encode = node_oracle_encoders(rappor, WEB / "oracles.js")
    for audit in audit_epsilon(rappor, n=20_000, confidence=1 - 0.01 / 6, encode=encode):
        assert not audit.exceeds, audit
    assert not any(
        f.rejects for f in fit_test(rappor, n=20_000, alpha=0.01 / 6, encode=encode, confirm=True)
    )
    checks = node_oracle_source_checks(rappor, WEB / "oracles.js", n=512)
    assert [c.passes for c in checks] == [True, True]


def test_an_oracle_the_browser_does_not_encode_is_named():
    with pytest.raises(TypeError, match="HadamardResponse"):
        node_oracle_encoders(HadamardResponse(k=16, epsilon=1.0), WEB / "oracles.js")
    with pytest.raises(ValueError, match="2 target"):
        audit_epsilon(Rappor(n_bloom_bits=16, h=2, n_cohorts=1), encode=Warner(p=0.75).randomize)


#: Defects planted in copies of oracles.js: (name, mechanism, the text replaced, its
#: replacement, the check that catches it).
ORACLE_DEFECTS = [
    ("OLH keeps its bucket 20% more often", LocalHashing(k=16, epsilon=2.0),
     "y: keep < params.threshold_p ? bucket : y",
     "y: keep < params.threshold_p * 1.2 ? bucket : y", "bound"),
    ("OUE's bits set 5% too often", UnaryEncoding(k=16, epsilon=1.0),
     "if (dv.getUint32(4 * i, true) < threshold) out[i >> 3]",
     "if (dv.getUint32(4 * i, true) < threshold * 1.05) out[i >> 3]", "fit"),
    ("PEM's level drawn from the value", PrefixExtension(1.0, max_length=5),
     "const level = Math.floor(",
     "const level = symbols[0] === params.alphabet[0] ? 0 : Math.floor(", "fit"),
    ("byte-PEM keeps its bucket a quarter more often", BytePrefixExtension(1.0, max_bytes=16),
     "const keep = dv.getUint32(4 + 8 * r, true) < params.threshold;",
     "const keep = dv.getUint32(4 + 8 * r, true) < params.threshold * 1.25;", "bound"),
    ("RAPPOR's permanent layer randomizes half as often",
     Rappor(n_bloom_bits=16, h=2, n_cohorts=1, f=0.5, p=0.5, q=0.75),
     "(byte >> 1) < params.threshold_f", "(byte >> 1) < params.threshold_f / 2", "bound"),
    ("Math.random instead of crypto.getRandomValues", LocalHashing(k=16, epsilon=2.0),
     "root.crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));",
     "for (let j = i; j < Math.min(n, i + 65536); j++) out[j] = Math.random() * 256;",
     "source"),
]  # fmt: skip


@needs_node
@pytest.mark.slow
@pytest.mark.parametrize(("defect", "oracle", "old", "new", "check"), ORACLE_DEFECTS,
                         ids=[d[0] for d in ORACLE_DEFECTS])  # fmt: skip
def test_each_defect_planted_in_the_browsers_oracles_is_caught(
    defect, oracle, old, new, check, tmp_path
):
    source = (WEB / "oracles.js").read_text()
    assert source.count(old) == 1, defect
    module = tmp_path / "oracles.js"
    module.write_text(source.replace(old, new))
    n = 20_000 if "RAPPOR" in defect else 60_000
    if check == "bound":
        audits = audit_epsilon(oracle, n=n, encode=node_oracle_encoders(oracle, module))
        assert any(a.exceeds for a in audits), (defect, audits)
    elif check == "fit":
        fits = fit_test(oracle, n=n, encode=node_oracle_encoders(oracle, module))
        assert any(f.rejects for f in fits), (defect, fits)
    else:
        assert not all(c.passes for c in node_oracle_source_checks(oracle, module, n=2_048))


# --- the browser's randomizer, in Chromium --------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium (.ci/run installs it)"
)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """A Chromium page at the server's (loopback, so secure) origin, which serves the
    page's own randomizer at /static/randomizer.js."""
    from playwright.sync_api import sync_playwright

    from deniable.collection.server._live import serve_in_thread
    from deniable.collection.store._storage import Store

    from .test_browser import ARGS

    store = Store(f"sqlite:///{tmp_path_factory.mktemp('audit') / 'a.sqlite'}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            with serve_in_thread(store, "an-analyst-token-for-tests") as base:
                tab = browser.new_page()
                tab.goto(f"{base}/healthz")
                yield tab, base
        finally:
            browser.close()
            store.close()


def _serve_defect(tab: Any, base: str, name: str, old: str, new: str) -> str:
    """A copy of the page's randomizer with one defect, served at /static/NAME.js."""
    source = (WEB / "randomizer.js").read_text()
    assert source.count(old) == 1, name
    body = source.replace(old, new)
    url = f"{base}/static/{name}.js"
    tab.route(url, lambda route: route.fulfill(body=body, content_type="text/javascript"))
    return url


@needs_chromium
@pytest.mark.slow
def test_the_pages_randomizer_in_chromium_is_sound_fits_reads_crypto_and_keeps_time(page):
    tab, base = page
    url = f"{base}/static/randomizer.js"
    for design in (Warner(p=0.75), ForcedResponse(p_yes=0.2, p_no=0.1), KaryRR(k=4, epsilon=2.0)):
        encode = page_encoder(tab.evaluate, design, url)
        (audit,) = audit_epsilon(design, n=30_000, confidence=1 - 0.01 / 4, encode=encode)
        assert not audit.exceeds and audit.tightness >= 0.9, audit
        (fit,) = fit_test(design, n=30_000, alpha=0.01 / 4, encode=encode, confirm=True)
        assert not fit.rejects, fit
        assert page_source_check(tab.evaluate, design, url, n=4_096).passes
        # pairs of batches of 1,000 calls: a gap is a leak when its 99.9% interval lies
        # beyond 1%. The interval is 0.02 wide on a quiet machine, 0.035 with both cores
        # busy besides, and 0.09 once under heavier load, where 8,000 pairs narrow it by
        # half; under 0.06, a gap of 4% would be confirmed at least half the time, and
        # one of 5% almost always
        timing = page_timing_check(tab.evaluate, design, url)
        if timing.gap_interval[1] - timing.gap_interval[0] >= 0.06:  # a busy machine
            timing = page_timing_check(tab.evaluate, design, url, pairs=8_000)
        assert timing.passes, timing
        low, high = timing.gap_interval
        assert high - low < 0.06, timing


@needs_chromium
@pytest.mark.slow
def test_defects_planted_in_the_pages_randomizer_are_caught_in_chromium(page):
    tab, base = page
    design = Warner(p=0.75)
    url = _serve_defect(tab, base, "mathrandom", *JS_DEFECTS[0][1:3])
    assert not page_source_check(tab.evaluate, design, url, n=4_096).passes
    url = _serve_defect(tab, base, "biased", *JS_DEFECTS[2][1:3])
    assert fit_test(design, n=30_000, encode=page_encoder(tab.evaluate, design, url))[0].rejects
    slow = "let index = p.length - 1;"
    url = _serve_defect(
        tab,
        base,
        "slow",
        slow,
        slow + " if (p[1] > 0.5) { for (let i = 0; i < 200; i++) "
        "globalThis.waste = (globalThis.waste || 0) + Math.sqrt(i); }",
    )
    check = page_timing_check(tab.evaluate, design, url, pairs=200)
    assert not check.passes and check.gap_interval[0] > 0.05, check  # 0.63-0.89 under load


@needs_chromium
@pytest.mark.slow
def test_the_pages_oracle_encoders_in_chromium_are_sound_tight_fit_and_read_crypto(page):
    """The oracles' script as the server serves it, in Chromium: 30,000 draws an input
    (tightness asked at 0.85: the finite designs' 0.9 took 30,000 at a larger rate of
    the event), 99% family-wise over the 3 checks of an oracle; RAPPOR sound at 4,000
    (an HMAC a report), and each source from crypto.getRandomValues alone."""
    tab, base = page
    url = f"{base}/static/oracles.js"
    for oracle in ORACLES_IN_THE_BROWSER[::2] + ORACLES_IN_THE_BROWSER[3:4]:
        encode = page_oracle_encoders(tab.evaluate, oracle, url)
        (audit,) = audit_epsilon(oracle, n=30_000, confidence=1 - 0.01 / 3, encode=encode)
        assert not audit.exceeds and audit.tightness >= 0.85, audit
        (fit,) = fit_test(oracle, n=30_000, alpha=0.01 / 3, encode=encode, confirm=True)
        assert not fit.rejects, fit
        assert all(c.passes for c in page_oracle_source_checks(tab.evaluate, oracle, url))
    rappor = Rappor(n_bloom_bits=16, h=2, n_cohorts=1, f=0.5, p=0.5, q=0.75)
    encode = page_oracle_encoders(tab.evaluate, rappor, url)
    assert not any(a.exceeds for a in audit_epsilon(rappor, n=4_000, encode=encode))
    checks = page_oracle_source_checks(tab.evaluate, rappor, url, n=256)
    assert [c.passes for c in checks] == [True, True]
    name, oracle, old, new, _ = ORACLE_DEFECTS[0]  # OLH keeps its bucket 20% more often
    source = (WEB / "oracles.js").read_text()
    defective = f"{base}/static/olh-defect.js"
    tab.route(defective, lambda route: route.fulfill(body=source.replace(old, new),
                                                     content_type="text/javascript"))  # fmt: skip
    encode = page_oracle_encoders(tab.evaluate, oracle, defective)
    assert audit_epsilon(oracle, n=30_000, encode=encode)[0].exceeds, name


def test_a_fit_rejection_counts_only_when_fresh_draws_confirm_it():
    """An encoder off its channel on its first batch of draws only (a Warner p of 0.6 for
    0.75, then the shipped encoder) is rejected unconfirmed and passes confirmed; one off
    on every batch is rejected both ways, with the larger p-value kept."""
    design = Warner(p=0.75)
    calls = []

    def first_only(inputs, rng):
        calls.append(len(inputs))
        p = 0.6 if len(calls) <= 2 else 0.75  # a target draws its two answers a batch
        keep = rng.random(len(inputs)) < p
        return np.where(keep, inputs, 1 - inputs)

    def always(inputs, rng):
        keep = rng.random(len(inputs)) < 0.6
        return np.where(keep, inputs, 1 - inputs)

    rng = np.random.default_rng(65)
    (plain,) = fit_test(design, n=20_000, encode=first_only, rng=rng)
    assert plain.rejects
    calls.clear()
    (confirmed,) = fit_test(design, n=20_000, encode=first_only, rng=rng, confirm=True)
    assert not confirmed.rejects and confirmed.pvalue > 0.01
    (both,) = fit_test(design, n=20_000, encode=always, rng=rng, confirm=True)
    assert both.rejects
