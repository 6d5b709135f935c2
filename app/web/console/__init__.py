"""The staff console's routes: thin handlers over the services of ``app.console``.

- ``common``: the console's templates, error pages, security headers and form helpers.
- ``auth``: sign-in and sign-out.
- ``inbox``: the conversation list and its live stream.
- ``conversation``: one conversation, its actions and its live stream.
- ``customer``: the customer panel and memory edits.
- ``overview``: the dashboard.
- ``admin``: staff accounts, customer export and erasure.
"""
