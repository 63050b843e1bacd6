"""Deliberate test doubles of torch's recurrent modules as its CUDA kernels compute them, named as
such: runtimes of the ``torch`` program format (conformance/specs/torch.py) that evaluate the
program step by step in numpy float32, on the CPU, so that every machine (CI has no GPU) tests what
torch computes on a GPU. They take the program exactly as ``conformance.runtimes.torch.TorchRuntime``
does (``run(model, feeds)``, ``model`` the description's path, read by ``torch_program.read``) and
shape what they return with ``torch_program.finish``; use one as a plugin with
``conformance run --spec torch --runtime-plugin tests.doubles.torch_kernels:CudnnLike --runtime NAME``.

Every program the torch spec writes is computed: RNN (tanh, relu), GRU (gates r, z, n, with
n = tanh(W_in x + b_in + r * (W_hn h + b_hn))), LSTM (i, f, g, o) with ``proj_size``, stacked layers
(layer l reads layer l-1's output, both directions side by side), bidirectional, packed input (a
sequence stops at its length, its output past it is zero, its final state is the one at its length),
batch_first, unbatched input, the cells, bias on and off; what torch's own module checks (the
state_dict's names and shapes, the input's size, the states' shapes, the lengths) is refused with
torch's kind of error. The kernels' arithmetic below applies to float32 programs; float64 programs
compute in float64 and float16/bfloat16 ones in float32, their states stored in their type, correctly,
in every double.

The doubles, and what each imitates (the figures were measured on an NVIDIA H200, torch 2.11.0+cu130,
cuDNN 9.19.0):

- :class:`Exact`: a correct float32 implementation (float32 matrix products and accumulation,
  float32 activations within a few ulps): it passes the float32 spec bound.
- :class:`Tf32`: cuDNN's float32 RNNs with TF32 on, torch's default there: the matrix products'
  operands (X, W, R, the hidden state fed to the recurrent product, and the projection's W_hr and
  its input) rounded to TF32 (10 fraction bits, to nearest even), products exact and accumulated in
  float32, everything else float32; ``effective()`` declares ``precision: tf32``.
- :class:`CudnnLike`: TF32 off, but tanh and sigmoid as inaccurate as cuDNN's were measured: over
  8192 points in [-4, 4], tanh up to 125 float32 ulps off (median 13; 6656 points beyond 2 ulps),
  sigmoid within about 4 ulps (median 0.46), where ``torch.tanh`` is within 1.7 ulps. The error is a
  deterministic function of the input's float32 bits (tests/doubles/cudnn_activations.py).
- :class:`CudnnLikeTf32`: both, what torch on CUDA computes float32 RNNs in by default.
- :class:`TanhOff1Pct` and :class:`TanhOff1PctTf32`: deliberately wrong kernels, tanh × 1.01
  (sigmoid correct), the second declaring and computing TF32: the suite must catch them.
- :class:`StickyCuda`: correct float32, but a sequence module's call whose initial_h or initial_c has
  the wrong first dimension (the invalid LSTM that makes torch crash on the CPU:
  cases/regressions/lstm-torch-crash-*) raises ``CUDA error: device-side assert triggered`` (an
  :class:`AcceleratorError`, a RuntimeError, as torch's), and so does every later call in the same
  process, as a CUDA context does after a device-side assert. It has no way to say so: the suite must
  notice by itself.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from conformance.runtimes import torch_program as tp
from tests.doubles.cudnn_activations import cudnn_like, sigmoid32
from tests.doubles.precision import tf32

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
#: the feeds' and outputs' numpy type per program dtype (bfloat16: ml_dtypes', as torch_program.array gives)
NUMPY = {"float32": np.dtype(np.float32), "float64": np.dtype(np.float64), "float16": np.dtype(np.float16),
         "bfloat16": np.dtype(ml_dtypes.bfloat16)}

#: the process's CUDA context as :class:`StickyCuda` keeps it: the error once a device-side assert has
#: poisoned it (None while sound)
_CONTEXT: dict = {"error": None}


class AcceleratorError(RuntimeError):
    """What torch raises for a CUDA error (torch.AcceleratorError, a RuntimeError)."""


DEVICE_ASSERT = ("CUDA error: device-side assert triggered\nCUDA kernel errors might be asynchronously reported "
                 "at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider "
                 "passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side "
                 "assertions.\n(test double tests/doubles/torch_kernels.py StickyCuda)")


class Exact:
    """Test double: a correct float32 implementation of the torch programs (see the module's docstring).
    Class attributes choose a kernel's arithmetic; the subclasses are the other doubles."""

    name = "torch-exact-double"
    format = "torch"
    version = "test-double"
    device = "CPU"
    config = "default"
    description = "test double: torch.nn RNN/GRU/LSTM programs evaluated step by step in float32"
    #: the matrix products' operands rounded to TF32 (float32 programs)
    tf32 = False
    #: the projection's operands (W_hr and o * tanh(c)) rounded too, where ``tf32``
    tf32_projection = True
    #: tanh and sigmoid: "float32" (within a few ulps) or "cudnn" (:func:`cudnn_like`)
    activations = "float32"
    #: tanh's result multiplied by this (a deliberately wrong kernel: 1.01)
    tanh_scale = 1.0

    def __init__(self):
        self._dtype = ""
        self._kernel = False  # this call computes with the kernel's arithmetic (a float32 program)

    # -- the contract -----------------------------------------------------------------------------------

    def run(self, model, feeds: dict) -> list[np.ndarray]:
        desc, weights = tp.read(model)
        self._dtype = desc["dtype"]
        self._kernel = desc["dtype"] == "float32"
        compute = np.dtype(np.float64) if desc["dtype"] == "float64" else np.dtype(np.float32)
        params = _parameters(desc, weights, compute)
        given = {name: _feed(feeds[name], desc["dtype"], compute, name) for name in desc["inputs"]
                 if name != "lengths"}
        if "lengths" in desc["inputs"]:
            given["lengths"] = np.asarray(feeds["lengths"])
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            returned = (self._cell if desc["module"].endswith("Cell") else self._sequence)(desc, params, given)
        out = [np.asarray(r).astype(NUMPY[desc["dtype"]]) for r in returned]
        return tp.finish(desc, out, tp.steps_of(desc, feeds))

    def effective(self) -> dict:
        """torch's switches as :class:`TorchRuntime` reports them on CUDA, for this double's arithmetic."""
        found = {"cudnn.allow_tf32": self.tf32, "cuda.matmul.allow_tf32": False,
                 "float32_matmul_precision": "highest"}
        if self.tf32 and self._dtype == "float32":
            found["precision"] = "tf32"
        return found

    def describe(self) -> dict:
        return {"device": "cpu", "double": f"test double ({type(self).__name__}) of torch on CUDA"}

    # -- arithmetic -------------------------------------------------------------------------------------

    def mm(self, a: np.ndarray, w: np.ndarray, projection: bool = False) -> np.ndarray:
        """a @ wᵀ, accumulated in the compute type; TF32 operands where the kernel says so."""
        if self._kernel and self.tf32 and (self.tf32_projection or not projection):
            a, w = tf32(a), tf32(w)
        return a @ w.T

    def tanh(self, x: np.ndarray) -> np.ndarray:
        if not self._kernel:
            return np.tanh(x)
        y = cudnn_like(x, "tanh") if self.activations == "cudnn" else np.tanh(x)
        return y * np.float32(self.tanh_scale) if self.tanh_scale != 1.0 else y

    def sigmoid(self, x: np.ndarray) -> np.ndarray:
        if self._kernel and self.activations == "cudnn":
            return cudnn_like(x, "sigmoid")
        return sigmoid32(x)

    def check_state(self, module: str, which: str, got: tuple, expected: tuple) -> None:
        """A state of the wrong shape: torch's RuntimeError (StickyCuda: a device-side assert)."""
        if got != expected:
            raise RuntimeError(f"{module}: Expected {which} size {expected}, got {list(got)}")

    # -- the modules ------------------------------------------------------------------------------------

    def step(self, desc: dict, p: dict, x, h, c):
        """One step of one layer and direction: (h', c') from x [B, in], h [B, H'], c [B, H] or None."""
        kind, hidden = desc["module"].removesuffix("Cell"), desc["hidden_size"]
        xi = self.mm(x, p["ih"]) + p["bih"]
        hh = self.mm(h, p["hh"]) + p["bhh"]
        if kind == "RNN":
            pre = xi + hh
            return (np.maximum(pre, 0).astype(pre.dtype) if desc.get("nonlinearity") == "relu"
                    else self.tanh(pre)), c
        if kind == "GRU":
            r = self.sigmoid(xi[:, :hidden] + hh[:, :hidden])
            z = self.sigmoid(xi[:, hidden:2 * hidden] + hh[:, hidden:2 * hidden])
            n = self.tanh(xi[:, 2 * hidden:] + r * hh[:, 2 * hidden:])
            return (z.dtype.type(1) - z) * n + z * h, c
        gates = xi + hh
        i, f, g, o = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
        c_new = self.sigmoid(f) * c + self.sigmoid(i) * self.tanh(g)
        h_new = self.sigmoid(o) * self.tanh(c_new)
        if p.get("hr") is not None:
            h_new = self.mm(h_new, p["hr"], projection=True)
        return h_new, c_new

    def _cell(self, desc: dict, params: dict, given: dict) -> list:
        kind, hidden = desc["module"], desc["hidden_size"]
        x = given["input"]
        if x.ndim not in (1, 2):
            raise ValueError(f"{kind}: Expected input to be 1D or 2D, got {x.ndim}D instead")
        batched = x.ndim == 2
        x = x if batched else x[None]
        if x.shape[1] != desc["input_size"]:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected {desc['input_size']}")
        states = []
        for name in ("h0", "c0") if kind == "LSTMCell" else ("h0",):
            s = given.get(name)
            if s is None:
                s = np.zeros((x.shape[0], hidden), x.dtype)
            elif s.ndim != (2 if batched else 1):
                raise RuntimeError(f"{kind}: Expected hidden to be {2 if batched else 1}D, got {s.ndim}D")
            else:
                s = s if batched else s[None]
            if s.shape != (x.shape[0], hidden):
                raise RuntimeError(f"{kind}: hidden has shape {list(s.shape)}, expected {[x.shape[0], hidden]}")
            states.append(s)
        h, c = self.step(desc, params[""], x, states[0], states[1] if len(states) > 1 else None)
        out = [self._stored(h, desc)] + ([self._stored(c, desc)] if kind == "LSTMCell" else [])
        return out if batched else [o[0] for o in out]

    def _sequence(self, desc: dict, params: dict, given: dict) -> list:
        kind, hidden = desc["module"], desc["hidden_size"]
        layers, d = desc["num_layers"], 2 if desc["bidirectional"] else 1
        size = desc.get("proj_size") or hidden
        x = given["input"]
        if x.ndim not in (2, 3):
            raise ValueError(f"{kind}: Expected input to be 2D or 3D, got {x.ndim}D instead")
        batched = x.ndim == 3
        x = (np.swapaxes(x, 0, 1) if desc["batch_first"] else x) if batched else x[:, None]
        if x.shape[2] != desc["input_size"]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {desc['input_size']}, "
                               f"got {x.shape[2]}")
        steps, batch = x.shape[:2]
        lengths = _lengths(given.get("lengths"), steps, batch)
        states = {}
        for name, width, which in ((("h0", size, "hidden[0]"), ("c0", hidden, "hidden[1]")) if kind == "LSTM"
                                   else (("h0", size, "hidden"),)):
            s = given.get(name)
            if s is None:
                states[name] = np.zeros((layers * d, batch, width), x.dtype)
                continue
            if s.ndim != (3 if batched else 2):
                raise RuntimeError(f"For {'batched 3-D' if batched else 'unbatched 2-D'} input, hx should also "
                                   f"be {3 if batched else 2}-D but got {s.ndim}-D tensor")
            expected = (layers * d, batch, width) if batched else (layers * d, width)
            self.check_state(kind, which, s.shape, expected)
            states[name] = s if batched else s[:, None]
        layer_in, h_n, c_n = x, [], []
        for layer in range(layers):
            outs = []
            for direction in range(d):
                index, c0 = layer * d + direction, states.get("c0")
                y, h, c = self._direction(desc, params[f"_l{layer}{'_reverse' if direction else ''}"], layer_in,
                                          lengths, states["h0"][index], None if c0 is None else c0[index],
                                          reverse=direction == 1)
                outs.append(y)
                h_n.append(h)
                c_n.append(c)
            layer_in = np.concatenate(outs, axis=2)
        output = layer_in[:int(lengths.max())] if "lengths" in given else layer_in
        if desc["batch_first"] and batched:
            output = np.swapaxes(output, 0, 1)
        found = [output, np.stack(h_n)] + ([np.stack(c_n)] if kind == "LSTM" else [])
        return found if batched else [f[:, 0] for f in found]  # an unbatched run's batch axis dropped

    def _direction(self, desc: dict, p: dict, x, lengths, h, c, reverse: bool):
        """One layer's direction over the sequence: (its output [S, B, H'], final h, final c), each
        batch entry stopping at its length (its output past it zero, its final state the one there)."""
        steps, batch = x.shape[:2]
        y = np.zeros((steps, batch, h.shape[-1]), x.dtype)
        rows = np.arange(batch)
        for k in range(steps):
            active = k < lengths
            if not active.any():
                break
            t = np.where(active, lengths - 1 - k, 0) if reverse else np.full(batch, k)
            h_new, c_new = self.step(desc, p, x[t, rows], h, c)
            h_new = self._stored(h_new, desc)
            h = np.where(active[:, None], h_new, h)
            if c is not None:
                c = np.where(active[:, None], self._stored(c_new, desc), c)
            y[t[active], rows[active]] = h_new[active]
        return y, h, c

    @staticmethod
    def _stored(v: np.ndarray, desc: dict) -> np.ndarray:
        """A state as torch keeps it: in the program's type (float16, bfloat16 rounded), computed wider."""
        kept = NUMPY[desc["dtype"]]
        return v.astype(kept).astype(v.dtype) if kept.itemsize == 2 else v


def _feed(arr, dtype: str, compute: np.dtype, name: str) -> np.ndarray:
    """A feed in the compute type; a feed not of the program's type is refused, as torch does."""
    arr = np.asarray(arr)
    if arr.dtype != NUMPY[dtype]:
        raise ValueError(f"{name} must have the type {dtype}, got {arr.dtype}")
    return arr.astype(compute)


def _parameters(desc: dict, weights: dict, compute: np.dtype) -> dict:
    """{suffix: {"ih", "hh", "bih", "bhh", "hr"}} of the state_dict, loaded as torch's
    ``load_state_dict(strict=True)`` does (a missing, unexpected or misshapen weight refused); absent
    biases are zeros. Cells have the one suffix ""."""
    kind, hidden = desc["module"], desc["hidden_size"]
    base = kind.removesuffix("Cell")
    if not isinstance(hidden, int) or hidden <= 0:
        raise ValueError(f"hidden_size must be greater than zero, got {hidden}")
    g, size = GATES[base] * hidden, desc.get("proj_size") or hidden
    if size > hidden or (desc.get("proj_size") and (base != "LSTM" or size < 0)):
        raise ValueError(f"proj_size {size} has to be smaller than hidden_size {hidden}")
    shapes: dict = {}
    if kind.endswith("Cell"):
        suffixes = {"": desc["input_size"]}
    else:
        d = 2 if desc["bidirectional"] else 1
        suffixes = {f"_l{layer}{'_reverse' if k else ''}": desc["input_size"] if layer == 0 else d * size
                    for layer in range(desc["num_layers"]) for k in range(d)}
    for suffix, width in suffixes.items():
        shapes[f"weight_ih{suffix}"] = (g, width)
        shapes[f"weight_hh{suffix}"] = (g, size)
        if desc["bias"]:
            shapes[f"bias_ih{suffix}"] = shapes[f"bias_hh{suffix}"] = (g,)
        if desc.get("proj_size"):
            shapes[f"weight_hr{suffix}"] = (size, hidden)
    missing, unexpected = sorted(set(shapes) - set(weights)), sorted(set(weights) - set(shapes))
    if missing or unexpected:
        raise RuntimeError(f"Error(s) in loading state_dict for {kind}: missing keys {missing}, "
                           f"unexpected keys {unexpected}")
    wrong = [f"size mismatch for {k}: copying a param with shape {list(np.shape(weights[k]))}, the shape in "
             f"current model is {list(v)}" for k, v in shapes.items() if tuple(np.shape(weights[k])) != v]
    if wrong:
        raise RuntimeError(f"Error(s) in loading state_dict for {kind}: " + "; ".join(wrong))

    def value(key: str) -> np.ndarray:
        arr = np.asarray(weights[key])
        if desc["dtype"] == "bfloat16":
            arr = arr.view(ml_dtypes.bfloat16)
        return arr.astype(compute)

    names = {"ih": "weight_ih", "hh": "weight_hh", "bih": "bias_ih", "bhh": "bias_hh", "hr": "weight_hr"}
    return {suffix: {k: value(n + suffix) if n + suffix in weights else (np.zeros(g, compute) if k[0] == "b" else None)
                     for k, n in names.items()} for suffix in suffixes}


def _lengths(lengths, steps: int, batch: int) -> np.ndarray:
    """Each batch entry's length: ``lengths`` as ``pack_padded_sequence`` takes them (one per batch entry,
    each in 1..steps), or every entry the whole sequence."""
    if lengths is None:
        return np.full(batch, steps)
    lengths = np.asarray(lengths).astype(np.int64)
    if lengths.ndim != 1 or lengths.shape[0] != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.size} "
                           f"(batch_size={batch})")
    if (lengths <= 0).any():
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if (lengths > steps).any():
        raise RuntimeError(f"lengths {lengths.tolist()} exceed the sequence length {steps}")
    return lengths


class Tf32(Exact):
    """Test double: cuDNN's float32 RNNs with TF32 on (torch's default on CUDA): the matrix products'
    operands rounded to TF32; declares precision: tf32."""
    name = "torch-tf32-double"
    device = "CUDA"
    description = "test double: torch on CUDA with TF32 (matrix-product operands rounded to TF32)"
    tf32 = True


class CudnnLike(Exact):
    """Test double: cuDNN's float32 RNNs with TF32 off: float32, tanh and sigmoid as inaccurate as
    cuDNN's were measured (tanh up to 125 ulps, median 13; sigmoid about 4)."""
    name = "torch-cudnn-like-double"
    device = "CUDA"
    description = "test double: torch on CUDA, TF32 off, with cuDNN-like tanh and sigmoid errors"
    activations = "cudnn"


class CudnnLikeTf32(CudnnLike):
    """Test double: torch on CUDA by default: TF32 operands and cuDNN-like tanh and sigmoid."""
    name = "torch-cudnn-like-tf32-double"
    description = "test double: torch on CUDA by default (TF32, cuDNN-like tanh and sigmoid errors)"
    tf32 = True


class TanhOff1Pct(Exact):
    """Deliberately wrong test double: tanh × 1.01 (sigmoid correct), float32 otherwise."""
    name = "torch-tanh-off-1pct-double"
    device = "CUDA"
    description = "deliberately wrong test double: torch-like kernels whose tanh is 1 % too large"
    tanh_scale = 1.01


class TanhOff1PctTf32(TanhOff1Pct):
    """Deliberately wrong test double: tanh × 1.01, TF32 operands, declaring tf32."""
    name = "torch-tanh-off-1pct-tf32-double"
    description = "deliberately wrong test double: TF32 kernels whose tanh is 1 % too large"
    tf32 = True


class StickyCuda(Exact):
    """Test double: correct float32, but a wrong first dimension of a sequence module's initial state
    poisons the process as a CUDA device-side assert does: that call and every later one raise."""
    name = "torch-sticky-cuda-double"
    device = "CUDA"
    description = "test double: a CUDA context a device-side assert poisons for every later call"

    def run(self, model, feeds: dict) -> list[np.ndarray]:
        if _CONTEXT["error"] is not None:
            raise AcceleratorError(_CONTEXT["error"])
        return super().run(model, feeds)

    def check_state(self, module: str, which: str, got: tuple, expected: tuple) -> None:
        if len(got) == len(expected) and got[0] != expected[0]:
            _CONTEXT["error"] = DEVICE_ASSERT
            raise AcceleratorError(DEVICE_ASSERT)
        super().check_state(module, which, got, expected)


DOUBLES = (Exact, Tf32, CudnnLike, CudnnLikeTf32, TanhOff1Pct, TanhOff1PctTf32, StickyCuda)
