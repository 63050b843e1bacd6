"""Fixtures of the oracle's tests: the repository root importable, and a private cache."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Every test gets an empty cache directory, so none reads another's results."""
    folder = tmp_path / "oracle-cache"
    monkeypatch.setenv("CONFORMANCE_ORACLE_CACHE", str(folder))
    return folder
