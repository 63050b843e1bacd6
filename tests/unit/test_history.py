"""`conformance history` on a small synthetic history without network access.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/test_history.py."""

from __future__ import annotations

from conformance.case import load_paths
from conformance.history.corpus import representative
from conformance.history.environments import import_problem
from conformance.history.versions import installable
from tests.conftest import ROOT


def test_installable_keeps_final_releases_with_a_wheel_for_this_interpreter():
    from packaging.tags import sys_tags
    tag = next(iter(sys_tags()))
    here = f"pkg-1.0-{tag.interpreter}-{tag.abi}-{tag.platform}.whl"
    releases = {"1.0": [{"filename": here}], "1.1": [{"filename": "pkg-1.1-cp27-cp27m-win32.whl"}],
                "1.2rc1": [{"filename": here.replace("1.0", "1.2rc1")}], "1.3": [{"filename": "pkg-1.3.tar.gz"}],
                "1.4": [{"filename": here.replace("1.0", "1.4"), "yanked": True}]}
    assert installable(releases) == ["1.0"]


def test_the_representative_subset_keeps_every_op_and_feature_class():
    from conformance.case.features import features
    chosen = representative(ROOT / "cases")
    every = sorted(p for p in (ROOT / "cases").rglob("*.yaml") if "production" not in p.parts)
    assert 0 < len(chosen) < len(every)
    assert all("production" not in p.parts for p in chosen)

    def classes(paths):
        cases, _ = load_paths(paths)
        return {(c.op, token) for c in cases for token in features(c)}, len(cases)
    kept, kept_cases = classes(chosen)
    corpus, corpus_cases = classes(every)
    assert kept == corpus
    assert kept_cases < 0.75 * corpus_cases
    stems = {p.stem for op in ("rnn", "gru", "lstm") for p in (ROOT / "cases" / op).glob("*.yaml")}
    assert stems <= {p.stem for p in chosen}  # one file per feature class at least
    assert ROOT / "cases" / "lstm" / "activation_defaults.yaml" in chosen
    assert representative(ROOT / "cases") == chosen  # deterministic


def test_arrays_cross_the_pipe_bit_exact_bfloat16_included():
    import ml_dtypes
    import numpy as np

    from conformance.history.remote import pack, unpack
    for arr in (np.array([[1.5, -0.0, np.nan]], np.float32), np.arange(6, dtype=np.float16).reshape(2, 3),
                np.array([1.0, 3.140625, -2.5e-3], dtype=ml_dtypes.bfloat16), np.array([4, 2], np.int32)):
        back = unpack(pack(arr))
        assert back.dtype == arr.dtype and back.shape == arr.shape
        assert back.tobytes() == arr.tobytes()


#: what `import onnxruntime` printed for onnxruntime 1.15.0 (built against numpy 1) under numpy 2.4.6,
#: exit status 0 (measured on this project's machine)
ORT_115_UNDER_NUMPY_2 = """\
A module that was compiled using NumPy 1.x cannot be run in
NumPy 2.4.6 as it may crash. To support both 1.x and 2.x
versions of NumPy, modules must be compiled with NumPy 2.0.

Traceback (most recent call last):  File "<string>", line 1, in <module>
  File "/x/onnxruntime/capi/_pybind_state.py", line 33, in <module>
    from .onnxruntime_pybind11_state import *  # noqa
AttributeError: _ARRAY_API not found
ImportError: numpy.core.multiarray failed to import

The above exception was the direct cause of the following exception:

SystemError: <built-in function __import__> returned a result with an exception set
"""


def test_an_import_that_prints_a_system_error_fails_the_import_check():
    problem = import_problem(0, ORT_115_UNDER_NUMPY_2)
    assert problem.startswith("the import printed SystemError: <built-in function __import__>")
    assert "compiled using NumPy 1.x" in problem
    assert import_problem(0, "UserWarning: something harmless\n") == ""
    assert import_problem(1, "Traceback ...\nImportError: libfoo.so: cannot open") == (
        "ImportError: libfoo.so: cannot open")
