"""Verified standalone bug reports (``conformance bugreport``): what a report is about (``subject``),
its smallest failing case (``smallest``), the pair run as the suite runs it (``pair``), the folder's
files (``files``, ``script`` for repro.py, ``issue`` for ISSUE.md), the check that repro.py
reproduces in a fresh interpreter (``verify``), the folder made and moved into place (``bundle``),
expectations read and drafted (``expectation``); what reports are made from (``source``: a run's results,
the subjects asked for) and the session that makes them (``session``: ``BugreportConfig``,
``bugreport_session``); conformance/cli/bugreport.py is the command. docs/bugreports.md."""
