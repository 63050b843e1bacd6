"""The cross-runtime feature matrix (conformance/report/engines_matrix.py).

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/unit/test_engines_matrix.py."""

from __future__ import annotations

from conformance.report import engines_matrix as em
from conformance.report.html import render
from conformance.report.markdown import summary
from conformance.results import records_of
from tests.corpus.test_html_report import browser, record, url  # noqa: F401 - the browser fixture
from tests.unit.test_engines_matrix import _records


def test_the_matrix_is_in_the_html_report_and_the_summary(tmp_path, browser):  # noqa: F811
    recs = _records()
    index = render(records_of(recs), {"suite": "t"}, tmp_path, clusters=None)
    browser.open(url(index))
    rows = browser.js("""[...document.querySelectorAll('#feature-matrix tbody tr:not(.op-row)')].map(
        tr => [tr.querySelector('th').firstChild.textContent.trim(), """
        """...[...tr.querySelectorAll('td')].map(td => td.dataset.class || '')])""")
    by_name = {(r[0]): r[1:] for r in rows if r[0] == "clip"}
    assert by_name["clip"] == ["all fail", "all pass"]
    assert any(r[0] == em.INVALID and r[1:] == ["all fail", ""] for r in rows)
    colours = browser.js("""[...document.querySelectorAll('#feature-matrix td.fm-cell')].map(
        td => [td.dataset.class, getComputedStyle(td).backgroundColor])""")
    assert len({c for k, c in colours if k == "all pass"}) == 1 and not browser.script_errors()
    md = summary(records_of(recs), {"suite": "t"})
    assert "## Features × runtimes" in md
    assert "| LSTM · clip | **all fail** 0/4 pass · fail 4 | **all pass** 4/4 pass |" in md
