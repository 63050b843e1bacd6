"""One expectations entry: what it covers (case and target globs, features, configuration,
versions, ``within``) and whether it names a cluster's cause (docs/gate.md)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from conformance.case.yamlio import Where

if TYPE_CHECKING:
    from conformance.results import Expected, Record

KINDS = ("known-bug", "unsupported", "spec-ambiguity", "reduced-precision")
#: the token of a cause that is the configuration a pair ran in (the ablation's "configuration")
CONFIGURATION = "configuration"
#: what ``within`` may require of a pair's second judgement (the record's ``declared``)
WITHIN = ("declared",)


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

    def covers(self, record: Record, any_version: bool = False) -> bool:
        """Whether the entry covers the record; ``any_version``: whatever its ``versions`` say (a
        history names a divergence class by its entry on every release, conformance/report/history.py)."""
        return (self.covers_pair(record.case, record.target, features_of(record), record.runtime_version,
                                 record.effective, any_version)
                and self.is_within(record))

    def covers_pair(self, case: str, target: str, features, runtime_version: str | None,
                    effective: dict | None = None, any_version: bool = False) -> bool:
        """Whether the entry covers a pair by its case and target ids, its feature tokens (None: not
        recorded), its runtime's version and the configuration it ran in, whatever its verdict."""
        return (any(p.match(case) for p in self.cases)
                and any(p.match(target) for p in self.targets)
                and self.has_features(features)
                and self.has_config(effective)
                and (any_version or self.specifiers is None or self.applies_to_version(runtime_version)))

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

    def is_within(self, record: Record) -> bool:
        if not self.within:
            return True
        return (record.declared or {}).get("verdict") == "pass"

    def has_features(self, tokens) -> bool:
        if not self.features:
            return True
        if tokens is None:
            return False   # a record from before features were recorded
        return all(negated != any(p.match(t) for p in item for t in tokens) for negated, item in self.features)

    def names_cause(self, cause) -> bool | None:
        """Whether the entry names the defect a cluster's cause is made of: one of its features
        matches one of the cause's feature tokens, or it names a configuration and the cause is the
        configuration (conformance/gate/audit.py). None where it cannot tell: the entry names no
        feature the ablation can take away (only absent ones, values such as `nan`, `violates=`)."""
        if self.config and CONFIGURATION in cause:
            return True
        nameable = [item for negated, item in self.features if not negated and _ablatable(item)]
        if not nameable:
            return None
        return any(p.match(t) for item in nameable for p in item for t in cause)

    def to_json(self) -> Expected:
        """The entry as a record's ``expected``."""
        out: Expected = {"kind": self.kind, "reason": self.reason, "link": self.link, "where": str(self.where)}
        if self.versions:
            out["versions"] = self.versions
        return out


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
    from conformance.runtimes.configuration import TargetName
    return TargetName.parse(target_id).version


def features_of(record: Record) -> list[str] | None:
    """The record's feature tokens; None for a line from before features were recorded."""
    return record.features if record.has("features") else None
