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
from contextlib import contextmanager

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


@contextmanager
def _no_runtime_and_no_process():
    """Refuses every way of starting a process while it is open; fails when one was tried (even where the
    code under test caught the refusal) or when a runtime's module was newly imported."""
    attempts: list[str] = []

    def refuse(what):
        def start(*args, **kwargs):
            attempts.append(what)
            raise ProcessInUnitTier(f"tests/unit starts no process ({what}); the test belongs in tests/runtime")
        return start

    patch = pytest.MonkeyPatch()
    patch.setattr(subprocess.Popen, "_execute_child", refuse("subprocess"))
    patch.setattr(multiprocessing.process.BaseProcess, "start", refuse("multiprocessing"))
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve"):
        if hasattr(os, name):
            patch.setattr(os, name, refuse(f"os.{name}"))
    before = _loaded_runtimes()
    try:
        yield
    finally:
        patch.undo()
    if attempts:
        raise ProcessInUnitTier(f"tests/unit starts no process, but this test (or its fixtures) tried: {attempts}")
    imported = sorted(_loaded_runtimes() - before)
    if imported:
        raise ProcessInUnitTier(f"tests/unit imports no runtime, but this test (or its fixtures) imported {imported}; "
                                "it belongs in tests/runtime")


# each phase of a unit test, its fixtures of every scope included (a module's fixture is set up within the
# setup of its first test): hooks of this conftest apply to the tests under tests/unit only
@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    with _no_runtime_and_no_process():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with _no_runtime_and_no_process():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    with _no_runtime_and_no_process():
        return (yield)
