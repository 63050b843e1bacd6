"""Each vocabulary lives in one table; these tests fail when a table and one of its readers disagree.

This module holds the corpus tier's tests of it (the whole corpus or a run end to end); the others:
tests/runtime/test_tables.py, tests/unit/test_tables.py."""

from __future__ import annotations

import pytest

from conformance.case.features import ABLATIONS, FEATURES, REDUCTIONS, features
from conformance.case.load import load_paths
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def corpus():
    cases, errors = load_paths([ROOT / "cases"])
    assert cases and not errors
    return cases


def _covered(token: str, row) -> bool:
    return any(token == k or (k.endswith("=") and token.startswith(k)) for k in row.tokens)


def test_every_token_a_case_can_have_has_a_row(corpus):
    missing = {t for c in corpus for t in features(c) if not any(_covered(t, f) for f in FEATURES)}
    assert not missing, f"feature tokens with no row in case.features.FEATURES: {sorted(missing)}"


def test_a_present_feature_shows_in_the_case_tokens(corpus):
    """A removal row whose presence test holds names a token the case really has (valid cases: an
    invalid direction is not a direction)."""
    wrong = [(f.name, c.id) for c in corpus if c.valid for f in FEATURES
             if f.present is not None and f.present(c) and not any(_covered(t, f) for t in features(c))]
    assert not wrong, wrong[:5]


def test_every_removal_takes_its_feature_away(corpus):
    for c in corpus:
        if not c.valid:
            continue
        for f in ABLATIONS + REDUCTIONS:
            if f.present(c):
                reduced = f.remove(c)
                assert not f.present(reduced), (f.name, c.id)
                assert reduced.id.startswith(c.id + "~")
