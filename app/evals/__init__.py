"""Evaluations: simulated customers run through the real app, their conversations checked.

Map of the package (``app`` imports ``memory`` and ``compression``; nothing here is imported by them):

- ``scenario``: scenario files (TOML, checked by a JSON schema) read into ``Scenario``; the default suite in
  ``suite/``.
- ``runner``: ``run_suite``, each scenario in a fresh app and database, its days, idle closes and syncs, and the
  tokens and cost each scenario took.
- ``visit``: the customer at the widget API (lines, bursts) and what a day left in the database.
- ``steps``: what staff do between days (edit or mark a promise, erase the customer), through the console's and the
  privacy tools' own functions.
- ``simulated``: a customer played by a model towards a day's goal (``--customer-model``).
- ``checks``: what a day is checked for (tools called, replies, handoff, memories, budgets, bursts, the judge).
- ``judge``: the summary model's verdict on a day against a rubric, read strictly.
- ``invented``: the order numbers, tracking numbers, amounts and dates a reply states without a source.
- ``report``: the terminal table, JSON, JUnit XML, and the comparison of two runs.
"""
