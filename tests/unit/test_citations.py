"""Every doc the code, the docs, the tests and the reports cite exists, and so does every section
they cite by name (`docs/gate.md, "Exit status"`, `README ("Quick start")`), so a section that
moves cannot leave a dangling citation (docs/development.md, "Before you finish a change").

A cited section is a heading of the cited file, or the start of one ("Reduced-precision kernels"
cites "## Reduced-precision kernels (declared precisions)"); backticks and letter case are ignored.
An anchor (`docs/forms.md#the-forms`) is a heading's GitHub slug."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: where citations live: code, docs, tests, benchmarks, expectations, cases, CI and packaging
SOURCES = [
    *ROOT.glob("README.md"), *ROOT.glob("CONTRIBUTING.md"), ROOT / "noxfile.py", ROOT / "pyproject.toml",
    *(p for d in ("conformance", "oracles", "tests", "benchmarks", "docs", "expectations", "cases", ".ci")
      for p in sorted((ROOT / d).rglob("*")) if p.is_file() and p.suffix in (".py", ".md", ".yaml", ".yml", "")
      and "cache" not in p.parts and "__pycache__" not in p.parts
      and p.name != "test_citations.py"),   # its own examples are not citations
]
#: a cited Markdown file: the front page, a manual, the oracle's or the benchmarks' README
DOC = r"(?<![\w/.-])(?P<doc>README(?:\.md)?|(?:docs|oracles|benchmarks)/[\w./-]*?\w\.md)"
#: ... followed by a quoted section: `DOC, "X"`, `DOC ("X")`, `DOC: "X"`, `DOC`, "X"`, and more: `, "Y"`, ` and "Y"`
SECTION = re.compile(DOC + r"`?(?:,\s*\(?|\s+\(|:\s+)\"(?P<first>[^\"\n]+(?:\n[^\"\n]+)?)\""
                     r"(?P<more>(?:\s*(?:,|and)\s*\"[^\"\n]+(?:\n[^\"\n]+)?\")*)")
PATH = re.compile(DOC + r"(?:#(?P<anchor>[\w-]+))?")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.M)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return ""


def _file(doc: str) -> Path:
    return ROOT / ("README.md" if doc in ("README", "README.md") else doc)


def _norm(text: str) -> str:
    """Backticks, letter case, line breaks and a comment's `#` or `#:` continuing the quote ignored."""
    text = re.sub(r"\n\s*#:?\s*", "\n", text.replace("`", ""))
    return re.sub(r"\s+", " ", re.sub(r"-\n\s*", "-", text)).strip().lower()


def _headings(path: Path) -> list[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", _text(path))     # a `# comment` in a code block is no heading
    return [_norm(h) for h in HEADING.findall(text)]


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _citations():
    for source in SOURCES:
        text = _text(source)
        where = source.relative_to(ROOT)
        for m in PATH.finditer(text):
            yield where, text.count("\n", 0, m.start()) + 1, m.group("doc"), None, m.group("anchor")
        for m in SECTION.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            for quoted in [m.group("first"), *re.findall(r"\"([^\"]+)\"", m.group("more"))]:
                yield where, line, m.group("doc"), quoted, None


CITATIONS = list(_citations())


def test_the_scan_finds_the_citations_it_checks():
    """The scan is not vacuous: it sees the citations this project is known to make."""
    docs = {(doc, section) for _, _, doc, section, _ in CITATIONS}
    assert ("docs/gate.md", None) in docs and ("docs/configuration.md", "The gate") in docs
    assert ("oracles/README.md", "Non-finite inputs") in docs and ("README.md", "Quick start") in docs


def test_every_cited_doc_exists():
    missing = sorted({f"{where}:{line}: {doc}" for where, line, doc, _, _ in CITATIONS if not _file(doc).is_file()})
    assert not missing, missing


def test_every_cited_section_and_anchor_exists():
    dangling = []
    for where, line, doc, section, anchor in CITATIONS:
        if not _file(doc).is_file():
            continue                      # test_every_cited_doc_exists says so
        headings = _headings(_file(doc))
        if section is not None and not any(h.startswith(_norm(section)) for h in headings):
            dangling.append(f'{where}:{line}: {doc}, "{section}"')
        if anchor is not None and anchor not in {_slug(h) for h in headings}:
            dangling.append(f"{where}:{line}: {doc}#{anchor}")
    assert not dangling, "\n".join(sorted(set(dangling)))


@pytest.mark.parametrize("cited, found", [
    ('see docs/gate.md, "Exit status".', ("docs/gate.md", "Exit status")),
    ('(README ("Quick start"))', ("README", "Quick start")),
    ('docs/precision.md, "Reduced-\n    precision kernels"', ("docs/precision.md", "Reduced-\n    precision kernels")),
    ('ROOT / "benchmarks" / "README.md"', None),
])
def test_the_scan_reads_the_citation_forms_in_use(cited, found):
    m = SECTION.search(cited)
    assert (m and (m.group("doc"), m.group("first"))) == (found if found else None)


def test_the_front_page_links_every_manual():
    """README.md is the front page: a manual it does not link is a manual a newcomer never finds."""
    front = _text(ROOT / "README.md")
    unlinked = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if f"(docs/{p.name})" not in front]
    assert not unlinked, unlinked
