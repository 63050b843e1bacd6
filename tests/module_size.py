"""The module-size rule (pyproject.toml [tool.conformance.module-size]; docs/architecture.md, "Rules that keep it
so"), in one place: `nox -s lint` runs this file, and tests/unit/test_layers.py calls :func:`problems`. The
standard library only, so the lint environment needs nothing more.

    python tests/module_size.py      # exit status 1, with the problems, where the rule does not hold
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("conformance", "oracles")


def rule(root: Path = ROOT) -> dict:
    """The rule: ``max-lines``, and ``one-concept``, the modules over it with the one-line reason each is one
    concept all the same."""
    return tomllib.loads((root / "pyproject.toml").read_text())["tool"]["conformance"]["module-size"]


def sizes(root: Path = ROOT) -> dict[str, int]:
    """{module path: lines} of every module of conformance/ and oracles/."""
    return {str(p.relative_to(root)): len(p.read_text().splitlines())
            for base in PACKAGES for p in sorted((root / base).rglob("*.py"))}


def problems(root: Path = ROOT) -> list[str]:
    """What breaks the rule, in words: a module over it that one-concept does not list, an entry of one-concept
    under it now (or gone), an entry without a one-line reason."""
    found, limit = sizes(root), rule(root)
    out = []
    over = {m: n for m, n in found.items() if n > limit["max-lines"] and m not in limit["one-concept"]}
    if over:
        out.append(f"modules over {limit['max-lines']} lines: {over} (split them by concept, or give the one-line "
                   f"reason they are one concept in pyproject.toml [tool.conformance.module-size] one-concept)")
    stale = sorted(m for m in limit["one-concept"] if found.get(m, 0) <= limit["max-lines"])
    if stale:
        out.append(f"under the rule now (or gone), drop them from one-concept: {stale}")
    unexplained = sorted(m for m, why in limit["one-concept"].items() if not str(why).strip() or "\n" in str(why))
    if unexplained:
        out.append(f"one-concept entries without a one-line reason: {unexplained}")
    return out


if __name__ == "__main__":
    said = problems(Path.cwd())
    for line in said:
        print(line)
    sys.exit(1 if said else 0)
