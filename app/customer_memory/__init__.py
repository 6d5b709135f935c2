"""The app's side of long-term memory (the ``memory`` package is the library; this is the glue).

- ``service``: ``MemoryService``, the recall section of every turn and the outbox delivery loop, every Mem0 call on
  a bounded worker pool with timeouts; ``build_memory_service`` makes it from the settings.
- ``outbox``: the conclusions outbox in the application's database (``SqlOutboxRepository``) and
  ``enqueue_key_decisions``, which turns a compaction's key decisions into outbox rows.
- ``options``: ``memory_options``, the memory library's options from the app's settings.
- ``ids``: ``memory_customer_id``, how a customer is named in long-term memory.

Lifecycle: built in the lifespan (slow: it loads the embedder), started with the other background work, closed at
shutdown; a hung Mem0 call is left to its daemon worker (the outbox is durable).
"""
