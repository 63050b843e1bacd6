"""±Inf and NaN inputs, swept (the corpus tier.

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/unit/oracle/test_nonfinite.py."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import oracles
from oracles.evaluation import evaluate as evaluate_choices
from oracles.problem import build_problem
from oracles.profiles import get_profile
from oracles.readings import expected_outputs
from tests.corpus.oracle.test_precision_model import IMPLEMENTATIONS
from tests.unit.oracle.test_nonfinite import (
    DISAGREES,
    INF,
    NAN,
    VANISHING,
    bits_200,  # noqa: F401  (the same autouse fixture: 200 bits)
    check_nonfinite_bounds,
)
from tests.unit.oracle.test_precision_model import random_case

PROFILE = get_profile("onnx")


#: the readings the test doubles of test_precision_model.py implement: numpy's maximum and clip
#: propagate NaN, np.where(x >= alpha, ...) gives 0, x/(1 + |x|) gives NaN at ±Inf, tanh and
#: 1/(1 + e^-x) their limits
DOUBLES = {"input_forget": "f=1-i", "clip_h": "noclip-h", "alpha_beta_consumption": "ab-pop",
           "thresholded_relu_boundary": "tr-ge", "nan_relu": "relu-nan",
           "nan_thresholded_relu": "thr-zero", "nan_hard_sigmoid": "hs-nan", "nan_clip": "clip-nan",
           "tanh_at_infinity": "tanh-limit", "sigmoid_at_infinity": "sigmoid-limit",
           "softsign_at_infinity": "softsign-nan"}


def _expected_for(op, attrs, t, tags):
    problem = build_problem(op, attrs, t, PROFILE)
    values = {pid: p.choices[0].value for pid, p in PROFILE.points.items()}
    for pid, tag in tags.items():
        values[pid] = next(c.value for c in PROFILE.points[pid].choices if c.tag == tag)
    low, high = (evaluate_choices(problem, PROFILE, values, p) for p in (128, 192))
    return expected_outputs(problem, values, low, high)[0]


def _sprinkle(t, rng):
    """One or two of +Inf, -Inf, NaN at random places, mostly in X and the initial states."""
    t = {k: v.copy() for k, v in t.items()}
    places = (["X"] * 4 + ["initial_h"] * 2 + ["initial_c"] * 2 * ("initial_c" in t)
              + ["W", "R", "B"] + ["P"] * ("P" in t))
    for _ in range(int(rng.integers(1, 3))):
        a = t[places[int(rng.integers(len(places)))]]
        a[tuple(int(rng.integers(n)) for n in a.shape)] = (INF, -INF, NAN)[int(rng.integers(3))]
    return t


def _class(v):
    return np.where(np.isnan(v), 3, np.where(np.isposinf(v), 1, np.where(np.isneginf(v), 2, 0)))


@pytest.mark.parametrize("dtype,seeds", [("float32", 150), ("float16", 60), ("bfloat16", 40)])
def test_correct_implementations_get_the_classes_and_stay_within_the_bound(dtype, seeds):
    """Every double computes in IEEE arithmetic (numpy): on random cases with infinities and NaN
    sprinkled in, every element the oracle specifies has the double's class, and the finite ones
    are within the bound. Cases whose exact values leave the dtype's range are skipped (overflow
    is outside the model)."""
    big = float(ml_dtypes.finfo(ml_dtypes.bfloat16 if dtype == "bfloat16"
                                else np.dtype(dtype)).max) / 4
    seen = {"nonfinite": 0, "finite": 0, "vanishing": 0}
    for seed in range(seeds):
        op, attrs, t = random_case(seed, dtype)
        t = _sprinkle(t, np.random.default_rng(1000 + seed))
        forms = {form: _expected_for(op, attrs, t, dict(DOUBLES, gru_update=tag))
                 for form, tag in (("spec", "gru-convex"), ("lerp", "gru-lerp"))}
        if any(np.any(np.abs(np.where(np.isfinite(e.hi), e.hi, 0)) > big)
               for e in forms["spec"].values()):
            continue
        for e in (*forms["spec"].values(), *forms["lerp"].values()):
            # the model's trajectory and the exact evaluation agree on every class: a bug in either
            # cannot hide behind the reason that covers float64 underflow
            assert DISAGREES not in e.reasons, (seed, op, attrs)
        for e in forms["spec"].values():
            spec = ~e.unspecified
            seen["nonfinite"] += int((~np.isfinite(e.hi[spec])).sum())
            seen["finite"] += int(np.isfinite(e.hi[spec]).sum())
            seen["vanishing"] += int(VANISHING in e.reasons)
        for impl in IMPLEMENTATIONS[dtype][seed % 3::3]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = impl.run(op, attrs, t)
            for name, e in forms[impl.gru_form].items():
                spec = ~e.unspecified
                g, hi, lo, bound = got[name][spec], e.hi[spec], e.lo[spec], e.bound[spec]
                np.testing.assert_array_equal(_class(g), _class(hi),
                                              err_msg=f"{seed} {op} {attrs} {impl.name} {name}")
                fin = np.isfinite(hi)
                err = np.abs((g[fin] - hi[fin]) - lo[fin])
                assert np.all(err <= bound[fin]), (seed, op, attrs, impl.name, name)
    assert seen["nonfinite"] > 200 and seen["finite"] > 500 and seen["vanishing"] > 0, seen


def test_every_profile_dtype_and_layout_evaluates_non_finite_cases():
    """No exception, no warning, bounds as oracles/README.md ("Non-finite inputs") says, JSON round trip,
    on random cases."""
    evaluated = 0
    for profile in ("onnx", "openvino", "directml"):
        for seed in range(30):
            dtype = ("float32", "float16", "bfloat16", "float64")[seed % 4]
            op, attrs, t = random_case(seed, "float32" if dtype == "float64" else dtype)
            if dtype == "float64":
                t = {k: v if k == "sequence_lens" else v.astype(np.float64) for k, v in t.items()}
            t = _sprinkle(t, np.random.default_rng(7 + seed))
            if seed % 5 == 0:
                attrs = dict(attrs, layout=1)
                t = {k: np.ascontiguousarray(v.swapaxes(0, 1))
                     if k in ("X", "initial_h", "initial_c") else v for k, v in t.items()}
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                try:
                    result = oracles.evaluate(op, attrs, t, profile=profile, cache=False)
                except oracles.OracleError:
                    continue   # the profile's own constraints (openvino's three activations, ...)
            check_nonfinite_bounds(result)
            assert not any(DISAGREES in e.reasons for r in result.readings
                           for e in r.outputs.values()), (profile, seed)
            back = oracles.OracleResult.from_json(result.to_json())
            assert back.to_json() == result.to_json()
            evaluated += 1
    assert evaluated >= 60
