"""Case files to canonical cases: parse, check structure, expand the matrix, check meaning, build.

One bad file, or one bad combination of a matrix, yields a :class:`CaseError` with file:line and
loading goes on with the rest. Loading is bounded by :class:`~conformance.case.limits.Limits`: the
file (regular files only, its size, YAML nodes and depth) before it is parsed, the matrix before
it is expanded, and each case's tensor elements and multiply-adds before any tensor is built.
``materialize=False`` (``conformance list``) builds no tensor at all, and reports the same errors.
A file that loads without an error is kept in the case cache (:mod:`conformance.case.cache`, keyed by
its bytes), and read back from there while its bytes stay the same.
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

import conformance.case.cache as cache
import conformance.case.validate as validate
from conformance.case import framework
from conformance.case.build import ATTRIBUTE_KEYS, CaseLimitError, build
from conformance.case.limits import DEFAULT_LIMITS, Limits, how_to_raise, shorten_text
from conformance.case.model import Case, CaseError
from conformance.case.schema import SCHEMA, describe_error, did_you_mean, known_keys, show_key
from conformance.case.vocabulary import (
    ALL_INPUT_NAMES,
    num_directions,
)
from conformance.case.yamlio import (
    FileProblem,
    LineDict,
    Where,
    YAMLLimitError,
    decode_utf8,
    describe_yaml_error,
    load_yaml,
    read_bytes,
    where_of,
)

if TYPE_CHECKING:
    import jsonschema

SHAPE_KEYS = ("seq_length", "batch_size", "input_size")
TOP_KEYS = ("dtype", "form", "expect", "outputs")
MATRIX_KEYS = ATTRIBUTE_KEYS + SHAPE_KEYS + TOP_KEYS + ALL_INPUT_NAMES

_KNOWN_KEYS = known_keys(SCHEMA) | set(MATRIX_KEYS)


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    """The case schema's validator, made when a file is first parsed (a run whose files all come
    from the case cache never imports jsonschema)."""
    import jsonschema
    return jsonschema.Draft202012Validator(SCHEMA)


def _identity(path: Path):
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: load_file reports it
        return path.absolute()


#: case tiers: ``default`` (the corpus), and folders kept out of it unless asked for by tier
#: (``--tier``) or by naming the folder: production shapes take minutes (docs/production.md)
TIER_FOLDERS = {"production": "production"}
TIERS = ("default", *TIER_FOLDERS, "all")


def tier_of(parts) -> str:
    """The tier of a path's folders: the first tier folder among them, else ``default``."""
    for name in parts:
        for tier, folder in TIER_FOLDERS.items():
            if name == folder:
                return tier
    return "default"


def discover(paths, tier: str = "default") -> list[Path]:
    """YAML files under the given files and folders, in a stable order, each file once (a file
    named twice, or a folder and a file in it, is loaded once). Under a folder, files in a tier
    folder (``production/``) are found only for that ``tier`` (or ``all``), and the others only
    for ``default`` (or ``all``); a path that names a tier folder, or a file, is always read."""
    if tier not in TIERS:
        raise ValueError(f"tier {tier!r} is not one of {', '.join(TIERS)}")
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            named = tier_of(p.parts)
            for q in sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml")):
                below = tier_of(q.relative_to(p).parts[:-1])
                found = below if below != "default" else named
                if tier == "all" or found == tier or (named != "default" and tier == "default"):
                    files.append(q)
        else:
            files.append(p)
    seen, unique = set(), []
    for f in files:
        key = _identity(f)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def load_paths(paths, limits: Limits = DEFAULT_LIMITS, materialize: bool = True, tier: str = "default"
               ) -> tuple[list[Case], list[CaseError]]:
    """Every case under `paths` (of ``tier``: see discover) and every error, each with file:line.
    With ``materialize=False`` the cases have no tensors (``tensors == {}``; for listing), and
    every error is still found."""
    cases, errors = [], []
    seen: dict[str, Where] = {}
    for f in discover(paths, tier):
        got, errs = load_file(f, limits, materialize)
        errors.extend(errs)
        for case in got:
            assert case.source is not None  # build() sets every loaded case's source
            if case.id in seen:
                shown = _shown_id(case.id, case.params)
                errors.append(CaseError(case.source, "", f"case id {shown!r} also made by {seen[case.id]}",
                                        "renaming one of the files, or adding a matrix key", shown))
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


def load_file(path, limits: Limits = DEFAULT_LIMITS, materialize: bool = True
              ) -> tuple[list[Case], list[CaseError]]:
    """The cases of one file and its errors; from the case cache where these bytes loaded without
    an error before (:mod:`conformance.case.cache`)."""
    path = Path(path)
    try:
        data = read_bytes(path, limits.max_file_bytes)
    except FileProblem as exc:
        return [], [CaseError(Where(str(path), exc.line), "", exc.message)]
    entry = cache.entry(path, data, limits, materialize)
    cached = entry.get() if entry is not None else None
    if cached is not None:
        return cached, []
    cases, errors = _parse(data, path, limits, materialize)
    if entry is not None and not errors:
        entry.put(cases)
    return cases, errors


def _parse(data: bytes, path: Path, limits: Limits, materialize: bool) -> tuple[list[Case], list[CaseError]]:
    name = str(path)
    try:
        text = decode_utf8(data)
    except FileProblem as exc:
        return [], [CaseError(Where(name, exc.line), "", exc.message)]
    try:
        doc = load_yaml(text, name, limits)
    except YAMLLimitError as exc:
        line, problem = describe_yaml_error(exc)
        return [], [CaseError(Where(name, line), "", problem, "a plain document; " + how_to_raise("max_yaml"))]
    except yaml.YAMLError as exc:
        line, problem = describe_yaml_error(exc)
        return [], [CaseError(Where(name, line), "", problem,
                              "checking the indentation and quoting on that line")]
    return load_document(doc, path, limits, materialize)


def load_document(doc, path: Path, limits: Limits = DEFAULT_LIMITS, materialize: bool = True
                  ) -> tuple[list[Case], list[CaseError]]:
    name = str(path)
    top = Where(name, 1)
    if not isinstance(doc, dict):
        return [], [CaseError(top, "", f"a case file must be a mapping, not {type(doc).__name__}",
                              "starting from the example in docs/case-format.md")]
    errors = [_schema_error(e, doc, top) for e in
              sorted(_validator().iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]
    if errors:
        return [], errors
    for key in doc.get("matrix", {}):
        if key not in MATRIX_KEYS:
            shown = show_key(key, _KNOWN_KEYS)
            guess = did_you_mean(key, MATRIX_KEYS)
            errors.append(CaseError(where_of(doc["matrix"], key, top),
                                    f"matrix.{shown}" if shown is not None else "matrix",
                                    (f"{shown!r} is not a key a matrix can vary" if shown is not None
                                     else "an unknown key, which a matrix cannot vary") + guess,
                                    "" if guess else f"one of: {', '.join(MATRIX_KEYS)}"))
    if errors:
        return [], errors
    combinations = math.prod(len(v) for v in doc.get("matrix", {}).values())
    if combinations > limits.max_cases:
        return [], [CaseError(where_of(doc, "matrix", top), "matrix",
                              f"the matrix expands to {combinations:,} combinations (before `exclude`), over "
                              f"the limit of {limits.max_cases:,} cases per file",
                              "splitting the file; " + how_to_raise("max_cases"))]
    prefix = case_prefix(path, doc["op"])
    cases = []
    for params in expand(doc.get("matrix", {}), doc.get("exclude", [])):
        case_id = prefix + ("[" + ",".join(f"{k}={fmt_param(v)}" for k, v in params.items()) + "]"
                            if params else "")
        shown_id = _shown_id(case_id, params)
        variant = apply_params(doc, params)
        wrong = _matrix_value_error(variant, doc, params, top)
        if wrong:  # a matrix value the schema refuses where it lands (clip: absent, a string for a size)
            errors.append(CaseError(*wrong, shown_id))
            continue
        variant, alias_notes, alias_problems = framework.resolve(variant)  # torch's batch_first, bias, packed
        if alias_problems:
            errors.extend(CaseError(where_of(doc.get("matrix", {}), key, top) if key in params else
                                    where_of(doc.get("attributes", {}), key, where_of(doc, "attributes", top)),
                                    f"attributes.{key}", message, hint, shown_id)
                          for key, message, hint in alias_problems)
            continue
        variant["_notes"] = alias_notes
        problems = validate.check(variant, doc, params, top)
        if problems:
            errors.extend(CaseError(w, k, m, h, shown_id) for (w, k, m, h) in problems)
            continue
        try:
            cases.append(build(variant, doc, params, case_id, path, limits, materialize))
        except CaseLimitError as exc:
            errors.append(CaseError(exc.where, exc.key, exc.message, exc.hint, shown_id))
        except (ValueError, TypeError, OverflowError) as exc:
            errors.append(CaseError(getattr(doc, "here", top), "inputs",
                                    f"cannot build the input tensors: {shorten_text(str(exc))}",
                                    "checking literal tensors' shapes", shown_id))
    return cases, once_per_line(errors)


def once_per_line(errors: list[CaseError]) -> list[CaseError]:
    """Each problem once per file:line: the same message at the same place from several of the
    matrix's combinations (a misspelt value in a matrix list) is one error, saying how many."""
    seen: dict = {}
    for e in errors:
        seen.setdefault((e.where, e.key, e.message, e.hint), []).append(e)
    out = []
    for (where, key, message, hint), same in seen.items():
        if len(same) == 1:
            out.append(same[0])
        else:
            head, guess, tail = message.partition("; did you mean")
            out.append(CaseError(where, key, f"{head} (in {len(same)} of the matrix's combinations){guess}{tail}",
                                 hint))
    return out


def _matrix_value_error(variant: dict, doc, params: dict, top: Where) -> tuple[Where, str, str, str] | None:
    """(where, key, message, hint) for the first matrix value the schema refuses once written into
    the case, at the line of its matrix key; None when every value fits."""
    if not params:
        return None
    for err in sorted(_validator().iter_errors(variant), key=lambda e: list(map(str, e.absolute_path))):
        path = [str(p) for p in err.absolute_path]
        key = next((k for k in params if k in path[:2]), None)
        if key is None:
            continue
        where = where_of(doc.get("matrix", {}), key, top)
        _, _, message, hint = describe_error(err, variant, where, _KNOWN_KEYS)
        return where, f"matrix.{key}", message, hint
    return None


def _shown_id(case_id: str, params: dict) -> str:
    """A case id as an error shows it: each matrix value clipped (:func:`_clip_param`)."""
    if not params:
        return case_id
    written = "[" + ",".join(f"{k}={fmt_param(v)}" for k, v in params.items()) + "]"
    prefix = case_id[:-len(written)] if case_id.endswith(written) else case_id.split("[", 1)[0]
    return prefix + "[" + ",".join(f"{k}={_clip_param(fmt_param(v))}" for k, v in params.items()) + "]"


def _clip_param(text: str, limit: int = 60) -> str:
    """A matrix value as an error's case id shows it: a long or odd value only clipped, escaped."""
    if len(text) <= limit and text.isprintable():
        return text
    return repr(text[:limit]) + ("…" if len(text) > limit else "")


def _schema_error(err: jsonschema.ValidationError, doc, top: Where) -> CaseError:
    return CaseError(*describe_error(err, doc, top, _KNOWN_KEYS))


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
        elif key in ALL_INPUT_NAMES:
            out["inputs"][key] = value
        else:
            out[key] = value
    return out


__all__ = ["load_paths", "load_file", "discover", "expand", "CaseLimitError", "Limits", "LineDict",
           "num_directions"]
