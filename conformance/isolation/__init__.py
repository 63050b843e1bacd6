"""Isolation: the worker processes a runtime runs in, and their pool (docs/isolation.md).

``processes`` (process groups, the reaper, memory, throwaway processes), ``serve`` (the worker's
side), ``jobs`` (what travels between the pool and a worker), ``workers`` (the pool), ``plans`` (a
pair's plan of several calls, run in its worker). This package sits below the runtimes: it builds a
runtime from its reference in the worker and never imports an adapter (tests/unit/test_layers.py).
"""
