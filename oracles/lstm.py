"""ONNX LSTM, one time step (gate order i, o, f, c; peepholes i, o, f):

    it = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Pi (.) Ct-1 + Wbi + Rbi)
    ft = f(Xt*(Wf^T) + Ht-1*(Rf^T) + Pf (.) Ct-1 + Wbf + Rbf)
    ct = g(Xt*(Wc^T) + Ht-1*(Rc^T) + Wbc + Rbc)
    Ct = ft (.) Ct-1 + it (.) ct
    ot = f(Xt*(Wo^T) + Ht-1*(Ro^T) + Po (.) Ct + Wbo + Rbo)
    Ht = ot (.) h(Ct)

Readings (see profiles.py): input_forget couples ft = 1 - it or it = 1 - ft; the output-gate
peephole reads Ct or Ct-1; clip bounds the input of h or not.

With torch.nn.LSTM's projection (proj_size > 0; framework.py): Ht = W_hr (ot (.) h(Ct)), a dot
product rounded once; Ht (proj_size wide) is what R multiplies at the next step.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ieee
from .arith import ROUND, ZERO, cmp, mul, one_minus, rounded_sum
from .exact import dot_plus, fixed_point, fixed_rows, input_projection


@dataclass
class Constants:
    xw: list  # [t][b][row]: Xt·Wᵀ + Wb + Rb, exact, rows i, o, f, c
    Ri: list  # fixed-point rows
    Ro: list
    Rf: list
    Rc: list
    Pi: list | None
    Po: list | None
    Pf: list | None
    W_hr: list | None = None  # fixed-point rows of the projection (proj_size of them), or None


def prepare(problem, d: int) -> Constants:
    H = problem.hidden_size
    R = problem.R[d]
    xw = input_projection(problem.X, problem.W[d], problem.Wb[d], problem.Rb[d])
    P = problem.P[d] if problem.P is not None else None
    Pi, Po, Pf = (None, None, None) if P is None else (P[:H], P[H:2 * H], P[2 * H:])
    if Po is not None and all(p == ZERO for p in Po):  # an infinity or NaN is not zero
        Po = None
    rows = fixed_rows(R)
    projection = fixed_rows(problem.W_hr[d]) if problem.W_hr is not None else None
    return Constants(xw, rows[:H], rows[H:2 * H], rows[2 * H:3 * H], rows[3 * H:], Pi, Po, Pf, projection)


def initial_state(problem, d: int, b: int):
    return (problem.initial_h[d][b], problem.initial_c[d][b])


def _gate(xw, h, row, peephole, cell, f, ctx):
    terms = (xw,) if peephole is None else (xw, mul(peephole, cell))
    return f(ctx.clip(dot_plus(h, row, terms, ctx.prec)), ctx.prec)


def step(k: Constants, t: int, b: int, state, functions, ctx):
    h_prev, c_prev = state
    f, g, h_fn = functions
    prec = ctx.prec
    H = len(c_prev)  # the cell's width; h_prev is proj_size wide under a projection
    h = fixed_point(h_prev)
    xw = k.xw[t][b]
    coupling = ctx.choices["input_forget"] if ctx.input_forget else None
    peephole_new = ctx.choices["peephole_output"] == "Ct"
    clip_h = ctx.clip_bound is not None and ctx.choices["clip_h"]
    Pi = k.Pi or [None] * H
    Pf = k.Pf or [None] * H
    Po = k.Po or [None] * H
    h_new, c_new = [], []
    for j in range(H):
        if coupling == "i=1-f":
            ft = _gate(xw[2 * H + j], h, k.Rf[j], Pf[j], c_prev[j], f, ctx)
            it = one_minus(ft)
        else:
            it = _gate(xw[j], h, k.Ri[j], Pi[j], c_prev[j], f, ctx)
            if coupling == "f=1-i":
                ft = one_minus(it)
            else:
                ft = _gate(xw[2 * H + j], h, k.Rf[j], Pf[j], c_prev[j], f, ctx)
        ct = _gate(xw[3 * H + j], h, k.Rc[j], None, None, g, ctx)
        cell = rounded_sum([mul(ft, c_prev[j]), mul(it, ct)], prec)
        ot = _gate(xw[H + j], h, k.Ro[j], Po[j], cell if peephole_new else c_prev[j], f, ctx)
        if ctx.clip_bound is not None and (cmp(cell, ctx.clip_bound) > 0
                                           or cmp(cell, ctx.clip_bound_neg) < 0
                                           or (not cell[1] and cell[2])):  # ±Inf, NaN
            ctx.touched.add("clip_h")
        h_in = ctx.clip(cell) if clip_h else cell
        h_new.append(mul(ot, h_fn(h_in, prec), prec, ROUND))
        c_new.append(cell)
    if k.W_hr is not None:  # h_t = W_hr h_t (torch.nn.LSTM's projection)
        m = fixed_point(h_new)
        h_new = [dot_plus(m, row, (), prec) for row in k.W_hr]
    return (h_new, c_new)


#: the same prepare, _gate and step for a problem with a non-finite input: IEEE 754 classes
#: (ieee.py); evaluation.py picks them by Problem.nonfinite
prepare_ieee, _gate_ieee, step_ieee = ieee.variant(globals(), prepare, _gate, step)
