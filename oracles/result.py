"""What the oracle returns: readings of expected outputs, with a precision certificate."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field

import numpy as np


def _pack(array: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype=dtype).tobytes()).decode("ascii")


def _unpack(text: str, dtype: str, shape) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=dtype).reshape(shape).copy()


def _pack_codes(codes: np.ndarray, reasons: dict) -> str:
    """Reason codes per element as indices into the sorted codes of ``reasons`` (0: specified)."""
    order = {code: i + 1 for i, code in enumerate(sorted(reasons))}
    return _pack(np.vectorize(lambda c: order.get(c, 0), otypes=[np.uint8])(codes), "u1")


def _unpack_codes(text: str, reasons: dict, shape) -> np.ndarray:
    names = np.array([None] + sorted(reasons), dtype=object)
    return names[_unpack(text, "u1", shape).astype(int)]


@dataclass
class Plausible:
    """One plausible reading's values at the unspecified elements it covers (``mask``), in the
    problem's layout: ``hi`` the value (a double, or NaN/inf for a class reading) and ``bound`` what
    a correct implementation of that reading may be off by (0 for zeros and copied inputs)."""

    point: str
    name: str
    source: str
    kind: str
    mask: np.ndarray
    hi: np.ndarray
    bound: np.ndarray

    def to_json(self) -> dict:
        return {"point": self.point, "name": self.name, "source": self.source, "kind": self.kind,
                "shape": list(self.mask.shape), "mask": _pack(self.mask, "u1"), "hi": _pack(self.hi, "<f8"),
                "bound": _pack(self.bound, "<f8")}

    @classmethod
    def from_json(cls, data: dict) -> Plausible:
        shape = tuple(data["shape"])
        return cls(data["point"], data["name"], data["source"], data["kind"],
                   _unpack(data["mask"], "u1", shape).astype(bool),
                   _unpack(data["hi"], "<f8", shape).astype(np.float64),
                   _unpack(data["bound"], "<f8", shape).astype(np.float64))


@dataclass
class Expected:
    """One output tensor: the exact value is hi + lo (double-double), hi correctly rounded.

    ``unspecified`` is True where the profile's spec does not define the element (hi and lo are
    NaN there); ``reasons`` maps each reason code used to a sentence saying why. A specified
    element whose exact value is ±Inf or NaN (oracles/README.md, "Non-finite inputs") has that value in hi,
    0 in lo and 0 in bound: what is expected there is its class.

    ``bound`` is the precision model's bound (float64, NaN where unspecified) on the error a
    correct implementation computing in the inputs' dtype may make at each element: see
    ``OracleResult.precision`` for the model and its parameters, and oracles/README.md, "Precision model".
    None only for an Expected built by hand.

    ``codes`` holds each unspecified element's reason code (None where specified), and
    ``plausible`` the readings a reasonable implementation could choose there (silent.py): what
    the comparison classifies an unspecified element by
    (oracles/README.md, "Plausible readings where the spec is silent").
    """

    hi: np.ndarray
    lo: np.ndarray
    unspecified: np.ndarray
    reasons: dict[str, str] = field(default_factory=dict)
    bound: np.ndarray | None = None
    codes: np.ndarray | None = None
    plausible: list = field(default_factory=list)
    #: the statistical model's scale (oracles/fast.py, float64 path only; None elsewhere): the
    #: estimated ℓ2 norm of the first-order error's coefficients times u of the dtype, plus the
    #: oracle's own error; the tolerance multiplies it by λ·c_K for its false-alarm probability
    sigma: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return self.hi.shape

    def to_json(self) -> dict:
        return {
            "shape": list(self.hi.shape),
            "hi": _pack(self.hi, "<f8"),
            "lo": _pack(self.lo, "<f8"),
            "unspecified": _pack(self.unspecified, "u1"),
            "reasons": dict(self.reasons),
            "bound": None if self.bound is None else _pack(self.bound, "<f8"),
            "codes": None if self.codes is None else _pack_codes(self.codes, self.reasons),
            "plausible": [p.to_json() for p in self.plausible],
            **({} if self.sigma is None else {"sigma": _pack(self.sigma, "<f8")}),
        }

    @classmethod
    def from_json(cls, data: dict) -> Expected:
        shape = tuple(data["shape"])
        return cls(
            hi=_unpack(data["hi"], "<f8", shape).astype(np.float64),
            lo=_unpack(data["lo"], "<f8", shape).astype(np.float64),
            unspecified=_unpack(data["unspecified"], "u1", shape).astype(bool),
            reasons=dict(data["reasons"]),
            bound=(None if data.get("bound") is None
                   else _unpack(data["bound"], "<f8", shape).astype(np.float64)),
            codes=(None if data.get("codes") is None else _unpack_codes(data["codes"], data["reasons"], shape)),
            plausible=[Plausible.from_json(p) for p in data.get("plausible") or ()],
            sigma=(None if data.get("sigma") is None
                   else _unpack(data["sigma"], "<f8", shape).astype(np.float64)),
        )

    def same_as(self, other: Expected) -> bool:
        return (np.array_equal(self.hi, other.hi, equal_nan=True)
                and np.array_equal(self.lo, other.lo, equal_nan=True)
                and np.array_equal(self.unspecified, other.unspecified))


@dataclass
class Reading:
    """The outputs under one reading of the spec's ambiguous points."""

    name: str  # short stable id: "default", or the distinguishing choices, e.g. "tr-ge+clip-h"
    description: str  # what this reading assumes, citing the spec clause
    outputs: dict[str, Expected]
    choices: dict[str, str] = field(default_factory=dict)  # ambiguity id -> choice tag

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "choices": dict(self.choices),
            "outputs": {k: v.to_json() for k, v in self.outputs.items()},
        }

    @classmethod
    def from_json(cls, data: dict) -> Reading:
        return cls(
            name=data["name"],
            description=data["description"],
            outputs={k: Expected.from_json(v) for k, v in data["outputs"].items()},
            choices=dict(data["choices"]),
        )


@dataclass
class OracleResult:
    op: str
    profile: str
    readings: list[Reading]
    certificate: dict  # prec, check_prec, agree_bits, max_abs_diff
    ambiguities: list[str]
    notes: list[str] = field(default_factory=list)
    oracle_version: str = ""
    #: the precision model behind every Expected.bound: {"model": "running-error-v1", "dtype",
    #: "u", "accumulation", "k_act_ulps", ..., "dot_length", "steps"}
    precision: dict = field(default_factory=dict)
    from_cache: bool = field(default=False, compare=False)

    def reading(self, name: str) -> Reading:
        for reading in self.readings:
            if reading.name == name:
                return reading
        raise KeyError(f"no reading {name!r}; readings are {[r.name for r in self.readings]!r}")

    def to_json(self) -> str:
        return json.dumps({
            "oracle_version": self.oracle_version,
            "op": self.op,
            "profile": self.profile,
            "certificate": self.certificate,
            "ambiguities": self.ambiguities,
            "notes": self.notes,
            "precision": self.precision,
            "readings": [r.to_json() for r in self.readings],
        }, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> OracleResult:
        data = json.loads(text)
        return cls(
            op=data["op"],
            profile=data["profile"],
            readings=[Reading.from_json(r) for r in data["readings"]],
            certificate=dict(data["certificate"]),
            ambiguities=list(data["ambiguities"]),
            notes=list(data["notes"]),
            oracle_version=data["oracle_version"],
            precision=dict(data.get("precision", {})),
        )
