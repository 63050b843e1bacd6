"""What the oracle's exactness limit costs: evaluate corpus cases (uncached) with the oracle as it
is (sums and dot products exact within EXACT_BITS, oracles/arith.py) and with the unlimited
exact arithmetic it replaced, alternately in one run, and print the ratio.

    .venv/bin/python benchmarks/oracle_exactness.py [--rounds 3] [--cases 150] [-k EXPR]

The unlimited versions are the pre-limit code, kept here as the baseline only; they overflow or
never return on a state that explodes double-exponentially, which is why the limit exists.
"""

from __future__ import annotations

import argparse
import statistics
import time
from operator import mul as _int_mul
from pathlib import Path

from mpmath import libmp
from mpmath.libmp import from_man_exp

import oracles
from oracles import activations, arith, gates, gru, lstm, rnn

ROOT = Path(__file__).resolve().parent.parent


def _fixed_point_unlimited(values):
    exps = [v[2] for v in values if v[1]]
    base = min(exps) if exps else 0
    return [((-m if s else m) << (e - base)) if m else 0 for s, m, e, _ in values], base


def _dot_plus_unlimited(vector, row, terms=(), prec: int = 0):
    man = sum(map(_int_mul, vector[0], row[0]))
    exp = vector[1] + row[1]
    for s, m, e, _ in terms:
        if not m:
            continue
        if s:
            m = -m
        if e >= exp:
            man += m << (e - exp)
        else:
            man, exp = (man << (exp - e)) + m, e
    return from_man_exp(man, exp, prec, arith.ROUND) if prec else from_man_exp(man, exp)


UNLIMITED = {"fixed_point": _fixed_point_unlimited, "dot_plus": _dot_plus_unlimited,
             "one_minus": lambda v: libmp.mpf_sub(arith.ONE, v),
             "exact_sum": lambda terms: libmp.mpf_sum(terms, 0)}
MODULES = (arith, gates, activations, gru, lstm, rnn)


def _swap(table: dict) -> dict:
    """Install ``table``'s functions wherever the oracle's modules bound those names; return the old."""
    old = {}
    for module in MODULES:
        for name, fn in table.items():
            if hasattr(module, name):
                old[(module, name)] = getattr(module, name)
                setattr(module, name, fn)
    return old


def _restore(old: dict) -> None:
    for (module, name), fn in old.items():
        setattr(module, name, fn)


def _problems(limit: int, select: str | None):
    from conformance.case import load_paths
    from conformance.run.select import compile_expression
    cases, _ = load_paths([ROOT / "cases" / d for d in ("rnn", "gru", "lstm")])
    if select:
        match = compile_expression(select)
        cases = [c for c in cases if match(c.id)]
    cases = [c for c in cases if c.valid and c.layout == 0][:limit]   # literal tensors are layout 0
    return [(c.op, c.attributes, c.tensors) for c in cases]


def _time(problems) -> float:
    start = time.perf_counter()
    for op, attributes, tensors in problems:
        oracles.evaluate(op, attributes, tensors, cache=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", type=int, default=150)
    parser.add_argument("-k", dest="select", default=None)
    args = parser.parse_args()
    problems = _problems(args.cases, args.select)
    _time(problems[:5])   # warm imports and caches of constants
    limited, unlimited = [], []
    for _ in range(args.rounds):
        limited.append(_time(problems))
        old = _swap(UNLIMITED)
        try:
            unlimited.append(_time(problems))
        finally:
            _restore(old)
    ratios = [a / b for a, b in zip(limited, unlimited)]
    print(f"{len(problems)} valid corpus cases, uncached, {args.rounds} rounds alternating")
    for k, (a, b) in enumerate(zip(limited, unlimited), 1):
        print(f"  round {k}: limited {a:.2f} s, unlimited {b:.2f} s, ratio {a / b:.3f}")
    print(f"median ratio limited/unlimited: {statistics.median(ratios):.3f}; "
          f"{statistics.median(limited) / len(problems) * 1e3:.2f} ms per case with the limit")


if __name__ == "__main__":
    main()
