"""Start-up.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_startup_cache.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conformance.case import cache as case_cache
from tests.conftest import DATA, ROOT, conformance
from tests.unit.test_startup_cache import shutil_copy


def test_the_command_line_reports_a_bad_file_the_same_with_a_warm_cache(tmp_path):
    folder = tmp_path / "cases" / "gru"
    shutil_copy(DATA / "cases" / "gru", folder)
    (folder / "broken.yaml").write_bytes((DATA / "bad" / "broken.yaml").read_bytes())
    off = conformance("list", tmp_path / "cases", env={case_cache.ENV: "off"})
    env = {case_cache.ENV: str(tmp_path / "case-cache")}
    cold, warm = conformance("list", tmp_path / "cases", env=env), conformance("list", tmp_path / "cases", env=env)
    assert off.returncode == cold.returncode == warm.returncode == 2
    assert off.stdout == cold.stdout == warm.stdout and off.stderr == cold.stderr == warm.stderr
    assert f"{folder / 'broken.yaml'}:4:" in warm.stderr


def test_runtimes_whose_targets_depend_on_the_machine_are_never_kept():
    from conformance.runtimes import BUILTIN
    from conformance.runtimes.discovery import PACKAGE_DETERMINED, _entry
    assert set(PACKAGE_DETERMINED) <= set(BUILTIN)
    for module in ("conformance.runtimes.openvino", "conformance.runtimes.openvino_ir",
                   "conformance.runtimes.openvino_memory", "conformance.runtimes.torch", "conformance.runtimes.webnn",
                   "conformance.runtimes.onnxruntime_gpu"):
        assert module not in PACKAGE_DETERMINED and _entry(module, {"onnx": ["onnx-14"]}) is None


def _imported(code: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_worker_and_a_discovery_process_do_not_import_the_engine():
    for code in ("import conformance.isolation.serve", "import conformance.runtimes.discovery",
                 "import conformance.isolation.processes"):
        loaded = _imported(code)
        assert not {"conformance.run.engine", "conformance.cli", "oracles", "jsonschema"} & loaded, code
    from conformance.run import Engine, Pool  # the package's names still import, when used
    assert Engine.__module__ == "conformance.run.engine" and Pool.__module__ == "conformance.isolation.workers"


def test_a_warm_case_cache_imports_no_jsonschema(tmp_path):
    env = f"import os; os.environ['{case_cache.ENV}'] = {str(tmp_path)!r}\n"
    _imported(env + "from conformance.case.load import load_file; "
              f"load_file({str(DATA / 'cases' / 'gru' / 'small.yaml')!r})")
    assert "jsonschema" not in _imported(
        env + "from conformance.case.load import load_file; "
        f"assert load_file({str(DATA / 'cases' / 'gru' / 'small.yaml')!r})[0]")


def test_a_package_determined_runtime_is_found_once_per_install(tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    from conformance.runtimes import discovery
    from conformance.selection import specs_by_format
    monkeypatch.setenv(discovery.CACHE_ENV, str(tmp_path / "discovery"))
    formats = specs_by_format(("onnx-14",))
    first, gaps = discovery.discover(formats, use_entry_points=False, runtimes=("onnx-reference",))
    assert first and len(list((tmp_path / "discovery").glob("*.pickle"))) == 1
    import conformance.isolation.processes as processes
    monkeypatch.setattr(processes, "isolated", lambda *a, **k: pytest.fail("discovered again, not recalled"))
    again, gaps_again = discovery.discover(formats, use_entry_points=False, runtimes=("onnx-reference",))
    assert [t.id for t in again] == [t.id for t in first] and gaps_again == gaps
    assert [(t.ref, t.load_output, t.description) for t in again] == [(t.ref, t.load_output, t.description)
                                                                       for t in first]
    # another spec selection is another entry
    assert discovery._entry("conformance.runtimes.reference", specs_by_format(("onnx-7",))) != \
        discovery._entry("conformance.runtimes.reference", formats)


def test_a_corrupt_discovery_entry_is_found_again(tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    from conformance.runtimes import discovery
    from conformance.selection import specs_by_format
    monkeypatch.setenv(discovery.CACHE_ENV, str(tmp_path / "discovery"))
    formats = specs_by_format(("onnx-14",))
    first, _ = discovery.discover(formats, use_entry_points=False, runtimes=("onnx-reference",))
    (entry,) = (tmp_path / "discovery").glob("*.pickle")
    entry.write_bytes(entry.read_bytes()[:40])
    again, _ = discovery.discover(formats, use_entry_points=False, runtimes=("onnx-reference",))
    assert [t.id for t in again] == [t.id for t in first] and discovery._recall(entry)
