"""Edits of a case that take one feature away: the removals behind ablation and reduction.

Each returns a new case whose id carries the edit (``<id>~<suffix>``); the input case is not
changed. The feature table (:data:`conformance.case.features.FEATURES`) names which edit removes
which feature.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from conformance.case.model import Case
from conformance.case.vocabulary import canonical_activation

#: the inputs and attributes that hold one value per direction (halved by a one-direction edit)
PER_DIRECTION_INPUTS = ("W", "R", "B", "initial_h", "initial_c", "P")
PER_DIRECTION_ATTRIBUTES = ("activations", "activation_alpha", "activation_beta")


def replace(case: Case, suffix: str, attributes: Mapping[str, Any] | None = None,
            tensors: Mapping[str, np.ndarray[Any, Any]] | None = None, **fields: Any) -> Case:
    """``case`` with new attributes, tensors or fields, its id suffixed ``~suffix``."""
    attrs = dict(case.attributes if attributes is None else attributes)
    tens = dict(case.tensors if tensors is None else tensors)
    return dataclasses.replace(case, id=f"{case.id}~{suffix}", attributes=attrs, tensors=tens, **fields)


def without_attributes(case: Case, suffix: str, *names: str) -> Case:
    return replace(case, suffix, {k: v for k, v in case.attributes.items() if k not in names})


def without_tensors(case: Case, suffix: str, *names: str) -> Case:
    return replace(case, suffix, tensors={k: v for k, v in case.tensors.items() if k not in names})


def one_direction(case: Case, direction: str) -> Case:
    """A case as one of its passes: ``forward`` keeps a bidirectional case's first half of every
    per-direction value, ``reverse`` its second half."""
    attrs = dict(case.attributes, direction=direction)
    tensors = dict(case.tensors)
    if case.direction == "bidirectional":
        first = direction == "forward"
        for name in PER_DIRECTION_INPUTS:
            if name in tensors:
                tensors[name] = np.ascontiguousarray(tensors[name][:1] if first else tensors[name][1:])
        for key in PER_DIRECTION_ATTRIBUTES:
            if key in attrs and len(attrs[key]) % 2 == 0:
                half = len(attrs[key]) // 2
                attrs[key] = list(attrs[key])[:half] if first else list(attrs[key])[half:]
    return replace(case, direction, attrs, tensors)


def moderate(case: Case, limit: float = 1.0) -> Case:
    """``case`` with every floating tensor whose finite values go beyond ``limit`` scaled down so that
    its largest finite magnitude is ``limit`` (the fuzzer's reduction of the feature ``large``)."""
    tensors = dict(case.tensors)
    for name, arr in case.tensors.items():
        if name == "sequence_lens" or not (arr.dtype.kind == "f" or arr.dtype.name == "bfloat16"):
            continue
        wide = np.asarray(arr, dtype=np.float64)
        finite = np.abs(wide[np.isfinite(wide)])
        if finite.size and finite.max() > limit:
            tensors[name] = (wide * (limit / finite.max())).astype(arr.dtype)
    return replace(case, "moderate", tensors=tensors)


def float32(case: Case) -> Case:
    tensors = {k: (v.astype(np.float32) if v.dtype.kind == "f" or v.dtype.name == "bfloat16" else v)
               for k, v in case.tensors.items()}
    return replace(case, "float32", tensors=tensors, dtype="float32")


def canonical_names(case: Case) -> Case:
    attrs = dict(case.attributes)
    attrs["activations"] = [canonical_activation(a) or a for a in attrs["activations"]]
    return replace(case, "onnx-spelling", attrs)
