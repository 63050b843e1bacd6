"""The run machinery on the real onnxruntime, with deliberate test doubles (tests/doubles/plugins.py) for a
crashing, hanging and known-wrong runtime.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/runtime/test_run_machinery.py."""

import os
import sys


def test_a_closed_stdout_is_told_from_an_open_one(monkeypatch):
    from conformance.cli.run import stdout_closed
    read, write = os.pipe()
    with os.fdopen(write, "w") as stream:
        monkeypatch.setattr(sys, "stdout", stream)
        assert not stdout_closed()
        os.close(read)
        assert stdout_closed()
