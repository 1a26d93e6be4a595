"""Write tests/data/randomizer_vectors.json: shared vectors of the browser randomizer
(web/randomizer.js) and the Python designs.

Each design case holds its matrix columns, uniforms and the reports Python's device
randomizer gives for them (``MatrixDesign`` rebuilt from the columns, as
``deniable respond`` does; the seeded path of ``randomize``); each HMAC case a
secret, key and answer and the 53-bit uniform ``permanent_uniform`` gives; each token
case the uniform ``token_uniform`` gives. Run ``python -m uv run python
tests/make_randomizer_vectors.py`` after changing a randomizer on purpose;
tests/test_randomizer_vectors.py checks Python, Node and Chromium against the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from deniable.collection.respondent._client import permanent_uniform, token_uniform
from deniable.mechanisms import (
    Crosswise,
    ForcedResponse,
    KaryRR,
    Kuk,
    MatrixDesign,
    Triangular,
    UnrelatedQuestion,
    Warner,
)

OUT = Path(__file__).resolve().parent / "data" / "randomizer_vectors.json"

DESIGNS = {
    "warner": Warner(p=0.8),
    "forced-response": ForcedResponse(p_yes=1 / 6, p_no=1 / 6),
    "unrelated-question": UnrelatedQuestion(p=0.7, innocuous_prevalence=0.3),
    "crosswise": Crosswise(p=0.25),
    "kuk": Kuk(p_carrier=0.7, p_noncarrier=0.3, draws=3),
    "triangular": Triangular(p=0.3),
    "kary-rr": KaryRR(k=5, epsilon=1.2),
}


def vectors() -> dict[str, object]:
    gen = np.random.default_rng(20261127)
    designs = []
    for name, d in DESIGNS.items():
        truths = gen.integers(0, d.n_truths, 64)
        u = gen.random(64)
        u[:4] = [0.0, 1 - 2**-53, 0.5, 0.25]  # the ends of the grid and round values
        # the device's randomizer: a design rebuilt from its served columns (MatrixDesign,
        # as client.design_from_view); a named design may draw otherwise (k-ary RR does)
        device = MatrixDesign(d.matrix)
        reports = device._draw(truths.astype(np.int64), u)
        designs.append(
            {
                "design": name,
                "columns": d.matrix.T.tolist(),
                "truths": truths.tolist(),
                "u": u.tolist(),
                "reports": np.asarray(reports).astype(int).tolist(),
            }
        )
    hmac = []
    for i in range(8):
        secret = bytes(gen.integers(0, 256, 32).astype(np.uint8))
        key = f"{i:064x}"
        hmac.append(
            {
                "secret": secret.hex(),
                "key": key,
                "answer": i % 5,
                "u": permanent_uniform(secret, key, i % 5),
            }
        )
    tokens = [
        {
            "token": f"tok-{i}-{'x' * i}",
            "survey": "s",
            "u": token_uniform(f"tok-{i}-{'x' * i}", "s"),
        }
        for i in range(6)
    ]
    return {"designs": designs, "hmac": hmac, "tokens": tokens}


if __name__ == "__main__":
    OUT.write_text(json.dumps(vectors(), indent=1) + "\n")
    print(f"wrote {OUT}")
