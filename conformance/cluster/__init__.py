"""The Dask scale-out (docs/cluster.md): ``client`` (``conformance run/fuzz --cluster``: the pool
that sends jobs to a cluster's workers) and ``worker`` (``conformance worker``: a Dask worker that
runs them in this machine's worker processes)."""
