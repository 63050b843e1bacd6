"""The worker's side: what a worker process does with the jobs it is sent (conformance/isolation/workers.py).

It leads its own process group, dies with its parent, captures its runtime's output per call (and
sends it with the call's answer), builds its one runtime (or the oracle) once and answers each job
with an Outcome; a result that may hold spec-silent elements is computed again in the same
process (``again``). A ``batch`` job carries several programs for the runtime: its optional
``run_many(items)`` takes them in one call (WebNN: one page round trip, OpenVINO: one compile),
else they run one after another; the answer's value is one
``(status, outputs or None, error, elapsed, alone, effective)`` per program, ``alone`` saying why
the runtime ran that program on its own within the call (``RanAlone``), else "", and
``effective`` the configuration that program ran in, where the call reported one per program
(``RanMerged``, ``RanAlone``), else None (the call's own applies).
"""

from __future__ import annotations

import os
import signal
import time
import traceback
from typing import Any

from conformance.isolation.processes import ORACLE, RUNTIME_KINDS, _own_group
from conformance.isolation.processes import flush_streams as _flush
from conformance.isolation.soundness import Canary, check, scratch, unsound_text

#: the most of a call's printed output kept with its outcome (its tail)
OUTPUT_KEPT = 4000






def printed(log: str | None) -> str:
    """What was printed to ``log`` since it was last read (its tail, OUTPUT_KEPT characters), and
    empty it. The worker reads its own before each answer, so the output travels with the call that
    printed it (the pool may already have sent the next job); the pool reads what a worker that
    died or was killed left."""
    if not log:
        return ""
    try:
        size = os.path.getsize(log)
        with open(log, "rb") as f:
            f.seek(max(0, size - OUTPUT_KEPT * 4))
            text = f.read().decode("utf-8", errors="replace")
        os.truncate(log, 0)
    except OSError:
        return ""
    text = text[-OUTPUT_KEPT:]
    return ("…" + text) if size > len(text) else text


def _capture(log: str | None) -> None:
    """Send this process's stdout and stderr (file descriptors 1 and 2, so native code's output
    too) to ``log``, which the worker reads before each answer and sends with it (``printed``)."""
    if not log:
        return
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    for target in (1, 2):
        os.dup2(fd, target)
    os.close(fd)


#: the environment of every worker: package installers find no package index (a dependency's tool
#: that runs ``pip install`` from inside a runtime, as MNN's mnnconvert script does, fails instead of
#: changing the environment the next pairs run in; docs/isolation.md)
NO_INSTALL = {"PIP_NO_INDEX": "1", "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "UV_OFFLINE": "1",
              "UV_NO_INDEX": "1"}


def _serve(conn, binding, log: str | None = None, canary: Canary | None = None) -> None:
    """Worker loop: receive (kind, payload), answer (status, value, error, detail, elapsed,
    effective, describe). Only jobs of this worker's binding are accepted. After a call in which
    the runtime raised, the worker checks that it is still sound (conformance/isolation/soundness.py:
    the runtime's ``sound()``, and ``canary``, the target's probe, run again); where it is not, it
    answers ``unsound`` and exits. A successful probe becomes its canary."""
    _own_group()
    _capture(log)
    os.environ.update(NO_INSTALL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    runtime = None
    conn = _Answering(conn, log)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        kind, payload = msg
        start = time.perf_counter()
        refused = ""   # the first refusal of a batch's program or a plan's call
        _flush()
        try:
            if kind in RUNTIME_KINDS:
                ref = payload[0]
                if ref != binding:
                    raise RuntimeError(f"a worker bound to {binding!r} was sent a job for {ref!r}")
                if runtime is None:
                    runtime = ref.build()
                conn.send(("started", None, "", "", 0.0, {}, {}, None, {}))  # the timeout counts from here
                start = time.perf_counter()
                returned: Any
                if kind == "batch":
                    returned = _batch(runtime, *payload[1:])
                    refused = next((r[2] for r in returned if r[0] == "error"), "")
                elif kind == "plan":  # a runtime that runs plans elsewhere (a release's interpreter) takes it whole
                    from conformance.isolation.plans import execute
                    whole = getattr(runtime, "run_plan", None)
                    returned = whole(payload[1]) if callable(whole) else execute(runtime, payload[1], _as_arrays,
                                                                                   _effective)
                    refused = next((c[2] for c in getattr(returned, "calls", []) if c[0] == "error"), "")
                else:
                    _, model, feeds, *rest = payload
                    repeat_under = rest[0] if rest else 0.0
                    returned = runtime.run(model, feeds)
            else:
                if binding != ORACLE:
                    raise RuntimeError(f"a worker bound to {binding!r} was sent a suite function")
                func, args = payload
                returned = func(*args)
            _flush()
        except Exception as exc:  # the runtime's refusal, reported as its text
            _flush()
            tb = traceback.format_exc(limit=6)
            # what the call ran in and made, read before the soundness check runs anything else
            effective, described, made = _refused_in(runtime, exc), _describe(runtime, kind), _artefacts(runtime, kind)
            error = f"{type(exc).__name__}: {exc}"[:4000]
            seen = check(runtime, canary, scratch(log), _flush) if kind in RUNTIME_KINDS and runtime else ""
            conn.send(("unsound" if seen else "error", None, unsound_text(error, seen) if seen else error,
                       tb[-2000:], time.perf_counter() - start, effective, described, None, made))
            if seen:
                return  # retired: the pool runs the jobs it would have run on a fresh worker
            continue
        elapsed = time.perf_counter() - start
        effective, described, made = _effective(runtime), _describe(runtime, kind), _artefacts(runtime, kind)
        if kind in ("batch", "plan") and refused:  # a program of it raised: is the worker still sound?
            seen = check(runtime, canary, scratch(log), _flush)
            if seen:
                conn.send(("unsound", None, unsound_text(refused, seen), "", elapsed, effective, described, None, made))
                return
        if kind == "batch":
            value = [(status, out, error, elapsed / max(1, len(returned)), alone, effective)
                     for status, out, error, alone, effective in returned]
        elif kind in ("run", "probe"):
            try:
                value = _as_arrays(returned)
            except Exception as exc:  # noqa: BLE001 - what came back is not outputs: the runtime's fault
                conn.send(("garbage", None, f"returned {_kind_of(returned)}, which is not a list of arrays: "
                           f"{type(exc).__name__}: {exc}"[:2000], "", elapsed, effective, described, None, made))
                continue
        else:
            value = returned
        if kind == "probe":  # a call known to work here: run again after a refusal (soundness.py)
            canary = canary or Canary.of(payload[1], payload[2], value)   # the first: the arithmetic probe
        reported = getattr(returned, "effective", None) if kind == "plan" else None
        if reported:
            effective = reported  # the plan's main call's, not its last relation's
        again = _again(runtime, model, feeds) if kind == "run" and 0 < elapsed <= repeat_under else None
        try:
            conn.send(("ok", value, "", "", elapsed, effective, described, again, made))
        except Exception as exc:  # noqa: BLE001 - an output that cannot travel back (unpicklable)
            conn.send(("garbage", None, f"returned outputs that cannot be sent back: {type(exc).__name__}: "
                       f"{exc}"[:2000], "", elapsed, {}, {}, None, {}))


class _Answering:
    """The worker's end of its pipe: every answer but ``started`` carries what the call printed
    (``printed``), as its last field."""

    def __init__(self, conn, log: str | None):
        self.conn, self.log = conn, log

    def recv(self):
        return self.conn.recv()

    def send(self, message: tuple) -> None:
        if message[0] != "started":
            _flush()
            message = message + (printed(self.log),)
        self.conn.send(message)


def _batch(runtime, items: list, alone: str = "") -> list:
    """Each of ``items`` ((model, feeds)) run: ``(status, outputs, error, why it ran alone, the
    configuration it ran in)`` per item, where status is ok, error (the runtime refused that item)
    or garbage (what came back is not outputs). A ``run_many`` that fails as a whole raises, and the
    suite runs the items alone. With ``alone`` (why), each item is run on its own, as a job of its
    own would run it, one after the other in this call: only the round trips are shared."""
    from conformance.isolation.jobs import RanAlone, RanMerged
    many = getattr(runtime, "run_many", None)
    if callable(many) and not alone:
        answers = list(many(items))
        if len(answers) != len(items):
            raise RuntimeError(f"run_many answered {len(answers)} results for {len(items)} programs")
    else:  # one ``run`` after another, each with the configuration it reported
        answers = []
        effective: dict | None
        for model, feeds in items:
            try:
                answer, effective = runtime.run(model, feeds), _effective(runtime)
            except Exception as exc:  # noqa: BLE001 - one item's refusal is that item's answer
                answer, effective = exc, _refused_in(runtime, exc)
            answers.append(RanAlone(answer, alone, effective) if alone else RanMerged(answer, effective))
    _flush()
    results: list[tuple[str, list | None, str, str, dict | None]] = []
    for answer in answers:
        why, effective = "", None
        if isinstance(answer, RanAlone):  # ran on its own in this call: recorded as a pair run alone
            why, effective = str(answer.why)[:300] or "ran alone", answer.effective
            answer = answer.answer
        elif isinstance(answer, RanMerged):
            effective, answer = answer.effective, answer.answer
        if isinstance(answer, Exception):
            results.append(("error", None, f"{type(answer).__name__}: {answer}"[:4000], why, effective))
            continue
        try:
            results.append(("ok", _as_arrays(answer), "", why, effective))
        except Exception as exc:  # noqa: BLE001 - not outputs: the runtime's fault, for this item
            results.append(("garbage", None, f"returned {_kind_of(answer)}, which is not a list of arrays: "
                                             f"{type(exc).__name__}: {exc}"[:2000], why, effective))
    return results


def _again(runtime, model, feeds):
    """The same call once more (a pair whose spec may leave outputs undefined, and whose call is
    cheap): its outputs, or why there are none. An undefined element that changes between the two
    is memory the runtime did not compute."""
    try:
        outputs = _as_arrays(runtime.run(model, feeds))
        _flush()
        return outputs
    except Exception as exc:  # noqa: BLE001 - the second call's fate is reported, not raised
        _flush()
        return f"the second run failed: {type(exc).__name__}: {exc}"[:300]


#: the most bytes of converted artefacts one call sends back (a larger one is named, not kept)
ARTEFACTS_KEPT = 64 << 20


def _artefacts(runtime, kind: str) -> dict:
    """What the runtime's last call converted the program into (``artefacts()``, optional: e.g. an
    MNN model or IREE's imported MLIR), as {file name: bytes}; the suite keeps it beside the program."""
    method = getattr(runtime, "artefacts", None)
    if kind not in ("run", "plan") or not callable(method):
        return {}
    try:
        found = {str(name)[:100]: bytes(data) for name, data in dict(method()).items()}
    except Exception as exc:  # noqa: BLE001 - a broken report costs the artefact, not the verdict
        return {"artefacts-error.txt": f"artefacts() failed: {type(exc).__name__}: {exc}"[:300].encode()}
    if sum(len(d) for d in found.values()) > ARTEFACTS_KEPT:
        return {"artefacts-too-large.txt": (f"{sorted(found)}: {sum(len(d) for d in found.values())} bytes, more "
                                            f"than {ARTEFACTS_KEPT} kept").encode()}
    return found


def _kind_of(value) -> str:
    return f"a {type(value).__name__}"


def _as_arrays(returned) -> list:
    """The runtime's outputs as numpy arrays (a list or tuple of array-likes)."""
    import numpy as np
    if isinstance(returned, (str, bytes, dict)) or not hasattr(returned, "__iter__"):
        raise TypeError(f"expected a list of arrays, got {type(returned).__name__}")
    returned = list(returned)
    for k, x in enumerate(returned):   # np.asarray would make it float64, and the verdict blame the dtype
        if isinstance(x, (list, tuple)):
            raise TypeError(f"output {k} is a Python {type(x).__name__}, not an array; a runtime returns numpy "
                            f"arrays of the model's type (docs/plugins.md, \"The contract\")")
    return [np.asarray(x) for x in returned]


def _refused_in(runtime, exc: Exception) -> dict:
    """The configuration a refused call ran in: ``_effective``, with the step that refused for a
    runtime with several (``RuntimeRejected.stage``)."""
    effective = _effective(runtime)
    stage = str(getattr(exc, "stage", "") or "")
    return dict(effective, stage=stage) if stage else effective


def _effective(runtime) -> dict:
    """The runtime's own account of the configuration its last call ran in (``effective()``, an
    optional part of the runtime contract), with the path it took (``path()``, optional too: the
    kernels or execution providers that ran the recurrent node) under ``path``; a method that fails
    says so instead."""
    found: dict = {}
    method = getattr(runtime, "effective", None)
    if callable(method):
        try:
            found = _plain(method())
        except Exception as exc:  # noqa: BLE001 - a broken report costs the report, not the verdict
            found = {"error": f"effective() failed: {type(exc).__name__}: {exc}"[:300]}
    method = getattr(runtime, "path", None)
    if callable(method):
        try:
            path = _plain(method())
        except Exception as exc:  # noqa: BLE001
            path = {"error": f"path() failed: {type(exc).__name__}: {exc}"[:300]}
        if path:
            found = dict(found, path=path)
    return found


def _describe(runtime, kind: str) -> dict:
    method = getattr(runtime, "describe", None)
    if kind != "probe" or not callable(method):
        return {}
    try:
        return _plain(method())
    except Exception as exc:  # noqa: BLE001
        return {"error": f"describe() failed: {type(exc).__name__}: {exc}"[:300]}


def _plain(value) -> dict:
    """A runtime's report as plain JSON-able data (str, numbers, bools, lists, dicts)."""
    if not isinstance(value, dict):
        return {"error": f"expected a dict, got {type(value).__name__}"}

    def clean(v, depth=0):
        if depth > 4:
            return str(v)[:200]
        if isinstance(v, (bool, int, float)) or v is None:
            return v
        if isinstance(v, dict):
            return {str(k)[:100]: clean(x, depth + 1) for k, x in list(v.items())[:50]}
        if isinstance(v, (list, tuple, set)):
            return [clean(x, depth + 1) for x in list(v)[:50]]
        return str(v)[:200]
    return clean(value)
