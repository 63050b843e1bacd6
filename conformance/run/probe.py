"""The arithmetic probe: measure what a target computes a float32 model in, from its outputs.

One float32 RNN (one step, hidden size 1, input size 2, no bias) runs on each target, through the
target's own spec translator and worker, like any case. Its batch entries are built so that the
exact output of each is a float32 value that a narrower arithmetic cannot hold:

- ``x·2^10`` for ``x = (1 + 2^-k)·2^-10``, k = 1 … 23: the output keeps 1 + 2^-k only when the
  arithmetic has more than k fraction bits; the first k that comes back rounded measures the
  significand (24 bits: f32; 11: f16 or TF32; 8: bf16);
- ``2^10·2^10``: 2^20 overflows float16 (its largest is 65504), not TF32 or bf16;
- ``2^-63·2^-64`` = 2^-127: a subnormal result of normal operands, 0 where results are flushed to
  zero (FTZ);
- ``2^-136·2^10`` = 2^-126: a normal result of a subnormal input, 0 where subnormal inputs are read
  as zero (DAZ);
- ``1 + 3·2^-9`` and ``1 + 3·2^-12``: three quarters of an ulp of 1 above 1 in bf16 (7 fraction
  bits) and in f16 or TF32 (10): rounding to nearest gives the next value up, truncation gives 1.

W = [2^10, 2^-64] and R = 0 are exact in every precision, so nothing but the arithmetic can move an
output. The activation is Relu, the identity on these values. A runtime that refuses Relu (ONNX's
reference evaluator) gets the same probe through Tanh with every value scaled down by 2^-30, where
a correctly rounded float32 tanh is the identity too (tanh x = x(1 − x²/3 + …), and x² < 2^-58);
there a tanh a few ulps off may cost the last bits, so 20 bits or more read as f32, and float16's
range shows as the tiny values vanishing rather than 2^20 overflowing. A probe whose node ran on
another provider than the target's (onnxruntime's CUDA provider leaves the Relu RNN to the CPU
provider: docs/targets.md, "GPUs") measures that provider, not the target: it is not read, and the
next variant is tried.

A spec with no plain RNN (WebNN) gets the same batch through a GRU whose update gate is shut
(z = sigmoid(-200) = 0 in every precision: its bias is the only non-zero term) and whose new gate
computes Relu (or Tanh) of the same products, so that h = (1 - 0)·n + 0·h0 = n exactly.

The outcome is a target's ``measured`` configuration: ``{"precision": "bf16", "bits": 8,
"flushes_subnormals": false, "denormals_are_zero": false}``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from conformance.case.model import Case
from conformance.isolation.jobs import Job
from conformance.isolation.workers import Pool
from conformance.runtimes.base import RuntimeRef, Target
from conformance.runtimes.effective import target_precision
from conformance.specs import SPECS, NotExpressible, translate

FRACTION_BITS = range(1, 24)
SCALE = 2.0 ** 10
TINY_W = 2.0 ** -64
RANGE_X = 2.0 ** 10            # × 2^10 = 2^20: past float16's range
#: fraction bits of the narrow precisions, each with an entry 3/4 ulp above 1 (nearest rounds up)
ROUNDING_FRACTIONS = (7, 10)
FTZ_X = 2.0 ** -63             # × 2^-64 = 2^-127: a subnormal result
DAZ_X = 2.0 ** -136            # a subnormal input; × 2^10 = 2^-126, the smallest normal
PROBE_TIMEOUT = 120.0
#: the activations the probe tries, in order, and the scale of the bits entries under each
VARIANTS = (("Relu", 1.0), ("Tanh", 2.0 ** -30))


#: the GRU form's update-gate bias: sigmoid(-200) < 2^-288, 0 in every precision
SHUT = -200.0


def probe_case(activation: str = "Relu", op: str = "RNN") -> Case:
    """The probe as an RNN, or (``op="GRU"``) as a GRU computing the same values (see above)."""
    scale = dict(VARIANTS)[activation]
    rows = [[(1.0 + 2.0 ** -k) * scale / SCALE, 0.0] for k in FRACTION_BITS]
    rows += [[RANGE_X, 0.0], [0.0, FTZ_X], [DAZ_X, 0.0]]
    rows += [[(1.0 + 3.0 * 2.0 ** -(f + 2)) * scale / SCALE, 0.0] for f in ROUNDING_FRACTIONS]
    x = np.array(rows, dtype=np.float32)[None]                   # [S=1, B, I=2]
    w = np.array([[[SCALE, TINY_W]]], dtype=np.float32)          # [D=1, H=1, I=2]
    r = np.zeros((1, 1, 1), dtype=np.float32)
    if op == "GRU":
        zero = np.zeros((1, 1, 2), dtype=np.float32)
        bias = np.array([[SHUT, 0, 0, 0, 0, 0]], dtype=np.float32)
        return Case(id=f"probe/arithmetic-gru-{activation.lower()}", op="GRU", form="sequence",
                    attributes={"hidden_size": 1, "activations": ["Sigmoid", activation],
                                "linear_before_reset": 1},
                    shape={"seq_length": 1, "batch_size": x.shape[1], "input_size": 2}, dtype="float32",
                    tensors={"X": x, "W": np.concatenate([zero, zero, w], axis=1),
                             "R": np.zeros((1, 3, 1), dtype=np.float32), "B": bias},
                    outputs=("Y_h",), description="the arithmetic probe as a GRU (conformance/run/probe.py)")
    return Case(id=f"probe/arithmetic-{activation.lower()}", op="RNN", form="sequence",
                attributes={"hidden_size": 1, "activations": [activation]},
                shape={"seq_length": 1, "batch_size": x.shape[1], "input_size": 2}, dtype="float32",
                tensors={"X": x, "W": w, "R": r}, outputs=("Y_h",),
                description="the arithmetic probe (conformance/run/probe.py)")


def decode(y: np.ndarray, activation: str = "Relu") -> dict:
    """The measured configuration from the probe's Y_h (any shape holding the batch in order)."""
    scale = dict(VARIANTS)[activation]
    y = np.asarray(y, dtype=np.float64).ravel()
    n = len(FRACTION_BITS)
    size = n + 3 + len(ROUNDING_FRACTIONS)
    if y.size != size:
        raise ValueError(f"the probe returned {y.size} values, but should return {size}")
    kept = 0
    for k, value in zip(FRACTION_BITS, y[:n]):
        if value != (1.0 + 2.0 ** -k) * scale:
            break
        kept = k
    bits: int | None  # None: no significand to read (below)
    bits = kept + 1
    if activation == "Relu":
        narrow_range = not np.isfinite(y[n]) or y[n] != RANGE_X * SCALE
    else:  # tanh saturates at 2^20; float16 shows as the 2^-30 values vanishing instead
        narrow_range = bool(np.all(y[:n] == 0))
        bits = 24 if bits >= 20 else bits  # a tanh a few ulps off costs the last bits only
    ftz = bool(y[n + 1] == 0.0)
    daz = bool(y[n + 2] == 0.0)
    if narrow_range and activation != "Relu":  # the bits entries vanished: no significand to read
        name, bits = "f16", None
    elif narrow_range:
        name = "f16" if bits == 11 else f"{bits}-bit significand, float16's range"
    else:
        name = {24: "f32", 11: "tf32", 8: "bf16"}.get(bits, f"{bits}-bit significand")
    rounding = "nearest"  # float32 itself: IEEE's default, not told apart here
    for f, value in zip(ROUNDING_FRACTIONS, y[n + 3:]):
        if bits is not None and bits == f + 1:
            rounding = "nearest" if value == (1.0 + 2.0 ** -f) * scale else "faithful"
    return {"precision": name, "bits": bits, "float16_range": bool(narrow_range),
            "flushes_subnormals": ftz, "denormals_are_zero": daz, "rounding": rounding,
            "activation": activation}


def measure(targets: list, pool: Pool, timeout: float = PROBE_TIMEOUT, folder: str | Path | None = None) -> dict:
    """{RuntimeRef: configuration} for every distinct runtime among ``targets``: the probe's
    measurement, the adapter's ``effective()`` for the probe's model (declared) and its
    ``describe()`` (static facts), or the reason the probe could not run."""
    answers: dict[RuntimeRef, dict[str, Any]] = {}
    left: dict[RuntimeRef, list[Target]] = {}
    for t in targets:
        left.setdefault(t.ref, []).append(t)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        for activation, _ in VARIANTS:  # a runtime that refuses one variant gets the next
            if not left:
                break
            cases = (probe_case(activation), probe_case(activation, "GRU"))
            jobs: list[Job] = []
            for ref, group in left.items():
                prog, reasons = None, []
                for case in cases:  # the RNN, else the GRU form (a spec without a plain RNN)
                    for t in group:  # the first of the runtime's specs that can say the probe
                        if t.spec not in SPECS:
                            continue
                        prog = translate(SPECS[t.spec], case)
                        if not isinstance(prog, NotExpressible):
                            break
                        reasons.append(f"{t.spec}: {prog.reason}")
                        prog = None
                    if prog is not None:
                        break
                if prog is None:
                    answers[ref] = {"probe": "not run: " + ("; ".join(reasons) or "no translator")}
                    continue
                assert not isinstance(prog, NotExpressible)  # a refusal was set back to None above
                where = Path(tmp) / f"{activation}-{len(jobs)}"
                where.mkdir()
                SPECS[prog.spec].write(prog, where)
                jobs.append(Job(("probe", ref, prog), "probe", (ref, prog.runtime_input(), prog.feeds), timeout))
            left = {}
            for outcome in pool.outcomes(jobs):
                _, ref, prog = outcome.key
                answers[ref] = _read(outcome, prog, activation)
                if outcome.status == "error" or fell_back(outcome.effective):  # refused, or ran elsewhere:
                    left[ref] = [t for t in targets if t.ref == ref]          # try the next variant
    return answers


def fell_back(effective: dict | None) -> str:
    """Where a call's node ran on another provider than the target's (the path's ``fallback``: a
    CUDA target whose RNN the CPU provider ran), what ran where; else ''."""
    path = (effective or {}).get("path")
    return str(path.get("fallback") or "") if isinstance(path, dict) else ""


def _read(outcome, prog, activation: str) -> dict:
    info = {"declared": outcome.effective or {}, "describe": outcome.describe or {}}
    if outcome.status != "ok":
        return dict(info, probe=f"{outcome.status}: {outcome.error}"[:300])
    if fell_back(outcome.effective):  # its outputs measure the provider that ran it, not the target
        return dict(info, probe=f"not measured: {fell_back(outcome.effective)}"[:300])
    try:
        names = [canonical for _, canonical in prog.outputs]
        y = prog.to_canonical("Y_h", np.asarray(outcome.value[names.index("Y_h")]))
        return dict(info, probe="measured", measured=decode(y, activation))
    except Exception as exc:  # noqa: BLE001 - a runtime that garbles the probe costs the measurement
        return dict(info, probe=f"unreadable: {type(exc).__name__}: {exc}"[:300])


def measured(targets: list, pool: Pool, timeout: float = PROBE_TIMEOUT, folder: str | Path | None = None) -> list:
    """``targets`` with their measured configuration: ``configuration`` set, and ``precision``
    (so their ids name a precision other than float32's), and ``configuration["activations"]``, the
    kernel's tanh and sigmoid as the activation probe measured them (conformance/run/activations.py)."""
    import dataclasses

    from conformance.run import activations
    answers = measure(targets, pool, timeout, folder)
    out = []
    for t in targets:
        configuration = answers.get(t.ref, {"probe": "not run"})
        out.append(dataclasses.replace(t, precision=target_precision(configuration),
                                       configuration=configuration))
    # then the kernel's tanh and sigmoid, on a grid exact in the precision just measured
    accuracy = activations.measure(out, pool, timeout, folder)
    return [dataclasses.replace(t, configuration=dict(t.configuration, activations=accuracy[t.ref]))
            if accuracy.get(t.ref) else t for t in out]
