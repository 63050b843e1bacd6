"""Tolerances, each with its source: a named policy, or a case's override that names its own."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml

DEFAULT_POLICY = "interim-dtype-v1"


@dataclass(frozen=True)
class Tolerance:
    abs: float
    rel: float
    source: str
    kind: str           # policy | override | derived
    name: str = ""

    def allowed(self, exact: np.ndarray) -> np.ndarray:
        return self.abs + self.rel * np.abs(exact)

    def to_json(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        label = self.name or self.kind
        return f"abs {self.abs:.3g} + rel {self.rel:.3g} ({label})"


@lru_cache(maxsize=None)
def policies() -> dict:
    return yaml.safe_load((Path(__file__).with_name("policies.yaml")).read_text())


def for_case(case, policy: str = DEFAULT_POLICY) -> Tolerance:
    override = getattr(case, "tolerance", None)
    if override:
        return Tolerance(abs=float(override.get("abs", 0.0)), rel=float(override.get("rel", 0.0)),
                         source=str(override["source"]), kind="override", name="case override")
    table = policies()[policy]
    entry = table[case.dtype]
    return Tolerance(abs=float(entry["abs"]), rel=float(entry["rel"]), source=" ".join(table["source"].split()),
                     kind="policy", name=policy)
