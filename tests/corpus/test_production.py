"""The production tier (docs/production.md): kept out of the default run, the float64 fast path
checked against mpmath, the statistical bound's arithmetic, and deliberate test doubles at 128
hidden units, 50 steps, batch 8 run through the real engine.

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/unit/test_production.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import oracles
from conformance.case import load_paths
from conformance.fuzz.scope import PRODUCTION_LIMITS, Scope
from conformance.fuzz.strategies import valid_cases
from oracles import fast
from tests.doubles import production as doubles
from tests.unit.test_production import ROOT

DOUBLE_CASE = ROOT / "tests" / "data" / "production"


# -- the tier ----------------------------------------------------------------------------------------


# -- the statistical bound's arithmetic ------------------------------------------------------------


# -- the fast path against mpmath --------------------------------------------------------------------

def _corpus():
    cases, errors = load_paths([ROOT / "cases"])
    assert not errors
    return [c for c in cases if c.valid]


def test_the_fast_path_agrees_with_mpmath_on_every_small_corpus_case():
    """Every valid corpus case the fast path can take, in every profile: the same masks and
    rigorous bounds, and values within the fast path's own error bound of mpmath's."""
    taken = 0
    for case in _corpus():
        attrs = {k: v for k, v in case.attributes.items() if k != "layout"}
        for profile in ("onnx", "openvino", "directml"):
            try:
                reference = oracles.evaluate(case.op, attrs, case.tensors, profile, cache=False, method="mpmath")
            except oracles.OracleError:
                continue
            quick = oracles.evaluate(case.op, attrs, case.tensors, profile, cache=False, method="fast")
            assert [r.name for r in quick.readings] == [r.name for r in reference.readings], case.id
            if quick.certificate.get("method") != "float64-fast":
                continue  # not eligible: evaluated by mpmath itself
            taken += 1
            for name, exp in reference.readings[0].outputs.items():
                got = quick.readings[0].outputs[name]
                assert np.array_equal(got.unspecified, exp.unspecified), (case.id, profile, name)
                spec = ~exp.unspecified
                own = got.bound[spec] - exp.bound[spec]
                assert np.all(own >= 0), (case.id, name)
                err = np.abs(got.hi[spec] - (exp.hi[spec] + exp.lo[spec]))
                assert np.all(err <= own + 1e-300), (case.id, profile, name, float(err.max()))
                assert np.all(own <= fast.FAR_BELOW * 2 * exp.bound[spec] + 1e-300), (case.id, name)
    assert taken >= 300, taken


# -- test doubles through the real engine ------------------------------------------------------------

#: the least fraction of the allowed error each legitimate variant uses on the double case (issue
#: 22 asks 5 %; model v2 measures 5.5 % for the pairwise sum, the most accurate of them:
#: docs/production.md, "What the tolerance catches")
LEAST_USED = 0.05


@pytest.fixture(scope="module")
def double_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("production-doubles")
    args = []
    for cls in (*doubles.LEGITIMATE, *doubles.WRONG):
        args += ["--runtime-plugin", f"tests.doubles.production:{cls.__name__}", "--runtime", cls.name]
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", str(DOUBLE_CASE), *args, "--spec",
                           "onnx-14", "--out", str(out), "--no-ablation", "-q", "--no-entry-points",
                           "--artifacts", "full"],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    assert len(records) == len(doubles.LEGITIMATE) + len(doubles.WRONG), proc.stdout + proc.stderr
    return {r["runtime"]: r for r in records}


@pytest.mark.parametrize("cls", doubles.LEGITIMATE, ids=lambda c: c.__name__)
def test_legitimate_float32_variants_pass_and_use_the_tolerance(double_results, cls):
    record = double_results[cls.name]
    assert record["verdict"] == "pass", record["message"]
    assert record["tolerance"]["judged_by"] == "statistical"
    assert record["ratio"] >= LEAST_USED, record["ratio"]


@pytest.mark.parametrize("cls", doubles.WRONG, ids=lambda c: c.__name__)
def test_wrong_float32_variants_fail(double_results, cls):
    record = double_results[cls.name]
    assert record["verdict"] == "fail", record["message"]
    # the rigorous bound alone lets them through: the statistical one catches them
    assert record["tolerance"]["judged_by"] == "statistical"
    assert record["tolerance"]["rigorous_ratio"] < 1.0
    assert "probability below" in record["message"]


def test_the_production_size_strategy_reaches_past_the_corpus():
    from hypothesis import find
    big = find(valid_cases(Scope(limits=PRODUCTION_LIMITS)),
               lambda c: c.attributes["hidden_size"] >= 257 and c.shape["seq_length"] >= 100,
               settings=settings(max_examples=2000, database=None, suppress_health_check=list(HealthCheck)))
    assert big.attributes["hidden_size"] >= 257
