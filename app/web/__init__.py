"""The HTTP edge: every route, the dependencies they take, and what is refused before a route runs.

- ``deps``: FastAPI dependencies as ``Annotated`` aliases; handlers take only these plus path and body parameters.
- ``input``: strict JSON, text and integer validation (a 4xx for any input, never a 5xx).
- ``limits``: request size limits and ``OPTIONS``, an ASGI middleware in front of everything.
- ``errors``: how the API describes its errors in the OpenAPI document, and the one 503 (with ``Retry-After``) for a
  database that is unavailable, on every route.
- ``widget_api``, ``widget_pages``: the customer widget's API and the pages that serve it (and the demo page).
- ``admin_api``: a customer's export and erasure, behind ``MEMDESK_ADMIN_TOKEN``.
- ``ops``: ``/healthz``, ``/readyz``, ``/metrics``, the API docs and the front door.
- ``console``: the staff console's routes (its services are ``app.console``).
"""
