"""Test doubles for `conformance history` (tests/test_history.py): three *releases* of a runtime named
``double``, each a module ``history_double`` written into an environment of its own, that compute
with ``onnx.reference`` and differ on purpose:

- 1.0 refuses opset 22 (a release that predates it: a version gate) and layout 1;
- 2.0 accepts both, and negates Y and Y_h of a bidirectional RNN (a divergence that appears);
- 3.0 refuses layout 1 again (a regression), computes bidirectional right again (fixed), and dies
  by SIGSEGV on a forward RNN in layout 0 (a crash costs that pair only).
"""

from __future__ import annotations

import sysconfig
import textwrap
import venv
from pathlib import Path

from conformance.history.environments import Env

SOURCE = '''
"""A test double of a runtime release (tests/history_doubles.py); not a runtime."""
import os
import signal

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from conformance.runtimes.base import RuntimeRef, RuntimeRejected, Target

VERSION = "{version}"


class Double:
    name = "double"
    format = "onnx"
    version = VERSION

    def run(self, model, feeds):
        m = onnx.load_from_string(model)
        opset = m.opset_import[0].version
        node = m.graph.node[0]
        attrs = {{a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}}
        layout = attrs.get("layout", 0)
        direction = attrs.get("direction", b"forward").decode()
        if VERSION == "1.0" and opset >= 22:
            raise RuntimeRejected("release 1.0 knows opsets up to 21")
        if VERSION in ("1.0", "3.0") and layout == 1:
            raise RuntimeRejected("layout 1 is not supported")
        if VERSION == "3.0" and layout == 0 and direction == "forward":
            os.kill(os.getpid(), signal.SIGSEGV)
        outputs = ReferenceEvaluator(m).run(None, feeds)
        if VERSION == "2.0" and direction == "bidirectional":
            outputs = [-np.asarray(o) for o in outputs]
        return outputs


def targets(specs_by_format):
    ref = RuntimeRef("history_double:Double")
    return [Target("double", VERSION, "CPU", "default", spec, ref, description="a test double with releases")
            for spec in specs_by_format.get("onnx", [])], []
'''


def make_release(root: Path, version: str) -> Env:
    """An environment holding release ``version`` of the double: a virtual environment whose
    ``history_double`` module is that release, reading numpy and onnx from this interpreter's
    packages (no package index needed)."""
    folder = root / f"double-{version}"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = folder / "bin" / "python"
    site = next(folder.glob("lib/python3*/site-packages"))
    (site / "history_double.py").write_text(textwrap.dedent(SOURCE.format(version=version)))
    (site / "parent_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    from conformance.history.environments import _link_suite
    _link_suite(folder, python)
    return Env("double", version, folder, python=str(python), modules=("history_double",))
