"""The JSON Schema of the case-file format (printed by ``conformance schema``).

The schema checks structure; :mod:`conformance.case.validate` checks meaning (shapes against
hidden_size, activation counts, ...) and reports both with file:line.
"""

from conformance.case.vocabulary import (ACTIVATION_FUNCTIONS, DIRECTIONS, DTYPES, FORMS, OPS,
                                          INPUTS)

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
    "description": "ONNX attribute names and values",
    "properties": {
        "hidden_size": {"type": ["integer", "string"]},
        "direction": {"type": "string", "examples": list(DIRECTIONS)},
        "activations": {"type": "array", "items": {"type": "string", "examples": list(ACTIVATION_FUNCTIONS)}},
        "activation_alpha": {"type": "array", "items": {"type": "number"}},
        "activation_beta": {"type": "array", "items": {"type": "number"}},
        "clip": {"type": "number"},
        "layout": {"type": "integer"},
        "linear_before_reset": {"type": "integer"},
        "input_forget": {"type": "integer"},
    },
    "additionalProperties": False,
}

_TENSOR_NAMES = sorted({name for names in INPUTS.values() for name in names})

SCHEMA = {
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
