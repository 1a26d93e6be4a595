"""How loose the central epsilon stated for a release of k-ary randomized response is:
the clones' bound (``shuffle_amplification(..., randomizer="randomized_response")``,
what the server states) against a lower bound on the exact figure, the exact epsilon of
one report's count (``kary_projection_epsilon``). The exact epsilon lies between them,
so their ratio bounds the slack from above.

    python -m uv run python bench/kary_release_slack.py [--n 1000,10000]

Prints a markdown table (k, epsilon_0, n, lower bound, stated bound, ratio, seconds) at
delta 1e-6, with the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from deniable.planning import kary_projection_epsilon, shuffle_amplification


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", default="1000,10000")
    parser.add_argument("--k", default="3,4,7")
    parser.add_argument("--eps", default="1,2,4")
    args = parser.parse_args(argv)
    print(f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
          f"Python {platform.python_version()}; delta 1e-6")  # fmt: skip
    print("| k | epsilon_0 | n | lower bound (one count, exact) | stated (clones) | ratio | s |")
    print("|---|---|---|---|---|---|---|")
    for k in (int(x) for x in args.k.split(",")):
        for eps0 in (float(x) for x in args.eps.split(",")):
            for n in (int(float(x)) for x in args.n.split(",")):
                start = time.perf_counter()
                low = kary_projection_epsilon(n, eps0, k, 1e-6)
                seconds = time.perf_counter() - start
                high = shuffle_amplification(n, eps0, 1e-6, randomizer="randomized_response")
                print(f"| {k} | {eps0:g} | {n:,} | {low:.4f} | {high.epsilon:.4f} | "
                      f"{high.epsilon / low:.2f} | {seconds:.2f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
