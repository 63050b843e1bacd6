"""``-k EXPR``: select cases by id, pytest-style: substrings joined with and / or / not, (...).

Each word matches as a substring (``str.__contains__``: linear in the id, no backtracking), and
the expression is evaluated over flat lists of operands, so neither a long chain of ``and`` nor a
long run of ``not`` nests Python calls; parentheses may nest at most :data:`MAX_DEPTH` deep.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\(|\)|[^\s()]+")
MAX_DEPTH = 100  # nesting of parentheses


class SelectError(ValueError):
    pass


def _shown(expr: str) -> str:
    return repr(expr) if len(expr) <= 200 else repr(expr[:200]) + "…"


def compile_expression(expr: str):
    """A predicate over case ids. Each word matches as a case-insensitive substring."""
    tokens = _TOKEN.findall(expr or "")
    if not tokens:
        return lambda _id: True
    pos = 0
    depth = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def parse_or():
        parts = [parse_and()]
        while peek() == "or":
            take()
            parts.append(parse_and())
        if len(parts) == 1:
            return parts[0]
        return lambda s: any(p(s) for p in parts)

    def parse_and():
        parts = [parse_not()]
        while peek() == "and":
            take()
            parts.append(parse_not())
        if len(parts) == 1:
            return parts[0]
        return lambda s: all(p(s) for p in parts)

    def parse_not():
        negations = 0
        while peek() == "not":
            take()
            negations += 1
        inner = parse_atom()
        if negations % 2:
            return lambda s: not inner(s)
        return inner

    def parse_atom():
        nonlocal depth
        tok = peek()
        if tok is None:
            raise SelectError(f"-k {_shown(expr)}: expression ends too early")
        take()
        if tok == "(":
            depth += 1
            if depth > MAX_DEPTH:
                raise SelectError(f"-k {_shown(expr)}: parentheses nest deeper than {MAX_DEPTH}")
            inner = parse_or()
            if peek() != ")":
                raise SelectError(f"-k {_shown(expr)}: missing ')'")
            take()
            depth -= 1
            return inner
        if tok in (")", "and", "or"):
            raise SelectError(f"-k {_shown(expr)}: unexpected {tok!r}")
        word = tok.lower()
        return lambda s: word in s.lower()

    pred = parse_or()
    if pos != len(tokens):
        raise SelectError(f"-k {_shown(expr)}: unexpected {_shown(tokens[pos])}")
    return pred


def closest_ids(expr: str, ids: list[str], n: int = 5) -> tuple[list[str], list[str]]:
    """What an expression that selects none of ``ids`` was probably after: (a note per word: how
    many ids hold it, and for a word no id holds the closest word of the ids in spelling; the ids
    holding the most of its words, or where none holds any, the ids closest in spelling)."""
    import difflib

    words = list(dict.fromkeys(t.lower() for t in _TOKEN.findall(expr or "")
                               if t not in ("and", "or", "not", "(", ")")))
    lowered = {i: i.lower() for i in ids}
    vocabulary = sorted({part for low in lowered.values() for part in re.split(r"[^a-z0-9_.]+", low) if part})
    notes = []
    for w in words:
        k = sum(w in low for low in lowered.values())
        note = f"{w!r} is in {k} id{'s' if k != 1 else ''}" if k else f"{w!r} is in no id"
        near = difflib.get_close_matches(w, vocabulary, n=1, cutoff=0.6) if not k else []
        notes.append(note + (f" (did you mean {near[0]!r}?)" if near else ""))
    scored = sorted(((sum(w in lowered[i] for w in words), i) for i in ids), key=lambda x: (-x[0], x[1]))
    best = [i for score, i in scored[:n] if score > 0]
    if not best:
        close = set(difflib.get_close_matches(str(expr).lower(), list(lowered.values()), n=n, cutoff=0.3))
        best = [i for i in ids if lowered[i] in close][:n]
    return notes, best
