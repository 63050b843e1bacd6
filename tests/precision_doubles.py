"""Deliberate test doubles for the effective-configuration machinery, named as such: numpy
implementations (tests/wrong/numpy_rnn.py) that compute float32 models in a narrower precision and
*declare* it, as OpenVINO's default configuration does on a bf16 CPU, so that every machine can
test what only some machines' runtimes do.

- :class:`DeclaredBf16`: rounds every input to bfloat16 (to nearest even), accumulates the dot
  products in float32 and stores every result in bfloat16, as an x86 bf16 kernel does; its
  ``effective()`` says ``precision: bf16``, ``accumulation: float32``.
- :class:`DeclaredF16`: the same in float16 (ARM's choice), accumulation not declared.
- :class:`PinnedF32`: the same runtime with its precision pinned: a correct float32 implementation
  (the pinned sibling the ablation re-runs a default-configuration failure on).
- :class:`DeclaredBf16DroppedPeepholes`: :class:`DeclaredBf16` that also ignores P: wrong beyond
  its declared precision, which the gate must still catch.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np

from tests.wrong.numpy_rnn import NumpyRNN

#: the inputs a narrower arithmetic rounds (everything float the model reads)
_ROUNDED = ("X", "W", "R", "B", "initial_h", "initial_c", "P")


class _Narrow(NumpyRNN):
    """Computes float32 models in ``narrow`` (a numpy float type); other models as NumpyRNN does."""

    name = "narrow-double"
    version = "test-double"
    device = "CPU"
    config = "default"
    narrow = np.dtype(ml_dtypes.bfloat16)
    declared: dict = {}

    def parse(self, model, feeds):
        p = super().parse(model, feeds)
        if p.dtype != np.float32:
            return p
        rounded = {k: (getattr(p, k).astype(self.narrow) if getattr(p, k) is not None else None) for k in _ROUNDED}
        return dataclasses.replace(p, compute=self.narrow, **rounded)

    def matmul(self, a, w):
        """Products accumulated in float32 (exact products of narrow values), the sum stored narrow."""
        if a.dtype != self.narrow:
            return super().matmul(a, w)
        return (a.astype(np.float32) @ w.astype(np.float32).T).astype(self.narrow)

    def effective(self) -> dict:
        return dict(self.declared)


class DeclaredBf16(_Narrow):
    """Test double: computes float32 models in bfloat16 and declares it (precision: bf16)."""

    name = "bf16-double"
    description = "test double: computes float32 models in bfloat16 (float32 accumulation) and says so"
    narrow = np.dtype(ml_dtypes.bfloat16)
    declared = {"precision": "bf16", "accumulation": "float32"}


class DeclaredF16(_Narrow):
    """Test double: computes float32 models in float16 and declares it (precision: f16)."""

    name = "f16-double"
    description = "test double: computes float32 models in float16 and says so"
    narrow = np.dtype(np.float16)
    declared = {"precision": "f16"}


class PinnedF32(NumpyRNN):
    """Test double: bf16-double's pinned configuration, a correct float32 implementation."""

    name = "bf16-double"
    version = "test-double"
    device = "CPU"
    config = "precision=pinned"
    description = "test double: the pinned configuration of bf16-double (float32)"

    def effective(self) -> dict:
        return {"precision": "f32"}


class DeclaredBf16DroppedPeepholes(DeclaredBf16):
    """Test double: declared bf16, and wrong beyond it: ignores the peepholes P."""

    name = "bf16-double-no-peepholes"
    description = "deliberately wrong test double: computes in declared bf16 and ignores P"
    bug = "peepholes-ignored"  # a label (tests/wrong/bugs.py WrongPeepholesIgnored has the same bug)

    def peepholes(self, peep):
        return peep * False  # zeros (a NaN in P still gives NaN, as multiplying by 0 does)
