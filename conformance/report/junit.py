"""JUnit XML for CI systems: one testsuite per target, one testcase per case.

The test name is the case id, the classname the case's first spec clause (or its family when it
names none), so a CI page groups failures by clause. By verdict: fail, accepted-invalid and
rejected are <failure>; crash, timeout and error are <error>; not-expressible and unspecified are
<skipped> with the reason; a known divergence (gate "expected") is <skipped message="expected: ...">.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from conformance.case.model import case_family
from conformance.compare.verdicts import TABLE
from conformance.files import write_atomic
from conformance.report.view import clauses_of, natural_key, num
from conformance.results import Record

#: how each verdict is a JUnit testcase (conformance/compare/verdicts.py)
FAILURE = tuple(row.verdict.value for row in TABLE if row.junit == "failure")
ERROR = tuple(row.verdict.value for row in TABLE if row.junit == "error")
SKIPPED = tuple(row.verdict.value for row in TABLE if row.junit == "skipped")

# XML 1.0 cannot hold most control characters, even escaped; a runtime's error text may have them
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value) -> str:
    return _ILLEGAL_XML.sub("\ufffd", str(value if value is not None else ""))


def _classname(rec: Record) -> str:
    clauses = clauses_of(rec)
    return _text(clauses[0] if clauses else case_family(rec.case))


def _body(rec: Record) -> str:
    parts = [str(rec.message or "")]
    if rec.repro:
        parts.append(f"repro: {rec.repro}")
    return _text("\n".join(parts))


def testcase(rec: Record) -> ET.Element:
    elapsed = num(rec.elapsed_s)
    case = ET.Element("testcase", {"name": _text(rec.case), "classname": _classname(rec),
                                   "time": f"{float(elapsed or 0.0):.6f}"})
    verdict = rec.verdict
    message = _text(rec.message or verdict)
    if rec.gate == "expected":
        reason = (rec.expected or {}).get("reason") or "a known divergence"
        ET.SubElement(case, "skipped", {"message": _text(f"expected: {reason}"), "type": _text(verdict)})
    elif verdict in FAILURE:
        el = ET.SubElement(case, "failure", {"message": message, "type": _text(verdict)})
        el.text = _body(rec)
    elif verdict in ERROR:
        el = ET.SubElement(case, "error", {"message": message, "type": _text(verdict)})
        el.text = _body(rec)
    elif verdict in SKIPPED:
        ET.SubElement(case, "skipped", {"message": message, "type": _text(verdict)})
    elif verdict != "pass":  # a verdict this writer does not know is not silently a pass
        el = ET.SubElement(case, "error", {"message": message, "type": _text(verdict)})
        el.text = _body(rec)
    if rec.gate == "new":
        props = ET.SubElement(case, "properties")
        ET.SubElement(props, "property", {"name": "gate", "value": "new"})
    return case


def to_xml(records: list[Record]) -> ET.ElementTree:
    by_target: defaultdict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_target[r.target].append(r)
    root = ET.Element("testsuites", {"name": "rnn-conformance"})
    totals: defaultdict[str, float] = defaultdict(int)  # counts, and the float "time"
    for target in sorted(by_target, key=natural_key):
        recs = sorted(by_target[target], key=lambda r: natural_key(r.case))
        cases = [testcase(r) for r in recs]
        counts = {"tests": len(cases),
                  "failures": sum(1 for c in cases if c.find("failure") is not None),
                  "errors": sum(1 for c in cases if c.find("error") is not None),
                  "skipped": sum(1 for c in cases if c.find("skipped") is not None)}
        time = sum(float(num(r.elapsed_s) or 0.0) for r in recs)
        suite = ET.SubElement(root, "testsuite", {"name": _text(target), **{k: str(v) for k, v in counts.items()},
                                                  "time": f"{time:.6f}"})
        first = recs[0]
        props = ET.SubElement(suite, "properties")
        for key in ("runtime", "runtime_version", "device", "config", "spec"):
            if first.get(key) is not None:   # a summary line leaves out a default configuration
                ET.SubElement(props, "property", {"name": key, "value": _text(first.get(key))})
        suite.extend(cases)
        for k, v in counts.items():
            totals[k] += v
        totals["time"] += time
    for k in ("tests", "failures", "errors", "skipped"):
        root.set(k, str(totals[k]))
    root.set("time", f"{totals['time']:.6f}")
    return ET.ElementTree(root)


def write_junit(records: list[Record], path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree = to_xml(records)
    ET.indent(tree, space="  ")
    buffer = io.BytesIO()
    tree.write(buffer, encoding="utf-8", xml_declaration=True)
    return write_atomic(path, buffer.getvalue())
