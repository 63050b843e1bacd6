"""results.jsonl: one JSON line per (case, target), appended as results arrive; the resume index."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any


@dataclasses.dataclass
class Record:
    """One (case, target) verdict: the contract between the engine, the gate, the reports and the
    fuzzer, written as one line of results.jsonl (:meth:`as_dict`). Built only by :meth:`of`, from
    the case, the target and its spec, so ``spec_family`` and ``runtime_family`` come from the
    Spec and the Target and no reader parses an id. ``extra`` holds the judgement's own fields
    (per-output errors, worst elements, the second judgement, ...), written after the fixed ones."""

    case: str
    case_digest: str
    file: str
    line: int | None
    op: str
    form: str
    dtype: str
    expect: str
    clause: list[str]
    summary: str
    description: str
    features: list[str]
    attributes: dict[str, Any]
    shape: dict[str, Any]
    inputs: dict[str, list[int]]
    semantics: str
    target: str
    spec: str
    spec_family: str
    runtime: str
    runtime_family: str
    runtime_version: str
    device: str
    config: str
    target_precision: str
    plugin: bool
    #: the converter that wrote the program the runtime ran (a converter target: conformance/converters/),
    #: written only where there is one
    converter: str = ""
    pair_digest: str = ""
    verdict: str = ""
    max_abs_err: float | None = None
    max_ulp: float | None = None
    tolerance: Any = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    message: str = ""
    repro: str = ""

    @classmethod
    def of(cls, case, target, spec, features, pair_digest: str = "", digest: str = "") -> Record:
        """The record of ``case`` on ``target`` (``spec``: the target's Spec, None for a spec this
        process does not know), not yet judged."""
        return cls(
            case=case.id, case_digest=digest or case.digest, file=case.file,
            line=case.source.line if case.source else None,
            op=case.op, form=case.form, dtype=case.dtype, expect=case.expect,
            clause=list(case.clause), summary=case.describe(), description=case.description,
            features=sorted(features), attributes=case.attributes, shape=case.shape,
            inputs={name: list(arr.shape) for name, arr in case.tensors.items()},
            semantics=spec.semantics if spec is not None else "",
            target=target.id, spec=target.spec, spec_family=spec.family if spec is not None else "",
            runtime=target.runtime, runtime_family=target.runtime_family, runtime_version=target.version,
            device=target.device, config=target.config, target_precision=target.precision,
            plugin=target.plugin, converter=getattr(target, "converter", ""), pair_digest=pair_digest)

    def as_dict(self) -> dict[str, Any]:
        """The results.jsonl line's mapping: the fixed fields in order, ``extra``'s after
        ``tolerance``, then ``message`` and ``repro``."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name not in ("extra", "message", "repro") and (f.name != "converter" or self.converter)}
        out.update(self.extra)
        out["message"] = self.message
        out["repro"] = self.repro
        return out


def line_of(record: dict) -> str:
    """A record as one JSON line (json's C encoder where every float is finite, else cleaned first)."""
    try:
        return json.dumps(record, allow_nan=False)
    except ValueError:
        return json.dumps(_clean(record))


def _clean(value):
    """JSON has no inf/nan: write them as strings so every line stays parseable."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def read_results(path) -> list[dict]:
    """Every complete line of a results file (a torn last line from an interrupted run is skipped)."""
    out: list[dict] = []
    p = Path(path)
    if not p.exists():
        return out
    with p.open(encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


class ResultStore:
    """Append-only store. ``done`` maps (case id, target id) to the pair digest already judged (the
    case's content and what it was judged by: :meth:`conformance.run.engine.Engine.pair_digest`)."""

    def __init__(self, out_dir, resume: bool = True):
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "results.jsonl"
        if self.path.exists() and not self.path.is_file():  # a FIFO or a device would hang or flood us
            from conformance.files import WriteError
            raise WriteError(f"{self.path} is not a regular file; remove it, or give the run another --out")
        if not resume and self.path.exists():
            self.path.unlink()
        self.records = read_results(self.path)
        self._by_pair: dict[tuple[str, str], dict] | None = None
        self.done = {(r["case"], r["target"]): r.get("pair_digest") for r in self.records}
        self._fix_torn_tail()
        self._file = self.path.open("a", encoding="utf-8")

    def _fix_torn_tail(self) -> None:
        if self.path.exists() and self.path.stat().st_size:
            with self.path.open("rb") as f:
                f.seek(-1, 2)
                if f.read(1) != b"\n":
                    with self.path.open("a", encoding="utf-8") as g:
                        g.write("\n")

    def is_done(self, case_id: str, target_id: str, digest: str) -> bool:
        return self.done.get((case_id, target_id)) == digest

    def stored(self, case_id: str, target_id: str) -> dict | None:
        """The newest record of the pair, None where there is none."""
        if self._by_pair is None:
            self._by_pair = {(r["case"], r["target"]): r for r in self.records}
        return self._by_pair.get((case_id, target_id))

    def append(self, record: dict) -> None:
        self._file.write(line_of(record) + "\n")
        self._file.flush()
        self.records.append(record)
        self.done[(record["case"], record["target"])] = record.get("pair_digest")
        if self._by_pair is not None:
            self._by_pair[(record["case"], record["target"])] = record

    def latest(self) -> list[dict]:
        """The newest record of every (case, target) pair (a resumed run may have redone some)."""
        latest = {}
        for r in self.records:
            latest[(r["case"], r["target"])] = r
        return list(latest.values())

    def close(self) -> None:
        self._file.close()


class MemoryStore:
    """A store that keeps records in memory (for the fuzzer and the ablation); programs that
    must exist as files (IR, descriptors) are written under ``dir``."""

    def __init__(self, folder):
        self.dir = Path(folder)
        self.records: list[dict] = []

    def is_done(self, case_id: str, target_id: str, digest: str) -> bool:
        return False

    def stored(self, case_id: str, target_id: str) -> dict | None:
        return None

    def append(self, record: dict) -> None:
        self.records.append(record)

    def latest(self) -> list[dict]:
        return list(self.records)

    def close(self) -> None:
        pass
