"""The targets of a release's environment, found there and driven from here (:mod:`.proxy`).

Each target keeps the adapter's own id parts (runtime, version, device, configuration, spec), so a
release's column reads ``onnxruntime-1.18.0/CPU@onnx-14``. Its ``gates`` are the version gates: a
spec version's minimal RNN, GRU or LSTM (one step, one unit, zeros) that the release refuses makes
every pair of that op at that spec version ``not-expressible``, with the release's own error as the
reason (an onnxruntime that predates opset 22 knows no LSTM-22). A pair the release accepts at
the minimal size and then gets wrong is judged as every other pair. The probes are the sequence form;
an ONNX op is the same for both forms, so only the ONNX versions gate, while OpenVINO's IR opsets
(whose cells are ops of their own) are probed for the support timelines only. What each probe gave
(accepts, refuses, crashes) is the release's *support*, the history's support timelines.

Before its verdicts count, the environment is checked (:func:`discover`): it is *broken* when
importing its runtime printed a ``SystemError`` (a module built against numpy 1 under numpy 2
imports, prints it, exits 0, and every call crashes), or when every probe of every target crashed.
A broken release is listed with the reason and never run. A target whose probe cannot even import
what the suite's adapter needs there is left out, with the reason (a skipped runtime); when no
target is left, the environment is broken.

The adapters' targets include their execution forms (conformance/runtimes/forms.py: ``shape=dynamic``
and the others), each with the forms its runtime takes; a form's plan of calls runs whole in the
release's interpreter (:meth:`.proxy.EnvRuntime.run_plan`). A form's target builds the runtime its
plain target builds, so it is probed once, and the support timelines are the plain targets'.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from conformance.case.model import Case
from conformance.history.environments import Env, import_problem
from conformance.history.proxy import environment
from conformance.history.remote import PROTOCOL, pack
from conformance.history.versions import PACKAGES
from conformance.runtimes import Skipped
from conformance.runtimes.base import RuntimeRef, Target
from conformance.runtimes.forms import asked

#: seconds the environment may take to import its runtime and list its targets
DISCOVERY_TIMEOUT = 600
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}  # gates per op: the rows of W per unit
#: the program formats of the history's runtimes (conformance/history/versions.py PACKAGES), probed
PROBED_FORMATS = ("onnx", "openvino-ir")


def minimal_case(op: str) -> Case:
    """One step, one unit, one input, zeros: the least program of ``op`` a release can run."""
    g = GATES[op]
    return Case(id=f"history/minimal-{op.lower()}", op=op, form="sequence", attributes={"hidden_size": 1},
                shape={"seq_length": 1, "batch_size": 1, "input_size": 1}, dtype="float32",
                tensors={"X": np.zeros((1, 1, 1), np.float32), "W": np.zeros((1, g, 1), np.float32),
                         "R": np.zeros((1, g, 1), np.float32)},
                description="a version gate's probe (conformance/history/targets.py)")


def probes(specs_by_format: dict, folder) -> dict:
    """{spec: {op: {model, feeds}}}: the minimal program of each op, for the specs of the probed
    formats (a file format's program written into ``folder``, its model the path). A spec whose
    translator cannot work here (OpenVINO's builders without the pinned openvino) has no probes."""
    found: dict = {}
    for fmt in PROBED_FORMATS:
        for spec in specs_by_format.get(fmt, []):
            for op in GATES:
                probe = _probe_program(spec, op, str(folder) if fmt != "onnx" else "")
                if probe is not None:
                    found.setdefault(spec, {})[op] = probe
    return found


@lru_cache(maxsize=256)
def _probe_program(spec: str, op: str, folder: str) -> dict | None:
    from pathlib import Path

    from conformance.specs import SPECS, translate
    from conformance.specs.program import NotExpressible
    try:
        prog = translate(SPECS[spec], minimal_case(op))
        if isinstance(prog, NotExpressible):
            return None
        if prog.format != "onnx":
            where = Path(folder) / f"{op.lower()}"
            where.mkdir(parents=True, exist_ok=True)
            SPECS[spec].write(prog, where)
    except Exception:  # noqa: BLE001 - no probe: the pairs run and are judged one by one
        return None
    # an ONNX RNN, GRU or LSTM is one op for both forms, so its refusal gates the cells too; OpenVINO's
    # opsets have cell ops of their own, which a sequence's refusal says nothing about: support only
    return {"model": prog.runtime_input(), "feeds": {k: pack(v) for k, v in prog.feeds.items()},
            "gate": prog.format == "onnx"}


@dataclass
class Discovery:
    """What :func:`discover` found in a release's environment."""

    targets: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    #: [{target, spec, op, state, why}]: each probe's outcome (accepts, refuses, crashes)
    support: list = field(default_factory=list)
    broken: str = ""   # why the environment cannot work ("" when it can)


def env_targets(env: Env, specs_by_format: dict, timeout: float = DISCOVERY_TIMEOUT):
    """(targets, skipped) of ``env``'s release (:func:`discover`; a broken one has none)."""
    found = discover(env, specs_by_format, timeout)
    return found.targets, found.skipped


_DISCOVERED: dict[tuple, Discovery] = {}


def discover(env: Env, specs_by_format: dict, timeout: float = DISCOVERY_TIMEOUT) -> Discovery:
    """The targets, probes and health of ``env``'s release (kept for this process: the repeats of a
    history use the same targets)."""
    key = (env.python, tuple(env.modules or PACKAGES[env.package]), json.dumps(specs_by_format, sort_keys=True))
    if key not in _DISCOVERED:
        with tempfile.TemporaryDirectory(prefix="rnn-conformance-probes-") as folder:
            _DISCOVERED[key] = _discover(env, specs_by_format, timeout, folder)
    return _DISCOVERED[key]


def _discover(env: Env, specs_by_format: dict, timeout: float, folder: str) -> Discovery:
    request = {"modules": list(env.modules or PACKAGES[env.package]), "specs_by_format": specs_by_format,
               "probes": probes(specs_by_format, folder)}
    try:
        done = subprocess.run([env.python, "-s", "-m", "conformance.history.remote", "targets"],
                              input=pickle.dumps(request, protocol=PROTOCOL), capture_output=True,
                              timeout=timeout, env=environment())
    except subprocess.TimeoutExpired:
        return Discovery(skipped=[Skipped(env.name, f"listing its targets took more than {timeout:g} s")])
    stderr = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0:
        tail = " ".join(stderr.strip().splitlines()[-2:])[:400]
        return Discovery(skipped=[Skipped(env.name, f"listing its targets failed (exit status {done.returncode}): "
                                                    f"{tail}")])
    problem = import_problem(0, stderr)
    if problem:
        return Discovery(broken=f"broken: importing {env.package} {env.version} there: {problem}")
    answer = pickle.loads(done.stdout)  # noqa: S301 - our own child's answer, plain values only
    targets, skipped = [], []
    for t in answer["targets"]:
        broken = [o["why"] for o in (t.get("probe") or {}).values() if o["state"] == "broken"]
        if broken:   # the suite's adapter cannot run there: the target is left out, not judged
            skipped.append(Skipped(f"{env.name} {t['id']}", f"broken in this environment: {broken[0]}"))
            continue
        inner = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in t["ref_kwargs"])
        ref = RuntimeRef("conformance.history.proxy:EnvRuntime",
                         (("python", env.python), ("path", t["ref_path"]), ("kwargs", inner),
                          ("name", t["runtime"]), ("version", t["version"]), ("format", t["format"])))
        targets.append(Target(t["runtime"], t["version"], t["device"], t["config"], t["spec"], ref,
                              format=t["format"], description=f"{t['description']} (environment {env.folder})",
                              precision=t.get("precision", ""), configuration=t.get("configuration", {}),
                              family=t.get("family", ""), gates=t.get("gates", {}),
                              forms=t.get("forms", {})))  # the proxy takes one program per call, or one plan
    skipped += [Skipped(f"{env.name} {name}", reason) for name, reason in answer["skipped"]]
    kept = {t.id for t in targets}
    # the plain targets' probes: an execution form's target builds the same runtime and ran the same probes
    support = [{"target": t["id"], "spec": t["spec"], "op": op, "state": o["state"], "why": o["why"]}
               for t in answer["targets"] if t["id"] in kept and not asked(t["config"])
               for op, o in (t.get("probe") or {}).items()]
    if answer["targets"] and not targets:
        return Discovery(skipped=skipped, broken="broken: the suite's adapters cannot run there: "
                                                 + "; ".join(s.reason for s in skipped)[:600])
    if support and all(s["state"] == "crashes" for s in support):
        return Discovery(skipped=skipped, support=support,
                         broken=f"broken: every probe crashed ({len(support)} minimal programs on "
                                f"{len(targets)} targets; {support[0]['why']})")
    return Discovery(targets, skipped, support)


def in_configs(targets: list, configs) -> tuple[list, str]:
    """(the targets of ``targets`` in one of ``configs``, as ``--config`` selects them; why none is,
    or ""): a history's ``--config`` (default ``forms=default``, the plain targets) applied to each
    release's targets."""
    from conformance.selection import NoMatch, narrow
    if not configs or not targets:
        return list(targets), ""
    try:
        return narrow(targets, configs=configs)[0], ""
    except NoMatch as exc:
        return [], " ".join(str(exc).split())
