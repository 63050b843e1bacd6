"""Whether a worker is still sound after its runtime raised: a device error can outlive its call.

A refusal is a runtime's answer about one program. But some failures leave the process unable to
compute anything: after a CUDA device-side assert, every later call in the process raises (the
context is lost), so every pair the worker would run next would be recorded as a refusal of a
valid case. So after a call in which the runtime raised (the call itself, one program of a batch,
one call of a plan), the worker checks itself, two ways, both optional:

- the runtime's own ``sound()`` (an optional part of the runtime contract, docs/plugins.md: it
  raises, or returns a string saying what is wrong, where the runtime's state is lost; torch on
  CUDA synchronizes the device and computes a small sum there);
- the **canary**: the target's arithmetic probe (conformance/run/probe.py), a program known to run
  in this runtime configuration, run again in the same worker; it must run and give the outputs it
  gave when the probe measured the target. The pool hands it to every worker of that configuration
  (conformance/isolation/workers.py); the worker that ran the probe keeps its own.

A worker found unsound answers its job as ``unsound`` and exits. The pool retires it, records the
job as ``crash`` with what the check saw (:func:`unsound_text`), and every job it had not started
runs on a fresh worker, uncharged (docs/isolation.md, "A device error that outlives its call").
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: the largest program folder kept as a canary (the probe's programs are a few kilobytes)
CANARY_BYTES = 4 << 20
CANARY_FILES = 32
#: how far a canary's outputs may move between two calls of a sound worker: a sound runtime gives
#: the same outputs for the same program (bit for bit, in practice); this only tells garbage apart
CANARY_RTOL = 2.0 ** -6
CANARY_ATOL = 2.0 ** -120


@dataclass(frozen=True)
class Canary:
    """A call known to work in one runtime configuration, and what it returned."""

    model: bytes | None            # ONNX bytes; None for a program written as files
    files: tuple                   # ((name, bytes), ...): the written program's folder
    main: str                      # the file ``run`` receives, among ``files``
    feeds: dict
    outputs: tuple

    @classmethod
    def of(cls, model, feeds: dict, outputs) -> Canary | None:
        """The canary of a call that returned ``outputs``, or None where it cannot be kept (a program
        folder too large, outputs that are not arrays)."""
        try:
            arrays = tuple(np.array(o, copy=True) for o in outputs)
        except Exception:  # noqa: BLE001 - not arrays: no canary
            return None
        if isinstance(model, (bytes, bytearray)):
            return cls(bytes(model), (), "", dict(feeds), arrays)
        try:
            path = Path(model)
            files = sorted(p for p in path.parent.iterdir() if p.is_file())
            if len(files) > CANARY_FILES or sum(p.stat().st_size for p in files) > CANARY_BYTES:
                return None
            return cls(None, tuple((p.name, p.read_bytes()) for p in files), path.name, dict(feeds), arrays)
        except (OSError, TypeError, ValueError):
            return None

    def model_in(self, folder: str) -> object:
        """What ``run`` receives: the bytes, or the main file of the program written into ``folder``
        (once per folder)."""
        if self.model is not None:
            return self.model
        where = Path(folder)
        if not (where / self.main).is_file():
            where.mkdir(parents=True, exist_ok=True)
            for name, data in self.files:
                (where / name).write_bytes(data)
        return str(where / self.main)

    def differs(self, returned) -> str:
        """'' where ``returned`` is what the canary returned before, else how it differs."""
        try:
            got = [np.asarray(x) for x in returned]
        except Exception as exc:  # noqa: BLE001
            return f"returned {type(returned).__name__}, not outputs ({type(exc).__name__})"
        if len(got) != len(self.outputs):
            return f"returned {len(got)} outputs, where it returned {len(self.outputs)}"
        for k, (a, b) in enumerate(zip(got, self.outputs)):
            if a.shape != b.shape:
                return f"output {k} has shape {a.shape}, where it had {b.shape}"
            x, y = a.astype(np.float64), b.astype(np.float64)
            if not np.array_equal(np.isnan(x), np.isnan(y)) or not np.array_equal(np.isinf(x), np.isinf(y)):
                return f"output {k}'s NaN and Inf elements moved"
            finite = np.isfinite(y)
            off = np.abs(x[finite] - y[finite]) > CANARY_RTOL * np.abs(y[finite]) + CANARY_ATOL
            if off.any():
                i = int(np.flatnonzero(off)[0])
                return f"output {k} changed: {x[finite][i]!r} where it was {y[finite][i]!r}"
        return ""


def check(runtime, canary: Canary | None, folder: str, flush=lambda: None) -> str:
    """'' where the worker is sound, else what the check saw: the runtime's ``sound()`` (raising or
    returning a reason), then the canary run again. Neither available: '' (nothing to tell by)."""
    method = getattr(runtime, "sound", None)
    if callable(method):
        try:
            said = method()
        except Exception as exc:  # noqa: BLE001 - the runtime's own check says its state is lost
            flush()
            return f"its own check (sound()) raised {type(exc).__name__}: {exc}"[:600]
        flush()
        if isinstance(said, str) and said:
            return f"its own check (sound()) said: {said}"[:600]
    if canary is None:
        return ""
    try:
        returned = runtime.run(canary.model_in(folder), canary.feeds)
    except Exception as exc:  # noqa: BLE001 - the known-good call now raises: the state is lost
        flush()
        return f"the target's probe, run again in the same worker, raised {type(exc).__name__}: {exc}"[:600]
    flush()
    differs = canary.differs(returned)
    return f"the target's probe, run again in the same worker, {differs}"[:600] if differs else ""


def scratch(log: str | None) -> str:
    """A folder of this worker's for writing a canary's program (beside its log, which the pool
    removes with the run; else a temporary folder)."""
    parent = os.path.dirname(log) if log else tempfile.gettempdir()
    return os.path.join(parent, f"canary-{os.getpid()}")


def unsound_text(error: str, seen: str) -> str:
    """The crash message of the pair whose call left its worker unsound."""
    return (f"the call raised {error}; then the worker was unsound: {seen}. A device error that outlived its "
            f"call (a CUDA device-side assert loses the process's context for every later call; the CPU's "
            f"twin is a crash such as SIGSEGV): the worker was retired, and the pairs it would have run ran "
            f"on a fresh one (docs/isolation.md, \"A device error that outlives its call\")")[:4000]
