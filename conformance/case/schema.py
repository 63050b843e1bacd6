"""The JSON Schema of the case-file format (printed by ``conformance schema``).

The schema checks structure; :mod:`conformance.case.validate` checks meaning (shapes against
hidden_size, activation counts, ...) and reports both with file:line.
"""

import re
from typing import Any

from conformance.case.framework import ALIAS_SCHEMA
from conformance.case.vocabulary import ALL_INPUT_NAMES, ATTRIBUTE_TABLE, DTYPES, FORMS, OPS

_NUMBER_TREE = {"type": ["number", "array"], "items": {"$ref": "#/$defs/number_tree"}}

_DISTRIBUTION = {
    "description": "how random tensors are drawn (then rounded to the case dtype)",
    "type": "object",
    "minProperties": 1, "maxProperties": 1,
    "properties": {
        "uniform": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2,
                    "description": "[low, high]"},
        "normal": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2,
                   "description": "[mean, standard deviation]"},
        "choice": {"type": "array", "items": {"type": "number"}, "minItems": 1,
                   "description": "values drawn uniformly from this list"},
    },
    "additionalProperties": False,
}

_TENSOR = {
    "description": "random | zeros | absent | full (sequence_lens) | a literal nested list in ONNX "
                   "layout 0 | {fill, shape, distribution}",
    "oneOf": [
        {"type": "string", "enum": ["random", "zeros", "absent", "full"]},
        {"$ref": "#/$defs/number_tree", "type": "array"},
        {"type": "object",
         "properties": {
             "fill": {"oneOf": [{"type": "string", "enum": ["random", "zeros"]}, {"type": "number"}]},
             "shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
             "distribution": {"$ref": "#/$defs/distribution"},
         },
         "additionalProperties": False},
    ],
}

_ATTRIBUTES = {
    "type": "object",
    "description": "ONNX attribute names and values; the framework's own (num_layers, proj_size, dropout, "
                   "unbatched; torch's batch_first, bias and packed, read as layout, B and sequence_lens)",
    "properties": {**{a.name: a.schema for a in ATTRIBUTE_TABLE}, **ALIAS_SCHEMA},
    "additionalProperties": False,
}

_TENSOR_NAMES = list(ALL_INPUT_NAMES)

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://github.com/rnn-conformance/rnn-conformance/case.schema.json",
    "title": "RNN/GRU/LSTM conformance case file",
    "type": "object",
    "required": ["op", "attributes", "shape"],
    "properties": {
        "op": {"enum": list(OPS)},
        "form": {"enum": list(FORMS), "default": "sequence"},
        "clause": {"description": "the spec clauses the case exercises",
                   "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "description": {"type": "string"},
        "attributes": _ATTRIBUTES,
        "shape": {
            "type": "object",
            "properties": {k: {"type": "integer", "minimum": 1}
                           for k in ("seq_length", "batch_size", "input_size")},
            "required": ["batch_size", "input_size"],
            "additionalProperties": False,
        },
        "dtype": {"enum": list(DTYPES), "default": "float32"},
        "inputs": {
            "type": "object",
            "properties": {
                "seed": {"type": "integer", "minimum": 0},
                "distribution": {"$ref": "#/$defs/distribution"},
                **{name: {"$ref": "#/$defs/tensor"} for name in _TENSOR_NAMES},
            },
            "additionalProperties": False,
        },
        "outputs": {"type": "array", "items": {"enum": ["Y", "Y_h", "Y_c"]}, "minItems": 1},
        "matrix": {
            "description": "cartesian product: each key (an attribute, a shape key, dtype, form, "
                           "expect or an input name) takes each listed value in turn",
            "type": "object",
            "additionalProperties": {"type": "array", "minItems": 1},
        },
        "exclude": {
            "description": "matrix combinations to drop: each entry drops the combinations that "
                           "match all of its keys",
            "type": "array", "items": {"type": "object"},
        },
        "expect": {"enum": ["valid", "invalid"], "default": "valid"},
        "violates": {"type": "string",
                     "description": "for expect: invalid, the constraint the case breaks"},
        "tolerance": {
            "type": "object",
            "description": "a tolerance override; it must name its source",
            "properties": {"abs": {"type": "number"}, "rel": {"type": "number"},
                           "ulp": {"type": "number"}, "source": {"type": "string"}},
            "required": ["source"],
            "additionalProperties": False,
        },
        "finding": {
            "type": "object",
            "description": "the fuzzer finding this case reproduces (written by `conformance fuzz`; "
                           "informational, it does not change how the case runs)",
            "properties": {
                "target": {"type": "string", "description": "the target id that failed"},
                "targets": {"type": "array", "items": {"type": "string"}},
                "verdict": {"type": "string"},
                "message": {"type": "string"},
                "seed": {"type": ["integer", "string"]},
                "signature": {"type": "string", "description": "what de-duplicates findings"},
                "repro": {"type": "string"},
            },
            "required": ["target", "verdict", "signature"],
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
    "$defs": {
        "number_tree": _NUMBER_TREE,
        "distribution": _DISTRIBUTION,
        "tensor": _TENSOR,
    },
}


# -- messages of schema errors, echoing a file only as far as is safe ------------------------------

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}\Z")


def did_you_mean(word, options) -> str:
    """'; did you mean 'reverse'?' for a misspelt string close to one of ``options`` (difflib), else
    ''. Only a name from ``options`` is shown, so nothing of the file is quoted."""
    import difflib
    if not isinstance(word, str) or not word:
        return ""
    names = [str(o) for o in options]
    near = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    if not near:
        folded = {n.lower(): n for n in names}
        near = [folded[m] for m in difflib.get_close_matches(word.lower(), list(folded), n=1, cutoff=0.6)]
    return f"; did you mean {near[0]!r}?" if near else ""


def known_keys(schema) -> set:
    """Every property name a schema (with its $defs) declares, at any depth."""
    out: set = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                out.update(props)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def show_key(key, known) -> str | None:
    """A key of a user's file as a message may show it: a key the schema knows, or a short word
    (a misspelt key, which the user needs to see); None for anything else (it may be a secret
    from a file that is not a case file at all: say "an unknown key" and give its line)."""
    if isinstance(key, bool) or not isinstance(key, (str, int)):
        return None
    if isinstance(key, int) or key in known or _WORD.match(key):
        return str(key)
    return None


def key_path(parts, known) -> str:
    return ".".join(show_key(p, known) or "<an unknown key>" for p in parts)


def _type_name(value) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _show(value) -> str:
    from conformance.case.limits import shorten
    return "null" if value is None else shorten(value)


def describe_error(err, doc, top, known) -> tuple:
    """(where, key, message, hint) of a jsonschema error in a document loaded by
    :func:`conformance.case.yamlio.load_yaml`: the line of the offending key or item, keys shown
    only per :func:`show_key`, values only clipped (:func:`conformance.case.limits.shorten`)."""
    from conformance.case.limits import shorten
    from conformance.case.yamlio import where_of

    node, where, parts = doc, getattr(doc, "here", top), []
    for part in err.absolute_path:
        where = where_of(node, part, where)
        parts.append(part)
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
    value, kind, wanted = err.instance, err.validator, err.validator_value
    hint = ""
    if kind in ("oneOf", "anyOf") and err.context:
        # the branch that says most: an error further in, else one that is not a type mismatch
        deeper = [e for e in err.context if len(e.absolute_path) > len(err.absolute_path)]
        specific = [e for e in err.context if e.validator != "type"]
        if deeper or specific:
            sub = max(deeper, key=lambda e: len(e.absolute_path)) if deeper else specific[0]
            where_, key_, message_, hint_ = describe_error(sub, doc, top, known)
            return where_, key_, message_, hint_ or str(err.schema.get("description", ""))
        types = []
        for e in err.context:
            types += [e.validator_value] if isinstance(e.validator_value, str) else list(e.validator_value)
        message = (f"{_show(value)} is {_type_name(value)}, not of type "
                   f"{' or '.join(map(repr, dict.fromkeys(types)))}")
        return where, key_path(parts, known), message, str(err.schema.get("description", ""))
    if kind == "additionalProperties" and isinstance(value, dict):
        allowed = sorted(err.schema.get("properties", {}))
        extra = [k for k in value if k not in allowed]
        if extra:
            where = where_of(value, extra[0], where)
            shown = show_key(extra[0], known)
            parts.append(extra[0])
            message = f"unknown key {shown!r}" if shown is not None else "an unknown key"
            guess = did_you_mean(extra[0], allowed)
        else:
            message, guess = "unknown key", ""
        if guess:
            message += guess
        elif allowed:
            hint = f"one of the known keys: {', '.join(allowed)}"
    elif kind == "required":
        message = err.message  # "'op' is a required property": a name from the schema
    elif kind == "type":
        types = [wanted] if isinstance(wanted, str) else list(wanted)
        message = f"{_show(value)} is {_type_name(value)}, not of type {' or '.join(map(repr, types))}"
    elif kind in ("enum", "const"):
        options = wanted if kind == "enum" else [wanted]
        message = f"{_show(value)} is not one of {', '.join(map(repr, options))}{did_you_mean(value, options)}"
    elif kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        message = f"{shorten(value)} is outside the {kind} of {wanted}"
    elif kind in ("minItems", "maxItems"):
        message = f"{len(value)} item(s), but the {kind} is {wanted}"
    elif kind in ("minProperties", "maxProperties"):
        message = f"{len(value)} key(s), but the {kind} is {wanted}"
    elif kind == "pattern" and err.schema.get("description"):   # say what the form is, not the regex
        message = f"{_show(value)} is not in the form this key takes"
        hint = str(err.schema["description"])
    elif kind in ("oneOf", "anyOf"):
        message = f"{shorten(value)} is not valid here"
        hint = str(err.schema.get("description", ""))
    else:
        message = f"{shorten(value)} is not valid ({kind} {shorten(wanted)})"
    return where, key_path(parts, known), message, hint
