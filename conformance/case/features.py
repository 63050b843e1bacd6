"""A case's *features*: the tokens that name what it exercises, from its content alone.

A feature is a token such as ``reverse``, ``clip``, ``act=ThresholdedRelu``, ``dtype=float16``,
``sequence_lens=partial``, ``subnormal``, ``nan``, ``inf`` or, for an invalid case, the constraint it breaks
(``violates=shape:W``). Only non-default choices are tokens. A bidirectional case has both
``reverse`` and ``bidirectional`` (it has a reverse pass); a zero length is also
``sequence_lens=partial``; ``activation_spelling`` marks a known function spelled otherwise than
ONNX spells it (``relu``).

Every result record carries its case's features, so an expectations entry can name the
divergence it knows by feature (``features: [P]``: "ignores peepholes") and cover a fuzzer's case
as well as a corpus case; the fuzzer de-duplicates its findings by them
(:mod:`conformance.fuzz.signature`).

The constraints an invalid case breaks are :mod:`conformance.case.constraints`'; the
feature table at the end (:data:`FEATURES`) gives each feature its removal (ablation, the fuzzer's
reduction), its sentence ("fails whenever ...") and the spec clause a finding cites it by.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

import numpy as np

from conformance.case import edits
from conformance.case.constraints import broken_constraints
from conformance.case.tensors import finfo
from conformance.case.vocabulary import DEFAULT_ACTIVATIONS, OUTPUTS, canonical_activation

_CACHE: OrderedDict = OrderedDict()   # case digest -> features (a run asks once per target)


def features(case) -> frozenset[str]:
    """The case's non-default features (cached by the case's content digest)."""
    key = getattr(case, "digest", None)
    if key is not None and key in _CACHE:
        return _CACHE[key]
    out = _features(case)
    if key is not None:
        _CACHE[key] = out
        if len(_CACHE) > 4096:
            _CACHE.popitem(last=False)
    return out


def _features(case) -> frozenset[str]:
    a, t = case.attributes, case.tensors
    tokens = set()
    if case.form != "sequence":
        tokens.add(f"form={case.form}")
    direction = a.get("direction", "forward")
    if direction in ("reverse", "bidirectional"):
        tokens.add("reverse")            # a pass that walks time backwards (bidirectional has one too)
    if direction == "bidirectional":
        tokens.add("bidirectional")
    elif direction not in ("forward", "reverse"):
        tokens.add(f"direction={direction}")
    if case.dtype != "float32":
        tokens.add(f"dtype={case.dtype}")
    for name in ("B", "initial_h", "initial_c", "P"):
        if name in t:
            tokens.add(name)
    lens = t.get("sequence_lens")
    if lens is not None and np.ndim(lens) == 1 and lens.size:
        S = case.shape["seq_length"]
        tokens.add("sequence_lens=full" if np.all(lens == S) else "sequence_lens=partial")
        if np.any(lens == 0):
            tokens.add("zero_length")
    names = a.get("activations")
    if names:
        defaults = DEFAULT_ACTIVATIONS.get(case.op, ())
        per = len(defaults) or 1
        for k, name in enumerate(names):
            if k // per < 2 and defaults and name != defaults[k % per]:
                tokens.add(f"act={name}")
        if any(canonical_activation(n) not in (None, n) for n in names):
            tokens.add("activation_spelling")   # a known function in another spelling (e.g. `relu`)
        if (direction == "bidirectional" and len(names) == 2 * per
                and list(names[:per]) != list(names[per:])):
            tokens.add("per_direction_activations")
    for key in ("activation_alpha", "activation_beta", "clip"):
        if key in a:
            tokens.add(key)
    if a.get("linear_before_reset"):
        tokens.add("linear_before_reset")
    if a.get("input_forget"):
        tokens.add("input_forget")
    if a.get("layout", 0) != 0:
        tokens.add(f"layout={a['layout']}")
    if case.outputs and tuple(case.outputs) != OUTPUTS.get(case.op):
        tokens.add("outputs=" + "+".join(case.outputs))
    tokens |= _framework_tokens(a)
    tokens |= _value_tokens(case)
    if not case.valid:
        tokens |= {f"violates={c}" for c in broken_constraints(case)}
    return frozenset(tokens)


def _framework_tokens(a) -> set[str]:
    """torch.nn's own axes (docs/framework.md): ``num_layers=2``, ``proj_size``, ``dropout``, ``unbatched``."""
    out = set()
    layers = a.get("num_layers", 1)
    if isinstance(layers, int) and layers > 1:
        out.add(f"num_layers={layers}")
    if a.get("proj_size"):
        out.add("proj_size")
    if a.get("dropout"):
        out.add("dropout")
    if a.get("unbatched"):
        out.add("unbatched")
    return out


#: a value beyond this magnitude saturates every gate's activation: the token ``large``
LARGE = 8.0


def _value_tokens(case) -> set[str]:
    out: set[str] = set()
    try:
        tiny = float(finfo(case.dtype).smallest_normal)
    except (KeyError, ValueError, TypeError):
        return out
    for name, arr in case.tensors.items():
        if name == "sequence_lens":
            continue
        v = np.abs(np.asarray(arr, dtype=np.float64))
        if np.any((v > 0) & (v < tiny)):
            out.add("subnormal")
        if np.any(np.isnan(v)):
            out.add("nan")
        if np.any(np.isinf(v)):
            out.add("inf")
        if np.any((v > LARGE) & np.isfinite(v)):
            out.add("large")
    return out


# ---------------------------------------------------------------------------------------------
# The feature table: one row per feature that can be named, removed or cited.
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Feature:
    """One feature: its tokens (with the spec clause each is cited by in a finding), how to tell it
    is present, how to take it away, and the words for "fails whenever ...".

    A token key ending in ``=`` stands for every token with that prefix (``act=``, ``dtype=``); its
    clause is a format with ``{}`` for the values. ``ablation`` is the row's place in the ablation's
    order and ``reduction`` its place in the fuzzer's reduction order (None: not one of them).
    """

    name: str
    tokens: Mapping[str, str | None]
    present: Callable[[Any], bool] | None = None
    remove: Callable[[Any], Any] | None = None
    sentence: Callable[[Any], str] | None = None
    ablation: int | None = None
    reduction: int | None = None


class Removal(Protocol):
    """A :class:`Feature` of :data:`ABLATIONS` or :data:`REDUCTIONS`: one that has its test, its
    removal and its sentence (every such row of the table gives all three)."""

    @property
    def name(self) -> str: ...
    @property
    def present(self) -> Callable[[Any], bool]: ...
    @property
    def remove(self) -> Callable[[Any], Any]: ...
    @property
    def sentence(self) -> Callable[[Any], str]: ...


def _partial(case) -> bool:
    lens = case.tensors.get("sequence_lens")
    return lens is not None and bool(np.any(lens < case.shape["seq_length"]))


def _full_lengths(case) -> bool:
    lens = case.tensors.get("sequence_lens")
    return lens is not None and lens.size > 0 and bool(np.all(lens == case.shape["seq_length"]))


def _non_default_activations(case) -> bool:
    if "activations" not in case.attributes:
        return False
    names = [canonical_activation(a) for a in case.attributes["activations"]]
    return names not in (DEFAULT_ACTIVATIONS[case.op], DEFAULT_ACTIVATIONS[case.op] * 2)


def _nonzero(name: str) -> Callable[[Any], bool]:
    return lambda c: name in c.tensors and bool(np.any(c.tensors[name] != 0))


def _zeros(name: str) -> Callable[[Any], bool]:
    return lambda c: name in c.tensors and not np.any(c.tensors[name] != 0)


FEATURES: tuple[Feature, ...] = (
    Feature("outputs", {"outputs=": None}, lambda c: bool(c.outputs),
            lambda c: edits.replace(c, "all-outputs", outputs=()), lambda c: f"only {'+'.join(c.outputs)} is requested",
            ablation=14, reduction=0),
    Feature("dtype", {"dtype=": "type {}"}, lambda c: c.dtype != "float32", edits.float32,
            lambda c: f"the dtype is {c.dtype}", ablation=13, reduction=1),
    Feature("layout", {"layout=1": "layout", "layout=": None}, lambda c: c.layout == 1,
            lambda c: edits.without_attributes(c, "layout-0", "layout"), lambda c: "layout is 1 (batch-major)",
            ablation=9, reduction=2),
    Feature("bidirectional", {"bidirectional": "direction"}, lambda c: c.direction == "bidirectional",
            lambda c: edits.one_direction(c, "reverse"), lambda c: "bidirectional", ablation=None, reduction=3),
    Feature("direction", {"reverse": "direction"}, lambda c: c.direction != "forward",
            lambda c: edits.one_direction(c, "forward"), lambda c: f"the direction is {c.direction}",
            ablation=4, reduction=4),
    Feature("activations", {"act=": "activations ({})"}, _non_default_activations,
            lambda c: edits.without_attributes(c, "default-activations", "activations", "activation_alpha",
                                               "activation_beta"),
            lambda c: "non-default activations are used", ablation=6, reduction=5),
    Feature("activation_params", {"activation_alpha": "activation_alpha", "activation_beta": "activation_beta"},
            lambda c: "activation_alpha" in c.attributes or "activation_beta" in c.attributes,
            lambda c: edits.without_attributes(c, "no-alpha-beta", "activation_alpha", "activation_beta"),
            lambda c: "activation_alpha/beta are given", ablation=5, reduction=6),
    Feature("activation_spelling", {"activation_spelling": None},
            lambda c: "activations" in c.attributes and
            any(canonical_activation(a) != a for a in c.attributes["activations"]), edits.canonical_names,
            lambda c: "activation names are not in ONNX's spelling", ablation=7, reduction=7),
    Feature("clip", {"clip": "clip"}, lambda c: "clip" in c.attributes,
            lambda c: edits.without_attributes(c, "no-clip", "clip"), lambda c: "clip is set", ablation=0, reduction=8),
    Feature("input_forget", {"input_forget": "input_forget"}, lambda c: c.attributes.get("input_forget", 0) == 1,
            lambda c: edits.without_attributes(c, "no-input_forget", "input_forget"), lambda c: "input_forget is 1",
            ablation=2, reduction=9),
    Feature("linear_before_reset", {"linear_before_reset": "linear_before_reset"},
            lambda c: c.attributes.get("linear_before_reset", 0) != 0,
            lambda c: edits.without_attributes(c, "lbr-0", "linear_before_reset"),
            lambda c: "linear_before_reset is 1", ablation=8, reduction=10),
    Feature("peepholes", {"P": "input P (peepholes)"}, _nonzero("P"),
            lambda c: edits.without_tensors(c, "no-peepholes", "P"), lambda c: "peepholes are non-zero",
            ablation=1, reduction=11),
    Feature("zero_peepholes", {"P": "input P (peepholes)"}, _zeros("P"),
            lambda c: edits.without_tensors(c, "no-P", "P"), lambda c: "P is given (zeros)",
            ablation=None, reduction=12),
    Feature("sequence_lens", {"sequence_lens=partial": "input sequence_lens", "zero_length": None}, _partial,
            lambda c: edits.without_tensors(c, "full-lengths", "sequence_lens"),
            lambda c: "sequence lengths are partial" + (" or 0" if np.any(c.tensors["sequence_lens"] == 0) else ""),
            ablation=3, reduction=13),
    Feature("full_lengths", {"sequence_lens=full": "input sequence_lens"}, _full_lengths,
            lambda c: edits.without_tensors(c, "no-lengths", "sequence_lens"),
            lambda c: "sequence_lens is given (full)", ablation=None, reduction=14),
    Feature("initial_h", {"initial_h": "input initial_h"}, lambda c: "initial_h" in c.tensors,
            lambda c: edits.without_tensors(c, "no-initial_h", "initial_h"), lambda c: "initial_h is given",
            ablation=10, reduction=15),
    Feature("initial_c", {"initial_c": "input initial_c"}, lambda c: "initial_c" in c.tensors,
            lambda c: edits.without_tensors(c, "no-initial_c", "initial_c"), lambda c: "initial_c is given",
            ablation=11, reduction=16),
    Feature("zero_bias", {"B": "input B"}, _zeros("B"), lambda c: edits.without_tensors(c, "no-B", "B"),
            lambda c: "B is given (zeros)", ablation=None, reduction=17),
    Feature("B", {"B": "input B"}, _nonzero("B"), lambda c: edits.without_tensors(c, "no-bias", "B"),
            lambda c: "a bias B is given", ablation=12, reduction=18),
    # torch.nn's own axes (docs/framework.md)
    Feature("num_layers", {"num_layers=": "num_layers {} (stacked layers)"},
            lambda c: c.attributes.get("num_layers", 1) > 1, edits.one_layer,
            lambda c: f"num_layers is {c.attributes.get('num_layers')} (stacked layers)", ablation=15, reduction=19),
    Feature("proj_size", {"proj_size": "proj_size (LSTM projection)"}, lambda c: bool(c.attributes.get("proj_size")),
            edits.without_projection,
            lambda c: f"an LSTM projection is used (proj_size {c.attributes.get('proj_size')})",
            ablation=16, reduction=20),
    Feature("dropout", {"dropout": "dropout (eval mode)"}, lambda c: bool(c.attributes.get("dropout")),
            lambda c: edits.without_attributes(c, "no-dropout", "dropout"), lambda c: "dropout is set (eval mode)",
            ablation=17, reduction=21),
    Feature("unbatched", {"unbatched": "unbatched input"}, lambda c: c.attributes.get("unbatched") == 1,
            lambda c: edits.without_attributes(c, "batched", "unbatched"), lambda c: "the input is unbatched",
            ablation=18, reduction=22),
    # tokens named in findings and expectations, with no removal of their own
    Feature("per_direction_activations", {"per_direction_activations": "activations per direction"},
            ablation=None),
    Feature("cell", {"form=": "one time step (cell)"}, ablation=None),
    Feature("large", {"large": None}, lambda c: "large" in _value_tokens(c), edits.moderate,
            lambda c: "values beyond ±8 are given", ablation=None, reduction=19),
    Feature("values", {"subnormal": None, "nan": None, "inf": None,
                       "direction=": None, "violates=": None}, ablation=None),
)

#: the ablation's removals, in the ablation's order
ABLATIONS = cast("tuple[Removal, ...]", tuple(sorted((f for f in FEATURES if f.ablation is not None),
                                                     key=lambda f: f.ablation or 0)))
#: the ablation's removals on a target in an execution form (conformance/runtimes/forms.py): whether
#: sequence_lens is given at all matters there, since the plan's other inputs draw partial lengths
#: whenever the case has them (conformance/case/variants.py)
FORM_ABLATIONS = ABLATIONS + cast("tuple[Removal, ...]", tuple(f for f in FEATURES if f.name == "full_lengths"))
#: the fuzzer's reduction order: whole-case simplifications first, then attributes, then inputs
REDUCTIONS = cast("tuple[Removal, ...]", tuple(sorted((f for f in FEATURES if f.reduction is not None),
                                                      key=lambda f: f.reduction or 0)))


def clause_of(token: str) -> str | None:
    """The spec clause a finding cites ``token`` by (None: not cited)."""
    for feature in FEATURES:
        for key, clause in feature.tokens.items():
            if key == token or (key.endswith("=") and token.startswith(key)):
                return None if clause is None else clause.format(token[len(key):]) if key.endswith("=") else clause
    return None


def clause_names(case) -> list[str]:
    """The spec clauses of ``case``'s features, for a finding's clause line: its non-default
    activations first (in one clause), then the rest in token order."""
    tokens = features(case)
    acts = sorted(t[4:] for t in tokens if t.startswith("act="))
    names = [clause_of("act=" + ", ".join(acts))] if acts else []
    for token in sorted(t for t in tokens if not t.startswith("act=")):
        name = clause_of(token)
        if name and name not in names:
            names.append(name)
    return [n for n in names if n]
