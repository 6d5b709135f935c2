"""Evaluations: simulated customers run through the real app, their conversations checked.

Map of the package (``app`` imports ``memory`` and ``compression``; nothing here is imported by them):

- ``scenario``: scenario files (TOML, checked by a JSON schema) read into ``Scenario``; the default suite in
  ``suite/``.
- ``runner``: ``run_suite``, each scenario in a fresh app and database, its days, idle closes and syncs.
- ``checks``: what a day is checked for (tools called, replies, handoff, memories, budgets).
- ``invented``: the order numbers, tracking numbers, amounts and dates a reply states without a source.
- ``report``: the terminal table, JSON, JUnit XML, and the comparison of two runs.
"""
