"""What the suite's tests share: the repository's paths, the CLI as a user runs it, and the `slow`
marker on the tests that run the real runtimes, a browser or the whole corpus.

The fast loop is ``nox -s tests -- -m "not slow"`` (docs/development.md, "Developing the suite").
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
    "test_engines", "test_forms_runtimes", "test_bugreport", "test_export", "test_converters",
})

#: single tests elsewhere that run the real runtimes or sweep the oracle over many problems
SLOW_TESTS = frozenset({
    "test_no_correct_implementation_exceeds_the_bound", "test_the_bound_is_not_absurdly_loose",
    "test_correct_implementations_get_the_classes_and_stay_within_the_bound",
    "test_baseline_fails_only_on_regressions", "test_a_baseline_from_another_precision_is_not_compared_silently",
    "test_new_divergence_fails_and_expected_one_passes", "test_expectations_tolerance_override_is_used_and_named",
    "test_fixed_divergence_is_reported_and_unused_entry_warns", "test_a_run_records_features_and_gates_on_them",
    "test_a_summarised_divergence_that_becomes_new_is_run_again_with_its_detail",
    "test_the_corpus_gives_the_same_verdicts_batched_and_alone",
    "test_the_oracle_agrees_with_eager_torch_in_float64_on_every_framework_case",
})


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
        if Path(str(item.fspath)).stem in SLOW_MODULES or item.originalname in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        if guard and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(guard))


#: what a test of the plain form's machinery asks of `conformance run` and `fuzz`: the targets in the
#: default execution form (docs/forms.md); a test that names a --config chooses its own, and the forms
#: have tests of their own (tests/test_forms*.py)
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
