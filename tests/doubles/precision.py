"""Deliberate test doubles for the effective-configuration machinery and the reduced-precision
judgement, named as such: numpy implementations (tests/doubles/wrong/numpy_rnn.py) that compute float32
models in a narrower precision and *declare* it, as OpenVINO's default configuration does on a
bf16 CPU, so that every machine can test what only some machines' runtimes do.

A :class:`Kernel` computes the way oneDNN's bf16 RNN kernels do (docs/precision.md, "Reduced-
precision kernels"): every input rounded to the narrow type (to nearest even), each gate's
pre-activation X·Wᵀ + H·Rᵀ + Wb + Rb accumulated in float32 from the narrow operands (exact
products), activations and elementwise arithmetic in float32, the state stored in the narrow type
after each step (and the outputs with it). Its legitimate variants (``LEGITIMATE``):

- :class:`PairwiseBf16`: the dot products summed pairwise;
- :class:`ReversedBf16`: summed in reverse order;
- :class:`StateF32Bf16`: the state kept in float32 between steps (rounded only as the recurrent
  product's operand);
- :class:`DeclaredBf16`: every intermediate stored in bf16 (pre-activations, gates, products,
  sums, the states), as a graph of bf16 nodes computes.

The same four in float16 (``LEGITIMATE_F16``, declaring only ``precision: f16``: the accumulation
is not reported), and a TF32 kernel (:class:`Tf32`: only the matrix products' operands rounded).
Deliberately wrong ones (``WRONG``): a tanh or sigmoid off by a relative few percent on every
call, a state scaled by 1.005 per step, and :class:`FakesProbeBf16`, which computes correctly but
returns the arithmetic probe's outputs with a 4-bit significand (conformance/run/probe.py), to
look narrower than it declares.

- :class:`PartialSumsBf16`: bf16 whose dot products round the running sum to bf16 after every
  term, declaring no accumulation (as OpenVINO's adapter does); its twin
  ``ClaimsF32PartialSumsBf16`` claims float32 accumulation, which the judgement must catch.
- :class:`DeclaredF16`: float16, accumulation not declared (kept for the effective tests).
- :class:`PinnedF32`: the same runtime with its precision pinned: a correct float32 implementation
  (the pinned sibling the ablation re-runs a default-configuration failure on).
- :class:`DeclaredBf16DroppedPeepholes`: :class:`DeclaredBf16` that also ignores P: wrong beyond
  its declared precision, which the gate must still catch.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np

from tests.doubles.wrong.numpy_rnn import NumpyRNN

#: the inputs a narrower arithmetic rounds (everything float the model reads)
_ROUNDED = ("X", "W", "R", "B", "initial_h", "initial_c", "P")
_F32 = np.dtype(np.float32)


def tf32(x):
    """float32 values rounded to TF32 (10 fraction bits), to nearest even, as float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    low = bits & 0x1FFF
    up = (low > 0x1000) | ((low == 0x1000) & ((bits >> 13) & 1 == 1))
    return ((bits & ~0x1FFF) + np.where(up, 0x2000, 0)).astype(np.uint32).view(np.float32)


class Kernel(NumpyRNN):
    """Computes float32 models the way a reduced-precision kernel does (see the module's
    docstring); other models as NumpyRNN does. Class attributes choose the scheme."""

    name = "kernel-double"
    version = "test-double"
    device = "CPU"
    config = "default"
    description = "test double: computes float32 models in bfloat16 as oneDNN's RNN kernels do"
    narrow = np.dtype(ml_dtypes.bfloat16)
    declared: dict = {"precision": "bf16", "accumulation": "float32"}
    order = "blas"          # the dot's summation order in float32: blas | forward | reverse | pairwise | partial
    state = "narrow"        # the state between steps: narrow | f32
    intermediates = "f32"   # each elementwise result: f32 | narrow (rounded to the narrow type)
    operands_only = False   # TF32: only the matrix products' operands are rounded
    #: deliberate errors (the wrong doubles): relative errors of tanh and sigmoid, state scaling
    tanh_error = 0.0
    sigmoid_error = 0.0
    state_scale = 1.0
    #: fake the probe: its outputs with this many significand bits (0: an honest probe)
    probe_bits = 0

    def r(self, x):
        """To the narrow type (to nearest even), as float32."""
        x = np.asarray(x, dtype=np.float32)
        if self.narrow == "tf32":
            return tf32(x)
        with np.errstate(over="ignore"):
            return x.astype(self.narrow).astype(np.float32)

    def keep(self, x):
        """An elementwise result: rounded where the scheme stores intermediates narrow."""
        return self.r(x) if self.intermediates == "narrow" else np.asarray(x, dtype=np.float32)

    def parse(self, model, feeds):
        p = super().parse(model, feeds)
        self._probe = p.dtype == np.float32 and p.W.size == 2 and float(p.W.ravel()[1]) == 2.0 ** -64
        if p.dtype != np.float32 or self.operands_only:
            return p
        rounded = {k: (self.r(getattr(p, k)) if getattr(p, k) is not None else None) for k in _ROUNDED}
        return dataclasses.replace(p, **rounded)

    def compute(self, p):
        out = super().compute(p)
        if getattr(self, "_probe", False) and self.probe_bits:
            for k, v in out.items():  # keep probe_bits significand bits: a narrower arithmetic
                m, e = np.frexp(v.astype(np.float64))
                out[k] = np.ldexp(np.round(m * 2.0 ** self.probe_bits) / 2.0 ** self.probe_bits, e).astype(v.dtype)
        return out

    def dot(self, blocks, biases):
        """Σ a·wᵀ over the (a [B, K], w [N, K]) blocks plus the biases, accumulated in float32 in
        the scheme's order, the products exact (narrow operands)."""
        with np.errstate(invalid="ignore", over="ignore"):  # non-finite inputs: IEEE's classes
            return self._dot(blocks, biases)

    def _dot(self, blocks, biases):
        if self.order == "blas":
            total = sum((a @ w.T for a, w in blocks), np.zeros((blocks[0][0].shape[0], blocks[0][1].shape[0]), _F32))
            for b in biases:
                total = total + b
            return total.astype(np.float32)
        terms = [a[:, None, k] * w[None, :, k] for a, w in blocks for k in range(a.shape[1])]
        terms += [np.broadcast_to(b, terms[0].shape if terms else b.shape) for b in biases]
        terms = [t.astype(np.float32) for t in terms]
        if self.order == "reverse":
            terms = terms[::-1]
        if self.order == "partial":  # the running sum rounded to the narrow type after every term
            total = self.r(terms[0])
            for t in terms[1:]:
                total = self.r(total + t)
            return total
        if self.order == "pairwise":
            while len(terms) > 1:
                terms = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)] + (
                    [terms[-1]] if len(terms) % 2 else [])
            return terms[0]
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total

    def operand(self, x):
        """A matrix product's operand: the state rounded as it goes in (TF32, or a float32 state)."""
        return self.r(x)

    def tanh(self, x):
        return np.tanh(x) * np.float32(1.0 + self.tanh_error)

    def sigmoid(self, x):
        return super().sigmoid(x) * np.float32(1.0 + self.sigmoid_error)

    def stored(self, h):
        """The state as kept between steps."""
        h = h * np.float32(self.state_scale)
        return self.r(h) if self.state == "narrow" and not self.operands_only else h.astype(np.float32)

    def cell(self, p, d, x, h, c, w, r, wb, rb):
        if p.dtype != np.float32:
            return super().cell(p, d, x, h, c, w, r, wb, rb)
        keep, acts, hs = self.keep, p.activations[d], p.hidden_size
        x = self.operand(x) if self.operands_only else x
        w = self.operand(w) if self.operands_only else w
        r = self.operand(r) if self.operands_only else r
        hin = self.operand(h)
        if p.op == "RNN":
            (f,) = acts
            return self.stored(keep(self.act(p, f, keep(self.dot([(x, w), (hin, r)], [wb, rb]))))), c
        if p.op == "GRU":
            f, g = acts
            zr = keep(self.dot([(x, w[:2 * hs]), (hin, r[:2 * hs])], [wb[:2 * hs], rb[:2 * hs]]))
            z = keep(self.act(p, f, zr[:, :hs]))
            rt = keep(self.act(p, f, zr[:, hs:]))
            wh, rh, wbh, rbh = w[2 * hs:], r[2 * hs:], wb[2 * hs:], rb[2 * hs:]
            if self.linear_before_reset(p.linear_before_reset):
                q = keep(self.dot([(hin, rh)], [rbh]))
                pre = keep(keep(self.dot([(x, wh)], [wbh])) + keep(rt * q))
            else:
                pre = keep(self.dot([(x, wh), (self.operand(keep(rt * h)), rh)], [wbh, rbh]))
            hh = keep(self.act(p, g, pre))
            one_z = keep(np.float32(1) - z)
            return self.stored(keep(keep(one_z * hh) + keep(z * h))), c
        f, g, hf = acts
        gates = self.dot([(x, w), (hin, r)], [wb, rb])
        gi, go, gf, gc = (gates[:, k * hs:(k + 1) * hs] for k in range(4))
        peep = self.peepholes(p.P[d])
        pi, po, pf = (peep[k * hs:(k + 1) * hs] for k in range(3))
        one = np.float32(1)

        def input_gate():
            return keep(self.act(p, f, keep(gi + pi * c)))

        def forget_gate():
            return keep(self.act(p, f, keep(gf + pf * c)))

        if p.input_forget:
            it, ft = self.input_forget_coupling(input_gate, forget_gate, one)
            it, ft = keep(it), keep(ft)
        else:
            it, ft = input_gate(), forget_gate()
        ct = keep(self.act(p, g, keep(gc)))
        c_new = keep(keep(ft * c) + keep(it * ct))
        ot = keep(self.act(p, f, keep(go + po * self.output_peephole_cell(c, c_new))))
        c_kept = self.r(c_new) if self.state == "narrow" and not self.operands_only else c_new
        return self.stored(keep(ot * keep(self.act(p, hf, c_new, clip=False)))), c_kept

    def effective(self) -> dict:
        return dict(self.declared)


class PairwiseBf16(Kernel):
    """Test double: oneDNN-like bf16, dot products summed pairwise in float32."""
    name = "bf16-pairwise"
    order = "pairwise"


class ReversedBf16(Kernel):
    """Test double: oneDNN-like bf16, dot products summed in reverse order."""
    name = "bf16-reversed"
    order = "reverse"


class StateF32Bf16(Kernel):
    """Test double: oneDNN-like bf16, the state kept in float32 between steps."""
    name = "bf16-state-f32"
    state = "f32"


class DeclaredBf16(Kernel):
    """Test double: computes float32 models in bfloat16, every intermediate stored in bfloat16,
    and declares it (precision: bf16, accumulation: float32)."""
    name = "bf16-double"
    description = "test double: computes float32 models in bfloat16 (float32 accumulation) and says so"
    intermediates = "narrow"
    order = "forward"


class PartialSumsBf16(Kernel):
    """Test double: bf16 whose dot products round the running sum to bf16 after every term (as
    OpenVINO 2026.4.1's CPU kernels were measured to round partial sums; docs/configuration.md),
    declaring only ``precision: bf16``, as OpenVINO's adapter does: the judgement admits a narrow
    accumulation where none is declared."""
    name = "bf16-partial-sums"
    order = "partial"
    declared = {"precision": "bf16"}


#: the same kernel claiming float32 accumulation, which it does not do: what the adapter must not
#: declare (a cancelling dot product lands beyond that claim's bound)
ClaimsF32PartialSumsBf16 = type("ClaimsF32PartialSumsBf16", (PartialSumsBf16,), {
    "name": "bf16-partial-sums-claims-f32", "declared": {"precision": "bf16", "accumulation": "float32"}})


class _F16:
    narrow = np.dtype(np.float16)
    declared = {"precision": "f16"}


class PairwiseF16(_F16, PairwiseBf16):
    name = "f16-pairwise"


class ReversedF16(_F16, ReversedBf16):
    name = "f16-reversed"


class StateF32F16(_F16, StateF32Bf16):
    name = "f16-state-f32"


class DeclaredF16(_F16, DeclaredBf16):
    """Test double: computes float32 models in float16 and declares it (precision: f16)."""
    name = "f16-double"
    description = "test double: computes float32 models in float16 and says so"


class Tf32(Kernel):
    """Test double: a TF32 kernel: X, W, R and the state rounded to TF32 as the matrix products'
    operands, everything else float32; declares precision: tf32."""
    name = "tf32-double"
    narrow = "tf32"
    operands_only = True
    declared = {"precision": "tf32"}


LEGITIMATE = (PairwiseBf16, ReversedBf16, StateF32Bf16, DeclaredBf16)
LEGITIMATE_F16 = (PairwiseF16, ReversedF16, StateF32F16, DeclaredF16)


def _wrong(base, label, **changes):
    return type(f"{label}{base.__name__}", (base,), {"name": f"{base.name}-{label.lower()}",
                                                      "bug": label, **changes})


TanhOff3Bf16 = _wrong(Kernel, "TanhOff3", tanh_error=0.03)
TanhOff1Bf16 = _wrong(Kernel, "TanhOff1", tanh_error=0.01)
SigmoidOff2Bf16 = _wrong(Kernel, "SigmoidOff2", sigmoid_error=0.02)
StateScaledBf16 = _wrong(Kernel, "StateScaled", state_scale=1.005)
FakesProbeBf16 = _wrong(Kernel, "FakesProbe", probe_bits=4)
TanhOffHalfF16 = _wrong(PairwiseF16, "TanhOffHalf", tanh_error=0.005)
TanhOff1Tf32 = _wrong(Tf32, "TanhOff1", tanh_error=0.01)
WRONG = (TanhOff3Bf16, TanhOff1Bf16, SigmoidOff2Bf16, StateScaledBf16, FakesProbeBf16, TanhOffHalfF16,
         TanhOff1Tf32)


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
    bug = "peepholes-ignored"  # a label (tests/doubles/wrong/bugs.py WrongPeepholesIgnored has the same bug)

    def peepholes(self, peep):
        return peep * False  # zeros (a NaN in P still gives NaN, as multiplying by 0 does)
