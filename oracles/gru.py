"""ONNX GRU, one time step (gate order z, r, h):

    zt = f(Xt*(Wz^T) + Ht-1*(Rz^T) + Wbz + Rbz)
    rt = f(Xt*(Wr^T) + Ht-1*(Rr^T) + Wbr + Rbr)
    ht = g(Xt*(Wh^T) + (rt (.) Ht-1)*(Rh^T) + Rbh + Wbh)      # linear_before_reset = 0
    ht = g(Xt*(Wh^T) + (rt (.) (Ht-1*(Rh^T) + Rbh)) + Wbh)    # linear_before_reset != 0
    Ht = (1 - zt) (.) ht + zt (.) Ht-1
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ieee
from .arith import exact_sum, mul, one_minus, round_to, rounded_sum
from .exact import dot_plus, fixed_point, fixed_rows, input_projection


@dataclass
class Constants:
    xw: list  # [t][b][row] for the z and r rows: Xt·Wᵀ + Wb + Rb, exact
    xh: list  # [t][b][j]: Xt·Whᵀ + Wbh (+ Rbh when linear_before_reset = 0), exact
    Rz: list  # fixed-point rows
    Rr: list
    Rh: list
    Rbh: list  # raw
    linear_before_reset: bool


def prepare(problem, d: int) -> Constants:
    H = problem.hidden_size
    W, R, Wb, Rb = problem.W[d], problem.R[d], problem.Wb[d], problem.Rb[d]
    lbr = problem.linear_before_reset
    xw = input_projection(problem.X, W[:2 * H], Wb[:2 * H], Rb[:2 * H])
    if lbr:
        xh = input_projection(problem.X, W[2 * H:], Wb[2 * H:])
    else:
        xh = input_projection(problem.X, W[2 * H:], Wb[2 * H:], Rb[2 * H:])
    rows = fixed_rows(R)
    return Constants(xw, xh, rows[:H], rows[H:2 * H], rows[2 * H:], Rb[2 * H:], lbr)


def initial_state(problem, d: int, b: int):
    return (problem.initial_h[d][b],)


def step(k: Constants, t: int, b: int, state, functions, ctx):
    (h_prev,) = state
    f, g = functions
    prec, clip = ctx.prec, ctx.clip
    H = len(h_prev)
    h = fixed_point(h_prev)
    xw, xh = k.xw[t][b], k.xh[t][b]
    z = [f(clip(dot_plus(h, k.Rz[j], (xw[j],), prec)), prec) for j in range(H)]
    r = [f(clip(dot_plus(h, k.Rr[j], (xw[H + j],), prec)), prec) for j in range(H)]
    if k.linear_before_reset:
        pre = [exact_sum([xh[j], mul(r[j], dot_plus(h, k.Rh[j], (k.Rbh[j],)))])
               for j in range(H)]
    else:
        rh = fixed_point([mul(a, c) for a, c in zip(r, h_prev)])
        pre = [dot_plus(rh, k.Rh[j], (xh[j],)) for j in range(H)]
    hidden = [g(clip(round_to(pre[j], prec)), prec) for j in range(H)]
    if ctx.ieee:  # where an operand is infinite the documented form and its rewrite may part
        return ([ieee.gru_update(z[j], hidden[j], h_prev[j], prec, ctx) for j in range(H)],)
    return ([rounded_sum([mul(one_minus(z[j]), hidden[j]), mul(z[j], h_prev[j])], prec)
             for j in range(H)],)


#: the same prepare and step for a problem with a non-finite input: IEEE 754 classes
#: (ieee.py); evaluation.py picks them by Problem.nonfinite
prepare_ieee, step_ieee = ieee.variant(globals(), prepare, step)
