"""What the plausible readings of silent points cost the oracle: evaluate the corpus cases that have
unspecified elements (uncached) with the readings computed (oracles/silent.py) and without,
alternately in one run, and print the ratio. The cost of the repeats is the other half of the
question; it is measured on the whole corpus with `conformance run --repeat-under 0` against the
default (benchmarks/README.md).

    .nox/tests/bin/python benchmarks/silent_readings.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import oracles
from oracles import readings, silent

ROOT = Path(__file__).resolve().parent.parent


def _cases():
    from conformance.case import load_paths
    cases, _ = load_paths([ROOT / "cases"])
    out = []
    for case in cases:
        if not case.valid:
            continue
        attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
        try:
            res = oracles.evaluate(case.op, attrs, case.tensors, cache=False)
        except oracles.OracleError:
            continue
        if any(e.unspecified.any() for r in res.readings for e in r.outputs.values()):
            out.append((case.op, attrs, case.tensors))
    return out


REAL_ATTACH = silent.attach


def _time(cases, with_readings: bool) -> float:
    readings.silent.attach = REAL_ATTACH if with_readings else (lambda *a, **k: None)
    start = time.perf_counter()
    for op, attrs, tensors in cases:
        oracles.evaluate(op, attrs, tensors, cache=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cases = _cases()
    on, off = [], []
    try:
        for _ in range(args.rounds):
            off.append(_time(cases, False))
            on.append(_time(cases, True))
    finally:
        readings.silent.attach = REAL_ATTACH
    print(f"{len(cases)} corpus cases with unspecified elements, uncached, best of {args.rounds}: "
          f"{min(off):.2f} s without the plausible readings, {min(on):.2f} s with them: "
          f"ratio {min(on) / min(off):.3f} (median {statistics.median(on) / statistics.median(off):.3f})")


if __name__ == "__main__":
    main()
