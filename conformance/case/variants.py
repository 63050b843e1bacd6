"""Other inputs for the same program: a case at other (sequence, batch) shapes, or with other values.

The execution forms (conformance/runtimes/forms.py) run one compiled program on several inputs:
``shape=dynamic`` at the case's shape and at two others, ``session=reused`` after other inputs.
Those inputs are cases of their own, each judged by the oracle, that share everything the program
holds: the op, its attributes, dtype and W, R, B, P. What a program is fed (X, the initial states
and sequence_lens) is drawn again, deterministically from the case's content, within the range of
the case's own values; sequence lengths vary per batch entry, as a padded batch does in production
(at least one entry runs the whole sequence, none is empty). A cell stays one step long.
"""

from __future__ import annotations

import dataclasses
import math
import zlib

import numpy as np

from conformance.case.model import Case

#: the inputs a variant draws again (everything else is the program's and stays the case's)
FED = ("X", "initial_h", "initial_c")
#: above this many (sequence × batch) entries a case is production-sized: its variants are smaller
LARGE = 4096


def shapes(case: Case) -> list[tuple[int, int]]:
    """Two (seq_length, batch_size) shapes other than the case's: a longer and wider one (a batch of at
    least 3 entries, where buffers sized for one row show) and a shorter, narrower one; a
    production-sized case gets two smaller ones. A cell's sequence stays 1."""
    s, b = case.shape["seq_length"], case.shape["batch_size"]
    if s * b > LARGE:
        candidates = [(math.ceil(s / 2), max(1, b // 2)), (max(1, s // 3), 1), (s, max(1, b // 4))]
    else:
        candidates = [(s + 2, max(b + 1, 3)), (math.ceil(s / 2), 1), (s + 1, 2), (1, b + 1), (s, b + 2)]
    found: list[tuple[int, int]] = []
    for cs, cb in candidates:
        shape = (1 if case.form == "cell" else cs, cb)
        if shape != (s, b) and shape not in found:
            found.append(shape)
    return found[:2]


def at_shape(case: Case, seq_length: int, batch_size: int, index: int = 0) -> Case:
    """The case at another shape: X, the initial states and the sequence lengths drawn again (the
    ``index``-th draw), the program's own inputs kept. Its id says the shape: ``<id>~shape=7x4``."""
    rng = _rng(case, index)
    tensors = dict(case.tensors)
    for name in FED:
        arr = case.tensors.get(name)
        if arr is None:
            continue
        shape = (seq_length, batch_size, arr.shape[-1]) if name == "X" else (arr.shape[0], batch_size, arr.shape[-1])
        tensors[name] = _draw(arr, shape, rng)
    if "sequence_lens" in case.tensors:
        tensors["sequence_lens"] = lengths(seq_length, batch_size, rng, case.form)
    sizes = dict(case.shape, seq_length=seq_length, batch_size=batch_size)
    return dataclasses.replace(case, id=f"{case.id}~shape={seq_length}x{batch_size}", shape=sizes, tensors=tensors,
                               tolerance=case.tolerance)


def other_values(case: Case, index: int) -> Case:
    """The case at its own shape with X, the initial states and the lengths drawn again: another
    input of a program whose shapes are fixed (``session=reused`` with ``shape=static``)."""
    s, b = case.shape["seq_length"], case.shape["batch_size"]
    found = at_shape(case, s, b, 100 + index)
    return dataclasses.replace(found, id=f"{case.id}~values={index}")


def lengths(seq_length: int, batch_size: int, rng: np.random.Generator, form: str = "sequence") -> np.ndarray:
    """Per-entry lengths in [1, seq_length], the longest entry running the whole sequence."""
    if form == "cell" or seq_length == 1:
        return np.ones((batch_size,), dtype=np.int32)
    found = rng.integers(1, seq_length + 1, size=batch_size).astype(np.int32)
    found[int(rng.integers(0, batch_size))] = seq_length
    return found


def _rng(case: Case, index: int) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(case.digest.encode()), index])


def _draw(like: np.ndarray, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    """Values in the range of ``like``'s finite values (uniform, drawn in float64 and rounded once to
    its dtype); [-1, 1] where it has no finite range."""
    values = np.asarray(like, dtype=np.float64)
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 1.0)
    if low == high:
        low, high = low - 1.0, high + 1.0
    return rng.uniform(low, high, size=shape).astype(like.dtype)
