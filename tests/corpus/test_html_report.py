"""The HTML report, JUnit XML and Markdown summary, built from a real run (onnxruntime and the
known-wrong GRU test double) and looked at in a real headless Chromium over the DevTools protocol.

Chromium is required, not optional: CI installs it (`apt-get install -y chromium`). Screenshots go
to reports/screenshots/ (report.png, case.png, family.png).

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/unit/test_html_report.py."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.compare.verdicts import COLOURS
from conformance.report.html import render
from conformance.report.markdown import summary
from conformance.report.view import slug
from conformance.results import records_of
from conformance.run import read_results
from tests.calibration import budget
from tests.conftest import DATA, ROOT, conformance
from tests.unit.test_html_report import XSS, record

SHOTS = ROOT / "reports" / "screenshots"
INSTALL = "apt-get update && apt-get install -y chromium"
WRONG = "wrong-gru-gate-order"


# ------------------------------------------------------------------------------ a tiny CDP client

def chromium_path() -> str:
    """A headless Chromium: one on PATH, else the one `nox` installs for WebNN (where npm is present:
    conformance/runtimes/webnn_browser.py), so the quick start's two commands need nothing more."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    from conformance.runtimes.webnn_browser import installed_path
    if installed_path().is_file():
        return str(installed_path())
    pytest.fail(f"Chromium is needed to check the HTML report and was found neither on PATH nor in "
                f"{installed_path()} (`nox -s tests` installs it there where npm is present). Install it: {INSTALL}",
                pytrace=False)


class Chromium:
    """Headless Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe: commands
    on fd 3, replies on fd 4, each a JSON message ending in NUL). Standard library only."""

    FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", "--remote-debugging-pipe")

    def __init__(self, exe: str, timeout: float = 30.0):
        self.timeout = budget(timeout)   # a bound on a hang, scaled by the machine's load now
        self.profile = tempfile.mkdtemp(prefix="conformance-chromium-")
        child_in, self._out = os.pipe()
        self._in, child_out = os.pipe()

        def wire():  # in the child, before exec: the protocol's descriptors become fds 3 and 4
            a, b = os.dup(child_in), os.dup(child_out)  # above 4, so neither dup2 overwrites the other
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen([exe, *self.FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     preexec_fn=wire, close_fds=False,  # noqa: PLW1509 (no threads here) stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(child_in)
        os.close(child_out)
        self._buf, self._id, self.events = b"", 0, []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", page=True)
        self.call("Runtime.enable", page=True)

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            if select.select([self._in], [], [], left)[0]:
                chunk = os.read(self._in, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe (did it start? try it by hand: "
                                       "chromium --headless --no-sandbox about:blank)")
                self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method: str, page: bool = False, **params) -> dict:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if page:
            msg["sessionId"] = self.session
        os.write(self._out, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._message(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _wait(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._message(deadline))

    def open(self, url: str, width: int = 1400, height: int = 1000) -> None:
        self.call("Emulation.setDeviceMetricsOverride", page=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        # each open is a fresh load, as a user opening the link (the same page with another
        # fragment would otherwise be a same-document navigation, with no load)
        for target in ("about:blank", url):
            self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
            self.call("Page.navigate", page=True, url=target)
            self._wait("Page.loadEventFired")

    def js(self, expression: str):
        res = self.call("Runtime.evaluate", page=True, expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise AssertionError(f"{expression}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def screenshot(self, path: Path, max_height: int = 3000) -> None:
        width = self.js("document.documentElement.scrollWidth")
        height = min(max_height, self.js("document.documentElement.scrollHeight"))
        data = self.call("Page.captureScreenshot", page=True, format="png", captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def dialogs(self) -> list:
        return [e for e in self.events if e.get("method") == "Page.javascriptDialogOpening"]

    def script_errors(self) -> list:
        return [e["params"]["exceptionDetails"] for e in self.events if e.get("method") == "Runtime.exceptionThrown"]

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):   # it may be gone already
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._out, self._in):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)


# ------------------------------------------------------------------------------------ the report

CASES = {
    "gru/small.yaml": (DATA / "cases" / "gru" / "small.yaml").read_text(),
    "lstm/tiny.yaml": """\
op: LSTM
clause: ONNX LSTM-22 outputs
description: a tiny LSTM, so that the matrix has a second op
attributes: {hidden_size: 2}
shape: {seq_length: 3, batch_size: 1, input_size: 2}
inputs: {seed: 5, B: random}
""",
    "gru/escaping.yaml": f"""\
op: GRU
clause: "ONNX GRU-22 {XSS}"
description: "{XSS}"
attributes: {{hidden_size: 2}}
shape: {{seq_length: 2, batch_size: 1, input_size: 2}}
inputs: {{seed: 9, B: random}}
""",
}
EXPECTATIONS = f"""\
targets: "{WRONG}*"
entries:
  - cases: "gru/small[direction=reverse]"
    kind: known-bug
    reason: the test double swaps the z and r gates
    link: https://example.invalid/issues/1
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A real run of 4 cases on onnxruntime and the known-wrong GRU (ONNX 14 and 22), with an
    expectation for one case, then `conformance report`."""
    tmp = tmp_path_factory.mktemp("report")
    for name, text in CASES.items():
        (tmp / "cases" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "cases" / name).write_text(text)
    (tmp / "expected.yaml").write_text(EXPECTATIONS)
    out = tmp / "out"
    conformance("run", tmp / "cases", "--spec", "onnx-14", "--spec", "onnx-22", "--runtime", "onnxruntime",
                "--runtime", WRONG, "--runtime-plugin", "tests.doubles.plugins:WrongGateOrderGRU",
                "--expectations", tmp / "expected.yaml", "--out", out, "-q", "--artifacts", "failing", check=1)
    results = out / "results.jsonl"
    records = read_results(results)
    # results carry the generated one-line summary as `description`; the case file's own prose is
    # what a user writes, so put it there where the record lacks it: the page must escape it
    for r in records:
        if r["case"] == "gru/escaping" and XSS not in r.get("description", ""):
            r["description"] = XSS
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    proc = conformance("report", out, "--out", tmp / "report", "--artifacts", "failing", check=0)
    assert "wrote" in proc.stdout
    return {"tmp": tmp, "out": out, "report": tmp / "report", "records": records}


@pytest.fixture(scope="module")
def browser():
    b = Chromium(chromium_path())
    yield b
    b.close()


def url(path: Path, fragment: str = "") -> str:
    return path.resolve().as_uri() + fragment


def rgb(hex_colour: str) -> str:
    h = hex_colour.lstrip("#")
    return "rgb({}, {}, {})".format(*(int(h[i:i + 2], 16) for i in (0, 2, 4)))


def test_the_run_writes_every_output(built):
    rep = built["report"]
    for name in ("index.html", "junit.xml", "summary.md"):
        assert (rep / name).is_file(), name
    failing = {r["case"] for r in built["records"] if r["verdict"] == "fail"}
    assert failing == {"gru/small[direction=forward]", "gru/small[direction=reverse]", "gru/escaping"}
    new = {r["case"] for r in built["records"] if r.get("gate") == "new"}
    assert new == {"gru/small[direction=forward]", "gru/escaping"}
    pages = sorted(p.name for p in (rep / "cases").glob("*.html"))
    # by default (--artifacts failing) a page per case with a divergence the gate does not excuse
    assert pages == sorted(f"{slug(c)}.html" for c in new)
    assert (built["out"] / "clusters.json").is_file()
    # results.jsonl: the new pairs in full; the other targets of their cases keep their plot (the
    # page compares every target); every other pair is a summary the gate can read
    for r in built["records"]:
        assert r.get("pair_digest") and r.get("verdict") and "features" in r, r
        if r.get("gate") == "new":
            assert "detail" not in r and "worst_elements" in r and r["tolerance"]["source"], r["case"]
        elif r["case"] in new:
            assert r["detail"] == "summary" and "worst_elements" not in r and r["error_by_step"], r["case"]
        else:
            assert r["detail"] == "summary" and "worst_elements" not in r and "error_by_step" not in r
    known = next(r for r in built["records"] if r["gate"] == "expected")
    assert known["message"] and "repro" not in known and known["expected"]["where"].endswith("expected.yaml:3")
    programs = sorted(p.name for p in (built["out"] / "programs").iterdir())
    assert len(programs) == 2 and all(p.startswith(("gru_small_direction=forward", "gru_escaping")) for p in programs)


def test_matrix_cells_and_colours(built, browser):
    browser.open(url(built["report"] / "index.html"))
    assert browser.js("document.title").startswith("conformance report")
    heads = browser.js("[...document.querySelectorAll('#matrix thead th.spec')].map(t => t.dataset.target)")
    assert len(heads) == 4 and sum(h.startswith(WRONG) for h in heads) == 2
    # the header groups the spec versions under their runtime
    groups = browser.js("[...document.querySelectorAll('#matrix thead th.rt')].map(t => [t.textContent, t.colSpan])")
    assert [(g[0].split()[0], g[1]) for g in groups] == [("onnxruntime", 2), (WRONG, 2)]
    rows = browser.js("[...document.querySelectorAll('#matrix tr.fam')].map(r => r.querySelector('th').textContent)")
    assert [r.rstrip("0123456789") for r in rows] == ["gru/escaping", "gru/small", "lstm/tiny"]
    cells = browser.js("""[...document.querySelectorAll('#matrix tr.fam')]"""
                       """.map(r => [...r.querySelectorAll('td.cell')].map(
        td => [td.className, getComputedStyle(td).backgroundColor, td.innerText.replace(/\\s+/g, ' ').trim()]))""")
    by_row = dict(zip(["escaping", "small", "tiny"], cells))
    wrong = [i for i, h in enumerate(heads) if h.startswith(WRONG)]
    ort = [i for i, h in enumerate(heads) if not h.startswith(WRONG)]
    for i in ort:
        for row in by_row.values():
            assert "v-pass" in row[i][0] and row[i][1] == rgb(COLOURS["pass"][0]), row[i]
    for i in wrong:
        cls, colour, text = by_row["small"][i]
        assert "v-fail" in cls and colour == rgb(COLOURS["fail"][0]) and text.startswith("fail 2"), by_row["small"][i]
        assert "has-new" in cls                      # the forward case is new; the reverse one expected
        assert "×" in text                           # the worst error ratio
        assert "v-pass" in by_row["tiny"][i][0]      # the wrong GRU runs LSTM right
        assert "has-new" in by_row["escaping"][i][0]
    # the gate: new divergences listed (folded), the expected one with its reason and file:line
    gate = browser.js("document.getElementById('gate').innerText")
    assert "new divergences" in gate
    assert browser.js("document.querySelectorAll('#gate tr.gate-new').length") == 4
    known = browser.js("document.getElementById('known').textContent")
    assert "the test double swaps the z and r gates" in known and "expected.yaml:3" in known
    # clusters from the ablation step, each naming its cause
    assert browser.js("document.querySelectorAll('#clusters .cluster').length") >= 1
    assert "whenever" in browser.js("document.getElementById('clusters').innerText") or \
        "path diverges" in browser.js("document.getElementById('clusters').innerText")
    assert not browser.script_errors()
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.screenshot(SHOTS / "report.png")
    assert (SHOTS / "report.png").stat().st_size > 10_000


def visible_families(browser) -> list[str]:
    return browser.js("""[...document.querySelectorAll('#matrix tr.fam')].filter(r => !r.hidden)
        .map(r => r.querySelector('th a').textContent)""")


def test_filter_state_comes_from_the_hash_and_hides_rows(built, browser):
    index = built["report"] / "index.html"
    browser.open(url(index, "#op=LSTM"))
    assert visible_families(browser) == ["lstm/tiny"]
    browser.open(url(index, "#verdict=fail&op=GRU"))
    assert visible_families(browser) == ["gru/escaping", "gru/small"]
    assert browser.js("document.getElementById('f-verdict').value") == "fail"
    browser.open(url(index, "#verdict=fail&op=LSTM"))
    assert visible_families(browser) == []
    assert browser.js("document.getElementById('f-count').textContent").startswith("showing 0 of 3 families")
    browser.open(url(index, "#spec=onnx-22"))
    shown = browser.js("[...document.querySelectorAll('#matrix thead th.spec')]"
                       ".filter(t => !t.hidden).map(t => t.dataset.spec)")
    assert shown == ["onnx-22", "onnx-22"]
    browser.open(url(index, "#verdict=gate%3Aexpected"))
    assert visible_families(browser) == ["gru/small"]
    # free text matching a target keeps only its columns
    browser.open(url(index, f"#q={WRONG}"))
    assert browser.js("[...document.querySelectorAll('#matrix thead th.spec')].filter(t => !t.hidden).length") == 2


def test_typing_in_the_filter_updates_rows_and_the_hash(built, browser):
    browser.open(url(built["report"] / "index.html"))
    assert len(visible_families(browser)) == 3
    browser.js("""(() => { const q = document.getElementById('f-q'); q.value = 'direction=reverse';
                  q.dispatchEvent(new Event('input', {bubbles: true})); })()""")
    assert visible_families(browser) == ["gru/small"]          # a case id inside the family matches
    assert browser.js("location.hash") == "#q=direction%3Dreverse"
    browser.js("""(() => { const s = document.getElementById('f-op'); s.value = 'LSTM';
                  s.dispatchEvent(new Event('change', {bubbles: true})); })()""")
    assert visible_families(browser) == []
    assert browser.js("location.hash") == "#op=LSTM&q=direction%3Dreverse"
    browser.js("document.getElementById('f-clear').click()")
    assert len(visible_families(browser)) == 3 and browser.js("location.hash") == ""
    # a shared link opened on the page already shown: the hash change applies the filter
    browser.js("location.hash = '#q=lstm'")
    browser.js("new Promise(r => setTimeout(r, 50))")
    assert visible_families(browser) == ["lstm/tiny"]
    assert browser.js("document.getElementById('f-q').value") == "lstm"


def test_case_page_from_the_matrix(built, browser):
    """Matrix cell → family page → case page, with worst elements, the plot and the repro."""
    browser.open(url(built["report"] / "index.html"))
    family_href = browser.js("""[...document.querySelectorAll('#matrix tr.fam')].find(
        r => r.querySelector('th a').textContent === 'gru/small').querySelector('td.v-fail a').href""")
    browser.open(family_href)
    case_id = "gru/small[direction=forward]"
    links = browser.js("[...document.querySelectorAll('a[href*=\"cases/\"]')].map(a => a.href)")
    target = next(h for h in links if slug(case_id) in h)
    browser.screenshot(SHOTS / "family.png")
    browser.open(target)
    assert browser.js("document.querySelector('h1').textContent") == case_id
    browser.screenshot(SHOTS / "case.png")
    wrong = next(r for r in built["records"] if r["case"] == case_id and r["runtime"] == WRONG)
    worst = browser.js("document.getElementById('worst').innerText")
    assert f"{wrong['worst']['got']:.9g}" in worst and f"{wrong['worst']['expected']:.9g}" in worst
    # every element outside its tolerance is shown as such: all of them from the wrong targets
    over = [e for r in built["records"] if r["case"] == case_id
            for elems in (r.get("worst_elements") or {}).values() for e in elems if e["ratio"] > 1]
    assert over and all(r["runtime"] == WRONG for r in built["records"]
                        if r["case"] == case_id and r.get("ratio", 0) > 1)
    assert browser.js("document.querySelectorAll('#worst td.over').length") == len(over)
    # the repro command, copyable, exactly as the record has it
    assert browser.js("document.getElementById('repro-main').textContent") == wrong["repro"]
    browser.js("document.querySelector('button.copy[data-copy=\"repro-main\"]').click()")
    browser.js("new Promise(r => setTimeout(r, 100))")
    assert browser.js("document.querySelector('button.copy[data-copy=\"repro-main\"]').textContent") == "copied"
    # the plot: one series per target with numbers, a tolerance line, a legend
    series = browser.js("[...document.querySelectorAll('svg.plot g.series')].map(g => g.dataset.target)")
    assert sorted(series) == sorted(r["target"] for r in built["records"] if r["case"] == case_id)
    assert browser.js("document.querySelectorAll('svg.plot g.series path.line').length") == 4
    assert browser.js("document.querySelectorAll('svg.plot line.tol').length") == 1
    assert browser.js("document.querySelectorAll('svg.plot .legend-item').length") == 4
    # the judging facts
    text = browser.js("document.body.innerText")
    assert wrong["tolerance"]["source"] in text
    assert all(key in text for key in wrong["oracle"])            # the certificate, every field
    assert "the test double swaps the z and r gates" not in text   # the forward case is new, not expected
    assert not browser.script_errors()


def test_case_text_with_markup_stays_text(built, browser):
    page = built["report"] / "cases" / f"{slug('gru/escaping')}.html"
    html = page.read_text()
    assert XSS not in html and "&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;" in html
    browser.open(url(page))
    assert browser.js("document.querySelectorAll('script').length") == 1        # our own, only
    assert browser.js("[...document.querySelectorAll('b')].filter(b => b.textContent === 'x').length") == 0
    text = browser.js("document.body.innerText")
    assert text.count(XSS) >= 2        # the description and the clause, shown as text
    assert not browser.dialogs()
    for page in ("index.html", f"families/{slug('gru/escaping')}.html"):
        browser.open(url(built["report"] / page))
        assert browser.js("document.querySelectorAll('script').length") == 1
        assert not browser.dialogs()


def test_junit_and_markdown(built):
    tree = ET.parse(built["report"] / "junit.xml")
    suites = {s.get("name"): s for s in tree.getroot().iter("testsuite")}
    assert len(suites) == 4
    wrong = next(s for n, s in suites.items() if n.startswith(WRONG) and n.endswith("onnx-14"))
    cases = {c.get("name"): c for c in wrong.iter("testcase")}
    assert cases["gru/small[direction=forward]"].find("failure") is not None
    assert cases["gru/small[direction=forward]"].get("classname") == "ONNX GRU-22 linear_before_reset"
    skipped = cases["gru/small[direction=reverse]"].find("skipped")
    assert skipped.get("message") == "expected: the test double swaps the z and r gates"
    assert cases["lstm/tiny"].find("failure") is None and cases["lstm/tiny"].find("skipped") is None
    assert wrong.get("failures") == "2" and wrong.get("skipped") == "1" and wrong.get("tests") == "4"
    md = (built["report"] / "summary.md").read_text()
    assert "**Gate: 4 new divergences**" in md and "2 expected" in md
    assert "conformance run " in md and "<script>" not in md
    assert "## Divergence clusters" in md and "No ablation run" not in md


# --------------------------------------------------------------- the pieces, on synthetic records


# ------------------------------------------------- what is new, by cause (issue 16): the top first

def test_what_is_new_comes_first_and_names_the_cause(built, browser):
    """The first screen: the new divergences by cause, each with its runtime, the targets folded
    into one line, the case count, the worst error and a repro; the known ones folded below."""
    clusters = json.loads((built["out"] / "clusters.json").read_text())
    mine = [c for c in clusters if c["runtime"] == WRONG]
    browser.open(url(built["report"] / "index.html"))
    assert browser.js("document.querySelector('main section').id") == "new"
    first = browser.js("""(() => { const c = document.querySelector('#new .cause');
        const r = c.getBoundingClientRect();
        return {cls: c.className, text: c.innerText, top: r.top, bottom: r.bottom, h: innerHeight,
                sentence: c.querySelector('.sentence').textContent}; })()""")
    assert "status-new" in first["cls"] and first["bottom"] < first["h"], first      # on the first screen
    assert first["sentence"] in {c["cause"] for c in mine}
    assert WRONG in first["text"] and "onnx-14, onnx-22" in first["text"]          # two specs, one line
    assert "NEW" in first["text"].upper() and "the tolerance" in first["text"]
    repro = browser.js("document.querySelector('#new .cause code').textContent")
    assert repro.startswith("conformance run ") and WRONG in repro
    # new before anything known; the known causes folded, with the expectation's file:line
    order = browser.js("[...document.querySelectorAll('#new .cause, #new #known')].map(e => e.id || e.className)")
    assert order[-1] == "known" and all("status-new" in o for o in order[:-1])
    assert browser.js("document.getElementById('known').open") is False
    row = browser.js("document.querySelector('#known tr.cause-row').textContent")
    assert "expected" in row and "expected.yaml:3" in row and WRONG in row
    assert not browser.script_errors()
    browser.screenshot(SHOTS / "new.png", max_height=1000)
    # the spec differences have their own page, with the same filters
    browser.open(url(built["report"] / "differences.html", "#op=GRU"))
    assert browser.js("document.getElementById('f-op').value") == "GRU"
    assert browser.js("document.getElementById('differences') !== null") and not browser.script_errors()


def test_clusters_are_one_per_cause_and_runtime_and_marked(built, browser):
    clusters = json.loads((built["out"] / "clusters.json").read_text())
    keys = [(c["runtime"], c["verdict"], c["cause"]) for c in clusters]
    assert len(keys) == len(set(keys))
    wrong = [c for c in clusters if c["runtime"] == WRONG]
    # the gate-order bug shows on both spec versions: one cluster listing both targets
    assert any(len(c["targets"]) == 2 and {t.rsplit("@", 1)[1] for t in c["targets"]} == {"onnx-14", "onnx-22"}
               for c in wrong), wrong
    browser.open(url(built["report"] / "index.html"))
    shown = browser.js("""[...document.querySelectorAll('#clusters .cluster')].map(c => [c.dataset.status,
        c.querySelector('.targets').textContent, """
        """c.querySelector('.mark') ? c.querySelector('.mark').textContent : ''])""")
    assert len(shown) == len(clusters)
    assert shown[0][0] == "new" and shown[0][2] == "new" and "onnx-14, onnx-22" in shown[0][1]


def _cfg_record(case, runtime, version, config, spec, verdict="pass", **extra):
    target = f"{runtime}-{version}/CPU{'' if config == 'default' else '/' + config}@{spec}"
    return dict(record(case=case, target=target, verdict=verdict), runtime=runtime, runtime_version=version,
                runtime_family=runtime, config=config, spec=spec, spec_family="onnx", **extra)


def test_matrix_puts_configurations_side_by_side(tmp_path, browser):
    recs = []
    for spec in ("onnx-14", "onnx-22"):
        recs.append(_cfg_record("gru/x[a=1]", "onnxruntime", "1.0", "default", spec))
        for config in ("precision=pinned", "default"):
            recs.append(_cfg_record("gru/x[a=1]", "openvino", "2.0", config, spec,
                                    verdict="fail" if config == "default" else "pass", ratio=3.0))
    index = render(records_of(recs), {"suite": "t"}, tmp_path, clusters=None)
    browser.open(url(index))
    heads = browser.js("[...document.querySelectorAll('#matrix thead th.spec')]"
                       ".map(t => [t.dataset.target, t.innerText])")
    ids = [h[0] for h in heads]
    assert ids == ["onnxruntime-1.0/CPU@onnx-14", "onnxruntime-1.0/CPU@onnx-22",
                   "openvino-2.0/CPU@onnx-14", "openvino-2.0/CPU/precision=pinned@onnx-14",
                   "openvino-2.0/CPU@onnx-22", "openvino-2.0/CPU/precision=pinned@onnx-22"]
    # the header shows the configuration's values whole, so that side by side they differ (issue 37)
    assert heads[2][1].split() == ["configuration", "default"] and heads[3][1].split() == ["precision", "pinned"]
    widths = browser.js("[...document.querySelectorAll('#matrix thead th.spec b')].map(b => b.scrollWidth <= "
                        "b.parentElement.clientWidth)")
    assert all(widths), widths   # nothing clipped
    groups = browser.js("""[...document.querySelectorAll('#matrix thead th.setup')].map(t => [t.textContent.trim(),
        t.colSpan, t.classList.contains('by-config')])""")
    assert groups == [["CPU", 2, False], ["CPU · onnx-14", 2, True], ["CPU · onnx-22", 2, True]]
    # the spec filter keeps both configurations of that spec
    browser.open(url(index, "#spec=onnx-22"))
    shown = browser.js("[...document.querySelectorAll('#matrix thead th.spec')]"
                       ".filter(t => !t.hidden).map(t => t.dataset.target)")
    assert shown == ["onnxruntime-1.0/CPU@onnx-22", "openvino-2.0/CPU@onnx-22",
                     "openvino-2.0/CPU/precision=pinned@onnx-22"]
    assert not browser.script_errors()


def test_expected_and_fixed_clusters_are_marked_with_the_file_and_line(tmp_path, browser):
    entry = {"kind": "known-bug", "reason": "drops clip", "link": "", "where": "expectations/x.yaml:7"}
    recs = [record(case=f"gru/c[clip={i}]", target=t, gate="expected", expected=entry, features=["clip"])
            for i in range(3) for t in ("rt-1/CPU@onnx-14", "rt-1/CPU@onnx-22")]
    recs += [record(case="gru/d", target="rt-1/CPU@onnx-14", gate="new", features=["P"])]
    recs += [record(case="gru/e", target="rt-1/CPU@onnx-14", verdict="pass", gate="fixed",
                    expected=dict(entry, where="expectations/x.yaml:12", reason="was wrong"))]
    clusters = [{"id": "c1", "runtime": "rt", "verdict": "fail", "cause": "fails whenever clip is set",
                 "features": ["clip"],
                 "targets": ["rt-1/CPU@onnx-14", "rt-1/CPU@onnx-22"], "target": "rt-1/CPU@onnx-14",
                 "cases": [f"gru/c[clip={i}]" for i in range(3)],
                 "cases_by_target": {t: [f"gru/c[clip={i}]" for i in range(3)]
                                     for t in ("rt-1/CPU@onnx-14", "rt-1/CPU@onnx-22")}},
                {"id": "c2", "runtime": "rt", "verdict": "fail", "cause": "fails whenever peepholes are non-zero",
                 "features": ["P"], "target": "rt-1/CPU@onnx-14", "cases": ["gru/d"]}]   # one target, as before
    index = render(records_of(recs), {"suite": "t"}, tmp_path, clusters=clusters)
    browser.open(url(index))
    marks = browser.js("""[...document.querySelectorAll('#clusters .cluster')]"""
                       """.map(c => [c.dataset.status, c.innerText])""")
    assert [m[0] for m in marks] == ["new", "expected"]
    assert "expectations/x.yaml:7" in marks[1][1] and "onnx-14, onnx-22" in marks[1][1]
    causes = browser.js("[...document.querySelectorAll('#new .cause')].map(c => c.className + ' ' + c.innerText)")
    assert len(causes) == 2 and "status-new" in causes[0] and "peepholes" in causes[0]
    assert "status-fixed" in causes[1] and "expectations/x.yaml:12" in causes[1]
    md = summary(records_of(recs), {"suite": "t"}, clusters=clusters)
    top = md.split("## What is new, and why", 1)[1]
    assert top.index("peepholes") < top.index("FIXED") < top.index("clip is set")
    assert "**expected**" in md and "expectations/x.yaml:7" in md


def test_long_tables_are_paginated(tmp_path, browser):
    recs = [record(case=f"gru/n[i={i:03d}]", gate="new") for i in range(120)]
    index = render(records_of(recs), {"suite": "t"}, tmp_path, clusters=None)
    assert len(index.read_text()) < 400_000
    browser.open(url(index))
    browser.js("document.getElementById('gate-new').open = true")
    visible = "[...document.querySelectorAll('#gate-new tr.gate-new')].filter(r => !r.hidden).map(r => r.textContent)"
    rows = browser.js(visible)
    assert len(rows) == 50 and "i=000" in rows[0]
    assert "1–50 of 120" in browser.js("document.querySelector('#gate-new .pager').textContent")
    browser.js("[...document.querySelectorAll('#gate-new .pager button')]"
               ".find(b => b.textContent.startsWith('next')).click()")
    rows = browser.js(visible)
    assert len(rows) == 50 and "i=050" in rows[0]
    # a filter applies to every page: 11 rows match, one page
    browser.open(url(index, "#q=i%3D1"))
    browser.js("document.getElementById('gate-new').open = true")
    matched = browser.js(visible)
    assert matched and all("i=1" in r for r in matched) and len(matched) <= 50
    assert browser.js("document.querySelector('#gate-new .pager').hidden") is True
    assert not browser.script_errors()


def test_devices_side_by_side(tmp_path, browser):
    """One runtime on CPU and CUDA: the section shows, each cell's message on hover and below it,
    and the page's filters apply to its rows."""
    from tests.unit.test_report_devices import SEGV, two_device_records
    index = render(two_device_records(), {"suite": "t"}, tmp_path, clusters=None)
    browser.open(url(index))
    assert browser.js("document.querySelector('header nav a[href=\"index.html#devices\"]') !== null")
    heads = browser.js("[...document.querySelectorAll('#devices table.devices th.dev-col')].map(t => t.innerText)")
    assert [h.split() for h in heads] == [["CPU"], ["CUDA", "precision=default→tf32"], ["CUDA", "precision=pinned"]]
    rows = "[...document.querySelectorAll('#devices tr.dev-row')].filter(r => !r.hidden)"
    shown = browser.js(rows + ".map(r => [...r.cells].map(c => c.innerText.trim()))")
    assert [r[0].split()[0] for r in shown] == ["gru/long[seq=64]", "invalid/lstm/W_shape"]
    assert shown[1][1].split("\n") == ["crash", SEGV] and "device-side assert" in shown[1][2]
    titles = browser.js(rows + ".map(r => [...r.querySelectorAll('td.dev-cell')].map(c => c.title))")
    assert titles[1][0] == SEGV and titles[0][1].startswith("Y[0,0,0,1] = 0.5")
    pairs = browser.js("[...document.querySelectorAll('#devices li.dev-pair')].map(li => li.innerText)")
    assert len(pairs) == 2 and "6 cases agree" in pairs[0] and "1 differ: pass / fail 1" in pairs[0]
    browser.open(url(index, "#verdict=crash"))         # the filters apply to its rows
    assert browser.js(rows + ".map(r => r.cells[0].innerText.split('\\n')[0])") == ["invalid/lstm/W_shape"]
    browser.screenshot(SHOTS / "devices.png")
    assert not browser.script_errors()


# ------------------------------------------------------------------------------------ the terminal


# ----------------------------------------------------------------------------- artifacts for CI

