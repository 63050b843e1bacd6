"""One bug report, as one folder: made in a scratch folder, verified there, and moved into place only
when ``repro.py`` reproduced the divergence in a fresh interpreter.

::

    <name>/
      ISSUE.md            the upstream issue, in the fields of that project's template (issue.py)
      repro.py            the program run with the runtime's own calls, compared with the spec (script.py)
      requirements.txt    numpy and the runtime, pinned to the versions that diverged
      <program files>     model.onnx | <spec>.xml + .bin | torch.json + .npz | constants/*.npy ...
      inputs/*.npy        the feeds, by the program's input names
      expected/*.npy      per spec output: the exact values (float64) and the allowed error per element
                          (*.allowed.npy; inf where the spec leaves the element unspecified)
      test_data_set_0/    ONNX programs: the inputs and expected outputs as TensorProto (.pb), with
      tolerance.json      the allowed error per element (conformance/export/onnx_node.py)
      case.yaml           the smallest case as a case file: `conformance run case.yaml ...` in the suite
      bundle.json         what was reported, on what, and how it was verified
"""

from __future__ import annotations

import datetime
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from conformance.bugreport.pair import Ran, run_pair
from conformance.bugreport.smallest import same_failure, smallest_case
from conformance.bugreport.subject import Subject
from conformance.bugreport.verify import Verification, verify, verify_page

SCHEMA = "rnn-conformance/bugreport/1"


class BundleError(Exception):
    """No report was written; the message says why (a refusal that did not reproduce included)."""

    def __init__(self, message: str, verification: Verification | None = None):
        super().__init__(message)
        self.verification = verification


@dataclass
class Bundle:
    subject: Subject
    ran: Ran
    folder: Path
    removed: list = field(default_factory=list)
    verification: Verification | None = None
    listing: list = field(default_factory=list)
    program: str = ""              # the program's main file in the folder (or where repro.py builds it)
    requirements: list = field(default_factory=list)
    expectation: dict = field(default_factory=dict)
    tracker: object = None
    title: str = ""
    clause: str = ""
    clause_url: str = ""
    bound_text: str = ""
    search: str = ""
    suite_repro: str = ""
    numpy: str = ""
    browser: str = ""              # a WebNN target's browser executable (repro.html runs there)
    vectors: object = None          # conformance.export.vectors.Vectors of the case (valid cases)
    replay: Any = None              # conformance.bugreport.forms.Replay: a form's calls (None: one plain call)

    def size(self) -> int:
        return sum(p.stat().st_size for p in self.folder.rglob("*") if p.is_file())

    def to_json(self) -> dict:
        r = self.ran.record
        return {"schema": SCHEMA, "written": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "kind": self.subject.kind, "cluster": (self.subject.cluster or {}).get("id"),
                "cause": self.subject.cause, "case": self.ran.case.id,
                "source_cases": [c.id for c in self.subject.cases],
                "removed": self.removed, "target": r.target, "verdict": r.verdict, "message": r.message,
                "worst": r.worst, "effective": r.effective, "declared": r.declared,
                "tracker": getattr(self.tracker, "project", ""), "search": self.search,
                "requirements": self.requirements, "files": self.listing,
                "expectation": self.expectation or None,
                "form": ({"config": self.replay.config, "loaded": self.replay.loaded, "calls": self.replay.labels}
                         if self.replay is not None else None),
                "verified": self.verification.to_json() if self.verification else None}


def make(subject: Subject, target, pool, out_dir: Path, mode: str = "auto", timeout: float = 120.0,
         plugin: dict | None = None, log=print) -> Bundle:
    """The verified report of ``subject`` on ``target``, written to ``out_dir/<subject.name>``;
    raises :class:`BundleError` (nothing written) when it cannot be made or does not reproduce."""
    from conformance.bugreport import files
    with tempfile.TemporaryDirectory(prefix="bugreport-") as tmp:
        scratch = Path(tmp)
        removed: list[str] = []
        if subject.reduce:
            log(f"  {subject.name}: reducing "
                f"{subject.cases[0].id if len(subject.cases) == 1 else f'{len(subject.cases)} cases'} "
                f"on {target.id} ...")
            case, removed, _ = smallest_case(subject.cases, subject.cause_features,
                                             lambda c: run_pair(c, target, pool, scratch / "reduce", timeout).record,
                                             subject.verdict, subject.against_declared)
        else:
            case = subject.cases[0]
        ran = run_pair(case, target, pool, scratch / "run", timeout)
        if not same_failure(ran.record, subject.verdict, subject.against_declared):
            raise BundleError(f"{case.id} on {target.id} is {ran.record.verdict} now, not "
                              f"{subject.verdict}: the divergence does not show in the suite itself "
                              f"({(ran.record.message or '').splitlines()[0][:300] if ran.record.message else ''})")
        bundle = Bundle(subject, ran, Path(out_dir) / subject.name, removed,
                        browser=dict(target.ref.kwargs).get("executable", "") if target.runtime == "webnn" else "")
        staging = scratch / "bundle"
        files.write(bundle, staging, plugin)
        log(f"  {subject.name}: verifying repro.py in a fresh interpreter ...")
        message = str(ran.record.message or "")
        refusal = message.split("rejected a valid case: ", 1)[1] if subject.verdict == "rejected" and \
            "rejected a valid case: " in message else ""
        if bundle.browser:
            bundle.verification = verify_page(staging, bundle.browser)
        else:
            bundle.verification = verify(staging, mode, log=log, refusal=refusal, modules=files.modules_of(bundle))
        if not bundle.verification.reproduced:
            raise BundleError(f"not written: {bundle.verification.reason}", bundle.verification)
        files.finish(bundle, staging)
        if bundle.folder.exists():
            shutil.rmtree(bundle.folder)
        bundle.folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staging, bundle.folder)
    return bundle


def version_of(distribution: str) -> str:
    return metadata.version(distribution)


def write_index(out_dir: Path, entries: list[dict]) -> Path:
    """``out_dir/index.json``: every report (or refusal) of this command, and those of earlier ones about
    other subjects."""
    path = Path(out_dir) / "index.json"
    old = []
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except ValueError:
            old = []
    def key(e: dict) -> tuple:   # one entry per subject: a report replaces an earlier refusal and vice versa
        return (e.get("cluster") or e.get("case"), e.get("target"))
    replaced = {key(e) for e in entries} | {e["folder"] for e in entries if e.get("folder")}
    merged = [e for e in old if isinstance(e, dict) and key(e) not in replaced
              and (not e.get("folder") or e["folder"] not in replaced)] + entries
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp")
    with tmp:
        tmp.write(json.dumps(merged, indent=1) + "\n")
    Path(tmp.name).replace(path)
    return path
