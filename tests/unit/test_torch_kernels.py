"""The test doubles of torch's CUDA kernels (tests/doubles/torch_kernels.py) checked as doubles: the
cuDNN-like activations have the measured error distribution, a device-side assert poisons every later
call of StickyCuda in the process, and each double declares what it computes in. In-process, numpy only
(the doubles import no torch).

The doubles against eager torch and through the suite: tests/runtime/test_torch_kernels.py (a sample),
tests/corpus/test_torch_kernels.py (the corpus)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

import tests.doubles.torch_kernels as kernels
from conformance.case import load_file
from conformance.specs import SPECS, NotExpressible
from tests.conftest import ROOT

#: the measurement the doubles imitate (NVIDIA H200, torch 2.11.0+cu130, cuDNN 9.19.0): over 8192 points
#: in [-4, 4], cuDNN's tanh up to 125 float32 ulps off (median 13, 6656 points beyond 2 ulps), its sigmoid
#: within about 4 ulps (median 0.46)
POINTS = np.linspace(-4, 4, 8192, dtype=np.float32)


def ulps(got: np.ndarray, function) -> np.ndarray:
    """|got - f(x)| in float32 ulps of the exact f(x) (mpmath at 80 bits), over POINTS."""
    with mpmath.workprec(80):
        exact = np.array([float(function(mpmath.mpf(float(x)))) for x in POINTS])
    return np.abs(got.astype(np.float64) - exact) / np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)


def test_the_cudnn_like_tanh_and_sigmoid_have_the_measured_errors():
    tanh = ulps(kernels.cudnn_like(POINTS, "tanh"), mpmath.tanh)
    assert tanh.max() <= 125 and 11 <= np.median(tanh) <= 15, (tanh.max(), np.median(tanh))
    assert 0.75 * POINTS.size <= (tanh > 2).sum() <= 0.87 * POINTS.size, (tanh > 2).sum()  # measured: 6656
    sigmoid = ulps(kernels.cudnn_like(POINTS, "sigmoid"), lambda x: 1 / (1 + mpmath.exp(-x)))
    assert sigmoid.max() <= 4.1 and 0.35 <= np.median(sigmoid) <= 0.55, (sigmoid.max(), np.median(sigmoid))
    # the doubles' float32 activations are within the spec bound's 4 ulps
    assert ulps(np.tanh(POINTS), mpmath.tanh).max() <= 2
    assert ulps(kernels.sigmoid32(POINTS), lambda x: 1 / (1 + mpmath.exp(-x))).max() <= 4


def test_the_error_is_a_function_of_the_input_alone():
    x = POINTS[::7].copy()
    once = kernels.cudnn_like(x, "tanh")
    shuffled = np.random.default_rng(0).permutation(x.size)
    assert np.array_equal(kernels.cudnn_like(x[shuffled], "tanh"), once[shuffled])
    assert all(kernels.cudnn_like(np.float32(v), "tanh") == w for v, w in zip(x[:20], once[:20]))
    special = np.array([np.nan, np.inf, -np.inf], np.float32)
    assert np.array_equal(kernels.cudnn_like(special, "tanh"), [np.nan, 1, -1], equal_nan=True)
    assert np.array_equal(kernels.cudnn_like(special, "sigmoid"), [np.nan, 1, 0], equal_nan=True)
    assert np.all(np.abs(kernels.cudnn_like(np.linspace(-30, 30, 999, dtype=np.float32), "tanh")) <= 1)


def program(tmp_path, path: str, case_id: str | None = None):
    """(model path, feeds) of the torch program of the case (the first one torch expresses, or ``case_id``)."""
    cases, errors = load_file(ROOT / path)
    assert not errors, errors
    for case in cases:
        prog = SPECS["torch"].translate(case)
        if not isinstance(prog, NotExpressible) and case_id in (None, case.id):
            folder = tmp_path / f"program{len(list(tmp_path.iterdir()))}"
            folder.mkdir()
            SPECS["torch"].write(prog, folder)
            return prog.runtime_input(), prog.feeds
    raise AssertionError(f"no torch program in {path} ({case_id})")


def test_a_device_side_assert_poisons_every_later_call_in_the_process(tmp_path, monkeypatch):
    monkeypatch.setitem(kernels._CONTEXT, "error", None)  # a fresh process; put back after the test
    good = program(tmp_path, "cases/torch/combinations.yaml")
    crash = program(tmp_path, "cases/regressions/lstm-torch-crash-0d5f70bf.yaml")
    wrong_batch = program(tmp_path, "cases/invalid/lstm/initial_h_shape.yaml",
                          'invalid/lstm/initial_h_shape[initial_h={"shape":[1,2,3]}]')
    sticky, exact = kernels.StickyCuda(), kernels.Exact()
    expected = exact.run(*good)
    assert all(np.array_equal(a, b) for a, b in zip(sticky.run(*good), expected))
    with pytest.raises(RuntimeError, match="Expected hidden") as refused:   # the correct double refuses it
        exact.run(*crash)
    assert not isinstance(refused.value, kernels.AcceleratorError)
    with pytest.raises(RuntimeError, match="Expected hidden"):              # a wrong batch: torch's own check
        sticky.run(*wrong_batch)
    assert all(np.array_equal(a, b) for a, b in zip(sticky.run(*good), expected))  # nothing poisoned yet
    with pytest.raises(kernels.AcceleratorError, match="device-side assert triggered"):
        sticky.run(*crash)
    for runtime in (sticky, kernels.StickyCuda()):  # every later call, of any instance in the process
        with pytest.raises(RuntimeError, match="CUDA error: device-side assert triggered"):
            runtime.run(*good)
    assert all(np.array_equal(a, b) for a, b in zip(exact.run(*good), expected))  # another runtime is sound


def test_each_double_declares_what_it_computes_in_and_differs_where_it_should(tmp_path):
    float32 = program(tmp_path, "cases/torch/combinations.yaml")
    float64 = program(tmp_path, "cases/torch/dtypes.yaml", "torch/dtypes[dtype=float64]")
    exact = kernels.Exact().run(*float32)
    for cls in kernels.DOUBLES:
        runtime = cls()
        got = runtime.run(*float32)
        assert runtime.effective().get("precision") == ("tf32" if cls.tf32 else None), cls.__name__
        assert runtime.effective()["cudnn.allow_tf32"] is cls.tf32
        same = all(np.array_equal(a, b) for a, b in zip(got, exact))
        assert same is (cls in (kernels.Exact, kernels.StickyCuda)), cls.__name__
        assert cls.format == "torch" and "test double" in cls.description, cls.__name__
        runtime.run(*float64)  # a float64 program computes in float64 in every double, and declares nothing
        assert "precision" not in runtime.effective(), cls.__name__
    assert all("test double" in (cls.__doc__ or "") or "Test double" in (cls.__doc__ or "") for cls in kernels.DOUBLES)
