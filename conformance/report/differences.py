"""The report's difference views: the same case where only the spec version, the program format
(OpenVINO reading its IR or ONNX) or the spec family differs, and the verdicts part."""

from __future__ import annotations

from collections import Counter, defaultdict

from conformance.compare.verdicts import severity
from conformance.report.view import natural_key, runtime_family, setup_of_record, spec_family, spec_key
from conformance.results import Record


def _diff_kind(verdicts) -> str:
    """'' when all agree; 'expressibility' when the only difference is a spec unable to say the
    case; 'verdict' otherwise."""
    vs = set(verdicts)
    if len(vs) <= 1:
        return ""
    return "verdict" if len(vs - {"not-expressible"}) > 1 else "expressibility"


def version_differences(records: list[Record]) -> dict:
    """The same case on the same runtime, device and configuration under different ONNX versions."""
    groups: defaultdict[tuple[str, str], dict[str, Record]] = defaultdict(dict)
    for r in records:
        if spec_family(r) == "onnx":
            groups[(r.case, setup_of_record(r))][r.spec] = r
    specs = sorted({s for g in groups.values() for s in g}, key=spec_key)
    rows: dict[str, list[dict]] = {"verdict": [], "expressibility": []}
    for (case, where), by_spec in groups.items():
        kind = _diff_kind(r.verdict for r in by_spec.values())
        if kind:
            rows[kind].append({"case": case, "where": where, "by_spec": by_spec, "op": _op(by_spec)})
    for found in rows.values():
        found.sort(key=lambda row: (natural_key(row["case"]), row["where"]))
    return {"specs": specs, **rows}


def ir_vs_frontend(records: list[Record]) -> dict:
    """OpenVINO reading its own IR (specs openvino-*) against OpenVINO reading ONNX (specs onnx-*),
    for the same case, version, device and configuration."""
    groups: defaultdict[tuple[str, str], dict[str, dict[str, Record]]] = defaultdict(lambda: {"ir": {}, "onnx": {}})
    for r in records:
        if runtime_family(r) != "openvino":
            continue
        spec = str(r.spec)
        path = {"openvino": "ir", "onnx": "onnx"}.get(spec_family(r))
        if path:
            key = (r.case, setup_of_record(r))
            groups[key][path][spec] = r
    ir_specs = sorted({s for g in groups.values() for s in g["ir"]}, key=spec_key)
    fe_specs = sorted({s for g in groups.values() for s in g["onnx"]}, key=spec_key)
    rows: dict[str, list[dict]] = {"verdict": [], "expressibility": []}
    for (case, where), g in groups.items():
        if not g["ir"] or not g["onnx"]:
            continue
        ir_v = {r.verdict for r in g["ir"].values()}
        fe_v = {r.verdict for r in g["onnx"].values()}
        if ir_v == fe_v:
            continue
        ir_s, fe_s = ir_v - {"not-expressible"}, fe_v - {"not-expressible"}
        kind = "verdict" if ir_s and fe_s and ir_s != fe_s else "expressibility"
        rows[kind].append({"case": case, "where": where, "ir": g["ir"], "onnx": g["onnx"],
                           "op": _op({**g["ir"], **g["onnx"]})})
    for found in rows.values():
        found.sort(key=lambda row: (natural_key(row["case"]), row["where"]))
    return {"ir_specs": ir_specs, "onnx_specs": fe_specs, "paired": sum(1 for g in groups.values()
                                                                          if g["ir"] and g["onnx"]), **rows}


def spec_family_differences(records: list[Record]) -> dict:
    """The same case on the same runtime family judged under different spec families (each under
    its own semantics profile): where the verdicts part, and which reading each one matched."""
    groups: defaultdict[tuple[str, str], defaultdict[str, list[Record]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        groups[(r.case, runtime_family(r))][spec_family(r)].append(r)
    families = sorted({f for g in groups.values() for f in g}, key=lambda f: spec_key(f, f))
    rows: dict[str, list[dict]] = {"verdict": [], "expressibility": []}
    for (case, rfam), by_fam in groups.items():
        if len(by_fam) < 2:
            continue
        sets = {f: frozenset(r.verdict for r in recs) for f, recs in by_fam.items()}
        if len(set(sets.values())) <= 1:
            continue
        stripped = {v - {"not-expressible"} for v in sets.values()}
        kind = "verdict" if len({s for s in stripped if s}) > 1 else "expressibility"
        cells = {}
        for f, recs in by_fam.items():
            cells[f] = {
                "verdicts": sorted(Counter(r.verdict for r in recs).items(), key=lambda kv: severity(kv[0])),
                "readings": sorted({str(r.reading) for r in recs if r.reading}),
                "semantics": sorted({str(r.semantics or (r.oracle or {}).get("profile") or "")
                                     for r in recs} - {""}),
                "worst": min(recs, key=lambda r: severity(r.verdict)),
            }
        rows[kind].append({"case": case, "runtime": rfam, "cells": cells,
                           "records": [r for recs in by_fam.values() for r in recs],
                           "op": _op({i: r for i, recs in enumerate(by_fam.values()) for r in recs})})
    for found in rows.values():
        found.sort(key=lambda row: (natural_key(row["case"]), row["runtime"]))
    return {"families": families, **rows}


def _op(by_key: dict) -> str:
    for r in by_key.values():
        return str(r.op)
    return ""
