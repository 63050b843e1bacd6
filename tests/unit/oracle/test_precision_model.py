"""The precision model (oracles/precision/) against simulated correct implementations.

Each ``Implementation`` below is a deliberate test double: a small numpy RNN/GRU/LSTM written
independently of the oracle, that computes the way a correct runtime may — in the case's dtype,
accumulating dot products in the dtype or in float32, in one of several summation orders, with or
without FMA (emulated as float64 multiply-add then one rounding), gates combined by one formula or
an algebraically equal other, activations from a library (correctly rounded, or off by up to
ACT_ULPS − 1 ulps at random) or the documented formulas evaluated in the dtype. The model's bound
must cover every one of them (no false alarm), without being absurdly loose, and must be tighter
for a contracting recurrence than for an expanding one.

This module holds the unit tier's tests of it (no runtime, no process); the others:
tests/corpus/oracle/test_precision_model.py."""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

import oracles
from oracles import precision

# -- the test double -------------------------------------------------------------------------------

DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
USES = {"Affine": "ab", "LeakyRelu": "a", "ThresholdedRelu": "a", "ScaledTanh": "ab",
        "HardSigmoid": "ab", "Elu": "a"}
DEFAULTS = {"LeakyRelu": {"a": 0.01}, "ThresholdedRelu": {"a": 1.0},
            "HardSigmoid": {"a": 0.2, "b": 0.5}, "Elu": {"a": 1.0}}


@dataclass(frozen=True)
class Implementation:
    """How one correct runtime computes. Every intermediate is a value of ``dtype`` (elementwise
    results) or of the accumulation type (partial sums), rounded from an exact or float64 one."""

    dtype: str
    accumulation: str = "dtype"  # "dtype" | "float32"
    order: str = "forward"  # summation order: forward | reverse | pairwise | shuffled
    fma: bool = False
    activations: str = "library"  # library | sloppy | formula
    gru_form: str = "spec"  # spec: (1 - z)h~ + zH | lerp: h~ + z(H - h~)
    seed: int = 0

    @property
    def name(self) -> str:
        return (f"{self.dtype}/acc={self.accumulation}/{self.order}/{'fma' if self.fma else 'nofma'}"
                f"/{self.activations}/{self.gru_form}")

    # rounding --------------------------------------------------------------------------------
    def r(self, x):
        """To the dtype (round to nearest even), back to float64 for the next operation."""
        return np.asarray(x, dtype=np.float64).astype(DTYPES[self.dtype]).astype(np.float64)

    def ra(self, x):
        if self.accumulation == "float32":
            return np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)
        return self.r(x)

    # dot products: terms are (coefficient, operand) pairs and lone bias terms ----------------------
    def dot(self, products, biases, rng):
        """sum(c * x for c, x in products) + sum(biases), stored in the dtype."""
        items = [("p", c, x) for c, x in products] + [("b", b, None) for b in biases]
        if self.order == "reverse":
            items = items[::-1]
        elif self.order == "shuffled":
            items = [items[i] for i in rng.permutation(len(items))]
        if self.order == "pairwise":
            level = [self.ra(c * x) if kind == "p" else self.ra(c) for kind, c, x in items]
            while len(level) > 1:
                nxt = [self.ra(level[i] + level[i + 1]) for i in range(0, len(level) - 1, 2)]
                if len(level) % 2:
                    nxt.append(level[-1])
                level = nxt
            return self.r(level[0])
        acc = None
        for kind, c, x in items:
            if kind == "b":
                acc = self.ra(c) if acc is None else self.ra(acc + c)
            elif acc is None:
                acc = self.ra(c * x)
            elif self.fma:
                acc = self.ra(acc + c * x)  # float64 product exact for these dtypes: one rounding
            else:
                acc = self.ra(acc + self.ra(c * x))
        return self.r(acc)

    def matvec(self, rows_x, x, rows_h, h, biases, rng, peephole=None):
        """Pre-activations of a block of gate rows: x·Wᵀ + h·Rᵀ + biases (+ P⊙c)."""
        products = [(rows_x[None, :, i], x[:, i, None]) for i in range(rows_x.shape[1])]
        products += [(rows_h[None, :, k], h[:, k, None]) for k in range(rows_h.shape[1])]
        if peephole is not None:
            products.append(peephole)
        return self.dot(products, [b[None, :] for b in biases], rng)

    # activations -----------------------------------------------------------------------------
    def act(self, name, a, b, x, rng):
        r = self.r
        if name in ("Tanh", "Sigmoid", "Softplus", "Elu", "ScaledTanh") and self.activations == "formula":
            if name == "Tanh":
                E = r(np.exp(-2 * np.abs(x)))
                return np.sign(x) * r(r(1 - E) / r(1 + E))
            if name == "Sigmoid":
                return r(1 / r(1 + r(np.exp(-x))))
            if name == "Softplus":  # log(1 + e^x), as max(x, 0) + log1p(e^-|x|) to stay finite
                return r(np.maximum(x, 0) + r(np.log1p(r(np.exp(-np.abs(x))))))
            if name == "Elu":
                return np.where(x >= 0, x, r(r(a) * r(r(np.exp(np.minimum(x, 0))) - 1)))
            if name == "ScaledTanh":
                y = r(r(b) * x)
                E = r(np.exp(-2 * np.abs(y)))
                return r(r(a) * np.sign(y) * r(r(1 - E) / r(1 + E)))
        exact = {
            "Relu": lambda: np.maximum(x, 0),
            "Tanh": lambda: np.tanh(x),
            "Sigmoid": lambda: 1 / (1 + np.exp(-x)),
            "Affine": lambda: r(r(a) * x) + r(b),
            "LeakyRelu": lambda: np.where(x >= 0, x, r(a) * x),
            "ThresholdedRelu": lambda: np.where(x >= r(a), x, 0.0),
            "ScaledTanh": lambda: r(a) * np.tanh(r(r(b) * x)),
            "HardSigmoid": lambda: np.clip(r(r(a) * x) + r(b), 0, 1),
            "Elu": lambda: np.where(x >= 0, x, r(a) * np.expm1(np.minimum(x, 0))),
            "Softsign": lambda: x / r(1 + np.abs(x)),
            "Softplus": lambda: np.logaddexp(0, x),
        }[name]()
        y = r(exact)
        if self.activations == "sloppy" and name in ("Tanh", "Sigmoid", "Softplus", "Elu",
                                                     "ScaledTanh"):
            kind = DTYPES[self.dtype]
            steps = rng.integers(-int(precision.ACT_ULPS) + 1, int(precision.ACT_ULPS), y.shape)
            steps = np.where(np.isinf(y), 0, steps)  # a library's f(+Inf) = Inf is not an ulp off
            y = y.astype(kind)
            for _ in range(int(precision.ACT_ULPS)):
                up = steps > 0
                down = steps < 0
                y = np.where(up, np.nextafter(y, kind(np.inf)) if kind is not ml_dtypes.bfloat16
                             else _bf16_next(y, +1), y)
                y = np.where(down, np.nextafter(y, kind(-np.inf)) if kind is not ml_dtypes.bfloat16
                             else _bf16_next(y, -1), y)
                steps = steps - up + down
            y = y.astype(np.float64)
            if name == "Elu":
                y = np.where(x >= 0, x, y)  # the library is called on the negative branch only
        return y

    # the ops ---------------------------------------------------------------------------------
    def run(self, op, attrs, t):
        rng = np.random.default_rng(self.seed)
        X = t["X"].astype(np.float64)
        S, B, _ = X.shape
        H = attrs["hidden_size"]
        direction = attrs.get("direction", "forward")
        D = 2 if direction == "bidirectional" else 1
        G = GATES[op]
        W, R = t["W"].astype(np.float64), t["R"].astype(np.float64)
        Bias = t["B"].astype(np.float64) if "B" in t else np.zeros((D, 2 * G * H))
        lens = t.get("sequence_lens", np.full(B, S))
        h0 = t["initial_h"].astype(np.float64) if "initial_h" in t else np.zeros((D, B, H))
        c0 = t["initial_c"].astype(np.float64) if "initial_c" in t else np.zeros((D, B, H))
        P = t["P"].astype(np.float64) if "P" in t else None
        clip = attrs.get("clip")
        clip = None if clip is None else self.r(np.float32(clip))
        names = attrs.get("activations", DEFAULT_ACTS[op] * D)
        alphas = list(attrs.get("activation_alpha", []))
        betas = list(attrs.get("activation_beta", []))
        params = []
        for name in names:  # popped consumption
            a = b = None
            if "a" in USES.get(name, ""):
                a = alphas.pop(0) if alphas else DEFAULTS[name]["a"]
            if "b" in USES.get(name, ""):
                b = betas.pop(0) if betas else DEFAULTS[name]["b"]
            params.append((name, None if a is None else float(np.float32(a)),
                           None if b is None else float(np.float32(b))))
        k = len(names) // D
        Y = np.full((S, D, B, H), np.nan)
        Yh = np.zeros((D, B, H))
        Yc = np.zeros((D, B, H))

        def cl(v):
            return v if clip is None else np.clip(v, -clip, clip)

        for d in range(D):
            fns = params[d * k:(d + 1) * k]

            def f(j, v, clipped=True, fns=fns):
                name, a, b = fns[j]
                return self.act(name, a, b, cl(v) if clipped else v, rng)

            Wb, Rb = Bias[d, :G * H], Bias[d, G * H:]
            reverse = direction == "reverse" or d == 1
            for bi in range(B):
                h = h0[d, bi:bi + 1].copy()
                c = c0[d, bi:bi + 1].copy()
                steps = range(lens[bi] - 1, -1, -1) if reverse else range(lens[bi])
                for tt in steps:
                    x = X[tt, bi:bi + 1]
                    if op == "RNN":
                        h = f(0, self.matvec(W[d], x, R[d], h, [Wb, Rb], rng))
                    elif op == "GRU":
                        h = self._gru(d, x, h, W, R, Wb, Rb, H, attrs, f, rng)
                    else:
                        h, c = self._lstm(d, x, h, c, W, R, Wb, Rb, P, H, attrs, f, cl, rng)
                    Y[tt, d, bi] = h[0]
                Yh[d, bi], Yc[d, bi] = h[0], c[0]
        out = {"Y": Y, "Y_h": Yh}
        if op == "LSTM":
            out["Y_c"] = Yc
        return out

    def _gru(self, d, x, h, W, R, Wb, Rb, H, attrs, f, rng):
        r_ = self.r
        zs, rs, hs = (slice(j * H, (j + 1) * H) for j in range(3))
        z = f(0, self.matvec(W[d][zs], x, R[d][zs], h, [Wb[zs], Rb[zs]], rng))
        r = f(0, self.matvec(W[d][rs], x, R[d][rs], h, [Wb[rs], Rb[rs]], rng))
        if attrs.get("linear_before_reset", 0):
            q = self.matvec(np.zeros((H, 0)), x[:, :0], R[d][hs], h, [Rb[hs]], rng)
            xh = self.matvec(W[d][hs], x, np.zeros((H, 0)), h[:, :0], [Wb[hs]], rng)
            pre = r_(xh + r_(r * q))
        else:
            pre = self.matvec(W[d][hs], x, R[d][hs], r_(r * h), [Wb[hs], Rb[hs]], rng)
        hh = f(1, pre)
        if self.gru_form == "lerp":
            return r_(hh + r_(z * r_(h - hh)))
        if self.fma:
            return r_(r_(1 - z) * hh + r_(z * h))
        return r_(r_(r_(1 - z) * hh) + r_(z * h))

    def _lstm(self, d, x, h, c, W, R, Wb, Rb, P, H, attrs, f, cl, rng):
        r_ = self.r
        i_, o_, f_, c_ = (slice(j * H, (j + 1) * H) for j in range(4))
        Pi = Po = Pf = None
        if P is not None:
            Pi, Po, Pf = P[d, :H], P[d, H:2 * H], P[d, 2 * H:]

        def gate(rows, peep, cell, j=0):
            extra = None if peep is None else (peep[None, :], cell)
            return f(j, self.matvec(W[d][rows], x, R[d][rows], h, [Wb[rows], Rb[rows]], rng,
                                    extra))

        it = gate(i_, Pi, c)
        ft = r_(1 - it) if attrs.get("input_forget", 0) else gate(f_, Pf, c)
        ct = gate(c_, None, None, 1)
        if self.fma:
            cell = r_(ft * c + r_(it * ct))
        else:
            cell = r_(r_(ft * c) + r_(it * ct))
        ot = gate(o_, Po, cell)
        return r_(ot * f(2, cell, clipped=False)), cell  # noclip-h


def _bf16_next(y, direction):
    bits = y.view(np.uint16).astype(np.int32)
    neg = bits >= 0x8000
    step = np.where((direction > 0) ^ neg, 1, -1)
    zero = (bits & 0x7FFF) == 0
    out = np.where(zero, np.where(direction > 0, 1, 0x8001), bits + step)
    return out.astype(np.uint16).view(ml_dtypes.bfloat16)


# -- random cases ------------------------------------------------------------------------------------

ACTIVATION_POOL = ["Tanh", "Sigmoid", "Relu", "LeakyRelu", "Softsign", "Softplus", "Elu",
                   "HardSigmoid", "Affine", "ScaledTanh"]


def random_case(seed: int, dtype: str):
    rng = np.random.default_rng(seed)
    op = ("RNN", "GRU", "LSTM")[seed % 3]
    S, B, I, H = (int(rng.integers(1, n)) for n in (7, 4, 5, 5))
    direction = ("forward", "reverse", "bidirectional")[int(rng.integers(3))]
    D = 2 if direction == "bidirectional" else 1
    G = GATES[op]
    scale = float(rng.choice([0.5, 1.0, 1.0, 2.0]))
    kind = DTYPES[dtype]
    t = {
        "X": rng.uniform(-scale, scale, (S, B, I)).astype(kind),
        "W": rng.uniform(-scale, scale, (D, G * H, I)).astype(kind),
        "R": rng.uniform(-scale, scale, (D, G * H, H)).astype(kind),
        "B": rng.uniform(-1, 1, (D, 2 * G * H)).astype(kind),
        "initial_h": rng.uniform(-1, 1, (D, B, H)).astype(kind),
    }
    attrs = {"hidden_size": H, "direction": direction}
    if rng.random() < 0.3:
        t["sequence_lens"] = rng.integers(1, S + 1, B).astype(np.int32)
    if op == "LSTM":
        t["initial_c"] = rng.uniform(-1, 1, (D, B, H)).astype(kind)
        if rng.random() < 0.4:
            t["P"] = rng.uniform(-1, 1, (D, 3 * H)).astype(kind)
        if rng.random() < 0.2:
            attrs["input_forget"] = 1
    if op == "GRU" and rng.random() < 0.5:
        attrs["linear_before_reset"] = 1
    if rng.random() < 0.25:
        attrs["clip"] = float(rng.choice([0.5, 1.0, 2.5]))
    if rng.random() < 0.35:
        k = {"RNN": 1, "GRU": 2, "LSTM": 3}[op]
        names = [str(rng.choice(ACTIVATION_POOL)) for _ in range(k)] * D
        attrs["activations"] = names
        alphas, betas = [], []
        for name in names:
            if "a" in USES.get(name, ""):
                alphas.append(float(np.float32(rng.uniform(0.1, 1.5))))
            if "b" in USES.get(name, ""):
                betas.append(float(np.float32(rng.uniform(-0.5, 1.0))))
        if alphas:
            attrs["activation_alpha"] = alphas
        if betas:
            attrs["activation_beta"] = betas
    return op, attrs, t


# -- contraction vs expansion ------------------------------------------------------------------------

def _rnn(dtype, S, gain, activation, seed=0):
    rng = np.random.default_rng(seed)
    H, I = 4, 3
    Q, _ = np.linalg.qr(rng.standard_normal((H, H)))
    kind = DTYPES[dtype]
    t = {
        "X": rng.uniform(-1, 1, (S, 1, I)).astype(kind),
        "W": rng.uniform(-1, 1, (1, H, I)).astype(kind),
        "R": (gain * Q)[None].astype(kind),
        "initial_h": rng.uniform(0.5, 1, (1, 1, H)).astype(kind),
    }
    attrs = {"hidden_size": H, "activations": [activation]}
    return attrs, t


def _final_relative_bound(attrs, t):
    """The final state's bound relative to its scale: max bound / max |Y_h|."""
    result = oracles.evaluate("RNN", attrs, t, cache=False)
    exp = result.readings[0].outputs["Y_h"]
    return float(np.max(exp.bound) / np.max(np.abs(exp.hi))), result


def test_a_contracting_recurrence_gets_a_tighter_bound_than_an_expanding_one():
    """Tanh with ‖R‖ = 0.5 forgets old errors: its bound is a few dozen roundings whatever the
    length. Relu with ‖R‖ = 1.5 amplifies them step after step: an honest, wide bound."""
    contracting, _ = _final_relative_bound(*_rnn("float32", 16, 0.5, "Tanh"))
    expanding, result = _final_relative_bound(*_rnn("float32", 16, 1.5, "Relu"))
    u = 2.0 ** -24
    assert contracting < 64 * u
    assert expanding > 10 * contracting
    # and the wide bound is honest: a correct float32 implementation really moves that far
    impl = Implementation("float32", order="reverse", fma=True)
    attrs, t = _rnn("float32", 16, 1.5, "Relu")
    exp = result.readings[0].outputs["Y_h"]
    err = np.abs(impl.run("RNN", attrs, t)["Y_h"] - exp.hi - exp.lo)
    assert np.all(err <= exp.bound)


def test_the_contracting_bound_does_not_grow_with_the_steps():
    short, _ = _final_relative_bound(*_rnn("float32", 4, 0.5, "Tanh"))
    long, _ = _final_relative_bound(*_rnn("float32", 64, 0.5, "Tanh"))
    assert long < 4 * short


def test_the_expanding_bound_grows_geometrically():
    b8, _ = _final_relative_bound(*_rnn("float32", 8, 1.5, "Relu"))
    b16, _ = _final_relative_bound(*_rnn("float32", 16, 1.5, "Relu"))
    assert b16 > 4 * b8


# -- the model's record -----------------------------------------------------------------------------

def test_the_result_records_the_model_and_its_parameters():
    op, attrs, t = random_case(3, "float16")
    result = oracles.evaluate(op, attrs, t, cache=False)
    p = result.precision
    assert p["model"] == precision.MODEL == "running-error-v1"
    assert p["dtype"] == "float16" and p["u"] == "2^-11"
    assert p["accumulation"] == "float16"  # the worse of the admitted float16 and float32
    assert p["admitted_accumulations"] == ["float16", "float32"]
    assert p["k_act_ulps"] == precision.ACT_ULPS
    assert p["dot_length"] == attrs["hidden_size"] + t["X"].shape[2] + 2 + ("P" in t)
    for reading in result.readings:
        for exp in reading.outputs.values():
            assert exp.bound.dtype == np.float64 and exp.bound.shape == exp.hi.shape
            assert np.array_equal(np.isnan(exp.bound), exp.unspecified)
            assert np.all(exp.bound[~exp.unspecified] > 0)


def test_a_changed_model_bumps_the_oracle_version():
    """The cache key holds ORACLE_VERSION, not the model: change one, change the other (and this
    pin)."""
    assert (oracles.ORACLE_VERSION, precision.fingerprint()) == (
        "1.4.0", "running-error-v1:k=4.0:abs=4.0:widen=2.0:nonfinite=ieee-classes-v1")


def test_bounds_survive_the_cache(private_cache):
    op, attrs, t = random_case(4, "float32")
    first = oracles.evaluate(op, attrs, t)
    second = oracles.evaluate(op, attrs, t)
    assert second.from_cache and second.precision == first.precision
    for a, b in zip(first.readings, second.readings):
        for name in a.outputs:
            assert np.array_equal(a.outputs[name].bound, b.outputs[name].bound, equal_nan=True)


def test_the_bound_follows_the_layout():
    op, attrs, t = random_case(5, "float32")
    attrs = dict(attrs, direction="forward")
    t = {k: (v[:1] if k in ("W", "R", "B", "initial_h", "initial_c", "P") else v)
         for k, v in t.items()}
    zero = oracles.evaluate(op, attrs, t, cache=False)
    one_t = {k: (np.ascontiguousarray(v.swapaxes(0, 1))
                 if k in ("X", "initial_h", "initial_c") else v) for k, v in t.items()}
    one = oracles.evaluate(op, dict(attrs, layout=1), one_t, cache=False)
    y0, y1 = zero.readings[0].outputs["Y"].bound, one.readings[0].outputs["Y"].bound
    assert np.array_equal(y0.transpose(2, 0, 1, 3), y1, equal_nan=True)


def test_float16_with_float32_accumulation_is_a_tighter_admitted_model():
    op, attrs, t = random_case(6, "float16")
    result = oracles.evaluate(op, attrs, t, cache=False)
    from oracles.problem import build_problem
    from oracles.profiles import get_profile
    problem = build_problem(op, attrs, t, get_profile("onnx"))
    choices = {pid: point.choices[0].value for pid, point in get_profile("onnx").points.items()}
    wide, _ = precision.bound(problem, choices, accumulation="float32")
    narrow, _ = precision.bound(problem, choices)
    assert np.all(wide["Y_h"] <= narrow["Y_h"])
    assert result.precision["accumulation"] == "float16"
