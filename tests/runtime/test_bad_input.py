"""Bad input gets a clear error and loses nothing.

This module holds the runtime tier's tests of it (the real runtimes or worker processes); the others:
tests/unit/test_bad_input.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import pytest

from conformance.case import load_file, load_paths
from tests.calibration import budget
from tests.conftest import DATA, ROOT, conformance
from tests.unit.test_bad_input import BAD, GOOD, _write


def _conformance_within(seconds: float, *args):
    """The CLI as tests.conftest.conformance() runs it, bounded (a hang fails the test
    instead of hanging the suite) by `seconds` on an idle machine, scaled by its load now."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "conformance", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=budget(seconds), check=False)


def test_the_shipped_bad_distribution_file_lists_as_an_error():
    proc = conformance("list", BAD / "infinite_distribution.yaml", check=2)
    assert f"{BAD / 'infinite_distribution.yaml'}:6: inputs.distribution: cannot draw" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_list_never_builds_tensors_and_the_flags_raise_the_limits():
    """hidden_size 1e6 has 3e12 elements in R: listed only because nothing is built."""
    path = BAD / "huge_hidden.yaml"
    refused = conformance("list", path, check=2)
    assert f"{path}:4: attributes.hidden_size:" in refused.stderr and "--max-elements" in refused.stderr
    listed = conformance("list", path, "--max-elements", 10 ** 13, "--max-macs", 10 ** 15, check=0)
    assert listed.stdout.startswith("gru/huge_hidden\tvalid\t"), listed.stdout
    tight = conformance("list", DATA / "cases", "--max-elements", 10, check=2)
    assert "over the limit of 10 elements (--max-elements)" in tight.stderr


def test_run_takes_the_limit_flags_and_reports_the_cases_over_them(tmp_path):
    conformance("run", DATA / "cases", "-k", "small and forward", "--spec", "onnx-14", "--runtime", "onnxruntime",
                "--out", tmp_path / "o", "-q", "--no-ablation", "--max-macs", 100, check=2)
    errors = json.loads((tmp_path / "o" / "load_errors.json").read_text())
    assert errors and all("over the limit of 100 (--max-macs)" in e["message"] for e in errors)


def test_an_alias_bomb_is_refused_quickly_with_its_line():
    """Refused before it is expanded: measured by what it allocated, not by the clock (an expanded
    "billion laughs" holds gigabytes; a refusal at the node limit holds what reading the file takes)."""
    tracemalloc.start()
    try:
        cases, (err,) = load_file(BAD / "alias_bomb.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"{peak / 2**20:.0f} MiB allocated to refuse it"
    assert not cases and err.where.line == 7 and "1,000,000 YAML nodes" in str(err) and "limit" in str(err)
    proc = _conformance_within(60, "list", BAD / "alias_bomb.yaml")
    assert proc.returncode == 2 and f"{BAD / 'alias_bomb.yaml'}:7:" in proc.stderr


def test_a_fifo_named_yaml_does_not_hang_list_or_run(tmp_path):
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "gru").mkdir()
    (folder / "gru" / "small.yaml").write_text((DATA / "cases" / "gru" / "small.yaml").read_text())
    os.mkfifo(folder / "gru" / "pipe.yaml")
    listed = _conformance_within(60, "list", folder)
    assert listed.returncode == 2  # a bad file: its file:line, and the others' cases still listed
    assert f"{folder / 'gru' / 'pipe.yaml'}:1: a FIFO (named pipe), not a regular file: skipped" in listed.stderr
    assert "gru/small[direction=forward]" in listed.stdout
    ran = _conformance_within(300, "run", folder, "-k", "forward", "--spec", "onnx-14", "--runtime", "onnxruntime",
                              "--out", tmp_path / "out", "-q", "--no-ablation")
    assert ran.returncode == 2, ran.stdout + ran.stderr  # the good file's pairs all ran and passed
    errors = json.loads((tmp_path / "out" / "load_errors.json").read_text())
    assert [e["line"] for e in errors] == [1] and "FIFO" in errors[0]["message"]
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert {r["verdict"] for r in records} == {"pass"} and records


def test_a_file_named_twice_or_inside_a_named_folder_is_loaded_once():
    one = load_paths([ROOT / "cases" / "gru" / "basic.yaml"])[0]
    for paths in ([ROOT / "cases" / "gru" / "basic.yaml"] * 2,
                  [ROOT / "cases" / "gru", ROOT / "cases" / "gru" / "basic.yaml"]):
        cases, errors = load_paths(paths)
        assert errors == [] and {c.id for c in one} <= {c.id for c in cases}
    proc = conformance("list", "cases/gru/basic.yaml", "cases/gru/basic.yaml", check=0)
    assert len(proc.stdout.splitlines()) == len(one) and "also made by" not in proc.stderr


def test_a_symlink_to_passwd_does_not_echo_it(tmp_path):
    passwd = Path("/etc/passwd")
    if not passwd.is_file():
        pytest.skip("no /etc/passwd here")
    (tmp_path / "x.yaml").symlink_to(passwd)
    first = passwd.read_text(errors="replace").splitlines()[0]
    proc = conformance("list", tmp_path / "x.yaml", check=2)
    assert first not in proc.stdout + proc.stderr


def test_a_malformed_expectations_file_is_a_usage_error_on_the_command_line(tmp_path):
    path = _write(tmp_path, "exp.yaml", 'entries:\n  - cases: 5\n    kind: known-bug\n    reason: r\n')
    proc = conformance("run", DATA / "cases", "--spec", "onnx-14", "--runtime", "onnxruntime", "--out", tmp_path / "o",
                       "--expectations", path, "-q", check=2)
    assert f"{path}:2: entries.0.cases: 5 is an integer" in proc.stderr and "Traceback" not in proc.stderr


def test_a_glob_with_many_stars_does_not_backtrack():
    code = textwrap.dedent("""
        import time
        from conformance.gate import glob_to_regex
        glob = glob_to_regex("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b")
        def took(n):   # the best of 5: the matcher's own time, not the machine's load
            best = float("inf")
            for _ in range(5):
                start = time.perf_counter()
                assert not glob.match("a" * n) and glob.match("a" * n + "b")
                best = min(best, time.perf_counter() - start)
            return best
        print(took(50_000) / max(took(5_000), 1e-6))
    """)
    # a backtracking matcher never finishes on 5,000 characters (16 stars: ~5000**16 steps); a
    # linear one takes ten times as long on ten times the text (a quadratic one, a hundred times)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), check=False)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) < 40, proc.stdout


def test_a_bad_baseline_is_a_usage_error_and_skipped_lines_are_warned_of(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("[1, 2]\n")
    args = ["run", DATA / "cases", "-k", "small and forward", "--spec", "onnx-14", "--runtime", "onnxruntime", "-q",
            "--no-ablation"]
    proc = conformance(*args, "--out", tmp_path / "a", "--baseline", bad, check=2)
    assert f"{bad}:1: not a baseline: a JSON list" in proc.stderr and "Traceback" not in proc.stderr
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("garbage\nmore garbage\n" + GOOD + "\n")
    proc = conformance(*args, "--out", tmp_path / "b", "--baseline", mixed, check=0)
    assert f"warning: {mixed}: 2 line(s) that are not results skipped (the first at line 1)" in proc.stdout


def test_a_plugin_in_the_current_folder_loads_without_pythonpath(tmp_path):
    (tmp_path / "my_rt_plugin.py").write_text(textwrap.dedent("""
        import onnxruntime as ort

        class MyRuntime:
            name = "my-rt"
            format = "onnx"
            version = "1.0"

            def run(self, model, feeds):
                session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
                return session.run(None, feeds)
    """))
    script = Path(sys.executable).parent / "conformance"   # the console script: no cwd on sys.path
    if not script.exists():
        pytest.skip("the conformance console script is not installed beside this interpreter")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(script), "run", DATA / "cases", "-k", "small", "--spec", "onnx-14",
                           "--runtime", "my-rt", "--runtime-plugin", "my_rt_plugin:MyRuntime",
                           "--out", tmp_path / "out", "-q", "--no-ablation"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 and {r["verdict"] for r in records} == {"pass"}
    assert {r["runtime"] for r in records} == {"my-rt"}
