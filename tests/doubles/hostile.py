"""A library of misbehaving runtimes: deliberate test doubles for the suite's own machinery, named
as such. None is a runtime under test. Each computes the right answer with onnxruntime and then
does one wrong thing (or does the wrong thing instead), so that the suite must give exactly one
clean verdict for it, finish the run, and leave every other runtime's verdicts alone.

``KINDS`` maps each kind to what the suite must make of it: the verdict, and a piece of the
message. ``tests/runtime/test_hostile.py`` runs them all at once.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np

from tests.doubles import ort_cpu

MARKER_ENV = "CONFORMANCE_HOSTILE_DIR"   # where a hostile runtime writes the pids it started


def _note(name: str, pid: int) -> None:
    folder = os.environ.get(MARKER_ENV)
    if folder:
        with open(os.path.join(folder, f"{name}.pids"), "a") as f:
            f.write(f"{pid}\n")


class _NoArray:
    def __array__(self, *args, **kwargs):
        raise RuntimeError("this output cannot become an array")


def _grow(model, feeds):
    hold = []
    while True:  # 200 MiB a step, touched so that it is resident
        block = np.ones(200 << 20, dtype=np.uint8)
        hold.append(block)
        time.sleep(0.05)


def _spawn_and(hang: bool, name: str):
    def act(model, feeds):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        _note(name, child.pid)
        _note(name + "-worker", os.getpid())
        if hang:
            while True:
                time.sleep(1)
        return ort_cpu(model, feeds)
    return act


def _hang_ignoring_sigterm(model, feeds):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(1)


def _spin(model, feeds):
    while True:
        pass


def _chatter(model, feeds):
    chunk = "x" * 1_000_000 + "\n"
    for _ in range(100):
        sys.stdout.write(chunk)
        os.write(2, chunk.encode())
    return ort_cpu(model, feeds)


def _thread_then_answer(model, feeds):
    threading.Thread(target=lambda: [time.sleep(0.01) for _ in iter(int, 1)], daemon=True).start()
    return ort_cpu(model, feeds)


def _raise_base(model, feeds):
    raise KeyboardInterrupt("a BaseException from a runtime")


#: kind -> (what run does given the right outputs, the verdict, a piece of the message)
KINDS = {
    "segfault": (lambda m, f: ctypes.string_at(0), "crash", "SIGSEGV"),
    "abort": (lambda m, f: os.abort(), "crash", "SIGABRT"),
    "sys-exit": (lambda m, f: sys.exit(3), "crash", "status"),
    "os-exit-0": (lambda m, f: os._exit(0), "crash", "status 0"),
    "keyboard-interrupt": (_raise_base, "crash", ""),
    "hang": (lambda m, f: time.sleep(3600), "timeout", "no answer within"),
    "hang-ignoring-sigterm": (_hang_ignoring_sigterm, "timeout", "no answer within"),
    "spin": (_spin, "timeout", "no answer within"),
    "memory-growth": (_grow, "crash", "memory limit"),
    "huge-allocation": (lambda m, f: np.empty(36 << 40, dtype=np.uint8), "rejected", "MemoryError"),
    "raises": (lambda m, f: (_ for _ in ()).throw(ValueError("refused")), "rejected", "ValueError: refused"),
    "orphan-making-hang": (_spawn_and(True, "orphan-making-hang"), "timeout", "no answer within"),
    "child-left-running": (_spawn_and(False, "child-left-running"), "pass", ""),
    "chatter": (_chatter, "pass", ""),
    "background-thread": (_thread_then_answer, "pass", ""),
    "nan": (lambda m, f: [np.full_like(o, np.nan) for o in ort_cpu(m, f)], "fail", ""),
    "inf": (lambda m, f: [np.full_like(o, np.inf) for o in ort_cpu(m, f)], "fail", ""),
    "zeros": (lambda m, f: [np.zeros_like(o) for o in ort_cpu(m, f)], "fail", ""),
    "wrong-shape": (lambda m, f: [o.reshape(-1) for o in ort_cpu(m, f)], "fail", "shape"),
    "transposed": (lambda m, f: [np.ascontiguousarray(o.T) for o in ort_cpu(m, f)], "fail", "shape"),
    "too-many-outputs": (lambda m, f: ort_cpu(m, f) * 2, "fail", "outputs, but should return"),
    "too-few-outputs": (lambda m, f: ort_cpu(m, f)[:1], "fail", "outputs, but should return"),
    "no-outputs": (lambda m, f: [], "fail", "returned 0 outputs"),
    "returns-none": (lambda m, f: None, "fail", "not a list of arrays"),
    "returns-dict": (lambda m, f: {"Y": 1}, "fail", "not a list of arrays"),
    "returns-string": (lambda m, f: "Y", "fail", "not a list of arrays"),
    "strings": (lambda m, f: ["a" for _ in ort_cpu(m, f)], "fail", "has dtype str"),
    "none-objects": (lambda m, f: [None for _ in ort_cpu(m, f)], "fail", "has dtype object"),
    "float64": (lambda m, f: [o.astype(np.float64) for o in ort_cpu(m, f)], "fail",
                "has dtype float64, but should be float32"),
    "complex": (lambda m, f: [o.astype(np.complex64) + 1j for o in ort_cpu(m, f)], "fail",
                "has dtype complex64, but should be float32"),
    "int32": (lambda m, f: [o.astype(np.int32) for o in ort_cpu(m, f)], "fail", "has dtype int32"),
    "python-lists": (lambda m, f: [o.tolist() for o in ort_cpu(m, f)], "fail",
                     "output 0 is a Python list, not an array"),
    "object-floats": (lambda m, f: [o.astype(object) for o in ort_cpu(m, f)], "fail", "has dtype object"),
    "array-raises": (lambda m, f: [_NoArray() for _ in ort_cpu(m, f)], "fail", "not a list of arrays"),
    "unpicklable": (lambda m, f: [np.asarray(lambda: 0, dtype=object) for _ in ort_cpu(m, f)], "fail",
                    "cannot be sent back"),
    "read-only": (lambda m, f: [_readonly(o) for o in ort_cpu(m, f)], "pass", ""),
    "strided": (lambda m, f: [np.repeat(o, 2, axis=-1)[..., ::2] for o in ort_cpu(m, f)], "pass", ""),
}


def _readonly(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


class Hostile:
    """One misbehaving runtime (see KINDS); a deliberate test double."""

    format = "onnx"
    version = "test-double"
    kind = ""

    @property
    def name(self) -> str:
        return f"hostile-{self.kind}"

    @property
    def description(self) -> str:
        return f"deliberately misbehaving test double: {self.kind}"

    def run(self, model, feeds):
        return KINDS[self.kind][0](model, feeds)


def _make(kind: str) -> type:
    return type(f"Hostile_{kind.replace('-', '_')}", (Hostile,), {"kind": kind})


#: one plugin class per kind, importable as tests.doubles.hostile:<name>
CLASSES = {kind: _make(kind) for kind in KINDS}
globals().update({cls.__name__: cls for cls in CLASSES.values()})


class NumpyPatcher:
    """Deliberately hostile: patches numpy, the working directory and the environment of its own
    process, then answers with onnxruntime through the patched numpy. Only its own verdicts may move."""

    name = "hostile-patcher"
    format = "onnx"
    version = "test-double"

    def __init__(self):
        self._patch()

    def _patch(self):
        np.tanh = lambda x, *a, **k: np.zeros_like(x)
        np.abs = lambda x, *a, **k: np.zeros_like(x)
        np.asarray = (lambda real: (lambda x, *a, **k: real(x, *a, **k) * 0 if isinstance(x, np.ndarray)
                                    and x.dtype.kind == "f" else real(x, *a, **k)))(np.asarray)
        os.chdir("/")
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ["CONFORMANCE_ORACLE_CACHE"] = "/nonexistent"

    def run(self, model, feeds):
        self._patch()
        return [o + 0.33 for o in ort_cpu(model, feeds)]


# patching at import, too: the main process must never import this module
if os.environ.get("CONFORMANCE_HOSTILE_PATCH_AT_IMPORT"):
    NumpyPatcher()
