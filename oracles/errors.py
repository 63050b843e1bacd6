"""The one exception the oracle raises for a problem it cannot evaluate."""


class OracleError(ValueError):
    """An invalid problem: a wrong shape, an unknown activation, an attribute out of range.

    The message quotes the bad value, states the constraint, and says how to fix it when known.
    """
