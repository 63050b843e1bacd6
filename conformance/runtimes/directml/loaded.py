"""A written DirectML descriptor document read back: the operator desc, its tensors read from their
buffer files through each desc's own Sizes and Strides, after validation against DirectML's
documented constraints (docs/specs.md, DirectML)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

import conformance.specs.directml.vocabulary as v
from conformance.runtimes.base import RuntimeRejected
from conformance.specs.directml.buffers import (
    DescriptorError,
    load_document,
    read_binding,
    read_tensor,
)
from conformance.specs.directml.validate import validate_document


@dataclass
class Loaded:
    """A validated descriptor with its input tensors read from their buffers."""

    op: str
    desc: dict                 # the DML_*_OPERATOR_DESC object
    tensors: dict              # input field -> array shaped like its Sizes (absent: missing)
    outputs: list              # present output fields, struct order

    @property
    def dtype(self) -> np.dtype:
        return v.NUMPY_TYPE[self.desc["InputTensor"]["Desc"]["DataType"]].newbyteorder("=")

    @property
    def num_directions(self) -> int:
        return v.NUM_DIRECTIONS[self.desc["Direction"]]


def load(path) -> Loaded:
    """Read, validate and load a written descriptor; RuntimeRejected when DirectML would refuse it."""
    path = Path(path)
    try:
        document = load_document(path)
    except DescriptorError as exc:
        raise RuntimeRejected(str(exc)) from None
    violations = validate_document(document, path.parent)
    if violations:
        raise RuntimeRejected(f"{len(violations)} DirectML constraint(s) violated: "
                              + "; ".join(str(x) for x in violations))
    op = v.OP_OF_TYPE[document["OperatorDesc"]["Type"]]
    desc = document["OperatorDesc"]["Desc"]
    tensors = {}
    try:
        for field in v.INPUT_FIELDS[op]:
            if desc[field] is not None:
                raw = read_binding(path.parent, document["bindings"][field], field)
                tensors[field] = read_tensor(desc[field]["Desc"], raw, field)
    except DescriptorError as exc:
        raise RuntimeRejected(str(exc)) from None
    outputs = [f for f in v.OUTPUT_FIELDS[op] if desc[f] is not None]
    loaded = Loaded(op, desc, tensors, outputs)
    _check_lengths(loaded)
    if op == "LSTM" and desc["UseClipThreshold"] and desc["ClipThreshold"] < 0:
        raise RuntimeRejected(
            f"ClipThreshold = {desc['ClipThreshold']!r} with UseClipThreshold TRUE, but should be >= 0: "
            "DirectML bounds to [-ClipThreshold, +ClipThreshold], an empty range here, and documents "
            "no meaning for it")
    return loaded


def no_feeds(feeds) -> None:
    """Refuses feeds: a DirectML program reads every tensor from its buffer files."""
    if feeds:
        raise TypeError(f"feeds {sorted(feeds)!r} given, but a DirectML program reads every tensor "
                        "from its buffer files; feeds should be empty")


def _check_lengths(p: Loaded) -> None:
    lengths = p.tensors.get("SequenceLengthsTensor")
    if lengths is None:
        return
    s = p.tensors["InputTensor"].shape[1]
    for b, length in enumerate(lengths.reshape(-1).tolist()):
        if length > s:
            raise RuntimeRejected(
                f"SequenceLengthsTensor[{b}] = {length}, but should be <= seq_length = {s}: DirectML "
                "documents 'an independent seq_length for each element in the batch' and nothing past "
                "the InputTensor; the interpreter refuses rather than read past X")
