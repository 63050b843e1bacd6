"""The JSON Schema of an expectations file (:mod:`conformance.gate.expectations`).

The schema checks structure (which keys, which types, which verdicts); the loader checks what it
cannot say, with its own messages: an entry's kind, reason and the cases it covers, ``features``
items, ``config`` values, ``within``, ``versions`` (a PEP 440 specifier set), and a tolerance override
naming its source.
"""

from conformance.compare.verdicts import VERDICTS

#: an entry's `upstream`: an issue or pull request URL, or the date the trackers were searched in
#: vain; either may be followed by a note
UPSTREAM_PATTERN = r"^(https://\S+/(issues|pull)/\d+|none found \(searched \d{4}-\d{2}-\d{2}\))( .+)?$"

_PATTERNS = {
    "description": "a glob or a list of globs (`*` and `?` only)",
    "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
}
#: every verdict an entry may name (`error`: the suite failed on the pair)
_VERDICT = {"enum": list(VERDICTS)}
#: an entry's (or a file's) `versions`: a PEP 440 specifier set the loader parses
_VERSIONS = {"type": "string", "description": "runtime versions, a PEP 440 specifier set: \">=1.20,<1.29\""}

ENTRY = {
    "type": "object",
    "description": "a known divergence: the cases it covers (cases, features, config), a kind and a reason",
    "properties": {
        "cases": _PATTERNS,
        "targets": _PATTERNS,
        "features": {"type": ["string", "array"],
                     "description": "features the cases have: `P`, `act=Elu`, a list of alternatives, `!name`"},
        "config": {"description": "the effective configuration the pairs ran in: {precision: bf16}"},
        "within": {"type": "string"},
        "versions": _VERSIONS,
        "verdict": {"description": "a verdict or a list of verdicts",
                    "oneOf": [_VERDICT, {"type": "array", "items": _VERDICT, "minItems": 1}]},
        "kind": {"type": "string"},
        "reason": {"type": "string"},
        "link": {"type": "string", "description": "where the divergence is documented or shows (the report links it); "
                                                  "default: the upstream issue"},
        "upstream": {
            "description": "the runtime's upstream issue (its URL, optionally followed by a note), or `none found "
                           "(searched YYYY-MM-DD)` after the trackers were searched; docs/bugreports.md, "
                           "\"`conformance bugreport --expectation`\"",
            "type": "string",
            "pattern": UPSTREAM_PATTERN,
        },
        "tolerance": {"type": "object", "description": "{abs, rel, source}"},
    },
    "additionalProperties": False,
}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "conformance expectations file",
    "type": "object",
    "required": ["entries"],
    "properties": {
        "targets": _PATTERNS,
        "versions": _VERSIONS,
        "entries": {"type": ["array", "null"], "items": ENTRY},
        "unspecified": {
            "type": "object",
            "description": "what the unspecified elements' sub-verdicts do to these targets' pairs "
                           "(conformance/compare/silent.py): fail, or only report",
            "properties": {"garbage": {"enum": ["fail", "report"]}, "implausible": {"enum": ["fail", "report"]}},
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}


class ExpectationsError(ValueError):
    """A malformed expectations file; the message has file:line."""
