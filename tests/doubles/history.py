"""Test doubles for `conformance history` (tests/corpus/test_history.py): *releases* of a runtime named
``double``, each a module ``history_double`` written into an environment of its own, that compute
with ``onnx.reference`` and differ on purpose (:data:`BEHAVIOURS`):

- 0.7 runs with the suite's adapter missing a module it imports when it runs (an ImportError):
  every target is left out, so its environment is broken;
- 0.8 crashes (SIGSEGV) on every call: every probe crashes, so its environment is broken;
- 0.9 is a release built for another numpy: its import prints numpy's "compiled using NumPy 1.x"
  message and a ``SystemError`` and still succeeds (exit status 0), and every call crashes;
- 1.0 refuses opset 22 (a release that predates it: a version gate) and layout 1;
- 2.0 accepts both, and negates Y and Y_h of a bidirectional RNN (a divergence that appears);
- 2.2 computes everything right;
- 2.5 gets a bidirectional RNN wrong in alternating ways: wrong numbers in one run, a crash in the
  next (stale memory that is sometimes garbage, sometimes a bad pointer); it fails every time;
- 2.7 gets a bidirectional RNN wrong in one run and right in the next (unstable);
- 2.1, 2.3 and 2.4 also take ``shape=dynamic`` (a ``load`` whose model runs at several shapes): 2.3's
  loaded model gets every call after its first wrong (negated), 2.1 and 2.4 compute everything right;
- 3.0 refuses layout 1 again (a regression), computes bidirectional right again (fixed), and dies
  by SIGSEGV on a forward RNN in layout 0 (a crash costs that pair only).

The alternating releases count the runs of each program in a file beside the module: the first
call of a program in a process decides, and the process's later calls of it do the same (the
worker runs a cheap call twice to catch undefined elements).
"""

from __future__ import annotations

import sysconfig
import textwrap
import venv
from pathlib import Path

from conformance.history.environments import Env

BEHAVIOURS = {
    "0.7": {"adapter_cannot_import"},
    "0.8": {"crash_all"},
    "0.9": {"import_systemerror", "crash_all"},
    "1.0": {"no_opset22", "no_layout1"},
    "2.0": {"negate_bidirectional"},
    "2.1": {"forms"},
    "2.2": set(),
    "2.3": {"forms", "dynamic_later_calls_wrong"},
    "2.4": {"forms"},
    "2.5": {"alternate_crash_bidirectional"},
    "2.7": {"alternate_pass_bidirectional"},
    "3.0": {"no_layout1", "crash_forward_rnn"},
}

SOURCE = '''
"""A test double of a runtime release (tests/doubles/history.py); not a runtime."""
import hashlib
import os
import signal
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from conformance.runtimes.base import RuntimeRef, RuntimeRejected, Target

VERSION = "{version}"
BEHAVIOUR = {behaviour!r}
RUNS = Path(__file__).with_name("history_double_runs")

if "import_systemerror" in BEHAVIOUR:   # what a module built against numpy 1 prints under numpy 2
    sys.stderr.write("A module that was compiled using NumPy 1.x cannot be run in\\n"
                     "NumPy 2.4.6 as it may crash.\\n"
                     "AttributeError: _ARRAY_API not found\\n"
                     "ImportError: numpy.core.multiarray failed to import\\n\\n"
                     "The above exception was the direct cause of the following exception:\\n\\n"
                     "SystemError: <built-in function __import__> returned a result with an exception set\\n")

_decided = {{}}


def _run_number(model) -> int:
    """How many times this program was run before, in any process (the first call in this process decides)."""
    key = hashlib.sha256(model).hexdigest()[:16]
    if key not in _decided:
        RUNS.mkdir(exist_ok=True)
        with open(RUNS / key, "ab+") as f:
            f.seek(0)
            _decided[key] = len(f.read())
            f.write(b"x")
    return _decided[key]


class Double:
    name = "double"
    format = "onnx"
    version = VERSION

    def run(self, model, feeds):
        if "adapter_cannot_import" in BEHAVIOUR:
            import a_module_this_environment_lacks  # noqa: F401
        if "crash_all" in BEHAVIOUR:
            os.kill(os.getpid(), signal.SIGSEGV)
        m = onnx.load_from_string(model)
        opset = m.opset_import[0].version
        node = m.graph.node[0]
        attrs = {{a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}}
        layout = attrs.get("layout", 0)
        direction = attrs.get("direction", b"forward").decode()
        if "no_opset22" in BEHAVIOUR and opset >= 22:
            raise RuntimeRejected("release 1.0 knows opsets up to 21")
        if "no_layout1" in BEHAVIOUR and layout == 1:
            raise RuntimeRejected("layout 1 is not supported")
        if "crash_forward_rnn" in BEHAVIOUR and node.op_type == "RNN" and layout == 0 and direction == "forward":
            os.kill(os.getpid(), signal.SIGSEGV)
        outputs = ReferenceEvaluator(m).run(None, feeds)
        wrong = "negate_bidirectional" in BEHAVIOUR
        if direction == "bidirectional" and "alternate_crash_bidirectional" in BEHAVIOUR:
            if _run_number(model) % 2 == 0:
                os.kill(os.getpid(), signal.SIGSEGV)
            wrong = True
        if direction == "bidirectional" and "alternate_pass_bidirectional" in BEHAVIOUR:
            wrong = _run_number(model) % 2 == 0
        if wrong and direction == "bidirectional":
            outputs = [-np.asarray(o) for o in outputs]
        return outputs


    def load(self, model):
        return _Loaded(self, model)


class _Loaded:
    """A model loaded once and run at the shapes its symbolic dimensions admit."""

    def __init__(self, runtime, model):
        self.runtime, self.model, self.calls = runtime, model, 0

    def run(self, feeds):
        outputs = self.runtime.run(self.model, feeds)
        self.calls += 1
        if "dynamic_later_calls_wrong" in BEHAVIOUR and self.calls > 1:
            outputs = [-np.asarray(o) for o in outputs]
        return outputs


def targets(specs_by_format):
    ref = RuntimeRef("history_double:Double")
    configs = ["default"] + (["shape=dynamic"] if "forms" in BEHAVIOUR else [])
    return [Target("double", VERSION, "CPU", config, spec, ref, description="a test double with releases",
                   forms={{"shape": ["dynamic"]}} if "forms" in BEHAVIOUR else {{}})
            for config in configs for spec in specs_by_format.get("onnx", [])], []
'''


def make_release(root: Path, version: str) -> Env:
    """An environment holding release ``version`` of the double (:data:`BEHAVIOURS`): a virtual
    environment whose ``history_double`` module is that release, reading numpy and onnx from this
    interpreter's packages (no package index needed)."""
    folder = root / f"double-{version}"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = folder / "bin" / "python"
    site = next(folder.glob("lib/python3*/site-packages"))
    (site / "history_double.py").write_text(
        textwrap.dedent(SOURCE.format(version=version, behaviour=sorted(BEHAVIOURS[version]))))
    (site / "parent_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    from conformance.history.environments import _link_suite
    _link_suite(folder, python)
    return Env("double", version, folder, python=str(python), modules=("history_double",))
