"""Spec-silent is not anything-goes.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_silent.py."""

from __future__ import annotations

import numpy as np

import oracles


def test_the_oracle_lists_the_plausible_readings_with_their_sources():
    rng = np.random.default_rng(1)
    t = {"X": rng.uniform(-1, 1, (3, 2, 2)).astype(np.float32), "W": rng.uniform(-1, 1, (1, 2, 2)).astype(np.float32),
         "R": rng.uniform(-1, 1, (1, 2, 2)).astype(np.float32), "sequence_lens": np.array([0, 2], np.int32),
         "initial_h": rng.uniform(-1, 1, (1, 2, 2)).astype(np.float32)}
    res = oracles.evaluate("RNN", {"hidden_size": 2}, t, cache=False)
    y_h = res.readings[0].outputs["Y_h"]
    readings = {p.name: p for p in y_h.plausible}
    assert set(readings) == {"zeros", "initial-state", "continued"}
    np.testing.assert_array_equal(readings["initial-state"].hi[0, 0], t["initial_h"][0, 0])
    assert all(p.source for p in y_h.plausible)
    y = res.readings[0].outputs["Y"]
    held = next(p for p in y.plausible if p.name == "held-state")
    np.testing.assert_array_equal(held.hi[2, 0, 1], res.readings[0].outputs["Y_h"].hi[0, 1])
    assert list(y.codes[2, 0, 1]) == ["sequence_lens.beyond_length"] * 2
    again = oracles.OracleResult.from_json(res.to_json())
    assert [p.name for p in again.readings[0].outputs["Y"].plausible] == [p.name for p in y.plausible]
