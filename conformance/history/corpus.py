"""The cases a history runs when none are named: one file per feature class of the corpus, then
the files that bring in the (op, feature) classes still missing (docs/history.md)."""

from __future__ import annotations

from pathlib import Path

#: the ops in the order a feature class's file is taken from: the LSTM has the most features
OPS_BY_REACH = ("lstm", "gru", "rnn")


def representative(root: Path = Path("cases"), limits=None) -> list[Path]:
    """The default selection when no case path is given: one file per feature class (each file name
    under ``root/<op>/``, the LSTM's, else the GRU's, else the RNN's, and ``root/invalid/lstm/``),
    then the files that bring in every (op, feature) class of the corpus still missing (the features
    of conformance/case/features.py, by which the expectations name divergences): greedy set cover,
    the file adding the most classes first, the smaller on a tie, then by path. The production tier
    is left out."""
    from conformance.case import load_paths
    from conformance.case.features import features
    root = Path(root)
    classes: dict[Path, set] = {}
    sizes: dict[Path, int] = {}
    for path in sorted(p for p in root.rglob("*.yaml") if "production" not in p.relative_to(root).parts):
        cases, _ = load_paths([path], **({"limits": limits} if limits else {}))
        classes[path] = {(c.op, token) for c in cases for token in features(c)}
        sizes[path] = len(cases)
    by_stem: dict[str, Path] = {}
    for op in OPS_BY_REACH:
        for path in sorted((root / op).glob("*.yaml")):
            by_stem.setdefault(path.stem, path)
    chosen = sorted(set(by_stem.values()) | set((root / "invalid" / "lstm").glob("*.yaml")))
    left = set().union(*classes.values()) - set().union(set(), *(classes[p] for p in chosen if p in classes))
    while left:
        best = min(classes, key=lambda p: (-len(classes[p] & left), sizes[p], str(p)))
        if not classes[best] & left:
            break
        chosen.append(best)
        left -= classes[best]
    return sorted(chosen)
