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
        layers = int(case.attributes.get("num_layers", 1) or 1)
        for name, arr in case.tensors.items():
            base = name.rsplit("_l", 1)[0] if _layer_names(name) else name
            if name in ("initial_h", "initial_c") and layers > 1:  # [l0 fwd, l0 rev, l1 fwd, ...]
                tensors[name] = np.ascontiguousarray(arr[0::2] if first else arr[1::2])
            elif base in PER_DIRECTION_INPUTS or base == "W_hr":
                kept = arr[:1] if first else arr[1:]
                if base == "W" and name != "W" and kept.ndim == 3:  # reads [forward, reverse] of the layer below
                    half = kept.shape[2] // 2
                    kept = kept[:, :, :half] if first else kept[:, :, half:]
                tensors[name] = np.ascontiguousarray(kept)
        for key in PER_DIRECTION_ATTRIBUTES:
            if key in attrs and len(attrs[key]) % 2 == 0:
                half = len(attrs[key]) // 2
                attrs[key] = list(attrs[key])[:half] if first else list(attrs[key])[half:]
    return replace(case, direction, attrs, tensors)


def _layer_names(name: str) -> bool:
    """Whether ``name`` is a further layer's input (``W_l1``, ``B_l2``, ``W_hr_l1``)."""
    return "_l" in name and name.rsplit("_l", 1)[1].isdigit()


def one_layer(case: Case) -> Case:
    """A stack (``num_layers``) as its first layer alone: the further layers' inputs dropped, the
    states' first D rows kept."""
    d = 2 if case.direction == "bidirectional" else 1
    attrs = {k: v for k, v in case.attributes.items() if k != "num_layers"}
    tensors = {k: (np.ascontiguousarray(v[:d]) if k in ("initial_h", "initial_c") else v)
               for k, v in case.tensors.items() if not _layer_names(k)}
    return replace(case, "one-layer", attrs, tensors)


def without_projection(case: Case) -> Case:
    """An LSTM with a projection (``proj_size``) as one without: the recurrence keeps its weights
    through the projection (R·W_hr, and a further layer's W·W_hr per direction, rounded to the dtype),
    the outputs are hidden_size wide, and initial_h is padded with zeros to hidden_size."""
    attrs = {k: v for k, v in case.attributes.items() if k != "proj_size"}
    tensors = dict(case.tensors)
    hidden = case.hidden_size

    def through(name: str, layer: str) -> None:
        projection = case.tensors.get("W_hr" + layer)
        if name not in tensors or projection is None:
            return
        arr = tensors[name].astype(np.float64)
        whr = projection.astype(np.float64)
        if name.startswith("R"):
            out = np.stack([arr[d] @ whr[d] for d in range(arr.shape[0])])
        else:  # a further layer's W reads [forward, reverse] of the layer below
            below = case.tensors.get("W_hr" + ("" if layer in ("", "_l1") else f"_l{int(layer[2:]) - 1}"))
            assert below is not None
            block = np.zeros((arr.shape[2] // below.shape[1] * hidden, arr.shape[2]))
            for k in range(arr.shape[2] // below.shape[1]):
                block[k * hidden:(k + 1) * hidden, k * below.shape[1]:(k + 1) * below.shape[1]] = below[k].T
            out = np.stack([arr[d] @ block.T for d in range(arr.shape[0])])
        tensors[name] = out.astype(tensors[name].dtype)

    layers = int(case.attributes.get("num_layers", 1))
    for layer in range(layers):
        suffix = "" if layer == 0 else f"_l{layer}"
        through("R" + suffix, suffix)
        if layer:
            through("W" + suffix, suffix)
    for layer in range(layers):
        tensors.pop("W_hr" + ("" if layer == 0 else f"_l{layer}"), None)
    if "initial_h" in tensors:
        h = tensors["initial_h"]
        tensors["initial_h"] = np.ascontiguousarray(np.pad(h, ((0, 0), (0, 0), (0, hidden - h.shape[2]))))
    return replace(case, "no-projection", attrs, tensors)


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
