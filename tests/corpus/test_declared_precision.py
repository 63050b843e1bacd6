"""The judgement of a target that computes in a narrower precision than its model's type (the record's
``declared``).

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/runtime/test_declared_precision.py, tests/unit/test_declared_precision.py."""

from __future__ import annotations

import numpy as np
import pytest

import tests.doubles.precision as doubles
from tests.runtime.test_declared_precision import SWEEP_TIMEOUT, _failing, _sweep

# -- the corpus, as issue 33 asks ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus():
    return _sweep((*doubles.LEGITIMATE, *doubles.LEGITIMATE_F16, doubles.Tf32, doubles.PartialSumsBf16,
                   *doubles.WRONG))




@pytest.mark.timeout(SWEEP_TIMEOUT)
@pytest.mark.parametrize("cls", [*doubles.LEGITIMATE, *doubles.LEGITIMATE_F16, doubles.Tf32, doubles.PartialSumsBf16],
                         ids=lambda c: c.__name__)
def test_legitimate_reduced_precision_kernels_raise_no_false_alarm_on_the_corpus(corpus, cls):
    rows = corpus[cls]
    assert len(rows) > 600
    assert not _failing(rows, affected_only=False), _failing(rows, affected_only=False)[:5]
    ratios = np.array([r[2] for r in rows if r[2] is not None])
    assert np.median(ratios) > 0.02  # a visible part of the bound is used: it is not vacuous


@pytest.mark.timeout(SWEEP_TIMEOUT)
def test_a_tanh_three_percent_off_fails_most_affected_pairs_and_one_percent_some(corpus):
    for cls, share in ((doubles.TanhOff3Bf16, 0.5), (doubles.TanhOff1Bf16, 0.02), (doubles.TanhOffHalfF16, 0.5),
                       (doubles.TanhOff1Tf32, 0.5)):
        affected = [r for r in corpus[cls] if r[3]]
        assert len(_failing(affected)) > share * len(affected), (cls.__name__, len(_failing(affected)), len(affected))


@pytest.mark.timeout(SWEEP_TIMEOUT)
def test_a_sigmoid_two_percent_off_and_a_state_scaled_per_step_fail(corpus):
    assert len(_failing(corpus[doubles.SigmoidOff2Bf16])) >= 10
    assert _failing(corpus[doubles.StateScaledBf16])
