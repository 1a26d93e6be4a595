"""A 3-wave study with arms and a key, read on a phone (issue 59): at every moment of
its life (wave 1 open and waiting, released; wave 2 published, released; wave 3
released; closed) every page of the site (the sign-in, the list of surveys, the
study's results, the respondent's page) fits 390 CSS pixels: ``scrollWidth`` equals
the viewport. The screenshots (the results at every moment, every page at the
close) are kept (``DENIABLE_SCREENSHOTS``) to be looked at."""

from __future__ import annotations

import numpy as np
import pytest

from deniable.collection.model._survey import load_survey
from deniable.collection.respondent._devices import simulate_responses

from .conftest import ANALYST
from .test_browser import CHROMIUM, _screenshot, browser  # noqa: F401
from .test_rscript_waves import study

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium (.ci/run installs it)"
)


def _send(store, survey, n: int, rng: np.random.Generator, no_south: bool = False) -> None:
    """``n`` simulated responses to one wave (prevalence differs by region)."""
    region = rng.choice(3, n, p=[0.55, 0.45, 0.0] if no_south else [0.5, 0.3, 0.2])
    truths = {
        "region": region,
        "q": (rng.random(n) < np.array([0.1, 0.3, 0.5])[region]).astype(np.int64),
        "brand": rng.choice(3, n, p=[0.5, 0.3, 0.2]),
    }
    sent = simulate_responses(survey, truths, rng)
    store.submit_batch(
        survey, [b["reports"] for b in sent], [b["arm"] for b in sent], [b["groups"] for b in sent]
    )


@pytest.mark.slow  # about 33 s: 7 moments x 4 pages in Chromium, 780 responses
def test_every_page_fits_a_phone_at_every_moment_of_a_three_wave_study(browser, tmp_path):  # noqa: F811
    from deniable.collection.server._live import serve_in_thread
    from deniable.collection.store._storage import Store

    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    rng = np.random.default_rng(590)
    desk = browser.new_context(viewport={"width": 1100, "height": 900})
    widths: dict[str, list[int]] = {}
    with serve_in_thread(store, ANALYST) as base:
        sign_in = desk.new_page()
        sign_in.goto(f"{base}/login")
        sign_in.fill("#token", ANALYST)
        sign_in.get_by_role("button", name="Log in").click()
        sign_in.wait_for_load_state()
        phone = browser.new_context(
            viewport={"width": 390, "height": 844}, storage_state=desk.storage_state()
        )

        def look(moment: str) -> None:
            for name, path in (
                ("login", "/login"),
                ("surveys", "/"),
                ("results", "/surveys/panel/results"),
                ("respondent", "/s/panel"),
            ):
                page = phone.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                page.goto(f"{base}{path}")
                page.wait_for_load_state("load")
                width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
                widths[f"{moment}/{name}"] = width
                if name == "results" or moment == "closed":  # the rest change little
                    _screenshot(page, f"panel-{moment}-{name}-phone", tmp_path)
                assert errors == [], (moment, name, errors)
                page.close()

        versions = []
        for wave, size in zip((1, 2, 3), (300, 260, 220), strict=True):
            survey = load_survey(study(wave))
            store.publish(survey)
            store.audit("analyst", "publish", "panel", wave)
            versions.append(survey)
            look(f"wave{wave}-published")
            _send(store, survey, size, rng, no_south=wave == 3)
            store.release()
            look(f"wave{wave}-released")
        store.set_closed("panel", True, actor="analyst")
        look("closed")
        results = phone.new_page()
        results.goto(f"{base}/surveys/panel/results")
        text = results.inner_text("body")
        plots = [
            results.locator(f"#change-plot-{q} img").get_attribute("src") for q in ("q", "brand")
        ]
        results.locator("#change-plot-brand").screenshot(path=str(tmp_path / "plot.png"))
        phone.close()
    desk.close()
    store.close()
    wide = {k: w for k, w in widths.items() if w[0] > w[1]}
    assert wide == {}, wide
    assert len(widths) == 7 * 4
    # the last moment shows both changes, per arm, pooled, with a share left out
    assert "wave 1 to wave 2" in text and "wave 2 to wave 3" in text
    assert "pooled" in text and "left out" in text
    # a change plot per question, drawn (a PNG of some size) and captioned
    assert all(src.startswith("data:image/png;base64,") and len(src) > 5_000 for src in plots)
    assert "brand: the change between waves, per arm and pooled" in text
