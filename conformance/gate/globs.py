"""The expectations' globs: `*` and `?` only, matched against a whole id in linear time."""

from __future__ import annotations

import re


class Glob:
    """A glob with `*` and `?` wildcards only (case ids contain `[`, `]` and `=`, which match
    literally), matched against the whole text in linear time: the pattern's literal runs between
    `*`s are found left to right, each at its first occurrence, which never backtracks (a regex
    `.*a.*a.*b` can take exponential time on a long id)."""

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern = pattern
        self.fold = bool(flags & re.IGNORECASE)
        text = pattern.lower() if self.fold else pattern
        pieces = text.split("*")
        self._head, self._tail = pieces[0], pieces[-1]
        self._middle = [p for p in pieces[1:-1] if p]
        self._star = len(pieces) > 1
        # a piece with `?` is found by a regex with no repetition: it cannot backtrack
        self._find = {p: re.compile("".join("." if ch == "?" else re.escape(ch) for ch in p), re.DOTALL)
                      for p in self._middle if "?" in p}

    @staticmethod
    def _fits(piece: str, text: str, at: int) -> bool:
        """`piece` (with `?`) matches text[at:at+len(piece)]."""
        if at < 0 or at + len(piece) > len(text):
            return False
        return all(p == "?" or p == t for p, t in zip(piece, text[at:at + len(piece)]))

    def match(self, text: str) -> bool:
        text = str(text)
        if self.fold:
            text = text.lower()
        if not self._star:
            return len(text) == len(self._head) and self._fits(self._head, text, 0)
        head, tail = self._head, self._tail
        if len(head) + len(tail) > len(text) or not self._fits(head, text, 0):
            return False
        end = len(text) - len(tail)
        if not self._fits(tail, text, end):
            return False
        pos = len(head)
        for piece in self._middle:
            found = (self._find[piece].search(text, pos, end) if piece in self._find else None)
            at = (found.start() if found else -1) if piece in self._find else text.find(piece, pos, end)
            if at < 0:
                return False
            pos = at + len(piece)
        return True

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r}{', IGNORECASE' if self.fold else ''})"


def glob_to_regex(pattern: str, flags: int = 0) -> Glob:
    """The matcher of a glob (`*` and `?` only): an object with ``.match(text)``, like a compiled
    regex's but true only for the whole text, in linear time (:class:`Glob`). ``re.IGNORECASE``
    in `flags` ignores letter case."""
    return Glob(pattern, flags)


def patterns(value) -> list[Glob]:
    values = [value] if isinstance(value, str) else list(value)
    return [glob_to_regex(str(v)) for v in values]
