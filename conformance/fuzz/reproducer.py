"""Findings as case files: a minimized case written as YAML the loader reads back to the same
canonical case (literal tensors for every input, so it reproduces exactly), and the index of the
findings already written (for de-duplication across campaigns).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from conformance.case.model import Case
from conformance.case.vocabulary import ATTRIBUTE_TABLE, OUTPUTS
from conformance.fuzz.signature import generalize, parse_signature, signature_hash, violated_for
from conformance.results import Record

ATTRIBUTE_ORDER = tuple(a.name for a in ATTRIBUTE_TABLE)
TENSOR_ORDER = ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P")


class _Dumper(yaml.SafeDumper):
    """Block style for mappings and outer lists, flow style for the innermost lists of numbers."""


def _represent_list(dumper, data):
    flow = all(not isinstance(x, (list, dict)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


def _plain_attr(value):
    if isinstance(value, (list, tuple)):
        return [_plain_attr(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def case_document(case: Case, clause: list, description: str, finding: dict | None = None) -> dict:
    """The case-file mapping of ``case`` (schema: ``conformance schema``)."""
    attributes = {k: _plain_attr(case.attributes[k]) for k in ATTRIBUTE_ORDER if k in case.attributes}
    attributes.update({k: _plain_attr(v) for k, v in case.attributes.items() if k not in attributes})
    inputs = {}
    for name in TENSOR_ORDER:
        arr = case.tensors.get(name)
        if arr is None:
            if name in ("X", "W", "R"):
                inputs[name] = "absent"
            continue
        if name == "sequence_lens":
            inputs[name] = np.asarray(arr).astype(np.int64).tolist()
        else:
            inputs[name] = np.asarray(arr).astype(np.float64).tolist()
    from conformance.case.vocabulary import inputs_of  # a stack's further layers, a projection (docs/framework.md)
    for name in inputs_of(case.op, case.attributes):
        if name not in TENSOR_ORDER and name in case.tensors:
            inputs[name] = np.asarray(case.tensors[name]).astype(np.float64).tolist()
    doc = {"op": case.op, "form": case.form, "clause": list(clause), "description": description,
           "attributes": attributes,
           "shape": {k: int(case.shape[k]) for k in ("seq_length", "batch_size", "input_size")},
           "dtype": case.dtype, "inputs": inputs}
    if case.outputs and tuple(case.outputs) != OUTPUTS[case.op]:
        doc["outputs"] = list(case.outputs)
    doc["expect"] = case.expect
    if not case.valid:
        doc["violates"] = case.violates
    if finding:
        doc["finding"] = finding
    return doc


def render(doc: dict, header: Sequence[str] = ()) -> str:
    body = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    lines = [f"# {line}".rstrip() for line in header]
    return "\n".join(lines) + ("\n" if lines else "") + body


def file_name(case: Case, runtime: str, verdict: str, sig: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", f"{case.op}-{runtime}-{verdict}".lower()).strip("-")
    return f"{slug}-{signature_hash(sig)}.yaml"


def shown_path(path: Path) -> str:
    """``path`` as a command line names it: relative to the current folder where it is inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def repro_command(path: Path, records: list[Record], plugins: dict) -> str:
    """`conformance run <file> --runtime ... [--runtime-plugin ...] [--spec ...]` for the failing targets."""
    cmd = ["conformance", "run", shown_path(path)]
    for runtime in sorted({r.runtime for r in records}):
        cmd += ["--runtime", runtime]
        if runtime in plugins:
            cmd += ["--runtime-plugin", plugins[runtime]]
    devices = sorted({r.device for r in records})
    if len(devices) == 1 and devices[0] not in ("", "default"):
        cmd += ["--device", devices[0]]
    configs = sorted({str(r.config or "default") for r in records})
    if configs != ["default"] and len(configs) == 1:   # one configuration failed: rerun that one only
        from conformance.selection import config_selecting
        cmd += ["--config", config_selecting(configs[0], ["default"])]
    for spec in sorted({r.spec for r in records}):
        cmd += ["--spec", spec]
    return " ".join(shlex.quote(c) for c in cmd)


# -- the index of written findings ---------------------------------------------------------------

@dataclass
class Known:
    """A written finding, as the index compares examples with it."""

    signature: str
    key: str                   # runtime key
    verdict: str
    scope: str                 # the op, or "*" for every op
    violated: tuple            # the constraints an accepted invalid case breaks, else ()
    cause: frozenset           # generalized features the finding needs
    path: Path
    op: str = ""               # the op of the case it was found with

    @classmethod
    def of(cls, sig: str, case, path: Path) -> "Known":
        key, verdict, scope, cause = parse_signature(sig)
        return cls(sig, key, verdict, scope, violated_for(verdict, case), cause, Path(path), case.op)

    def covers(self, origin_key: tuple, tokens) -> bool:
        """Whether this finding subsumes an example of that origin with these features."""
        key, verdict, op = origin_key[:3]
        return (key == self.key and verdict == self.verdict and tuple(origin_key[3:]) == self.violated
                and self.scope in ("*", op) and self.cause <= generalize(tokens))

    def supersedes(self, other: "Known") -> bool:
        """Whether this finding makes ``other`` redundant: the same origin (for every op, or for the
        op other was found with), and a cause that needs no more features than other's."""
        return (self.signature != other.signature
                and (self.key, self.verdict, self.violated) == (other.key, other.verdict, other.violated)
                and self.scope in ("*", other.scope, other.op) and self.cause <= other.cause)


@dataclass
class FindingIndex:
    """The findings in a folder (``finding:`` in a case file), by signature."""

    folder: Path
    by_signature: dict = field(default_factory=dict)
    problems: list = field(default_factory=list)

    @classmethod
    def load(cls, folder) -> "FindingIndex":
        from conformance.case import load_file
        index = cls(Path(folder))
        if not index.folder.is_dir():
            return index
        for path in sorted(index.folder.glob("*.y*ml")):
            try:
                raw = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError) as exc:
                index.problems.append(f"{path}: {exc}")
                continue
            finding = raw.get("finding") if isinstance(raw, dict) else None
            if not isinstance(finding, dict) or "signature" not in finding:
                continue
            cases, errors = load_file(path)
            if errors or len(cases) != 1:
                index.problems.append(f"{path}: " + "; ".join(map(str, errors)) if errors else f"{path}: not one case")
                continue
            try:
                index.add(Known.of(str(finding["signature"]), cases[0], path))
            except ValueError:
                index.problems.append(f"{path}: finding.signature {finding['signature']!r} is not "
                                      f"runtime|verdict|op|features")
        return index

    def add(self, known: Known) -> None:
        self.by_signature[known.signature] = known

    def merge(self, other: "FindingIndex") -> None:
        """Another folder's findings known as well (this folder's win on the same signature)."""
        for signature, known in other.by_signature.items():
            self.by_signature.setdefault(signature, known)
        self.problems += other.problems

    def covering(self, origin_key: tuple, tokens) -> Known | None:
        """The written finding that subsumes an example of this origin with these features, if any."""
        for known in self.by_signature.values():
            if known.covers(origin_key, tokens):
                return known
        return None

    def __len__(self) -> int:
        return len(self.by_signature)


def keep(paths, folder: Path) -> list[Path]:
    """Copy written findings into ``folder`` (``conformance fuzz --keep``: the repository's
    cases/regressions/), their repro commands naming the copy; the copies, in order."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    copies = []
    for path in paths:
        path = Path(path)
        target = folder / path.name
        if target.resolve() != path.resolve():
            text = path.read_text(encoding="utf-8")
            old, new = shlex.quote(shown_path(path)), shlex.quote(shown_path(target))
            # the repro in the header and in finding.repro (where YAML may fold the line after `run`)
            text = re.sub(r"(conformance run\s+)" + re.escape(old) + r"(?=\s)",
                          r"\g<1>" + new.replace("\\", "\\\\"), text)
            target.write_text(text, encoding="utf-8")
        copies.append(target)
    return copies
