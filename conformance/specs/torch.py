"""torch translator: a canonical case as a ``torch.nn`` RNN/GRU/LSTM module (or its cell) with weights.

The program is a small JSON description of the module (kind, sizes, ``bidirectional``,
``nonlinearity``, ``batch_first``, whether the input is packed, which outputs to return) plus its
``state_dict`` as ``.npz``; :mod:`conformance.runtimes.torch` builds the module from both files.
This module imports numpy only, so cases translate where torch is not installed.

What the mapping does, by ONNX quantity:

- Gate order. torch stacks GRU gates r, z, n (ONNX z, r, h) and LSTM gates i, f, g, o (ONNX
  i, o, f, c); W, R and both bias halves are reordered block by block (exact).
- Biases. ONNX B = [Wb, Rb] is torch's ``bias_ih`` and ``bias_hh``, unsummed (exact); an absent B
  is ``bias=False`` (ONNX: zeros).
- GRU. torch computes ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``: ONNX linear_before_reset
  = 1. linear_before_reset = 0 (ONNX's default) is not expressible.
- Directions. ``bidirectional`` takes ONNX direction index 1 as ``*_reverse``. torch has no
  reverse-only mode: a reverse case is a bidirectional module whose forward direction has zero
  weights and whose forward outputs are dropped by the runtime adapter. torch computes the two
  directions of a single layer independently, so this is exact, and it runs torch's own reverse
  walk (packed sequences included) rather than a re-indexing of ours.
- sequence_lens. Present means packed input (``pack_padded_sequence(enforce_sorted=False)``); torch
  packs only lengths >= 1, so a length of 0 is not expressible. Y past a length comes back as
  ``pad_packed_sequence``'s zeros (ONNX leaves those elements unspecified).
- layout 1 is ``batch_first=True`` (X and Y batch-major); torch keeps h0/h_n [D,B,H] either way.
- Cells (``form: cell``) are ``RNNCell``/``GRUCell``/``LSTMCell`` on X[0] and initial_h[0].
- The framework's own axes (docs/framework.md): ``num_layers`` stacks layers (layer l's weights are
  the case's ``W_l<l>``, ``R_l<l>``, ``B_l<l>``; the states hold one [B, H] per layer and direction,
  layer-major, as torch's h0 and h_n do); ``proj_size`` is torch.nn.LSTM's projection (``W_hr``,
  ``weight_hr_l0``); ``dropout`` is written and the module run in eval mode; ``unbatched`` feeds X
  without its batch axis. A reverse-only stack is a bidirectional one whose forward directions are
  all zero, each layer above the first reading the zero forward half through zero columns (exact).

What torch cannot say is :class:`NotExpressible`: activations other than the defaults (RNN
tanh/relu), different activations per direction, activation_alpha/beta, clip, peepholes P,
input_forget = 1, GRU linear_before_reset = 0, a sequence length of 0, a bidirectional cell, and
for invalid cases the attribute values torch's API has no way to write (an unknown direction or
activation, a foreign attribute, a layout other than 0/1, a missing X).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from conformance.case.model import Case
from conformance.case.vocabulary import (
    ACTIVATIONS_PER_DIRECTION,
    ATTRIBUTES,
    DIRECTIONS,
    OUTPUTS,
    canonical_activation,
    output_size,
)
from conformance.specs.program import NotExpressible, Program, foreign_attributes
from conformance.specs.torch_weights import _layers, _state_dict

#: the activation sets torch computes, per op (canonical ONNX names, one direction)
TORCH_ACTIVATIONS = {"RNN": (("Tanh",), ("Relu",)), "GRU": (("Sigmoid", "Tanh"),),
                     "LSTM": (("Sigmoid", "Tanh", "Tanh"),)}

FORMAT_VERSION = "torch-rnn/2"


class TorchSpec:
    name = "torch"
    family = "torch"
    format = "torch"
    semantics = "torch"
    #: program forms it writes: ``shape=dynamic`` marks the program's batch and sequence dimensions as
    #: dynamic, which an exporter is asked to keep symbolic (conformance/converters/); the eager module
    #: takes any shape either way
    forms = {"shape": ["dynamic"]}

    def __repr__(self) -> str:
        return "TorchSpec()"

    def clause(self, case: Case) -> str:
        return f"torch.nn.{module_kind(case)}"

    def write(self, program: Program, folder) -> None:
        folder = Path(folder)
        weights = folder / f"{self.name}.npz"
        buffer = io.BytesIO()
        np.savez(buffer, **program.extra["state_dict"])
        weights.write_bytes(buffer.getvalue())
        description = json.loads(program.model)
        description["weights"] = weights.name
        path = folder / f"{self.name}.json"
        path.write_text(json.dumps(description, indent=1) + "\n")
        program.files["model"] = str(path)
        program.files["weights"] = str(weights)

    def expressible(self, case: Case) -> str | None:
        """Why torch cannot express the case (every reason, joined), or None."""
        reasons = _vocabulary_reasons(case)
        if case.valid:
            reasons += _semantic_reasons(case)
        return "; ".join(reasons) or None

    def translate(self, case: Case, form: dict | None = None) -> Program | NotExpressible:
        reason = foreign_attributes(self, case) or self.expressible(case)
        if reason:
            return NotExpressible(self.name, reason)
        if (form or {}).get("shape") == "dynamic" and case.attributes.get("unbatched") == 1:
            return NotExpressible(self.name, "unbatched input has no batch axis, and shape=dynamic runs the program at "
                                             "other batch sizes")
        prog = _translate_cell(self.name, case) if case.form == "cell" else _translate_sequence(self.name, case)
        if (form or {}).get("shape") == "dynamic":
            description = json.loads(prog.model)
            description["dynamic"] = True
            prog.model = json.dumps(description).encode()
            prog.notes.append("shape=dynamic: the batch and sequence dimensions are marked dynamic (an exporter "
                              "is asked for symbolic dimensions; the eager module takes any shape)")
        return prog


def module_kind(case: Case) -> str:
    return case.op + ("Cell" if case.form == "cell" else "")


def _names(case: Case) -> list[str] | None:
    if "activations" not in case.attributes:
        return None
    return [canonical_activation(a) or str(a) for a in case.attributes["activations"]]


def _vocabulary_reasons(case: Case) -> list[str]:
    """Values torch's API has no way to write, valid case or not."""
    attrs, op = case.attributes, case.op
    reasons = []
    direction = attrs.get("direction", "forward")
    if direction not in DIRECTIONS:
        reasons.append(f"direction={direction!r}: torch has no direction attribute, only "
                       f"bidirectional (a bool), so only forward, reverse and bidirectional can be written")
    foreign = [k for k in attrs if k not in ATTRIBUTES[op]]
    if foreign:
        reasons.append(f"torch.nn.{op} has no counterpart of the attribute(s) {foreign!r}")
    if "layout" in attrs and attrs["layout"] not in (0, 1):
        reasons.append(f"layout={attrs['layout']!r}: torch's batch_first is a bool (layout 0 or 1 only)")
    names = _names(case)
    if names is not None:
        unknown = [a for a in attrs["activations"] if canonical_activation(a) is None]
        per_dir = ACTIVATIONS_PER_DIRECTION[op]
        if unknown:
            reasons.append(f"activations {unknown!r} are not ONNX activations, and torch has no activation list to "
                           f"write them in")
        elif (direction in DIRECTIONS
              and len(names) not in {per_dir, per_dir * (2 if direction == "bidirectional" else 1)}):
            reasons.append(f"{len(names)} activations for {op} {direction}: torch has no activation list to write "
                           f"a count in")
    hidden = attrs.get("hidden_size")
    if not isinstance(hidden, int) or isinstance(hidden, bool):
        reasons.append(f"hidden_size={hidden!r}: torch modules need an integer hidden_size")
    if "X" not in case.tensors:
        reasons.append("X absent: a torch module takes the input as forward()'s argument, so there is no "
                       "program without it")
    if op == "LSTM" and "P" in case.tensors:
        reasons.append("peepholes P: torch.nn.LSTM has no peephole weights")
    if not case.valid and "clip" in attrs:  # a valid case gets this reason from _semantic_reasons
        reasons.append(f"clip={attrs['clip']!r}: torch does not clip gate inputs, so the case cannot be "
                       f"written without dropping it")
    if case.form == "cell":
        lens = case.tensors.get("sequence_lens")
        if lens is not None and (np.any(np.asarray(lens) != 1) or np.shape(lens) != (case.shape["batch_size"],)):
            reasons.append(f"sequence_lens {np.asarray(lens).tolist()} on a cell: torch's cells have no lengths "
                           f"input, so anything but one 1 per batch entry cannot be written")
        leading = [f"{n} {list(a.shape)}" for n in ("W", "R", "B", "initial_h", "initial_c")
                   if (a := case.tensors.get(n)) is not None and a.ndim >= 2 and a.shape[0] != 1]
        if leading:
            reasons.append(f"{', '.join(leading)}: a torch cell has no direction axis, so a leading axis "
                           f"other than 1 cannot be written")
    for name, rank in (("W", 3), ("R", 3), ("B", 2)):
        arr = case.tensors.get(name)
        if arr is not None and arr.ndim != rank:
            reasons.append(f"{name} of rank {arr.ndim} (shape {list(arr.shape)}), not {rank}: torch keeps one "
                           f"parameter per direction (no direction axis), so a missing or extra axis cannot be "
                           f"written")
    return reasons


def _semantic_reasons(case: Case) -> list[str]:
    """Formulas of a valid case that torch does not compute."""
    attrs, op = case.attributes, case.op
    reasons = []
    names = _names(case)
    if names is not None:
        per_dir = ACTIVATIONS_PER_DIRECTION[op]
        sets = [tuple(names[i:i + per_dir]) for i in range(0, len(names), per_dir)]
        if len(set(sets)) > 1:
            reasons.append(f"activations {names} differ per direction: torch has one set for both directions")
        elif sets[0] not in TORCH_ACTIVATIONS[op]:
            allowed = " or ".join(str(list(s)) for s in TORCH_ACTIVATIONS[op])
            reasons.append(f"activations {list(sets[0])}: torch.nn.{op} computes {allowed} only")
    for key in ("activation_alpha", "activation_beta"):
        if key in attrs:
            reasons.append(f"{key}: torch's activations take no parameters")
    if "clip" in attrs:
        reasons.append(f"clip={attrs['clip']!r}: torch does not clip gate inputs")
    if op == "LSTM" and int(attrs.get("input_forget", 0)) != 0:
        reasons.append("input_forget=1: torch.nn.LSTM has no coupled input and forget gates")
    if op == "GRU" and int(attrs.get("linear_before_reset", 0)) == 0:
        reasons.append("linear_before_reset=0: torch.nn.GRU applies the reset gate after the recurrent matmul "
                       "(n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), ONNX linear_before_reset=1) only")
    lens = case.tensors.get("sequence_lens")
    if lens is not None and np.any(np.asarray(lens) == 0):
        reasons.append(f"sequence_lens {np.asarray(lens).tolist()} has a 0: torch packed sequences need every "
                       f"length >= 1 (pack_padded_sequence refuses 0)")
    if case.form == "cell" and case.direction == "bidirectional":
        reasons.append("bidirectional cell: torch's RNNCell/GRUCell/LSTMCell run one direction")
    if attrs.get("unbatched") == 1 and lens is not None and case.form != "cell":
        reasons.append("unbatched input with sequence_lens: pack_padded_sequence packs a batch, so unbatched "
                       "input cannot be packed")
    return reasons


def _common(case: Case) -> tuple[dict, list[str]]:
    notes = []
    description = {"format": FORMAT_VERSION, "case": case.id, "module": module_kind(case),
                   "input_size": case.shape["input_size"], "hidden_size": case.hidden_size,
                   "bias": "B" in case.tensors, "dtype": case.dtype,
                   "unbatched": case.attributes.get("unbatched") == 1}
    names = _names(case)
    if case.op == "RNN":
        description["nonlinearity"] = (names[0] if names else "Tanh").lower()
    if "B" not in case.tensors:
        notes.append("B absent: torch module with bias=False (ONNX: zero biases)")
    if names is not None and [str(a) for a in case.attributes["activations"]] != names:
        notes.append(f"activation names {case.attributes['activations']} read case-insensitively as {names} "
                     f"(docs/disagreements.md#activation-name-case: ONNX is silent on case)")
    if case.dtype == "bfloat16":
        notes.append("bfloat16 weights stored as their 16-bit patterns in the .npz (numpy has no bfloat16); "
                     "the runtime views them as torch.bfloat16 (exact)")
    return description, notes


def _wanted(case: Case) -> list[str]:
    return [n for n in OUTPUTS[case.op] if n in (case.outputs or OUTPUTS[case.op])]


def _translate_sequence(spec: str, case: Case) -> Program:
    description, notes = _common(case)
    direction = case.direction
    reverse_only = direction == "reverse"
    shift = 1 if reverse_only else 0
    batch_first = case.layout == 1
    packed = "sequence_lens" in case.tensors
    layers = _layers(case)
    proj = output_size(case.op, case.hidden_size, case.attributes)
    description.update({"num_layers": layers, "bidirectional": direction != "forward", "batch_first": batch_first,
                        "packed": packed, "keep_direction": 1 if reverse_only else None,
                        "proj_size": proj if proj != case.hidden_size else 0,
                        "dropout": float(case.attributes.get("dropout", 0.0)), "steps": case.shape["seq_length"]})
    if layers > 1:
        notes.append(f"num_layers {layers}: layer l's weights are the case's W_l<l>, R_l<l>, B_l<l> (weight_ih_l<l>, "
                     f"...); initial_h/Y_h hold one [B, H] per layer and direction, layer-major (torch's h0, h_n)")
    if description["dropout"]:
        notes.append(f"dropout {description['dropout']}: written, and the module run in eval mode (no dropout)")
    if reverse_only:
        notes.append("direction reverse: torch has no reverse-only mode; written as a bidirectional module with "
                     "zero forward weights and zero forward initial state, the runtime keeping the reverse "
                     "direction's outputs only (structural; exact, as torch runs a layer's directions "
                     "independently)")
    if batch_first:
        notes.append("layout 1: batch_first=True, X fed [B,S,I] and Y returned [B,S,D,H]; torch keeps "
                     "h0/h_n/c_n [D,B,H] (ONNX layout 1 has [B,D,H]), fed and read as layout 0")
    if packed:
        notes.append("sequence_lens: input packed with pack_padded_sequence(enforce_sorted=False) and Y "
                     "unpacked with pad_packed_sequence (zeros past each length, which ONNX leaves unspecified)")

    x = case.tensors["X"]
    feeds = {"input": np.ascontiguousarray(np.transpose(x, (1, 0, 2)) if batch_first and x.ndim == 3 else x)}
    for feed, arr in _initial_states(case, notes, "torch.nn.LSTM takes (h0, c0) together"):
        if reverse_only and arr.ndim >= 1:
            # torch's forward directions start from zeros: [l0 forward, l0 reverse, l1 forward, ...]; a
            # wrong leading axis stays wrong (2*d != 2)
            both = np.zeros((2 * arr.shape[0],) + arr.shape[1:], arr.dtype)
            both[1::2] = arr
            arr = both
        feeds[feed] = np.ascontiguousarray(arr)
    if description["unbatched"]:
        notes.append("unbatched: X fed [S,I] and the states [L*D,H] (torch's unbatched input), outputs read back "
                     "with batch 1")
        feeds = {k: np.ascontiguousarray(v[:, 0] if k == "input" and v.ndim == 3 else v[:, 0] if v.ndim == 3 else v)
                 for k, v in feeds.items()}
    if packed:
        feeds["lengths"] = np.asarray(case.tensors["sequence_lens"])

    wanted = _wanted(case)
    names = {"Y": "output", "Y_h": "h_n", "Y_c": "c_n"}
    description["inputs"] = list(feeds)
    description["outputs"] = [names[n] for n in wanted]
    y_axes = (1, 2, 0, 3) if batch_first else (0, 2, 1, 3)
    transforms = {"Y": {"transpose": y_axes}} if "Y" in wanted else {}
    return Program(spec=spec, format="torch", model=json.dumps(description).encode(), feeds=feeds,
                   outputs=[(names[n], n) for n in wanted], notes=notes, transforms=transforms,
                   extra={"state_dict": _state_dict(case, shift, cell=False)})


def _initial_states(case: Case, notes: list, together: str):
    """(feed name, canonical array) of the initial states to feed: none when the case has none; for
    an LSTM with only one of them, the other as zeros (ONNX: absent means zeros), noted."""
    states = [n for n in ("initial_h", "initial_c") if n in case.tensors]
    if not states:
        return []
    if case.op == "LSTM" and len(states) == 1:
        missing = "initial_c" if states == ["initial_h"] else "initial_h"
        notes.append(f"{missing} absent with {states[0]} present: {together}; {missing} fed as zeros "
                     f"(ONNX: absent means zeros)")
    pairs = (("initial_h", "h0"), ("initial_c", "c0")) if case.op == "LSTM" else (("initial_h", "h0"),)
    return [(feed, case.tensors[name] if name in case.tensors else np.zeros_like(case.tensors[states[0]]))
            for name, feed in pairs]


def _translate_cell(spec: str, case: Case) -> Program:
    description, notes = _common(case)
    b, h = case.shape["batch_size"], case.hidden_size
    notes.append(f"cell form: torch.nn.{module_kind(case)} on X[0] [B,I]; h' is Y_h and Y "
                 f"(reshaped to [1,B,H] and [1,1,B,H])")
    if case.direction == "reverse":
        notes.append("direction reverse on one time step: the same step as forward")
    if case.layout == 1:
        notes.append("layout 1: a cell has no time axis; X fed [B,I] and states [B,H] either way")
    lens = case.tensors.get("sequence_lens")
    if lens is not None:
        notes.append(f"sequence_lens {np.asarray(lens).tolist()} (all 1 on one step): a cell has no lengths input")
    x = case.tensors["X"]
    feeds = {"input": np.ascontiguousarray(x[0] if x.ndim == 3 else x)}
    for feed, arr in _initial_states(case, notes, "torch.nn.LSTMCell takes (h, c) together"):
        feeds[feed] = np.ascontiguousarray(arr[0] if arr.ndim == 3 and arr.shape[0] == 1 else arr)
    if description["unbatched"]:
        notes.append("unbatched: X fed [I] and the states [H] (torch's unbatched input), outputs read back "
                     "with batch 1")
        feeds = {k: np.ascontiguousarray(v[0] if v.ndim == 2 else v) for k, v in feeds.items()}
    wanted = _wanted(case)
    names = {"Y": "h", "Y_h": "h", "Y_c": "c"}
    description["inputs"] = list(feeds)
    description["outputs"] = [names[n] for n in wanted]
    transforms = {"Y": {"reshape": (1, 1, b, h)}, "Y_h": {"reshape": (1, b, h)}, "Y_c": {"reshape": (1, b, h)}}
    return Program(spec=spec, format="torch", model=json.dumps(description).encode(), feeds=feeds,
                   outputs=[(names[n], n) for n in wanted], notes=notes,
                   transforms={k: v for k, v in transforms.items() if k in wanted},
                   extra={"state_dict": _state_dict(case, 0, cell=True)})


SPECS = {"torch": TorchSpec()}
