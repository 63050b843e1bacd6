"""Deliberate test doubles for the judgement of unspecified elements, named as such: onnxruntime
wrapped so that Y_h (and Y_c) of every zero-length batch entry holds something chosen, which the spec
leaves undefined (conformance/compare/silent.py classifies it). Every specified element is left as
onnxruntime computed it.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import numpy_helper

from tests.doubles import ort_cpu


class _ZeroLength:
    name = "silent-double"
    format = "onnx"
    version = "test-double"
    description = "test double: onnxruntime with Y_h/Y_c of zero-length entries chosen by the test"

    def value(self, initial: np.ndarray | None, shape) -> np.ndarray:
        """What Y_h/Y_c of a zero-length entry holds (each double below says)."""
        return np.zeros(shape, np.float32)

    def run(self, model: bytes, feeds):
        m = onnx.load_from_string(model)
        node = m.graph.node[0]
        values = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
        values.update(feeds)
        slots = dict(zip(("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"), node.input))
        lens = values.get(slots.get("sequence_lens", ""))
        outputs = ort_cpu(model, feeds)
        if lens is None:
            return outputs
        empty = np.nonzero(np.asarray(lens) == 0)[0]
        for k, out in enumerate(m.graph.output):
            role = list(node.output).index(out.name) if out.name in node.output else -1
            if role in (1, 2) and empty.size:  # Y_h, Y_c: [D, B, H]
                initial = values.get(slots.get("initial_h" if role == 1 else "initial_c", ""))
                y = np.array(outputs[k])
                for b in empty:
                    y[:, b, :] = self.value(None if initial is None else initial[:, b, :], y[:, b, :].shape)
                outputs[k] = y
        return outputs


class ZeroLengthZeros(_ZeroLength):
    name = "silent-zeros"


class ZeroLengthInitial(_ZeroLength):
    name = "silent-initial"

    def value(self, initial, shape):
        return np.zeros(shape, np.float32) if initial is None else initial


class ZeroLengthFinite(_ZeroLength):
    name = "silent-finite"

    def value(self, initial, shape):
        return np.full(shape, 0.599, np.float32)


class ZeroLengthInf(_ZeroLength):
    name = "silent-inf"

    def value(self, initial, shape):
        return np.full(shape, np.inf, np.float32)


class ZeroLengthHeap(_ZeroLength):
    """What stale memory looks like: a different value at every call."""

    name = "silent-heap"

    def value(self, initial, shape):
        return np.frombuffer(os.urandom(4 * int(np.prod(shape))), dtype=np.uint8).reshape(*shape, 4)[..., 0] \
            .astype(np.float32) / 255.0 + 0.5
