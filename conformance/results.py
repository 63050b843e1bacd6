"""results.jsonl: one JSON line per (case, target), appended as results arrive; the resume index."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Generic, TypedDict, TypeVar, cast, overload

T = TypeVar("T")


class Expected(TypedDict, total=False):
    """The expectations entry that covers a pair (the gate's ``expected``: conformance/gate/)."""
    kind: str
    reason: str
    link: str
    where: str
    versions: str
    #: whether the entry names the defect of the pair's cluster cause (conformance/gate/audit.py)
    names_cause: bool


class Declared(TypedDict, total=False):
    """The second judgement: the pair against the precision it computed in (docs/configuration.md), and
    the kernel's measured activations where they are less accurate than the model's (docs/precision.md)."""
    precision: str
    activations: str
    verdict: str
    ratio: float | str | None
    max_abs_err: float | str | None
    message: str
    tolerance: str
    judged_by: str
    rigorous_ratio: float | str | None


class Worst(TypedDict, total=False):
    """The worst element of a judgement: where it is, what it is and how far off."""
    output: str
    index: list[int]
    time_step: int | None
    dtype: str
    got: Any
    expected: Any
    abs_err: float | str
    ulp: float | str | None
    allowed: float | str
    bound: Any
    ratio: float | str


class Silent(TypedDict, total=False):
    """The unspecified elements' sub-verdict (docs/silent.md)."""
    verdict: str
    message: str
    points: dict[str, Any]
    repeated: Any


class Field(Generic[T]):
    """A judgement's field kept in ``extra`` (so results.jsonl keeps its keys and their order), read
    and written as a typed attribute; ``default`` where the line has none. mypy checks every read."""

    def __init__(self, default: T, doc: str = ""):
        self.default = default
        self.__doc__ = doc

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> Field[T]: ...
    @overload
    def __get__(self, obj: Record, owner: type) -> T: ...
    def __get__(self, obj: Record | None, owner: type) -> Field[T] | T:
        if obj is None:
            return self
        if self.name in obj.extra:
            return cast(T, obj.extra[self.name])
        return type(self.default)() if isinstance(self.default, (list, dict)) else self.default

    def __set__(self, obj: Record, value: T) -> None:
        obj.extra[self.name] = value

    def __delete__(self, obj: Record) -> None:
        obj.extra.pop(self.name, None)


@dataclasses.dataclass
class Record:
    """One (case, target) verdict: the contract between the engine, the gate, the reports and the
    fuzzer, written as one line of results.jsonl (:meth:`as_dict`). Built only by :meth:`of`, from
    the case, the target and its spec, so ``spec_family`` and ``runtime_family`` come from the
    Spec and the Target and no reader parses an id. ``extra`` holds the judgement's own fields
    (per-output errors, worst elements, the second judgement, the gate's fields, ...), written after
    the fixed ones; those readers use are typed attributes (each a :class:`Field` below).

    A results file is read back with :meth:`from_dict` (:func:`read_records`): ``as_dict`` of it is
    the line again, keys and order (a line of an older release, or the summary line of
    ``--artifacts failing``, lacks fields: they read as their default and are not written back)."""

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
    #: the keys of the line this record was read from, in its order (None: built by :meth:`of`)
    _keys: tuple[str, ...] | None = dataclasses.field(default=None, repr=False, compare=False)

    # the judgement's fields (conformance/run/judging/pair.py), kept in ``extra``
    ratio = Field[float | str | None](None, "the error over the tolerance (a string where not finite)")
    max_rel_err = Field[float | str | None](None)
    reading = Field[str]("", "the spec reading the outputs matched best")
    worst = Field[Worst | None](None)
    worst_elements = Field[dict[str, Any] | None](None, "per output, its worst elements")
    error_by_step = Field[dict[str, Any] | None](None, "per output, the error at each time step")
    unspecified = Field[int](0, "how many elements the spec leaves unspecified")
    unspecified_values = Field[dict[str, Any] | None](None)
    oracle = Field[dict[str, Any] | None](None, "the oracle's certificate, profile and readings")
    silent = Field[Silent | None](None)
    declared = Field[Declared | None](None, "the second judgement, against the declared precision")
    effective = Field[dict[str, Any] | None](None, "the configuration the pair ran in (open: config keys)")
    path = Field[dict[str, Any] | None](None, "the path the recurrent node took (device, provider)")
    fallback = Field[Any](None, "where the node ran elsewhere than the target (docs/forms.md)")
    unsound = Field[bool](False, "the call raised and left its worker unable to compute: retired (docs/isolation.md)")
    batch = Field[dict[str, Any] | None](None, "how a batched pair was run")
    notes = Field[list[str]]([], "the translator's and the case's notes")
    program = Field[str]("", "the program file the runtime ran")
    elapsed_s = Field[float | None](None)
    runtime_output = Field[str]("", "what the runtime printed during the call")
    artefacts = Field[Any](None, "the runtime's converted artefacts, where it wrote any")
    repeat = Field[str]("")
    loaded_by = Field[str]("")
    relations = Field[list[Any] | None](None)
    same_input = Field[list[Any] | None](None)
    # written by the gate (conformance/gate/), the artifacts' trimming and the history
    gate = Field[str]("", "new | expected | fixed | ok | baseline | fallback; \"\" where not gated")
    expected = Field[Expected | None](None, "the expectations entry that covers the pair")
    detail = Field[str]("", "\"summary\" on a line --artifacts failing trimmed")
    unstable = Field[list[str] | None](None, "a history's repeats' verdicts, where it passed in one and failed in "
                                             "another")
    verdicts_seen = Field[list[str] | None](None, "a history's repeats' verdicts, where there were several")
    runs = Field[list[Any] | None](None)

    @classmethod
    def of(cls, case: Any, target: Any, spec: Any, features: Iterable[str], pair_digest: str = "",
           digest: str = "") -> Record:
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
               if f.name not in ("extra", "message", "repro", "_keys") and (f.name != "converter" or self.converter)}
        out.update(self.extra)
        out["message"] = self.message
        out["repro"] = self.repro
        if self._keys is None:
            return out
        for name in _FIXED:   # a field the line lacked, still unset, is not written back
            if name not in self._keys and name in out and out[name] == _absent(name):
                del out[name]
        ordered = {k: out.pop(k) for k in self._keys if k in out}
        ordered.update(out)
        return ordered

    @classmethod
    def from_dict(cls, line: dict[str, Any]) -> Record:
        """The record of a results.jsonl line (the inverse of :meth:`as_dict`): the fixed fields
        typed, any other key into ``extra``; a fixed field the line lacks (an older release's
        file, a summary line) reads as its default."""
        fixed = {name: line[name] if name in line else _absent(name) for name in _FIXED}
        extra = {k: v for k, v in line.items() if k not in _FIXED}
        return cls(**fixed, extra=extra, _keys=tuple(line))

    def get(self, name: str, default: Any = None) -> Any:
        """A field by name, fixed or not, ``default`` where the line has none (as the line's mapping
        would answer): for a name chosen at run time (a report column, a grouping key). Code that
        names a field reads its attribute, which mypy checks."""
        if not self.has(name):
            return default
        return getattr(self, name) if name in _FIXED else self.extra[name]

    def has(self, name: str) -> bool:
        """Whether the line has ``name`` (:meth:`as_dict` writes it): not a fixed field a line of an
        older release or a summary line lacks (unless set since), nor a judgement's field the pair
        did not get."""
        if name == "converter":   # written only where there is one
            return bool(self.converter)
        if name in _FIXED:
            return self._keys is None or name in self._keys or getattr(self, name) != _absent(name)
        return name in self.extra


#: the fixed fields of a record, in the order of a results.jsonl line
_FIXED = tuple(f.name for f in dataclasses.fields(Record) if f.name not in ("extra", "_keys"))
#: what a fixed field reads as where a line lacks it
_ABSENT_DEFAULTS: dict[str, Any] = {
    "line": None, "clause": [], "features": [], "attributes": {}, "shape": {}, "inputs": {}, "plugin": False,
    "max_abs_err": None, "max_ulp": None, "tolerance": None}


def _absent(name: str) -> Any:
    value = _ABSENT_DEFAULTS.get(name, "")
    return type(value)() if isinstance(value, (list, dict)) else value


def line_of(record: dict[str, Any]) -> str:
    """A record as one JSON line (json's C encoder where every float is finite, else cleaned first)."""
    try:
        return json.dumps(record, allow_nan=False)
    except ValueError:
        return json.dumps(_clean(record))


def _clean(value: Any) -> Any:
    """JSON has no inf/nan: write them as strings so every line stays parseable."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def read_records(path: str | Path) -> list[Record]:
    """Every complete line of a results file as a :class:`Record` (:func:`read_results`)."""
    return [Record.from_dict(line) for line in read_results(path)]


def records_of(lines: Iterable[Record | dict[str, Any]]) -> list[Record]:
    """Records from results.jsonl mappings (a store's ``latest()``); Records pass through."""
    return [r if isinstance(r, Record) else Record.from_dict(r) for r in lines]


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """Every complete line of a results file (a torn last line from an interrupted run is skipped)."""
    out: list[dict[str, Any]] = []
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

    def __init__(self, out_dir: str | Path, resume: bool = True) -> None:
        self.dir = Path(out_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "results.jsonl"
        if self.path.exists() and not self.path.is_file():  # a FIFO or a device would hang or flood us
            from conformance.files import WriteError
            raise WriteError(f"{self.path} is not a regular file; remove it, or give the run another --out")
        if not resume and self.path.exists():
            self.path.unlink()
        self.records = read_results(self.path)
        self._by_pair: dict[tuple[str, str], dict[str, Any]] | None = None
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

    def stored(self, case_id: str, target_id: str) -> dict[str, Any] | None:
        """The newest record of the pair, None where there is none."""
        if self._by_pair is None:
            self._by_pair = {(r["case"], r["target"]): r for r in self.records}
        return self._by_pair.get((case_id, target_id))

    def append(self, record: Record | dict[str, Any]) -> None:
        """A judged pair: a Record (the engine's), or its line."""
        if isinstance(record, Record):
            record = record.as_dict()
        self._file.write(line_of(record) + "\n")
        self._file.flush()
        self.records.append(record)
        self.done[(record["case"], record["target"])] = record.get("pair_digest")
        if self._by_pair is not None:
            self._by_pair[(record["case"], record["target"])] = record

    def latest(self) -> list[dict[str, Any]]:
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

    def __init__(self, folder: str | Path) -> None:
        self.dir = Path(folder)
        self.records: list[dict[str, Any]] = []

    def is_done(self, case_id: str, target_id: str, digest: str) -> bool:
        return False

    def stored(self, case_id: str, target_id: str) -> dict[str, Any] | None:
        return None

    def append(self, record: Record | dict[str, Any]) -> None:
        self.records.append(record.as_dict() if isinstance(record, Record) else record)

    def latest(self) -> list[dict[str, Any]]:
        return list(self.records)

    def close(self) -> None:
        pass
