"""What a runtime put where the spec is silent: the sub-verdict of a pair's unspecified elements.

The spec verdict never judges an element the spec leaves undefined (Y past a sequence's length,
the last state of an empty sequence, the outputs of an activation without its parameters, a NaN
that depends on rounding). But silent is not anything-goes. The oracle lists, for every such
element, the readings a reasonable implementation could choose (``Expected.plausible``:
oracles/silent.py, each with its source), and each element is classified:

- **plausible**: it matches one of the readings, and the record names which (``zeros``,
  ``initial-state``, ...);
- **implausible**: it is finite but matches none;
- **garbage**: it is NaN or an infinity where no reading is, or it differs between two runs of the
  same pair: memory the runtime did not compute.

By default garbage fails the pair, with a message in the suite's shape, and implausible is only
reported; an expectations file changes that for its targets (``unspecified: {implausible: fail}``).
"""

from __future__ import annotations

import numpy as np

from conformance.compare.metrics import ulp_of

#: the sub-verdicts, best first
SILENT_VERDICTS = ("plausible", "implausible", "garbage")
#: what each sub-verdict does to the pair's verdict unless an expectations file says otherwise
DEFAULT_POLICY = {"garbage": "fail", "implausible": "report"}
POLICY_ACTIONS = ("fail", "report")

#: how a reading's value is written in a message
SHOWN = {"zeros": "0", "nan": "NaN", "inf": "±inf"}


def _matching(arr: np.ndarray, plausible, dtype: str) -> np.ndarray:
    """Where ``arr`` holds what ``plausible`` says (within its bound), over its mask."""
    values = arr.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        if plausible.kind == "nan":
            hit = np.isnan(values)
        elif plausible.kind == "inf":
            hit = np.isinf(values)
        else:
            expected = plausible.hi
            bound = np.where(np.isfinite(plausible.bound), plausible.bound, np.inf)
            allowed = np.maximum(2.0 * bound, 2.0 * ulp_of(np.nan_to_num(expected), dtype))
            hit = (np.abs(values - expected) <= allowed) | (values == expected)
    return plausible.mask & hit


def classify(case, program_spec: str, got: dict, reading, repeat: dict | None = None) -> dict | None:
    """The sub-verdict of ``got``'s unspecified elements under ``reading`` (None where the reading
    leaves nothing unspecified). ``repeat``: the outputs of a second run of the same pair, where
    one was made; an unspecified element that differs between the two is garbage."""
    points: dict = {}
    for name, arr in got.items():
        exp = reading.outputs.get(name)
        if exp is None or not exp.unspecified.any() or arr.shape != exp.unspecified.shape:
            continue
        # the numpy stubs reject None as a value of np.where; numpy makes an object array
        codes = (exp.codes if exp.codes is not None
                 else np.where(exp.unspecified, "unspecified", None))  # type: ignore[call-overload]
        again = None if repeat is None else repeat.get(name)
        if again is not None and again.shape != arr.shape:
            again = None
        values = arr.astype(np.float64)
        for point in sorted({c for c in codes[exp.unspecified] if c is not None} or {"unspecified"}):
            here = exp.unspecified & (codes == point) if point != "unspecified" else exp.unspecified
            entry = points.setdefault(point, {"elements": 0, "counts": {}, "implausible": 0, "garbage": 0,
                                              "first": None, "readings": {}})
            entry["elements"] += int(here.sum())
            candidates = [p for p in exp.plausible if p.point == point]
            matched = np.zeros(here.shape, dtype=bool)
            for p in candidates:
                hit = here & _matching(arr, p, case.dtype)
                entry["counts"][p.name] = entry["counts"].get(p.name, 0) + int(hit.sum())
                matched |= hit
                covered = here & p.mask
                if covered.any():
                    entry["readings"].setdefault(p.name, _shown(p, tuple(np.argwhere(covered)[0])))
            changed = np.zeros(here.shape, dtype=bool)
            if again is not None:
                other = again.astype(np.float64)
                changed = here & ~((values == other) | (np.isnan(values) & np.isnan(other)))
            garbage = here & (changed | (~matched & ~np.isfinite(values)))
            implausible = here & ~garbage & ~matched
            entry["garbage"] += int(garbage.sum())
            entry["implausible"] += int(implausible.sum())
            for kind, where in (("garbage", garbage), ("implausible", implausible)):
                if where.any() and (entry["first"] is None
                                    or (kind == "garbage" and entry["first"]["kind"] != "garbage")):
                    index = tuple(np.argwhere(where)[0])
                    entry["first"] = {"kind": kind, "output": name, "index": [int(i) for i in index],
                                      "value": float(values[index]), "changed": bool(changed[index]),
                                      "again": float(again[index]) if again is not None and changed[index] else None}
    if not points:
        return None
    summary = {}
    worst = "plausible"
    for point, entry in points.items():
        n = entry["elements"]
        common = [name for name, count in entry["counts"].items() if count == n]
        if entry["garbage"]:
            chosen = "garbage"
        elif entry["implausible"]:
            chosen = "implausible"
        elif common:
            chosen = common[0]
        else:
            chosen = "mixed: " + "+".join(sorted(k for k, v in entry["counts"].items() if v))
        verdict = chosen if chosen in ("garbage", "implausible") else "plausible"
        if SILENT_VERDICTS.index(verdict) > SILENT_VERDICTS.index(worst):
            worst = verdict
        summary[point] = {"reading": chosen, "verdict": verdict, "elements": n, "counts": entry["counts"],
                          "implausible": entry["implausible"], "garbage": entry["garbage"],
                          "first": entry["first"], "plausible": list(entry["readings"])}
        summary[point]["message"] = _message(case, program_spec, point, entry) if entry["first"] else ""
    message = "; ".join(s["message"] for s in summary.values() if s["verdict"] == worst and s["message"])
    return {"verdict": worst, "points": summary, "message": message, "repeated": repeat is not None}


def _message(case, spec: str, point: str, entry: dict) -> str:
    """'Y_h[0,1,2] is unspecified by ONNX RNN (onnx-14) but holds inf (plausible: 0 or initial-state
    0.25)'."""
    first = entry["first"]
    where = f"{first['output']}[{','.join(map(str, first['index']))}]"
    readings = " or ".join(f"{name} {shown}".strip() if name not in SHOWN else SHOWN[name]
                           for name, shown in entry["readings"].items()) or "none listed"
    holds = (f"holds {first['value']:.9g} in one run and {first['again']:.9g} in the next"
             if first["changed"] else f"holds {first['value']:.9g}")
    more = entry[first["kind"]] - 1
    return (f"{where} is unspecified by {case.op} ({spec}: {point}) but {holds} (plausible: {readings})"
            + (f", and {more} more such element{'s' if more != 1 else ''}" if more > 0 else ""))


def _shown(plausible, index) -> str:
    if plausible.name in SHOWN:
        return ""
    return f"{float(plausible.hi[index]):.6g}"


def apply_policy(verdict: str, message: str, silent: dict | None, policy: dict) -> tuple[str, str]:
    """The pair's verdict and message once its unspecified elements are judged under ``policy``
    (sub-verdict -> fail | report): a pair that passes its specified elements fails when a
    sub-verdict the policy fails is found, its message first."""
    if not silent or verdict not in ("pass", "unspecified"):
        return verdict, message
    if policy.get(silent["verdict"], DEFAULT_POLICY.get(silent["verdict"], "report")) != "fail":
        return verdict, message
    return "fail", silent["message"] + "; " + message
