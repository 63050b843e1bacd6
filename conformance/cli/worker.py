"""``conformance worker``: join a Dask cluster as a conformance worker (conformance/cluster/worker.py).

Dask is imported only when the command runs, so the other commands start without it.
"""

from __future__ import annotations

import socket

import click

from conformance.cli.options import runtime_plugin_option
from conformance.selection import CONFIG_HELP


@click.command("worker")
@click.option("--scheduler", required=True, metavar="ADDRESS", help="The Dask scheduler to join, e.g. tcp://HOST:8786.")
@click.option("--runtime", "runtimes", multiple=True,
              help="Only targets of this runtime (repeatable): what this worker offers.")
@runtime_plugin_option
@click.option("--spec", "spec_filter", multiple=True, help="Only these spec versions (prefix match, repeatable).")
@click.option("--device", "devices", multiple=True, help="Only targets on this device (repeatable).")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE", help=CONFIG_HELP)
@click.option("--no-entry-points", is_flag=True, help="Ignore runtimes registered as entry points.")
@click.option("--jobs", "-j", default=None, type=click.IntRange(1, 256),
              help="Jobs this worker runs at once, each in its own worker process (default: one per core).")
@click.option("--memory-limit", default=None, metavar="SIZE",
              help="Memory one worker process may hold, e.g. 4GiB; 0 for none (default: half the machine's, shared).")
@click.option("--name", default=None,
              help="This worker's name in the cluster and in the records (default: its address).")
@click.option("--host", "listen_host", default=None, metavar="HOST",
              help="The address to listen on (default: the interface that reaches the scheduler).")
def worker_command(scheduler, runtimes, plugins, spec_filter, devices, configs, no_entry_points, jobs,
                   memory_limit, name, listen_host):
    """Join a Dask cluster as a conformance worker, offering the targets present on this machine.

    The targets are found and measured here first, then advertised as Dask resources, so a pair
    goes only to a worker that has its target; each pair runs in this machine's worker processes
    (a crash or a hang costs one verdict). Runs until the scheduler goes or SIGTERM/Ctrl-C.
    """
    from conformance.cli.options import parse_size
    from conformance.cluster.client import resources_for
    from conformance.cluster.worker import ServicePlugin, serve
    from conformance.isolation.processes import cpu_count
    from conformance.isolation.workers import Pool
    from conformance.run.probe import measured
    from conformance.runtimes.effective import summary
    from conformance.selection import select_targets

    limit = parse_size(memory_limit)
    jobs = jobs or cpu_count()
    targets, skipped, _ = select_targets(spec_filter, plugins, runtimes, devices, not no_entry_points, configs)
    with Pool(jobs, memory_limit=limit) as pool:
        targets = measured(targets, pool)
    resources = resources_for(targets, jobs)
    click.echo(f"conformance worker on {socket.gethostname()}: {jobs} slots, {len(targets)} targets")
    for t in targets:
        click.echo(f"  {t.id}\t{summary(t.configuration)}")
    for s in skipped:
        click.echo(f"  skipped {s.runtime}: {s.reason}", err=True)
    serve(scheduler, ServicePlugin(targets, skipped, jobs, limit), resources, name=name, host=listen_host)

