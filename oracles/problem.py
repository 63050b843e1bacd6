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

from .activations import PARAMETERS, canonical_name
from .arith import to_mpf_matrix
from .errors import OracleError
from .profiles import Profile


@dataclass(frozen=True)
class OpInfo:
    gates: int  # G: rows of W and R per direction, in units of hidden_size
    functions: int  # activation functions per direction
    default_activations: tuple[str, ...]
    inputs: tuple[str, ...]  # ONNX input order
    outputs: tuple[str, ...]
    attributes: frozenset[str]


_COMMON = frozenset({"hidden_size", "direction", "activations", "activation_alpha",
                     "activation_beta", "clip", "layout",
                     # the framework's own axes (torch.nn): stack.py evaluates num_layers > 1; a
                     # projection (proj_size) is the LSTM cell's; dropout runs in eval mode (the
                     # identity) and unbatched input is a batch of 1
                     "num_layers", "dropout", "unbatched"})
_SEQUENCE_INPUTS = ("X", "W", "R", "B", "sequence_lens", "initial_h")

OPS = {
    "RNN": OpInfo(1, 1, ("Tanh",), _SEQUENCE_INPUTS, ("Y", "Y_h"), _COMMON),
    "GRU": OpInfo(3, 2, ("Sigmoid", "Tanh"), _SEQUENCE_INPUTS, ("Y", "Y_h"),
                  _COMMON | {"linear_before_reset"}),
    "LSTM": OpInfo(4, 3, ("Sigmoid", "Tanh", "Tanh"), _SEQUENCE_INPUTS + ("initial_c", "P", "W_hr"),
                   ("Y", "Y_h", "Y_c"), _COMMON | {"input_forget", "proj_size"}),
}
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


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


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _integer(name: str, value, hint: str = "") -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise OracleError(f"{name}={value!r} is not an integer.{hint}")
    return int(value)


def _float32(name: str, value) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise OracleError(f"{name}={value!r} is not a number.") from None
    with np.errstate(over="ignore"):
        rounded = float(np.float32(x))
    if not math.isfinite(x) or not math.isfinite(rounded):
        # FLOAT attributes: ONNX models rarely carry inf, a NaN bound or parameter is meaningless
        # (oracles/README.md, "Non-finite inputs"); the float inputs may be non-finite, these may not
        what = "is not finite" if not math.isfinite(x) else "rounds to inf as a FLOAT (float32)"
        raise OracleError(f"{name}={value!r} {what}; it should satisfy |{name}| < inf "
                          "(non-finite attributes are refused; the tensors may hold inf and NaN).")
    return rounded


def _float_list(name: str, values) -> tuple[float, ...]:
    if values is None:
        return ()
    if isinstance(values, (int, float, np.floating, np.integer)):
        raise OracleError(f"{name}={values!r} should be a list of floats, e.g. [{values!r}].")
    return tuple(_float32(f"{name}[{i}]", v) for i, v in enumerate(values))


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


def _activations(op: str, info: OpInfo, attributes: dict, num_directions: int, direction: str,
                 profile: Profile, notes: list[str]):
    given = attributes.get("activations")
    k = info.functions
    if given is None:
        return info.default_activations * num_directions, None
    if isinstance(given, (str, bytes)):
        raise OracleError(
            f"activations={given!r} should be a list of names, e.g. [{_text(given)!r}].")
    given = tuple(_text(n) for n in given)
    allowed = profile.value("activation_names")
    names = []
    for i, name in enumerate(given):
        canonical = canonical_name(name)
        if canonical is None:
            close = difflib.get_close_matches(name, list(PARAMETERS), n=1)
            hint = f" Consider {close[0]!r}." if close else ""
            raise OracleError(
                f"activations[{i}]={name!r} is not an activation function of {op}; it should be "
                f"one of {list(PARAMETERS)!r} (any case).{hint}"
            )
        if canonical not in allowed:
            raise OracleError(
                f"activations[{i}]={name!r} is not allowed by the {profile.name} profile; it "
                f"allows {list(allowed)!r}."
            )
        names.append(canonical)
    expected = k * num_directions
    if len(names) == expected:
        return tuple(names), given
    if op == "RNN" and num_directions == 1 and len(names) == 2 and names[0] == names[1]:
        notes.append(
            f"activations={list(given)!r} for a single-direction RNN: the ONNX schema's own "
            "default is ['Tanh', 'Tanh'], so two equal names are read as one function."
        )
        return tuple(names[:1]), given
    if (num_directions == 2 and len(names) == k
            and profile.value("activation_sets") == "shared_or_per_direction"):
        notes.append(f"activations={list(given)!r}: one set shared by both directions.")
        return tuple(names), given
    if num_directions == 2 and len(names) == k:
        hint = (f" Consider repeating the list for the reverse direction: "
                f"{list(given) * 2!r}.")
    elif num_directions == 1 and len(names) == 2 * k:
        hint = (f" Consider direction='bidirectional', or keeping the forward set "
                f"{list(given[:k])!r}.")
    else:
        hint = ""
    raise OracleError(
        f"activations={list(given)!r} has {len(names)} names, but {op} with "
        f"direction={direction!r} takes exactly {expected} ({k} per direction, forward first)."
        + hint
    )


def _proj_size(op: str, attributes: dict, H: int) -> int:
    """The LSTM projection's width (0: none), checked as torch.nn.LSTM checks it."""
    if "proj_size" not in attributes:
        return 0
    value = _integer("proj_size", attributes["proj_size"])
    if value and op != "LSTM":
        raise OracleError(f"proj_size={value!r} is given, but only LSTM has a projection.")
    if not 0 <= value < H:
        raise OracleError(f"proj_size={value!r} should satisfy 0 <= proj_size < hidden_size={H} "
                          "(torch.nn.LSTM: \"proj_size should be smaller than hidden_size\").")
    return value


def _framework(op: str, attributes: dict, profile: Profile, H: int, B: int) -> int:
    """The framework's own axes of one layer: num_layers must be 1 here (stack.py splits a stack
    into its layers), dropout a probability (eval mode: the identity), unbatched 0 or 1 with one
    batch entry, and the profile must know them where they change the formulas. Returns proj_size."""
    proj = _proj_size(op, attributes, H)
    layers = _integer("num_layers", attributes.get("num_layers", 1))
    if layers != 1:
        raise OracleError(f"num_layers={layers!r}: build_problem evaluates one layer; a stack goes through "
                          "oracles.evaluate, which evaluates it layer by layer (stack.py).")
    dropout = attributes.get("dropout", 0.0)
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float, np.floating)) or not 0 <= dropout < 1:
        raise OracleError(f"dropout={dropout!r} should be a probability in [0, 1).")
    unbatched = _integer("unbatched", attributes.get("unbatched", 0))
    if unbatched not in (0, 1) or (unbatched and B != 1):
        raise OracleError(f"unbatched={unbatched!r} with batch_size={B}: unbatched input is one sequence "
                          "(0 or 1, and batch_size 1).")
    if proj and profile.value("framework_axes") != "torch.nn":
        raise OracleError(f"proj_size={proj} is torch.nn.LSTM's projection, which the {profile.name} profile "
                          "does not define. Consider profile='torch'.")
    return proj


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
