"""The gate: expectations files of known divergences, a baseline of an earlier run, and the gate
fields each record gets from them (new, expected, fixed, ok, baseline, fallback). The manual:
docs/gate.md.

| module | owns |
|---|---|
| ``schema`` | an expectations file's JSON Schema, its one definition (the loader's validator and key hints use it) |
| ``globs`` | the `*`/`?` globs over ids, in linear time |
| ``entry`` | one entry: what it covers, whether it names a cluster's cause |
| ``expectations`` | loading the files (file:line errors), matching a pair to its entry, tolerance overrides |
| ``baseline`` | an earlier run's results.jsonl, read strictly |
| ``apply`` | a record's gate fields (``classify``, ``gated``); re-judged with each pair's cluster cause (``regate``) |
| ``audit`` | the entries that excuse another defect, cover passing pairs, or nothing |
"""

from conformance.gate.apply import classify, gated, regate
from conformance.gate.audit import Audit
from conformance.gate.baseline import Baseline
from conformance.gate.entry import CONFIGURATION, KINDS, Entry, version_of_target
from conformance.gate.expectations import DEFAULT_EXPECTATIONS, Expectations, expectation_paths, upstream_url
from conformance.gate.globs import glob_to_regex
from conformance.gate.schema import ExpectationsError

__all__ = ["CONFIGURATION", "DEFAULT_EXPECTATIONS", "KINDS", "Audit", "Baseline", "Entry", "Expectations",
           "ExpectationsError", "classify", "expectation_paths", "gated", "glob_to_regex", "regate",
           "upstream_url", "version_of_target"]
