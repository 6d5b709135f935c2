"""The errors ``CustomerMemory`` raises on purpose (``memory.store`` re-exports them).

Exception tree::

    CustomerMemoryError          base
    ├── InvalidCustomerIdError   the customer id is empty, a wildcard, or has characters outside the pattern
    ├── MemoryNotFoundError      no such memory for this customer (also when it belongs to another customer)
    ├── MemoryStoreLockedError   another process owns the embedded Qdrant store (the SQLite store has no owner)
    └── MemoryStoreBusyError     a call in progress (in this process or another) kept the store past the timeout
"""

from __future__ import annotations


class CustomerMemoryError(Exception):
    """Base of the errors ``CustomerMemory`` raises on purpose."""


class InvalidCustomerIdError(CustomerMemoryError, ValueError):
    pass


class MemoryNotFoundError(CustomerMemoryError, LookupError):
    pass


class MemoryStoreLockedError(CustomerMemoryError, RuntimeError):
    pass


class MemoryStoreBusyError(CustomerMemoryError, RuntimeError):
    pass
