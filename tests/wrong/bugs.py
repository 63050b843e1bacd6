"""The deliberately wrong implementations: one runtime plugin per bug class, each a thin subclass
of the numpy test double that sets one bug switch, plus the benign controls that must pass.

Each class says where its bug shows, for the tests and for a later fuzzer benchmark:

- ``ops``: the operators it affects;
- ``visible_when``: the case features that make it visible, in words;
- ``select``: a ``-k`` expression over the default corpus (``cases/``) picking a handful of cases
  where it is visible (for a benign control: where it differs from the correct mode at all);
- ``caught_by_interim``: whether the interim per-dtype tolerance (``interim-dtype-v1``) fails it
  there. ``False`` marks a real bug that tolerance is too loose to see; the derived bound should.

Run any of them as ``conformance run cases -k '<select>' --runtime <name>
--runtime-plugin tests.wrong:<Class> --spec onnx-14``.
"""

from __future__ import annotations

from tests.wrong.numpy_rnn import NumpyRNN


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


class WrongGateOrderLSTMInputForget(WrongImplementation):
    """LSTM gate blocks read as f, o, i, c: the input and forget gates swapped."""

    name = "wrong-gate-order-lstm-if"
    bug = "gate-order-lstm-if"
    ops = ("LSTM",)
    visible_when = "any LSTM case with random W or R and a non-zero C[t-1] (initial_c or S > 1)"
    select = "lstm/basic[direction=forward,B=random,initial_h=random"


class WrongGateOrderLSTMOutputCell(WrongImplementation):
    """LSTM gate blocks read as i, c, f, o: the output gate and the cell candidate swapped."""

    name = "wrong-gate-order-lstm-oc"
    bug = "gate-order-lstm-oc"
    ops = ("LSTM",)
    visible_when = "any LSTM case with random W or R"
    select = "lstm/basic[direction=forward,B=random,initial_h=random"


class WrongGateOrderGRU(WrongImplementation):
    """GRU gate blocks of W, R and B read as r, z, h: the update and reset gates swapped."""

    name = "wrong-gate-order-gru"
    bug = "gate-order-gru-zr"
    ops = ("GRU",)
    visible_when = "any GRU case with random W or R and a non-zero H[t-1] (initial_h or S > 1)"
    select = "gru/basic[direction=forward,B=random"


# -- 2. GRU reset gate placement ---------------------------------------------------------------

class WrongLinearBeforeReset(WrongImplementation):
    """GRU linear_before_reset semantics inverted: the reset gate applied at the wrong place."""

    name = "wrong-linear-before-reset"
    bug = "linear-before-reset-inverted"
    ops = ("GRU",)
    visible_when = ("GRU with a non-zero H[t-1] (initial_h random or S > 1): (r.H)R^T + Rbh differs "
                    "from r.(HR^T + Rbh) unless r = 1; clearest with a random Rbh")
    select = "gru/linear_before_reset and B=random,direction=forward"


# -- 3. off by one time step -------------------------------------------------------------------

class WrongOffByOneStep(WrongImplementation):
    """Y[t] holds H[t-1] (initial_h at the first step): the output is written before the state is
    updated. Y_h is still right, so only a case requesting Y shows it."""

    name = "wrong-y-off-by-one"
    bug = "y-off-by-one"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "any case whose outputs include Y"
    select = "basic[direction=forward,B=random,initial_h=random"


# -- 4. sequence_lens in the reverse direction -------------------------------------------------

class WrongReverseIgnoresSequenceLens(WrongImplementation):
    """The reverse direction starts at t = S-1 for every sequence and steps over the padding."""

    name = "wrong-reverse-sequence-lens"
    bug = "reverse-ignores-sequence-lens"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "reverse or bidirectional with some 0 < sequence_lens[b] < seq_length"
    select = "/sequence_lens[direction=reverse,sequence_lens=[4,2,1],initial_h=random"


# -- 5. clip placement --------------------------------------------------------------------------

class WrongClipAfterActivation(WrongImplementation):
    """clip bounds each activation's output instead of its input."""

    name = "wrong-clip-after-activation"
    bug = "clip-after-activation"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = ("clip set and some |pre-activation| > clip (with a bounded activation), or some "
                    "|activation output| > clip")
    select = "clip[clip=0.5,direction=forward and not Relu and not linear_before_reset=1"


# -- 6, 7. precision ---------------------------------------------------------------------------

class WrongFastTanh(WrongImplementation):
    """tanh by a [5/4] rational minimax approximation (relative error up to 8.7e-5), as a fast-math
    kernel would: a real bug for float32, which promises about 6e-8. Clearest in RNN, whose output
    is tanh itself; in GRU and LSTM the gates dilute it to about the interim tolerance."""

    name = "wrong-fast-tanh"
    bug = "fast-tanh"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "float32 or float64 cases using Tanh (the defaults) or ScaledTanh"
    select = "rnn/basic and B=absent,initial_h=absent"


class WrongFloat16Accumulation(WrongImplementation):
    """Dot products X.W^T and H.R^T accumulated in float16 for a float32 model."""

    name = "wrong-float16-accumulation"
    bug = "float16-accumulation"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "float32 or float64 cases (every dot product loses ~11 bits)"
    select = "basic[direction=forward,B=random,initial_h=random"


class WrongSigmoidFloat16(WrongImplementation):
    """Sigmoid evaluated in float16 internally, then widened to float32."""

    name = "wrong-sigmoid-float16"
    bug = "sigmoid-float16"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "float32 or float64 cases with Sigmoid among the activations (GRU's and LSTM's default f)"
    select = "(gru/basic or lstm/basic) and direction=forward,B=absent,initial_h=random"


# -- 8. other realistic bug classes -------------------------------------------------------------

class WrongRecurrenceBiasDropped(WrongImplementation):
    """Only Wb is added; the recurrence bias Rb (second half of B) is dropped."""

    name = "wrong-rb-dropped"
    bug = "recurrence-bias-dropped"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "B random (a non-zero Rb)"
    select = "basic[direction=forward,B=random,initial_h=random"


class WrongInitialHIgnored(WrongImplementation):
    """initial_h is ignored: the recurrence starts from zeros."""

    name = "wrong-initial-h-ignored"
    bug = "initial-h-ignored"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "initial_h given and not all zero"
    select = "basic[direction=forward,B=random,initial_h=random"


class WrongPeepholeOldCell(WrongImplementation):
    """The output-gate peephole reads Po . C[t-1] instead of Po . C[t] (DirectML's older text)."""

    name = "wrong-peephole-output-old-cell"
    bug = "peephole-output-old-cell"
    ops = ("LSTM",)
    visible_when = "LSTM with a non-zero Po (ONNX settles Po . Ct; the directml profile admits both)"
    select = "lstm/peephole_output_gate"


class WrongPeepholesIgnored(WrongImplementation):
    """The peephole input P is ignored, as OpenVINO's ONNX frontend does (LSTMSequence-5 has none)."""

    name = "wrong-peepholes-ignored"
    bug = "peepholes-ignored"
    ops = ("LSTM",)
    visible_when = "LSTM with a non-zero P"
    select = "lstm/peephole_output_gate"


class WrongBidirectionalOrder(WrongImplementation):
    """Bidirectional outputs stacked reverse first on the direction axis of Y, Y_h and Y_c."""

    name = "wrong-bidirectional-order"
    bug = "bidirectional-swapped"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "direction=bidirectional"
    select = "basic[direction=bidirectional,B=random,initial_h=random"


class WrongReverseYOrder(WrongImplementation):
    """The reverse direction writes Y in processing order: Y[k] holds the k-th step processed
    (time len-1-k) instead of time t. Y_h is still right."""

    name = "wrong-reverse-y-order"
    bug = "reverse-y-not-reversed"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "reverse or bidirectional, S > 1, Y requested"
    select = "basic[direction=reverse,B=random,initial_h=random"


class WrongHardSigmoidAlphaBeta(WrongImplementation):
    """HardSigmoid computes max(0, min(1, beta*x + alpha)): alpha and beta swapped."""

    name = "wrong-hardsigmoid-alpha-beta"
    bug = "hardsigmoid-alpha-beta-swapped"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "HardSigmoid among the activations with alpha != beta (defaults 0.2 / 0.5 too)"
    select = "activation_defaults and HardSigmoid"


class WrongActivationParamsIgnored(WrongImplementation):
    """activation_alpha / activation_beta ignored: each activation takes its operator default."""

    name = "wrong-activation-params-ignored"
    bug = "activation-params-ignored"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = ("a parameterised activation (LeakyRelu, Elu, HardSigmoid, ThresholdedRelu, Affine, "
                    "ScaledTanh) with activation_alpha/beta other than its default")
    select = "activations[activations=LeakyRelu"


class WrongThresholdedReluDefault(WrongImplementation):
    """ThresholdedRelu without activation_alpha uses alpha 0 (onnxruntime 1.32's behaviour) instead
    of the ThresholdedRelu operator's default 1.0."""

    name = "wrong-thresholdedrelu-default"
    bug = "thresholdedrelu-default-zero"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "ThresholdedRelu with no activation_alpha left for it, and inputs in (0, 1]"
    select = "activation_defaults[activations=ThresholdedRelu"


class WrongYhLastStep(WrongImplementation):
    """Y_h read from Y at the last time step (S-1 forward, 0 reverse) regardless of sequence_lens;
    Y is 0 past a sequence's length, so a short forward sequence gets Y_h = 0."""

    name = "wrong-y-h-last-step"
    bug = "y-h-from-last-step"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "forward or bidirectional with some 0 < sequence_lens[b] < seq_length, Y_h requested"
    select = "/sequence_lens[direction=forward,sequence_lens=[4,2,1],initial_h=random"


# -- controls that must pass ---------------------------------------------------------------------

class BenignNoise(Benign):
    """Outputs multiplied by (1 + eps) of the compute type (2^-23 in float32): 1 to 2 ulp of
    noise on top of a correct implementation's own rounding, as a different but correct kernel
    gives. A tolerance that flags it is too tight.

    Not 2^-20: that is 8 eps, 8 to 16 ulp, more than a correct float32 implementation can err by
    at an early time step (one step of a Softsign RNN, for instance, is good to about 2 ulp), so a
    sound derived bound rightly flags it there. ``noise_eps`` sets the size (in eps)."""

    name = "benign-noise"
    bug = "benign-noise"
    noise_eps = 1.0
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "every case (relative perturbation eps: 2^-23 in float32, lost when rounding to float16)"
    select = "basic[direction=bidirectional,B=random,initial_h=random or stress[direction=forward,sequence_lens=absent"
    why = "1 eps of relative noise is rounding-level: any honest float32 bound for a recurrence allows it"


class BenignActivationParamsPositional(Benign):
    """activation_alpha[k] / activation_beta[k] belong to the k-th activation. The ONNX text
    ("consumed in the order of activation functions") admits this reading (SPECS.md point 4), so
    the oracle evaluates it as a documented reading and the suite must pass it."""

    name = "benign-activation-params-positional"
    bug = "activation-params-positional"
    ops = ("RNN", "GRU", "LSTM")
    visible_when = "activation_alpha_beta cases, where the popped and positional readings differ"
    select = "activation_alpha_beta and activation_alpha=[0.3]] and not =HardSigmoid+Elu, and not =Elu+LeakyRelu,"
    why = "a documented reading of ONNX (SPECS.md point 4): passes, matching the reading 'ab-pos'"


class BenignInputForgetIFromF(Benign):
    """input_forget = 1 couples the gates as it = 1 - ft (OpenVINO's LSTMCell-1 reading), a reading
    ONNX admits (SPECS.md point 1)."""

    name = "benign-input-forget-i-from-f"
    bug = "input-forget-i-from-f"
    ops = ("LSTM",)
    visible_when = "LSTM with input_forget = 1"
    select = "lstm/input_forget[input_forget=1"
    why = "a documented reading of ONNX (SPECS.md point 1): passes, matching the reading 'i=1-f'"


WRONG: dict[str, type] = {cls.name: cls for cls in WrongImplementation.__subclasses__()}
BENIGN: dict[str, type] = {cls.name: cls for cls in Benign.__subclasses__()}
__all__ = ["BENIGN", "WRONG", "Benign", "WrongImplementation",
           *(cls.__name__ for cls in (*WRONG.values(), *BENIGN.values()))]
