"""A pair's plan of several calls on one runtime, run in its worker: the execution forms and the
relations (conformance/run/forms.py builds the plans, conformance/runtimes/forms.py names the forms).

A plan holds its programs (what the runtime's ``run`` or ``load`` receives), its inputs (feed
dicts) and its steps:

- ``("fresh", program, [input, ...])``: each input on its own, as a pair of the default form runs
  (``run(model, feeds)``: a session or compiled model of its own);
- ``("loaded", program, [input, ...])``: one ``load(model)``, then each input in order through it
  (compiled once: ``shape=dynamic``; a session reused: ``session=reused``);
- ``("concurrent", program, [input, ...], threads)``: one ``load(model)``, the inputs run from
  ``threads`` threads at once (``threads=4``);
- ``("chain", program, [input, ...], {input name: output index})``: the inputs in order, each with
  the named feeds replaced by the previous call's outputs (a cell unrolled over a sequence).

The answer is one ``(status, outputs, error)`` per (step, input) in order: ``ok``, ``error`` (the
runtime refused that call) or ``garbage`` (what came back is not outputs). A runtime without
``load`` runs a loaded step's inputs one ``run`` each (compiled per call), and the answer says so.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class Plan:
    programs: list                      # runtime inputs: ONNX bytes or a written program's path
    inputs: list                        # feed dicts
    steps: list                         # see the module docstring
    notes: list = field(default_factory=list)


@dataclass
class Answer:
    """What a plan's run returned: one (status, outputs, error) per (step, input), in order, and how
    the runtime loaded its programs."""

    calls: list
    loaded_by: str = "load"             # "load", or "run" where the runtime has no load()
    effective: dict = field(default_factory=dict)


class _PerCall:
    """A runtime without ``load``: each input is one ``run`` (the model compiled per call)."""

    def __init__(self, runtime, model):
        self.runtime, self.model = runtime, model

    def run(self, feeds):
        return self.runtime.run(self.model, feeds)


def execute(runtime, plan: Plan, as_arrays, effective) -> Answer:
    """Run ``plan`` on ``runtime`` (in its worker). ``as_arrays`` turns a runtime's return value into
    a list of arrays or raises; ``effective`` reads the runtime's configuration after the main call."""
    calls: list = []
    loaded_by = "load" if callable(getattr(runtime, "load", None)) else "run"
    reported: dict = {}

    def call(fn, feeds):
        try:
            return ("ok", as_arrays(fn(feeds)), "")
        except _NotOutputs as exc:
            return ("garbage", None, str(exc)[:2000])
        except Exception as exc:  # noqa: BLE001 - one call's refusal is that call's answer
            return ("error", None, f"{type(exc).__name__}: {exc}"[:2000])

    def checked(value):
        try:
            return as_arrays(value)
        except Exception as exc:  # noqa: BLE001 - not outputs: the runtime's fault
            raise _NotOutputs(f"returned a {type(value).__name__}, which is not a list of arrays: {exc}") from None

    for step in plan.steps:
        kind, program, indexes = step[0], plan.programs[step[1]], step[2]
        if kind == "fresh":
            for i in indexes:
                calls.append(call(lambda f, m=program: checked(runtime.run(m, f)), plan.inputs[i]))
                reported = reported or effective(runtime)
            continue
        try:
            handle = runtime.load(program) if loaded_by == "load" else _PerCall(runtime, program)
        except Exception as exc:  # noqa: BLE001 - the load's refusal answers each of its calls
            calls += [("error", None, f"{type(exc).__name__}: {exc}"[:2000])] * len(indexes)
            continue
        if kind == "loaded":
            for i in indexes:
                calls.append(call(lambda f, h=handle: checked(h.run(f)), plan.inputs[i]))
                reported = reported or effective(runtime)
        elif kind == "concurrent":
            calls += _concurrent(handle, [plan.inputs[i] for i in indexes], int(step[3]), call, checked)
            reported = reported or effective(runtime)
        elif kind == "chain":
            calls += _chain(handle, [plan.inputs[i] for i in indexes], step[3], call, checked)
            reported = reported or effective(runtime)
        else:
            raise ValueError(f"unknown plan step {kind!r}")
        close = getattr(handle, "close", None)
        if callable(close):
            close()
    return Answer(calls, loaded_by, reported)


class _NotOutputs(Exception):
    pass


def _concurrent(handle, inputs: list, threads: int, call, checked) -> list:
    """The inputs through one loaded handle from ``threads`` threads at once, started together."""
    answers: list = [None] * len(inputs)

    def work(k, start):
        try:
            start.wait(timeout=30)
        except threading.BrokenBarrierError:
            pass
        answers[k] = call(lambda f: checked(handle.run(f)), inputs[k])

    for first in range(0, len(inputs), threads):
        ks = list(range(first, min(first + threads, len(inputs))))
        start = threading.Barrier(len(ks))
        wave = [threading.Thread(target=work, args=(k, start), daemon=True) for k in ks]
        for t in wave:
            t.start()
        for t in wave:
            t.join()
    return answers


def _chain(handle, inputs: list, carry: dict, call, checked) -> list:
    """The inputs in order, each with the feeds named in ``carry`` taken from the previous call's
    outputs (by index); the chain stops at the first call that fails (the rest answer why)."""
    answers: list = []
    previous = None
    for feeds in inputs:
        if previous is not None:
            if previous[0] != "ok":
                answers.append(("error", None, "an earlier step of the chain failed"))
                continue
            feeds = dict(feeds, **{name: previous[1][index] for name, index in carry.items()})
        previous = call(lambda f: checked(handle.run(f)), feeds)
        answers.append(previous)
    return answers
