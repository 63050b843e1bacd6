"""The suite's side of a release's environment: a runtime whose calls run in that environment's
interpreter (:mod:`conformance.history.remote`).

:class:`EnvRuntime` lives in an ordinary worker process (conformance/isolation/workers.py), so the
timeout, the memory limit and the process-group kill apply to it and to the interpreter it starts,
which is its child in the same group. When that interpreter dies, this worker dies with the same
signal, so the pair is a ``crash`` as it would be with the runtime in the worker itself.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys

from conformance.history.remote import PROTOCOL, pack, unpack
from conformance.isolation.serve import NO_INSTALL
from conformance.runtimes.base import RuntimeRejected


def environment() -> dict:
    """The environment of a release's interpreter: this one's, without what would import the
    suite's own packages there (PYTHONPATH, PYTHONHOME), and unable to install packages."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(NO_INSTALL)
    env["PYTHONNOUSERSITE"] = "1"
    return env


class EnvRuntime:
    """The runtime ``path`` (``module:attr`` with ``kwargs``) built by the interpreter ``python``. A
pair's plan of calls (an execution form: conformance/isolation/plans.py) goes there whole
(:meth:`run_plan`), so a loaded model is reused, and threads run at once, in the release itself."""

    def __init__(self, python: str, path: str, kwargs: tuple = (), name: str = "", version: str = "",
                 format: str = "onnx"):
        self.python, self.adapter, self.kwargs = python, path, kwargs
        self.name, self.version, self.format = name, version, format
        self._proc: subprocess.Popen | None = None
        self._start()

    def _start(self) -> None:
        self._proc = subprocess.Popen(
            [self.python, "-s", "-m", "conformance.history.remote", "serve", self.adapter,
             json.dumps([list(kv) for kv in self.kwargs])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=environment())
        hello = self._read()
        if hello["status"] != "ok":
            raise RuntimeError(f"{self.adapter} could not be built in {self.python}: {hello['error']}")

    def _read(self) -> dict:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            return pickle.load(self._proc.stdout)
        except (EOFError, pickle.UnpicklingError, OSError):
            self._died()
            raise  # not reached: _died ends this process

    def _died(self) -> None:
        """The release's interpreter ended without answering: end this worker the same way."""
        assert self._proc is not None
        code = self._proc.wait()
        sys.stderr.write(f"the runtime's interpreter {self.python} ended with status {code}\n")
        sys.stderr.flush()
        if code < 0:
            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code if code > 0 else 70)

    def _call(self, request: dict):
        assert self._proc is not None and self._proc.stdin is not None
        try:
            pickle.dump(request, self._proc.stdin, protocol=PROTOCOL)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._died()
        answer = self._read()
        if answer["status"] == "rejected":
            raise RuntimeRejected(answer["error"], stage=answer.get("stage") or "")
        if answer["status"] != "ok":  # the release's own exception, under its own name
            name, _, text = answer["error"].partition(": ")
            sys.stderr.write(answer.get("detail", ""))
            raise type(name if name.isidentifier() else "RuntimeError", (RuntimeError,), {})(text)
        return answer["value"]

    def run(self, model, feeds: dict) -> list:
        outputs = self._call({"op": "run", "model": bytes(model) if not isinstance(model, str) else model,
                              "feeds": {k: pack(v) for k, v in feeds.items()}})
        return [unpack(o) for o in outputs]

    def run_plan(self, plan):
        """``plan`` run by the release's interpreter, as a worker runs it (conformance/isolation/serve.py
        sends a plan job here instead of running its calls one by one through :meth:`run`)."""
        from conformance.history.remote import plan_request
        from conformance.isolation.plans import Answer
        done = self._call({"op": "plan", "plan": plan_request(plan)})
        return Answer([(status, None if outputs is None else [unpack(o) for o in outputs], error)
                       for status, outputs, error in done["calls"]], done["loaded_by"], done["effective"] or {})

    def effective(self) -> dict:
        return self._call({"op": "effective"}) or {}

    def path(self) -> dict:
        """The path the release's last call took (the adapter's ``path()``), where it reports one."""
        return self._call({"op": "path"}) or {}

    def describe(self) -> dict:
        return {**(self._call({"op": "describe"}) or {}), "python": self.python}

    def artefacts(self) -> dict:
        return self._call({"op": "artefacts"}) or {}
