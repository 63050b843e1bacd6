"""``ISSUE.md``: the upstream issue, filled in with the fields of that project's issue template.

:data:`TRACKERS` is the one table of where each runtime's issues go: the repository (or Chromium's
tracker), its issue template and the sections it asks for, in the template's order, each filled from
:func:`facts` (versions, OS, the CPU and its arithmetic, device or execution provider, the effective
configuration, the spec clause with its URL, the worst element, the cause, the known upstream issues
of the expectation that covers the divergence, and a search link for duplicates). A divergence the
expectations file as a spec ambiguity goes to the spec's tracker (ONNX's question template).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.results import Record

import json
import platform
import urllib.parse
from dataclasses import dataclass

from conformance.runtimes.configuration import TargetName


@dataclass(frozen=True)
class Tracker:
    project: str               # owner/name on GitHub, or the tracker's name
    template: str              # the issue template's URL
    new: str                   # where a new issue is opened
    search: str                # a search URL, the query appended
    sections: tuple            # (heading, fact) in the template's order


GITHUB = "https://github.com/{}/issues/new?template={}"
SEARCH = "https://github.com/{}/issues?q=is%3Aissue+"


def _github(project: str, template: str, sections: tuple) -> Tracker:
    return Tracker(project, f"https://github.com/{project}/blob/main/.github/ISSUE_TEMPLATE/{template}",
                   GITHUB.format(project, template), SEARCH.format(project), sections)


TRACKERS = {
    "onnxruntime": _github("microsoft/onnxruntime", "08-general.yml", (
        ("Describe the issue", "describe"), ("To reproduce", "reproduce"), ("Urgency", "urgency"),
        ("Platform", "platform"), ("OS Version", "os"), ("ONNX Runtime Installation", "install"),
        ("ONNX Runtime Version or Commit ID", "version"), ("ONNX Runtime API", "api"),
        ("Architecture", "architecture"), ("Execution Provider", "device"),
        ("Execution Provider Library Version", "device_library"))),
    "openvino": _github("openvinotoolkit/openvino", "bug.yml", (
        ("OpenVINO Version", "version"), ("Operating System", "os"), ("Device used for inference", "device"),
        ("Framework", "framework"), ("Model used", "model"), ("Issue description", "describe"),
        ("Step-by-step reproduction", "reproduce"), ("Relevant log output", "log"),
        ("Issue submission checklist", "checklist"))),
    "onnx": _github("onnx/onnx", "bug.md", (
        ("Bug Report", "describe"), ("System information", "system"), ("Reproduction instructions", "reproduce"),
        ("Expected behavior", "expected"), ("Notes", "notes"))),
    "onnx-spec": _github("onnx/onnx", "question.md", (
        ("Ask a Question", "question"), ("Question", "describe"), ("Further information", "expected"),
        ("Relevant Area", "area"), ("Is this issue related to a specific model?", "model"), ("Notes", "notes"))),
    "pytorch": _github("pytorch/pytorch", "bug-report.yml", (
        ("🐛 Describe the bug", "describe_with_code"), ("Versions", "system"))),
    "iree": _github("iree-org/iree", "bug_report.yml", (
        ("What happened?", "describe"), ("Steps to reproduce your issue", "reproduce"),
        ("What component(s) does this issue relate to?", "component"), ("Version information", "version"),
        ("Additional context", "notes"))),
    "mnn": _github("alibaba/MNN", "bug_report.md", (
        ("平台(如果交叉编译请再附上交叉编译目标平台) / Platform", "platform"), ("Github版本 / Version", "version"),
        ("编译方式 / How it was built", "install"), ("问题描述 / Describe the issue", "describe"),
        ("复现 / To reproduce", "reproduce"))),
    "tvm": _github("apache/tvm", "bug-report.md", (
        ("Expected behavior", "expected"), ("Actual behavior", "describe"), ("Environment", "system"),
        ("Steps to reproduce", "reproduce"), ("Triage", "area"))),
    "tract": Tracker("sonos/tract", "https://github.com/sonos/tract/issues (no template)",
                     "https://github.com/sonos/tract/issues/new", SEARCH.format("sonos/tract"), (
                         ("Describe the issue", "describe"), ("To reproduce", "reproduce"),
                         ("Expected behavior", "expected"), ("Environment", "system"))),
    "chromium": Tracker("Chromium (component Blink>WebML)", "https://issues.chromium.org/issues/new (Blink>WebML)",
                        "https://issues.chromium.org/issues/new", "https://issues.chromium.org/issues?q=", (
                            ("Steps to reproduce the problem", "reproduce"), ("Problem Description", "describe"),
                            ("Summary", "summary"), ("Additional Data", "system"))),
    "plugin": Tracker("the runtime plugin's own project", "", "", "", (
        ("Describe the issue", "describe"), ("To reproduce", "reproduce"), ("Expected behavior", "expected"),
        ("Environment", "system"))),
}
#: runtime family -> tracker
TRACKER_OF = {"onnxruntime": "onnxruntime", "openvino": "openvino", "onnx-reference": "onnx", "torch": "pytorch",
              "iree": "iree", "mnn": "mnn", "tract": "tract", "tvm": "tvm", "webnn": "chromium"}

OPENVINO_SPEC = ("https://docs.openvino.ai/2024/documentation/openvino-ir-format/operation-sets/operation-specs/"
                 "sequence/{}.html")
OPENVINO_PAGES = {"RNNSequence-5": "rnn-sequence-5", "GRUSequence-5": "gru-sequence-5",
                  "LSTMSequence-5": "lstm-sequence-5", "LSTMSequence-1": "lstm-sequence-1", "RNNCell-3": "rnn-cell-3",
                  "GRUCell-3": "gru-cell-3", "LSTMCell-4": "lstm-cell-1", "LSTMCell-1": "lstm-cell-1"}
TORCH_SPEC = "https://docs.pytorch.org/docs/stable/generated/torch.nn.{}.html"


def tracker_for(runtime_family: str, kind: str = "", plugin: bool = False) -> Tracker:
    if plugin:
        return TRACKERS["plugin"]
    if kind == "spec-ambiguity" and runtime_family in ("onnxruntime", "onnx-reference"):
        return TRACKERS["onnx-spec"]
    return TRACKERS[TRACKER_OF.get(runtime_family, "plugin")]


def clause_url(spec: str, case, program) -> str:
    """The URL of the spec clause the case is judged by."""
    if spec.startswith("onnx-"):
        return f"https://onnx.ai/onnx/operators/onnx__{case.op}.html#{case.op.lower()}-{spec.split('-')[1]}"
    if spec.startswith("openvino"):
        page = OPENVINO_PAGES.get(str(getattr(program, "extra", {}).get("op", "")))
        return OPENVINO_SPEC.format(page) if page else OPENVINO_SPEC.format("")[:-6]
    if spec == "torch":
        return TORCH_SPEC.format(json.loads(program.model)["module"])
    if spec.startswith("webnn"):
        from conformance.specs.webnn import vocabulary as v
        return v.section(v.OPS[(case.op, case.form)])
    if spec.startswith("directml"):
        return f"https://learn.microsoft.com/en-us/windows/win32/api/directml/ns-directml-dml_{case.op.lower()}_operator_desc"
    return ""


def search_link(tracker: Tracker, case, subject) -> str:
    """The tracker's search for duplicates: the op, the cause's first two features, and where an
    execution form is part of the cause (the ablation's marker ``form``) the form's values
    (``shape=dynamic`` -> ``dynamic``) instead of the marker, a word no upstream issue uses."""
    from conformance.runtimes.forms import asked
    features = [f for f in subject.cause_features if f != "form"]
    words = [case.op] + [f.split("=")[-1] for f in features[:2]]
    if "form" in subject.cause_features:
        words += list(asked(TargetName.parse(subject.target_id).config.asked).values())
    return tracker.search + urllib.parse.quote_plus(" ".join(words)) if tracker.search else ""


def _worst(record: Record) -> str:
    w = record.worst or {}
    if not w:
        return ""
    at = f"{w['output']}[{','.join(map(str, w['index']))}]"
    return (f"{at} ({w.get('time_step', '')}): got {w['got']!r}, expected {w['expected']!r} (exact), allowed error "
            f"{w.get('allowed', 0):.3g}; error {w.get('abs_err', 0):.3g} = {w.get('ratio', 0):.3g}× the allowed")


def facts(bundle) -> dict:
    """Every fact a template may ask for, as Markdown."""
    from conformance.runtimes.effective import describe_host, host
    record, case, subject, check = bundle.ran.record, bundle.ran.case, bundle.subject, bundle.verification
    runtime = f"{record.runtime} {record.runtime_version}"
    clause = bundle.clause
    expected_entry = bundle.expectation or {}
    effective = {k: v for k, v in (record.effective or {}).items() if k != "source"}
    device = record.device or "CPU"
    if (record.runtime_family or record.runtime) == "onnxruntime":
        device = f"{device} ({', '.join(effective.get('providers') or [device + 'ExecutionProvider'])})"
    reproduce = (f"The attached folder reproduces it without any other tool (files: "
                 f"{', '.join(bundle.listing)}):\n\n```sh\npip install -r requirements.txt\npython repro.py   "
                 f"# exit status 1: the divergence shows\n```\n\n`repro.py`'s output on the machine below:\n\n"
                 f"```\n{check.output.strip()}\n```")
    describe = (f"{runtime} ({device}, configuration `{record.config or 'default'}`) "
                f"{verb(subject.verdict)} a valid {case.op} {case.form} model that {clause} defines "
                f"({bundle.clause_url}).\n\nCause, as narrowed down by rnn-conformance "
                f"(features removed one at a time): {subject.cause}.\n\nThe case: {case.describe()}.")
    if subject.verdict == "accepted-invalid":
        describe = (f"{runtime} ({device}) runs a {case.op} model that {clause} forbids ({case.violates}) "
                    f"instead of refusing it ({bundle.clause_url}).\n\nThe case: {case.describe()}.")
    if bundle.replay is not None:
        replay = bundle.replay
        describe += (f"\n\nThe model is in the execution form `{replay.config}`: {replay.words}. `repro.py` makes "
                     f"the calls the divergence needs, as rnn-conformance made them "
                     f"({'through one model, loaded once' if replay.loaded else 'each on a model of its own'}): "
                     + "; ".join(f"{k + 1}. {label}" for k, label in enumerate(replay.labels))
                     + "; and compares the last call's outputs with the spec's values.")
    worst = _worst(record)
    if worst:
        describe += f"\n\nWorst element: {worst}."
    expected = (("The model runs, and every" if subject.verdict == "rejected" else "Every")
                + f" output element within its allowed error of the exact value {clause} defines "
                f"({bundle.clause_url}); the expected outputs and the allowed error per element are in "
                f"`expected/` ({bundle.bound_text}).")
    known = ""
    if expected_entry:
        known = (f"Known to rnn-conformance's expectations ({expected_entry.get('where', '')}, "
                 f"{expected_entry.get('kind', '')}): {expected_entry.get('reason', '')}"
                 + (f"; upstream: {expected_entry['upstream']}" if expected_entry.get("upstream") else "")
                 + (f"; link: {expected_entry['link']}" if expected_entry.get("link") else ""))
    system = (f"- {runtime}; numpy {bundle.numpy}; Python {platform.python_version()}\n"
              f"- OS: {platform.platform()}\n- CPU: {describe_host(host())}\n- device: {device}\n"
              f"- effective configuration: `{json.dumps(effective, sort_keys=True)}`")
    notes = "\n\n".join(x for x in (
        known, f"Search for duplicates: {bundle.search}" if bundle.search else "",
        f"Found by rnn-conformance (target `{record.target}`); the suite's own reproduction: "
        f"`{bundle.suite_repro}`") if x)
    return {
        "describe": describe, "describe_with_code": describe + "\n\n" + reproduce, "reproduce": reproduce,
        "expected": expected, "urgency": "None given: a conformance divergence found by a test suite.",
        "platform": platform.system(), "os": platform.platform(), "install": "Released package (pip)",
        "version": runtime.strip(), "api": "Python", "architecture": platform.machine(), "device": device,
        "device_library": "—", "framework": "ONNX" if record.spec.startswith("onnx") else "None",
        "model": f"{bundle.program} (attached; {case.describe()})",
        "log": f"```\n{check.output.strip()}\n```",
        "checklist": ("- [x] I'm reporting an issue. It's not a question.\n- [x] I checked the problem with the "
                      "documentation, FAQ, open issues, Stack Overflow, etc., and have not found a solution.\n"
                      "- [x] There is reproducer code and related data files such as images, videos, models, etc."),
        "system": system, "notes": notes, "question": f"{clause}: {subject.cause}",
        "area": "Operators", "component": "Compiler, Runtime, Python bindings",
        "summary": f"{runtime}: {subject.cause}",
    }


def verb(verdict: str) -> str:
    """What the runtime does to the model, as a sentence's verb (its object follows)."""
    return {"fail": "returns wrong numbers on", "rejected": "refuses", "accepted-invalid": "runs",
            "crash": "crashes on", "timeout": "does not finish"}.get(verdict, verdict)


def render(bundle) -> str:
    tracker = bundle.tracker
    found = facts(bundle)
    lines = [f"# {bundle.title}", "",
             f"<!-- {tracker.project}: {tracker.new or 'their tracker'}; fields of {tracker.template} -->", ""]
    for heading, key in tracker.sections:
        lines += [f"### {heading}", "", found[key].strip(), ""]
    keys = {key for _, key in tracker.sections}
    if "notes" not in keys:
        lines += ["### Notes", "", found["notes"].strip(), ""]
    if "system" not in keys:   # the CPU, its arithmetic and the effective configuration, always
        lines += ["### Environment", "", found["system"].strip(), ""]
    return "\n".join(lines).rstrip() + "\n"
