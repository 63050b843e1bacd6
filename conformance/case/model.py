"""The canonical case: ONNX names, ONNX layout 0, ONNX gate orders, biases unsummed."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np

from conformance.case.yamlio import Where


@dataclass(frozen=True)
class Case:
    """One concrete scenario, as every translator and the oracle receive it.

    ``tensors`` holds every present input in ONNX layout 0 (X [S,B,I], initial_h [D,B,H], ...) and in
    the case dtype (sequence_lens int32); an absent optional input is simply missing.
    """

    id: str
    op: str                      # RNN | GRU | LSTM
    form: str                    # sequence | cell
    attributes: dict             # ONNX attribute names; only the attributes the case sets
    shape: dict                  # seq_length, batch_size, input_size
    dtype: str                   # float32 | float16 | float64 | bfloat16
    tensors: dict                # name -> numpy array
    expect: str = "valid"        # valid | invalid
    clause: tuple = ()
    description: str = ""
    outputs: tuple = ()          # requested outputs; all of the op's outputs by default
    violates: str = ""           # for expect: invalid, the constraint the case breaks
    source: Where | None = None
    params: dict = field(default_factory=dict)  # the matrix combination that made this case
    notes: tuple = ()            # canonicalization steps applied by the loader
    tolerance: dict | None = None  # an override, naming its source

    @property
    def hidden_size(self) -> int:
        return int(self.attributes.get("hidden_size", 0))

    @property
    def direction(self) -> str:
        return self.attributes.get("direction", "forward")

    @property
    def layout(self) -> int:
        return int(self.attributes.get("layout", 0))

    @property
    def valid(self) -> bool:
        return self.expect == "valid"

    @property
    def file(self) -> str:
        return self.source.file if self.source else ""

    @property
    def digest(self) -> str:
        """A content hash: changes whenever anything that affects a verdict changes."""
        h = hashlib.sha256()
        head = {"op": self.op, "form": self.form, "attributes": self.attributes, "shape": self.shape,
                "dtype": self.dtype, "expect": self.expect, "outputs": list(self.outputs)}
        h.update(json.dumps(head, sort_keys=True, default=str).encode())
        for name in sorted(self.tensors):
            arr = np.ascontiguousarray(self.tensors[name])
            h.update(f"{name}|{arr.dtype}|{arr.shape}|".encode())
            h.update(arr.tobytes())
        return h.hexdigest()[:16]

    def describe(self) -> str:
        """One line: op, the attributes that distinguish it, dtype."""
        attrs = " ".join(f"{k}={_fmt(v)}" for k, v in self.attributes.items() if k != "hidden_size")
        s = self.shape
        return (f"{self.op} {self.form} {attrs} S={s['seq_length']} B={s['batch_size']} "
                f"I={s['input_size']} H={self.hidden_size} {self.dtype}").replace("  ", " ")


def _fmt(v) -> str:
    if isinstance(v, (list, tuple)):
        return "+".join(str(x) for x in v)
    return str(v)


@dataclass(frozen=True)
class CaseError:
    """A problem in a case file, reported as ``file:line: key: what (hint)``; loading goes on."""

    where: Where
    key: str
    message: str
    hint: str = ""
    case_id: str = ""

    def __str__(self) -> str:
        key = f" {self.key}:" if self.key else ""
        cid = f" [{self.case_id}]" if self.case_id else ""
        hint = f" Consider {self.hint}" if self.hint else ""
        end = "" if self.message.endswith(("?", ".")) and not cid else "."
        return f"{self.where}:{key} {self.message}{cid}{end}{hint}".replace("..", ".")

    def to_json(self) -> dict:
        return {"file": self.where.file, "line": self.where.line, "key": self.key,
                "message": self.message, "hint": self.hint, "case": self.case_id}


def case_family(case_id: str) -> str:
    """A case id without its matrix part, the case entry its variants come from: `gru/x[direction=reverse]`
    -> `gru/x`. "Family" alone means the spec family (onnx, openvino, ...); a runtime family is
    ``runtime_family`` (docs/architecture.md, "Words")."""
    return case_id.split("[", 1)[0]
