"""What a correct implementation may do, as unit roundoffs: the arithmetic of a dtype, and the
reduced-precision kernels that compute a wider model in a narrower type.

``arithmetic(dtype)`` is IEEE arithmetic in the case's own dtype (the running-error-v1 model).
``kernel(compute)`` is a kernel that computes a float32 (or float64) model in a narrower type, as
such kernels are built (kernel-v1; docs/precision.md, "Reduced-precision kernels"):

- bf16 and f16 (OpenVINO's CPU default on AVX512-BF16/AMX and on ARM, WebNN and CUDA f16 paths):
  every input rounded to the narrow type; dot products accumulated in float32 (where declared) or
  in the narrow type, and stored narrow; each elementwise result (a gate's pre-activation, a gate,
  a product, the new cell and hidden state) computed from narrow operands and rounded to the narrow
  type, or kept in float32 (the bound admits both); activations computed in float32 (a library
  kernel within ACT_ULPS float32 ulps) and rounded once to the narrow type;
- TF32 (CUDA tensor cores): only the matrix products' operands (X, W, R and the state fed to the
  recurrent product) rounded to TF32's 10 fraction bits, accumulation and everything else float32.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cache

import ml_dtypes
import numpy as np

#: the model's name and version: recorded on every OracleResult; change it with the model.
MODEL = "running-error-v1"
#: the reduced-precision kernel model's name (OracleResult.precision["kernel"] of computed_in)
KERNEL_MODEL = "kernel-v1"

#: how the model treats ±Inf and NaN (problems with a non-finite input; oracles/README.md, "Non-finite
#: inputs"): their classes walked in IEEE arithmetic, bound 0 at a non-finite value, and a taint
#: where an infinity meets a factor the model may hold as 0
NONFINITE = "ieee-classes-v1"

#: k_act: a correct library's exp, log, tanh and sigmoid are accurate to this many ulps of the
#: dtype (glibc, MLAS, oneDNN, OpenVINO and CUDA's non-fast-math functions are within 1–4).
ACT_ULPS = 4.0

#: the most a *measured* activation may widen the model (``with_activations``), in float32 ulps as k_act
#: counts them: 2^12 ulps is 2^-11 relative, TF32's unit roundoff, the narrowest arithmetic a float32
#: model is computed in without declaring a narrow type. A kernel whose tanh or sigmoid is worse than
#: that is judged at the ceiling, so a runtime cannot excuse a real error through its own probe: a tanh
#: off by 1 % (83,886 such ulps) is 20 times beyond it (docs/precision.md, "Measured activations").
ACT_ULPS_CEILING = 4096.0
#: the functions whose accuracy the activation probe measures through the recurrent op itself
MEASURED_FUNCTIONS = ("Tanh", "Sigmoid")

#: the absolute floor of those functions near zero, in units of u (ulps of ½, the scale of the
#: sigmoid's and tanh's range): vectorised kernels (MLAS's logistic and tanh, a sigmoid computed
#: as ½ + ½·tanh(x/2)) are accurate to a few ulps of their range, not of a tiny result — measured:
#: onnxruntime's float32 tanh 2.8·u, its sigmoid returns 0 where the exact value is 1e-11.
ACT_ABS_ULPS = 4.0

#: kinks (Relu, clip, HardSigmoid's clamps) and jumps (ThresholdedRelu) are looked for within
#: a ± KINK_WIDEN·e(a): the first-order e is trusted to within the tolerance's safety factor.
KINK_WIDEN = 2.0

#: accumulation types a runtime may use for dot products, per dtype: "dtype" (the dtype itself)
#: or "float32". The bound admits the worse of the ones listed.
ACCUMULATIONS = {
    "float64": ("dtype",),
    "float32": ("dtype",),
    "float16": ("dtype", "float32"),
    "bfloat16": ("dtype", "float32"),
    "tfloat32": ("float32",),
}

#: significand bits (implicit bit included) and the smallest normal, per dtype
FORMATS = {
    "float64": (53, 2.0 ** -1022),
    "float32": (24, 2.0 ** -126),
    "float16": (11, 2.0 ** -14),
    "bfloat16": (8, 2.0 ** -126),
    # TF32 (NVIDIA tensor cores, torch's allow_tf32): float32's range with 10 fraction bits; only
    # ever a *compute* type (kernel("tfloat32")), never a tensor's dtype
    "tfloat32": (11, 2.0 ** -126),
}

NUMPY = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}

#: how results are rounded: to nearest (IEEE's default: u = 2^-p), or faithfully in any
#: direction (toward zero included, as a truncating float32 -> bfloat16 conversion does: 2^(1-p))
ROUNDINGS = ("nearest", "faithful")


@dataclass(frozen=True)
class Arithmetic:
    """What a correct implementation in ``dtype`` may do, as unit roundoffs."""

    dtype: str
    bits: int  # significand bits p; u = 2**-p
    u: float  # unit roundoff of the dtype (half an ulp of 1)
    u_acc: float  # unit roundoff of the worst admitted accumulation type
    u_el: float  # one elementwise rounding, double rounding through float32 included
    eta: float  # the dtype's smallest normal: what flushing a subnormal to zero may lose
    flush: bool  # flushes carried operation by operation (float16: η = 2^-14 matters; for the
    #              other types η <= 2^-126 and the tolerance's floor of 2 ulp covers them)
    store: bool  # dot products accumulate wider and are rounded to the dtype when stored
    narrow: bool  # narrower than the FLOAT (float32) attributes: alpha, beta, clip get rounded
    products_exact: bool  # a product of two dtype values is exact in the accumulation type
    acc_dtype: object  # numpy type of the accumulation (None for float64: checked otherwise)
    k: float  # ACT_ULPS
    floor: float  # ACT_ABS_ULPS · u: the absolute floor of exp-based activations near zero
    sigmoid_rel: float  # (2k + 2)·u: 1/(1 + e^{-x}) with exp within k ulps, then two roundings
    tanh_lib: float  # 2k·u: a library tanh within k ulps (k ulps <= 2k·u relative)
    tanh_cancel: float  # k·u: (1 − E)/(1 + E), E within k ulps, near 0 (see functions._tanh_own)
    tanh_round: float  # 3·u: its three roundings
    accumulation: str
    #: inputs rounded to the dtype before computing (a runtime that computes a wider model in a
    #: narrower type): each input carries u·|value| of error in, where 0 otherwise
    u_in: float = 0.0
    rounding: str = "nearest"
    #: the problem has a non-finite input: errors at ±Inf and NaN values are 0 (their class is
    #: what the comparison checks), see nonfinite.certain
    ieee: bool = False
    #: a reduced-precision kernel (kernel()): the operands of the matrix products (X, W, R and the
    #: state fed to the recurrent product) rounded to this unit roundoff on the way in (TF32)
    u_gemm: float = 0.0
    #: a reduced-precision kernel: activations computed in this (float32) arithmetic and the
    #: result rounded once (u_el), instead of evaluated in the dtype itself
    wide: Arithmetic | None = None
    #: the model's name in the record (MODEL, or KERNEL_MODEL for a reduced-precision kernel)
    model: str = MODEL
    #: the measured activations it was widened to (``with_activations``): (("Tanh", k), ("Sigmoid", k))
    measured: tuple = ()

    def gamma(self, n):
        """γ_n = n·u/(1 − n·u) of the accumulation type (n: a count or an array of counts)."""
        nu = n * self.u_acc
        return nu / (1.0 - nu)

    def parameters(self) -> dict:
        """What the result records: the model and every parameter it rests on."""
        out: dict = {
            "model": MODEL,
            "dtype": self.dtype,
            "u": f"2^{round(math.log2(self.u))}",
            "accumulation": self.accumulation,
            "admitted_accumulations": [self.dtype if a == "dtype" else a
                                       for a in ACCUMULATIONS[self.dtype]],
            "k_act_ulps": self.k,
            "act_abs_floor_u": ACT_ABS_ULPS,
            "fma": "with or without",
            "flush_subnormals": ("admitted, charged per operation" if self.flush else
                                 "admitted, below the tolerance's 2-ulp floor"),
            "kink_widen": KINK_WIDEN,
            "order": "first",
            **({"inputs": f"rounded to {self.dtype}"} if self.u_in else {}),
            **({"rounding": "faithful (any direction)"} if self.rounding != "nearest" else {}),
            **({"nonfinite": NONFINITE} if self.ieee else {}),
        }
        measured = self.measured or (self.wide.measured if self.wide is not None else ())
        if measured:
            out["measured_act_ulps"] = dict(measured)
            out["act_ulps_ceiling"] = ACT_ULPS_CEILING
        if self.model == KERNEL_MODEL:
            out["kernel"] = KERNEL_MODEL
            out["scheme"] = scheme_text(self)
            if self.u_gemm:
                out["inputs"] = f"matrix-product operands rounded to {self.dtype}"
        return out


def scheme_text(ar: Arithmetic) -> str:
    """The kernel's rounding points, in words (the record's ``precision.scheme``)."""
    if ar.u_gemm:
        return ("X, W, R and the state rounded to tfloat32 as matrix-product operands; float32 "
                "accumulation, elementwise arithmetic and activations")
    acc = ("float32, stored as" if ar.accumulation == "float32" else "in") + f" {ar.dtype}"
    return (f"inputs rounded to {ar.dtype}; dot products accumulated {acc}; each elementwise "
            f"result and the state rounded to {ar.dtype} or kept in float32; activations "
            f"computed in float32 (<= {ar.k:g} float32 ulps) and rounded once to {ar.dtype}")


def activations_text(ar: Arithmetic) -> str:
    """'tanh <= 125 ulp, sigmoid <= 4.1 ulp (measured)' where the arithmetic was widened to a measured
    accuracy (``with_activations``), else ''."""
    measured = ar.measured or (ar.wide.measured if ar.wide is not None else ())
    return (", ".join(f"{name.lower()} <= {k:.3g} ulp" for name, k in measured) + " (measured, ceiling "
            f"{ACT_ULPS_CEILING:g})") if measured else ""


def _check(dtype: str, accumulation: str | None, rounding: str) -> str:
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding={rounding!r} is not one of {ROUNDINGS!r}")
    admitted = ACCUMULATIONS[dtype]
    if accumulation is None:
        accumulation = admitted[0]
    if accumulation not in admitted:
        raise ValueError(f"accumulation={accumulation!r} is not admitted for {dtype}; "
                         f"admitted: {list(admitted)!r}")
    return accumulation


@cache
def arithmetic(dtype: str, accumulation: str | None = None, rounds_inputs: bool = False,
               rounding: str = "nearest") -> Arithmetic:
    """The Arithmetic of ``dtype``; ``accumulation`` defaults to the worst admitted one.
    ``rounds_inputs``: the inputs are of a wider type and are rounded to ``dtype`` first.
    ``rounding``: one of ROUNDINGS; "faithful" doubles every unit roundoff of the dtype."""
    accumulation = _check(dtype, accumulation, rounding)
    bits, tiny = FORMATS[dtype]
    u = 2.0 ** -bits * (2.0 if rounding == "faithful" else 1.0)  # faithful: one ulp, not half of one
    narrow = bits < 24
    u32 = 2.0 ** -24
    wide = accumulation == "float32"
    u_el = u + u32 + u * u32 if narrow else u
    return Arithmetic(
        dtype=dtype, bits=bits, u=u,
        u_acc=u32 if wide else u,
        u_el=u_el,
        eta=tiny, flush=dtype == "float16", store=wide, narrow=narrow, k=ACT_ULPS,
        floor=ACT_ABS_ULPS * u,
        sigmoid_rel=2 * ACT_ULPS * u + 2 * u_el, tanh_lib=2 * ACT_ULPS * u,
        tanh_cancel=ACT_ULPS * u, tanh_round=3 * u_el,
        products_exact=2 * bits <= (24 if wide else bits),
        acc_dtype=None if dtype == "float64" else (np.float32 if wide else NUMPY[dtype]),
        accumulation=dtype if accumulation == "dtype" else accumulation,
        u_in=u if rounds_inputs else 0.0,
        rounding=rounding,
    )


def with_activations(ar: Arithmetic, act_ulps: dict | None) -> Arithmetic:
    """``ar`` whose tanh and sigmoid are accurate to the measured ``act_ulps`` ({"Tanh": k, "Sigmoid": k},
    in ulps as k_act counts them) instead of ACT_ULPS: each raised to at least ACT_ULPS and capped at
    ACT_ULPS_CEILING. A reduced-precision kernel computes its activations in float32 (``wide``): its
    float32 arithmetic is widened. None or {}: ``ar`` itself."""
    if not act_ulps:
        return ar
    k = {name: min(max(float(act_ulps.get(name, ACT_ULPS)), ACT_ULPS), ACT_ULPS_CEILING)
         for name in MEASURED_FUNCTIONS}
    return widened(ar, k["Tanh"], k["Sigmoid"], measured=tuple(sorted(k.items())))


def widened(ar: Arithmetic, tanh=None, sigmoid=None, measured: tuple = ()) -> Arithmetic:
    """``ar`` whose tanh and sigmoid (those given) are accurate to k ulps as-is, k a number or an array
    (one per point: oracles/precision/measured.py): the fields the activations read. A reduced-precision
    kernel's float32 arithmetic (``wide``) is the one widened."""
    if ar.wide is not None:
        return dataclasses.replace(ar, wide=widened(ar.wide, tanh, sigmoid, measured))
    u = ar.u
    fields: dict = {"measured": measured} if measured else {}
    if tanh is not None:
        fields.update(tanh_lib=2 * tanh * u, tanh_cancel=tanh * u)
    if sigmoid is not None:
        fields.update(sigmoid_rel=2 * sigmoid * u + 2 * ar.u_el)
    return dataclasses.replace(ar, **fields)


@cache
def kernel(compute: str, accumulation: str | None = None, rounding: str = "nearest") -> Arithmetic:
    """A reduced-precision kernel computing a wider (float32) model in ``compute`` (bfloat16,
    float16 or tfloat32; float32 for a float64 model): see the module's docstring.
    ``accumulation`` "float32" where the runtime declares it, else (None) the worse admitted;
    ``rounding`` "faithful" where the runtime declares a conversion that is not to nearest."""
    if compute == "tfloat32":
        _check(compute, accumulation, rounding)
        base = arithmetic("float32")
        bits = FORMATS[compute][0]
        return dataclasses.replace(base, dtype=compute, u_gemm=2.0 ** -bits * (2.0 if rounding == "faithful" else 1.0),
                                   accumulation="float32", rounding=rounding, model=KERNEL_MODEL)
    ar = arithmetic(compute, accumulation, True, rounding)
    if FORMATS[compute][0] >= 24:  # float32 for a float64 model: IEEE float32, inputs rounded
        return ar
    return dataclasses.replace(ar, wide=arithmetic("float32"), model=KERNEL_MODEL)
