"""The CI gate: expectations files of known divergences, and a baseline of an earlier run.

An expectations file names the targets it covers and lists known divergences, by case ids, by the
cases' features, by the configuration the pairs ran in or by runtime versions, each with a kind, a
reason and its upstream issue. A failing pair an entry covers is ``expected``, a passing one
``fixed`` (``ok`` where a class named by features or a configuration has members that do not
diverge); where several entries cover a pair, the one naming its cluster's cause excuses it
(:meth:`Expectations.match`; conformance/gate/audit.py reports the others). With a baseline
(conformance/gate/baseline.py), a failing pair fails the run only when it was not failing in the
baseline. This module loads the files and matches an entry to a pair; the entry is entry.py, its
globs globs.py, the gate fields of a record classify.py, the files' schema schema.py.

The manual, with the file format and every rule: docs/gate.md; entries by configuration and by
version: docs/configuration.md, "The gate".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import jsonschema
import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from conformance.case.limits import DEFAULT_LIMITS, Limits, shorten, shorten_text
from conformance.case.schema import describe_error, known_keys
from conformance.case.yamlio import (
    FileProblem,
    Where,
    describe_yaml_error,
    load_yaml,
    read_text,
    where_of,
)
from conformance.compare import FAILING
from conformance.gate.entry import KINDS, WITHIN, Entry, version_of_target
from conformance.gate.globs import Glob, glob_to_regex, patterns
from conformance.gate.schema import SCHEMA as EXPECTATIONS_SCHEMA
from conformance.gate.schema import ExpectationsError

if TYPE_CHECKING:
    from conformance.results import Record

#: the gate every command uses unless told otherwise: this folder, where it exists
DEFAULT_EXPECTATIONS = Path("expectations")


@dataclass
class Expectations:
    entries: list = field(default_factory=list)
    #: [(target patterns, {garbage|implausible: fail|report})] from the files' `unspecified:`
    silent_policies: list = field(default_factory=list)
    _by_target: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def load(cls, paths, limits: Limits = DEFAULT_LIMITS) -> "Expectations":
        """Every entry of the files (and folders of files) `paths`, each file once; the first
        problem raises :class:`ExpectationsError` with file:line."""
        entries: list[Entry] = []
        seen: set[Path] = set()
        policies: list[tuple[list[Glob], dict]] = []
        for path in _files(paths):
            try:
                identity = Path(path).resolve()
            except (OSError, RuntimeError):
                identity = Path(path).absolute()
            if identity in seen:
                continue
            seen.add(identity)
            entries += _load_file(path, limits, policies)
        return cls(entries, policies)

    def match(self, record: Record, any_version: bool = False, cause=None) -> Entry | None:
        """The entry that covers the record: the first in the files' order, or, given the feature
        tokens of the record's cluster cause (``cause``), the first whose features name it (one
        excuses a pair only for the defect it names), else the first that names no feature the
        ablation could have named (``nan``, an absent feature), else the first."""
        failing = record.verdict in FAILING
        unknown = other = None
        for entry in self._for_target(str(record.target)):
            if entry.by_class and not failing:
                continue  # a feature or configuration class has members that pass; they are not "fixed"
            if entry.covers(record, any_version) and (not entry.verdicts or record.verdict in entry.verdicts
                                                      or not failing):
                if not cause:
                    return entry
                named = entry.names_cause(cause)
                if named:
                    return entry
                if named is None:
                    unknown = unknown or entry
                else:
                    other = other or entry
        return unknown or other

    def _for_target(self, target: str) -> list[Entry]:
        """The entries that may cover a pair of ``target``: its target globs match and it is not a
        tolerance entry (that changes how pairs are judged, not whether a failure is known); in the
        files' order, so the first match is the same, without trying every entry's case globs on
        every pair. Kept per target (``entries`` are not changed after loading)."""
        found = self._by_target.get(target)
        if found is None:
            found = self._by_target[target] = [e for e in self.entries if e.tolerance is None
                                               and any(p.match(target) for p in e.targets)]
        return found

    def unused(self, target_ids=None) -> list[Entry]:
        """Entries that covered no pair; with ``target_ids`` (the targets that ran), only those
        whose targets ran, in a version the entry names: an entry for a runtime that is not
        installed here (an engine of ``nox -s conformance-all``), or for other versions of it, has
        nothing to cover, and says nothing."""
        return [e for e in self.entries if e.matched == 0 and e.tolerance is None
                and (target_ids is None or any(any(p.match(t) for p in e.targets)
                                               and e.applies_to_version(version_of_target(t))
                                               for t in target_ids))]

    def silent_policy_for(self, target_id: str) -> dict:
        """What the unspecified elements' sub-verdicts do to this target's pairs: the files whose
        targets match, later files winning (conformance/compare/silent.py has the default)."""
        policy = {}
        for target_globs, given in self.silent_policies:
            if any(p.match(target_id) for p in target_globs):
                policy.update(given)
        return policy

    def tolerance_for(self, case_id: str, target_id: str, features=(),
                      runtime_version: str | None = None) -> dict | None:
        """The tolerance override of the first entry that sets one for this pair (the runtime's
        version, where not given, is the one the target id names)."""
        version = version_of_target(target_id) if runtime_version is None else runtime_version
        for entry in self.entries:
            if entry.tolerance and entry.covers_pair(case_id, target_id, features, version):
                return dict(entry.tolerance, where=str(entry.where))
        return None


def _files(paths) -> list[Path]:
    out = []
    for p in map(Path, paths or ()):
        out += sorted(p.glob("*.y*ml")) if p.is_dir() else [p]
    return out


_EXPECTATIONS_VALIDATOR = jsonschema.Draft202012Validator(EXPECTATIONS_SCHEMA)
_EXPECTATIONS_KEYS = known_keys(EXPECTATIONS_SCHEMA)


def _load_file(path: Path, limits: Limits = DEFAULT_LIMITS, policies: list | None = None) -> list[Entry]:
    name = str(path)
    try:
        doc = load_yaml(read_text(path, limits), name, limits)
    except FileProblem as exc:
        raise ExpectationsError(f"{name}:{exc.line}: cannot read expectations: {exc.message}") from None
    except yaml.YAMLError as exc:
        line, problem = describe_yaml_error(exc)
        raise ExpectationsError(f"{name}:{line}: cannot read expectations: {problem}") from None
    top = Where(name, 1)
    if not isinstance(doc, dict) or "entries" not in doc:
        raise ExpectationsError(f"{top}: an expectations file is a mapping with `targets` and `entries`")
    problems = sorted(_EXPECTATIONS_VALIDATOR.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    if problems:
        where, key, message, hint = describe_error(problems[0], doc, top, _EXPECTATIONS_KEYS)
        raise ExpectationsError(f"{where}: {key + ': ' if key else ''}{message}"
                                + (f"; Consider {hint}" if hint else ""))
    file_targets = doc.get("targets", "*")
    file_versions = _versions(doc.get("versions"), where_of(doc, "versions", top)) if "versions" in doc else None
    if doc.get("unspecified") and policies is not None:
        policies.append((patterns(file_targets), dict(doc["unspecified"])))
    entries = []
    for i, raw in enumerate(doc["entries"] or []):
        where = where_of(doc["entries"], i, top)
        tolerance = raw.get("tolerance")
        if tolerance is not None:
            if (not isinstance(tolerance, dict) or not str(tolerance.get("source", "")).strip()
                    or set(tolerance) - {"abs", "rel", "source"}
                    or not all(isinstance(tolerance.get(k, 0), (int, float)) for k in ("abs", "rel"))):
                raise ExpectationsError(f"{where}: a tolerance override is {{abs, rel, source}} and must name "
                                        f"its source (a spec sentence or a named policy)")
            raw = dict(raw, kind=raw.get("kind", "spec-ambiguity"))
        feature_items = _feature_items(raw.get("features"), where)
        missing = [k for k in ("kind", "reason") if not raw.get(k)]
        if not raw.get("cases") and not feature_items and not raw.get("config"):
            missing.insert(0, "cases (or features, or config)")
        if missing:
            raise ExpectationsError(f"{where}: entry lacks {', '.join(missing)}; every known divergence "
                                    f"needs the cases it covers (by id or by features), a kind and a reason")
        if raw["kind"] not in KINDS:
            raise ExpectationsError(f"{where}: kind {shorten(raw['kind'])} is not one of {', '.join(KINDS)}")
        config = _config_items(raw.get("config"), where)
        within = raw.get("within", "")
        if within and within not in WITHIN:
            raise ExpectationsError(f"{where}: within {shorten(within)} is not one of {', '.join(WITHIN)}")
        if tolerance is not None and (raw.get("config") or within):
            raise ExpectationsError(f"{where}: a tolerance override is chosen before the pair runs, so it cannot "
                                    f"depend on the configuration the run measures (config, within)")
        versions = (_versions(raw["versions"], where_of(raw, "versions", where)) if "versions" in raw
                    else file_versions)
        verdict = raw.get("verdict", ())
        entries.append(Entry(
            cases=patterns(raw.get("cases") or "*"), targets=patterns(raw.get("targets", file_targets)),
            verdicts=tuple([verdict] if isinstance(verdict, str) else verdict), kind=raw["kind"],
            reason=" ".join(str(raw["reason"]).split()),
            link=str(raw.get("link") or upstream_url(raw.get("upstream"))), where=where,
            tolerance=tolerance, features=feature_items, config=config, within=within,
            versions=versions[0] if versions else "", specifiers=versions[1] if versions else None,
            config_text=", ".join(f"{k} {v if isinstance(v, str) else '/'.join(map(str, v))}"
                                  for k, v in (raw.get("config") or {}).items())))
    return entries


def _versions(value, where) -> tuple[str, SpecifierSet]:
    """``versions`` as (the text as written, its PEP 440 specifier set)."""
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        raise ExpectationsError(f"{where}: versions {shorten(value)} names no version; a PEP 440 specifier set such "
                                f"as \">=1.20,<1.29\" or \"==1.32.0\" (leave versions out to cover every version)")
    try:
        return text, SpecifierSet(text)
    except InvalidSpecifier as exc:
        raise ExpectationsError(f"{where}: versions {shorten(value)} is not a PEP 440 specifier set of runtime "
                                f"versions such as \">=1.20,<1.29\" or \"==1.32.0\" "
                                f"({shorten_text(str(exc))})") from None


def _config_items(value, where) -> dict:
    """``config`` as {key of the record's effective configuration: [pattern, ...]}."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not value:
        raise ExpectationsError(f"{where}: config is a mapping of configuration keys to values, such as "
                                f"{{precision: bf16}} or {{precision: [bf16, f16]}}")
    out = {}
    for key, wanted in value.items():
        wanted = [wanted] if isinstance(wanted, (str, int, float)) else wanted
        if not isinstance(wanted, list) or not wanted or not all(isinstance(w, (str, int, float)) for w in wanted):
            raise ExpectationsError(f"{where}: config {shorten(key, 40)} is a value or a list of values; got "
                                    f"{shorten(wanted)}")
        out[str(key)] = [glob_to_regex(str(w), re.IGNORECASE) for w in wanted]
    return out


def _feature_items(value, where) -> list:
    """``features`` as a list of items (negated, patterns): one of the patterns must match (none, if negated)."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ExpectationsError(f"{where}: features is a list of features (or of lists of alternatives)")
    out = []
    for item in items:
        negated = isinstance(item, str) and item.startswith("!")
        alternatives = [item[1:] if negated else item] if isinstance(item, str) else item
        if (not isinstance(alternatives, list) or not alternatives
                or not all(isinstance(a, str) and a.strip() for a in alternatives)):
            raise ExpectationsError(f"{where}: a features item is a feature such as `P` or `act=Elu`, a "
                                    f"list of them (one must be present) or `!feature`; got {shorten(item)}")
        out.append((negated, [glob_to_regex(a.strip(), re.IGNORECASE) for a in alternatives]))
    return out


def expectation_paths(paths, none: bool = False) -> tuple:
    """The expectations a command gates on: ``paths`` as given, else ./expectations/ where it
    exists; nothing with ``none`` (--no-expectations, which contradicts --expectations)."""
    if none and paths:
        raise ExpectationsError("--no-expectations and --expectations contradict each other; Consider dropping one")
    if none:
        return ()
    return tuple(paths) or ((DEFAULT_EXPECTATIONS,) if DEFAULT_EXPECTATIONS.is_dir() else ())



def upstream_url(upstream) -> str:
    """The issue URL an entry's ``upstream`` names (``""`` for ``none found ...``): its link where
    it gives none of its own."""
    text = str(upstream or "")
    return text.split()[0] if text.startswith("https://") else ""
