"""The side of a release's environment: run inside that environment's interpreter, with only the
standard library, numpy and the suite's runtime adapters (:mod:`conformance.runtimes`) imported.

``python -m conformance.history.remote targets`` reads a JSON request on stdin (the adapter
modules, the specs per format, gate probes) and prints the targets found as JSON;
``python -m conformance.history.remote serve MODULE:ATTR KWARGS_JSON`` builds one runtime and
answers requests on stdin until it closes. Requests and answers are pickles of plain Python values
only (str, bytes, numbers, lists, dicts): arrays travel as ``.npy`` bytes, so the two sides may
run different numpy releases. The runtime's own printing goes to stderr; the answers use a copy of
the original stdout.
"""

from __future__ import annotations

import functools
import io
import json
import os
import pickle
import sys
import traceback

import numpy as np

#: the pickle protocol both sides read (Python 3.8 and later)
PROTOCOL = 4


#: the element types .npy cannot name (ml_dtypes'): they travel as their raw bits, with their name
RAW_BITS = {"bfloat16": np.uint16}


def pack(array) -> tuple[str, bytes]:
    """(element type name where .npy cannot name it, else ""; the array as .npy bytes)."""
    arr = np.asarray(array)
    name = arr.dtype.name if arr.dtype.name in RAW_BITS else ""
    buf = io.BytesIO()
    np.save(buf, arr.view(RAW_BITS[name]) if name else arr, allow_pickle=False)
    return name, buf.getvalue()


def unpack(packed: tuple[str, bytes]):
    name, data = packed
    arr = np.load(io.BytesIO(data), allow_pickle=False)
    if name:
        import ml_dtypes
        arr = arr.view(getattr(ml_dtypes, name))
    return arr


def _answers():
    """A binary stream for the answers (the original stdout); fd 1 then points at stderr, so what
    the runtime prints cannot corrupt the protocol."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    return out


def _error(exc: BaseException) -> dict:
    from conformance.runtimes.base import RuntimeRejected
    return {"status": "rejected" if isinstance(exc, RuntimeRejected) else "error",
            "error": f"{type(exc).__name__}: {exc}", "stage": getattr(exc, "stage", ""),
            "detail": traceback.format_exc()[-2000:]}


def serve(path: str, kwargs_json: str) -> None:
    from conformance.runtimes.base import RuntimeRef
    out = _answers()
    kwargs = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in json.loads(kwargs_json))
    try:
        runtime = RuntimeRef(path, kwargs).build()
        answer: dict = {"status": "ok", "version": str(getattr(runtime, "version", ""))}
    except BaseException as exc:  # noqa: BLE001 - the suite's side raises it again
        answer = _error(exc)
        runtime = None
    pickle.dump(answer, out, protocol=PROTOCOL)
    out.flush()
    stdin = sys.stdin.buffer
    while runtime is not None:
        try:
            request = pickle.load(stdin)
        except EOFError:
            return
        try:
            if request["op"] == "run":
                feeds = {k: unpack(v) for k, v in request["feeds"].items()}
                outputs = runtime.run(request["model"], feeds)
                answer = {"status": "ok", "value": [pack(o) for o in outputs]}
            elif request["op"] == "plan":
                answer = {"status": "ok", "value": run_plan(runtime, request["plan"])}
            else:  # effective, describe, artefacts: plain data
                method = getattr(runtime, request["op"], None)
                answer = {"status": "ok", "value": method() if callable(method) else None}
        except Exception as exc:  # noqa: BLE001 - the suite's side raises it again
            answer = _error(exc)
        pickle.dump(answer, out, protocol=PROTOCOL)
        out.flush()


def plan_request(plan) -> dict:
    """A plan (conformance/isolation/plans.py ``Plan``) as plain values: its inputs' arrays as .npy bytes."""
    return {"programs": [bytes(p) if not isinstance(p, str) else p for p in plan.programs],
            "inputs": [{k: pack(v) for k, v in feeds.items()} for feeds in plan.inputs],
            "steps": [list(step) for step in plan.steps], "notes": list(plan.notes)}


def run_plan(runtime, request: dict) -> dict:
    """A pair's plan of calls (:func:`plan_request`) run here as a worker runs it
    (conformance/isolation/plans.py ``execute``: one ``load`` reused, threads at once, a chain), so the
    execution forms reach the release itself; its answer as plain values."""
    from conformance.isolation.plans import Plan, execute
    from conformance.isolation.serve import _as_arrays, _effective
    plan = Plan(list(request["programs"]), [{k: unpack(v) for k, v in feeds.items()} for feeds in request["inputs"]],
                [tuple(step) for step in request["steps"]], list(request["notes"]))
    done = execute(runtime, plan, _as_arrays, _effective)
    return {"calls": [(status, None if outputs is None else [pack(o) for o in outputs], error)
                      for status, outputs, error in done.calls],
            "loaded_by": done.loaded_by, "effective": done.effective}


def targets(request: dict) -> dict:
    """The targets of the requested adapter modules here, as plain data, each with its ``probe``:
    per op whose minimal program at its spec version was sent, whether the runtime ``accepts``,
    ``refuses`` (raises) or ``crashes`` on it (the process dies), with the reason, and its
    ``gates``: the ops it refuses whose probe gates (``gate``: a program that stands for every form
    of the op)."""
    from conformance.runtimes import builtin_targets
    found, skipped = [], []
    probed: dict = {}   # targets that build the same runtime (a plain target and its execution forms) probe once
    for module in request["modules"]:
        try:
            got, gaps = builtin_targets(module, request["specs_by_format"])
        except Exception as exc:  # noqa: BLE001 - a broken adapter costs its targets, with the reason
            skipped.append([module.rsplit(".", 1)[1], f"discovery failed: {type(exc).__name__}: {exc}"])
            continue
        skipped += [[s.runtime, s.reason] for s in gaps]
        for t in got:
            entry = t.to_json()
            key = (t.ref.path, repr(t.ref.kwargs), t.spec)
            if key not in probed:
                probed[key] = _probe(t, request.get("probes", {}).get(t.spec, {}))
            probe = probed[key]
            entry.update(ref_path=t.ref.path, ref_kwargs=[list(kv) for kv in t.ref.kwargs], family=t.family,
                         batch=t.batch, probe=probe,
                         gates={op: o["why"] for op, o in probe.items()
                                if o["state"] == "refuses" and request.get("probes", {})[t.spec][op].get("gate")})
            found.append(entry)
    return {"targets": found, "skipped": skipped}


def _probe(target, probes: dict) -> dict:
    """{op: {"state": accepts | refuses | crashes | broken, "why"}} for each probe (``broken``: the
    suite's adapter failed to import what it needs there, which says nothing of the release). The probes run in a
    forked child where there is fork, which answers op by op: when it dies, the op it was running
    crashes and a new child goes on with the rest (a release that crashes on one op may still
    accept the others; a crash gates nothing, its pairs then crash one verdict each)."""
    if not probes or not hasattr(os, "fork"):
        return _outcomes(target, probes, lambda op, outcome: None)
    results: dict = {}
    while len(results) < len(probes):
        left = {op: p for op, p in probes.items() if op not in results}
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: probe, answer op by op, and leave without running the parent's cleanup
            os.close(read)
            try:
                _outcomes(target, left, functools.partial(_send, write))
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        for line in data.splitlines():
            try:
                op, outcome = json.loads(line)
            except ValueError:
                continue
            results[op] = outcome
        running = next((op for op in left if op not in results), None)
        if running is not None:  # the child died (or left) on this op
            how = (f"the process died of signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                   else f"the process ended with status {os.WEXITSTATUS(status)} without answering")
            results[running] = {"state": "crashes", "why": f"{target.runtime} {target.version} crashes on the "
                                                           f"minimal {running} of {target.spec} ({how})"}
    return results


def _send(fd: int, op: str, outcome: dict) -> None:
    os.write(fd, (json.dumps([op, outcome]) + "\n").encode())


def _outcomes(target, probes: dict, answer) -> dict:
    outcomes: dict = {}
    runtime = None
    for op, probe in probes.items():
        try:
            runtime = runtime or target.ref.build()
            runtime.run(probe["model"], {k: unpack(v) for k, v in probe["feeds"].items()})
            outcome = {"state": "accepts", "why": ""}
        except ImportError as exc:  # the adapter itself cannot run here: no refusal of the release's
            outcome = {"state": "broken", "why": f"the suite's adapter for {target.spec} cannot run in this "
                                                  f"environment ({type(exc).__name__}: {exc})"}
        except Exception as exc:  # noqa: BLE001 - the refusal is the measurement
            text = " ".join(f"{type(exc).__name__}: {exc}".split())
            text = text if len(text) <= 300 else f"{text[:100]} … {text[-180:]}"
            outcome = {"state": "refuses",
                       "why": f"{target.runtime} {target.version} refuses the minimal {op} of {target.spec} ({text})"}
        outcomes[op] = outcome
        answer(op, outcome)
    return outcomes


def main(argv: list[str]) -> int:
    if argv[:1] == ["targets"]:
        out = _answers()
        request = pickle.load(sys.stdin.buffer)
        pickle.dump(targets(request), out, protocol=PROTOCOL)
        out.flush()
        return 0
    if argv[:1] == ["serve"] and len(argv) == 3:
        serve(argv[1], argv[2])
        return 0
    print("usage: python -m conformance.history.remote targets | serve MODULE:ATTR KWARGS_JSON", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
