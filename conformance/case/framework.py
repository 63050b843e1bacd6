"""The framework's own spelling of a case: torch.nn's keywords that the case format already has a
concept for, resolved once when a case file is loaded.

torch.nn.RNN/GRU/LSTM take ``batch_first``, ``bias`` and (through ``pack_padded_sequence``) packed
sequences. The case format says each already, in ONNX's words: ``layout: 1`` (X and Y batch-major;
the torch translator keeps h0/h_n [D,B,H], as torch does), an absent ``B`` (zero biases, which is
what ``bias=False`` computes), and ``sequence_lens`` (a torch program packs the input from these
lengths and pads the output back). A case file may use either spelling; the loader writes the case
format's, notes what it did, and refuses a file that says two different things (``batch_first:
true`` with ``layout: 0``). One concept keeps one name in the canonical case, its id, its features
and the oracle (docs/framework.md).

The framework's axes that the format had no concept for (``num_layers``, ``proj_size``,
``dropout``, ``unbatched``) are attributes of the one table (conformance/case/vocabulary.py).
"""

from __future__ import annotations

from typing import Any

#: torch keyword -> (what it means in the case format, in words)
ALIASES: dict[str, str] = {
    "batch_first": "layout: 1 (true) or 0 (false)",
    "bias": "B given (true) or absent (false: zero biases)",
    "packed": "sequence_lens given (true: the input is packed from these lengths) or absent (false)",
}

#: the schema of each alias's value
ALIAS_SCHEMA: dict[str, dict[str, Any]] = {name: {"type": "boolean", "description": meaning}
                                           for name, meaning in ALIASES.items()}


def resolve(variant: dict) -> tuple[dict, list[str], list[tuple[str, str, str]]]:
    """``variant`` (one expanded case document) with its torch keywords written in the case format's
    words: (the new variant, notes, problems as (attribute, message, hint))."""
    attrs = dict(variant.get("attributes") or {})
    given = {k: attrs.pop(k) for k in ALIASES if k in attrs}
    if not given:
        return variant, [], []
    inputs = dict(variant.get("inputs") or {})
    notes: list[str] = []
    problems: list[tuple[str, str, str]] = []
    for key, value in given.items():
        if not isinstance(value, bool):
            problems.append((key, f"{key} must be true or false, got {value!r}", f"{key}: true"))
            continue
        if key == "batch_first":
            layout = 1 if value else 0
            if "layout" in attrs and attrs["layout"] != layout:
                problems.append((key, f"batch_first: {str(value).lower()} says layout {layout}, but layout is "
                                 f"{attrs['layout']!r}", "giving one of the two"))
                continue
            attrs["layout"] = layout
            notes.append(f"batch_first: {str(value).lower()} read as layout: {layout}")
        elif key == "bias":
            spec = inputs.get("B", "absent")
            if not value and spec != "absent":
                problems.append((key, "bias: false means no biases, but inputs.B is given", "removing inputs.B"))
                continue
            if value and spec == "absent":
                inputs["B"] = "random"
            notes.append("bias: false read as B absent (zero biases)" if not value else "bias: true: B given")
        elif key == "packed":
            spec = inputs.get("sequence_lens", "absent")
            if value and spec == "absent":
                problems.append((key, "packed: true packs the input from the case's lengths, but inputs.sequence_lens "
                                 "is absent", "giving inputs.sequence_lens (e.g. [3, 1, 2])"))
                continue
            if not value and spec != "absent":
                problems.append((key, "packed: false means no lengths, but inputs.sequence_lens is given",
                                 "removing inputs.sequence_lens"))
                continue
            notes.append("packed: true read as sequence_lens given (the torch program packs the input from them)"
                         if value else "packed: false read as sequence_lens absent")
    out = dict(variant, attributes=attrs, inputs=inputs)
    return out, notes, problems
