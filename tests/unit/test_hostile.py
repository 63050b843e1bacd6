"""Nothing a runtime returns, and nothing a runtime does to its own process, can crash a run, hang it, pass a
wrong result, or change another runtime's verdicts; and a run owns what it starts.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_hostile.py."""

from __future__ import annotations

import os

import numpy as np
import pytest

from conformance.files import Busy, OutLock, write_atomic


def test_a_runtime_killed_for_its_memory_is_a_memory_limit_crash_even_when_its_timeout_is_also_past():
    """The pool reads a worker's memory before it calls a late worker a timeout: a runaway that a
    slow poll catches only after its deadline is still named for its memory (tests the order of the
    checks with a worker double, not a race)."""
    from conformance.isolation.jobs import late_verdict
    assert late_verdict(held=3 << 30, limit=1 << 30, timeout=4)[0] == "crash"
    assert "memory limit" in late_verdict(held=3 << 30, limit=1 << 30, timeout=4)[1]
    assert late_verdict(held=100 << 20, limit=1 << 30, timeout=4) == ("timeout", "no answer within 4 s; worker killed")
    assert late_verdict(held=None, limit=1 << 30, timeout=4)[0] == "timeout"


def test_a_stale_lock_of_a_killed_run_is_taken_over(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".conformance.lock").write_text("999999\n")  # a run that died: its lock file, no lock
    with OutLock(out):
        with pytest.raises(Busy, match=f"PID {os.getpid()}"):
            OutLock(out).acquire()
    again = OutLock(out).acquire()
    again.release()


def test_a_report_file_gets_the_permissions_a_plain_write_gives(tmp_path):
    """A report written atomically is as readable as one open() writes (mkstemp makes files 0600)."""
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    written = write_atomic(tmp_path / "index.html", "<html>")
    assert written.stat().st_mode & 0o777 == plain.stat().st_mode & 0o777


def test_a_report_file_is_whole_or_absent(tmp_path, monkeypatch):
    path = tmp_path / "clusters.json"
    write_atomic(path, "[1]")

    def broken(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(Exception, match="No space left on device"):
        write_atomic(path, "[2, 3]")
    assert path.read_text() == "[1]"
    assert [p.name for p in tmp_path.iterdir()] == ["clusters.json"]  # no temporary left behind


def test_outputs_are_judged_by_their_type_before_their_values():
    from types import SimpleNamespace

    from conformance.compare.verdict import _wrong_type
    case = SimpleNamespace(dtype="float32")
    assert _wrong_type(case, ["Y"], [np.zeros(2, np.float64)]) == "Y has dtype float64, but should be float32"
    assert _wrong_type(case, ["Y"], [np.zeros(2, np.complex64) + 1j]).startswith("Y has dtype complex64")
    assert _wrong_type(case, ["Y", "Y_h"], [np.zeros(2, np.float32), np.array(["a"])]).startswith("Y_h has dtype str")
    assert _wrong_type(case, ["Y"], [np.zeros(2, np.float32)]) == ""
