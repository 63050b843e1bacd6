"""`conformance export`: the corpus (or a selection) as portable test vectors, values from the oracle.

``--format onnx-node-test`` writes ONNX node tests (conformance/export/onnx_node.py), one folder per
case and ONNX version; ``--format wpt-webnn`` writes WebNN conformance tests in the shape of
web-platform-tests' (conformance/export/wpt.py), one JSON file per WebNN version and operator. A
case a format cannot carry is listed in ``OUT/export.json`` with the reason: an invalid case (no
outputs to compare), a spec version that cannot say it, elements the spec leaves unspecified, or a
spec with several documented readings there (both formats compare one expected value per element).
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import click

from conformance.cli.options import DEFAULT_CASES, EXIT_BAD_INPUT, EXIT_OK, case_limits, limit_options, tier_option

FORMATS = {"onnx-node-test": "onnx", "wpt-webnn": "webnn"}


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()[:120]


def why_not(case, vectors) -> str:
    """Why the vectors of ``case`` cannot be one expected value per element ("" when they can)."""
    if len(vectors.readings) > 1:
        return (f"the spec has {len(vectors.readings)} documented readings here ({', '.join(vectors.readings)}); "
                f"a test compares with one expected value")
    count = sum(int(o.unspecified.sum()) for o in vectors.outputs.values())
    if count:
        reasons = "; ".join(dict.fromkeys(vectors.unspecified.values())) or "spec silent"
        return f"{count} output elements are unspecified by the spec ({reasons}); a test compares every element"
    return ""


def export_cases(cases, fmt: str, specs: list, out: Path, log=print) -> dict:
    """Write the vectors of ``cases`` for ``specs`` in ``fmt``; the manifest (also OUT/export.json)."""
    from conformance.export import onnx_node, wpt
    from conformance.export.vectors import vectors_of
    from conformance.specs import SPECS, NotExpressible, translate
    out.mkdir(parents=True, exist_ok=True)
    written, skipped = [], []
    tests: dict = defaultdict(list)
    for case in cases:
        if not case.valid:
            skipped.append({"case": case.id, "reason": "an invalid case has no outputs to compare (a runtime should "
                                                       "refuse it)"})
            continue
        by_profile: dict = {}
        for name in specs:
            spec = SPECS[name]
            program = translate(spec, case)
            if isinstance(program, NotExpressible):
                skipped.append({"case": case.id, "spec": name, "reason": program.reason})
                continue
            if spec.semantics not in by_profile:
                vec = vectors_of(case, spec.semantics)
                by_profile[spec.semantics] = (vec, why_not(case, vec))
            vec, reason = by_profile[spec.semantics]
            if reason:
                skipped.append({"case": case.id, "spec": name, "reason": reason})
                continue
            if fmt == "onnx-node-test":
                folder = out / f"test_{slug(case.id)}_{slug(name)}"
                onnx_node.write_node_test(folder, program.model, program.feeds, program, vec, case.dtype)
                written.append({"case": case.id, "spec": name, "path": folder.name})
            else:
                document = json.loads(program.model)
                op = next(o["op"] for o in document["operations"] if o["op"] not in ("transpose",))
                tests[(name, op)].append(wpt.wpt_test(document, vec, program, case.dtype))
    for (name, op), found in sorted(tests.items()):
        path = out / name / f"{op}.json"
        wpt.write(found, path)
        written.append({"spec": name, "op": op, "path": str(path.relative_to(out)), "tests": len(found)})
    manifest = {"format": fmt, "written": written, "skipped": skipped}
    (out / "export.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


@click.command("export")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(tuple(FORMATS)), required=True,
              help="onnx-node-test: ONNX node-test folders (model.onnx, test_data_set_0/*.pb, data.json, "
                   "tolerance.json); wpt-webnn: WPT WebNN conformance-test JSON with ULP budgets.")
@click.option("-k", "expr", default="", help="Select cases by id: substrings with and/or/not, like pytest -k.")
@click.option("--spec", "spec_filter", multiple=True,
              help="Only these spec versions (prefix match, repeatable); default: every version of the format's "
                   "family.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder (default: reports/export/<format>).")
@tier_option
@limit_options
def export_command(paths, fmt, expr, spec_filter, out_dir, tier):
    """Write the cases of PATHS (default: ./cases) as portable test vectors: the oracle's exact
    outputs with the suite's derived tolerance, per element."""
    from conformance.case.load import load_paths
    from conformance.run.select import SelectError, compile_expression
    from conformance.specs import SPECS
    try:
        select = compile_expression(expr)
    except SelectError as exc:
        raise click.UsageError(str(exc)) from exc
    family = FORMATS[fmt]
    specs = [n for n, s in SPECS.items() if s.family == family
             and (not spec_filter or any(n.startswith(p) for p in spec_filter))]
    if not specs:
        raise click.UsageError(f"no {family} spec version matches {', '.join(spec_filter)}")
    cases, errors = load_paths(paths or DEFAULT_CASES, limits=case_limits(), tier=tier)
    cases = [c for c in cases if select(c.id)]
    out = out_dir or Path("reports/export") / fmt
    manifest = export_cases(cases, fmt, specs, out)
    for e in errors:
        click.echo(f"error: {e}", err=True)
    click.echo(f"{len(manifest['written'])} written, {len(manifest['skipped'])} skipped (reasons in "
               f"{out / 'export.json'}) in {out}")
    sys.exit(EXIT_BAD_INPUT if errors else EXIT_OK)
