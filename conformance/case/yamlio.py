"""YAML loading that remembers where every key and item came from (file:line for error messages).

Loading is bounded (:mod:`conformance.case.limits`): the file's size before it is read (and only
regular files are read: a FIFO named ``x.yaml`` would never end), the document's nodes as it is
composed, each alias counted as the nodes it expands to (a "billion laughs" document is refused
after a million, not expanded), and its nesting depth. Numbers written as people write them load
as numbers: ``1e-4``, ``1E5``, ``-2e+3``, ``.5e-3`` (YAML 1.1, which PyYAML reads, wants a dot
and a signed exponent, and reads them as strings).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

import yaml

from conformance.case.limits import DEFAULT_LIMITS, Limits, shorten, shorten_text


@dataclass(frozen=True)
class Where:
    file: str
    line: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


class LineDict(dict):
    """A mapping that knows the line of each key (``where[key]``) and of itself (``here``)."""

    here: Where
    where: dict


class LineList(list):
    """A sequence that knows the line of each item (``where[i]``) and of itself (``here``)."""

    here: Where
    where: list


class FileProblem(ValueError):
    """A file that cannot be read as text: not a regular file, too large, not UTF-8 (with the line
    of the first bad byte)."""

    def __init__(self, message: str, line: int = 1):
        super().__init__(message)
        self.message = message
        self.line = line


class YAMLLimitError(yaml.MarkedYAMLError):
    """A document over a limit of :class:`~conformance.case.limits.Limits` (``problem`` names it)."""


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path, max_bytes: int | None = None):
    """A regular file opened for reading in binary; raises :class:`FileProblem` for anything else
    (a FIFO, a device, a folder) or for a file over `max_bytes`.

    The file is checked with ``os.stat`` before it is opened, and opened without blocking, so a
    FIFO or a device never hangs the caller."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise FileProblem(f"cannot read the file: {exc.strerror or type(exc).__name__}") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileProblem(f"{_file_kind(st.st_mode)}, not a regular file: skipped")
    if max_bytes is not None and st.st_size > max_bytes:
        raise FileProblem(f"the file has {st.st_size:,} bytes, over the limit of {max_bytes:,} bytes "
                          f"(max_file_bytes)")
    try:
        f = os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb")
    except OSError as exc:
        raise FileProblem(f"cannot read the file: {exc.strerror or type(exc).__name__}") from None
    mode = os.fstat(f.fileno()).st_mode
    if not stat.S_ISREG(mode):  # replaced since the stat
        f.close()
        raise FileProblem(f"{_file_kind(mode)}, not a regular file: skipped")
    return f


def read_bytes(path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes` bytes; raises :class:`FileProblem`."""
    with open_regular(path, max_bytes) as f:
        try:
            data = f.read(max_bytes + 1)
        except OSError as exc:
            raise FileProblem(f"cannot read the file: {exc.strerror or type(exc).__name__}") from None
    if len(data) > max_bytes:
        raise FileProblem(f"the file has more than {max_bytes:,} bytes, the limit (max_file_bytes)")
    return data


def decode_utf8(data: bytes, first_line: int = 1) -> str:
    """`data` as UTF-8 text; :class:`FileProblem` with the line of the first bad byte if it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start
        line = data.count(b"\n", 0, start) + first_line
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise FileProblem(f"not UTF-8 text: byte 0x{data[start]:02x} at line {line}, column {column} "
                          f"({exc.reason})", line) from None


def read_text(path, limits: Limits = DEFAULT_LIMITS) -> str:
    """A regular UTF-8 text file within ``limits.max_file_bytes``; raises :class:`FileProblem`."""
    return decode_utf8(read_bytes(path, limits.max_file_bytes))


#: floats without a dot or with an unsigned exponent, which YAML 1.1 reads as strings
_FLOAT_EXPONENT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$")


class _Loader(yaml.SafeLoader):
    """SafeLoader with line-keeping containers and the limits of :class:`Limits`."""

    def __init__(self, stream, limits: Limits = DEFAULT_LIMITS):
        super().__init__(stream)
        self.limits = limits
        self._nodes = 0            # nodes composed so far, each alias counted as its expansion
        self._heights = [0]        # per open node: the height of its tallest child so far
        self._open_anchors: set = set()
        self._anchored: dict = {}  # anchor -> (nodes, height) of the node it names

    def _over(self, what: str, mark) -> YAMLLimitError:
        return YAMLLimitError(None, None, what, mark)

    def _count(self, nodes: int, mark) -> None:
        self._nodes += nodes
        if self._nodes > self.limits.max_yaml_nodes:
            raise self._over(f"the document expands to more than {self.limits.max_yaml_nodes:,} YAML nodes, "
                             f"the limit (max_yaml_nodes; an alias counts as the nodes it repeats)", mark)

    def compose_node(self, parent, index):
        depth = len(self._heights) - 1   # open nodes above this one
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            anchor = event.anchor
            if anchor in self._open_anchors:
                raise self._over("a recursive alias (a node that contains itself) is not allowed",
                                 event.start_mark)
            if anchor in self._anchored:
                nodes, height = self._anchored[anchor]
                self._count(nodes, event.start_mark)
                if depth + height > self.limits.max_yaml_depth:
                    raise self._over(f"the document nests deeper than {self.limits.max_yaml_depth} levels, "
                                     f"the limit (max_yaml_depth; aliases expanded)", event.start_mark)
                self._heights[-1] = max(self._heights[-1], height)
            return super().compose_node(parent, index)
        event = self.peek_event()
        if depth + 1 > self.limits.max_yaml_depth:
            raise self._over(f"the document nests deeper than {self.limits.max_yaml_depth} levels, the limit "
                             f"(max_yaml_depth)", event.start_mark)
        self._count(1, event.start_mark)
        before, anchor = self._nodes - 1, event.anchor
        if anchor is not None:
            self._open_anchors.add(anchor)
        self._heights.append(0)
        try:
            node = super().compose_node(parent, index)
        finally:
            height = self._heights.pop() + 1
            self._open_anchors.discard(anchor)
        self._heights[-1] = max(self._heights[-1], height)
        if anchor is not None:
            self._anchored[anchor] = (self._nodes - before, height)
        return node


def _mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    out = LineDict()
    out.here = Where(loader.name, node.start_mark.line + 1)
    out.where = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.MarkedYAMLError("while constructing a mapping", node.start_mark,
                                       "found a key that is a list or a mapping", key_node.start_mark) from None
        if key in out:
            raise yaml.MarkedYAMLError(
                "while constructing a mapping", node.start_mark,
                f"found duplicate key {shorten(key)}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
        out.where[key] = Where(loader.name, key_node.start_mark.line + 1)
    return out


def _sequence(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    out = LineList(loader.construct_object(child, deep=True) for child in node.value)
    out.here = Where(loader.name, node.start_mark.line + 1)
    out.where = [Where(loader.name, child.start_mark.line + 1) for child in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_EXPONENT, list("-+0123456789."))


def load_yaml(text: str, name: str, limits: Limits = DEFAULT_LIMITS):
    """Parse one YAML document; mappings become LineDict and sequences LineList.

    Raises :class:`yaml.YAMLError` (with a mark) on a syntax error, and :class:`YAMLLimitError`
    (one) when the document is over a limit of `limits`.
    """
    loader = _Loader(text, limits)
    loader.name = name
    try:
        return loader.get_single_data()
    except RecursionError:  # a limit above the interpreter's own: still a clean error
        raise YAMLLimitError(None, None, "the document nests too deeply for this interpreter", None) from None
    finally:
        loader.dispose()


def describe_yaml_error(exc: yaml.YAMLError) -> tuple[int, str]:
    """(line, message) of a YAML error, without echoing the file (a parser message is shortened)."""
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark else 1
    problem = getattr(exc, "problem", None) or type(exc).__name__
    if isinstance(exc, YAMLLimitError):
        return line, problem
    return line, f"YAML syntax error: {shorten_text(problem)}"


def where_of(node, key, default: Where) -> Where:
    """Line of `key` inside `node` if known, else `default`."""
    table = getattr(node, "where", None)
    if isinstance(table, dict):
        try:
            if key in table:
                return table[key]
        except TypeError:
            pass
    if isinstance(table, list) and isinstance(key, int) and 0 <= key < len(table):
        return table[key]
    return getattr(node, "here", default)
