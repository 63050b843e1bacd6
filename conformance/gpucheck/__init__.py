"""The GPU check: the corpus, a short fuzz campaign and the production tier on every GPU target present,
in the minutes a lent GPU machine is held (docs/gpu.md).

- :mod:`conformance.gpucheck.bundle`: on any machine beforehand, the oracle's results the check needs
  (the corpus, and the production cases that fit a size budget), gzipped into a portable folder that
  travels with the check, so the GPU machine pays no oracle at production shapes;
- :mod:`conformance.gpucheck.stages`: on the GPU machine, the targets found there and the three stages,
  each a ``conformance`` command in a process of its own (the production tier in shards, so its
  judging uses every core), reading the bundle and downloading nothing;
- :mod:`conformance.gpucheck.summary`: what the check found per target, and its exit status.
"""
