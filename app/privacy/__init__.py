"""A customer's right to their data: a readable export of everything memdesk holds about them, or its erasure.

- ``erasure``: find a customer, erase them (rows, memories, and the bytes in SQLite's files and logs), then
  forget what the running process holds about them.
- ``document``: the export's shape (``CustomerExport``), in words a customer understands.
- ``export``: builds that document from the rows and memories; staff notes in a section of their own.
- ``printable``: the same document as a printable HTML page.
"""

from app.privacy.document import CustomerExport
from app.privacy.erasure import CustomerNotFoundError, Erasure, erase_customer, find_customer, forget_erased
from app.privacy.export import export_customer
from app.privacy.printable import PRINTABLE_CSP, printable_export

__all__ = [
    "PRINTABLE_CSP",
    "CustomerExport",
    "CustomerNotFoundError",
    "Erasure",
    "erase_customer",
    "export_customer",
    "find_customer",
    "forget_erased",
    "printable_export",
]
