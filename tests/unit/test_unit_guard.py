"""tests/unit/conftest.py's guard, the unit tier's promise: a unit test that starts a process, or after which a
runtime's module is newly imported, fails, even where the code under test caught the refusal."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from tests.unit.conftest import RUNTIME_PACKAGES, ProcessInUnitTier, _no_runtime_and_no_process


def test_a_process_is_refused_and_a_caught_refusal_still_fails_the_test():
    with pytest.raises(ProcessInUnitTier, match=r"tried: \['subprocess'\]"):
        with _no_runtime_and_no_process():
            try:
                subprocess.run(["true"], check=False)
            except ProcessInUnitTier:
                pass   # the code under test swallowed it: the guard fails the test all the same


def test_a_newly_imported_runtime_fails_the_test():
    # a runtime not imported in this process (in a whole-suite run the runtime tier has imported the others)
    name = next(n for n in sorted(RUNTIME_PACKAGES) if n not in sys.modules)
    with pytest.raises(ProcessInUnitTier, match=rf"imported \['{name}'\]"):
        with _no_runtime_and_no_process():
            sys.modules[name] = types.ModuleType(name)   # what `import {name}` leaves behind
    del sys.modules[name]


def test_a_test_that_starts_nothing_and_imports_no_runtime_passes():
    with _no_runtime_and_no_process():
        assert sum(range(4)) == 6
