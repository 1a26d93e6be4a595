"""The pictures of the README and of docs/collection.md, taken from the demo's own study.

Usage (Chromium from Debian's ``chromium`` package, Playwright from the dev group)::

    python -m uv run python docs/pictures.py [--out docs/img] [--respondents 3000]

Runs ``deniable demo``'s live part (:func:`deniable.collection.server.live_demo`: the
UCI Adult survey over HTTP with invitations, and the study in two arms and two groups,
both at the default ``min_release`` of 30), adds a two-wave panel of the same people
(income asked again a year on, by forced response on a permanent Warner layer, the
sex of the respondent the key), and photographs, at a desktop's width (1000 CSS px)
and a phone's (390): the respondent's page, the analyst's results of the survey, of the
study and of the panel. Every figure on them is the demo's, not a test fixture's.

The pictures of one feature each (the survey tools' pages, a list question, a numeric
question, the transfer link) are taken by the tests that exercise them
(``DENIABLE_SCREENSHOTS=docs/img pytest tests/test_browser.py ...``).
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import numpy as np

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: The pictures: file name, page path, viewport width.
SHOTS = [
    ("respondent.png", "/s/adult-study", 1000),
    ("respondent-phone.png", "/s/adult-study", 390),
    ("respondent-study.png", "/s/adult-study", 390),
    ("dashboard.png", "/surveys/adult-demo/results", 1000),
    ("dashboard-phone.png", "/surveys/adult-demo/results", 390),
    ("dashboard-study.png", "/surveys/adult-study/results", 1000),
    ("dashboard-breakdown.png", "/surveys/adult-study/results", 390),
    ("dashboard-waves.png", "/surveys/adult-panel/results", 1000),
]


def panel_survey(version: int) -> dict[str, Any]:
    """The demo's panel: income asked again, the respondent's sex the key."""
    return {
        "format": 1,
        "id": "adult-panel",
        "version": version,
        "title": "A panel of the UCI Adult population: income a year on",
        "description": "Simulated respondents from the 1994 US census extract, asked twice.",
        "privacy_budget": 3.0,
        "lifetime_budget": 10.0,
        "questions": [
            {
                "id": "sex",
                "text": "What is your sex?",
                "choices": ["Female", "Male"],
                "design": {"name": "direct"},
            },
            {
                "id": "income",
                "text": "Is your income over $50K a year?",
                "design": {"name": "forced-response", "params": {"p_yes": 0.2, "p_no": 0.2}},
                "panel": {"permanent": {"name": "warner", "params": {"p": 0.85}}},
            },
        ],
    }


def add_panel(database: str, seed: int) -> None:
    """Two waves of the panel in the demo's database: 2,000 people, 1,600 answering
    again (attrition), a tenth of those under $50K crossing it."""
    from deniable.collection.model import load_survey
    from deniable.collection.respondent import simulate_responses
    from deniable.collection.store import Store
    from deniable.data import load_adult

    rng = np.random.default_rng(seed)
    people = load_adult().sample(2000, random_state=seed)
    sex = (people["sex"] == "Male").to_numpy(np.int64)
    income = (people["income"] == ">50K").to_numpy(np.int64)
    store = Store(f"sqlite:///{database}")
    try:
        for version in (1, 2):
            survey = load_survey(copy.deepcopy(panel_survey(version)))
            store.publish(survey)
            store.audit("analyst", "publish", survey.id, version)
            if version == 2:
                stay = rng.random(len(sex)) < 0.8
                sex, income = sex[stay], income[stay]
                income = np.where(rng.random(len(income)) < 0.1, 1, income)
            sent = simulate_responses(survey, {"sex": sex, "income": income}, rng)
            store.submit_batch(survey, [b["reports"] for b in sent])
            store.release()
    finally:
        store.close()


def shoot(base: str, token: str, out: Path) -> list[Path]:
    """Sign in, then photograph every page of :data:`SHOTS` (full page)."""
    from playwright.sync_api import sync_playwright

    made = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        desk = browser.new_context(viewport={"width": 1000, "height": 900})
        page = desk.new_page()
        page.goto(f"{base}/login")
        page.fill("#token", token)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_load_state()
        signed_in = desk.storage_state()
        for name, path, width in SHOTS:
            context = browser.new_context(
                viewport={"width": width, "height": 900 if width > 500 else 844},
                storage_state=signed_in if path.startswith("/surveys") else None,
            )
            page = context.new_page()
            page.goto(f"{base}{path}")
            page.wait_for_load_state("load")
            target = out / name
            heading = {"dashboard-waves.png": "Waves", "dashboard-breakdown.png": "By arm"}
            if name in heading:  # from that section's heading on
                top = page.evaluate(
                    "(text) => { const h = [...document.querySelectorAll('h2')].find("
                    "(e) => e.textContent.startsWith(text)); return h ? "
                    "h.getBoundingClientRect().top + window.scrollY : 0; }",
                    heading[name],
                )
                height = page.evaluate("document.documentElement.scrollHeight")
                clip = {"x": 0, "y": int(top), "width": width, "height": min(1400, height - top)}
                page.screenshot(path=str(target), full_page=True, clip=clip)
            else:
                page.screenshot(path=str(target), full_page=True)
            made.append(target)
            context.close()
        browser.close()
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "img")
    parser.add_argument("--respondents", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    from deniable.collection.server import live_demo

    args.out.mkdir(parents=True, exist_ok=True)

    def keep_serving(live: Any) -> None:
        add_panel(live.database, args.seed)
        for path in shoot(live.base_url, live.analyst_token, args.out):
            print(path)

    live_demo(args.respondents, seed=args.seed, keep_serving=keep_serving)


if __name__ == "__main__":
    main()
