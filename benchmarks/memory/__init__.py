"""The long-term memory benchmark, ``python -m benchmarks.memory --json``, and the measurements it is built from.

- ``scale``: the benchmark itself (``__main__`` runs its ``main``): each Mem0 vector store memdesk offers, bulk-loaded
  to each size in a process of its own, then recall, remember and memory use, and the verdict against the targets.
- ``data``: the seeded conclusions and questions, and the bulk load in Mem0's own payload layout.
- ``measure``: recall and remember timings on an open ``CustomerMemory``, and the sanity check of what was loaded.
- ``pgvector``: the run's own PostgreSQL with pgvector (pgserver) and the DDL measured on Mem0's table.
- ``shared``: several processes on one embedded store (``python -m benchmarks.memory.shared``), run at the end.
- ``candidates``: the embedded vector stores memdesk could have used, measured on its one query
  (``python -m benchmarks.memory.candidates --json``), each in a process of its own.
"""
