"""Hypothesis strategies that draw canonical cases: valid ones from each op's constraints, and
invalid ones that break exactly one constraint (:mod:`conformance.fuzz.mutations`).

Every draw has a label (printed with a failing example, ``Draw 7 (direction): 'reverse'``) and is
recorded in ``Case.params``, so a finding shows which choices made it. The attributes come from the
attribute table (:mod:`conformance.fuzz.attributes`): a row added there is drawn. Draws come in an order
chosen for shrinking: op, form and every optional feature first (each shrinks toward "absent" or
the default), then the shapes (toward 1), then the values. A minimized case therefore keeps only
the features the failure needs: those are the attributes that matter, and the finding's signature
is built from them (:mod:`conformance.fuzz.signature`).

Two ways in, sharing one builder:

- :func:`valid_cases`, :func:`invalid_cases`, :func:`cases`: ordinary strategies, for ``@given``;
- :func:`draw_case` with a labelled ``draw(strategy, label)``, which the differential property
  calls with ``st.data()`` so the labels show in hypothesis' report.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import numpy as np
from hypothesis import assume, event, note
from hypothesis import strategies as st

from conformance.case.model import Case
from conformance.case.tensors import numpy_dtype
from conformance.case.vocabulary import (
    ACTIVATION_FUNCTIONS,
    ATTRIBUTE,
    DEFAULT_ACTIVATIONS,
    OUTPUTS,
    input_shapes,
    inputs_of,
    num_directions,
)
from conformance.fuzz import attributes as A
from conformance.fuzz import values as V
from conformance.fuzz.scope import Scope
from conformance.fuzz.signature import with_id
from conformance.runtimes.forms import CONFIGURATIONS, compose

#: the execution forms a drawn case runs in (besides every plain target): the default first, so a
#: finding shrinks toward the plain form
EXECUTIONS = ("default",) + tuple(compose("default", f) for f in CONFIGURATIONS)

#: where the campaign reaches an attribute only some spec families know (torch.nn's own axes, docs/
#: framework.md, where it reads torch programs: ``Scope.framework``): how often a case gives those (drawn
#: first, shrinks toward a case without). Such a case is not expressible in the other families, so
#: their targets keep most of the draws
FRAMEWORK_WEIGHTS = {False: 2, True: 1}

#: float32-exact values for activation_alpha / activation_beta (FLOAT attributes), simplest first
PARAMETER_VALUES = (0.5, 2.0, 0.25, 1.5, 1.0, 0.75, 3.0, -0.5, -1.0, 0.0, float(np.float32(0.1)),
                    float(np.float32(0.3)))

#: relative weights of the dtypes (float32 mostly)
DTYPE_WEIGHTS = {"float32": 6, "float16": 2, "float64": 1, "bfloat16": 1}

#: how sequence_lens is given: absent, all equal to seq_length, or drawn per batch entry
LENGTH_MODES = ("absent", "full", "partial")

Draw = Callable[[st.SearchStrategy, str], object]


#: sizes where vectorised kernels change path: SIMD widths and GEMM blocks, each side of them
EDGE_SIZES = (1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257,
              511, 512, 513, 1023, 1024)


def production_sizes(maximum: int) -> st.SearchStrategy[int]:
    """A size up to ``maximum``: an edge size (EDGE_SIZES) or any, edges three times as often."""
    edges = [n for n in EDGE_SIZES if n <= maximum] or [1]
    return st.one_of(st.sampled_from(edges), st.sampled_from(edges), st.sampled_from(edges),
                     st.integers(1, maximum))


class Recorder:
    """Wraps a labelled draw: records every value under its label (``Case.params``), notes it."""

    def __init__(self, draw: Draw, notes: bool = False):
        self._draw = draw
        self._notes = notes
        self.params: dict = {}

    def __call__(self, strategy: st.SearchStrategy, label: str):
        value = self._draw(strategy, label)
        self.params[label] = _plain(value)
        if self._notes:
            note(f"{label}: {value!r}")
        return value


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def weighted(table: dict) -> st.SearchStrategy:
    """One of the keys, with the given integer weights; shrinks toward the first key."""
    return _weighted(tuple(table.items()))


# Each strategy below is built once per distinct argument and then reused: hypothesis validates a
# strategy object and works out its properties on the object's first draw, which cost as much as
# the draw itself when a case's ~100 draws each built a new one. The draws are the same.
@functools.cache
def _weighted(items: tuple) -> st.SearchStrategy:
    flat = [k for k, w in items for _ in range(w)]
    return st.integers(0, len(flat) - 1).map(lambda i: flat[i])


@functools.cache
def _sampled(options: tuple) -> st.SearchStrategy:
    return st.sampled_from(options)


def _default_first(options, default):
    return _sampled((default, *(o for o in options if o != default)))


BOOLEANS = st.booleans()
SEEDS = st.integers(0, 2 ** 32 - 1)


@functools.cache
def _sizes(maximum: int, production: bool) -> st.SearchStrategy[int]:
    return production_sizes(maximum) if production else st.integers(1, maximum)


@functools.cache
def _lengths(S: int, B: int) -> st.SearchStrategy[list]:
    """``B`` sequence lengths, each shrinking toward ``S`` (full)."""
    return st.lists(st.integers(0, S).map(lambda k: S - k), min_size=B, max_size=B)


@functools.cache
def _parameters(most: int) -> st.SearchStrategy[list]:
    return st.lists(st.one_of(st.sampled_from(PARAMETER_VALUES), st.floats(-4.0, 4.0, width=32)),
                    min_size=1, max_size=most)


@functools.cache
def _overrides(n: int, specials: int) -> st.SearchStrategy[list]:
    return st.lists(st.tuples(st.integers(0, max(0, n - 1)), st.integers(0, specials - 1)), max_size=3)


# -- the valid case ------------------------------------------------------------------------------

def draw_case(draw: Draw, scope: Scope = Scope(), notes: bool = False) -> Case:
    """A valid or an invalid case (weights from ``scope``)."""
    rec = Recorder(draw, notes)
    expect = rec(weighted({"valid": scope.valid_weight, "invalid": scope.invalid_weight}), "expect")
    event("expect", expect)
    if expect == "valid":
        return _valid(rec, scope)
    from conformance.fuzz.mutations import mutate
    return mutate(rec, _valid(rec, scope, check_overflow=False))


def draw_valid_case(draw: Draw, scope: Scope = Scope(), notes: bool = False) -> Case:
    return _valid(Recorder(draw, notes), scope)


def _valid(rec: Recorder, scope: Scope, check_overflow: bool = True) -> Case:
    # Every choice is drawn whatever the earlier ones were (a cell still draws a seq_length, an absent
    # B still draws its values), so that turning a feature off never shifts the draws after it: the
    # shrinker can then drop each feature on its own, and a minimized case keeps only what it needs.
    op = rec(_sampled(tuple(scope.ops)), "op")
    form = rec(_sampled(tuple(scope.forms)), "form")
    direction = rec(_sampled(tuple(ATTRIBUTE["direction"].values or ())), "direction")
    dtype = rec(weighted({d: w for d, w in DTYPE_WEIGHTS.items() if d in scope.dtypes}), "dtype")
    event("op", op)
    event("dtype", dtype)
    D = num_directions(direction)
    attributes: dict = {"direction": direction}
    attributes.update(_activations(rec, op, D))
    common, partial = A.rows_drawn(scope)
    drawn = A.draw(rec, common)    # kept once the shapes they may depend on are drawn
    outputs = rec(_sampled(tuple(_output_subsets(op))), "outputs")
    present = {"X": True, "W": True, "R": True, "B": rec(BOOLEANS, "B")}
    length_mode = rec(_sampled(LENGTH_MODES), "sequence_lens")
    present["initial_h"] = rec(BOOLEANS, "initial_h")
    present["initial_c"] = rec(BOOLEANS, "initial_c") and op == "LSTM"
    present["P"] = rec(BOOLEANS, "P") and op == "LSTM"

    lim = scope.limits
    S = rec(_sizes(lim.max_seq_length, lim.production), "seq_length")
    S = 1 if form == "cell" else S
    B = rec(_sizes(lim.max_batch_size, lim.production), "batch_size")
    I = rec(_sizes(lim.max_input_size, lim.production), "input_size")  # noqa: E741
    H = rec(_sizes(lim.max_hidden_size, lim.production), "hidden_size")
    attributes = {"hidden_size": H, **attributes}
    shape = {"seq_length": S, "batch_size": B, "input_size": I}
    attributes.update(A.kept(op, form, attributes, shape, drawn))
    lens = rec(_lengths(S, B), "sequence_lens.values")

    special = V.specials(dtype, attributes)
    shapes = input_shapes(op, H, direction, shape)
    tensors = {}
    for name in ("X", "W", "R", "B", "initial_h", "initial_c", "P"):
        values = _tensor(rec, name, shapes.get(name, (1,)), dtype, special)
        if present[name]:
            tensors[name] = values
    if length_mode == "full":
        tensors["sequence_lens"] = np.full((B,), S, dtype=np.int32)
    elif length_mode == "partial":
        tensors["sequence_lens"] = np.asarray(lens, dtype=np.int32)
    tensors = {n: tensors[n] for n in ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P")
               if n in tensors}
    # the execution form the case runs in besides the plain one (conformance/runtimes/forms.py): the
    # examiner runs it on the plain targets and on the targets of this form (conformance/fuzz/examiner.py)
    event("execution", rec(_sampled(EXECUTIONS), "execution"))
    framework = _partial(rec, op, form, attributes, shape, partial) if partial else {}
    if framework:
        attributes.update(framework)
        knowing = A.knowing(framework, partial)
        assume(knowing)    # a case no family expresses runs nowhere
        names = inputs_of(op, attributes)
        shapes = input_shapes(op, H, direction, shape, attributes)
        for name in ("initial_h", "initial_c"):  # one state per layer and direction, the output's width
            if name in tensors:
                tensors[name] = _tensor(rec, f"{name}.stacked", shapes[name], dtype, special)
        if "R" in tensors and shapes["R"] != tensors["R"].shape:  # R reads the projected state
            tensors["R"] = _tensor(rec, "R.projected", shapes["R"], dtype, special)
        for name in names:
            if name in tensors or name in ("sequence_lens", "P") or (name.startswith("B_l") and "B" not in tensors):
                continue
            if name in shapes:
                tensors[name] = _tensor(rec, name, shapes[name], dtype, special)
        if knowing == {"torch"}:   # torch.nn.LSTM has no peepholes; the oracle's stacks take finite inputs only
            tensors.pop("P", None)
            assume(all(np.all(np.isfinite(np.asarray(v, dtype=np.float64))) for v in tensors.values()))
    # the converter the case runs through besides the plain targets (conformance/converters/): none first
    if scope.converters:
        event("converter", rec(_sampled(("none", *scope.converters)), "converter"))
    case = Case(id="fuzz/pending", op=op, form=form, attributes=attributes, shape=shape, dtype=dtype,
                tensors=tensors, outputs=tuple(outputs) if tuple(outputs) != OUTPUTS[op] else (),
                params=rec.params)
    if check_overflow:
        assume(V.overflow_free(case))
    return with_id(case)


def _partial(rec: Recorder, op: str, form: str, attributes: dict, shape: dict, rows: tuple) -> dict:
    """The attributes only some spec families know (torch.nn's own axes: a stack, an LSTM projection,
    dropout in eval mode, unbatched input), in one case of FRAMEWORK_WEIGHTS' share; each drawn whatever
    the others, kept where the case has room for it (conformance/fuzz/attributes.py). Such a case runs
    on the targets of those families (and the converters that read their programs)."""
    wanted = rec(weighted(FRAMEWORK_WEIGHTS), "framework")
    drawn = A.draw(rec, rows)
    if not wanted:
        return {}
    found = A.kept(op, form, attributes, shape, drawn)
    if found:
        event("framework", "+".join(sorted(found)))
    return found


def _output_subsets(op: str) -> list[tuple]:
    names = OUTPUTS[op]
    subsets = [tuple(n for k, n in enumerate(names) if mask >> k & 1) for mask in range(1, 2 ** len(names))]
    return sorted(subsets, key=lambda s: (-len(s), s))     # all outputs first


def _activations(rec: Recorder, op: str, D: int) -> dict:
    custom = rec(BOOLEANS, "activations")
    defaults = DEFAULT_ACTIVATIONS[op]

    def one_set(label):
        return [rec(_default_first(ACTIVATION_FUNCTIONS, d), f"{label}[{k}]") for k, d in enumerate(defaults)]

    first = one_set("activations.forward")
    second = one_set("activations.reverse")
    per_direction = rec(BOOLEANS, "activations.per_direction") and D == 2
    names = first + (second if per_direction else first if D == 2 else [])
    out = {"activations": names}
    for key in ("activation_alpha", "activation_beta"):
        given_ = rec(BOOLEANS, key)
        vals = rec(_parameters(2 * len(defaults)), f"{key}.values")
        n = len(names) if per_direction or D == 1 else len(first)
        vals = [float(np.float32(v)) for v in vals[:n]]
        if given_:
            out[key] = vals if per_direction or D == 1 else vals * 2
    if not custom:
        return {}
    event("activations", "+".join(sorted(set(names) - set(defaults))) or "defaults")
    return out


def _tensor(rec: Recorder, name: str, shape: tuple, dtype: str, special) -> np.ndarray:
    style = rec(_sampled(tuple(V.STYLES)), f"{name}.style")
    seed = rec(SEEDS, f"{name}.seed")
    overrides = rec(_overrides(int(np.prod(shape)), len(special)), f"{name}.overrides")
    values = V.apply_overrides(V.style_values(style, shape, dtype, seed, name, special), overrides, special)
    return values.astype(numpy_dtype(dtype))


# -- plain strategies, for @given ------------------------------------------------------------------

def _composite(builder, scope: Scope):
    @st.composite
    def strategy(draw):
        return builder(lambda s, label: draw(s), scope, notes=True)
    return strategy()


def valid_cases(scope: Scope = Scope()) -> st.SearchStrategy[Case]:
    """Valid canonical cases."""
    return _composite(draw_valid_case, scope)


def invalid_cases(scope: Scope = Scope()) -> st.SearchStrategy[Case]:
    """Cases that break exactly one constraint (``expect == "invalid"``, ``violates`` set)."""
    return _composite(draw_case, dataclasses.replace(scope, valid_weight=0, invalid_weight=1))


def cases(scope: Scope = Scope()) -> st.SearchStrategy[Case]:
    """Valid and invalid cases, weighted as ``scope`` says."""
    return _composite(draw_case, scope)
