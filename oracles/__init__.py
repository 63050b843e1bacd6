"""The ground-truth oracle of the recurrent-operator conformance suite.

Evaluates ONNX RNN, GRU and LSTM in arbitrary precision (mpmath) from the exact binary value of
every input, under the documented semantics of a spec family (a *profile*: onnx, openvino,
directml). Where a spec is ambiguous it returns one reading per distinct result; where it is silent
it marks the affected output elements unspecified. See oracles/README.md.
"""

from .api import ORACLE_VERSION, cache_path, cached, computed_in, evaluate, evaluate_mp
from .errors import OracleError
from .points import Choice, Point, Profile
from .profiles import PROFILES
from .result import Expected, OracleResult, Reading

__all__ = [
    "ORACLE_VERSION",
    "PROFILES",
    "Choice",
    "Expected",
    "OracleError",
    "OracleResult",
    "Point",
    "Profile",
    "Reading",
    "cache_path",
    "cached",
    "computed_in",
    "evaluate",
    "evaluate_mp",
]
