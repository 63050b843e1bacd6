"""Which releases a history covers: ``onnxruntime==1.18.0..1.32.0`` (every release in that range
that installs here), ``openvino==2024.0.0,2025.2.0`` (these), ``onnxruntime==1.20.1`` (one),
``openvino==2024.0.0..2026.4.1:6`` (six of that range).

The releases come from the package index's JSON API (``https://pypi.org/pypi/NAME/json``; another
index with ``--index-url``): final releases only, with a wheel this interpreter and platform can
install (:func:`packaging.tags.sys_tags`). A range takes the newest patch release of each minor
release line in it; ``:N`` after it (or ``--limit N`` for every range) keeps N of those, evenly
spread, the first and last included.

The suite supports the releases its ``runtimes`` extra admits (pyproject.toml, read from the
installed package's metadata): :func:`supported`. A release outside that range is left out with a
warning unless the history is told to allow it (``--allow-unsupported``).
"""

from __future__ import annotations

import json
import re
import urllib.request
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

#: the runtimes a history knows: package name → the adapter modules its targets come from (the
#: ONNX frontend and OpenVINO's own IR; the in-memory adapter needs the suite's OpenVINO vocabulary)
PACKAGES = {
    "onnxruntime": ("conformance.runtimes.onnxruntime",),
    "openvino": ("conformance.runtimes.openvino", "conformance.runtimes.openvino_ir"),
}
#: the import name of each package, for the import check
IMPORT_NAMES = {"onnxruntime": "onnxruntime", "openvino": "openvino"}
PYPI = "https://pypi.org/pypi"
#: the suite's distribution, and the extra whose requirements say which runtime releases it supports
DISTRIBUTION, EXTRA = "rnn-conformance", "runtimes"


class VersionSpecError(ValueError):
    """A release selection that cannot be read; the message says why."""


@dataclass(frozen=True)
class Selection:
    package: str
    low: str = ""       # a range's ends
    high: str = ""
    listed: tuple = ()  # or these releases
    limit: int = 0      # a range: keep at most this many

    def pick(self, available: list[str], limit: int = 0) -> list[str]:
        """The releases of ``available`` this selection names, oldest first (at most ``limit`` of a
        range, evenly spread with both ends kept)."""
        ordered = sorted(set(available), key=Version)
        if self.listed:
            return sorted(self.listed, key=Version)
        low, high = Version(self.low), Version(self.high)
        lines: dict = {}
        for v in ordered:  # the newest patch release of each minor line
            if low <= Version(v) <= high:
                lines[Version(v).release[:2]] = v
        chosen = list(lines.values())
        limit = self.limit or limit
        if limit and len(chosen) > limit:
            step = (len(chosen) - 1) / (limit - 1) if limit > 1 else 0
            chosen = [chosen[round(i * step)] for i in range(limit)] if limit > 1 else [chosen[-1]]
        return chosen


def parse(text: str) -> Selection:
    """``NAME==LOW..HIGH[:N]``, ``NAME==V1,V2`` or ``NAME==V``."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*==\s*([^:\s]+)(?::(\d+))?\s*", text)
    if not m:
        raise VersionSpecError(f"{text!r}: expected NAME==LOW..HIGH[:N], NAME==V1,V2 or NAME==V "
                               f"(e.g. onnxruntime==1.18.0..1.32.0:8)")
    name, versions = m.group(1).lower(), m.group(2)
    if name not in PACKAGES:
        raise VersionSpecError(f"{text!r}: a history knows {', '.join(PACKAGES)}, not {name!r}")
    try:
        if ".." in versions:
            low, high = versions.split("..", 1)
            if Version(low) > Version(high):
                raise VersionSpecError(f"{text!r}: the range ends before it starts")
            return Selection(name, low=low, high=high, limit=int(m.group(3) or 0))
        listed = tuple(v for v in versions.split(",") if v)
        for v in listed:
            Version(v)
        return Selection(name, listed=listed)
    except InvalidVersion as exc:
        raise VersionSpecError(f"{text!r}: {exc}") from None


def installable(releases: dict) -> list[str]:
    """The final releases of a PyPI JSON ``releases`` table with a wheel for this interpreter."""
    tags = set(sys_tags())
    found = []
    for version, files in releases.items():
        try:
            if Version(version).is_prerelease or Version(version).is_devrelease:
                continue
        except InvalidVersion:
            continue
        for f in files:
            if f.get("yanked") or not f.get("filename", "").endswith(".whl"):
                continue
            try:
                _, _, _, wheel_tags = parse_wheel_filename(f["filename"])
            except Exception:  # noqa: BLE001, S112 - a file name the wheel rules do not parse
                continue
            if wheel_tags & tags:
                found.append(version)
                break
    return sorted(found, key=Version)


def available(package: str, index: str = PYPI, timeout: float = 30.0) -> list[str]:
    """The releases of ``package`` installable here, from the index's JSON API."""
    with urllib.request.urlopen(f"{index.rstrip('/')}/{package}/json", timeout=timeout) as resp:  # noqa: S310
        return installable(json.load(resp)["releases"])


def _suite_requirements() -> list[str]:
    """The suite's requirements (its installed metadata, else pyproject.toml beside the package)."""
    from importlib import metadata
    try:
        return list(metadata.requires(DISTRIBUTION) or [])
    except metadata.PackageNotFoundError:
        pass
    import tomllib
    from pathlib import Path
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text())["project"]
    except (OSError, KeyError, ValueError):
        return []
    return [f'{r}; extra == "{name}"' for name, reqs in project.get("optional-dependencies", {}).items() for r in reqs]


def supported(package: str) -> SpecifierSet | None:
    """The releases of ``package`` the suite supports: its specifier in the ``runtimes`` extra
    (``onnxruntime>=1.18``); None where the extra does not name it (a test double)."""
    for text in _suite_requirements():
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if (canonicalize_name(req.name) == canonicalize_name(package) and req.marker is not None
                and req.marker.evaluate({"extra": EXTRA})):
            return req.specifier
    return None


def outside(package: str, releases: list[str]) -> tuple[list[str], str]:
    """(the ``releases`` outside the supported range, that range written as a requirement)."""
    spec = supported(package)
    if spec is None:
        return [], ""
    return [v for v in releases if not spec.contains(v, prereleases=True)], f"{package}{spec}"
