"""The files of a bug report (conformance/bugreport/bundle.py lists them): written before the
verification (everything repro.py reads, and repro.py itself), and after it (ISSUE.md, with
repro.py's output, and bundle.json)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.results import Record

import ast
import json
import shutil
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import numpy as np

from conformance.bugreport import issue, script
from conformance.bugreport.expectation import known
from conformance.bugreport.forms import FormNotReproduced, replay_of
from conformance.export.vectors import program_layout, vectors_of


class NotReportable(Exception):
    """The pair's runtime has no standalone API to reproduce it with; the message says why."""


def _pin(distribution: str) -> str:
    version = metadata.version(distribution).split("+")[0]
    return f"{distribution}=={version}"


def _plugin(record: Record, plugin: dict | None) -> dict | None:
    """How repro.py reaches a runtime plugin: through its installed distribution, or its module file
    copied beside it (a module that imports nothing of its own package), with the distributions that
    module imports."""
    if not plugin:
        return None
    module, _, attr = plugin["path"].partition(":")
    top = module.split(".")[0]
    owners = metadata.packages_distributions()
    source = Path(plugin.get("file") or "")
    context = {"ref": plugin["path"], "module": module, "attr": attr, "kwargs": ", ".join(
        f"{k}={v!r}" for k, v in plugin.get("kwargs", ())), "packages": [], "vendored": ""}
    if top in owners:
        context["packages"] = owners[top][:1]
        context["vendored"] = f"installed from the {owners[top][0]} distribution"
        return context
    imported = _imports(source) if source.is_file() else {top}
    own = top in imported or any(m.startswith(".") for m in imported)
    if "." in module and own or not source.is_file():
        raise NotReportable(f"the runtime plugin {plugin['path']} is neither an installed distribution nor a "
                            f"module file that could be copied beside repro.py (one that imports nothing of its "
                            f"own package)")
    context.update(copy=source, module=module.rsplit(".", 1)[-1],
                   vendored=f"its module {source.name}, copied beside this script")
    context["packages"] = sorted({owners[m][0] for m in imported if m in owners and m not in sys.stdlib_module_names})
    return context


def _imports(source: Path) -> set:
    """The top-level modules a module file imports (relative imports as its own package's)."""
    found = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add(node.module.split(".")[0] if node.module and not node.level else "." * node.level)
    return found


def write(bundle, folder: Path, plugin: dict | None = None) -> None:
    """Everything repro.py needs, and repro.py: into ``folder`` (created)."""
    ran, subject = bundle.ran, bundle.subject
    record, case, program = ran.record, ran.case, ran.program
    plug = _plugin(record, plugin)
    runner = script.runner_of(record, plugin=plug is not None)
    if runner is None:
        raise NotReportable(f"{record.runtime} runs {script.program_format(record)} programs, and no runner of "
                            f"conformance/bugreport/script.py RUNNERS runs them standalone")
    if runner.unreproducible:
        raise NotReportable(f"{record.target}: no standalone reproduction: {runner.unreproducible}")
    try:
        bundle.replay = replay = replay_of(ran)
    except FormNotReproduced as exc:
        raise NotReportable(f"{record.target}: {exc}") from None
    # the call whose outputs repro.py compares: the case's own, or, in a form, the call that failed
    judged, judged_case = (replay.program, replay.case) if replay else (program, case)
    folder.mkdir(parents=True)
    names = _program_files(ran, folder, program)
    bundle.program = names["model"]
    for k, feeds in enumerate(replay.feeds if replay and replay.several else [judged.feeds]):
        for name, array in feeds.items():
            script.save_array(folder / "inputs" / (f"call{k + 1}" if replay and replay.several else ""), name, array)
    if case.valid:
        _expected(bundle, folder, judged_case, judged, page=runner.template == script.PAGE)
    if program.format == "onnx" and case.valid:
        from conformance.export.onnx_node import tolerance_document, write_test_data
        expected = [(n, program_layout(judged, c, bundle.vectors.outputs[c].rounded(case.dtype))[0])
                    for n, c in judged.outputs]
        write_test_data(folder, program.model, judged.feeds, expected)
        (folder / "tolerance.json").write_text(json.dumps(tolerance_document(bundle.vectors, judged, case.dtype),
                                                          indent=1) + "\n")
    if plug is not None and plug.get("copy"):
        shutil.copy2(plug["copy"], folder / Path(plug["copy"]).name)
    _case_file(case, record, folder)
    _facts(bundle, record, case, program, subject, plug)
    summary = textwrap.fill(f"{record.target} {issue.verb(subject.verdict)} {case.describe()}. "
                            f"{subject.cause}. Spec: {bundle.clause} ({bundle.clause_url}).", 96)
    if runner.template == script.PAGE:
        browser = str((record.effective or {}).get("browser") or browser_of(bundle))
        bundle.requirements = []
        (folder / "requirements.txt").write_text(
            f"# no Python package: repro.html runs in a browser whose WebNN works, as {record.target} did\n"
            f"# {browser}\n")
        (folder / "repro.html").write_text(script.render_page(ran, names, bundle.title, summary, subject.verdict,
                                                              browser, _compute(bundle)))
        bundle.listing = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        return
    packages = list(runner.packages) + list(plug["packages"] if plug else [])
    bundle.requirements = list(dict.fromkeys([_pin("numpy")] + [_pin(p) for p in packages]))
    if any(p.name.endswith(".bf16.npy") for p in folder.rglob("*.npy")):
        bundle.requirements.append(_pin("ml_dtypes"))
    (folder / "requirements.txt").write_text(
        f"# the versions {record.runtime} diverged with ({record.target})\n" + "\n".join(bundle.requirements) + "\n")
    (folder / "repro.py").write_text(script.render(ran, runner, names, bundle.title, summary,
                                                   replay.verdict if replay else subject.verdict,
                                                   plugin=plug, compute=_compute(bundle), replay=replay))
    bundle.listing = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def modules_of(bundle) -> tuple:
    """The top-level modules of the runtime's API that repro.py imports (whose own exception classes
    are the runtime's refusals); builtin exception types are not among them."""
    runner = script.runner_of(bundle.ran.record)
    lines = runner.imports if runner is not None else ()
    return tuple(sorted({line.split()[1].split(".")[0] for line in lines} - {"numpy"}))


def _facts(bundle, record: Record, case, program, subject, plug) -> None:
    """What ISSUE.md and the scripts say about the report: its tracker, clause, title, search link."""
    from conformance.specs import SPECS
    bundle.numpy = metadata.version("numpy")
    bundle.expectation = known(subject.records)
    bundle.tracker = issue.tracker_for(record.runtime_family or record.runtime,
                                       bundle.expectation.get("kind", ""), plugin=plug is not None)
    bundle.clause = SPECS[record.spec].clause(case)
    bundle.clause_url = issue.clause_url(record.spec, case, program)
    bundle.title = f"{record.runtime} {record.runtime_version}: {subject.cause}"
    bundle.search = issue.search_link(bundle.tracker, case, subject)


def browser_of(bundle) -> str:
    """The browser a WebNN target ran in, in words (its version and executable)."""
    record = bundle.ran.record
    return f"{record.runtime} {record.runtime_version} ({bundle.browser or 'the suite browser'})"


def _program_files(ran, folder: Path, program) -> dict:
    """The program's files copied in, by role; an ONNX model as model.onnx (the node-test layout)."""
    names: dict = {}
    if program.format == "onnx":
        (folder / "model.onnx").write_bytes(program.model)
        return {"model": "model.onnx"}
    if program.format == "openvino-model":   # built in repro.py itself, from its Constants
        for name, array in program.extra.get("constants", {}).items():
            script.save_array(folder / "constants", name, array)
        names["model"] = "repro.py (the builders' calls)"
        return names
    if not ran.files:
        raise NotReportable(f"the run wrote no program file for {program.spec} (refused while it was built?): "
                            f"{(ran.record.message or '')[:300]}")
    for path in ran.files:
        shutil.copy2(path, folder / path.name)
    names["model"] = ran.files[0].name
    for path in ran.files[1:]:   # an IR's .bin, torch's state_dict (.npz)
        if path.suffix in (".bin", ".npz"):
            names.setdefault("weights", path.name)
    return names


def _expected(bundle, folder: Path, case, program, page: bool = False) -> None:
    """expected/<output>.npy (exact, float64) and <output>.allowed.npy of ``case`` (the call repro.py
    compares), in ``program``'s layout (``page``: also expected/<output>.json for repro.html, in C
    order)."""
    record = bundle.ran.record
    from conformance.runtimes.effective import BY_NAME
    from conformance.specs import SPECS
    compute, accumulation, rounding = "", None, "nearest"
    declared = record.declared or {}
    if bundle.subject.against_declared and declared.get("precision") in BY_NAME:
        effective = record.effective or {}
        compute = BY_NAME[declared["precision"]].dtype
        accumulation, rounding = effective.get("accumulation"), effective.get("rounding", "faithful")
    vectors = vectors_of(case, SPECS[record.spec].semantics, reading=record.reading or None,
                         compute=compute, accumulation=accumulation, rounding=rounding)
    bundle.vectors = vectors
    for _, canonical in program.outputs:
        out = vectors.outputs[canonical]
        script.save_array(folder / "expected", canonical, program_layout(program, canonical, out.expected)[0])
        script.save_array(folder / "expected", canonical + ".allowed",
                          program_layout(program, canonical, out.allowed)[0])
        if page:
            exact = program_layout(program, canonical, out.expected)[0].ravel()
            allowed = program_layout(program, canonical, out.allowed)[0].ravel()
            (folder / "expected" / f"{canonical}.json").write_text(json.dumps({
                "shape": list(out.expected.shape),
                "expected": [float(x) if np.isfinite(x)
                             else str(float(x)).replace("inf", "Infinity").replace("nan", "NaN")
                             for x in exact],
                "allowed": [float(a) if np.isfinite(a) else None for a in allowed]}) + "\n")
    bundle.bound_text = (f"allowed error per element: {vectors.tolerance.get('source', '')}"
                         + (f"; for an implementation computing in {compute}, as this configuration does"
                            if compute else ""))


def _compute(bundle) -> str:
    """The narrower precision the allowed error is for ("" for the model's own type)."""
    vectors = getattr(bundle, "vectors", None)
    return str(getattr(vectors, "compute", "") or "")


def _case_file(case, record: Record, folder: Path) -> None:
    from conformance.fuzz.reproducer import case_document, render
    from conformance.specs import SPECS
    doc = case_document(case, [SPECS[record.spec].clause(case)], f"bug report: {record.target}")
    (folder / "case.yaml").write_text(render(doc, [f"The smallest case of the report ({case.id})."]))


def finish(bundle, folder: Path) -> None:
    """ISSUE.md (with repro.py's verified output) and bundle.json."""
    from conformance.fuzz.reproducer import repro_command
    record = bundle.ran.record
    command = repro_command(Path("case.yaml"), [record], {})
    config = str(record.config or "default")
    bundle.suite_repro = command + (f" --config {config}" if config != "default" else "")
    (folder / "ISSUE.md").write_text(issue.render(bundle))
    bundle.listing = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) + ["bundle.json"]
    (folder / "bundle.json").write_text(json.dumps(bundle.to_json(), indent=1, default=_plain) + "\n")


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    return str(value)
