"""Deliberate test doubles for the soundness check (conformance/isolation/soundness.py), named as such:
onnxruntime on the CPU, except that a refusal leaves the process unable to compute, as a CUDA
device-side assert does (every later CUDA call in the process raises "device-side assert triggered").

- :class:`StickyAfterRefusal`: after its first refusal every call raises. So each pair whose call
  raises must be ``crash`` (it left its worker unsound), and every other pair must get the verdict
  onnxruntime gives it, as though nothing had happened.
- :class:`StickyWithSound`: the same, with the runtime contract's ``sound()``, which raises once the
  state is lost (as torch's adapter does on CUDA); it has no canary to lean on when the probe is not
  run.
- :class:`StickyAfterRefusalSilently`: after its first refusal every later call returns zeros
  instead of raising: a lost state that does not say so; the canary's outputs change.
"""

from __future__ import annotations

import numpy as np

from tests.doubles import ort_cpu

LOST = "CUDA error: device-side assert triggered (a test double: tests/doubles/sticky.py)"


class StickyAfterRefusal:
    name = "sticky"
    format = "onnx"
    version = "1.0"

    def __init__(self):
        self.lost = False

    def run(self, model: bytes, feeds: dict):
        if self.lost:
            raise RuntimeError(LOST)
        try:
            return ort_cpu(model, feeds)
        except Exception:
            self.lost = True
            raise


class StickyWithSound(StickyAfterRefusal):
    name = "sticky-sound"

    def sound(self) -> None:
        if self.lost:
            raise RuntimeError(LOST)


class StickyAfterRefusalSilently(StickyAfterRefusal):
    name = "sticky-silent"

    def run(self, model: bytes, feeds: dict):
        if self.lost:
            return [np.zeros_like(out) for out in ort_cpu(model, feeds)]
        try:
            return ort_cpu(model, feeds)
        except Exception:
            self.lost = True
            raise
