"""YAML loading that remembers where every key and item came from (file:line for error messages)."""

from __future__ import annotations

from dataclasses import dataclass

import yaml


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


class _Loader(yaml.SafeLoader):
    pass


def _mapping(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    out = LineDict()
    out.here = Where(loader.name, node.start_mark.line + 1)
    out.where = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.MarkedYAMLError(
                "while constructing a mapping", node.start_mark,
                f"found duplicate key {key!r}", key_node.start_mark)
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


def load_yaml(text: str, name: str):
    """Parse one YAML document; mappings become LineDict and sequences LineList.

    Raises :class:`yaml.YAMLError` (with a mark) on a syntax error.
    """
    loader = _Loader(text)
    loader.name = name
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def where_of(node, key, default: Where) -> Where:
    """Line of `key` inside `node` if known, else `default`."""
    table = getattr(node, "where", None)
    if isinstance(table, dict) and key in table:
        return table[key]
    if isinstance(table, list) and isinstance(key, int) and 0 <= key < len(table):
        return table[key]
    return getattr(node, "here", default)
