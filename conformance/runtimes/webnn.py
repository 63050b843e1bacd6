"""The ``webnn`` runtime: WebNN graph documents replayed in a real Chromium (Chrome, Edge) through
Playwright.

**Targets.** One per ``deviceType`` for which ``navigator.ml.createContext()`` succeeds in the
browser :mod:`conformance.runtimes.webnn_browser` finds (a browser that no longer reads
``deviceType``, as the specification since webmachinelearning/webnn#809, gets one ``default``
target), for every WebNN spec version. No usable browser, or no Playwright: a declared gap with the
reason, never a failed run.

**Calls.** Each worker keeps one browser and one page alive for its whole life. The page is the
repository's ``conformance/specs/webnn/replay.html``, served at ``http://localhost/`` through
``page.route`` (WebNN needs a secure context; no server, no network). A call sends the document as
text in one ``page.evaluate`` round trip; the page builds the graph, dispatches it, reads the
outputs back and answers with them (base64) and its build/compute times. ``run_many`` sends many
documents in one round trip: the target takes batches of ``BATCH`` pairs (conformance/run/batches.py
runs a pair that is not ``pass`` in a batch again alone).

**What a call may cost.** The page catches WebNN's own exceptions (a refusal: ``RuntimeRejected``
naming the case's file:line, the stage and the browser's message, and the document's own
violations). Anything else is the browser failing: a renderer crash (``Page.crash``), a browser
that died or closed its pipe. The worker then writes what happened to its output and exits
(status 70): the pair is a ``crash``, and the next pair starts a fresh worker with a fresh browser.
A renderer that hangs never answers: the pool's ``--timeout`` kills the worker's process group,
and Playwright's driver with it; the browser, started by the driver in a session of its own, exits
when the driver's pipe closes (docs/webnn.md). Either way one verdict is lost, nothing else.
"""

from __future__ import annotations

import base64
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

from conformance.runtimes.base import RuntimeRejected

ORIGIN = "http://localhost"
PAGE = ORIGIN + "/replay.html"
#: the worker's exit status when the browser failed under a call (a crash verdict)
BROWSER_DIED = 70
#: documents per page round trip (the suite's batches for a WebNN target: Target.batch)
BATCH = 32
#: documents of a batch the page replays at once (replay.html replayBatch): while one awaits its
#: build or its read, the next builds; each has its own graph and tensors
IN_FLIGHT = 4
DESCRIPTION = ("WebNN graph documents replayed in {browser} through Playwright "
               "(conformance/specs/webnn/replay.html served at http://localhost)")

#: the backend a Chromium build uses for WebNN, by platform (Chromium's services/webnn: tflite on
#: Linux, ChromeOS and Android; DirectML / Windows ML on Windows; Core ML on macOS)
BACKENDS = {"Linux": "LiteRT (TFLite) with XNNPACK", "Windows": "DirectML / Windows ML",
            "Darwin": "Core ML"}


def replay_page() -> str:
    from conformance.specs.webnn import REPLAY_PAGE
    return REPLAY_PAGE.read_text()


class Session:
    """One browser and one page with the replay page loaded (Playwright's sync API)."""

    def __init__(self, executable: str):
        from playwright.sync_api import sync_playwright

        from conformance.runtimes.webnn_browser import FLAGS
        self.executable = executable
        self._playwright = sync_playwright().start()
        self.browser = self._playwright.chromium.launch(executable_path=executable, args=list(FLAGS))
        self.page = self.browser.new_page()
        body = replay_page()
        self.page.route(ORIGIN + "/**", lambda route: route.fulfill(
            status=200, content_type="text/html; charset=utf-8", body=body))
        self.page.goto(PAGE)
        self.version = self.browser.version

    def evaluate(self, script: str, arg=None):
        return self.page.evaluate(script, arg)

    def close(self) -> None:
        for step in (self.browser.close, self._playwright.stop):
            try:
                step()
            except Exception:  # noqa: BLE001, S110 - closing a browser that already died
                pass


def probe_browser(executable: str, device_types=None) -> dict:
    """What WebNN this browser offers (run by webnn_browser.probe in a process of its own)."""
    from conformance.runtimes.webnn_browser import DEVICE_TYPES
    try:
        session = Session(executable)
    except Exception as exc:  # noqa: BLE001 - a browser that does not start is an answer too
        return {"error": f"the browser did not start: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"}
    try:
        facts = session.evaluate("(types) => webnnProbe(types)", list(device_types or DEVICE_TYPES))
        facts["version"] = session.version
        facts["executable"] = executable
        facts["platform"] = platform.system()
        facts["backend"] = BACKENDS.get(platform.system(), "unknown")
        return facts
    finally:
        session.close()


class WebNN:
    """A WebNN target: ``run(document_path, feeds)`` replays the written document in the browser."""

    name = "webnn"
    format = "webnn"

    def __init__(self, executable: str = "", device: str = "default", context_options: str = "{}",
                 version: str = "", facts: str = "{}"):
        self.executable = executable
        self.device = device
        self.context_options = json.loads(context_options)
        self.version = version
        self.config = "default"
        self._facts = json.loads(facts)
        self._session: Session | None = None

    # -- the runtime contract --------------------------------------------------------------------

    def run(self, model, feeds: dict) -> list[np.ndarray]:
        if feeds:
            raise RuntimeRejected(f"a WebNN document carries its inputs; unexpected feeds {sorted(feeds)}")
        return self.run_batch([model])[0]

    def describe(self) -> dict:
        """The WebNN probe's answer: browser, backend, the context's opSupportLimits() for the four
        operators (recorded in run.json as the target's configuration)."""
        context = self._facts.get("contexts", {}).get(self.device.lower(), {})
        return {"browser": self._facts.get("version", ""), "executable": self.executable,
                "backend": self._facts.get("backend", ""), "platform": self._facts.get("platform", ""),
                "deviceType": self.device.lower(), "contextOptions": self.context_options,
                "accelerated": context.get("accelerated"),
                "opSupportLimits": context.get("opSupportLimits", {}),
                "contextOptionsRead": self._facts.get("contextOptionsRead", [])}

    def effective(self) -> dict:
        return {"deviceType": self.device.lower(), "backend": self._facts.get("backend", "")}

    # -- batches ----------------------------------------------------------------------------------

    def run_many(self, items: list) -> list:
        """The runtime contract's optional batch call: ``(model, feeds)`` items in one round trip."""
        if any(feeds for _, feeds in items):
            raise RuntimeRejected("a WebNN document carries its inputs; unexpected feeds")
        return self.run_batch([model for model, _ in items])

    def run_batch(self, models: list) -> list:
        """Replay several documents in one round trip: each answer is the outputs (a list of
        arrays), or raised as RuntimeRejected for a single document."""
        texts = [Path(model).read_text() if not isinstance(model, (bytes, bytearray)) else model.decode()
                 for model in models]
        answers = self._evaluate("([texts, options, width]) => replayBatch(texts, options, width)",
                                 [texts, self.context_options, IN_FLIGHT])
        results: list[list[np.ndarray] | RuntimeRejected] = []
        for text, answer in zip(texts, answers):
            if not answer.get("ok"):  # the document is read here only for its source and violations
                refusal = _refusal(json.loads(text), answer)
                if len(models) == 1:
                    raise RuntimeRejected(refusal)
                results.append(RuntimeRejected(refusal))
                continue
            results.append([_array(o) for o in answer["outputs"]])
        return results

    def timings(self, models: list) -> list[dict]:
        """The page's own build and compute times (ms) for each document: the bare WebNN calls."""
        texts = [Path(m).read_text() for m in models]
        answers = self._evaluate("([texts, options]) => replayBatch(texts, options, 1)", [texts, self.context_options])
        return [{"build_ms": a.get("build_ms"), "compute_ms": a.get("compute_ms"), "ok": a.get("ok")}
                for a in answers]

    def _evaluate(self, script: str, arg):
        try:
            if self._session is None:
                self._session = Session(self.executable)
            return self._session.evaluate(script, arg)
        except Exception as exc:  # noqa: BLE001 - the page catches WebNN's errors: this is the browser
            self._browser_failed(exc)

    def _browser_failed(self, exc: Exception) -> None:
        """The renderer crashed, or the browser died: say so and end the worker (a crash verdict)."""
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"webnn: the browser failed under this call ({type(exc).__name__}: {text}); "
              f"ending the worker so that the next call gets a fresh browser", file=sys.stderr, flush=True)
        try:
            if self._session is not None:
                self._session.close()
        finally:
            os._exit(BROWSER_DIED)


def _array(output: dict) -> np.ndarray:
    from conformance.specs.webnn.vocabulary import NUMPY
    raw = base64.b64decode(output["data"])
    return np.frombuffer(raw, dtype=np.dtype(NUMPY[output["dataType"]])).astype(
        np.dtype(NUMPY[output["dataType"]]).newbyteorder("=")).reshape(output["shape"])


def _refusal(document: dict, answer: dict) -> str:
    where = f"{document['source']}: " if document.get("source") else ""
    text = f"{where}WebNN refused the graph ({answer.get('stage', '?')}): {answer.get('error', '?')}"
    violations = document.get("violations") or []
    if violations:
        text += f"; the document breaks {len(violations)} rule(s) of the method steps: " + "; ".join(violations)
    return text


def targets(specs_by_format: dict):
    """One target per deviceType whose context works, for every WebNN spec; else a declared gap."""
    from conformance.runtimes.webnn_browser import NoBrowser, find
    specs = specs_by_format.get("webnn", [])
    if not specs:
        return [], []
    try:
        import playwright  # noqa: F401
    except ImportError as exc:
        return [], [("webnn", f"Playwright for Python is not installed here ({exc}); pip install -c "
                              "constraints.txt -e '.[runtimes]'")]
    try:
        browser = find()
    except NoBrowser as exc:
        return [], [("webnn", str(exc))]
    wanted = [d.strip().lower() for d in os.environ.get(DEVICES_ENV, "").split(",") if d.strip()]
    return targets_in(browser, specs, wanted)


def targets_in(browser, specs: list[str], wanted: list[str]) -> tuple[list, list]:
    """(targets, gaps) in ``browser`` (conformance/runtimes/webnn_browser.py ``Browser``: its path and
    its probe's facts): a target per deviceType whose context works and, unless ``wanted`` names the
    deviceTypes to make targets of, reports something the cpu context does not; a gap, with its reason,
    per deviceType that rejects its context (a browser without a GPU rejects ``gpu``) or is folded into
    CPU."""
    from conformance.runtimes.base import RuntimeRef, Target
    facts = browser.facts
    reads_device = "deviceType" in facts.get("contextOptionsRead", [])
    found, gaps = [], []
    name = _browser_name(facts.get("version", ""), browser.path)
    contexts = facts.get("contexts", {})
    for device, context in contexts.items():
        if not context.get("ok"):
            gaps.append(("webnn", f"{name}: createContext({json.dumps(context.get('options', {}))}) for "
                                  f"deviceType {device!r} rejects: {context.get('error', '?')}"))
            continue
        if wanted and device not in wanted:
            continue
        if not wanted and reads_device and device != "cpu" and same_as_cpu(context, contexts.get("cpu")):
            gaps.append(("webnn", f"{name}: deviceType {device!r} folded into CPU: its context reports nothing the "
                                  f"cpu context does not (not accelerated, the same opSupportLimits), so it runs on "
                                  f"the same {facts.get('backend') or 'backend'} (docs/webnn.md: every verdict and "
                                  f"error identical, measured); {DEVICES_ENV}=cpu,{device} makes it a target"))
            continue
        label = device.upper() if reads_device else "default"
        kwargs = (("executable", browser.path), ("device", label),
                  ("context_options", json.dumps(context.get("options", {}))),
                  ("version", name), ("facts", json.dumps(facts)))
        ref = RuntimeRef("conformance.runtimes.webnn:WebNN", kwargs=kwargs)
        found += [Target("webnn", name, label, "default", spec, ref, format="webnn", batch=BATCH,
                         description=DESCRIPTION.format(browser=f"{name} ({browser.how}: {browser.path})"))
                  for spec in specs]
        if not reads_device:
            gaps.append(("webnn", f"{name} reads no deviceType (MLContextOptions has none since "
                                  "webmachinelearning/webnn#809): one default context"))
            break
    return found, gaps


#: the deviceTypes to make targets of (``cpu,gpu,npu``), instead of folding into CPU those whose
#: context reports nothing of its own
DEVICES_ENV = "CONFORMANCE_WEBNN_DEVICES"


def same_as_cpu(context: dict, cpu: dict | None) -> bool:
    """Whether a deviceType's context tells nothing apart from the cpu context's: not reported as
    accelerated, and the same opSupportLimits and preferred input layout (Chromium on Linux without
    a GPU: LiteRT's XNNPACK CPU delegate for every deviceType)."""
    if not cpu or not cpu.get("ok") or context.get("accelerated") is True:
        return False
    return all(context.get(k) == cpu.get(k) for k in ("opSupportLimits", "preferredInputLayout"))


def _browser_name(version: str, path: str) -> str:
    """``chromium-153.0.8010.0``, ``chrome-...``, ``edge-...`` from the browser's version string."""
    lowered = (path + " " + version).lower()
    kind = "edge" if "edge" in lowered or "msedge" in lowered else "chrome" if "chrome" in Path(path).name.lower() \
        else "chromium"
    number = version.split("/")[-1] if version else "unknown"
    return f"{kind}-{number}"
