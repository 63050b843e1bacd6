"""The deliberately wrong implementations: one runtime plugin per bug class, each a thin subclass
of the numpy test double (``NumpyRNN``, correct) that overrides the one hook its bug is about (its
docstring says the bug), plus the benign controls that must pass.

Each class says where its bug shows, for the tests and for a later fuzzer benchmark:

- ``bug``: the bug's switch name, a label (ids, descriptions, ``BUGS``); it drives nothing;
- ``ops``: the operators it affects;
- ``visible_when``: the case features that make it visible, in words;
- ``select``: a ``-k`` expression over the default corpus (``cases/``) picking a handful of cases
  where it is visible (for a benign control: where it differs from the correct mode at all);
- ``caught_by_interim``: whether the interim per-dtype tolerance (``interim-dtype-v1``) fails it
  there. ``False`` marks a real bug that tolerance is too loose to see; the derived bound should.

An override that needs the correct behaviour calls ``NumpyRNN.<hook>(self, ...)``, not ``super()``:
a class elsewhere that still sets ``bug = "<switch>"`` gets the override copied onto it
(``NumpyRNN.__init_subclass__``).

Run any of them as ``conformance run cases -k '<select>' --runtime <name>
--runtime-plugin tests.doubles.wrong:<Class> --spec onnx-14``.
"""

from __future__ import annotations

import numpy as np

from tests.doubles.wrong.numpy_rnn import NumpyRNN


class WrongImplementation(NumpyRNN):
    """Base of the deliberately wrong test doubles (never instantiated as a runtime itself)."""

    ops: tuple = ()
    visible_when: str = ""
    select: str = ""
    caught_by_interim: bool = True
    expected: str = "fail"            # the verdict the suite must give somewhere in `select`

    @property
    def description(self) -> str:
        return f"deliberately wrong test double: {self.bug}"


class Benign(NumpyRNN):
    """Base of the controls: implementations that differ from the correct mode, but acceptably
    (a rounding-level perturbation, or a reading the spec documents). The suite must pass them."""

    ops: tuple = ()
    visible_when: str = ""
    select: str = ""
    expected: str = "pass"
    why: str = ""

    @property
    def description(self) -> str:
        return f"benign test double: {self.bug}"


# -- 1. gate order -----------------------------------------------------------------------------

class WrongGateOrderLSTM(WrongImplementation):
    """LSTM gate blocks of W, R and B read as i, f, o, c (ONNX's are i, o, f, c): o and f swapped."""

    name = "wrong-gate-order-lstm"
    bug = "gate-order-lstm-of"
    ops = ("LSTM",)
    visible_when = "any LSTM case with random W or R"
    select = "lstm/basic[direction=forward,B=random,initial_h=random"

    def gate_blocks(self, op, blocks):
        return _reorder(blocks, (0, 2, 1, 3)) if op == "LSTM" else blocks


class WrongGateOrderLSTMInputForget(WrongImplementation):
    """LSTM gate blocks read as f, o, i, c: the input and forget gates swapped."""

    name = "wrong-gate-order-lstm-if"
    bug = "gate-order-lstm-if"
    ops = ("LSTM",)
    visible_when = "any LSTM case with random W or R and a non-zero C[t-1] (initial_c or S > 1)"
    select = "lstm/basic[direction=forward,B=random,initial_h=random"

    def gate_blocks(self, op, blocks):
        return _reorder(blocks, (2, 1, 0, 3)) if op == "LSTM" else blocks


class WrongGateOrderLSTMOutputCell(WrongImplementation):
    """LSTM gate blocks read as i, c, f, o: the output gate and the cell candidate swapped."""

    name = "wrong-gate-order-lstm-oc"
    bug = "gate-order-lstm-oc"
    ops = ("LSTM",)
    visible_when = "any LSTM case with random W or R"
    select = "lstm/basic[direction=forward,B=random,initial_h=random"

    def gate_blocks(self, op, blocks):
        return _reorder(blocks, (0, 3, 2, 1)) if op == "LSTM" else blocks


class WrongGateOrderGRU(WrongImplementation):
    """GRU gate blocks of W, R and B read as r, z, h: the update and reset gates swapped."""

    name = "wrong-gate-order-gru"
    bug = "gate-order-gru-zr"
    ops = ("GRU",)
    visible_when = "any GRU case with random W or R and a non-zero H[t-1] (initial_h or S > 1)"
    select = "gru/basic[direction=forward,B=random"

    def gate_blocks(self, op, blocks):
        return _reorder(blocks, (1, 0, 2)) if op == "GRU" else blocks


# -- 2. GRU reset gate placement ---------------------------------------------------------------

class WrongLinearBeforeReset(WrongImplementation):
    """GRU linear_before_reset semantics inverted: the reset gate applied at the wrong place (the
    linear_before_reset = 1 formula when it is 0, and the 0 formula when it is 1)."""

    name = "wrong-linear-before-reset"
    bug = "linear-before-reset-inverted"
    ops = ("GRU",)
    visible_when = ("GRU with a non-zero H[t-1] (initial_h random or S > 1): (r.H)R^T + Rbh differs "
                    "from r.(HR^T + Rbh) unless r = 1; clearest with a random Rbh")
    select = "gru/linear_before_reset and B=random,direction=forward"

    def linear_before_reset(self, flag):
        return not flag


# -- 3. off by one time step -------------------------------------------------------------------

class WrongOffByOneStep(WrongImplementation):
    """Y[t] holds H[t-1] (initial_h at the first step): the output is written before the state is
    updated. Y_h is still right, so only a case requesting Y shows it."""

    name = "wrong-y-off-by-one"
    bug = "y-off-by-one"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "any case whose outputs include Y"
    select = "basic[direction=forward,B=random,initial_h=random"

    def y_value(self, h_before, h_after):
        return h_before


# -- 4. sequence_lens in the reverse direction -------------------------------------------------

class WrongReverseIgnoresSequenceLens(WrongImplementation):
    """The reverse direction starts at t = S-1 for every sequence and steps over the padding."""

    name = "wrong-reverse-sequence-lens"
    bug = "reverse-ignores-sequence-lens"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "reverse or bidirectional with some 0 < sequence_lens[b] < seq_length"
    select = "/sequence_lens[direction=reverse,sequence_lens=[4,2,1],initial_h=random"

    def reverse_start(self, lens, seq_length):
        return np.full(lens.shape, seq_length - 1)


# -- 5. clip placement --------------------------------------------------------------------------

class WrongClipAfterActivation(WrongImplementation):
    """clip bounds each activation's output instead of its input."""

    name = "wrong-clip-after-activation"
    bug = "clip-after-activation"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = ("clip set and some |pre-activation| > clip (with a bounded activation), or some "
                    "|activation output| > clip")
    select = "clip[clip=0.5,direction=forward and not Relu and not linear_before_reset=1"

    def clip_then_activate(self, fn, x, bound):
        y = self.activation(*fn, x)
        return y if bound is None else np.clip(y, -bound, bound)


# -- 6, 7. precision ---------------------------------------------------------------------------

class WrongFastTanh(WrongImplementation):
    """tanh (Tanh, ScaledTanh and LSTM's h) by a [5/4] rational minimax approximation, clamped to
    +-1 past |x| = 5.5 (relative error up to 8.7e-5), as a fast-math kernel would: a real bug for
    float32, which promises about 6e-8. Clearest in RNN, whose output is tanh itself; in GRU and
    LSTM the gates dilute it to about the interim tolerance."""

    name = "wrong-fast-tanh"
    bug = "fast-tanh"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "float32 or float64 cases using Tanh (the defaults) or ScaledTanh"
    select = "rnn/basic and B=absent,initial_h=absent"

    def tanh(self, x):
        return fast_tanh(x)


class WrongFloat16Accumulation(WrongImplementation):
    """Dot products X.W^T and H.R^T accumulated in float16 for a float32 model: each term rounded
    to float16 and added in float16 (biases and activations stay in float32)."""

    name = "wrong-float16-accumulation"
    bug = "float16-accumulation"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "float32 or float64 cases (every dot product loses ~11 bits)"
    select = "basic[direction=forward,B=random,initial_h=random"

    def matmul(self, a, w):
        acc = np.zeros((a.shape[0], w.shape[0]), np.float16)
        for k in range(a.shape[1]):
            acc = (acc + (a[:, k:k + 1] * w[None, :, k]).astype(np.float16)).astype(np.float16)
        return acc.astype(a.dtype)


class WrongSigmoidFloat16(WrongImplementation):
    """Sigmoid evaluated in float16 internally (input rounded to float16, 1/(1+exp(-x)) in
    float16), then widened back to float32."""

    name = "wrong-sigmoid-float16"
    bug = "sigmoid-float16"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "float32 or float64 cases with Sigmoid among the activations (GRU's and LSTM's default f)"
    select = "(gru/basic or lstm/basic) and direction=forward,B=absent,initial_h=random"

    def sigmoid(self, x):
        x16 = x.astype(np.float16)
        with np.errstate(over="ignore"):
            y16 = np.float16(1) / (np.float16(1) + np.exp(-x16))
        return y16.astype(x.dtype)


# -- 8. other realistic bug classes -------------------------------------------------------------

class WrongRecurrenceBiasDropped(WrongImplementation):
    """Only Wb is added; the recurrence bias Rb (second half of B) is dropped."""

    name = "wrong-rb-dropped"
    bug = "recurrence-bias-dropped"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "B random (a non-zero Rb)"
    select = "basic[direction=forward,B=random,initial_h=random"

    def recurrence_bias(self, rb):
        return np.zeros_like(rb)


class WrongInitialHIgnored(WrongImplementation):
    """initial_h is ignored: the recurrence starts from zeros."""

    name = "wrong-initial-h-ignored"
    bug = "initial-h-ignored"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "initial_h given and not all zero"
    select = "basic[direction=forward,B=random,initial_h=random"

    def initial_state(self, h0):
        return np.zeros_like(h0)


class WrongPeepholeOldCell(WrongImplementation):
    """The output-gate peephole reads Po . C[t-1] instead of Po . C[t] (DirectML's older text)."""

    name = "wrong-peephole-output-old-cell"
    bug = "peephole-output-old-cell"
    ops = ("LSTM",)
    visible_when = "LSTM with a non-zero Po (ONNX settles Po . Ct; the directml profile admits both)"
    select = "lstm/peephole_output_gate"

    def output_peephole_cell(self, c_old, c_new):
        return c_old


class WrongPeepholesIgnored(WrongImplementation):
    """The peephole input P is ignored, as OpenVINO's ONNX frontend does (LSTMSequence-5 has none)."""

    name = "wrong-peepholes-ignored"
    bug = "peepholes-ignored"
    ops = ("LSTM",)
    visible_when = "LSTM with a non-zero P"
    select = "lstm/peephole_output_gate"

    def peepholes(self, peep):
        return peep * False  # zeros (a NaN in P still gives NaN, as multiplying by 0 does)


class WrongBidirectionalOrder(WrongImplementation):
    """Bidirectional outputs stacked reverse first on the direction axis of Y, Y_h and Y_c."""

    name = "wrong-bidirectional-order"
    bug = "bidirectional-swapped"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "direction=bidirectional"
    select = "basic[direction=bidirectional,B=random,initial_h=random"

    def stack_directions(self, ys, hs, cs):
        return NumpyRNN.stack_directions(self, ys[::-1], hs[::-1], cs[::-1])


class WrongReverseYOrder(WrongImplementation):
    """The reverse direction writes Y in processing order: Y[k] holds the k-th step processed
    (time len-1-k) instead of time t. Y_h is still right."""

    name = "wrong-reverse-y-order"
    bug = "reverse-y-not-reversed"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "reverse or bidirectional, S > 1, Y requested"
    select = "basic[direction=reverse,B=random,initial_h=random"

    def y_time(self, t, k, reverse):
        return np.full(t.shape, k) if reverse else t


class WrongHardSigmoidAlphaBeta(WrongImplementation):
    """HardSigmoid computes max(0, min(1, beta*x + alpha)): alpha and beta swapped."""

    name = "wrong-hardsigmoid-alpha-beta"
    bug = "hardsigmoid-alpha-beta-swapped"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "HardSigmoid among the activations with alpha != beta (defaults 0.2 / 0.5 too)"
    select = "activation_defaults and HardSigmoid"

    def hardsigmoid(self, x, alpha, beta):
        return NumpyRNN.hardsigmoid(self, x, beta, alpha)


class WrongActivationParamsIgnored(WrongImplementation):
    """activation_alpha / activation_beta ignored: each activation takes its operator default
    (Affine and ScaledTanh, which have none: alpha 1, beta 0 / 1)."""

    name = "wrong-activation-params-ignored"
    bug = "activation-params-ignored"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = ("a parameterised activation (LeakyRelu, Elu, HardSigmoid, ThresholdedRelu, Affine, "
                    "ScaledTanh) with activation_alpha/beta other than its default")
    select = "activations[activations=LeakyRelu"

    def activation_params(self, names, alphas, betas):
        # None: the operator default; Affine and ScaledTanh, which have none, take these
        return [{"affine": (1.0, 0.0), "scaledtanh": (1.0, 1.0)}.get(name, (None, None)) for name in names]


class WrongThresholdedReluDefault(WrongImplementation):
    """ThresholdedRelu without activation_alpha uses alpha 0 (onnxruntime 1.32's behaviour) instead
    of the ThresholdedRelu operator's default 1.0."""

    name = "wrong-thresholdedrelu-default"
    bug = "thresholdedrelu-default-zero"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "ThresholdedRelu with no activation_alpha left for it, and inputs in (0, 1]"
    select = "activation_defaults[activations=ThresholdedRelu"

    def activation_defaults(self, name):
        return (0.0, 0.0) if name == "thresholdedrelu" else NumpyRNN.activation_defaults(self, name)


class WrongYhLastStep(WrongImplementation):
    """Y_h read from Y at the last time step (S-1 forward, 0 reverse) regardless of sequence_lens;
    Y is 0 past a sequence's length, so a short forward sequence gets Y_h = 0."""

    name = "wrong-y-h-last-step"
    bug = "y-h-from-last-step"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "forward or bidirectional with some 0 < sequence_lens[b] < seq_length, Y_h requested"
    select = "/sequence_lens[direction=forward,sequence_lens=[4,2,1],initial_h=random"

    def final_hidden(self, y, h, lens, reverse):
        return (y[0] if reverse else y[len(y) - 1]).copy()


# -- controls that must pass ---------------------------------------------------------------------

class BenignSummationOrder(Benign):
    """Every dot product summed term by term from the last to the first, each product and each sum
    rounded to the compute type (no FMA, no blocking): another order than numpy's BLAS, as a
    different but correct kernel sums. A tolerance that flags it is too tight.

    It replaces a control that multiplied the outputs by (1 + eps): one ulp of noise on top of a
    correct result is not what a correct kernel can do where an element is one product rounded once
    (the first step of a LeakyRelu RNN with input_size 1: good to u|y|, and the derived bound allows
    2.6 times that). The fuzzer's campaign found it there (tests/runtime/test_fuzz.py, 600 cases at seed 11:
    3.27 times the bound), and half that noise is no noise at all in float32 (1 + 2^-24 rounds to 1)."""

    name = "benign-summation-order"
    bug = "benign-summation-order"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "every case with a dot product of three or more terms (the order changes the roundings)"
    select = "basic[direction=bidirectional,B=random,initial_h=random or stress[direction=forward,sequence_lens=absent"
    why = "summation order is an implementation's choice: any honest bound for a recurrence allows every order"

    def matmul(self, a, w):
        out = np.zeros(a.shape[:-1] + (w.shape[0],), dtype=np.result_type(a, w))
        for k in reversed(range(a.shape[-1])):
            out = out + a[..., k:k + 1] * w[:, k]
        return out


class BenignActivationParamsPositional(Benign):
    """activation_alpha[k] / activation_beta[k] belong to the k-th activation. The ONNX text
    ("consumed in the order of activation functions") admits this reading
    (docs/disagreements.md#activation-parameter-order), so the oracle evaluates it as a documented reading and
    the suite must pass it."""

    name = "benign-activation-params-positional"
    bug = "activation-params-positional"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "activation_alpha_beta cases, where the popped and positional readings differ"
    select = "activation_alpha_beta and activation_alpha=[0.3]] and not =HardSigmoid+Elu, and not =Elu+LeakyRelu,"
    why = ("a documented reading of ONNX (docs/disagreements.md#activation-parameter-order): "
           "passes, matching the reading 'ab-pos'")

    def activation_params(self, names, alphas, betas):
        return [(alphas[k] if k < len(alphas) else None, betas[k] if k < len(betas) else None)
                for k in range(len(names))]


class BenignInputForgetIFromF(Benign):
    """input_forget = 1 couples the gates as it = 1 - ft (OpenVINO's LSTMCell-1 reading), a reading
    ONNX admits (docs/disagreements.md#input_forget)."""

    name = "benign-input-forget-i-from-f"
    bug = "input-forget-i-from-f"
    ops = ("LSTM",)
    visible_when = "LSTM with input_forget = 1"
    select = "lstm/input_forget[input_forget=1"
    why = "a documented reading of ONNX (docs/disagreements.md#input_forget): passes, matching the reading 'i=1-f'"

    def input_forget_coupling(self, input_gate, forget_gate, one):
        ft = forget_gate()
        return one - ft, ft


WRONG: dict[str, type] = {cls.name: cls for cls in WrongImplementation.__subclasses__()}
BENIGN: dict[str, type] = {cls.name: cls for cls in Benign.__subclasses__()}
#: switch name -> its class
BY_SWITCH: dict[str, type] = {cls.bug: cls for cls in (*WRONG.values(), *BENIGN.values())}
#: every switch, with what it does: its class's docstring, first paragraph
BUGS: dict[str, str] = {bug: " ".join(cls.__doc__.split("\n\n")[0].split()) for bug, cls in BY_SWITCH.items()}
__all__ = ["BENIGN", "BUGS", "BY_SWITCH", "WRONG", "Benign", "WrongImplementation",
           *(cls.__name__ for cls in (*WRONG.values(), *BENIGN.values()))]


def _reorder(blocks: np.ndarray, order: tuple) -> np.ndarray:
    """The gate blocks (axis 0) taken in ``order``: what a wrong gate order reads."""
    parts = np.split(blocks, len(order), axis=0)
    return np.concatenate([parts[k] for k in order], axis=0)


#: tanh(x) ~ x P(x^2) / Q(x^2) on |x| < 5.5, +-1 beyond: a [5/4] rational fitted for minimax
#: relative error (Loeb/Lawson iteration over [0, 5.5]); its error equi-oscillates at ~8.7e-5.
FAST_TANH_P = (0.999912595, 0.100841254, 6.23843852e-4)
FAST_TANH_Q = (1.0, 0.4336769, 0.01234516)
FAST_TANH_CLAMP = 5.5


def fast_tanh(x: np.ndarray) -> np.ndarray:
    t = x.dtype.type
    xc = np.clip(x, t(-FAST_TANH_CLAMP), t(FAST_TANH_CLAMP))
    u = xc * xc
    num = xc * (t(FAST_TANH_P[0]) + u * (t(FAST_TANH_P[1]) + u * t(FAST_TANH_P[2])))
    den = t(FAST_TANH_Q[0]) + u * (t(FAST_TANH_Q[1]) + u * t(FAST_TANH_Q[2]))
    return np.where(np.abs(x) >= t(FAST_TANH_CLAMP), np.sign(x), num / den).astype(x.dtype)
