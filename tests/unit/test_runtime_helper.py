"""tests/conftest.py's `runtime`, the one way a test gets a runtime: where CONFORMANCE_REQUIRE_RUNTIMES names
a missing runtime the test fails; without it, a missing runtime skips with its reason; a present one is
returned. Module names no runtime uses stand in for the runtimes, so both sides run on any machine."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REQUIRE_RUNTIMES, required_runtimes, runtime

MISSING = "no_such_runtime_for_the_tiers_test"


def test_a_missing_runtime_skips_with_the_reason_where_none_is_required(monkeypatch):
    monkeypatch.delenv(REQUIRE_RUNTIMES, raising=False)
    with pytest.raises(pytest.skip.Exception, match="not here for this reason"):
        runtime(MISSING, "not here for this reason")
    with pytest.raises(pytest.skip.Exception, match=f"{MISSING} is not installed here"):
        runtime(MISSING)


def test_a_missing_runtime_fails_where_it_is_required(monkeypatch):
    monkeypatch.setenv(REQUIRE_RUNTIMES, f"onnxruntime, {MISSING} ,torch")
    assert required_runtimes() == {"onnxruntime", MISSING, "torch"}
    with pytest.raises(pytest.fail.Exception, match=f"{MISSING} is required here"):
        runtime(MISSING, "a reason that would have skipped")
    # a submodule of a required package counts as that package
    with pytest.raises(pytest.fail.Exception, match="is required here"):
        runtime(f"{MISSING}.submodule")


def test_a_missing_runtime_that_is_not_required_still_skips(monkeypatch):
    monkeypatch.setenv(REQUIRE_RUNTIMES, "onnxruntime,openvino,torch")
    with pytest.raises(pytest.skip.Exception, match="optional"):
        runtime(MISSING, "optional here")


def test_a_present_module_is_returned_whatever_is_required(monkeypatch):
    monkeypatch.setenv(REQUIRE_RUNTIMES, "json")
    assert runtime("json") is json
    monkeypatch.delenv(REQUIRE_RUNTIMES)
    assert runtime("json") is json and required_runtimes() == frozenset()
