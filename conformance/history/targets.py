"""The targets of a release's environment, found there and driven from here (:mod:`.proxy`).

Each target keeps the adapter's own id parts (runtime, version, device, configuration, spec), so a
release's column reads ``onnxruntime-1.18.0/CPU@onnx-14``. Its ``gates`` are the version gates: a
spec version's minimal RNN, GRU or LSTM (one step, one unit, zeros) that the release refuses makes
every pair of that op at that spec version ``not-expressible``, with the release's own error as the
reason (an onnxruntime that predates opset 22 knows no LSTM-22). A pair the release accepts at
the minimal size and then gets wrong is judged as every other pair.
"""

from __future__ import annotations

import pickle
import subprocess

import numpy as np

from conformance.case.model import Case
from conformance.history.environments import Env
from conformance.history.proxy import environment
from conformance.history.remote import PROTOCOL, pack
from conformance.history.versions import PACKAGES
from conformance.runtimes import Skipped
from conformance.runtimes.base import RuntimeRef, Target

#: seconds the environment may take to import its runtime and list its targets
DISCOVERY_TIMEOUT = 600
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}  # gates per op: the rows of W per unit


def minimal_case(op: str) -> Case:
    """One step, one unit, one input, zeros: the least program of ``op`` a release can run."""
    g = GATES[op]
    return Case(id=f"history/minimal-{op.lower()}", op=op, form="sequence", attributes={"hidden_size": 1},
                shape={"seq_length": 1, "batch_size": 1, "input_size": 1}, dtype="float32",
                tensors={"X": np.zeros((1, 1, 1), np.float32), "W": np.zeros((1, g, 1), np.float32),
                         "R": np.zeros((1, g, 1), np.float32)},
                description="a version gate's probe (conformance/history/targets.py)")


def probes(specs_by_format: dict) -> dict:
    """{spec: {op: {model, feeds}}}: the minimal program of each op, for the specs of the ONNX format."""
    from conformance.specs import SPECS, translate
    from conformance.specs.program import NotExpressible
    found: dict = {}
    for spec in specs_by_format.get("onnx", []):
        for op in GATES:
            prog = translate(SPECS[spec], minimal_case(op))
            if isinstance(prog, NotExpressible):
                continue
            found.setdefault(spec, {})[op] = {"model": prog.runtime_input(),
                                              "feeds": {k: pack(v) for k, v in prog.feeds.items()}}
    return found


def env_targets(env: Env, specs_by_format: dict, timeout: float = DISCOVERY_TIMEOUT):
    """(targets, skipped) of ``env``'s release."""
    request = {"modules": list(env.modules or PACKAGES[env.package]), "specs_by_format": specs_by_format,
               "probes": probes(specs_by_format)}
    try:
        done = subprocess.run([env.python, "-s", "-m", "conformance.history.remote", "targets"],
                              input=pickle.dumps(request, protocol=PROTOCOL), capture_output=True,
                              timeout=timeout, env=environment())
    except subprocess.TimeoutExpired:
        return [], [Skipped(env.name, f"listing its targets took more than {timeout:g} s")]
    if done.returncode != 0:
        tail = " ".join(done.stderr.decode("utf-8", "replace").strip().splitlines()[-2:])[:400]
        return [], [Skipped(env.name, f"listing its targets failed (exit status {done.returncode}): {tail}")]
    answer = pickle.loads(done.stdout)  # noqa: S301 - our own child's answer, plain values only
    targets = []
    for t in answer["targets"]:
        inner = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in t["ref_kwargs"])
        ref = RuntimeRef("conformance.history.proxy:EnvRuntime",
                         (("python", env.python), ("path", t["ref_path"]), ("kwargs", inner),
                          ("name", t["runtime"]), ("version", t["version"]), ("format", t["format"])))
        targets.append(Target(t["runtime"], t["version"], t["device"], t["config"], t["spec"], ref,
                              format=t["format"], description=f"{t['description']} (environment {env.folder})",
                              precision=t.get("precision", ""), configuration=t.get("configuration", {}),
                              family=t.get("family", ""), gates=t.get("gates", {})))  # the proxy takes one program per call
    skipped = [Skipped(f"{env.name} {name}", reason) for name, reason in answer["skipped"]]
    return targets, skipped
