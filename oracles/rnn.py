"""ONNX RNN, one time step:  Ht = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Wbi + Rbi)."""

from __future__ import annotations

from dataclasses import dataclass

from . import ieee
from .exact import dot_plus, fixed_point, fixed_rows, input_projection


@dataclass
class Constants:
    xw: list  # [t][b][j]: Xt·Wiᵀ + Wbi + Rbi, exact
    R: list  # [j]: fixed-point rows of Ri


def prepare(problem, d: int) -> Constants:
    return Constants(input_projection(problem.X, problem.W[d], problem.Wb[d], problem.Rb[d]),
                     fixed_rows(problem.R[d]))


def initial_state(problem, d: int, b: int):
    return (problem.initial_h[d][b],)


def step(k: Constants, t: int, b: int, state, functions, ctx):
    f = functions[0]
    prec = ctx.prec
    h = fixed_point(state[0])
    xw = k.xw[t][b]
    return ([f(ctx.clip(dot_plus(h, row, (xw[j],), prec)), prec) for j, row in enumerate(k.R)],)


#: the same prepare and step for a problem with a non-finite input: IEEE 754 classes
#: (ieee.py); evaluation.py picks them by Problem.nonfinite
prepare_ieee, step_ieee = ieee.variant(globals(), prepare, step)
