"""A test double: a WebNN runtime whose browser misbehaves on chosen cases (tests/runtime/test_webnn.py): the
renderer is crashed through the DevTools protocol's ``Page.crash``, or the page spins forever.

Which cases: the environment variables ``WEBNN_SABOTAGE_CRASH`` and ``WEBNN_SABOTAGE_HANG`` each
hold a substring of a case id (the workers inherit them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from conformance.runtimes.webnn import Session, WebNN
from conformance.runtimes.webnn_browser import find


class Sabotaged(WebNN):
    name = "webnn-sabotaged"

    def __init__(self):
        browser = find()
        device, context = next((d, c) for d, c in browser.facts["contexts"].items() if c.get("ok"))
        super().__init__(browser.path, device.upper(), json.dumps(context.get("options", {})),
                         "sabotaged", json.dumps(browser.facts))

    def run(self, model, feeds):
        self._sabotage(model)
        return super().run(model, feeds)

    def _sabotage(self, model) -> None:
        case = json.loads(Path(model).read_text())["case"]
        crash, hang = os.environ.get("WEBNN_SABOTAGE_CRASH"), os.environ.get("WEBNN_SABOTAGE_HANG")
        if crash and crash in case:
            self._crash_renderer()
        if hang and hang in case:
            self._evaluate("() => { for (;;) {} }", None)

    def _crash_renderer(self) -> None:
        if self._session is None:
            self._session = Session(self.executable)
        page = self._session.page
        cdp = page.context.new_cdp_session(page)
        try:
            cdp.send("Page.crash", timeout=3000)  # the target dies before it answers
        except Exception:  # noqa: BLE001, S110 - the answer never comes: the renderer is gone
            pass


class SabotagedInBatches(Sabotaged):
    """The same sabotage, with the pairs sent in batches of 4 documents per round trip: the crash
    or the hang takes its whole batch down, and the suite runs that batch's pairs again alone."""

    name = "webnn-sabotaged-batched"
    batch = 4

    def run_many(self, items):
        for model, _ in items:
            self._sabotage(model)
        return super().run_many(items)
