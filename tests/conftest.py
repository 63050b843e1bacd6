"""What the suite's tests share: the repository's paths, the CLI as a user runs it, and the `slow`
marker on the tests that run the real runtimes, a browser or the whole corpus.

The fast loop is ``nox -s tests -- -m "not slow"`` (README: Development).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"

#: the modules whose tests run real runtimes over many cases, drive Chromium, or run the CLI on the
#: corpus: every test in them is `slow` (a test elsewhere can mark itself)
SLOW_MODULES = frozenset({
    "test_ablation", "test_directml", "test_effective", "test_fuzz", "test_hostile", "test_html_report",
    "test_onnx_translation", "test_openvino_ir", "test_run_machinery", "test_silent", "test_tolerance",
    "test_torch", "test_wrong_implementations", "test_onnx_node_tests", "test_webnn", "test_production",
})


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).stem in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


def conformance(*args, env=None, check=None, timeout=600) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess, from the repository's root, as a user runs it; ``check`` is the
    exit status it must give (the output is shown when it does not)."""
    full_env = dict(os.environ, PYTHONPATH=str(ROOT))
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "conformance", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, env=full_env, timeout=timeout, check=False)
    if check is not None:
        assert proc.returncode == check, proc.stdout + proc.stderr
    return proc
