"""The precision model's sweeps (the corpus tier.

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/unit/oracle/test_precision_model.py."""

from __future__ import annotations

import itertools
import json
import os

import numpy as np
import pytest

import oracles
from tests.unit.oracle.test_precision_model import Implementation, random_case

IMPLEMENTATIONS = {
    "float32": [Implementation("float32", order=o, fma=m, activations=a, gru_form=g, seed=s)
                for s, (o, m, a, g) in enumerate(itertools.product(
                    ("forward", "reverse", "pairwise", "shuffled"), (False, True),
                    ("library", "sloppy", "formula"), ("spec", "lerp")))],
    "float16": [Implementation("float16", accumulation=acc, order=o, fma=m, activations=a,
                               gru_form=g, seed=s)
                for s, (acc, o, m, a, g) in enumerate(itertools.product(
                    ("dtype", "float32"), ("forward", "pairwise", "shuffled"), (False, True),
                    ("library", "sloppy", "formula"), ("spec", "lerp")))],
    "bfloat16": [Implementation("bfloat16", accumulation=acc, order=o, fma=m, activations=a,
                                seed=s)
                 for s, (acc, o, m, a) in enumerate(itertools.product(
                     ("dtype", "float32"), ("forward", "shuffled"), (False, True),
                     ("library", "sloppy")))],
}


WANTED = {"input_forget": "f=1-i", "clip_h": "noclip-h", "alpha_beta_consumption": "ab-pop",
          "thresholded_relu_boundary": "tr-ge"}


def reading_of(result):
    """The oracle reading the doubles implement (popped alpha/beta, f = 1 − i, no clip of h)."""
    for reading in result.readings:
        if all(WANTED.get(pid, tag) == tag for pid, tag in reading.choices.items()):
            return reading
    raise AssertionError(f"no reading matching {WANTED}: {[r.name for r in result.readings]}")


def observed_over_bound(seed: int, dtype: str, implementations=None):
    """max |double − exact| / bound over elements, for each double: {name: ratio array}."""
    op, attrs, t = random_case(seed, dtype)
    try:
        result = oracles.evaluate(op, attrs, t, cache=False)
    except OverflowError:  # the oracle's exact 1 − x when a state explodes double-exponentially
        return (op, attrs), {}
    reading = reading_of(result)
    ratios = {}
    for impl in implementations or IMPLEMENTATIONS[dtype]:
        got = impl.run(op, attrs, t)
        parts = []
        for name, exp in reading.outputs.items():
            mask = ~exp.unspecified
            with np.errstate(all="ignore"):
                err = np.abs((got[name][mask] - exp.hi[mask]) - exp.lo[mask])
                ratio = np.where(err == 0, 0.0, err / exp.bound[mask])
            parts.append(np.where(np.isnan(ratio), np.inf, ratio))
        ratios[impl.name] = np.concatenate(parts)
    return (op, attrs), ratios


SEEDS = int(os.environ.get("PRECISION_MODEL_SEEDS", "120"))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_no_correct_implementation_exceeds_the_bound(dtype, request):
    """Over many random cases and every double: observed error <= the first-order bound
    itself (the tolerance's safety factor of 2 is not needed for these)."""
    worst, everything = (0.0, None), []
    seeds = SEEDS if dtype != "bfloat16" else SEEDS // 3
    for seed in range(seeds):
        case, ratios = observed_over_bound(seed, dtype)
        for name, r in ratios.items():
            everything.append(r[np.isfinite(r) | (r > 1)])
            if r.max() > worst[0]:
                worst = (float(r.max()), (seed, case, name))
    assert worst[0] <= 1.0, f"observed/bound = {worst[0]:.3g} > 1 at {worst[1]}"
    everything = np.concatenate(everything)
    _report(request, dtype, everything)


def _report(request, dtype, ratios):
    """The distribution of observed/bound (nonzero errors), printed and kept for the report."""
    nz = ratios[ratios > 0]
    q = np.quantile(nz, [0.5, 0.9, 0.99, 1.0]) if nz.size else [0, 0, 0, 0]
    line = {"dtype": dtype, "elements": int(ratios.size), "exact": int((ratios == 0).sum()),
            "median": float(q[0]), "p90": float(q[1]), "p99": float(q[2]), "max": float(q[3]),
            "decades_below_1": np.histogram(np.log10(nz), bins=[-99, -4, -3, -2, -1, 0, 99])[0]
            .tolist()}
    print(json.dumps(line))
    request.node.user_properties.append(("observed_over_bound", line))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_bound_is_not_absurdly_loose(dtype):
    """Per case, the worst element of the least careful double comes within 3 decades of its
    bound: the typical case within 2 (median)."""
    worst_per_case = []
    for seed in range(SEEDS // 2):
        _, ratios = observed_over_bound(seed, dtype)
        if ratios:
            worst_per_case.append(max(float(r.max()) for r in ratios.values()))
    worst_per_case = np.array(worst_per_case)
    assert np.median(worst_per_case) > 1e-2, np.quantile(worst_per_case, [0.1, 0.5, 0.9])
    assert np.quantile(worst_per_case, 0.1) > 1e-3, np.quantile(worst_per_case, [0.1, 0.5, 0.9])
