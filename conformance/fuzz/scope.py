"""What a fuzzing campaign draws from (conformance/fuzz/strategies.py draws it): the ops, forms and
dtypes, the size limits (the production tier's among them), torch.nn's axes and the converters, and
the key of the hypothesis database that names them. Hypothesis is not imported here."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from conformance.case.vocabulary import DTYPES, FORMS, OPS
from conformance.converters import CONVERTERS as CONVERTER_TABLE

#: bump when the draws change meaning: it is part of the hypothesis database key
STRATEGY_VERSION = "4"

#: the converters a drawn case may also run through (besides every plain target), where the campaign has
#: their targets (``Scope.converters``); the examiner runs one on the targets of that converter
#: (``conformance fuzz --converter``: conformance/converters/)
CONVERTERS = tuple(c.name for c in CONVERTER_TABLE)


@dataclass(frozen=True)
class Limits:
    """Sizes stay small so the mpmath oracle stays fast."""

    max_seq_length: int = 6
    max_batch_size: int = 4
    max_input_size: int = 6
    max_hidden_size: int = 6
    #: opt-in: sizes drawn toward production shapes and SIMD/GEMM edges (``production_sizes``);
    #: the oracle then takes its float64 fast path (oracles/fast.py, docs/production.md)
    production: bool = False


#: the production tier's reach (cases/production/): opt in with Scope(limits=PRODUCTION_LIMITS)
PRODUCTION_LIMITS = Limits(max_seq_length=500, max_batch_size=64, max_input_size=1024,
                           max_hidden_size=1024, production=True)


@dataclass(frozen=True)
class Scope:
    """What a campaign draws from."""

    ops: tuple = OPS
    forms: tuple = FORMS
    dtypes: tuple = DTYPES
    limits: Limits = field(default_factory=Limits)
    invalid_weight: int = 1          # invalid cases per `valid_weight` valid ones
    valid_weight: int = 3
    #: draw torch.nn's own axes (num_layers, proj_size, dropout, unbatched): only a target that reads
    #: torch programs runs such a case (the eager torch target, a torch exporter's or convert_model's)
    framework: bool = False
    #: the converters (CONVERTERS) a case may be drawn through, besides none: those the campaign has
    #: targets of
    converters: tuple = ()

    def key(self) -> str:
        return (f"v{STRATEGY_VERSION}:{','.join(self.ops)}:{','.join(self.forms)}:{','.join(self.dtypes)}:"
                f"{self.limits.max_seq_length},{self.limits.max_batch_size},{self.limits.max_input_size},"
                f"{self.limits.max_hidden_size}{':production' if self.limits.production else ''}:"
                f"{self.invalid_weight}/{self.valid_weight}{':framework' if self.framework else ''}"
                f"{':' + ','.join(self.converters) if self.converters else ''}")

    def for_targets(self, targets) -> Scope:
        """This scope with what the campaign's ``targets`` run: torch.nn's axes where one reads torch
        programs (spec ``torch``), and the converters they name."""
        named = {t.family for t in targets if getattr(t, "converter", "")}
        return dataclasses.replace(
            self, framework=self.framework or any(t.spec == "torch" for t in targets),
            converters=self.converters or tuple(c for c in CONVERTERS if c in named))
