"""Write tests/data/oracle_vectors.json: shared test vectors for the Python and JS encoders.

Run ``python -m uv run python tests/make_oracle_vectors.py`` after changing an encoder
on purpose; tests/test_oracle_vectors.py checks both encoders against the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from deniable import LocalHashing, UnaryEncoding
from deniable.mechanisms._byte_prefix import BytePrefixExtension
from deniable.mechanisms._prefix import PrefixExtension
from deniable.mechanisms._rappor import Rappor

OUT = Path(__file__).resolve().parent / "data" / "oracle_vectors.json"


def vectors() -> dict[str, list[dict[str, object]]]:
    rng = np.random.default_rng(20261121)
    out: dict[str, list[dict[str, object]]] = {
        "oue": [],
        "olh": [],
        "rappor": [],
        "pem": [],
        "bytepem": [],
    }
    for k, eps in [(5, 1.0), (17, 0.5), (64, 4.0)]:
        oracle = UnaryEncoding(k, eps)
        for value in (0, k // 2, k - 1):
            raw = rng.bytes(oracle.bytes_per_report)
            bits = oracle.encode([value], raw)[0]
            out["oue"].append(
                {
                    "params": oracle.client_params(),
                    "value": value,
                    "random": raw.hex(),
                    "report": bits.tobytes().hex(),
                }
            )
    for k, eps in [(10, 1.0), (1000, 0.3), (10**6, 4.0)]:
        oracle = LocalHashing(k, eps)
        for value in (0, 7, k - 1):
            for _ in range(3):
                raw = rng.bytes(oracle.bytes_per_report)
                rep = oracle.encode([value], raw)[0]
                out["olh"].append(
                    {
                        "params": oracle.client_params(),
                        "value": value,
                        "random": raw.hex(),
                        "report": {"a": str(rep["a"]), "b": str(rep["b"]), "y": int(rep["y"])},
                    }
                )
    for n_bloom_bits, h, n_cohorts in [(16, 2, 4), (40, 3, 64)]:
        r = Rappor(n_bloom_bits=n_bloom_bits, h=h, n_cohorts=n_cohorts, f=0.5, p=0.25, q=0.75)
        for value in ("apple", "https://example.org/ünïcode", ""):
            secret = rng.bytes(32)
            irr = rng.bytes(r.bytes_per_report)
            prr = r.prr_bytes(secret, value)
            rep = r.encode([value], [r.cohort_of(secret)], prr, irr)
            out["rappor"].append(
                {
                    "params": r.client_params(),
                    "value": value,
                    "secret": secret.hex(),
                    "random": irr.hex(),
                    "report": {"cohort": int(rep.cohort[0]), "bits": rep.bits[0].tobytes().hex()},
                }
            )
    for eps, length, alphabet in [(4.0, 5, "abcdefghijklmnopqrstuvwxyz"), (1.0, 3, "xyzäé")]:
        pem = PrefixExtension(eps, length, alphabet)
        for value in (alphabet[0], alphabet[-1] * length, "", alphabet[1:3]):
            for _ in range(3):
                raw = rng.bytes(pem.bytes_per_report)
                rep = pem.encode([value], raw)[0]
                out["pem"].append(
                    {
                        "params": pem.client_params(),
                        "value": value,
                        "random": raw.hex(),
                        "report": {
                            "level": int(rep["level"]),
                            "a": str(rep["a"]),
                            "b": str(rep["b"]),
                            "y": int(rep["y"]),
                        },
                    }
                )
    configs = [(1.0, 64, 2, 0.95), (4.0, 16, 1, 1.0), (0.5, 16, 2, 0.5)]
    for eps, max_bytes, step, decay in configs:
        bpem = BytePrefixExtension(eps, max_bytes, step, level_decay=decay)
        # level words on each side of a few level bounds, then random ones
        edges = [b + d for b in bpem.level_bounds[:-1][::5] for d in (-1, 0)]
        for value in ("", "requests", "café", "日本語", "e\u0301", "x" * max_bytes):
            for word in [*edges[:4], None, None, None]:
                raw = rng.bytes(bpem.bytes_per_report)
                if word is not None:
                    raw = int(word).to_bytes(4, "little") + raw[4:]
                rep = bpem.encode([value], raw)[0]
                out["bytepem"].append(
                    {
                        "params": bpem.client_params(),
                        "value": value,
                        "random": raw.hex(),
                        "report": {
                            "level": int(rep["level"]),
                            "a": [str(x) for x in rep["a"].tolist()],
                            "y": int(rep["y"]),
                        },
                    }
                )
    return out


if __name__ == "__main__":
    OUT.write_text(json.dumps(vectors(), indent=1) + "\n")
    print(f"wrote {OUT}")
