"""The unit tier's promise, checked on every test: it imports no runtime and starts no process.

A unit test that starts a subprocess, a multiprocessing worker or a fork fails (the attempt raises, and
the test fails even where the code under test catches that); one after which a runtime's module
(onnxruntime, OpenVINO, torch, the browser driver, Dask, an engine, a converter) is newly imported fails
too. `nox -s unit` runs the tier where none of them is installed at all (docs/development.md, "The test
tiers")."""

from __future__ import annotations

import multiprocessing.process
import os
import subprocess
import sys

import pytest

#: the top-level packages of the runtimes, the browser driver, Dask and the converters: none is imported here
RUNTIME_PACKAGES = frozenset({
    "onnxruntime", "openvino", "torch", "playwright", "dask", "distributed", "tract", "MNN", "iree", "tvm",
    "onnxscript", "onnxsim", "onnxconverter_common",
})


class ProcessInUnitTier(AssertionError):
    """A unit test tried to start a process."""


def _loaded_runtimes() -> set[str]:
    return {name for name in list(sys.modules) if name.split(".")[0] in RUNTIME_PACKAGES}


@pytest.fixture(autouse=True)
def _no_runtime_and_no_process(monkeypatch):
    attempts: list[str] = []

    def refuse(what):
        def start(*args, **kwargs):
            attempts.append(what)
            raise ProcessInUnitTier(f"tests/unit starts no process ({what}); the test belongs in tests/runtime")
        return start

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse("subprocess"))
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse("multiprocessing"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse(f"os.{name}"))
    before = _loaded_runtimes()
    yield
    monkeypatch.undo()
    assert not attempts, f"tests/unit starts no process, but this test tried: {attempts}"
    imported = sorted(_loaded_runtimes() - before)
    assert not imported, f"tests/unit imports no runtime, but this test imported {imported}; it belongs in tests/runtime"
