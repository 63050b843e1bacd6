"""The oracle's exactness limit: sums and dot products are exact within EXACT_BITS bits, so a case
whose values explode double-exponentially (Softplus gates feeding an LSTM's cell) evaluates to the
infinities every dtype gives instead of allocating gigabytes, overflowing or never returning."""

from __future__ import annotations

import numpy as np
from mpmath import libmp

import oracles
from oracles.arith import EXACT_BITS, exact_sum, one_minus
from oracles.exact import dot_plus, fixed_point


def test_sums_are_exact_within_the_limit_and_rounded_beyond_it():
    one, tiny = libmp.fone, libmp.from_man_exp(1, -100)
    assert one_minus(tiny) == libmp.mpf_sub(one, tiny)                       # exact: 101 bits
    assert exact_sum([one, tiny, tiny]) == libmp.mpf_sum([one, tiny, tiny])
    huge = libmp.from_man_exp(3, 10 ** 20)                                   # 2**(10**20): past every dtype
    assert one_minus(huge) == libmp.mpf_neg(huge)                            # 1 is far below 2**-EXACT_BITS of it
    assert exact_sum([huge, one]) == huge


def test_dot_products_are_exact_within_the_limit():
    values = [libmp.from_man_exp(5, -60), libmp.from_man_exp(-3, 4)]
    row = fixed_point([libmp.from_man_exp(7, -2), libmp.fone])
    exact = libmp.mpf_sum([libmp.mpf_mul(values[0], libmp.from_man_exp(7, -2)), values[1],
                           libmp.from_man_exp(1, -200)])
    assert dot_plus(fixed_point(values), row, (libmp.from_man_exp(1, -200),)) == exact
    spread = fixed_point([libmp.from_man_exp(1, 10 ** 9), libmp.from_man_exp(1, 0)])
    assert spread[1] == 10 ** 9 + 1 - EXACT_BITS and spread[0][1] == 0     # 1 is below the limit's reach


def test_a_double_exponential_lstm_evaluates_to_the_infinities_of_every_dtype():
    S = 40
    tensors = {"X": np.ones((S, 1, 1), np.float32), "W": np.ones((1, 4, 1), np.float32),
               "R": np.full((1, 4, 1), 4.0, np.float32)}
    attributes = {"hidden_size": 1, "activations": ["Softplus"] * 3, "input_forget": 1}
    result = oracles.evaluate("LSTM", attributes, tensors)
    readings = {r.name: r.outputs for r in result.readings}
    exploding = readings["f=1-i"]["Y"].hi.ravel()
    assert np.isfinite(exploding[:4]).all() and np.isinf(exploding[-30:]).all()
    assert np.isfinite(readings["i=1-f"]["Y"].hi).all()   # the other coupling stays bounded
