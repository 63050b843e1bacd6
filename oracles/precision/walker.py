"""The one float64 trajectory walker: directions, sequence_lens and the gate arithmetic of RNN, GRU
and LSTM, carrying either the running bound (running.py) or tangents (tangents.py).

The values are a float64 recomputation of the trajectory that follows the same reading (choices)
as the oracle's evaluation: sequence_lens and the reverse start, clip and ``clip_h``, peepholes and
``peephole_output``, ``input_forget`` and its coupling, ``linear_before_reset``, activations with
alpha/beta as the reading assigns them. The directions are walked together, stacked on a leading
axis; a batch row past its sequence length keeps its state. A new attribute of the cells touches
this module once, whatever the carrier: each carrier implements the same few operations (``x``,
``rec``, ``bias``, ``peephole``, ``repeat``, ``value``, ``act``, ``clip``, ``mul``, ``add``,
``one_minus``, ``gru_update``, ``where``, ``fields``; torch.nn's stacked layers and projection:
``carried``, ``projection``, ``project``).
"""

from __future__ import annotations

import numpy as np

from ..evaluation import direction_functions

ALL = slice(None)


def walk(problem, choices: dict, carrier) -> dict:
    """{field: {output: array (layout 0)}} for the fields the carrier records (``carrier.FIELDS``,
    each with the value an element takes where nothing is computed; NaN for a direction whose
    activations lack a parameter: its outputs are unspecified)."""
    F = problem.floats
    S, D, B, H = problem.seq_length, problem.num_directions, problem.batch_size, problem.hidden_size
    G, op = problem.info.gates, problem.op
    names = problem.info.outputs
    Hy = problem.output_size  # proj_size under torch's LSTM projection (oracles/framework.py)
    shapes = {"Y": (S, D, B, Hy), **{name: (D, B, H if name == "Y_c" else Hy) for name in names[1:]}}
    out = {field: {n: np.full(shape, fill, dtype=bool if fill is False else np.float64)
                   for n, shape in shapes.items()} for field, fill in carrier.FIELDS.items()}
    walked, functions = [], []
    for d in range(D):
        fns, missing = direction_functions(problem, d, choices)
        if missing:  # a parameter neither given nor defaulted: the outputs are unspecified
            for arrays in out.values():
                if arrays["Y"].dtype != bool:
                    arrays["Y"][:, d] = np.nan
                    for name in names[1:]:
                        arrays[name][d] = np.nan
        else:
            walked.append(d)
            functions.append(fns)
    if not walked:
        return out
    dirs = np.array(walked)
    fns = carrier.functions(functions)
    Bias = F["B"][dirs]
    Wb, Rb = Bias[:, :G * H], Bias[:, G * H:].copy()
    if op == "GRU" and problem.linear_before_reset:
        Rb[:, 2 * H:] = 0.0  # Rbh is added after the reset gate, not in X·Whᵀ + Wbh
    Rbh = Bias[:, None, 5 * H:] if op == "GRU" else None
    P = F["P"][dirs][:, None, :] if F["P"] is not None else None
    h, c = carrier.setup(problem, F["X"], F["W"][dirs], F["R"][dirs], (Wb, Rb),
                         F["initial_h"][dirs].copy(),
                         F["initial_c"][dirs].copy() if op == "LSTM" else None)
    if F.get("X_error") is not None:  # a stacked layer's input: the layer below's output and its bound
        carrier.carried(F["X_error"], F["W"][dirs])
    if F.get("W_hr") is not None:  # torch.nn.LSTM's projection h_t = W_hr h_t
        carrier.projection(F["W_hr"][dirs])
    lens = np.asarray(problem.sequence_lens)
    reverse = np.array([problem.direction == "reverse" or d == 1 for d in walked])
    di = np.arange(len(walked))
    full = min(problem.sequence_lens) == S  # every sequence runs the whole length: no masking
    if not full:
        dgrid, bgrid = np.meshgrid(di, np.arange(B), indexing="ij")
    cell = {"RNN": _rnn, "GRU": _gru, "LSTM": _lstm}[op]
    for step in range(S):
        if full:
            t = np.where(reverse, S - 1 - step, step)
            index: tuple[np.ndarray, ...] = (di, t)
        else:
            active = np.broadcast_to(step < lens, (len(walked), B))
            if not active.any():
                break
            t = np.where(reverse[:, None], lens[None, :] - 1 - step, step)
            t = np.where(active, t, 0)
            index = (dgrid, t, bgrid)
        h_new, c_new = cell(carrier, problem, choices, fns, index, h, c, H, Rbh, P)
        if full:
            h, c = h_new, c_new
            for field, value in carrier.fields(h).items():
                out[field]["Y"][t, dirs] = value
            continue
        keep = active[..., None]
        h = carrier.where(keep, h_new, h)
        if c is not None:
            c = carrier.where(keep, c_new, c)
        where = (t[active], dirs[dgrid[active]], bgrid[active])
        for field, value in carrier.fields(h).items():
            out[field]["Y"][where] = value[active]
    for field, value in carrier.fields(h).items():
        out[field]["Y_h"][dirs] = value
    if c is not None:
        for field, value in carrier.fields(c).items():
            out[field]["Y_c"][dirs] = value
    return out


def _rnn(cr, problem, choices, fns, index, h, c, H, Rbh, P):
    """Ht = f(Xt·Wᵀ + Ht-1·Rᵀ + Wb + Rb)."""
    return cr.act(fns[0], cr.clip(cr.value(cr.x(index) + cr.rec(ALL, h)))), None


def _gru(cr, problem, choices, fns, index, h, c, H, Rbh, P):
    """One GRU step: z and r through f, h̃ through g (the reset gate before or after the
    recurrent product), then (1 − z)⊙h̃ + z⊙H."""
    f, g = fns
    zr, hs = slice(0, 2 * H), slice(2 * H, 3 * H)
    x = cr.x(index)
    gate = cr.act(f, cr.clip(cr.value(x[..., zr] + cr.rec(zr, h))))
    z, r = gate[..., :H], gate[..., H:]
    xh = x[..., hs]
    if problem.linear_before_reset:
        # q = H·Rhᵀ + Rbh; xh = X·Whᵀ + Wbh; pre = xh + r ⊙ q
        q = cr.value(cr.rec(hs, h) + cr.bias(Rbh))
        pre = cr.add(cr.value(xh), cr.mul(r, q))
    else:
        # pre = X·Whᵀ + (r ⊙ H)·Rhᵀ + Wbh + Rbh
        pre = cr.value(xh + cr.rec(hs, cr.mul(r, h)))
    hh = cr.act(g, cr.clip(pre))
    return cr.gru_update(z, hh, h), None


def _lstm(cr, problem, choices, fns, index, h, c, H, Rbh, P):
    """One LSTM step (rows i, o, f, c): (h, c)."""
    f, g, h_fn = fns
    total = cr.x(index) + cr.rec(ALL, h)
    new_cell_peephole = P is not None and choices["peephole_output"] == "Ct"
    if P is not None:  # Pi⊙Ct-1, Pf⊙Ct-1 (and Po⊙Ct-1 under the po-ct1 reading)
        zero = np.zeros_like(P[..., :H])
        Pr = np.concatenate([P[..., :H], zero if new_cell_peephole else P[..., H:2 * H],
                             P[..., 2 * H:], zero], axis=-1)
        # the rows without a peephole term (c, and o under po-ct) add nothing: not 0 x C, which
        # is NaN for an infinite C; a P entry that is 0 does multiply C (IEEE)
        rows = np.concatenate([np.ones_like(zero), zero if new_cell_peephole else
                               np.ones_like(zero), np.ones_like(zero), zero], axis=-1) != 0
        total = total + cr.peephole(Pr, cr.repeat(c, 4), rows)
    a = cr.value(total)
    i_, o_, f_, c_ = (slice(j * H, (j + 1) * H) for j in range(4))
    coupling = choices["input_forget"] if problem.input_forget else None
    # the gates through f that are ready now, in one call: i and/or f, and o unless it reads Ct
    wanted = [f_] if coupling == "i=1-f" else [i_] if coupling == "f=1-i" else [i_, f_]
    if not new_cell_peephole:
        wanted.append(o_)
    cols = np.concatenate([np.arange(r.start, r.stop) for r in wanted])
    v = cr.act(f, cr.clip(a[..., cols]))
    got = {r.start: v[..., j * H:(j + 1) * H] for j, r in enumerate(wanted)}
    if coupling == "i=1-f":
        ft = got[f_.start]
        it = cr.one_minus(ft)
    elif coupling == "f=1-i":
        it = got[i_.start]
        ft = cr.one_minus(it)
    else:
        it, ft = got[i_.start], got[f_.start]
    ct = cr.act(g, cr.clip(a[..., c_]))
    cell = cr.add(cr.mul(ft, c), cr.mul(it, ct), exact=True)
    if new_cell_peephole:
        ot = cr.act(f, cr.clip(cr.value(total[..., o_] + cr.peephole(P[..., H:2 * H], cell))))
    else:
        ot = got[o_.start]
    if cr.clip_bound is not None and choices["clip_h"]:
        hc = cr.act(h_fn, cr.clip(cell))
    else:
        hc = cr.act(h_fn, cell)
    h_new = cr.mul(ot, hc)
    if problem.proj_size:  # h_t = W_hr (o_t ⊙ h(C_t)) (torch.nn.LSTM's projection)
        h_new = cr.value(cr.project(h_new))
    return h_new, cell
