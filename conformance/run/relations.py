"""Self-consistency relations: a runtime compared with itself, cheap at any size (no oracle).

Each relation derives cases from the pair's case whose outputs, on a correct runtime, equal parts of
the case's own outputs:

- ``batch-slice``: the batch's last entry run alone equals that entry inside the batch;
- ``truncation``: an entry's X cut to its sequence length, run without sequence_lens, equals the
  entry run with that length;
- ``directions``: a bidirectional op equals its forward pass and its reverse pass run apart;
- ``layout``: the case written in the other ONNX layout gives the same values;
- ``unrolled``: the op run one step at a time as a cell, each step's state fed to the next, equals
  the sequence op.

A relation that breaks beyond :data:`ULPS` units in the last place of the larger of the compared
values' magnitudes (a runtime may legitimately sum in another order for another batch size or
length, nothing more) gives the pair the verdict ``inconsistent``, naming the relation. Only the
elements the specs define are compared: an entry's Y past its length and the states of an empty
sequence are left out. docs/forms.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from conformance.case.edits import one_direction, replace
from conformance.case.model import Case
from conformance.compare.metrics import ulp_of

#: how far (in units in the last place of the compared values' largest magnitude) two results of a
#: runtime that a relation says are equal may differ: summation order, nothing more (measured on the
#: pinned runtimes: docs/forms.md)
ULPS = 8.0
#: the longest sequence the unrolled relation runs step by step
UNROLL_MAX = 64


@dataclass
class Relation:
    """One relation of a case: the derived cases it runs (fresh, or ``chain``: one call per step with
    the states carried), and which parts of the outputs must agree."""

    name: str
    sentence: str
    cases: list[Case]
    #: (the case's canonical outputs, the derived calls' canonical outputs) -> [(what, a, b)]
    pairs: Callable[[dict, list[dict]], list[tuple[str, np.ndarray, np.ndarray]]]
    chain: bool = False


def relations(case: Case) -> list[Relation]:
    """The relations that apply to a valid case (a sequence op's relations; a cell has the slices)."""
    if not case.valid or "X" not in case.tensors:
        return []
    found = [r for r in (batch_slice(case), truncation(case), directions(case), layout(case), unrolled(case)) if r]
    return found


def distance(a: np.ndarray, b: np.ndarray, dtype: str) -> float:
    """How far apart two results are, in units in the last place (of ``dtype``) of the larger
    magnitude among their finite values; NaN against NaN and equal infinities are no distance."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        return float("inf")
    same = (np.isnan(x) & np.isnan(y)) | (x == y)
    if same.all():
        return 0.0
    finite = np.concatenate([np.abs(x[np.isfinite(x)]), np.abs(y[np.isfinite(y)])])
    scale = float(finite.max()) if finite.size else 1.0
    unit = float(ulp_of(np.array([scale if scale > 0 else 1.0]), dtype)[0])
    with np.errstate(invalid="ignore"):
        gap = np.where(same, 0.0, np.abs(x - y))
    gap = np.where(np.isnan(gap), np.inf, gap)
    return float(gap.max() / unit)


def lengths_of(case: Case) -> np.ndarray:
    lens = case.tensors.get("sequence_lens")
    return np.asarray(lens) if lens is not None else np.full(case.shape["batch_size"], case.shape["seq_length"])


def _entry(case: Case, b: int, suffix: str, seq: int | None = None) -> Case:
    """Batch entry ``b`` of the case alone (X cut to ``seq`` steps, without sequence_lens, when given)."""
    tensors = {}
    for name, arr in case.tensors.items():
        if name == "X":
            tensors[name] = np.ascontiguousarray(arr[: seq if seq else None, b:b + 1])
        elif name in ("initial_h", "initial_c"):
            tensors[name] = np.ascontiguousarray(arr[:, b:b + 1])
        elif name == "sequence_lens":
            if seq is None:
                tensors[name] = np.ascontiguousarray(arr[b:b + 1])
        else:
            tensors[name] = arr
    shape = dict(case.shape, batch_size=1, **({"seq_length": seq} if seq else {}))
    return replace(case, suffix, tensors=tensors, shape=shape)


def _entry_pairs(b: int, length: int, seq: int | None = None):
    """Compare entry ``b`` of the case's outputs with the derived call's only entry: Y up to the
    entry's length, the final states where the entry is not empty."""
    def pairs(main: dict, derived: list[dict]) -> list:
        got = derived[0]
        found = []
        if "Y" in main and "Y" in got and length > 0:
            found.append(("Y", main["Y"][:length, :, b], got["Y"][:length, :, 0]))
        for name in ("Y_h", "Y_c"):
            if name in main and name in got and length > 0:
                found.append((name, main[name][:, b], got[name][:, 0]))
        return found
    return pairs


def batch_slice(case: Case) -> Relation | None:
    b = case.shape["batch_size"] - 1
    if b < 1:
        return None
    length = int(lengths_of(case)[b]) if case.form == "sequence" else 1
    return Relation("batch-slice", f"batch entry {b} run alone equals entry {b} inside the batch of {b + 1}",
                    [_entry(case, b, f"entry={b}")], _entry_pairs(b, min(length, case.shape["seq_length"])))


def truncation(case: Case) -> Relation | None:
    if case.form != "sequence" or "sequence_lens" not in case.tensors:
        return None
    s, lens = case.shape["seq_length"], lengths_of(case)
    partial = [(int(n), b) for b, n in enumerate(lens) if 0 < int(n) < s]
    if not partial:
        return None
    n, b = min(partial)
    return Relation("truncation", f"entry {b}'s X cut to its length {n}, run without sequence_lens, equals the "
                                  f"entry run with sequence_lens {n}",
                    [_entry(case, b, f"truncated={b}", seq=n)], _entry_pairs(b, n, n))


def directions(case: Case) -> Relation | None:
    """Not where activation_alpha/beta are given: how a bidirectional op's parameter list splits
    between its directions is a documented ambiguity (docs/disagreements.md, "Activation parameter
    order"), so a pass run apart
    has no one right list."""
    if case.direction != "bidirectional" or case.form != "sequence":
        return None
    if "activation_alpha" in case.attributes or "activation_beta" in case.attributes:
        return None

    def pairs(main: dict, derived: list[dict]) -> list:
        found = []
        for d, got in enumerate(derived):
            for name in ("Y", "Y_h", "Y_c"):
                if name in main and name in got:
                    part = main[name][:, d:d + 1] if name == "Y" else main[name][d:d + 1]
                    found.append((f"{name} ({('forward', 'reverse')[d]})", part, got[name]))
        return found
    return Relation("directions", "the bidirectional op equals its forward and reverse passes run apart",
                    [one_direction(case, "forward"), one_direction(case, "reverse")], pairs)


def layout(case: Case) -> Relation | None:
    if case.form != "sequence" or case.layout not in (0, 1):
        return None
    other = replace(case, f"layout={1 - case.layout}", dict(case.attributes, layout=1 - case.layout))

    def pairs(main: dict, derived: list[dict]) -> list:
        return [(name, main[name], derived[0][name]) for name in main if name in derived[0]]
    return Relation("layout", f"the case written in layout {1 - case.layout} gives the values of layout "
                              f"{case.layout}", [other], pairs)


def unrolled(case: Case) -> Relation | None:
    """The op as a cell, one step at a time, each step fed the previous step's states."""
    s = case.shape["seq_length"]
    if case.form != "sequence" or case.direction == "bidirectional" or not 1 < s <= UNROLL_MAX:
        return None
    if np.any(lengths_of(case) != s):
        return None
    steps = range(s - 1, -1, -1) if case.direction == "reverse" else range(s)
    d, b = 1, case.shape["batch_size"]
    h = case.hidden_size
    states = {n: case.tensors.get(n, np.zeros((d, b, h), dtype=case.tensors["X"].dtype))
              for n in (("initial_h", "initial_c") if case.op == "LSTM" else ("initial_h",))}
    attrs = {k: v for k, v in case.attributes.items() if k != "direction"}
    cells = []
    for t in steps:
        tensors = {k: v for k, v in case.tensors.items() if k not in ("X", "sequence_lens", *states)}
        tensors.update(states, X=np.ascontiguousarray(case.tensors["X"][t:t + 1]))
        cells.append(dataclasses.replace(replace(case, f"step={t}", attrs, tensors), form="cell", outputs=(),
                                         shape=dict(case.shape, seq_length=1)))

    def pairs(main: dict, derived: list[dict]) -> list:
        found = []
        if "Y" in main:
            found += [(f"Y[{t}]", main["Y"][t:t + 1], got["Y"]) for t, got in zip(steps, derived) if "Y" in got]
        last = derived[-1]
        found += [(name, main[name], last[name]) for name in ("Y_h", "Y_c") if name in main and name in last]
        return found
    return Relation("unrolled", f"the op run as a cell one step at a time ({s} steps, each fed the previous "
                                f"states) equals the sequence op", cells, pairs, chain=True)
