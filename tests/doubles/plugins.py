"""Deliberate test doubles for the suite's own machinery, named as such. None of them is a runtime
under test: each wraps onnxruntime to compute a *known-wrong* answer, or crashes, or hangs."""

from __future__ import annotations

import ctypes
import time

import numpy as np
import onnx

from tests.doubles.bugreport import SwappedGateGRU


def _ort_run(model: onnx.ModelProto, feeds):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 4
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"]).run(None, feeds)


class WrongGateOrderGRU(SwappedGateGRU):
    """Known-wrong GRU: swaps the z and r gate blocks of W, R and B before running (a gate-order bug)."""

    name = "wrong-gru-gate-order"


class Segfault:
    """Crashes the process with a real segmentation fault on every run."""

    name = "segfault"
    format = "onnx"

    def run(self, model: bytes, feeds):
        ctypes.string_at(0)


class Echo:
    """Test double for the pool's own machinery: prints (through libc, as native code does) the
    model it was given, sleeps a little so that the next job is sent ahead, returns it as an array,
    and segfaults on ``b"crash"``."""

    name = "echo"
    format = "onnx"

    def run(self, model: bytes, feeds):
        line = b"echo " + model + b"\n"
        ctypes.CDLL(None).write(1, line, len(line))
        time.sleep(0.05)
        if model == b"crash":
            ctypes.string_at(0)
        return [np.frombuffer(model, dtype=np.uint8).copy()]


class Hang:
    """Never answers."""

    name = "hang"
    format = "onnx"

    def run(self, model: bytes, feeds):
        while True:
            time.sleep(1)


class OnlyOnce:
    """onnxruntime that records each call, to check that a resumed run does not redo finished pairs.

    It can be held, so a test knows what a run has done when it acts, without racing it: while the
    file ``CONFORMANCE_TEST_HOLD`` exists, a call waits, once ``CONFORMANCE_TEST_HOLD_AFTER`` calls
    (default 0) are recorded in ``CONFORMANCE_TEST_CALLS``."""

    name = "counting-ort"
    format = "onnx"

    def run(self, model: bytes, feeds):
        import os
        path = os.environ.get("CONFORMANCE_TEST_CALLS")
        hold = os.environ.get("CONFORMANCE_TEST_HOLD")
        if hold:
            after = int(os.environ.get("CONFORMANCE_TEST_HOLD_AFTER", "0"))
            done = len(open(path).read().splitlines()) if path and os.path.exists(path) else 0
            while done >= after and os.path.exists(hold):
                time.sleep(0.05)
        if path:
            with open(path, "a") as f:
                f.write("call\n")
        return _ort_run(onnx.load_from_string(model), feeds)


class IgnoresClip:
    """Known-wrong: drops the `clip` attribute before running onnxruntime (clip silently ignored)."""

    name = "ignores-clip"
    format = "onnx"

    def run(self, model: bytes, feeds):
        m = onnx.load_from_string(model)
        node = m.graph.node[0]
        kept = [a for a in node.attribute if a.name != "clip"]
        del node.attribute[:]
        node.attribute.extend(kept)
        return _ort_run(m, feeds)


class Batching:
    """Test double for the batch machinery: onnxruntime behind ``run_many`` (4 programs per call)."""

    name = "batching"
    format = "onnx"
    version = "test-double"
    batch = 4

    def run(self, model: bytes, feeds):
        return _ort_run(onnx.load_from_string(model), feeds)

    def run_many(self, items):
        return [self.run(model, feeds) for model, feeds in items]


class WrongInBatch(Batching):
    """Test double: right alone, but the second program of every batch gets outputs off by 1."""

    name = "wrong-in-batch"

    def run_many(self, items):
        answers = super().run_many(items)
        if len(answers) > 1:
            answers[1] = [np.asarray(a) + 1.0 for a in answers[1]]
        return answers


class CrashInBatch(Batching):
    """Test double: a batch holding a reverse-direction GRU segfaults the worker; alone, only that
    program does."""

    name = "crash-in-batch"

    def _crash_on(self, model: bytes):
        m = onnx.load_from_string(model)
        node = m.graph.node[0]
        if node.op_type == "GRU" and any(a.name == "direction" and a.s == b"reverse" for a in node.attribute):
            ctypes.string_at(0)

    def run(self, model: bytes, feeds):
        self._crash_on(model)
        return super().run(model, feeds)

    def run_many(self, items):
        for model, _ in items:
            self._crash_on(model)
        return super().run_many(items)


class RefusesInBatch(Batching):
    """Test double: ``run_many`` returns an exception object for its first program (a refusal of
    that program alone, as a batching runtime reports one), and runs the rest."""

    name = "refuses-in-batch"

    def run_many(self, items):
        answers = super().run_many(items)
        answers[0] = RuntimeError("refused in a batch")
        return answers


class Converting:
    """Test double for a runtime with a conversion step: "converts" the model to ONNX's text form
    (its artefact, kept by the suite beside the program), refuses a reverse-direction model in that
    converter (RuntimeRejected with stage "converter"), and runs the rest on onnxruntime."""

    name = "converting"
    format = "onnx"
    version = "test-double"

    def __init__(self):
        self._made: dict = {}

    def run(self, model: bytes, feeds):
        import onnx.printer

        from conformance.runtimes.base import RuntimeRejected
        m = onnx.load_from_string(model)
        self._made = {"converted.txt": onnx.printer.to_text(m).encode()}
        if any(a.name == "direction" and a.s == b"reverse" for a in m.graph.node[0].attribute):
            raise RuntimeRejected("the converter has no reverse direction", stage="converter")
        return _ort_run(m, feeds)

    def artefacts(self):
        return self._made


class TriesToInstall:
    """Test double for a runtime whose dependency runs ``pip`` from inside a call (as MNN's
    mnnconvert script does): it asks pip to download a package and returns pip's exit status and
    the worker's PIP_NO_INDEX as its outputs."""

    name = "tries-to-install"
    format = "onnx"
    version = "test-double"

    def run(self, model: bytes, feeds):
        import os
        import subprocess
        import sys
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", tmp, "six"],
                                  capture_output=True, text=True, timeout=120, check=False)
        print(done.stdout[-500:], done.stderr[-500:])
        return [np.array(done.returncode), np.array(os.environ.get("PIP_NO_INDEX") == "1")]


class FallsBack:
    """A pretend accelerator target whose recurrent node always falls back to onnxruntime's CPU
    provider (its ``path()`` says so, as onnxruntime's node assignment would), and whose answer is off:
    the suite must not count that answer as the accelerator's (docs/forms.md, "The path that actually ran":
    `fallback`)."""

    name = "pretend-accelerator"
    format = "onnx"
    version = "test-double"
    device = "FakeAccelerator"

    def run(self, model: bytes, feeds):
        return [np.asarray(o) + np.float32(0.5) for o in _ort_run(onnx.load_from_string(model), feeds)]

    def path(self) -> dict:
        from conformance.runtimes.onnxruntime import assignment_path
        return assignment_path([("CPUExecutionProvider", "GRU", "gru0")], "FakeAcceleratorExecutionProvider")
