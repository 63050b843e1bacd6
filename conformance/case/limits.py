"""Resource limits on what a case file, an expectations file or a baseline may ask of the suite.

A file is input, and input may be wrong or hostile: ``hidden_size: 1000000`` would make the loader
allocate terabytes, a YAML alias bomb expands to a billion nodes, a FIFO named ``x.yaml`` never
ends. Every limit is checked before the work it bounds (tensor sizes before any tensor is built,
alias expansion as the document is composed, the file size before the file is read), and a file
over a limit costs that file (or that case) with ``file:line`` and the limit named, never the run.

The defaults admit the corpus with a wide margin (its largest case has 660 tensor elements and
8000 multiply-adds, its largest file 6 KiB and 211 YAML nodes) and production shapes: an LSTM,
bidirectional, hidden_size 1024, seq_length 500, batch_size 64, input_size 2048 has ~91 M elements
and ~8e11 multiply-adds. ``conformance run/list --max-elements N --max-macs N`` raise the two that
a real case may reach; all of them are fields of :class:`Limits` for code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    #: elements of one case's input tensors, all together (2**27: 1 GiB in float64)
    max_elements: int = 2 ** 27
    #: multiply-adds of one case: seq_length x batch x directions x gates x hidden x (input + hidden)
    max_macs: int = 10 ** 12
    #: cases one file's matrix may expand to
    max_cases: int = 10_000
    #: bytes of one case or expectations file (and of one baseline line)
    max_file_bytes: int = 16 * 2 ** 20
    #: YAML nodes of one document, every alias counted as the nodes it expands to
    max_yaml_nodes: int = 1_000_000
    #: nesting depth of one YAML document (a literal tensor of rank 3 in a case file is at depth 5)
    max_yaml_depth: int = 64


DEFAULT_LIMITS = Limits()

#: the command-line flag that raises each limit, for messages
FLAGS = {"max_elements": "--max-elements", "max_macs": "--max-macs"}


def how_to_raise(field_name: str) -> str:
    """Where a limit can be raised, for the hint of a message."""
    flag = FLAGS.get(field_name)
    where = f"`{flag} N` (conformance run/list)" if flag else "conformance.case.limits.Limits"
    return f"raise the limit with {where} if the input is meant to be this large"


def shorten(value, limit: int = 60) -> str:
    """``repr`` of a value read from a user's file, at most about `limit` characters: messages
    never echo more of a file than that (a symlink to a secret must not leak it)."""
    if isinstance(value, str):
        return repr(value[:limit]) + ("…" if len(value) > limit else "")
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a value that cannot even be shown
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit] + "…"


def shorten_text(text: str, limit: int = 160, quoted: int = 60) -> str:
    """A message from a library (a YAML or JSON parser) that may quote the file: escaped, each
    quoted part clipped to `quoted` characters, the whole to `limit`."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    text = re.sub(r"(['\"])([^'\"]{" + str(quoted) + r"})[^'\"]+\1", lambda m: f"{m[1]}{m[2]}…{m[1]}", text)
    return text if len(text) <= limit else text[:limit] + "…"


__all__ = ["DEFAULT_LIMITS", "Limits", "shorten", "shorten_text", "how_to_raise"]
