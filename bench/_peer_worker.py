"""Runs inside the peers' own environment (see bench/oracles.py); prints one JSON line.

Usage: python _peer_worker.py PEER ORACLE K EPSILON N VALUES.npy MODE BUDGET_SECONDS

PEER: pure-ldp | multi-freq-ldpy; ORACLE: oue | olh | hadamard; MODE: speed | mse | pp.
``speed`` times the peer's client and server on as many of the N values as fit the
budget and extrapolates the server's time to all N (both are linear in N).
``mse`` runs independent surveys of all N values for the budget (at least 2) and
returns, per survey, the summed squared error of each of the peer's estimates (raw
where the peer has one, and each of its post-processings).
``pp`` (OUE and OLH, whose mechanisms are the same as ours): VALUES.npy is instead an
``.npz`` of our surveys' support counts (``counts``, surveys x K) and the population's
frequencies (``truth``); the peer's own post-processing code runs on each survey's
counts, so its error can be compared with ours survey by survey.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def _pure(oracle: str, k: int, eps: float):  # type: ignore[no-untyped-def]
    if oracle == "oue":
        from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

        server = UEServer(epsilon=eps, d=k, use_oue=True)
        client = UEClient(epsilon=eps, d=k, use_oue=True)
    elif oracle == "olh":
        from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer

        server = LHServer(epsilon=eps, d=k, use_olh=True)
        client = LHClient(epsilon=eps, d=k, use_olh=True)
    else:
        from pure_ldp.frequency_oracles.hadamard_response import (
            HadamardResponseClient,
            HadamardResponseServer,
        )

        server = HadamardResponseServer(eps, k)
        client = HadamardResponseClient(eps, k, server.get_hash_funcs())
    # pure-ldp's domain is 1..k (its default index mapper subtracts 1)
    return (lambda v: client.privatise(int(v) + 1)), server.aggregate, server


def _mf(oracle: str, k: int, eps: float):  # type: ignore[no-untyped-def]
    if oracle == "oue":
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Client

        return lambda v: UE_Client(int(v), k, eps, True)
    if oracle == "olh":
        from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Client

        return lambda v: LH_Client(int(v), k, eps, True)
    raise SystemExit("multi-freq-ldpy has no Hadamard response")


def _mf_decode(oracle: str, reports: list, k: int, eps: float) -> dict[str, list[float]]:  # type: ignore[type-arg]
    if oracle == "oue":
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_IBU, UE_Aggregator_MI

        out = {"clip+normalize": UE_Aggregator_MI(reports, eps, True)}
        if k <= 100:
            out["ibu"] = UE_Aggregator_IBU(reports, k, eps, True)
    else:
        from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Aggregator_IBU, LH_Aggregator_MI

        out = {"clip+normalize": LH_Aggregator_MI(reports, k, eps, True)}
        if k <= 10:
            out["ibu"] = LH_Aggregator_IBU(reports, k, eps, True)
    return {name: np.asarray(v, dtype=float).tolist() for name, v in out.items()}


def _paired(
    peer: str, oracle: str, k: int, eps: float, n: int, path: str
) -> dict[str, list[float]]:
    data = np.load(path)
    truth = data["truth"]
    sse: dict[str, list[float]] = {}
    if peer == "pure-ldp":
        _, _, server = _pure(oracle, k, eps)
        every = range(1, k + 1)
        for counts in data["counts"]:
            server.reset()
            server.aggregated_data = counts.astype(float)
            server.n = n
            estimates = {
                "raw": server.estimate_all(every, suppress_warnings=True),
                "simplex": server.estimate_all(every, suppress_warnings=True, normalization=2),
                "additive": server.estimate_all(every, suppress_warnings=True, normalization=1),
            }
            for method, est in estimates.items():
                err = np.asarray(est, dtype=float) / n - truth
                sse.setdefault(method, []).append(float(np.sum(err**2)))
        return sse
    from multi_freq_ldpy.estimators.Histogram_estimator import IBU, MI

    # the parameters exactly as multi-freq-ldpy's UE / LH aggregators set them
    if oracle == "oue":
        p, q = 0.5, 1 / (np.exp(eps) + 1)
    else:
        g = round(np.exp(eps)) + 1
        p, q = np.exp(eps) / (np.exp(eps) + g - 1), 1 / g
    channel = np.full((k, k), q)
    np.fill_diagonal(channel, p)
    for counts in data["counts"].astype(float):
        estimates = {
            "clip+normalize": MI(counts, n, p, q),
            "ibu": IBU(k, channel, counts / counts.sum(), 10000, 1e-12, "max_abs"),
        }
        for method, est in estimates.items():
            sse.setdefault(method, []).append(float(np.sum((np.asarray(est) - truth) ** 2)))
    return sse


def main() -> None:
    peer, oracle, k, eps, n, path, mode, budget = sys.argv[1:9]
    k, n, eps, budget = int(k), int(n), float(eps), float(budget)
    if mode == "pp":
        sse = _paired(peer, oracle, k, eps, n, path)
        print(json.dumps({"peer": peer, "oracle": oracle, "n": n, "sse": sse}))
        return
    values = np.load(path)[:n]
    np.random.seed(12345)  # noqa: NPY002 - the peers draw from numpy's global generator
    result: dict[str, object] = {"peer": peer, "oracle": oracle, "n": n}
    if peer == "pure-ldp":
        privatise, aggregate, server = _pure(oracle, k, eps)
    else:
        privatise = _mf(oracle, k, eps)
        aggregate, server = None, None
    # warm-up outside the clock (numba compiles the peers' jitted functions on first call)
    warm = [privatise(v) for v in values[:20]]
    if peer == "multi-freq-ldpy":
        _mf_decode(oracle, warm, k, eps) if k <= 1000 else None
    if mode == "speed":
        reports = []
        start = time.perf_counter()
        for v in values:
            reports.append(privatise(v))
            if time.perf_counter() - start > budget / 2:
                break
        result["client_reports"] = len(reports)
        result["client_per_s"] = len(reports) / (time.perf_counter() - start)
        start = time.perf_counter()
        if peer == "pure-ldp":
            done = 0
            for done, rep in enumerate(reports, start=1):  # noqa: B007 - done is used below
                aggregate(rep)
                if time.perf_counter() - start > budget / 2:
                    break
            server.estimate_all(range(1, k + 1), suppress_warnings=True)
        else:
            # the aggregator is one call over all reports: time it on growing prefixes
            done = min(len(reports), 10)
            while True:
                start = time.perf_counter()
                _mf_decode(oracle, reports[:done], k, eps)
                if time.perf_counter() - start > budget / 4 or done == len(reports):
                    break
                done = min(len(reports), done * 4)
        elapsed = time.perf_counter() - start
        result["server_reports"] = done
        result["server_seconds_for_n"] = elapsed / done * n
    else:
        # independent surveys of the same population until the budget is spent (at
        # least 2): the sum over values of each estimate's squared error, per survey
        truth = np.bincount(values, minlength=k) / n
        sse: dict[str, list[float]] = {}
        start = time.perf_counter()
        while len(next(iter(sse.values()), [])) < 2 or time.perf_counter() - start < budget:
            reports = [privatise(v) for v in values]
            if peer == "pure-ldp":
                server.reset()
                for rep in reports:
                    aggregate(rep)
                every = range(1, k + 1)
                raw = server.estimate_all(every, suppress_warnings=True) / n
                simplex = server.estimate_all(every, suppress_warnings=True, normalization=2)
                additive = server.estimate_all(every, suppress_warnings=True, normalization=1)
                estimates = {
                    "raw": np.asarray(raw, dtype=float),
                    "simplex": np.asarray(simplex, dtype=float) / n,
                    "additive": np.asarray(additive, dtype=float) / n,
                }
            else:
                decoded = _mf_decode(oracle, reports, k, eps)
                estimates = {m: np.asarray(v) for m, v in decoded.items()}
            for method, est in estimates.items():
                sse.setdefault(method, []).append(float(np.sum((est - truth) ** 2)))
        result["sse"] = sse
    print(json.dumps(result))


if __name__ == "__main__":
    main()
