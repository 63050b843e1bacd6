"""The CI gate: expectations files of known divergences, and a baseline of an earlier run.

An expectations file names the targets it covers and lists known divergences, by case ids, by the
cases' features, by the configuration the pairs ran in or by runtime versions, each with a kind, a
reason and its upstream issue. A failing pair an entry covers is ``expected``, a passing one
``fixed`` (``ok`` where a class named by features or a configuration has members that do not
diverge); where several entries cover a pair, the one naming its cluster's cause excuses it
(:meth:`Expectations.match`; conformance/gate_audit.py reports the others). With a baseline, a
failing pair fails the run only when it was not failing in the baseline.

The manual, with the file format and every rule: docs/gate.md; entries by configuration and by
version: docs/configuration.md, "The gate".
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import jsonschema
import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

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
from conformance.gate_schema import SCHEMA as EXPECTATIONS_SCHEMA
from conformance.gate_schema import ExpectationsError

if TYPE_CHECKING:
    from conformance.baseline import Baseline

KINDS = ("known-bug", "unsupported", "spec-ambiguity", "reduced-precision")
#: the token of a cause that is the configuration a pair ran in (the ablation's "configuration")
CONFIGURATION = "configuration"
#: the gate every command uses unless told otherwise: this folder, where it exists
DEFAULT_EXPECTATIONS = Path("expectations")
#: what ``within`` may require of a pair's second judgement (the record's ``declared``)
WITHIN = ("declared",)


class Glob:
    """A glob with `*` and `?` wildcards only (case ids contain `[`, `]` and `=`, which match
    literally), matched against the whole text in linear time: the pattern's literal runs between
    `*`s are found left to right, each at its first occurrence, which never backtracks (a regex
    `.*a.*a.*b` can take exponential time on a long id)."""

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern = pattern
        self.fold = bool(flags & re.IGNORECASE)
        text = pattern.lower() if self.fold else pattern
        pieces = text.split("*")
        self._head, self._tail = pieces[0], pieces[-1]
        self._middle = [p for p in pieces[1:-1] if p]
        self._star = len(pieces) > 1
        # a piece with `?` is found by a regex with no repetition: it cannot backtrack
        self._find = {p: re.compile("".join("." if ch == "?" else re.escape(ch) for ch in p), re.DOTALL)
                      for p in self._middle if "?" in p}

    @staticmethod
    def _fits(piece: str, text: str, at: int) -> bool:
        """`piece` (with `?`) matches text[at:at+len(piece)]."""
        if at < 0 or at + len(piece) > len(text):
            return False
        return all(p == "?" or p == t for p, t in zip(piece, text[at:at + len(piece)]))

    def match(self, text: str) -> bool:
        text = str(text)
        if self.fold:
            text = text.lower()
        if not self._star:
            return len(text) == len(self._head) and self._fits(self._head, text, 0)
        head, tail = self._head, self._tail
        if len(head) + len(tail) > len(text) or not self._fits(head, text, 0):
            return False
        end = len(text) - len(tail)
        if not self._fits(tail, text, end):
            return False
        pos = len(head)
        for piece in self._middle:
            found = (self._find[piece].search(text, pos, end) if piece in self._find else None)
            at = (found.start() if found else -1) if piece in self._find else text.find(piece, pos, end)
            if at < 0:
                return False
            pos = at + len(piece)
        return True

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r}{', IGNORECASE' if self.fold else ''})"


def glob_to_regex(pattern: str, flags: int = 0) -> Glob:
    """The matcher of a glob (`*` and `?` only): an object with ``.match(text)``, like a compiled
    regex's but true only for the whole text, in linear time (:class:`Glob`). ``re.IGNORECASE``
    in `flags` ignores letter case."""
    return Glob(pattern, flags)


def _patterns(value) -> list[Glob]:
    values = [value] if isinstance(value, str) else list(value)
    return [glob_to_regex(str(v)) for v in values]


@dataclass
class Entry:
    cases: list                     # patterns over case ids ("*" when the entry names features only)
    targets: list
    verdicts: tuple
    kind: str
    reason: str
    link: str
    where: Where
    matched: int = 0
    tolerance: dict | None = None   # an override for the cases it covers: abs, rel, source
    features: list = field(default_factory=list)   # [(negated, [pattern, ...]), ...]: each needs one match
    config: dict = field(default_factory=dict)     # key of the record's `effective` -> [pattern, ...]
    config_text: str = ""                          # the config as written, for messages
    within: str = ""                               # "declared": the pair passes its declared precision
    versions: str = ""                             # a PEP 440 specifier set over runtime versions, as written
    specifiers: SpecifierSet | None = field(default=None, repr=False, compare=False)   # `versions`, parsed

    def __post_init__(self) -> None:
        if self.versions and self.specifiers is None:
            self.specifiers = SpecifierSet(self.versions)   # InvalidSpecifier where malformed

    @property
    def by_class(self) -> bool:
        """Named by features or configuration: a class whose passing members are not "fixed"."""
        return bool(self.features or self.config)

    def covers(self, record: dict, any_version: bool = False) -> bool:
        """Whether the entry covers the record; ``any_version``: whatever its ``versions`` say (a
        history names a divergence class by its entry on every release, conformance/report/history.py)."""
        return (any(p.match(record["case"]) for p in self.cases)
                and any(p.match(record["target"]) for p in self.targets)
                and self.has_features(record.get("features"))
                and self.has_config(record.get("effective"))
                and self.is_within(record)
                and (any_version or self.specifiers is None
                     or self.applies_to_version(record.get("runtime_version"))))

    def applies_to_version(self, version: str | None) -> bool:
        """True when the entry names no versions, or `version` is a PEP 440 version in its
        specifier set (pre-releases included); a missing or unparsable version is in none."""
        if self.specifiers is None:
            return True
        parsed = _version(version) if isinstance(version, str) else None
        return parsed is not None and self.specifiers.contains(parsed, prereleases=True)

    def has_config(self, effective) -> bool:
        if not self.config:
            return True
        if not effective:
            return False
        return all(any(p.match(str(effective.get(key, ""))) for p in patterns)
                   for key, patterns in self.config.items())

    def is_within(self, record: dict) -> bool:
        if not self.within:
            return True
        return (record.get("declared") or {}).get("verdict") == "pass"

    def has_features(self, tokens) -> bool:
        if not self.features:
            return True
        if tokens is None:
            return False   # a record from before features were recorded
        return all(negated != any(p.match(t) for p in item for t in tokens) for negated, item in self.features)

    def names_cause(self, cause) -> bool | None:
        """Whether the entry names the defect a cluster's cause is made of: one of its features
        matches one of the cause's feature tokens, or it names a configuration and the cause is the
        configuration (conformance/gate_audit.py). None where it cannot tell: the entry names no
        feature the ablation can take away (only absent ones, values such as `nan`, `violates=`)."""
        if self.config and CONFIGURATION in cause:
            return True
        nameable = [item for negated, item in self.features if not negated and _ablatable(item)]
        if not nameable:
            return None
        return any(p.match(t) for item in nameable for p in item for t in cause)

    def to_json(self) -> dict:
        return {"kind": self.kind, "reason": self.reason, "link": self.link, "where": str(self.where),
                **({"versions": self.versions} if self.versions else {})}


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

    def match(self, record: dict, any_version: bool = False, cause=None) -> Entry | None:
        """The entry that covers the record: the first in the files' order, or, given the feature
        tokens of the record's cluster cause (``cause``), the first whose features name it (one
        excuses a pair only for the defect it names), else the first that names no feature the
        ablation could have named (``nan``, an absent feature), else the first."""
        failing = record["verdict"] in FAILING
        unknown = other = None
        for entry in self._for_target(str(record["target"])):
            if entry.by_class and not failing:
                continue  # a feature or configuration class has members that pass; they are not "fixed"
            if entry.covers(record, any_version) and (not entry.verdicts or record["verdict"] in entry.verdicts or not failing):
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
        for patterns, given in self.silent_policies:
            if any(p.match(target_id) for p in patterns):
                policy.update(given)
        return policy

    def tolerance_for(self, case_id: str, target_id: str, features=(),
                      runtime_version: str | None = None) -> dict | None:
        """The tolerance override of the first entry that sets one for this pair (the runtime's
        version, where not given, is the one the target id names)."""
        record = {"case": case_id, "target": target_id, "features": features,
                  "runtime_version": version_of_target(target_id) if runtime_version is None else runtime_version}
        for entry in self.entries:
            if entry.tolerance and entry.covers(record):
                return dict(entry.tolerance, where=str(entry.where))
        return None


@functools.cache
def _ablation_tokens() -> tuple[str, ...]:
    from conformance.case.features import FEATURES
    return tuple(k.lower() for f in FEATURES if f.ablation is not None for k in f.tokens)


def _ablatable(item) -> bool:
    """Whether a features item names a feature the ablation can take away (and so name as a cause):
    ``clip``, ``P``, ``act=*``, ``dtype=float64``, ...; not ``nan`` or ``violates=*``."""
    keys = _ablation_tokens()
    return any(p.match(k) or (k.endswith("=") and p.pattern.lower().startswith(k)) for p in item for k in keys)


@functools.lru_cache(maxsize=4096)
def _version(text: str) -> Version | None:
    """`text` as a PEP 440 version; None where it is empty or is not one."""
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def version_of_target(target_id: str) -> str:
    """The runtime version a target id names (``onnxruntime-1.32.0/CPU@onnx-14`` -> ``1.32.0``,
    ``onnx-reference-1.17.0/CPU@onnx-7`` -> ``1.17.0``): what follows the first ``-`` of the
    runtime part that reads as a PEP 440 version; "" where none does (a target with no version)."""
    head = target_id.partition("/")[0]
    for at, char in enumerate(head):
        if char == "-" and _version(head[at + 1:]) is not None:
            return head[at + 1:]
    return ""


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
        raise ExpectationsError(f"{where}: {key + ': ' if key else ''}{message}" + (f"; Consider {hint}" if hint else ""))
    file_targets = doc.get("targets", "*")
    file_versions = _versions(doc.get("versions"), where_of(doc, "versions", top)) if "versions" in doc else None
    if doc.get("unspecified") and policies is not None:
        policies.append((_patterns(file_targets), dict(doc["unspecified"])))
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
            cases=_patterns(raw.get("cases") or "*"), targets=_patterns(raw.get("targets", file_targets)),
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
        raise ExpectationsError(f"{where}: versions {shorten(value)} is not a PEP 440 specifier set of runtime versions "
                                f"such as \">=1.20,<1.29\" or \"==1.32.0\" ({shorten_text(str(exc))})") from None


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


def classify(record: dict, expectations: Expectations | None, baseline: Baseline | None = None, cause=None) -> dict:
    """Gate fields for one record: gate = new | expected | fixed | ok | baseline | fallback, and the
    entry. ``cause``: the feature tokens of the record's cluster cause, where the ablation named one:
    the entry that names it is preferred, and ``expected.names_cause`` says whether the entry did.
    A pair whose recurrent node ran on another device or provider than its target's (the record's
    ``fallback``: conformance/runtimes/onnxruntime.py) did not run on the target: its verdict is not
    the target's, whatever it is (``fallback``; docs/forms.md)."""
    if record.get("fallback"):
        return {"gate": "fallback", "expected": None}
    failing = record["verdict"] in FAILING
    entry = expectations.match(record, cause=cause) if expectations else None
    if entry:
        entry.matched += 1
    if failing:
        if entry:
            gate = "expected"
        elif baseline is not None and not baseline.regressed(record):
            gate = "baseline"
        else:
            gate = "new"
    else:
        gate = "fixed" if entry and record["verdict"] == "pass" else "ok"
    expected = entry.to_json() if entry else None
    named = entry.names_cause(cause) if entry is not None and cause and failing else None
    if expected is not None and named is not None:
        expected["names_cause"] = named
    return {"gate": gate, "expected": expected}


def upstream_url(upstream) -> str:
    """The issue URL an entry's ``upstream`` names (``""`` for ``none found ...``): its link where
    it gives none of its own."""
    text = str(upstream or "")
    return text.split()[0] if text.startswith("https://") else ""
