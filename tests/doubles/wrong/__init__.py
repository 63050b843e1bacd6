"""Deliberately wrong implementations of ONNX RNN/GRU/LSTM: test doubles, named as such.

``NumpyRNN`` is a plain numpy implementation, correct, with a named hook at each point a bug
changes (``HOOKS``). Each class in ``WRONG`` overrides one hook: a runtime plugin with one realistic
bug, used to prove the suite's comparison catches it; each class in ``BENIGN`` differs from the
correct mode acceptably and must pass. Every class carries ``ops``, ``visible_when``, ``select`` (a ``-k``
expression over ``cases/``) and, for the wrong ones, ``caught_by_interim``. Run one as a plugin:
``--runtime-plugin tests.doubles.wrong:<Class>``.
"""

from tests.doubles.wrong.bugs import *  # noqa: F401,F403  (every plugin class, importable as tests.doubles.wrong:<Class>)
from tests.doubles.wrong.bugs import BENIGN, BUGS, WRONG, Benign, WrongImplementation
from tests.doubles.wrong.numpy_rnn import HOOKS, NumpyRNN, Rejected


def plugin_path(cls: type) -> str:
    """The ``--runtime-plugin`` argument that loads ``cls``, e.g. ``tests.doubles.wrong:WrongGateOrderGRU``."""
    return f"{__name__}:{cls.__name__}"


__all__ = ["BENIGN", "BUGS", "HOOKS", "WRONG", "Benign", "NumpyRNN", "Rejected", "WrongImplementation", "plugin_path",
           *(cls.__name__ for cls in (*WRONG.values(), *BENIGN.values()))]
