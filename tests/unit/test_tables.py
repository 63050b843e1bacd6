"""Each vocabulary lives in one table; these tests fail when a table and one of its readers disagree.

Tables: verdicts (conformance/compare/verdicts.py), features (conformance/case/features.py),
attributes (conformance/case/vocabulary.py). docs/extending.md walks through adding a row.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/test_tables.py, tests/runtime/test_tables.py."""

from __future__ import annotations

from conformance.case import schema
from conformance.case.features import ABLATIONS, FEATURES, REDUCTIONS, clause_of
from conformance.case.vocabulary import ATTRIBUTE_TABLE, ATTRIBUTES, OPS
from conformance.compare import verdicts as V
from conformance.fuzz.reproducer import ATTRIBUTE_ORDER

# ------------------------------------------------------------------------------------ verdicts

def test_every_verdict_has_one_row_and_every_list_is_read_from_it():
    names = [row.verdict for row in V.TABLE]
    assert len(names) == len(set(names)) == len(V.Verdict)
    assert set(V.VERDICTS) == {v.value for v in V.Verdict}
    assert set(V.FAILING) <= set(V.VERDICTS) and "error" in V.FAILING
    for table in (V.SEVERITY, V.SHORT, V.MEANING, V.COLOURS):
        assert set(table) == set(V.VERDICTS), table
    assert V.worst(["pass", "fail", "crash"]) == "crash" and V.severity(V.SEVERITY[0]) == 0
    assert all(V.severity(v) < V.severity("pass") for v in V.FAILING)


def test_the_readers_use_the_verdict_table():
    from conformance import gate
    from conformance.case import load
    from conformance.fuzz import examiner as fuzz_examiner
    from conformance.gate import schema as gate_schema
    from conformance.report import html, terminal, view
    assert not hasattr(gate, "FAILING_VERDICTS")
    assert not hasattr(view, "SEVERITY")
    # no reader renames a table (a second name to grep for): each reads the table itself
    for module, alias in ((fuzz_examiner, "FINDING_VERDICTS"), (gate_schema, "ALL_VERDICTS"),
                          (html, "VERDICT_COLOURS"), (html, "VERDICT_HELP"), (terminal, "COLOURS"),
                          (view, "SPEC_FAMILY_ORDER"), (load, "TENSOR_KEYS")):
        assert not hasattr(module, alias), (module.__name__, alias)


# ------------------------------------------------------------------------------------ features


def test_ablation_and_reduction_read_the_table():
    from conformance.fuzz import reduce
    from conformance.run import ablation
    assert reduce.REDUCTIONS is REDUCTIONS
    assert ablation.ABLATIONS is ABLATIONS
    assert [f.name for f in ABLATIONS][:3] == ["clip", "peepholes", "input_forget"]
    assert {f.name for f in ABLATIONS} <= {f.name for f in REDUCTIONS} | {"activation_spelling"}
    rows = [f for f in FEATURES if f.ablation is not None or f.reduction is not None]
    assert all(f.present and f.remove and f.sentence for f in rows)


def test_clauses_come_from_the_table():
    assert clause_of("reverse") == clause_of("bidirectional") == "direction"
    assert clause_of("dtype=float16") == "type float16"
    assert clause_of("P") == "input P (peepholes)"
    assert clause_of("subnormal") is None


# ------------------------------------------------------------------------------------ attributes

def test_the_schema_the_reproducer_and_the_ops_read_the_attribute_table():
    names = [a.name for a in ATTRIBUTE_TABLE]
    found = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("properties"), dict) and "hidden_size" in node["properties"]:
                found.append(list(node["properties"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(schema.SCHEMA)
    from conformance.case.framework import ALIASES  # torch's spellings, read as the table's attributes
    assert found and all(f == names + list(ALIASES) for f in found), found
    assert ATTRIBUTE_ORDER == tuple(names)
    for op in OPS:
        assert set(ATTRIBUTES[op]) == {a.name for a in ATTRIBUTE_TABLE if op in a.ops}
    assert "linear_before_reset" in ATTRIBUTES["GRU"] and "linear_before_reset" not in ATTRIBUTES["LSTM"]


# ------------------------------------------------------------------------------------ specs and targets

def test_every_spec_implements_the_protocol_and_names_a_known_family():
    from conformance.case.vocabulary import SPEC_FAMILIES
    from conformance.specs import SPECS, Spec
    from oracles.profiles import PROFILES
    for name, spec in SPECS.items():
        assert isinstance(spec, Spec), name
        assert spec.name == name and spec.family in SPEC_FAMILIES, name
        assert spec.semantics in PROFILES, (name, spec.semantics)


def test_the_oracle_knows_the_same_attributes_as_the_table():
    """The oracle keeps its own op table (it imports nothing from conformance/); it must agree."""
    from oracles.ops import OPS as ORACLE_OPS
    for op in OPS:
        assert set(ORACLE_OPS[op].attributes) == set(ATTRIBUTES[op]), op


def test_the_forms_every_runtime_and_translator_declares_are_rows_of_the_form_table():
    from conformance.runtimes import onnxruntime, openvino
    from conformance.runtimes.forms import BY_KEY, CONFIGURATIONS
    from conformance.specs import SPECS
    for declared in (onnxruntime.FORMS_TAKEN, openvino.FORMS_TAKEN):
        for key, values in declared.items():
            assert key in BY_KEY and all(v == BY_KEY[key].other for v in values), (key, values)
    for spec in SPECS.values():
        for key, values in (getattr(spec, "forms", None) or {}).items():
            assert BY_KEY[key].program and all(v == BY_KEY[key].other for v in values), (spec.name, key)
    for forms in CONFIGURATIONS:
        assert all(v == BY_KEY[k].other for k, v in forms.items())


# ------------------------------------------------------------------------------------ bug reports

#: what makes a class a runtime's adapter (conformance/runtimes/base.py ``Runtime``)
ADAPTER = ("name", "format", "run")


def builtin_adapters() -> dict[str, set[tuple[str, str, str]]]:
    """{built-in adapter module: its (runtime, runtime family, program format)}: every class with ``name``,
    ``format`` and ``run`` defined in a module of conformance/runtimes/__init__.py ``BUILTIN`` (or in one of
    its package's modules); its family is its ``family`` where it shares another runtime's implementation."""
    import importlib
    import inspect
    import pkgutil

    from conformance.runtimes import BUILTIN
    found = {}
    for module_name in BUILTIN:
        module = importlib.import_module(module_name)
        modules = [module] + [importlib.import_module(f"{module_name}.{m.name}")
                              for m in pkgutil.iter_modules(getattr(module, "__path__", []))]
        found[module_name] = {(cls.name, getattr(cls, "family", "") or cls.name, cls.format)
                              for m in modules for _, cls in inspect.getmembers(m, inspect.isclass)
                              if cls.__module__ == m.__name__ and all(hasattr(cls, a) for a in ADAPTER)}
    return found


def test_every_builtin_runtime_can_be_reported_or_its_row_says_why_not():
    """`conformance bugreport` refuses a runtime without a row of RUNNERS (conformance/bugreport/script.py),
    and sends its ISSUE.md to the tracker TRACKER_OF names (conformance/bugreport/issue.py): each built-in
    runtime, in each program format it reads, has a runner row whose template exists and a tracker, or a
    row that says why no standalone script reproduces it (docs/extending.md, "A new built-in runtime")."""
    from pathlib import Path

    from conformance.bugreport import issue, script
    from conformance.runtimes import BUILTIN
    templates = Path(script.__file__).parent / "templates"
    adapters = builtin_adapters()
    for module_name, names in BUILTIN.items():
        assert {runtime for runtime, _, _ in adapters[module_name]} == set(names), (module_name, adapters[module_name])
    keys = {(family, fmt) for found in adapters.values() for _, family, fmt in found}
    assert keys == set(script.RUNNERS), ("a built-in runtime without a runner row, or a row of none",
                                         keys ^ set(script.RUNNERS))
    for (family, fmt), runner in script.RUNNERS.items():
        if runner.unreproducible:
            assert not runner.template and len(runner.unreproducible) > 40, (family, fmt)
            continue
        assert (templates / runner.file).is_file(), (family, fmt, runner.file)
        assert runner.api, (family, fmt)
        assert issue.TRACKER_OF.get(family) in issue.TRACKERS, f"{family} has no tracker in issue.TRACKER_OF"
    assert (templates / script.PLUGIN.file).is_file() and "plugin" in issue.TRACKERS
