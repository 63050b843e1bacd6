"""The production tier (docs/production.md).

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/test_production.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings

import oracles
from conformance.case import load_paths
from conformance.case.load import discover
from conformance.fuzz.scope import PRODUCTION_LIMITS, Scope
from conformance.fuzz.strategies import valid_cases
from oracles import fast

ROOT = Path(__file__).parents[2]


def test_the_default_run_leaves_the_production_tier_out():
    default = discover([ROOT / "cases"])
    production = discover([ROOT / "cases"], tier="production")
    assert production and all("production" in p.parts for p in production)
    assert not any("production" in p.parts for p in default)
    assert len(discover([ROOT / "cases"], tier="all")) == len(default) + len(production)
    # naming the folder reads it, whatever the tier
    assert discover([ROOT / "cases" / "production"]) == production


def test_production_cases_reach_production_shapes():
    cases, errors = load_paths([ROOT / "cases" / "production"], materialize=False)
    assert not errors, errors
    hidden = {c.attributes["hidden_size"] for c in cases}
    assert {17, 33, 64, 128, 256, 512, 1024} <= hidden
    assert max(c.shape["seq_length"] for c in cases) == 500
    assert max(c.shape["batch_size"] for c in cases) == 64
    assert {c.op for c in cases} == {"RNN", "GRU", "LSTM"}
    assert {c.direction for c in cases} == {"forward", "reverse", "bidirectional"}
    assert any(c.shape["input_size"] % 8 for c in cases)


def test_production_inputs_are_deterministic():
    path = ROOT / "cases" / "production" / "gru_h17.yaml"
    (first, *_), _ = load_paths([path])
    (again, *_), _ = load_paths([path])
    for name, value in first.tensors.items():
        assert np.array_equal(value, again.tensors[name]), name
    assert 0 < first.tensors["sequence_lens"].max() <= 500


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(valid_cases(Scope(limits=PRODUCTION_LIMITS)))
def test_the_fuzzer_can_draw_production_shapes(case):
    # one draw can be anything; what the strategy reaches is checked below
    assert case.shape["batch_size"] <= 64 and case.attributes["hidden_size"] <= 1024


def test_chi2_quantile_matches_the_closed_form_for_two_degrees():
    # χ²_2 is exponential: P(χ² <= x) = 1 - exp(-x/2)
    for p in (1e-12, 1e-6, 1e-2):
        assert math.isclose(fast.chi2_lower_quantile(2, p), -2 * math.log1p(-p), rel_tol=1e-6)


def test_the_statistical_factor_grows_with_the_elements_and_shrinks_with_samples():
    lam_small, ck_small = fast.statistical_factor(10, 64, 1e-5)
    lam_big, ck_big = fast.statistical_factor(10 ** 6, 64, 1e-5)
    assert lam_big > lam_small and ck_big > ck_small
    assert fast.statistical_factor(1000, 256, 1e-5)[1] < fast.statistical_factor(1000, 16, 1e-5)[1]
    # Azuma-Hoeffding: 2·exp(-λ²/2) per element, half the budget over the elements
    assert math.isclose(2 * math.exp(-lam_big ** 2 / 2) * 10 ** 6, 1e-5 / 2, rel_tol=1e-9)


def test_rows_whose_own_error_is_not_far_below_go_to_mpmath(monkeypatch):
    rng = np.random.default_rng(3)
    t = {"X": rng.uniform(-1, 1, (6, 3, 5)).astype(np.float32),
         "W": rng.uniform(-1, 1, (1, 16, 5)).astype(np.float32),
         "R": rng.uniform(-1, 1, (1, 16, 4)).astype(np.float32),
         "sequence_lens": np.array([6, 2, 5], np.int32)}
    reference = oracles.evaluate("LSTM", {"hidden_size": 4}, t, cache=False, method="mpmath")
    monkeypatch.setattr(fast, "FAR_BELOW", 0.0)   # no own error is far enough below: every row
    quick = oracles.evaluate("LSTM", {"hidden_size": 4}, t, cache=False, method="fast")
    assert quick.certificate["fallback_rows"] == [0, 1, 2]
    for name, exp in reference.readings[0].outputs.items():
        got = quick.readings[0].outputs[name]
        assert np.array_equal(got.hi, exp.hi, equal_nan=True) and np.array_equal(got.lo, exp.lo, equal_nan=True)


def test_the_fast_path_is_cached_apart_from_the_mpmath_path(tmp_path, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_ORACLE_CACHE", str(tmp_path))
    rng = np.random.default_rng(5)
    t = {"X": rng.uniform(-1, 1, (4, 2, 3)).astype(np.float32),
         "W": rng.uniform(-1, 1, (1, 9, 3)).astype(np.float32),
         "R": rng.uniform(-1, 1, (1, 9, 3)).astype(np.float32)}
    quick = oracles.evaluate("GRU", {"hidden_size": 3}, t, method="fast")
    exact = oracles.evaluate("GRU", {"hidden_size": 3}, t, method="mpmath")
    assert quick.certificate["method"] == "float64-fast" and "method" not in exact.certificate
    again = oracles.evaluate("GRU", {"hidden_size": 3}, t, method="fast")
    assert again.from_cache and again.readings[0].outputs["Y"].sigma is not None
    assert len(list(tmp_path.glob("*.json"))) == 2
