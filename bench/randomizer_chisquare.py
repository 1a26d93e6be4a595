"""Unseeded draws of the browser randomizer (web/randomizer.js) against each design's
distribution: 10^6 draws per (design, truth) in Node with crypto.getRandomValues, a
chi-square goodness-of-fit test each, Bonferroni over all of them at family-wise 0.001.

The seeded path is in the suite (tests/test_randomizer_vectors.py: Python's report for
the same uniform, bit for bit); this checks the unseeded source end to end.

Run: python bench/randomizer_chisquare.py [--draws N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

import numpy as np
from scipy import stats

from deniable.mechanisms import (
    Crosswise,
    ForcedResponse,
    KaryRR,
    Kuk,
    Triangular,
    UnrelatedQuestion,
    Warner,
)

WEB = Path(__file__).resolve().parents[1] / "src" / "deniable" / "collection" / "respondent" / "web"
DESIGNS = {
    "warner": Warner(p=0.8),
    "forced-response": ForcedResponse(p_yes=1 / 6, p_no=1 / 6),
    "unrelated-question": UnrelatedQuestion(p=0.7, innocuous_prevalence=0.3),
    "crosswise": Crosswise(p=0.25),
    "kuk": Kuk(p_carrier=0.7, p_noncarrier=0.3, draws=3),
    "triangular": Triangular(p=0.3),
    "kary-rr": KaryRR(k=5, epsilon=1.2),
}
SCRIPT = """
import * as R from %s;
const cases = JSON.parse(process.argv[2]);
const n = Number(process.argv[3]);
const out = [];
for (const column of cases) {
  const counts = new Array(column.length).fill(0);
  for (let i = 0; i < n; i++) counts[R.drawReport(column, R.uniform53())] += 1;
  out.push(counts);
}
console.log(JSON.stringify(out));
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=1_000_000)
    args = parser.parse_args()
    cases, labels = [], []
    for name, d in DESIGNS.items():
        for t in range(d.n_truths):
            cases.append(d.matrix[:, t].tolist())
            labels.append(f"{name} truth {t}")
    script = Path("/tmp") / "deniable_chisquare.mjs"
    script.write_text(SCRIPT % json.dumps((WEB / "randomizer.js").as_uri()))
    start = time.perf_counter()
    run = subprocess.run(
        ["node", str(script), json.dumps(cases), str(args.draws)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    seconds = time.perf_counter() - start
    counts = json.loads(run.stdout)
    threshold = 0.001 / len(cases)  # Bonferroni: family-wise 0.001
    worst = 1.0
    print(f"| case | chi-square | df | p | (threshold {threshold:.2e}) |")
    print("|---|---:|---:|---:|---|")
    for label, column, got in zip(labels, cases, counts, strict=True):
        expected = np.array(column) * args.draws
        keep = expected > 0
        chi2 = float((((np.array(got) - expected) ** 2)[keep] / expected[keep]).sum())
        df = int(keep.sum()) - 1
        if df == 0:  # one possible report: every draw must be it
            p = 1.0 if got[int(np.argmax(keep))] == args.draws else 0.0
        else:
            p = float(stats.chi2.sf(chi2, df))
        worst = min(worst, p)
        flag = "FAIL" if p < threshold else "ok"
        print(f"| {label} | {chi2:.2f} | {df} | {p:.3g} | {flag} |")
    print(
        f"\n{len(cases)} cases x {args.draws:,} draws in {seconds:.1f} s "
        f"({len(cases) * args.draws / seconds:,.0f} draws/s); smallest p {worst:.3g}; "
        + ("all pass" if worst >= threshold else "FAILED")
    )


if __name__ == "__main__":
    main()
