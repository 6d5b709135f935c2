"""What the benchmarks share: servers started and stopped one way, visitors driven one way, figures computed one
way and printed one way. Servers go through the test kit (``tests.support.servers``); the wheel holds neither.

- ``memdesk``: ``memdesk serve`` as a subprocess (its environment, its command, optionally under py-spy), until the
  benchmark's block ends.
- ``scripted_llm``: the scripted OpenAI-compatible server in a process of its own, answering with a rule.
- ``sessions``: concurrent widget sessions over HTTP, each turn timed until the reply's live event.
- ``measure``: the nearest-rank percentile, and the CPU time of processes.
- ``report``: the result as one JSON object (``--json``: on one line).
- ``summarizer``: the compression benchmarks' scripted summary model.
"""
