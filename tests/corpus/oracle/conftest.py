"""The oracle's sweeps share the fixtures of its unit tests (tests/unit/oracle/conftest.py): a private cache."""

from tests.unit.oracle.conftest import private_cache  # noqa: F401  (the same autouse fixture)
