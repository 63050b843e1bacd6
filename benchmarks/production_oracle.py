"""The oracle at production shapes: the float64 fast path's time per production case (uncached, one
core), and its agreement with mpmath, side by side.

mpmath on a whole production case takes minutes to hours, so the agreement is measured on the
case's own weights over a prefix: the first batch row and as many leading steps as keep the mpmath
evaluation under ``--mp-macs`` multiply-adds (at least 2). For that prefix it reports the largest
|fast − mpmath| and its ratio to the fast path's claimed own error (must be <= 1), and the mpmath
time beside the fast path's on the same prefix.

    OPENBLAS_NUM_THREADS=1 python benchmarks/production_oracle.py [-k EXPR] [--mp-macs 3e6] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import oracles  # noqa: E402
from conformance.case import load_paths  # noqa: E402
from conformance.run import compile_expression  # noqa: E402

DEFAULT_K = "forward or bidirectional"


def _prefix(case, steps: int) -> dict:
    t = dict(case.tensors)
    t["X"] = t["X"][:steps, :1]
    for name in ("initial_h", "initial_c"):
        if t.get(name) is not None:
            t[name] = t[name][:, :1]
    if t.get("sequence_lens") is not None:
        t["sequence_lens"] = np.minimum(t["sequence_lens"][:1], steps).astype(np.int32)
    return t


def _macs(case, steps: int, batch: int) -> int:
    g = {"RNN": 1, "GRU": 3, "LSTM": 4}[case.op]
    d = 2 if case.direction == "bidirectional" else 1
    return g * case.hidden_size * (case.shape["input_size"] + case.hidden_size) * steps * batch * d


def measure(cases, mp_macs: float = 3e6) -> list[dict]:
    rows = []
    for case in cases:
        attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
        start = time.perf_counter()
        res = oracles.evaluate(case.op, attrs, case.tensors, "onnx", cache=False, method="fast")
        fast_s = time.perf_counter() - start
        steps = max(2, min(case.shape["seq_length"], int(mp_macs // max(_macs(case, 1, 1), 1))))
        tensors = _prefix(case, steps)
        start = time.perf_counter()
        quick = oracles.evaluate(case.op, attrs, tensors, "onnx", cache=False, method="fast")
        prefix_fast_s = time.perf_counter() - start
        start = time.perf_counter()
        exact = oracles.evaluate(case.op, attrs, tensors, "onnx", cache=False, method="mpmath")
        mp_s = time.perf_counter() - start
        worst, worst_ratio = 0.0, 0.0
        for name, e in exact.readings[0].outputs.items():
            q = quick.readings[0].outputs[name]
            spec = ~e.unspecified
            if not spec.any():
                continue
            diff = np.abs(q.hi[spec] - (e.hi[spec] + e.lo[spec]))
            with np.errstate(invalid="ignore"):
                own = q.bound[spec] - e.bound[spec]
            # where the rigorous bound is infinite, or so large that bound + own error rounds to
            # the bound, the element's own error is not recoverable from it: the largest own error
            # the fast path claims (its certificate) stands in
            own = np.where(np.isfinite(own) & (own > 0), own, quick.certificate["max_abs_diff"])
            worst = max(worst, float(diff.max()))
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(diff == 0, 0.0, diff / own)
            worst_ratio = max(worst_ratio, float(np.max(ratio)))
        row = {"case": case.id, "macs": _macs(case, case.shape["seq_length"], case.shape["batch_size"]),
               "fast_s": fast_s, "method": res.certificate.get("method", "mpmath"),
               "samples": (res.precision.get("statistical") or {}).get("samples"),
               "fallback_rows": res.certificate.get("fallback_rows"),
               "own_error_max": res.certificate.get("max_abs_diff"),
               "prefix_steps": steps, "prefix_fast_s": prefix_fast_s, "prefix_mpmath_s": mp_s,
               "prefix_max_abs_diff": worst, "prefix_diff_over_own_error": worst_ratio}
        rows.append(row)
        print(f"{case.id:45s} fast {fast_s:6.2f} s ({row['method']}, K={row['samples']}) | prefix of "
              f"{steps:3d} steps x 1 row: mpmath {mp_s:6.2f} s, fast {prefix_fast_s:5.3f} s, max |diff| "
              f"{worst:.2e} = {worst_ratio:.2g} x the claimed own error", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=str(ROOT / "cases" / "production"))
    ap.add_argument("-k", default=DEFAULT_K)
    ap.add_argument("--mp-macs", type=float, default=3e6)
    ap.add_argument("--out", default=str(ROOT / "reports" / "bench"))
    args = ap.parse_args()
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        print("note: set OPENBLAS_NUM_THREADS=1 for one-core timings", flush=True)
    cases, _ = load_paths([args.cases])
    select = compile_expression(args.k)
    rows = measure([c for c in cases if select(c.id)], args.mp_macs)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "production_oracle.json").write_text(json.dumps(rows, indent=2))
    print(f"written {out / 'production_oracle.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
