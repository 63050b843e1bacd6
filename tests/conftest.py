"""What the suite's tests share: the repository's paths, the CLI as a user runs it, and :func:`runtime`,
the one way a test gets a runtime (a missing one fails where CI says it must be present).

The tiers (docs/development.md, "The test tiers"): tests/unit (no runtime, no subprocess; the fast
loop), tests/runtime (the real runtimes and the worker processes), tests/corpus (the whole corpus and
the end-to-end runs). The test doubles are in tests/doubles/.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"

#: names the runtimes that must be present (comma-separated: ``onnxruntime,openvino,torch``); `nox -s tests`,
#: which installs them, sets it. A test that needs one of them then fails where it is missing, instead of
#: skipping: a broken install is not a green run
REQUIRE_RUNTIMES = "CONFORMANCE_REQUIRE_RUNTIMES"


def required_runtimes() -> frozenset[str]:
    """The runtimes :data:`REQUIRE_RUNTIMES` says must be present here (none where it is unset)."""
    return frozenset(name.strip() for name in os.environ.get(REQUIRE_RUNTIMES, "").split(",") if name.strip())


def runtime(name: str, reason: str | None = None) -> ModuleType:
    """The runtime module ``name`` (``onnxruntime``, ``openvino``, ``torch``, ``distributed``, an engine's
    module...), imported: the one way a test gets a runtime, in a test or at a module's top. Where it cannot
    be imported the test fails when :data:`REQUIRE_RUNTIMES` names it (its top-level package), and skips
    with ``reason`` (or the import error) otherwise."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if name.split(".")[0] in required_runtimes():
            pytest.fail(f"{name} is required here ({REQUIRE_RUNTIMES}={os.environ[REQUIRE_RUNTIMES]}) but cannot "
                        f"be imported: {exc}", pytrace=False)
        pytest.skip(reason or f"{name} is not installed here ({exc})", allow_module_level=True)


@pytest.fixture(autouse=True, scope="session")
def _own_case_cache(tmp_path_factory):
    """The tests (and the CLI they run) read and write a case cache of their own, not the user's:
    their temporary case files would pile up there (docs/startup.md). CONFORMANCE_CASE_CACHE, where
    set, wins."""
    if os.environ.get("CONFORMANCE_CASE_CACHE"):
        yield
        return
    patch = pytest.MonkeyPatch()
    patch.setenv("CONFORMANCE_CASE_CACHE", str(tmp_path_factory.mktemp("case-cache")))
    yield
    patch.undo()


def pytest_collection_modifyitems(config, items):
    # the hang guard (pytest-timeout, pyproject.toml) is a bound on a hang, not a speed test: scaled
    # by how loaded the machine is as the session starts (tests/calibration.py)
    from tests.calibration import slowdown
    guard = float(config.getini("timeout") or 0) * slowdown() if config.pluginmanager.hasplugin("timeout") else 0
    for item in items:
        if guard and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(guard))


#: what a test of the plain form's machinery asks of `conformance run` and `fuzz`: the targets in the
#: default execution form (docs/forms.md); a test that names a --config chooses its own, and the forms
#: have tests of their own (tests/*/test_forms*.py)
PLAIN_FORM = ("--config", "forms=default")


def conformance(*args, env=None, check=None, timeout=600) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess, from the repository's root, as a user runs it; ``check`` is the
    exit status it must give (the output is shown when it does not). ``run`` and ``fuzz`` without a
    ``--config`` run the plain targets (:data:`PLAIN_FORM`). ``timeout`` bounds a hang: its seconds on
    an idle machine, scaled by the load now (tests/calibration.py)."""
    from tests.calibration import budget
    full_env = dict(os.environ, PYTHONPATH=str(ROOT))
    full_env.update(env or {})
    args = tuple(args)
    if args and args[0] in ("run", "fuzz") and "--config" not in args:
        args += PLAIN_FORM
    proc = subprocess.run([sys.executable, "-m", "conformance", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, env=full_env, timeout=budget(timeout), check=False)
    if check is not None:
        assert proc.returncode == check, proc.stdout + proc.stderr
    return proc
