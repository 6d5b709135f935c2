"""PostgreSQL for the memory benchmark: a pgvector server of the run's own (pgserver) and the DDL the benchmark
runs on the table Mem0 creates."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from pathlib import Path

from memory.store import CustomerMemory

BYTES_PER_MIB = 1024 * 1024
# Building the HNSW graph of 100k 384-dim vectors in memory instead of spilling to disk.
HNSW_BUILD_MEMORY = "1GB"
HNSW_BUILD_WORKERS = 1  # plus the leader: both cores
DATABASE_NAME = "memdesk_memory_bench"


class PgvectorTable:
    """DDL on the table Mem0's pgvector provider creates (``id``, ``vector``, ``payload`` JSONB), on a connection
    of the benchmark's own."""

    def __init__(self, url: str, table: str) -> None:
        import psycopg
        from psycopg import sql

        self._sql = sql
        self._connection = psycopg.connect(url, autocommit=True)
        self.table = table
        self.vector_index = f"{table}_hnsw_idx"  # Mem0's name and definition (mem0/vector_stores/pgvector.py)
        self.customer_index = f"{table}_user_id_idx"

    def _execute(self, statement: str, *names: str) -> None:
        query = self._sql.SQL(statement).format(*(self._sql.Identifier(name) for name in names))
        self._connection.execute(query)

    def drop_vector_index(self) -> None:
        self._execute("DROP INDEX IF EXISTS {}", self.vector_index)

    def create_vector_index(self) -> float:
        started = time.perf_counter()
        self._connection.execute(f"SET maintenance_work_mem = '{HNSW_BUILD_MEMORY}'")
        self._connection.execute(f"SET max_parallel_maintenance_workers = {HNSW_BUILD_WORKERS}")
        self._execute("CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (vector vector_cosine_ops)",
                      self.vector_index, self.table)  # fmt: skip
        return time.perf_counter() - started

    def vacuum_analyze(self) -> float:
        """What autovacuum does some time after a bulk insert; done now so that it does not run mid-measurement."""
        started = time.perf_counter()
        self._execute("VACUUM (ANALYZE) {}", self.table)
        return time.perf_counter() - started

    def drop_customer_index(self) -> None:
        self._execute("DROP INDEX IF EXISTS {}", self.customer_index)
        self._execute("ANALYZE {}", self.table)

    def create_customer_index(self) -> float:
        started = time.perf_counter()
        self._execute("CREATE INDEX IF NOT EXISTS {} ON {} ((payload->>'user_id'))", self.customer_index, self.table)
        self._execute("ANALYZE {}", self.table)
        return time.perf_counter() - started

    def size_mib(self) -> float:
        row = self._connection.execute("SELECT pg_total_relation_size(%s::regclass)", (self.table,)).fetchone()
        return round(int(row[0]) / BYTES_PER_MIB, 1) if row else 0.0

    def versions(self) -> dict[str, str]:
        server = self._connection.execute("SHOW server_version").fetchone()
        vector = self._connection.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        return {"postgresql": str(server[0]) if server else "?", "pgvector": str(vector[0]) if vector else "?"}

    def close(self) -> None:
        self._connection.close()


class BenchmarkPostgres:
    """A PostgreSQL server with pgvector (pgserver) in a directory of the run, stopped at the end."""

    def __init__(self, root: Path) -> None:
        if not os.environ.get("XDG_RUNTIME_DIR"):  # pgserver keeps its lock file there (read at import)
            runtime = tempfile.mkdtemp(prefix="memdesk-memory-bench-runtime-")
            # pgserver's exit hook takes that lock once more; hooks run last-registered first, so this one runs after.
            atexit.register(shutil.rmtree, runtime, ignore_errors=True)
            os.environ["XDG_RUNTIME_DIR"] = runtime
        from pgserver.postgres_server import get_server

        self._server = get_server(str(root / "pgdata"), cleanup_mode="stop")

    def create_database(self, name: str) -> str:
        self._server.psql(f"CREATE DATABASE {name};")
        socket_dir = self._server.get_uri().split("host=")[-1]
        return f"postgresql://postgres:@/{name}?host={socket_dir}"

    def stop(self) -> None:
        self._server.cleanup()


def close_store(store: CustomerMemory) -> None:
    store.close()
    pool = getattr(store._mem0.vector_store, "connection_pool", None)  # CustomerMemory.close leaves it open
    if pool is not None:
        pool.close()


def reopened(store: CustomerMemory) -> CustomerMemory:
    """The same store on new connections. psycopg prepares a statement it runs often, and PostgreSQL may then keep
    a generic plan for it, made without the indexes created since and unable to use the customer-id index anyway
    (Mem0 binds the JSON key as a parameter): each pgvector variant is measured on connections of its own."""
    close_store(store)
    return CustomerMemory(store.options)
