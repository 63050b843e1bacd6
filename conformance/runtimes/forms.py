"""Execution forms: the ways a user's model delivers the op to a runtime, as configuration keys of a
target (one table).

A target's configuration (``Target.config``, its id's part after the device) holds KEY=VALUE items
joined by ``/``. Beside ``precision`` (conformance/runtimes/effective.py), the keys of :data:`FORMS`
say in which form the pair's program reaches the runtime and how it is run:

- ``shape=static|dynamic``: the batch and sequence dimensions written as numbers, or symbolic (ONNX
  ``dim_param``, OpenVINO ``-1``) and the model compiled once, then run at the case's shape and at
  other (sequence, batch) shapes, each judged by the oracle;
- ``weights=constants|inputs``: W, R, B and P stored in the program, or fed as graph inputs;
- ``session=fresh|reused``: a session (compiled model) of its own for the case, or one that has run
  other inputs first; a reused run that differs from a fresh run of the same input is ``state-leak``;
- ``threads=1|4``: one thread, or four intra-op threads with four requests at once on one compiled
  model;
- ``relations=off|on``: the pair also runs the self-consistency relations (conformance/run/relations.py):
  a runtime compared with itself, ``inconsistent`` where one breaks.

A runtime says which forms it takes (its ``forms`` attribute, ``{key: [value, ...]}`` beyond the
defaults; the translators say which program forms each spec can write, ``Spec.forms``). A form the
runtime or the spec cannot take makes the pair ``not-expressible``, with the reason. docs/forms.md.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Form:
    """One configuration key of the execution forms."""

    key: str
    default: str
    other: str            # the value the suite runs besides the default
    program: bool         # the translator writes the program differently (else: how it is run differs)
    loaded: bool          # the worker keeps one loaded (compiled) model across several calls
    meaning: str          # what the other value means, for docs, help and reports
    #: where the default run (``nox -s conformance``) runs it on the representative slice of the cases,
    #: not every case: conformance/run/forms.py ``representative``
    sliced: bool = False
    #: the runtime object itself is built for it (its worker's configuration), where the others are the
    #: suite's business (the program written, the calls made): targets differing only in those share a
    #: worker and its compiled models
    built: bool = False


FORMS: tuple[Form, ...] = (
    Form("shape", "static", "dynamic", True, True,
         "symbolic batch and sequence dimensions; compiled once, run at the case's shape and at two other "
         "(sequence, batch) shapes, each judged by the oracle"),
    Form("weights", "constants", "inputs", True, False,
         "W, R, B and P fed as graph inputs instead of stored in the program"),
    Form("session", "fresh", "reused", False, True,
         "one session runs the case after other inputs at other shapes, in shuffled order; a result that "
         "differs from a fresh run of the same input is state-leak", sliced=True),
    Form("threads", "1", "4", False, True,
         "four intra-op threads, and four requests at once on one compiled model", sliced=True, built=True),
    Form("relations", "off", "on", False, False,
         "the self-consistency relations too (batch slices, truncation, directions, layout, the cell "
         "unrolled): the runtime compared with itself, inconsistent where one breaks", sliced=True),
)
BY_KEY = {f.key: f for f in FORMS}
KEYS = tuple(BY_KEY)

#: the form configurations the suite makes targets of for a runtime that takes them, besides its plain
#: configurations (dynamic shapes are the way sessions are reused in production: at other shapes)
CONFIGURATIONS: tuple[dict[str, str], ...] = (
    {"shape": "dynamic"},
    {"weights": "inputs"},
    {"shape": "dynamic", "session": "reused"},
    {"threads": "4"},
    {"relations": "on"},
)


def pairs(config: str) -> dict[str, str]:
    """KEY=VALUE items of a configuration (``default`` and the measured part after ``→`` left out):
    conformance/runtimes/configuration.py ``TargetConfig.parse``."""
    from conformance.runtimes.configuration import TargetConfig
    return TargetConfig.parse(config).pairs


def of(config: str) -> dict[str, str]:
    """Every form key of a configuration, with its default where the configuration does not set it."""
    given = pairs(config)
    return {f.key: given.get(f.key, f.default) for f in FORMS}


def asked(config: str) -> dict[str, str]:
    """The form keys a configuration sets to something other than their default."""
    return {k: v for k, v in of(config).items() if v != BY_KEY[k].default}


def compose(base: str, forms: dict[str, str]) -> str:
    """A configuration: ``base`` (``default`` or ``precision=pinned``) with the form items after it, in
    the table's order: ``precision=pinned/shape=dynamic/session=reused``."""
    items = [] if base == "default" else [base]
    items += [f"{f.key}={forms[f.key]}" for f in FORMS if forms.get(f.key, f.default) != f.default]
    return "/".join(items) or "default"


def built_config(config: str) -> str:
    """The configuration a runtime object is built with: ``config`` without the form keys that are the
    suite's business (``precision=pinned/shape=dynamic`` -> ``precision=pinned``)."""
    from conformance.runtimes.configuration import TargetConfig
    return TargetConfig.parse(config).without([k for k in BY_KEY if not BY_KEY[k].built]).asked


def base_config(config: str) -> str:
    """``config`` without its form keys: ``precision=pinned/shape=dynamic`` -> ``precision=pinned``."""
    from conformance.runtimes.configuration import TargetConfig
    return TargetConfig.parse(config).without(BY_KEY).asked


def program_form(config: str) -> dict[str, str]:
    """The keys that change the program written (``shape``, ``weights``), non-default ones only."""
    return {k: v for k, v in asked(config).items() if BY_KEY[k].program}


def unsupported(config: str, supported: dict) -> str | None:
    """Why a runtime that takes ``supported`` ({key: [values]} beyond the defaults) cannot run in
    ``config``, or None."""
    for key, value in asked(config).items():
        if key == "relations":
            continue  # relations run programs as any pair does: every runtime takes them
        if value not in [str(v) for v in (supported or {}).get(key, ())]:
            return (f"the runtime does not take {key}={value} ({BY_KEY[key].meaning}); it declares "
                    + (", ".join(f"{k}={'|'.join(map(str, v))}" for k, v in supported.items()) if supported
                       else "no execution form beyond the defaults"))
    return None


def needs_load(config: str) -> bool:
    """Whether the pair's runs share one loaded model (the runtime's ``load``)."""
    return any(BY_KEY[k].loaded for k in asked(config) if k != "relations")


def sliced(config: str) -> bool:
    """Whether the default run runs this configuration on the representative slice only."""
    return any(BY_KEY[k].sliced for k in asked(config))


def describe(config: str) -> str:
    """'shape=dynamic (symbolic batch and ...); ...' for the terminal and the report, or ''."""
    return "; ".join(f"{k}={v} ({BY_KEY[k].meaning})" for k, v in asked(config).items())
