"""The staff console's routes: thin handlers over the services of ``app.console``.

- ``common``: the console's templates, error pages, security headers and form helpers.
- ``auth``: sign-in and sign-out.
- ``inbox``: the conversation list and its live stream.
- ``conversation``: one conversation, its actions and its live stream.
- ``customer``: the customer panel and memory edits.
- ``overview``: the dashboard.
- ``promises``: the promises board and marking a promise kept or broken.
- ``admin``: staff accounts, customer export and erasure.
- ``knowledge``: the Knowledge page (sources, documents, chunks) and supervisors' deletions.
- ``knowledge_import``: supervisors' imports of pasted URLs and uploaded files, and a URL source's re-import.
- ``knowledge_gaps``: the content gaps, grouped, and their dismissal or coverage.
- ``evals``: the saved evaluation runs and their results (supervisors).
- ``canned``: canned replies, the team's and each member's own, and the composer's suggestions.
- ``routing``: each member's availability, and the supervisors' routing page (on or off, capacities, the queue).
- ``settings``: each staff member's notification settings, and what needs them now (``/console/attention``).
- ``playbooks``: the playbooks, their modes and runs, and the editor of their text (supervisors).
"""
