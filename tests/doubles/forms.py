"""Test doubles for the execution forms and the relations (conformance/runtimes/forms.py,
conformance/run/relations.py): the numpy ONNX implementation of tests/doubles/wrong/, taking every form, with
one deliberately wrong behaviour each that only its form or relation shows.

- :class:`FormsNumpy`: correct in every form (the control);
- :class:`IgnoresFedWeights`: W, R, B and P fed as graph inputs are read as zeros (an engine that
  ignored weights given as inputs shipped: tracel-ai/burn-onnx#458) - ``weights=inputs`` shows it;
- :class:`LeaksState`: a loaded model keeps the last call's final state and starts the next call from
  it where that call has no initial_h (a buffer not cleared between runs) - ``session=reused`` shows it;
- :class:`ShapeSpecialized`: a loaded model keeps the sequence length it first ran at and runs every
  later call at that length (a time dimension frozen at compile time) - ``shape=dynamic`` shows it;
- :class:`IgnoresClipInEveryForm`: ignores ``clip`` in every form alike - a plain defect, which the
  ablation names once for the plain target and its forms;
- :class:`IgnoresInputForgetAndPeepholes`: ignores input_forget and the peepholes: two plain defects
  whose cases share a family, which the ablation names apart;
- :class:`BatchSliceBreaker`: entries past the first of a batch come back 2^-19 (relative) off,
  within the oracle's tolerance on ordinary cases but not within a runtime's agreement with itself -
  ``relations=on`` (batch-slice) shows it.

Each runs as a plugin: ``--runtime-plugin tests.doubles.forms:LeaksState``.
"""

from __future__ import annotations

import onnx

from tests.doubles.wrong.numpy_rnn import NumpyRNN

WEIGHTS = ("W", "R", "B", "P")


class FormsNumpy(NumpyRNN):
    """The numpy test double, declaring every execution form; correct."""

    name = "numpy-forms"
    description = "numpy ONNX RNN/GRU/LSTM test double taking every execution form (correct)"
    forms = {"shape": ["dynamic"], "weights": ["inputs"], "session": ["reused"], "threads": ["4"],
             "relations": ["on"]}

    def load(self, model: bytes):
        return _Loaded(self, onnx.load_from_string(model))

    def run(self, model: bytes, feeds: dict) -> list:
        return self.load(model).run(feeds)

    def problem(self, model, feeds: dict, loaded: _Loaded):
        return self.parse(model, feeds)

    def finish(self, p, out: dict, loaded: _Loaded) -> dict:
        return out


class _Loaded:
    def __init__(self, runtime: FormsNumpy, model):
        self.runtime, self.model = runtime, model
        self.kept: dict = {}

    def run(self, feeds: dict) -> list:
        p = self.runtime.problem(self.model, feeds, self)
        out = self.runtime.finish(p, self.runtime.compute(p), self)
        return [out[name] for name in p.wanted]


class IgnoresFedWeights(FormsNumpy):
    name = "numpy-ignores-fed-weights"
    description = "test double: W, R, B, P fed as graph inputs read as zeros"

    def problem(self, model, feeds, loaded):
        import numpy as np
        return self.parse(model, {k: (np.zeros_like(v) if k in WEIGHTS else v) for k, v in feeds.items()})


class IgnoresClipInEveryForm(FormsNumpy):
    name = "numpy-ignores-clip"
    description = "test double: clip ignored, in the plain form and every other"

    def problem(self, model, feeds, loaded):
        import dataclasses
        return dataclasses.replace(self.parse(model, feeds), clip=None)


class IgnoresInputForgetAndPeepholes(FormsNumpy):
    name = "numpy-ignores-input-forget-and-peepholes"
    description = "test double: input_forget and P ignored"

    def problem(self, model, feeds, loaded):
        import dataclasses

        import numpy as np
        p = self.parse(model, feeds)
        return dataclasses.replace(p, input_forget=False, P=np.zeros_like(p.P))


class LeaksState(FormsNumpy):
    name = "numpy-leaks-state"
    description = "test double: a loaded model starts a call without initial_h from the last call's final state"

    def problem(self, model, feeds, loaded):
        p = self.parse(model, feeds)
        last = loaded.kept.get("h")
        fed = any(i.name == "initial_h" for i in model.graph.input) and "initial_h" in feeds
        if last is not None and not fed:
            rows = min(last.shape[1], p.initial_h.shape[1])
            if last.shape[0] == p.initial_h.shape[0] and last.shape[2] == p.initial_h.shape[2]:
                p.initial_h[:, :rows] = last[:, :rows]
        return p

    def finish(self, p, out, loaded):
        loaded.kept["h"] = out["Y_h"].astype(p.compute) if p.layout == 0 else out["Y_h"].transpose(1, 0, 2)
        return out


class ShapeSpecialized(FormsNumpy):
    name = "numpy-shape-specialized"
    description = "test double: a loaded model runs every call at the sequence length of its first"

    def problem(self, model, feeds, loaded):
        import numpy as np
        p = self.parse(model, feeds)
        s = p.X.shape[0]
        first = loaded.kept.setdefault("seq", s)
        if s > first:  # the steps past the first call's length are never run
            p.X = p.X[:first]
            p.sequence_lens = np.minimum(p.sequence_lens, first)
            loaded.kept["pad"] = s - first
        elif s < first:  # the missing steps run on zeros
            p.X = np.concatenate([p.X, np.zeros((first - s, *p.X.shape[1:]), p.X.dtype)])
            p.sequence_lens = np.full_like(p.sequence_lens, first)
            loaded.kept["cut"] = s
        return p

    def finish(self, p, out, loaded):
        import numpy as np
        axis = 0 if p.layout == 0 else 1
        y = out["Y"]
        pad, cut = loaded.kept.pop("pad", 0), loaded.kept.pop("cut", None)
        if pad:  # the steps never run come back as zeros
            shape = list(y.shape)
            shape[axis] = pad
            y = np.concatenate([y, np.zeros(shape, y.dtype)], axis=axis)
        if cut is not None:
            y = y[:cut] if axis == 0 else y[:, :cut]
        return dict(out, Y=np.ascontiguousarray(y))


class BatchSliceBreaker(FormsNumpy):
    name = "numpy-batch-slice-breaker"
    description = "test double: batch entries past the first come back 2^-19 (relative) off"

    def perturb_outputs(self, out: dict, compute):
        out = {k: v.copy() for k, v in out.items()}
        scale = compute.type(1 + 2.0 ** -19)
        if out["Y"].shape[2] > 1:
            out["Y"][:, :, 1:] *= scale
            for name in ("Y_h", "Y_c"):
                out[name][:, 1:] *= scale
        return out
