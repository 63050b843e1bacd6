"""The ``torch`` profile: torch.nn.RNN, GRU and LSTM as PyTorch documents them.

torch writes the ONNX formulas for what it can express (gate orders aside, which the suite's
translator maps): RNN ``h_t = tanh(x_t W_ih^T + b_ih + h_(t-1) W_hh^T + b_hh)`` (or ReLU), GRU with
the reset gate applied after the recurrent product (ONNX ``linear_before_reset = 1``), LSTM without
peepholes. What it adds, and this profile settles:

- **Stacked layers** (``num_layers``): "In a multilayer LSTM, the input x_t^(l) of the l-th layer
  (l >= 2) is the hidden state h_t^(l-1) of the previous layer multiplied by dropout delta_t^(l-1)
  where each delta_t^(l-1) is a Bernoulli random variable which is 0 with probability dropout." A
  bidirectional layer's output is both directions' hidden states side by side (forward first), so
  layer l reads [h_forward, h_reverse] per time step. stack.py evaluates each layer and feeds it the
  exact outputs of the one below.
- **Dropout** in eval mode: the module runs after ``eval()``, where dropout is the identity.
- **Projections** (``proj_size > 0``, LSTM): "the output hidden state of each layer will be multiplied
  by a learnable projection matrix: h_t = W_hr h_t", i.e. ``h_t = W_hr (o_t (.) tanh(c_t))``; the state
  fed back, the output and h_n are proj_size wide, c_t stays hidden_size wide (lstm.py).
- **Packed sequences**: Y past a sequence's length is what ``pad_packed_sequence`` writes there, its
  ``padding_value`` (default 0.0): zeros, specified. A length of 0 cannot be packed.
- **Unbatched input**: the same formulas on one sequence (a batch of 1).

Quoted from https://docs.pytorch.org/docs/stable/generated/torch.nn.LSTM.html (and GRU, RNN,
``torch.nn.utils.rnn.pad_packed_sequence``). No point of this profile is ambiguous for the cases
torch can express; the IEEE 754 points of non-finite inputs are ONNX's.
"""

from __future__ import annotations

from .ieee_points import IEEE_POINTS
from .points import (
    ANY_CASE,
    F_IS_1_MINUS_I,
    GT,
    NO_CLIP_H,
    ONNX_DEFAULTS,
    PEEPHOLE_NEW_CELL,
    POPPED,
    Choice,
    Profile,
    _rules,
    _settled,
)

TORCH_DOCS = "https://docs.pytorch.org/docs/stable/generated/torch.nn.LSTM.html"
TORCH_NONE = "torch.nn.RNN/GRU/LSTM have no {what} (" + TORCH_DOCS + "): such cases are not expressible."
TORCH_LAYERS = (
    "torch.nn.LSTM `num_layers`, `dropout`, `proj_size` (" + TORCH_DOCS + "): \"In a multilayer LSTM, the "
    "input x_t^(l) of the l-th layer (l >= 2) is the hidden state h_t^(l-1) of the previous layer multiplied "
    "by dropout delta_t^(l-1) [...]\"; dropout applies in training mode only; \"If proj_size > 0 is specified, "
    "LSTM with projections will be used [...] the output hidden state of each layer will be multiplied by a "
    "learnable projection matrix: h_t = W_hr h_t\"."
)
TORCH_PACKED = (
    "torch.nn.utils.rnn.pad_packed_sequence: \"padding_value (float, optional): values for padded "
    "elements.\" (default 0.0); pack_padded_sequence requires every length >= 1."
)
TORCH_ACTIVATIONS = "torch.nn.RNN `nonlinearity`: 'tanh' or 'relu'; GRU and LSTM have fixed functions."

PADDED_ZEROS = Choice(
    "seq-pad-zeros",
    {"beyond_length": "zeros", "zero_length": "unspecified", "reverse_start": "length-1"},
    "Y[t, d, b, :] for t >= sequence_lens[b] is pad_packed_sequence's padding, 0; the reverse direction "
    "starts at t = sequence_lens[b]-1; Y_h is the state after the last valid step.",
)

TORCH = Profile(
    name="torch",
    spec="torch.nn.RNN, GRU, LSTM (num_layers, proj_size, dropout in eval mode, packed sequences)",
    points={
        "input_forget": _settled("input_forget", TORCH_NONE.format(what="coupled input and forget gates"),
                                 F_IS_1_MINUS_I),
        "peephole_output": _settled("peephole_output", TORCH_NONE.format(what="peepholes"), PEEPHOLE_NEW_CELL),
        "clip_h": _settled("clip_h", TORCH_NONE.format(what="clip"), NO_CLIP_H),
        "alpha_beta_consumption": _settled("alpha_beta_consumption",
                                           TORCH_NONE.format(what="activation parameters"), POPPED),
        "activation_defaults": _settled("activation_defaults", TORCH_ACTIVATIONS, ONNX_DEFAULTS),
        "thresholded_relu_boundary": _settled("thresholded_relu_boundary", TORCH_ACTIVATIONS, GT),
        "sequence_lens": _settled("sequence_lens", TORCH_PACKED, PADDED_ZEROS),
        "activation_case": _settled("activation_case", TORCH_ACTIVATIONS, ANY_CASE),
        **_rules("off", TORCH_NONE.format(what="clip"), (), "shared_or_per_direction",
                 ("Relu", "Tanh", "Sigmoid"), TORCH_ACTIVATIONS),
        "framework_axes": _settled("framework_axes", TORCH_LAYERS, Choice(
            "torch.nn", "torch.nn",
            "stacked layers each read the exact output of the layer below (both directions, forward first); "
            "dropout is the identity (eval mode); an LSTM projection is h_t = W_hr (o_t (.) tanh(c_t))")),
        **IEEE_POINTS,
    },
)
