"""Reading and checking one RNN/GRU/LSTM problem: attributes and tensors in, exact values out.

Everything here is independent of precision and of the readings: the tensors are converted once to
exact raw values, in ONNX layout 0 (a ``layout: 1`` problem is transposed on the way in).
"""

from __future__ import annotations

import difflib
import math
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .arith import to_mpf_matrix
from .attributes import _activations, _float32, _float_list, _framework, _integer, _proj_size, _text
from .errors import OracleError
from .ops import DIRECTIONS, FLOAT_DTYPES, OPS, OpInfo
from .profiles import Profile


@dataclass
class Problem:
    """One case in canonical form, with every tensor as nested lists of exact raw values."""

    op: str
    info: OpInfo
    hidden_size: int
    direction: str
    num_directions: int
    layout: int
    seq_length: int
    batch_size: int
    input_size: int
    dtype: str
    activations: tuple[str, ...]  # canonical spelling, functions * num_directions names
    given_activations: tuple[str, ...] | None  # as written in the attributes, None if defaulted
    shared_activations: bool  # one set (and its alpha/beta) serves both directions
    activation_alpha: tuple[float, ...]
    activation_beta: tuple[float, ...]
    clip: float | None  # None: no clipping
    linear_before_reset: bool
    input_forget: bool
    X: list  # [t][b][i]
    W: list  # [d][row][i]
    R: list  # [d][row][k]
    Wb: list  # [d][row]
    Rb: list  # [d][row]
    P: list | None  # [d][3H], order i, o, f
    initial_h: list  # [d][b][k]
    initial_c: list | None  # [d][b][k] (LSTM)
    sequence_lens: list[int]
    sequence_lens_given: bool
    peephole_output_nonzero: bool = False
    #: torch.nn.LSTM's projection (proj_size > 0): Ht = W_hr (ot (.) h(Ct)), W_hr [d][p][k] exact;
    #: the state fed back and output is proj_size wide (``output_size``)
    proj_size: int = 0
    W_hr: list | None = None
    #: some float input holds ±Inf or NaN: the evaluation takes ieee.py's IEEE 754 primitives
    nonfinite: bool = False
    notes: list[str] = field(default_factory=list)
    constants: list | None = field(default=None, repr=False)  # per-direction cell constants
    #: the same tensors as float64 arrays, layout 0 (exact: every input dtype widens exactly);
    #: the precision model (precision/walker.py) walks its trajectory on these
    floats: dict = field(default_factory=dict, repr=False)

    @property
    def output_size(self) -> int:
        """The width of Y, Y_h and of the state fed back: proj_size where there is a projection."""
        return self.proj_size or self.hidden_size

    def functions_of(self, direction: int) -> tuple[str, ...]:
        k = self.info.functions
        return self.activations[direction * k:(direction + 1) * k]


def _shape_error(name: str, got, expected, meaning: str, hint: str = "") -> OracleError:
    return OracleError(
        f"{name}.shape={tuple(got)!r}, but should be {tuple(expected)!r} = {meaning}.{hint}"
    )


def _tensor(tensors: dict, name: str):
    value = tensors.get(name)
    return None if value is None else np.asarray(value)


def _check_float(name: str, array: np.ndarray, dtype: str | None) -> str:
    kind = array.dtype.name
    if kind not in FLOAT_DTYPES:
        raise OracleError(
            f"{name}.dtype={kind!r} is not a floating type of these ops; it should be one of "
            f"{list(FLOAT_DTYPES)!r}."
        )
    if dtype is not None and kind != dtype:
        raise OracleError(
            f"{name}.dtype={kind!r}, but X.dtype={dtype!r}; the ONNX type constraint T requires "
            f"every float input to have the same type. Consider casting {name} to {dtype}."
        )
    return kind


def build_problem(op: str, attributes: dict, tensors: dict, profile: Profile,
                  exact: bool = True) -> Problem:
    """Check a problem against its op's constraints and convert it to exact canonical form."""
    if op not in OPS:
        raise OracleError(f"op={op!r} is not one of {list(OPS)!r}.")
    info = OPS[op]
    attributes = dict(attributes or {})
    tensors = {n: v for n, v in (tensors or {}).items() if v is not None}
    notes: list[str] = []

    unknown = sorted(set(attributes) - info.attributes)
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(info.attributes), n=1)
        hint = f" Consider {close[0]!r}." if close else ""
        raise OracleError(
            f"attribute {unknown[0]!r} is not an attribute of {op}; its attributes are "
            f"{sorted(info.attributes)!r}.{hint}"
        )
    unknown = sorted(set(tensors) - set(info.inputs))
    if unknown:
        raise OracleError(
            f"input {unknown[0]!r} is not an input of {op}; its inputs are {list(info.inputs)!r}."
        )
    for required in ("X", "W", "R"):
        if required not in tensors:
            raise OracleError(f"input {required!r} is required by {op} but was not given.")

    direction = _text(attributes.get("direction", "forward"))
    if direction not in DIRECTIONS:
        close = difflib.get_close_matches(direction.lower(), list(DIRECTIONS), n=1)
        hint = f" Consider {close[0]!r}." if close else ""
        raise OracleError(
            f"direction={direction!r} should be one of {list(DIRECTIONS)!r}.{hint}"
        )
    D = DIRECTIONS[direction]
    layout = _integer("layout", attributes.get("layout", 0))
    if layout not in (0, 1):
        raise OracleError(f"layout={layout!r} should be 0 or 1.")

    X, W, R = (_tensor(tensors, n) for n in ("X", "W", "R"))
    dtype = _check_float("X", X, None)
    for name in ("W", "R", "B", "initial_h", "initial_c", "P"):
        if name in tensors:
            _check_float(name, _tensor(tensors, name), dtype)
    if X.ndim != 3:
        dims = ("[seq_length, batch_size, input_size]" if layout == 0
                else "[batch_size, seq_length, input_size] (layout=1)")
        raise OracleError(f"X.ndim={X.ndim!r}, but X should be 3-D: {dims}.")
    if layout == 1:
        X = X.swapaxes(0, 1)
    S, B, I = X.shape
    if min(S, B, I) < 1:
        raise OracleError(f"X has an empty dimension (seq_length={S}, batch_size={B}, "
                          f"input_size={I}); each should be >= 1.")
    if R.ndim != 3:
        raise OracleError(f"R.ndim={R.ndim!r}, but R should be 3-D: "
                          "[num_directions, G*hidden_size, hidden_size].")
    if "hidden_size" in attributes:
        H = _integer("hidden_size", attributes["hidden_size"])
        if H < 1:
            raise OracleError(f"hidden_size={H!r} should satisfy hidden_size >= 1.")
    else:
        H = int(R.shape[-1])
        notes.append(f"hidden_size not given: taken from R.shape[-1] = {H}.")
    Hout = _proj_size(op, attributes, H) or H
    G = info.gates
    gates = {1: "", 3: "3*", 4: "4*"}[G]
    dirs_hint = (" Consider direction='bidirectional'." if D == 1 and W.shape[:1] == (2,) else
                 " Consider direction='forward'." if D == 2 and W.shape[:1] == (1,) else "")
    if W.shape != (D, G * H, I):
        raise _shape_error("W", W.shape, (D, G * H, I),
                           f"[num_directions, {gates}hidden_size, input_size] for {op} with "
                           f"hidden_size={H}, direction={direction!r}", dirs_hint)
    if R.shape != (D, G * H, Hout):
        width = "proj_size" if Hout != H else "hidden_size"
        raise _shape_error("R", R.shape, (D, G * H, Hout),
                           f"[num_directions, {gates}hidden_size, {width}] for {op} with "
                           f"hidden_size={H}, direction={direction!r}", dirs_hint)
    Bias = _tensor(tensors, "B")
    if Bias is None:
        Bias = np.zeros((D, 2 * G * H))
    elif Bias.shape != (D, 2 * G * H):
        raise _shape_error("B", Bias.shape, (D, 2 * G * H),
                           f"[num_directions, {2 * G}*hidden_size] = [Wb, Rb] for {op}")

    def state(name: str):
        width = Hout if name == "initial_h" else H
        value = _tensor(tensors, name)
        if value is None:
            return np.zeros((D, B, width))
        expected = (D, B, width) if layout == 0 else (B, D, width)
        meaning = ("[num_directions, batch_size, hidden_size]" if layout == 0
                   else "[batch_size, num_directions, hidden_size] (layout=1)")
        if value.shape != expected:
            raise _shape_error(name, value.shape, expected, meaning)
        return value if layout == 0 else value.swapaxes(0, 1)

    initial_h = state("initial_h")
    initial_c = state("initial_c") if op == "LSTM" else None

    P = _tensor(tensors, "P")
    if P is not None and P.shape != (D, 3 * H):
        raise _shape_error("P", P.shape, (D, 3 * H),
                           "[num_directions, 3*hidden_size] = [Pi, Po, Pf]")

    lens = _tensor(tensors, "sequence_lens")
    if lens is None:
        sequence_lens = [S] * B
    else:
        if lens.dtype.kind not in "iu":
            raise OracleError(f"sequence_lens.dtype={lens.dtype.name!r} should be an integer "
                              "type (int32 in ONNX).")
        if lens.shape != (B,):
            raise _shape_error("sequence_lens", lens.shape, (B,), "[batch_size]")
        sequence_lens = [int(v) for v in lens]
        for b, length in enumerate(sequence_lens):
            if not 0 <= length <= S:
                raise OracleError(
                    f"sequence_lens[{b}]={length!r}, but it should satisfy "
                    f"0 <= sequence_lens[{b}] <= seq_length={S}."
                )

    activations, given = _activations(op, info, attributes, D, direction, profile, notes)
    shared = len(activations) < info.functions * D
    activations = activations * 2 if shared else activations
    alpha = _float_list("activation_alpha", attributes.get("activation_alpha"))
    beta = _float_list("activation_beta", attributes.get("activation_beta"))

    clip = None
    if attributes.get("clip") is not None:
        if op not in profile.value("clip_ops"):
            raise OracleError(
                f"clip={attributes['clip']!r} is given, but the {profile.name} profile has no clip "
                f"for {op} (it has clip for {list(profile.value('clip_ops'))!r}). Consider "
                "removing clip."
            )
        clip = _float32("clip", attributes["clip"])
        if clip < 0:
            raise OracleError(f"clip={attributes['clip']!r} should satisfy clip >= 0: it bounds "
                              "activation inputs to [-clip, clip].")
        if clip == 0 and profile.value("clip_zero") == "off":
            notes.append("clip=0 means no clipping in the profile " + profile.name + ".")
            clip = None
        elif clip == math.inf:
            clip = None

    linear_before_reset = False
    if "linear_before_reset" in attributes:
        value = _integer("linear_before_reset", attributes["linear_before_reset"])
        linear_before_reset = value != 0
    input_forget = False
    if "input_forget" in attributes:
        value = _integer("input_forget", attributes["input_forget"])
        if value not in (0, 1):
            raise OracleError(f"input_forget={value!r} should be 0 or 1 (\"Couple the input and "
                              "forget gates if 1\").")
        input_forget = value == 1

    proj_size = _framework(op, attributes, profile, H, B)
    Hout = proj_size or H
    W_hr = _tensor(tensors, "W_hr")
    if proj_size and W_hr is None:
        raise OracleError(f"proj_size={proj_size} needs the projection's weights W_hr [num_directions, "
                          f"proj_size, hidden_size] = {[D, proj_size, H]}, which were not given.")
    if not proj_size and W_hr is not None:
        raise OracleError("W_hr is given but proj_size is 0: an LSTM without a projection has no W_hr. "
                          "Consider proj_size.")
    if W_hr is not None:
        _check_float("W_hr", W_hr, dtype)
        if W_hr.shape != (D, proj_size, H):
            raise _shape_error("W_hr", W_hr.shape, (D, proj_size, H),
                               "[num_directions, proj_size, hidden_size] (torch's weight_hr_l0)")
    floats = {
        "X": np.asarray(X, dtype=np.float64), "W": np.asarray(W, dtype=np.float64),
        "R": np.asarray(R, dtype=np.float64), "B": np.asarray(Bias, dtype=np.float64),
        "P": None if P is None else np.asarray(P, dtype=np.float64),
        "initial_h": np.asarray(initial_h, dtype=np.float64),
        "initial_c": None if initial_c is None else np.asarray(initial_c, dtype=np.float64),
        "W_hr": None if W_hr is None else np.asarray(W_hr, dtype=np.float64),
    }
    nonfinite = not all(np.isfinite(a).all() for a in floats.values() if a is not None)
    if nonfinite and proj_size:
        raise OracleError("a non-finite input with proj_size: the IEEE 754 walk of a projection is not "
                          "modelled; consider finite inputs.")
    # the exact values (nested lists of mpf); None throughout on the fast path, which reads only
    # ``floats`` (so there Problem's list fields hold None)
    values: dict[str, Any]
    if exact:
        with np.errstate(invalid="ignore") if nonfinite else nullcontext():  # NaN: a value like any
            values = {name: None if a is None else to_mpf_matrix(a) for name, a in floats.items()}
    else:  # the float64 fast path (fast.py) reads ``floats`` only: no exact conversion
        values = dict.fromkeys(floats)
    Bm = values["B"] if values["B"] is not None else []
    return Problem(
        op=op, info=info, hidden_size=H, direction=direction, num_directions=D, layout=layout,
        seq_length=S, batch_size=B, input_size=I, dtype=dtype,
        activations=activations, given_activations=given, shared_activations=shared,
        activation_alpha=alpha, activation_beta=beta, clip=clip,
        linear_before_reset=linear_before_reset, input_forget=input_forget,
        X=values["X"], W=values["W"], R=values["R"],
        Wb=[row[:G * H] for row in Bm], Rb=[row[G * H:] for row in Bm],
        P=values["P"], initial_h=values["initial_h"], initial_c=values["initial_c"],
        sequence_lens=sequence_lens, sequence_lens_given=lens is not None,
        peephole_output_nonzero=P is not None and bool(np.any(np.asarray(P)[:, H:2 * H] != 0)),
        proj_size=proj_size, W_hr=values["W_hr"],
        nonfinite=nonfinite,
        notes=notes,
        floats=floats,
    )
