"""Whose fault: a converter's or the runtime's. The ablation (conformance/run/ablation.py) hands each
converter target's failing groups here; the group's first case is run on the *same runtime* with the
suite's own translation of the case (the ONNX spec of the opset the converter wrote, or OpenVINO's
IR), and:

- where that passes, the converter is the cause, and the sentence says what it wrote, read from its
  kept output beside the suite's program: "through torch.onnx-dynamo-2.13.0(opset=18): the converter
  writes GRU linear_before_reset=0 (the suite writes 1); onnxruntime passes the suite's own translation
  (onnx-14)". What it wrote is a recurrent node's attribute that differs, a sequence or batch
  dimension fixed where the target asked for symbolic ones, an output narrower or wider than the
  case's, a model the checker or the runtime rejects (with its message), or a refusal;
- where the runtime fails the suite's own translation too, the runtime is: "... onnxruntime fails the
  suite's own translation (onnx-14) too (rejected): the runtime's cause";
- where the suite has no translation to compare with (a stack, a projection: no single ONNX node
  says them), the sentence says so and names what the converter wrote where it can.

The suite's translation of a torch-level case drops what does not change its numbers (dropout in
eval mode, unbatched input: a batch of one); ``num_layers`` > 1 and ``proj_size`` have none.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from conformance.results import Record

#: torch-level attributes that leave the numbers alone (eval mode's dropout, one unbatched sequence)
NEUTRAL = ("dropout", "unbatched")
#: the recurrent nodes' attributes whose values change what the node computes
SEMANTIC = ("linear_before_reset", "clip", "input_forget", "activations", "activation_alpha", "activation_beta",
            "layout", "hidden_size")


def suite_spec(target) -> str:
    """The spec of the suite's own translation the converter target's runtime is compared on: the
    ONNX version (7, 14 or 22) whose op the converter's opset holds, or OpenVINO's opset5 IR."""
    from conformance.converters import resolve
    try:
        conv = resolve(dict(target.ref.kwargs).get("converter", target.family))
    except (ImportError, AttributeError, TypeError, KeyError):
        conv = None
    if target.runtime == "openvino":
        return "openvino-opset5"
    if conv is not None and conv.reads == "onnx":
        opts = _options(target)
        return f"onnx-{opts.get('to', opts.get('from', 14))}"
    opset = int(_options(target).get("opset", 14))
    return "onnx-22" if opset >= 22 else "onnx-14" if opset >= 14 else "onnx-7"


def _options(target) -> dict:
    """The options of a converter target (its RuntimeRef's ``options``)."""
    import json
    kwargs = dict(target.ref.kwargs)
    return json.loads(kwargs.get("options", "{}"))


def sibling(target, targets):
    """The same runtime, version and device running the suite's own program of the case: an existing
    target where the run has one, else one made here."""
    from conformance.runtimes.base import RuntimeRef, Target
    from conformance.runtimes.forms import asked, built_config, compose
    spec = suite_spec(target)
    base = "precision=pinned" if target.runtime == "openvino" else "default"
    config = compose(base, asked(target.config))  # in the converter target's form (shape=dynamic)
    for t in targets:
        if (not t.converter and t.runtime == target.runtime and t.version == target.version
                and t.device == target.device and t.spec == spec and t.config == config):
            return t
    built = built_config(config)
    if target.runtime == "openvino":
        from conformance.runtimes.openvino import FORMS_TAKEN
        ref = RuntimeRef("conformance.runtimes.openvino:OpenVINO", (("device", "CPU"), ("config", built)))
        fmt = "openvino-ir"
    else:
        from conformance.runtimes.onnxruntime import FORMS_TAKEN
        ref = RuntimeRef("conformance.runtimes.onnxruntime:OnnxRuntime",
                         (("provider", "CPUExecutionProvider"),) + ((("config", built),) if built != "default" else ()))
        fmt = "onnx"
    return Target(target.runtime, target.version, target.device, config, spec, ref, format=fmt, forms=FORMS_TAKEN)


def suite_view(case):
    """The case as the suite's own ONNX or OpenVINO program can say it: neutral torch attributes
    dropped; None (with why) where a stack or a projection has no single-node form."""
    if case.attributes.get("num_layers", 1) > 1:
        return None, "a stack of layers (num_layers) is no single ONNX or OpenVINO node"
    if case.attributes.get("proj_size"):
        return None, "an LSTM projection (proj_size) is no ONNX or OpenVINO LSTM attribute"
    attrs = {k: v for k, v in case.attributes.items() if k not in NEUTRAL}
    if attrs == case.attributes:
        return case, ""
    return dataclasses.replace(case, attributes=attrs), ""


def siblings(items, target, targets, cases_by_id, records, pool, folder, timeout, deadline, run, label, clean,
             out_dir) -> dict:
    """For a converter target's failing groups: {group key: the sentence to append}, and under ``""``
    the runs spent. ``run``, ``label`` and ``clean`` are the ablation's."""
    if not getattr(target, "converter", ""):
        return {}
    other = sibling(target, targets)
    firsts = {ids[0] for _, ids in items}
    mine = {r.case: r for r in records if r.target == target.id and r.case in firsts}
    theirs = {r.case: label(r) for r in records if r.target == other.id and r.case in firsts}
    views, missing = {}, {}
    for case_id in sorted(firsts):
        view, why = suite_view(cases_by_id[case_id])
        views[case_id] = (view, why)
        if view is not None and case_id not in theirs:
            missing[case_id] = view
    if missing:
        got = run(list(missing.values()), other, pool, folder, timeout, deadline)
        theirs.update({case_id: got.get(view.id) for case_id, view in missing.items()})
    found: dict = {"": len(missing)}
    for key, ids in items:
        record = mine.get(ids[0])
        view, why = views[ids[0]]
        wrote = what_it_wrote(record, cases_by_id[ids[0]], view, target, other.spec, out_dir)
        head = f", through {target.converter}"
        if view is None:
            found[key] = f"{head}: {wrote}; the suite has no {other.spec} translation to compare with ({why})"
        elif theirs.get(ids[0]) in clean:
            found[key] = f"{head}: {wrote}; {target.runtime} passes the suite's own translation ({other.spec})"
        elif theirs.get(ids[0]) is None:
            found[key] = f"{head}: {wrote}; the suite's own translation ({other.spec}) was not run (out of time)"
        else:
            found[key] = (f"{head}; {target.runtime} fails the suite's own translation ({other.spec}) too "
                          f"({theirs[ids[0]]}): the runtime's cause")
    return found


def what_it_wrote(record: Record | None, case, view, target, spec: str, out_dir) -> str:
    """'the converter writes X' (or refuses, with why) for one converter pair, from its record and its
    kept output beside the suite's program of ``view`` in ``spec``."""
    if record is None:
        return "the converter writes a program that computes otherwise (its output was not kept)"
    effective = record.effective or {}
    stage = effective.get("stage", "")
    message = _reason(record.message)
    if record.verdict == "rejected" and stage == "converter":
        return f"the converter refuses it ({message})"
    if stage == "checker":
        return f"the converter writes a model onnx.checker rejects ({message})"
    written = _output_model(record, out_dir)
    if stage == "runtime":
        return f"the converter writes a model {target.runtime} rejects ({message})"
    if written is None:
        return "the converter writes a program that computes otherwise (its output was not kept)"
    said = differences(written, case, view, spec, target)
    if said:
        return "the converter writes " + "; ".join(said)
    from conformance.converters.models import facts
    ops = facts(written)["ops"]
    return (f"the converter writes a program that computes otherwise ({facts(written)['nodes']} nodes: "
            f"{', '.join(ops[:8])}{', ...' if len(ops) > 8 else ''})")


def _reason(message: str) -> str:
    """The refusal's own words, without the suite's prefixes."""
    for marker in ("refused: ", "rejects: ", "wrote: ", "rejected a valid case: "):
        if marker in message:
            message = message.split(marker, 1)[1]
    return message[:240]


def _output_model(record: Record, out_dir):
    """The converter's kept output (an ONNX model's bytes) of a pair, or None."""
    for path in record.artefacts or ():
        if str(path).endswith("output.model.onnx"):
            full = Path(out_dir) / path
            if full.exists():
                return full.read_bytes()
    return None


def differences(written: bytes, case, view, spec: str, target) -> list[str]:
    """What the converter's model says differently from the suite's own program of the case: a
    recurrent node's attribute, a dimension fixed where the target asked for symbolic ones, an
    output of another width."""
    from conformance.converters.models import facts, fixed_dimensions, frozen_reshapes
    from conformance.specs import SPECS, NotExpressible, translate
    mine = facts(written)
    said = []
    if view is not None and spec.startswith("onnx"):
        prog = translate(SPECS[spec], view)
        if not isinstance(prog, NotExpressible):
            theirs = facts(prog.model)
            for op, attrs in theirs["recurrent"]:
                for got_op, got in mine["recurrent"]:
                    if got_op != op:
                        continue
                    for name in SEMANTIC:
                        a, b = got.get(name), attrs.get(name)
                        if name == "linear_before_reset":
                            a, b = a or 0, b or 0
                        if name == "layout":
                            continue  # a converter may transpose around the node instead
                        if a != b and not (name == "hidden_size" and a is None):
                            said.append(f"{op} {name}={_shown(a)} (the suite writes {_shown(b)})")
    for name, dims in mine["outputs"].items():
        expected = _canonical_width(case, name)
        if dims and isinstance(dims[-1], int) and expected and dims[-1] not in (expected, expected * 2):
            said.append(f"output {name!r} {dims[-1]} wide where the case's is {expected}"
                        + (" (the projection dropped)" if case.attributes.get("proj_size") else ""))
    if "shape=dynamic" in target.config:
        fixed = fixed_dimensions(written, case) or frozen_reshapes(written, case)
        if fixed:
            said.append(fixed)
    return list(dict.fromkeys(said))


def _canonical_width(case, name: str) -> int:
    from conformance.case.vocabulary import output_size
    if case is None:
        return 0
    return case.hidden_size if name in ("c_n", "c", "Y_c") else output_size(case.op, case.hidden_size, case.attributes)


def _shown(value) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(str, value)) + "]"
    return "absent" if value is None else str(value)
