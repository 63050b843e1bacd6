"""Verified standalone bug reports (``conformance bugreport``): what a report is about (``subject``),
its smallest failing case (``smallest``), the pair run as the suite runs it (``pair``), the folder's
files (``files``, ``script`` for repro.py, ``issue`` for ISSUE.md), the check that repro.py
reproduces in a fresh interpreter (``verify``), the folder made and moved into place (``bundle``),
expectations read and drafted (``expectation``); ``cli`` is the command. docs/bugreports.md."""
