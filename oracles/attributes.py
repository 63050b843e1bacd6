"""Checking a problem's attributes (problem.py): integers, FLOAT (float32) values and lists, the list
of activation functions a profile allows, and the framework's own axes (torch.nn's num_layers,
dropout, unbatched, proj_size)."""

from __future__ import annotations

import difflib
import math

import numpy as np

from .activations import PARAMETERS, canonical_name
from .errors import OracleError
from .ops import OpInfo
from .profiles import Profile


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
