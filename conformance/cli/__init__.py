"""The command line: the ``conformance`` command group (``main``, the console script's entry point).

Its commands live in this package, one module each: ``run`` (:mod:`conformance.cli.run`), ``list``
and ``schema`` (:mod:`conformance.cli.listing`), registered with the group; ``report``, ``worker``,
``fuzz``, ``history``, ``export``, ``bugreport`` and ``gpu-check`` (:data:`LAZY_COMMANDS`) are imported when named.
The shared options and exit statuses are :mod:`conformance.cli.options`. The CLI is the top layer:
nothing but ``conformance/__main__.py`` imports it (docs/architecture.md, "Import layers"), and a
command parses its options, builds the library's config object and calls the library.

What a command needs is imported when it runs, and ``run`` finds its targets (in throwaway
processes) while it loads the corpus and imports the engine, so the first verdict comes soon
(docs/startup.md).
"""

from __future__ import annotations

import sys

import click

from conformance import __version__

#: the commands of their own modules, each imported when it is named (``--help`` imports them all)
LAZY_COMMANDS = {"report": "conformance.cli.report:report_command",
                 "worker": "conformance.cli.worker:worker_command",
                 "fuzz": "conformance.cli.fuzz:fuzz_command",
                 "history": "conformance.cli.history:history_command",
                 "export": "conformance.cli.export:export_command",
                 "bugreport": "conformance.cli.bugreport:bugreport_command",
                 "gpu-check": "conformance.cli.gpucheck:gpucheck_command"}


class Commands(click.Group):
    """The command group, with the commands of :data:`LAZY_COMMANDS` imported when named."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS and cmd_name not in self.commands:
            import importlib
            module, attr = LAZY_COMMANDS[cmd_name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="conformance")
def main():
    """Cross-spec conformance suite for RNN, GRU and LSTM (ONNX, OpenVINO, DirectML)."""
    _children_skip_the_script()


def _children_skip_the_script() -> None:
    """Have spawned processes (workers, discovery, the reaper) skip this console script, as they
    do under ``python -m conformance``.

    multiprocessing's spawn runs the parent's ``__main__`` again in every child, by its path when it
    has no module spec, and the ``conformance`` script's first line imports this whole command line
    (0.4 s or more per process, before a worker can even import its runtime). The children run
    functions of :mod:`conformance.run` by name and need nothing of the script, and spawn skips a
    ``__main__`` whose spec names a package's ``__main__`` module: so the script's is set to
    ``conformance.__main__``, the module ``python -m conformance`` runs. Any other ``__main__``
    (a user's script that calls :func:`main`) is left as it is."""
    script = sys.modules.get("__main__")
    if script is None or getattr(script, "__spec__", None) is not None or getattr(script, "main", None) is not main:
        return
    import importlib.util
    script.__spec__ = importlib.util.find_spec("conformance.__main__")


# the commands of this package registered with the group (they import ``main`` from here)
from conformance.cli import listing, run  # noqa: E402, F401
