"""``python -m benchmarks.memory``: runs ``benchmarks.memory.scale``, the benchmark, and exits with its status."""

import sys

from benchmarks.memory.scale import main

sys.exit(main())
