"""The activation probe: how accurately a target's recurrent kernel computes tanh and sigmoid,
measured through the op itself, as the arithmetic probe (conformance/run/probe.py) measures its
significand.

A kernel may use its own tanh and sigmoid, less accurate than a library's: cuDNN's RNN tanh is off
by up to 125 float32 ulps where ``torch.tanh`` on the same GPU is within 2 (docs/precision.md,
"Measured activations"). So each target runs three float32 programs, through its own translator and
worker like any case, whose outputs are each exactly one activation of an input that is exact in the
target's precision (nothing else can move them: weights 0 or 1, R = 0, no bias but the gates' shut
or open ones, whose values are exactly 0 or 1 in every precision):

- RNN (Tanh): Y_h = tanh(x);
- GRU, input (x1, x2), z = sigmoid(x1), n = tanh(x2), h0 = 1: rows (x, 0) give h = z = sigmoid(x),
  rows (-200, x) give h = n = tanh(x) (z = sigmoid(-200) = 0);
- LSTM, input (x1, x2, x3), f = sigmoid(x1), i = sigmoid(x2), g = tanh(x3), c0 = 1: rows (x, -200, 0)
  give Y_c = f = sigmoid(x) (i = 0), rows (-200, 200, x) give Y_c = g = tanh(x) (f = 0, i = 1). No
  row's value passes through the other function's approximation but at 0 or saturation.

The inputs x lie on a grid over [-4, 4] whose points are exact in the target's precision (8193 for
float32, 2049 for TF32 and f16, 257 for bf16), so the inputs' rounding moves nothing. The oracle's
precision model turns each function's errors into the k it must admit (oracles/precision/measured.py);
the target's configuration keeps them per op (``activations``), named in words by
``effective.activations_label`` ("tanh ≤ 125 ulp, sigmoid ≤ 4.1 ulp"), and a pair whose op's measured k
passes the model's own (ACT_ULPS) is judged a second time with it, up to the model's ceiling
(``effective.activations_judged``, conformance/run/judging/pair.py, docs/precision.md).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from conformance.case.model import Case
from conformance.isolation.jobs import Job
from conformance.runtimes.effective import BY_NAME
from conformance.specs import SPECS, NotExpressible, translate

#: the functions measured, and the ops each is measured through
FUNCTIONS = ("Tanh", "Sigmoid")
OPS = ("RNN", "GRU", "LSTM")
#: a gate's pre-activation that shuts (sigmoid → 0) or opens (sigmoid → 1, tanh → 1) it in every precision
SHUT, OPEN = -200.0, 200.0
#: the grid's half-width, and the most points on it
REACH, MOST = 4.0, 8193


def grid(precision: str) -> np.ndarray:
    """Points of [-REACH, REACH] exact in ``precision`` (its significand bits): a step of
    2^-(bits - 3), but no finer than MOST points."""
    bits = BY_NAME[precision].bits if precision in BY_NAME else 24
    step = max(2.0 ** -(bits - 3), 2 * REACH / (MOST - 1))
    n = int(round(REACH / step))
    return np.arange(-n, n + 1, dtype=np.float64) * step


def probe_cases(precision: str) -> list[tuple[Case, dict]]:
    """(case, {function: (output, rows)}) for each op: which output's which batch rows hold which
    function of the grid."""
    x = grid(precision).astype(np.float32)
    n = x.size
    f32 = np.float32
    rnn = Case(id="probe/activations-rnn", op="RNN", form="sequence",
               attributes={"hidden_size": 1, "activations": ["Tanh"]},
               shape={"seq_length": 1, "batch_size": n, "input_size": 1}, dtype="float32",
               tensors={"X": x.reshape(1, n, 1), "W": np.ones((1, 1, 1), f32), "R": np.zeros((1, 1, 1), f32)},
               outputs=("Y_h",), description="the activation probe (conformance/run/activations.py)")
    pairs = np.concatenate([np.stack([x, np.zeros_like(x)], axis=1), np.stack([np.full_like(x, SHUT), x], axis=1)])
    gru_w = np.zeros((1, 3, 2), f32)
    gru_w[0, 0, 0] = 1.0   # z reads x1
    gru_w[0, 2, 1] = 1.0   # the new gate reads x2
    gru = Case(id="probe/activations-gru", op="GRU", form="sequence",
               attributes={"hidden_size": 1, "linear_before_reset": 1},
               shape={"seq_length": 1, "batch_size": 2 * n, "input_size": 2}, dtype="float32",
               tensors={"X": pairs.reshape(1, 2 * n, 2), "W": gru_w, "R": np.zeros((1, 3, 1), f32),
                        "B": np.zeros((1, 6), f32), "initial_h": np.ones((1, 2 * n, 1), f32)},
               outputs=("Y_h",), description="the activation probe (conformance/run/activations.py)")
    shut, opened = np.full_like(x, SHUT), np.full_like(x, OPEN)
    triples = np.concatenate([np.stack([x, shut, np.zeros_like(x)], axis=1), np.stack([shut, opened, x], axis=1)])
    lstm_w = np.zeros((1, 4, 3), f32)    # ONNX's gate order i, o, f, c
    lstm_w[0, 0, 1] = 1.0  # i reads x2
    lstm_w[0, 2, 0] = 1.0  # f reads x1
    lstm_w[0, 3, 2] = 1.0  # the cell gate reads x3
    lstm = Case(id="probe/activations-lstm", op="LSTM", form="sequence", attributes={"hidden_size": 1},
                shape={"seq_length": 1, "batch_size": 2 * n, "input_size": 3}, dtype="float32",
                tensors={"X": triples.reshape(1, 2 * n, 3), "W": lstm_w, "R": np.zeros((1, 4, 1), f32),
                         "B": np.zeros((1, 8), f32), "initial_c": np.ones((1, 2 * n, 1), f32)},
                outputs=("Y_c",), description="the activation probe (conformance/run/activations.py)")
    first, second = slice(0, n), slice(n, 2 * n)
    return [(rnn, {"Tanh": ("Y_h", slice(0, n))}),
            (gru, {"Sigmoid": ("Y_h", first), "Tanh": ("Y_h", second)}),
            (lstm, {"Sigmoid": ("Y_c", first), "Tanh": ("Y_c", second)})]


def measure(targets: list, pool, timeout: float, folder=None) -> dict:
    """{RuntimeRef: activations} for every runtime configuration among ``targets`` (measured first by
    the arithmetic probe: their ``precision`` sets the grid): per op, per function, the oracle's
    summary (oracles.precision.measured.summary), or why an op was not measured."""
    from oracles.precision import measured as model
    groups: dict = {}
    for t in targets:
        groups.setdefault(t.ref, []).append(t)
    found: dict = {ref: {"by_op": {}, "not_measured": {}} for ref in groups}
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        jobs: list[Job] = []
        reading: dict = {}
        for ref, group in groups.items():
            precision = group[0].precision or "f32"
            for case, rows in probe_cases(precision):
                prog, why = _translated(group, case)
                if prog is None:
                    found[ref]["not_measured"][case.op] = why
                    continue
                where = Path(tmp) / f"{len(jobs)}"
                where.mkdir()
                SPECS[prog.spec].write(prog, where)
                key = ("activations", ref, case.op)
                reading[key] = (prog, rows, precision)
                jobs.append(Job(key, "probe", (ref, prog.runtime_input(), prog.feeds), timeout))
        for outcome in pool.outcomes(jobs):
            _, ref, op = outcome.key
            prog, rows, precision = reading[outcome.key]
            if outcome.status != "ok":
                found[ref]["not_measured"][op] = f"{outcome.status}: {outcome.error}"[:300]
                continue
            try:
                names = [canonical for _, canonical in prog.outputs]
                x = grid(precision)
                compute = BY_NAME[precision].dtype if precision in BY_NAME else "float32"
                per: dict = {}
                for fn, (output, part) in rows.items():
                    y = prog.to_canonical(output, np.asarray(outcome.value[names.index(output)])).ravel()[part]
                    per[fn] = model.summary(fn, x, y, compute)
                found[ref]["by_op"][op] = per
            except Exception as exc:  # noqa: BLE001 - a garbled answer costs the measurement, not the run
                found[ref]["not_measured"][op] = f"unreadable: {type(exc).__name__}: {exc}"[:300]
    return {ref: {k: v for k, v in info.items() if v} for ref, info in found.items()}


def _translated(group: list, case: Case):
    """(the program of the first spec of ``group`` that can say ``case``, '') or (None, why not)."""
    reasons = []
    for t in group:
        if t.spec not in SPECS:
            continue
        prog = translate(SPECS[t.spec], case)
        if not isinstance(prog, NotExpressible):
            return prog, ""
        reasons.append(f"{t.spec}: {prog.reason}")
    return None, "; ".join(reasons) or "no translator"
