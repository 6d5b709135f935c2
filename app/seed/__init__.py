"""The deterministic demo shop behind ``memdesk seed-demo``.

- ``generator``: builds the shop as plain values from a seeded ``random.Random`` and a fixed base date.
- ``demo``: writes it into the database idempotently (``seed_demo``).
- ``catalog`` and ``help_*``: the fixed ingredients: products, names, places, and help-center articles.
"""

from app.seed.demo import HELP_ARTICLES, SeedReport, seed_demo
from app.seed.generator import (
    CUSTOMER_COUNT,
    DEMO_BASE_DATE,
    DEMO_CUSTOMER_EXTERNAL_ID,
    DEMO_RANDOM_SEED,
    ORDER_COUNT,
    DemoShop,
    generate_demo_shop,
)

__all__ = [
    "CUSTOMER_COUNT",
    "DEMO_BASE_DATE",
    "DEMO_CUSTOMER_EXTERNAL_ID",
    "DEMO_RANDOM_SEED",
    "HELP_ARTICLES",
    "ORDER_COUNT",
    "DemoShop",
    "SeedReport",
    "generate_demo_shop",
    "seed_demo",
]
