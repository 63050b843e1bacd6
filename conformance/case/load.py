"""Case files to canonical cases: parse, check structure, expand the matrix, check meaning, build.

One bad file, or one bad combination of a matrix, yields a :class:`CaseError` with file:line and
loading goes on with the rest.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import jsonschema
import yaml

from conformance.case import validate
from conformance.case.model import Case, CaseError
from conformance.case.schema import SCHEMA
from conformance.case.tensors import DEFAULT_DISTRIBUTION, make_float, make_lengths
from conformance.case.vocabulary import (DEFAULT_ACTIVATIONS, INPUTS, canonical_activation,
                                          input_shapes, num_directions)
from conformance.case.yamlio import LineDict, Where, load_yaml, where_of

SHAPE_KEYS = ("seq_length", "batch_size", "input_size")
TOP_KEYS = ("dtype", "form", "expect", "outputs")
TENSOR_KEYS = tuple(sorted({n for names in INPUTS.values() for n in names}))
ATTRIBUTE_KEYS = tuple(SCHEMA["properties"]["attributes"]["properties"])
MATRIX_KEYS = ATTRIBUTE_KEYS + SHAPE_KEYS + TOP_KEYS + TENSOR_KEYS

_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def discover(paths) -> list[Path]:
    """YAML files under the given files and folders, in a stable order."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml")))
        else:
            files.append(p)
    return files


def load_paths(paths) -> tuple[list[Case], list[CaseError]]:
    cases, errors = [], []
    seen: dict[str, Where] = {}
    for f in discover(paths):
        got, errs = load_file(f)
        errors.extend(errs)
        for case in got:
            if case.id in seen:
                errors.append(CaseError(case.source, "", f"case id {case.id!r} also made by {seen[case.id]}",
                                        "renaming one of the files, or adding a matrix key", case.id))
                continue
            seen[case.id] = case.source
            cases.append(case)
    return cases, errors


def case_prefix(path: Path, op: str) -> str:
    """`cases/gru/linear_before_reset.yaml` -> `gru/linear_before_reset`."""
    parts = path.resolve().with_suffix("").parts
    if "cases" in parts:
        idx = len(parts) - 1 - parts[::-1].index("cases")
        if idx < len(parts) - 1:
            return "/".join(parts[idx + 1:])
    return f"{str(op).lower()}/{path.stem}"


def load_file(path) -> tuple[list[Case], list[CaseError]]:
    path = Path(path)
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [CaseError(Where(name, 1), "", f"cannot read the file: {exc}")]
    try:
        doc = load_yaml(text, name)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc)
        return [], [CaseError(Where(name, line), "", f"YAML syntax error: {problem}",
                              "checking the indentation and quoting on that line")]
    return load_document(doc, path)


def load_document(doc, path: Path) -> tuple[list[Case], list[CaseError]]:
    name = str(path)
    top = Where(name, 1)
    if not isinstance(doc, dict):
        return [], [CaseError(top, "", f"a case file must be a mapping, not {type(doc).__name__}",
                              "starting from the example in README.md")]
    errors = [_schema_error(e, doc, top) for e in
              sorted(_VALIDATOR.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]
    if errors:
        return [], errors
    for key in doc.get("matrix", {}):
        if key not in MATRIX_KEYS:
            errors.append(CaseError(where_of(doc["matrix"], key, top), f"matrix.{key}",
                                    f"{key!r} is not a key a matrix can vary",
                                    f"one of: {', '.join(MATRIX_KEYS)}"))
    if errors:
        return [], errors
    prefix = case_prefix(path, doc["op"])
    cases = []
    for params in expand(doc.get("matrix", {}), doc.get("exclude", [])):
        case_id = prefix + ("[" + ",".join(f"{k}={fmt_param(v)}" for k, v in params.items()) + "]"
                            if params else "")
        variant = apply_params(doc, params)
        problems = validate.check(variant, doc, params, top)
        if problems:
            errors.extend(CaseError(w, k, m, h, case_id) for (w, k, m, h) in problems)
            continue
        try:
            cases.append(build(variant, doc, params, case_id, path))
        except (ValueError, TypeError) as exc:
            errors.append(CaseError(doc.here, "inputs", f"cannot build the input tensors: {exc}",
                                    "checking literal tensors' shapes", case_id))
    return cases, errors


def _schema_error(err: jsonschema.ValidationError, doc, top: Where) -> CaseError:
    node, where, key = doc, getattr(doc, "here", top), ""
    for part in err.absolute_path:
        where = where_of(node, part, where)
        key = f"{key}.{part}" if key else str(part)
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
    msg = err.message
    hint = ""
    if err.validator == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = [k for k in (node if isinstance(node, dict) else {}) if k not in allowed]
        if extra and allowed:
            where = where_of(node, extra[0], where)
            key = f"{key}.{extra[0]}" if key else str(extra[0])
            msg = f"unknown key {extra[0]!r}"
        hint = f"one of the known keys: {', '.join(allowed)}" if allowed else ""
    elif err.validator == "enum":
        hint = f"one of {', '.join(map(repr, err.validator_value))}"
    return CaseError(where, key, msg, hint)


def expand(matrix: dict, exclude: list) -> list[dict]:
    """The cartesian product of the matrix, in key order, less the excluded combinations."""
    keys = list(matrix)
    combos = []
    for values in itertools.product(*(matrix[k] for k in keys)):
        params = dict(zip(keys, values))
        if any(all(params.get(k) == v for k, v in ex.items()) for ex in exclude):
            continue
        combos.append(params)
    return combos or [{}]


def fmt_param(value) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "+".join(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def apply_params(doc: dict, params: dict) -> dict:
    """The document with one matrix combination written in (a plain-dict copy)."""
    out = {k: copy.deepcopy(v) for k, v in doc.items() if k not in ("matrix", "exclude")}
    out["attributes"] = dict(out.get("attributes", {}))
    out["shape"] = dict(out.get("shape", {}))
    out["inputs"] = dict(out.get("inputs", {}))
    for key, value in params.items():
        if key in ATTRIBUTE_KEYS:
            out["attributes"][key] = value
        elif key in SHAPE_KEYS:
            out["shape"][key] = value
        elif key in TENSOR_KEYS:
            out["inputs"][key] = value
        else:
            out[key] = value
    return out


def build(variant: dict, doc, params: dict, case_id: str, path: Path) -> Case:
    op = variant["op"]
    form = variant.get("form", "sequence")
    dtype = variant.get("dtype", "float32")
    expect = variant.get("expect", "valid")
    attributes = {k: variant["attributes"][k] for k in ATTRIBUTE_KEYS if k in variant["attributes"]}
    shape = {"seq_length": variant["shape"].get("seq_length", 1),
             "batch_size": variant["shape"]["batch_size"],
             "input_size": variant["shape"]["input_size"]}
    notes = []
    if expect == "valid":
        attributes.setdefault("direction", "forward")
        if "activations" in attributes:
            names = [canonical_activation(a) or a for a in attributes["activations"]]
            per_dir = len(DEFAULT_ACTIVATIONS[op])
            if attributes["direction"] == "bidirectional" and len(names) == per_dir:
                notes.append(f"activations {names} given once; repeated (with any activation_alpha/beta) "
                             f"for the reverse direction")
                for key in ("activations", "activation_alpha", "activation_beta"):
                    if key in attributes:
                        attributes[key] = list(attributes[key]) * 2
    inputs = variant.get("inputs", {})
    seed = int(inputs.get("seed", 0))
    distribution = inputs.get("distribution", DEFAULT_DISTRIBUTION)
    shapes = input_shapes(op, _int_or(attributes.get("hidden_size"), 1),
                          attributes.get("direction", "forward")
                          if num_directions_ok(attributes.get("direction", "forward")) else "forward",
                          shape)
    tensors = {}
    for name in INPUTS[op]:
        spec = inputs.get(name, "random" if name in ("X", "W", "R") else "absent")
        if name == "sequence_lens":
            arr = make_lengths(spec, shape["batch_size"], shape["seq_length"], seed)
        else:
            arr = make_float(spec, name, shapes[name], dtype, seed, distribution)
        if arr is not None:
            tensors[name] = arr
    clause = variant.get("clause", ())
    clause = (clause,) if isinstance(clause, str) else tuple(clause)
    return Case(
        id=case_id, op=op, form=form, attributes=attributes, shape=shape, dtype=dtype,
        tensors=tensors, expect=expect, clause=clause,
        description=str(variant.get("description", "")).strip(),
        outputs=tuple(variant.get("outputs", ())), violates=str(variant.get("violates", "")),
        source=getattr(doc, "here", Where(str(path), 1)), params=dict(params), notes=tuple(notes),
        tolerance=variant.get("tolerance"),
    )


def num_directions_ok(direction) -> bool:
    return direction in ("forward", "reverse", "bidirectional")


def _int_or(value, default: int) -> int:
    return value if isinstance(value, int) and value > 0 else default


__all__ = ["load_paths", "load_file", "discover", "expand", "LineDict", "num_directions"]
