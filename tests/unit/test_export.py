"""`conformance export`.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_export.py."""

from __future__ import annotations

import numpy as np


def test_ulp_budgets_count_representable_values_across_a_binade_edge():
    from conformance.export.wpt import ulp_budgets
    one_ulp = 2.0 ** -23
    # 1.0 ± 2 ulp(1.0): above, 2 float32 values; below, where the spacing halves, 4
    assert ulp_budgets(np.array([1.0]), np.array([2 * one_ulp]), "float32").tolist() == [4]
    assert ulp_budgets(np.array([1.5]), np.array([2 * one_ulp]), "float32").tolist() == [2]
    assert ulp_budgets(np.array([0.5]), np.array([np.inf]), "float32").tolist() == [-1]
