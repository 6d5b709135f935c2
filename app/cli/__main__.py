"""``python -m app.cli``: the same as the ``memdesk`` script."""

import sys

from app.cli.commands import main

sys.exit(main())
