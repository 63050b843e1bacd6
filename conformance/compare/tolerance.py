"""Tolerances, each with its source: the bound derived from the oracle's precision model (the
default), a named policy, or a case's override that names its own.

A *derived* tolerance allows, element by element,

    allowed = max(factor × bound, floor_ulps × ulp(exact))

where ``bound`` is ``oracles.Expected.bound``: the oracle's first-order running error bound on
what a correct implementation computing in the case's dtype may be off by (oracles/README.md,
"Precision model"). ``factor`` and ``floor_ulps`` are data (policies.yaml, ``derived``), with the
reason for their values. A *policy* or *override* allows ``abs + rel × |exact|``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np
import yaml

from conformance.compare.metrics import finfo, ulp_of

#: dtypes whose flushed subnormals the precision model does not carry per operation, and the
#: floor (in units of the dtype's smallest normal) that admits a flushed result there: at least
#: FLUSH_FLOOR_NORMALS, and one per term of a gate's dot product plus one for the result (a CPU
#: that treats subnormal inputs as zero drops each term's subnormal part: the fuzzer found
#: OpenVINO losing 2.6 normals over a dot of 8 subnormal terms)
FLUSH_NOT_CARRIED = ("float32", "bfloat16", "float64")
FLUSH_FLOOR_NORMALS = 2

#: every case without an override is judged against the derived bound
DEFAULT_POLICY = "derived"
#: what a derived tolerance falls back to where an oracle result carries no bound
FALLBACK_POLICY = "interim-dtype-v1"


@dataclass(frozen=True)
class Tolerance:
    abs: float
    rel: float
    source: str
    kind: str           # policy | override | derived
    name: str = ""
    factor: float = 0.0       # derived: allowed = max(factor × bound, floor_ulps × ulp(exact))
    floor_ulps: float = 0.0
    model: str = ""           # derived: the precision model the factor was chosen for
    flush_terms: int = FLUSH_FLOOR_NORMALS   # derived: dot length + 1, the terms a flush may drop
    #: derived, where the oracle gives a statistical scale (Expected.sigma: the float64 fast path,
    #: oracles/fast.py): allowed = max(min(factor × bound, stat_factor × λ·c_K × sigma), floor);
    #: λ·c_K (``stat_scale``) holds every element with probability >= 1 - false_alarm
    stat_factor: float = 0.0
    false_alarm: float = 0.0
    stat_scale: float = 0.0

    @property
    def derived(self) -> bool:
        return self.kind == "derived"

    def allowed(self, exact: np.ndarray, bound: np.ndarray | None = None,
                dtype: str | None = None, sigma: np.ndarray | None = None) -> np.ndarray:
        """The allowed |got − exact| per element. A derived tolerance needs the oracle's
        ``bound`` and the output ``dtype``; with the oracle's statistical scale ``sigma`` (and a
        resolved ``stat_scale``) the sharper of the rigorous and the statistical bound."""
        if not self.derived:
            return self.abs + self.rel * np.abs(exact)
        if bound is None or dtype is None:
            raise ValueError(f"the derived tolerance {self.name!r} needs the oracle's bound and "
                             "the output dtype; consider resolve(oracle) first")
        with np.errstate(invalid="ignore", over="ignore"):  # a bound near float64's top: inf
            sharp = self.factor * bound
            if sigma is not None and self.stat_scale > 0:
                sharp = np.fmin(sharp, self.stat_factor * self.stat_scale * sigma)
            allowed = np.maximum(sharp, self.floor_ulps * ulp_of(exact, dtype))
        if dtype in FLUSH_NOT_CARRIED:
            # the model admits flushing subnormals to zero (oracles/README.md, "Assumptions": subnormals) but
            # carries it per operation only for float16; elsewhere a flushed result loses less
            # than the smallest normal, which the ulp floor does not cover below ~2^-100
            normals = max(FLUSH_FLOOR_NORMALS, self.flush_terms)
            allowed = np.maximum(allowed, normals * float(finfo(dtype).tiny))
        return allowed

    def resolve(self, oracle, case=None) -> Tolerance:
        """This tolerance for one oracle result: a derived one states the model's parameters in
        its source (or falls back to FALLBACK_POLICY, saying so, where the result has no bound).
        Policies and overrides are returned as they are."""
        if not self.derived:
            return self
        readings = getattr(oracle, "readings", None) or []
        has_bound = bool(readings) and all(e.bound is not None for r in readings
                                           for e in r.outputs.values())
        model = getattr(oracle, "precision", None) or {}
        if not has_bound or not model:
            fallback = named_policy(FALLBACK_POLICY, case.dtype) if case is not None else None
            if fallback is None:
                raise ValueError("the oracle result carries no precision bound and no case was "
                                 "given to fall back on")
            return replace(fallback, source=f"{fallback.source} (fallback: the oracle result "
                                            "carries no precision-model bound)")
        terms = int(model.get("dot_length") or 1) + 1
        resolved = replace(self, model=model.get("model", ""), flush_terms=max(FLUSH_FLOOR_NORMALS, terms))
        stat = model.get("statistical") or {}
        if stat and self.stat_factor > 0 and all(e.sigma is not None for r in readings
                                                 for e in r.outputs.values()):
            from oracles.precision.statistical import statistical_factor
            lam, c_k = statistical_factor(stat["elements"], stat["samples"], self.false_alarm)
            resolved = replace(resolved, stat_scale=lam * c_k)
        return replace(resolved, source=derived_source(model, resolved))

    def to_json(self) -> dict:
        data = asdict(self)
        if self.derived:  # abs/rel mean nothing here
            data.pop("abs")
            data.pop("rel")
            if not self.stat_scale:
                for key in ("stat_factor", "false_alarm", "stat_scale"):
                    data.pop(key)
        else:
            for key in ("factor", "floor_ulps", "model", "stat_factor", "false_alarm", "stat_scale"):
                data.pop(key)
        return data

    def __str__(self) -> str:
        if self.derived:  # its source states the factor and the floor
            return self.source
        label = self.name or self.kind
        if self.kind == "override":  # an override always says where it comes from
            label = f"{label}: {self.source}"
        return f"abs {self.abs:.3g} + rel {self.rel:.3g} ({label})"


def derived_source(model: dict, tol: Tolerance) -> str:
    """'derived: float32 u=2^-24, accumulation float32, dot length 9 (...), 4 steps, ...'"""
    parts = [f"derived: {model.get('dtype', '?')} u={model.get('u', '?')}",
             f"accumulation {model.get('accumulation', '?')}"]
    if model.get("inputs"):  # a narrower arithmetic than the model's type: the inputs rounded to it
        parts.append(f"inputs {model['inputs']}")
    if model.get("kernel"):  # a reduced-precision kernel: where it rounds (oracles.precision.kernel)
        parts.append(f"{model['kernel']} ({model.get('scheme', '')})")
    if "dot_length" in model:
        parts.append(f"dot length {model['dot_length']} ({model.get('dot_terms', '')})")
    if "steps" in model:
        steps = model["steps"]
        parts.append(f"{steps} step{'s' if steps != 1 else ''}")
    measured = model.get("measured_act_ulps")
    if measured:  # the kernel's own tanh and sigmoid, as the activation probe measured them
        parts.append("activations " + ", ".join(f"{name.lower()} ≤ {k:.3g} ulp" for name, k in measured.items())
                     + f" (measured through the op; ceiling {model.get('act_ulps_ceiling', '?'):g}), others ≤ "
                     f"{model.get('k_act_ulps', '?'):g} ulp")
    else:
        parts.append(f"activations ≤ {model.get('k_act_ulps', '?'):g} ulp")
    parts.append(f"first-order running error bound × {tol.factor:g}, floor {tol.floor_ulps:g} ulp")
    stat = model.get("statistical") or {}
    if tol.stat_scale:
        parts.append(f"or, where sharper, the statistical bound {tol.stat_factor:g} × {tol.stat_scale:.3g} "
                     f"× sigma ({stat.get('model', '?')}, {stat.get('samples', '?')} tangent samples, "
                     f"false-alarm probability {tol.false_alarm:g} per pair)")
    if model.get("dtype") in FLUSH_NOT_CARRIED:
        parts.append(f"flushed subnormals: at least {tol.flush_terms} smallest normals")
    return ", ".join(parts) + f"; model {model.get('model', '?')}"


@cache
def policies() -> dict:
    return yaml.safe_load((Path(__file__).with_name("policies.yaml")).read_text())


def named_policy(name: str, dtype: str) -> Tolerance:
    """The named policy of policies.yaml for ``dtype``."""
    table = policies().get(name)
    if table is None:
        raise KeyError(f"tolerance policy {name!r} is not in policies.yaml; its policies are "
                       f"{sorted(policies())!r}")
    source = " ".join(str(table["source"]).split())
    if table.get("kind") == "derived":
        factor, floor = float(table["factor"]), float(table["floor_ulps"])
        if not (math.isfinite(factor) and factor >= 1 and floor >= 0):
            raise ValueError(f"policy {name!r}: factor={factor!r} should be >= 1 and "
                             f"floor_ulps={floor!r} >= 0")
        stat = table.get("statistical") or {}
        return Tolerance(abs=math.nan, rel=math.nan, source=source, kind="derived", name=name,
                         factor=factor, floor_ulps=floor, model=str(table.get("model", "")),
                         stat_factor=float(stat.get("factor", 0.0)),
                         false_alarm=float(stat.get("false_alarm", 0.0)))
    entry = table[dtype]
    return Tolerance(abs=float(entry["abs"]), rel=float(entry["rel"]), source=source,
                     kind="policy", name=name)


def for_case(case, policy: str | None = None, override: dict | None = None) -> Tolerance:
    """The case's own override if it has one (it wins), else an override from an expectations
    entry (``override``: abs, rel, source, where), else the named policy (default: derived).
    A derived tolerance is completed for an oracle result by ``resolve`` (judge_outputs does)."""
    own = getattr(case, "tolerance", None)
    if own:
        return Tolerance(abs=float(own.get("abs", 0.0)), rel=float(own.get("rel", 0.0)),
                         source=str(own["source"]), kind="override", name="case override")
    if override:
        return Tolerance(abs=float(override.get("abs", 0.0)), rel=float(override.get("rel", 0.0)),
                         source=str(override["source"]), kind="override",
                         name=f"expectations override ({override.get('where', '')})")
    return named_policy(policy or DEFAULT_POLICY, case.dtype)
