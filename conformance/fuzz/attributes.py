"""The attributes a drawn case gives, read from the attribute table (conformance/case/vocabulary.py
``ATTRIBUTE_TABLE``): which exist, for which ops and forms, with which values. Each row is drawn
from its ``examples`` (else its ``values`` but the default) and its ``span``, so a row added to the
table is drawn with no change here; the few drawn by code of their own are :data:`OWN_DRAWS`
(conformance/fuzz/strategies.py).

A row with a span that holds its default is one draw from the span (the default: absent); any
other is two, whether the attribute is given, then its value (none where it has one value only).
Each row is drawn whatever the case's op, form and other attributes (so each shrinks away on its
own), and the case keeps it where its op and form own it and validation finds nothing wrong with
it in the case (conformance/case/validate.py ``attribute_problems``: proj_size < hidden_size,
unbatched with one batch entry).

The rows every spec family knows are drawn in every case; those only some families know (torch.nn's
own axes) are drawn together where the campaign has a target of one of their families
(:func:`rows_drawn`), and the strategies give them to one case in a few so that the other
families' targets keep most of the draws.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance.case import vocabulary
from conformance.case.validate import attribute_problems
from conformance.case.vocabulary import SPEC_FAMILIES, Attribute
from conformance.fuzz.scope import Scope

#: the rows drawn by code of their own (conformance/fuzz/strategies.py): hidden_size with the shapes,
#: the direction in every case (the shapes need it), the activations and their parameters per direction
OWN_DRAWS = ("hidden_size", "direction", "activations", "activation_alpha", "activation_beta")

BOOLEANS = st.booleans()


class NotDrawable(ValueError):
    """A row of the attribute table the fuzzer cannot draw: it has no values, examples or span."""


def reach(scope: Scope) -> set[str]:
    """The spec families a campaign's targets may read: every one, torch's where the scope has targets
    that read torch programs (``Scope.framework``)."""
    return set(SPEC_FAMILIES) - (set() if scope.framework else {"torch"})


def rows_drawn(scope: Scope) -> tuple[tuple[Attribute, ...], tuple[Attribute, ...]]:
    """(the rows every spec family knows, the rows only some families know that ``scope`` reaches),
    in the table's order: those the fuzzer draws from the table."""
    table = [a for a in vocabulary.ATTRIBUTE_TABLE if a.name not in OWN_DRAWS]
    common = tuple(a for a in table if set(a.families) >= set(SPEC_FAMILIES))
    partial = tuple(a for a in table if a not in common and set(a.families) & reach(scope))
    return common, partial


def draw(rec: Callable[[st.SearchStrategy, str], Any], rows: Iterable[Attribute]) -> list[tuple[Attribute, Any]]:
    """One draw of each row, in order (``rec``: the labelled draw): (the row, its value, or None where
    the case leaves it out)."""
    return [(row, _draw_row(rec, row)) for row in rows]


def _draw_row(rec, row: Attribute):
    number = row.schema.get("type") == "number"
    examples = tuple(_float32(v) if number else v for v in row.examples) or tuple(
        v for v in (row.values or ()) if v != row.default)
    if row.span is not None:
        low, high = (_float32(b) if number else int(b) for b in row.span)
        values = _numbers(number, low, high, examples)
        if row.default is not None and low <= row.default <= high:
            value = rec(values, row.name)
            return None if value == row.default else value
    elif len(examples) > 1:
        values = _sampled(examples)
    elif examples:
        values = None   # one value: drawn is given or not
    else:
        raise NotDrawable(f"attribute {row.name!r} has no values, examples or span to draw from: give its row in "
                          f"conformance/case/vocabulary.py one, or draw it in conformance/fuzz/strategies.py")
    given = rec(BOOLEANS, row.name)
    value = rec(values, f"{row.name}.value") if values is not None else examples[0]
    return value if given else None


def kept(op: str, form: str, attributes: dict, shape: dict, drawn: list[tuple[Attribute, Any]]) -> dict:
    """The drawn attributes the case gives: those drawn given, that its op and form own, and that
    validation finds sound beside its ``attributes`` and ``shape``."""
    found = {row.name: value for row, value in drawn if value is not None and op in row.ops and form in row.forms}
    refused = {name for name, _, _ in attribute_problems(op, form, {**attributes, **found}, shape)}
    return {name: value for name, value in found.items() if name not in refused}


def knowing(names: Iterable[str], rows: Iterable[Attribute]) -> set[str]:
    """The spec families that know every one of the attributes ``names`` (of ``rows``)."""
    families = set(SPEC_FAMILIES)
    for row in rows:
        if row.name in names:
            families &= set(row.families)
    return families


def _float32(value) -> float:
    return float(np.float32(value))


# built once per distinct argument and reused (conformance/fuzz/strategies.py says why)
@functools.cache
def _sampled(options: tuple) -> st.SearchStrategy:
    return st.sampled_from(options)


@functools.cache
def _numbers(number: bool, low, high, examples: tuple) -> st.SearchStrategy:
    """The span's numbers (float32 for a number), the examples first where there are any."""
    numbers = st.floats(low, high, width=32) if number else st.integers(low, high)
    return st.one_of(st.sampled_from(examples), numbers) if examples else numbers
