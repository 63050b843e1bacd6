"""Test doubles for the fuzzer's own tests, named as such: none is a runtime under test.

``SegfaultOnBatch3`` is the correct numpy implementation (tests.doubles.wrong.NumpyRNN with no bug) except
that it crashes its process with a real segmentation fault when batch_size is 3, so a campaign must
report one crash finding and go on judging the other cases.
"""

from __future__ import annotations

import ctypes

import onnx

from tests.doubles.wrong import NumpyRNN


class SegfaultOnBatch3(NumpyRNN):
    name = "segfault-on-batch-3"
    format = "onnx"
    version = "test-double"
    description = "deliberate test double: segfaults when batch_size == 3, correct otherwise"

    def run(self, model: bytes, feeds):
        m = onnx.load_from_string(model)
        layout = next((a.i for a in m.graph.node[0].attribute if a.name == "layout"), 0)
        x = feeds.get("X")
        if x is not None and x.ndim == 3 and x.shape[0 if layout else 1] == 3:
            ctypes.string_at(0)
        return super().run(model, feeds)

