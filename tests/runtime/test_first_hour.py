"""A new user's first hour (issue 37).

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_first_hour.py."""

from __future__ import annotations

import re

import pytest

from tests.conftest import conformance


def test_a_k_that_selects_nothing_is_a_usage_error_naming_the_closest_ids(tmp_path):
    proc = conformance("run", "cases/gru", "-k", "revrse and clip", "--runtime", "onnx-reference", "--out",
                       tmp_path / "out", "-q")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = " ".join(proc.stderr.split())
    assert ("-k 'revrse and clip' selects none of the" in said
            and "'revrse' is in no id (did you mean 'reverse'?)" in said)
    assert re.search(r"the closest ids: gru/clip\[", said) and not (tmp_path / "out" / "results.jsonl").exists()
    listed = conformance("list", "cases/gru", "-k", "nothing-like-this")
    assert listed.returncode == 2 and "selects none of the" in listed.stderr


def test_outputs_returned_as_python_lists_are_named_so():
    from conformance.isolation.serve import _as_arrays
    with pytest.raises(TypeError, match="output 1 is a Python list, not an array"):
        _as_arrays([1.0, [[0.5]]])
    assert [a.dtype.name for a in _as_arrays([1.0, (x for x in ())][:1])] == ["float64"]
