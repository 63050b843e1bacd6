"""Expectations and bug reports: the entry that covers a report's divergence (its upstream issue, for
ISSUE.md), and the entry a cluster would need (``conformance bugreport --expectation``).

A drafted entry names the cluster by the *tokens* its cases carry for each feature of the cause
(``peepholes`` → ``P``; ``activations`` → the ``act=`` tokens seen, as alternatives), the targets
and runtime versions it showed on, the configuration where the cause is the precision a
configuration computes in, the execution forms every pair of it ran in, and the cause sentence as
its reason. ``upstream`` is written as not
found today, to be replaced by the issue's URL once it is filed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.results import Record

import datetime
from pathlib import Path

import yaml

from conformance.case.features import FEATURES
from conformance.runtimes.configuration import TargetName

KIND = {"fail": "known-bug", "rejected": "unsupported", "accepted-invalid": "known-bug", "crash": "known-bug",
        "timeout": "known-bug"}


def entry_at(where: str) -> dict:
    """The raw expectations entry at ``FILE:LINE`` (an empty mapping where it cannot be read)."""
    path, _, line = str(where).rpartition(":")
    try:
        text = Path(path).read_text(encoding="utf-8")
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError):
        return {}
    if root is None or not isinstance(data, dict) or not line.isdigit():
        return {}
    for key, value in root.value:
        if key.value == "entries" and isinstance(value, yaml.SequenceNode):
            for index, item in enumerate(value.value):
                if item.start_mark.line + 1 <= int(line) <= item.end_mark.line + 1:
                    return dict(data["entries"][index])
    return {}


def known(records: list[Record]) -> dict:
    """The expectation that covers these records (the first that names one), with its upstream text."""
    for record in records:
        entry = record.expected or {}
        if entry.get("where"):
            raw = entry_at(entry["where"])
            return dict(entry, upstream=str(raw.get("upstream", "")).strip(), link=entry.get("link", ""))
    return {}


def _carried(keys: list[str], records: list[Record]) -> list[str]:
    """The tokens among ``keys`` (a key ending in ``=`` stands for its prefix) the records carry."""
    return sorted({t for r in records for t in r.features or []
                   if any(t == k or (k.endswith("=") and t.startswith(k)) for k in keys)})


def _tokens_of(feature_name: str, records: list[Record]) -> list[str]:
    """The tokens the records carry for one feature of the table. Where some record carries none of
    them, the tokens of the same spec clause are taken too, so that the entry covers every record: an
    execution form's cause "sequence_lens is given (full)" means sequence_lens is given at all (the
    form's other inputs draw partial lengths from it), and its cases with partial lengths carry
    ``sequence_lens=partial``."""
    feature = next((f for f in FEATURES if f.name == feature_name), None)
    if feature is None:
        return []
    keys = list(feature.tokens)
    found = _carried(keys, records)
    if found and any(not set(r.features or []) & set(found) for r in records):
        clauses = {clause for clause in feature.tokens.values() if clause}
        keys += [k for f in FEATURES if f is not feature for k, clause in f.tokens.items() if clause in clauses]
        found = _carried(keys, records)
    return found or [k + "*" if k.endswith("=") else k for k in keys[:1]]


def draft(cluster: dict, records: list[Record]) -> dict:
    """The expectations entry that would cover ``cluster`` (its ``records``)."""
    entry: dict = {}
    features = []
    for name in cluster.get("features") or []:
        if name in ("configuration", "form"):   # the ablation's markers: `config:` below says them
            continue
        tokens = _tokens_of(name, records)
        features.append(tokens[0] if len(tokens) == 1 else tokens)
    if features:
        entry["features"] = features
    else:   # the plain path: the case families it showed on (an older clusters.json: "families")
        families = cluster.get("case_families") or cluster.get("families") or []
        entry["cases"] = sorted({f"{family}*" for family in families})
    specs = sorted({TargetName.parse(t).spec for t in cluster.get("targets") or [] if "@" in t})
    entry["targets"] = [f"{cluster['runtime']}-*@{s}" for s in specs] if len(specs) > 1 else \
        f"{cluster['runtime']}-*@{specs[0]}" if specs else f"{cluster['runtime']}-*"
    precisions = sorted({str((r.declared or {}).get("precision") or (r.effective or {}).get("precision"))
                         for r in records if r.declared})
    if "configuration" in (cluster.get("features") or []) and precisions:
        entry["config"] = {"precision": precisions if len(precisions) > 1 else precisions[0]}
    forms = _forms_of(records)
    if forms:   # every pair ran in these execution forms: the entry covers them, not the plain form
        entry["config"] = dict(entry.get("config") or {}, **forms)
    entry["verdict"] = cluster["verdict"]
    versions = sorted({str(r.runtime_version) for r in records if r.runtime_version})
    if versions and all(_is_version(v) for v in versions):
        entry["versions"] = ",".join(f"=={v}" for v in versions) if len(versions) == 1 else \
            f">={versions[0]},<={versions[-1]}"
    entry["kind"] = KIND.get(cluster["verdict"], "known-bug")
    entry["reason"] = cluster["cause"]
    entry["upstream"] = f"none found (searched {datetime.date.today().isoformat()})"
    return entry


def _forms_of(records: list[Record]) -> dict:
    """The execution forms (conformance/runtimes/forms.py) every record ran in: {key: value}."""
    from conformance.runtimes.forms import asked
    shared: dict | None = None
    for record in records:
        forms = asked(str(record.config or "default"))
        shared = forms if shared is None else {k: v for k, v in shared.items() if forms.get(k) == v}
    return shared or {}


def _is_version(text: str) -> bool:
    from packaging.version import InvalidVersion, Version
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def render(entry: dict) -> str:
    """The entry as it is pasted under ``entries:``, with a reminder where the upstream link goes."""
    text = yaml.safe_dump([entry], sort_keys=False, allow_unicode=True, width=110, default_flow_style=None)
    return text.replace("\n  upstream:", "\n  # the issue's URL once it is filed:\n  upstream:", 1)
