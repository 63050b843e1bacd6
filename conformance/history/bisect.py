"""``--bisect``: the releases between two releases run in which something changes (docs/history.md,
"Narrowing a change: `--bisect`")."""

from __future__ import annotations

from conformance.history.merge import model_of


def gaps(envs: list, expectations, every: dict) -> list[tuple[str, str]]:
    """The middle release of each gap in which something changes between two releases run on a
    line, with releases not run between them: a class affects one and not the other (an unstable
    release is neither), or a spec version's op is accepted by one and not the other. The same
    runs give the same releases."""
    model = model_of(envs, expectations)
    return [] if model is None else gaps_in(model, {(e["package"], e["version"]) for e in envs}, every)


def gaps_in(model: dict, tried: set, every: dict) -> list[tuple[str, str]]:
    """:func:`gaps` of a history model, ``tried`` the (package, version) already run."""
    from packaging.version import Version
    wanted: set[tuple[str, str]] = set()

    def between(runtime: str, steps: list[tuple[str, bool]]) -> None:
        for (low, was), (high, now) in zip(steps, steps[1:]):
            if was == now:
                continue
            inside = [v for v in every.get(runtime, [])
                      if Version(low) < Version(v) < Version(high) and (runtime, v) not in tried]
            if inside:
                wanted.add((runtime, inside[len(inside) // 2]))

    for cls in model["classes"]:
        for line in cls["lines"]:
            order = model["releases"].get(line["runtime"], [])
            between(line["runtime"], [(v, v in line["affected"]) for v, st in zip(order, line["states"])
                                      if st in ("shows", "otherwise", "fixed", "clean")])
    for runtime, rows in model.get("support", {}).items():
        order = model["releases"].get(runtime, [])
        for row in rows:
            between(runtime, [(v, st == "accepts") for v, st in zip(order, row["states"]) if st is not None])
    return sorted(wanted, key=lambda pv: (pv[0], Version(pv[1])))
