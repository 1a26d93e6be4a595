"""One arm per person across a panel's waves, end to end (issue 59): 20 named members
answer 3 waves through the terminal client (`deniable respond`), each wave on a fresh
device (an empty data directory), against a real server process; each keeps one arm,
and the server stores exactly the arms the clients sent. (The page's assignment is the
same function of the owner tag: tests/test_browser.py; a response that claims another
arm than its credential's is refused: tests/test_arms.py.)"""

from __future__ import annotations

import httpx
import pytest

from .conftest import AUTH
from .test_recipients import _cli
from .test_waves import _links, _recipients, _respond, _sent, panel_server, panel_study  # noqa: F401


@pytest.mark.slow  # about 40 s: 60 terminal-client sessions
def test_twenty_members_keep_one_arm_over_three_waves_on_fresh_devices(panel_server, tmp_path):  # noqa: F811
    base = panel_server.base
    study = panel_study() | {"id": "arms3", "requires_invitation": True}
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        r = http.post("/api/surveys", json=study)
        assert r.status_code == 201, r.text
    links = tmp_path / "wave1.csv"
    out = _cli(
        "survey", "invite", "arms3", "--recipients", str(_recipients(tmp_path, 20, "arms")),
        "--output", str(links), base=base, data_home=tmp_path,
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    arms: dict[str, list[str]] = {}
    for wave in (1, 2, 3):
        if wave > 1:
            nxt = tmp_path / f"wave{wave}.csv"
            out = _cli(
                "survey", "wave", "arms3", "--links", str(links), "--output", str(nxt),
                base=base, data_home=tmp_path,
            )  # fmt: skip
            assert out.exit_code == 0, out.output
            links = nxt
        for row in _links(links):
            home = tmp_path / f"{row['recipient']}-wave{wave}"  # a fresh device each wave
            out = _respond(row["link"], base, home, "1\n")
            assert out.exit_code == 0, out.output
            sent = _sent(out)
            assert sent["version"] == wave
            arms.setdefault(row["recipient"], []).append(sent["arm"])
    assert len(arms) == 20 and all(len(a) == 3 for a in arms.values())
    assert all(len(set(a)) == 1 for a in arms.values()), arms  # one arm per person
    assert {a[0] for a in arms.values()} == {"dq", "rr"}  # both arms drawn
    # what the server stored: per wave, the arms the clients sent
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        http.post("/api/surveys/arms3/release").raise_for_status()
        status = http.get("/api/surveys/arms3/status").json()
        assert [(w["wave"], w["invited"], w["responses"]) for w in status["waves"]] == [
            (1, 20, 20),
            (2, 20, 20),
            (3, 20, 20),
        ]
        rows = http.get("/api/surveys/arms3/export", params={"format": "csv"}).text.splitlines()
    header = rows[0].split(",")
    stored = sorted(
        (int(cells[header.index("version")]), cells[header.index("arm")])
        for cells in (line.split(",") for line in rows[1:])
    )
    sent_arms = sorted((w, a[0]) for a in arms.values() for w in (1, 2, 3))
    assert stored == sent_arms
