"""``-k EXPR``: select cases by id, pytest-style: substrings joined with and / or / not, (...)."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


class SelectError(ValueError):
    pass


def compile_expression(expr: str):
    """A predicate over case ids. Each word matches as a case-insensitive substring."""
    tokens = _TOKEN.findall(expr or "")
    if not tokens:
        return lambda _id: True
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def parse_or():
        left = parse_and()
        while peek() == "or":
            take()
            right = parse_and()
            left = (lambda a, b: lambda s: a(s) or b(s))(left, right)
        return left

    def parse_and():
        left = parse_not()
        while peek() == "and":
            take()
            right = parse_not()
            left = (lambda a, b: lambda s: a(s) and b(s))(left, right)
        return left

    def parse_not():
        if peek() == "not":
            take()
            inner = parse_not()
            return lambda s: not inner(s)
        return parse_atom()

    def parse_atom():
        tok = peek()
        if tok is None:
            raise SelectError(f"-k {expr!r}: expression ends too early")
        take()
        if tok == "(":
            inner = parse_or()
            if peek() != ")":
                raise SelectError(f"-k {expr!r}: missing ')'")
            take()
            return inner
        if tok in (")", "and", "or"):
            raise SelectError(f"-k {expr!r}: unexpected {tok!r}")
        word = tok.lower()
        return lambda s: word in s.lower()

    pred = parse_or()
    if pos != len(tokens):
        raise SelectError(f"-k {expr!r}: unexpected {tokens[pos]!r}")
    return pred
