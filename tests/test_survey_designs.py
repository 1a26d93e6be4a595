"""Every design a survey file may name has one complete entry in the survey designs'
registry (``collection/model/_survey_designs.py``), and what the survey tools do with a
design (the R bundle, the page's instructions, the innocuous question, the export's
group column) comes from it. A design added without its entry, or an entry without an R
counterpart and without the reason R has none, fails here with its name."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from deniable.collection.exports._rscript import r_script
from deniable.collection.model import load_survey
from deniable.collection.model._fields import NUMERIC_DESIGNS
from deniable.collection.model._groups import GROUP_DESIGNS, INNOCUOUS_DESIGNS
from deniable.collection.model._i18n import LANGUAGES, catalog
from deniable.collection.model._list_question import LIST_EXPERIMENT
from deniable.collection.model._recipes import physical_instructions
from deniable.collection.model._survey_designs import SURVEY_DESIGNS, survey_design
from deniable.mechanisms._registry import DESIGNS

#: Valid parameters of each design, to build a one-question survey of it.
PARAMS: dict[str, dict[str, float]] = {
    "forced-response": {"p_yes": 1 / 6, "p_no": 1 / 6},
    "warner": {"p": 0.8},
    "unrelated-question": {"p": 0.7, "innocuous_prevalence": 0.5},
    "crosswise": {"p": 0.2},
    "triangular": {"p": 0.2},
    "kuk": {"p_carrier": 0.8, "p_noncarrier": 0.2},
    "mangat": {"p": 0.8},
    "kary-rr": {"epsilon": 1.0},
    "direct": {},
    "extended-crosswise": {"p": 0.2},
    "cheating-detection": {"p1": 0.3, "p2": 0.7},
    "stochastic-lie-detector": {"p1": 0.3, "p2": 0.7},
    "duchi": {"epsilon": 1.0},
    "1bitmean": {"epsilon": 1.0},
    "list-experiment": {},
}


def accepted_names() -> set[str]:
    """Every design name the survey file's model accepts."""
    return set(DESIGNS) | set(GROUP_DESIGNS) | set(NUMERIC_DESIGNS) | {LIST_EXPERIMENT}


def incomplete(registry: dict[str, Any], names: set[str]) -> list[str]:
    """What is missing, named: designs without an entry, entries without a source, and
    entries with no R counterpart and no reason why."""
    out = [f"{name}: no entry in SURVEY_DESIGNS" for name in sorted(names - set(registry))]
    for name, d in registry.items():
        if not d.source:
            out.append(f"{name}: no source (author, year)")
        if d.rrreg is None and d.glmmrr is None and not d.no_r:
            out.append(f"{name}: neither an R counterpart nor no_r saying why R has none")
    return out


def test_every_accepted_design_has_a_complete_entry() -> None:
    assert incomplete(dict(SURVEY_DESIGNS), accepted_names()) == []
    assert set(SURVEY_DESIGNS) == accepted_names(), "entries of no design a survey file takes"


def test_a_new_design_without_its_entry_is_named() -> None:
    """The check names what a new design lacks (here a made-up one)."""
    assert incomplete(dict(SURVEY_DESIGNS), accepted_names() | {"dice-7"}) == [
        "dice-7: no entry in SURVEY_DESIGNS"
    ]
    bare = survey_design("warner").__class__("dice-7", "finite", "")
    assert incomplete({"dice-7": bare}, {"dice-7"}) == [
        "dice-7: no source (author, year)",
        "dice-7: neither an R counterpart nor no_r saying why R has none",
    ]
    with pytest.raises(ValueError, match=r"design\.name must be one of forced-response"):
        survey_design("dice-7")


def test_entries_agree_with_the_survey_files_checks() -> None:
    assert set(INNOCUOUS_DESIGNS) == {n for n, d in SURVEY_DESIGNS.items() if d.innocuous}
    for name, d in SURVEY_DESIGNS.items():
        expected = {
            "group": name in GROUP_DESIGNS,
            "numeric": name in NUMERIC_DESIGNS,
            "list": name == LIST_EXPERIMENT,
            "direct": name == "direct",
        }
        assert d.kind == next((k for k, v in expected.items() if v), "finite"), name
        assert d.export_columns == (("__group",) if d.kind in ("group", "list") else ()), name
        for lang in LANGUAGES:  # each instruction key is in every language's catalog
            assert d.recipe is None or d.recipe in catalog(lang)["instructions"], (name, lang)
        if name in DESIGNS:  # each parameter rule names a parameter the design takes
            takes = set(inspect.signature(DESIGNS[name]).parameters)
            assert set(d.whole_params) <= takes, name
            assert not d.answers_from_choices or {"k", "labels"} <= takes, name
        assert d.complement <= d.innocuous, name  # a complement of an innocuous question


def test_the_parameter_rules_come_from_the_entries() -> None:
    """A design's whole-number parameters, its answers from its choices and its
    complement are read from its entry: a k-ary question's k must be whole and bounded,
    a Kuk design's draws too, and only the entry with ``complement`` takes one."""
    kary = {"id": "q", "text": "Did you?", "design": {"name": "kary-rr", "params": {}}}
    body = {"id": "s", "title": "T", "version": 1, "privacy_budget": 30.0}
    cases = [
        ({"params": {"epsilon": 1, "k": 2.5}}, "design.params.k must be a whole number"),
        ({"params": {"epsilon": 1, "k": 10**12}}, r"design.params.k must be in 1\.\."),
        ({"params": {"epsilon": 1}}, "kary-rr needs choices"),
        (
            {"name": "kuk", "params": {"p_carrier": 0.8, "p_noncarrier": 0.2, "draws": 1.5}},
            "design.params.draws must be a whole number",
        ),
    ]
    for change, message in cases:
        q = kary | {"design": kary["design"] | change}
        with pytest.raises(ValueError, match=message):
            load_survey(body | {"questions": [q]})
    q = kary | {"design": {"name": "kary-rr", "params": {"epsilon": 1, "k": 3.0}}}
    assert load_survey(body | {"questions": [q]}).questions[0].mechanism.n_truths == 3
    crosswise = {
        "id": "q", "text": "Did you?", "design": {"name": "crosswise", "params": {"p": 0.2}},
        "innocuous_question": "Spring?", "innocuous_complement": "Not spring?",
    }  # fmt: skip
    with pytest.raises(ValueError, match="innocuous_complement: only an extended-crosswise"):
        load_survey(body | {"questions": [crosswise]})


def _survey(name: str) -> Any:
    d = SURVEY_DESIGNS[name]
    q: dict[str, Any] = {
        "id": "q",
        "text": "Did you?",
        "design": {"name": name, "params": PARAMS[name]},
    }
    if name == "kary-rr":
        q["choices"] = ["none", "some", "many"]
    if d.innocuous:
        q["innocuous_question"] = "Were you born in spring?"
    if d.kind == "numeric":
        q["range"] = {"low": 0, "high": 10}
    if d.kind == "list":
        q |= {"items": ["a", "b", "c"], "sensitive_item": "s"}
    body = {"id": "s", "title": "T", "version": 1, "privacy_budget": 30.0, "questions": [q]}
    try:
        return load_survey(body)
    except ValueError:  # a design that can prove an answer must say so
        q["allow_infinite_epsilon"] = True
        return load_survey(body | {"no_lifetime_budget": True})


@pytest.mark.parametrize("name", sorted(SURVEY_DESIGNS))
def test_the_r_bundle_fits_each_design_or_says_why_not(name: str) -> None:
    """The bundle never drops a question silently: it calls the design's RRreg or
    GLMMRR model, or says the registry's reason R has none."""
    d, script = SURVEY_DESIGNS[name], r_script(_survey(name), "s.wide.csv")
    said = [f'model = "{d.rrreg.model}"' if d.rrreg else None,
            f'"{d.glmmrr.model}"' if d.glmmrr else None, d.no_r or None]  # fmt: skip
    assert any(s and s in script for s in said), (name, said)


@pytest.mark.parametrize("name", [n for n, d in SURVEY_DESIGNS.items() if d.recipe])
def test_a_design_with_coin_instructions_gets_them_in_every_language(name: str) -> None:
    q = _survey(name).questions[0]
    for lang in LANGUAGES:
        text = physical_instructions(q, lang)
        assert text != catalog(lang)["instructions"]["no_recipe"], (name, lang)
