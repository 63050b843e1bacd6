"""The direction of imports between the suite's packages (docs/architecture.md, "Import layers"),
read from the source without importing it: every package has a layer (LAYERS, bottom first: the
cases, the specs, isolation, the runtimes, ... the CLI on top) and imports none above its own, and
a cycle between packages that is not in KNOWN_CYCLES fails. KNOWN_CYCLES is what is
left to untangle; a cycle that is gone must leave the list too, so the list only shrinks. Nothing
imports the command line but ``conformance/__main__.py``, and the tests take from it only its
commands: a library function is imported from the library."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.conftest import ROOT

#: the package-level cycles still to break, each as its sorted members (none left; broken: case <->
#: compare, specs <-> runtimes, caches -> run, the run/CLI/commands knot, oracles.framework <->
#: oracles.profiles, oracles.result <-> oracles.silent: docs/architecture.md, "Import layers")
KNOWN_CYCLES: set[tuple] = set()

#: the layers, bottom first: a package imports only packages of its own layer or below, never one
#: above (docs/architecture.md, "Import layers"). An entry is a unit (``conformance.run``); a
#: top-level name other than ``conformance`` (``oracles``) stands for all its units. Every unit of
#: the suite has a layer: a new package is placed here when it is made.
LAYERS = [
    ("oracles",),                                            # the mpmath oracle: imports no conformance
    ("conformance", "conformance.files", "conformance.caches", "conformance.results"),  # the version, atomic
    #                                                        writes, cache folders, the record and results.jsonl
    ("conformance.case",),                                   # the case model, its loading and vocabularies
    ("conformance.compare", "conformance.specs"),            # judging an output; the specs' translators
    ("conformance.isolation",),                              # worker processes and their pool
    ("conformance.runtimes",),                               # the runtime adapters, discovery
    ("conformance.converters",),                             # converter targets (a converter, then a runtime)
    ("conformance.selection",),                              # --spec/--runtime/--device/--config/--converter
    ("conformance.gate",),                                   # expectations, the baseline, the audit
    ("conformance.report",),                                 # HTML, JUnit, Markdown, terminal, merging runs
    ("conformance.run",),                                    # the engine, the ablation, the run session
    ("conformance.cluster",),                                # the Dask scale-out
    ("conformance.export", "conformance.fuzz", "conformance.history", "conformance.gpucheck"),  # the commands'
    #                                                        libraries
    ("conformance.bugreport",),
    ("conformance.cli", "conformance.__main__"),             # the command line: nothing imports it
]


def _modules() -> dict[str, Path]:
    found = {}
    for base in ("conformance", "oracles"):
        for path in (ROOT / base).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _unit(name: str) -> str:
    """The package a module belongs to for layering: ``conformance.run.engine`` -> ``conformance.run``
    (a top-level module such as ``conformance.selection`` is its own unit), ``oracles.api`` -> ``oracles.api``."""
    parts = name.split(".")
    return ".".join(parts[:2])


def _imports(name: str, path: Path, modules: dict) -> set[str]:
    """The suite's modules that ``name`` imports (``from X import y`` counts as X.y where that is a
    module), at any depth of the file (imports inside functions included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in modules else base)
    return {m for m in out if m.split(".")[0] in ("conformance", "oracles")}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for target in _imports(name, path, modules):
            a, b = _unit(name), _unit(target)
            if a != b:
                edges[a].add(b)
    return edges


def _cycles(edges: dict[str, set[str]]) -> set[tuple]:
    """The strongly connected components of more than one unit (Tarjan), each as a sorted tuple."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on: set = set()
    found = set()
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.add(tuple(sorted(component)))

    for v in list(edges):
        if v not in index:
            visit(v)
    return found


def _layer(unit: str) -> int | None:
    """The position of ``unit``'s layer in :data:`LAYERS` (0 is the bottom), None where it has none."""
    for at, layer in enumerate(LAYERS):
        for entry in layer:
            if unit == entry or ("." not in entry and entry != "conformance" and unit.startswith(entry + ".")):
                return at
    return None


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports of ``edges`` against the layers: (importer, imported) where the imported unit's
    layer is above the importer's."""
    found = set()
    for unit, targets in edges.items():
        for target in targets:
            low, high = _layer(unit), _layer(target)
            if low is not None and high is not None and high > low:
                found.add((unit, target))
    return sorted(found)


def unplaced(edges: dict[str, set[str]]) -> list[str]:
    """The units of ``edges`` without a layer."""
    return sorted({u for unit, targets in edges.items() for u in (unit, *targets) if _layer(u) is None})


def new_cycles(edges: dict[str, set[str]]) -> list[tuple]:
    """The cycles between packages of ``edges`` that :data:`KNOWN_CYCLES` does not list."""
    return sorted(_cycles(edges) - KNOWN_CYCLES)


def test_no_new_import_cycle_between_packages_and_the_known_ones_only_shrink():
    cycles = _cycles(_graph())
    new = new_cycles(_graph())
    assert not new, f"a new import cycle between packages: {new}"
    gone = KNOWN_CYCLES - cycles
    assert not gone, f"these cycles are gone or changed: update KNOWN_CYCLES to what remains: {sorted(gone)} " \
                     f"(now: {sorted(cycles)})"
    assert not any(m.startswith("conformance") for cycle in KNOWN_CYCLES for m in cycle), "no cycle in conformance/"


def test_the_lower_layers_never_import_the_upper_ones():
    edges = _graph()
    assert not unplaced(edges), f"packages without a layer: place them in LAYERS: {unplaced(edges)}"
    assert not upward(edges), f"imports against the layers (importer, imported): {upward(edges)}"


def _with(edges: dict[str, set[str]], *added: tuple[str, str]) -> dict[str, set[str]]:
    out = {unit: set(targets) for unit, targets in edges.items()}
    for a, b in added:
        out.setdefault(a, set()).add(b)
    return out


def test_a_deliberate_upward_import_is_caught_by_both_checks():
    """An edge against the layers injected into the real graph: the layer check names it, and, since
    the upper package imports the lower one already, the cycle check finds the cycle it closes."""
    edges = _graph()
    for low, high in (("conformance.case", "conformance.run"), ("conformance.runtimes", "conformance.cli"),
                      ("conformance.isolation", "conformance.runtimes"), ("conformance.report", "conformance.run")):
        assert (low, high) not in upward(edges)
        broken = _with(edges, (low, high))
        assert (low, high) in upward(broken), (low, high)
        assert any(low in cycle and high in cycle for cycle in new_cycles(broken)), (low, high)
    assert upward(_with(edges, ("conformance.run", "conformance.case"))) == []   # downward: allowed
    assert unplaced(_with(edges, ("conformance.newpackage", "conformance.case"))) == ["conformance.newpackage"]


def test_the_graph_sees_the_imports_it_checks():
    """The reader is not blind: known edges are in the graph (a function-level import included)."""
    edges = _graph()
    assert "conformance.case" in edges["conformance.compare"]          # compare/verdict.py, at the top
    assert "conformance.run" in edges["conformance.cli"]               # cli/run.py, inside run()
    assert "conformance.specs" in edges["conformance.runtimes"]        # runtimes read spec vocabularies
    assert "conformance.isolation" in edges["conformance.runtimes"]    # discovery.py, inside a function
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == {("a", "b")}


#: the command line (conformance/cli/) and what alone may import it: the console script's module
COMMAND_LINE = "conformance.cli"
ENTRY_POINT = "conformance.__main__"
#: what a test may take from the command line besides the group (``main``) and a command (``*_command``):
#: these helpers of the command line itself, each with where it is and why it is the command line's.
#: Everything else a test needs is the library's, imported from the library
COMMAND_LINE_HELPERS = {
    "stdout_closed": "cli/run.py: whether a broken pipe is a closed stdout (click's exit status for it)",
    "is_slice": "cli/options.py: whether a command's paths and -k cover part of the corpus",
    "_children_skip_the_script": "cli/__init__.py: the console script's spawned processes skip it",
}


def _is_command_line(module: str) -> bool:
    return module == COMMAND_LINE or module.startswith(COMMAND_LINE + ".")


def _command_line_names(source: str, modules: dict, filename: str = "<test>") -> list[tuple[int, str, str]]:
    """(line, module, name) of each name the Python ``source`` takes from the command line: imported
    from one of its modules (``from conformance.cli.fuzz import fuzz_command``), or read off one
    imported whole (``from conformance import cli`` then ``cli.main``); a module imported whole and
    never read is listed by its own name."""
    tree = ast.parse(source, filename)
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _is_command_line(a.name) and a.asname:
                    aliases[a.asname] = (node.lineno, a.name)
                elif _is_command_line(a.name):
                    found.append((node.lineno, a.name, a.name))   # read as a dotted name: named whole
        elif isinstance(node, ast.ImportFrom) and not node.level:
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if _is_command_line(full) and full in modules:
                    aliases[a.asname or a.name] = (node.lineno, full)
                elif _is_command_line(node.module or ""):
                    found.append((node.lineno, node.module, a.name))
    read = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            line, module = aliases[node.value.id]
            found.append((node.lineno, module, node.attr))
            read.add(node.value.id)
    found += [(line, module, module) for alias, (line, module) in aliases.items() if alias not in read]
    return sorted(set(found))


def test_nothing_but_the_entry_point_imports_the_command_line():
    """conformance/cli/ is the top layer: no module of the suite outside it imports it, but
    ``conformance/__main__.py``; the library a command calls lives in the library."""
    modules = _modules()
    importers = sorted(f"{name} imports {target}" for name, path in modules.items()
                       if not _is_command_line(name) and name != ENTRY_POINT
                       for target in _imports(name, path, modules) if _is_command_line(target))
    assert not importers, f"the command line imported by the library: {importers}"
    assert COMMAND_LINE in _imports(ENTRY_POINT, modules[ENTRY_POINT], modules)   # the reader sees the one


def test_the_tests_take_from_the_command_line_only_its_commands():
    """A test that runs a command imports the command (or the group); a test of a library function
    imports it from the library, never through the command line that calls it."""
    modules = _modules()
    wrong = [f"{path.relative_to(ROOT)}:{line}: {name} from {module}"
             for base in ("tests", "benchmarks") for path in sorted((ROOT / base).rglob("*.py"))
             for line, module, name in _command_line_names(path.read_text(), modules, str(path))
             if not (name == "main" or name.endswith("_command") or name in COMMAND_LINE_HELPERS)]
    assert not wrong, f"library names taken from the command line (import them from the library): {wrong}"
    sample = ("from conformance.cli.history import gaps_in\nfrom conformance.cli import fuzz as f\n"
              "from conformance import cli\nf.parse_budget('1m')\ncli.main()\n")   # the reader is not blind
    seen = _command_line_names(sample, modules)
    assert (1, "conformance.cli.history", "gaps_in") in seen and (2, "conformance.cli.fuzz", "fuzz") not in seen
    assert (4, "conformance.cli.fuzz", "parse_budget") in seen and (5, "conformance.cli", "main") in seen


def test_modules_stay_small_unless_a_one_line_reason_says_why_they_are_one_concept(tmp_path):
    """The rule lives in tests/module_size.py, which `nox -s lint` runs too; here it holds on the project, and
    fails on a module planted over it, on a stale entry and on an entry without its reason."""
    from tests import module_size
    assert module_size.problems() == []
    (tmp_path / "conformance").mkdir()
    (tmp_path / "oracles").mkdir()
    (tmp_path / "conformance" / "big.py").write_text("x = 1\n" * 401)
    (tmp_path / "conformance" / "small.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text('[tool.conformance.module-size]\nmax-lines = 400\none-concept = '
                                             '{"conformance/small.py" = "", "conformance/gone.py" = "r"}\n')
    said = " ".join(module_size.problems(tmp_path))
    assert "conformance/big.py" in said and "drop them from one-concept" in said and "without a one-line reason" in said
    (tmp_path / "pyproject.toml").write_text('[tool.conformance.module-size]\nmax-lines = 400\n'
                                             'one-concept = {"conformance/big.py" = "one table of the spec"}\n')
    assert module_size.problems(tmp_path) == []   # a module that is one concept may be over it, with its reason
