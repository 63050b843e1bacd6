"""The differential fuzzer: hypothesis strategies of canonical cases, the differential property
judged by the Engine, and the reproducer that writes each minimized finding as a case file.

Modules, one concept each:

- :mod:`~conformance.fuzz.scope`: what a campaign draws from (``Scope``, ``Limits``);
- :mod:`~conformance.fuzz.strategies`: valid cases drawn from each op's constraints (labelled draws);
- :mod:`~conformance.fuzz.attributes`: the attributes drawn, read from the attribute table;
- :mod:`~conformance.fuzz.values`: input values that stress an implementation, exact in the dtype;
- :mod:`~conformance.fuzz.mutations`: invalid cases that break exactly one constraint;
- :mod:`~conformance.fuzz.signature`: what makes two findings the same;
- :mod:`~conformance.fuzz.campaign`: the property, and the campaign that searches it under a time budget;
- :mod:`~conformance.fuzz.examiner`: one drawn case run on the campaign's targets;
- :mod:`~conformance.fuzz.finding`: a finding, its cause and the text written with it;
- :mod:`~conformance.fuzz.reduce`: a finding's case reduced to the features its failure needs;
- :mod:`~conformance.fuzz.reproducer`: findings as case files, and the index of those written;
- :mod:`~conformance.fuzz.session`: ``conformance fuzz``'s session (``FuzzConfig``, ``fuzz_session``:
  the campaign, its summary and its record), and the budget read (``parse_budget``);
- :mod:`~conformance.fuzz.display`: the live display (conformance/cli/fuzz.py is the command).

Hypothesis is imported on first use, so the rest of the suite runs without it.
"""

from __future__ import annotations

import importlib

_PUBLIC = {
    "Scope": "scope", "Limits": "scope", "valid_cases": "strategies", "invalid_cases": "strategies",
    "cases": "strategies", "draw_case": "strategies",
    "broken_constraints": "mutations",
    "case_tokens": "signature", "signature": "signature",
    "Campaign": "campaign", "CampaignConfig": "campaign", "CampaignResult": "campaign",
    "FindingIndex": "reproducer", "case_document": "reproducer",
    "parse_budget": "session", "FuzzConfig": "session", "fuzz_session": "session",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(f"conformance.fuzz.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module 'conformance.fuzz' has no attribute {name!r}")
