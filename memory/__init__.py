"""Long-term memory for memdesk on Mem0 (see ``memory.store``).

Mem0 reads ``MEM0_TELEMETRY`` when it is first imported and would otherwise call home; some modules of this package
import Mem0's base classes at import time, so telemetry is switched off here, before any of them can.
"""

import os

os.environ["MEM0_TELEMETRY"] = "False"
