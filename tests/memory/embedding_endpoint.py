"""An OpenAI-compatible embeddings endpoint for tests that can hang for real.

``POST /v1/embeddings`` answers with memdesk's hashing vectors (the same text gives the same vector in any
process), so Mem0's ``openai`` embedder works against it. While ``hanging`` is set, the endpoint accepts each
connection, reads the whole request and never answers: the connection stays open until the client gives up or the
endpoint stops. Requests already hanging stay hung after ``hanging`` is cleared, as on a real overloaded server, until
``drop_hung_connections`` resets them (a restarted server).

It runs on an asyncio loop in one thread, so hung connections cost no threads in the test process. Lifecycle::

    with EmbeddingEndpoint() as endpoint:   # 127.0.0.1, ephemeral port
        endpoint.hanging = True
        ...  endpoint.base_url, endpoint.answered, endpoint.hung
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from types import TracebackType
from typing import Self

from memory.config import EMBEDDING_DIMS
from memory.embedders import HashingEmbedder

STOP_TIMEOUT_S = 5.0


class EmbeddingEndpoint:
    def __init__(self, dims: int = EMBEDDING_DIMS) -> None:
        self.embedder = HashingEmbedder(dims)
        self.hanging = False
        self.answered = 0
        self.hung = 0
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="embedding-endpoint", daemon=True)
        self._stopping: asyncio.Event | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._hung_writers: set[asyncio.StreamWriter] = set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._ready.wait(STOP_TIMEOUT_S):
            raise RuntimeError("the test embeddings endpoint did not start")
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        self._thread.join(STOP_TIMEOUT_S)

    def drop_hung_connections(self) -> None:
        """Reset every hung connection (a restarted server): clients waiting on them get a connection error."""
        done = threading.Event()

        def drop() -> None:
            for writer in self._hung_writers:
                writer.transport.abort()
            self._hung_writers.clear()
            done.set()

        self._loop.call_soon_threadsafe(drop)
        done.wait(STOP_TIMEOUT_S)

    def _serve(self) -> None:
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stopping.wait()
        handlers = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for writer in self._writers:  # connections kept alive for a next request: their reads end
            writer.transport.abort()
        await asyncio.gather(*handlers, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert self._stopping is not None
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                body = json.loads(await reader.readexactly(length) or b"{}")
                if self.hanging:
                    self.hung += 1
                    self._hung_writers.add(writer)
                    await self._stopping.wait()  # never answers
                    return
                writer.write(self._response(body))
                await writer.drain()
                self.answered += 1
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.close()

    def _response(self, body: dict[str, object]) -> bytes:
        texts = body.get("input")
        inputs = [texts] if isinstance(texts, str) else list(texts) if isinstance(texts, list) else []
        payload = {
            "object": "list",
            "model": body.get("model", "test-embedding"),
            "data": [
                {"object": "embedding", "index": index, "embedding": self.embedder.embed(str(text))}
                for index, text in enumerate(inputs)
            ],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        data = json.dumps(payload).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        return head.encode() + data
