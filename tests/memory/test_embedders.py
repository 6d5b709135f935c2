"""Local embedders: the offline MiniLM model and the model-free hashing embedder, alone and plugged into Mem0."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib.util import find_spec
from pathlib import Path
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="memdesk-mem0-"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import pytest

from memory.embedders import (
    EMBEDDING_DIMS,
    MODEL_PACKAGE,
    HashingEmbedder,
    MiniLMOnnxEmbedder,
    attach_embedder,
    local_embedder_config,
)

MODEL_MODULES = (MODEL_PACKAGE, "onnxruntime", "onnx", "tokenizers")
MISSING_MODEL_MODULES = [name for name in MODEL_MODULES if find_spec(name) is None]
needs_model = pytest.mark.skipif(
    bool(MISSING_MODEL_MODULES),
    reason=f"local embedding model not installed (missing: {', '.join(MISSING_MODEL_MODULES)})",
)
THREADS = 8
REPO_ROOT = Path(__file__).resolve().parents[2]


def _cosine(left: list[float], right: list[float]) -> float:
    a, b = np.asarray(left), np.asarray(right)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def minilm(model_cache: Path) -> Iterator[MiniLMOnnxEmbedder]:
    embedder = MiniLMOnnxEmbedder(cache_dir=model_cache)
    embedder.load()
    yield embedder


def test_hashing_embedder_returns_384_dim_unit_vectors() -> None:
    embedder = HashingEmbedder()
    for text in ("Refund of $42.10 for order #W2378156", "", "?!", "señora prefers SMS"):
        vector = embedder.embed(text)
        assert len(vector) == EMBEDDING_DIMS
        assert np.linalg.norm(vector) == pytest.approx(1.0)


def test_hashing_embedder_is_deterministic_across_processes() -> None:
    text = "Customer prefers SMS over email"
    script = f"from memory.embedders import HashingEmbedder; print(HashingEmbedder().embed({text!r}))"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    assert HashingEmbedder().embed(text) == HashingEmbedder().embed(text)
    assert outputs == {f"{HashingEmbedder().embed(text)}\n"}


def test_hashing_embedder_scores_shared_words_above_disjoint_text() -> None:
    embedder = HashingEmbedder()
    query = embedder.embed("refund for order W2378156")
    related = embedder.embed("The refund for order W2378156 was approved")
    unrelated = embedder.embed("Customer prefers SMS over email")
    assert _cosine(query, related) > _cosine(query, unrelated)


@needs_model
def test_minilm_loads_offline_and_returns_normalized_384_dim_vectors(model_cache: Path) -> None:
    # A fresh process with every outgoing connection refused: loading and embedding must not need the network.
    script = textwrap.dedent(
        f"""
        import socket
        def refuse(sock, address):
            raise OSError(f"network used: {{address!r}}")
        socket.socket.connect = refuse
        from pathlib import Path
        import numpy as np
        from memory.embedders import MiniLMOnnxEmbedder
        vector = MiniLMOnnxEmbedder(cache_dir=Path({str(model_cache)!r})).embed("Where is my parcel?")
        print(len(vector), round(float(np.linalg.norm(vector)), 4))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(EMBEDDING_DIMS), "1.0"]


@needs_model
def test_minilm_ranks_paraphrase_above_unrelated_sentence(minilm: MiniLMOnnxEmbedder) -> None:
    query = minilm.embed("When will I get my money back?", "search")
    paraphrase = minilm.embed("Refund of $42.10 promised by December 2", "add")
    unrelated = minilm.embed("Customer prefers to be contacted by SMS", "add")
    assert _cosine(query, paraphrase) > _cosine(query, unrelated) + 0.1


@needs_model
def test_minilm_vector_does_not_depend_on_batch(minilm: MiniLMOnnxEmbedder) -> None:
    texts = ["hello", "The blender lid cracked after two weeks of daily use and I want a replacement.", ""]
    batched = minilm.embed_batch(texts)
    for text, vector in zip(texts, batched, strict=True):
        assert vector == pytest.approx(minilm.embed(text), abs=1e-6)
    assert minilm.embed_batch([]) == []


@needs_model
def test_minilm_int8_stays_close_to_float_model(minilm: MiniLMOnnxEmbedder, model_cache: Path) -> None:
    exact = MiniLMOnnxEmbedder(cache_dir=model_cache, quantized=False)
    for text in ("Please text me instead of calling.", "Order #W5512093 was left with the neighbour at number 14."):
        assert _cosine(minilm.embed(text), exact.embed(text)) > 0.98


@needs_model
def test_minilm_reuses_the_cached_model_file(minilm: MiniLMOnnxEmbedder, model_cache: Path) -> None:
    path = minilm.model_path()
    built_at = path.stat().st_mtime_ns
    MiniLMOnnxEmbedder(cache_dir=model_cache).load()
    assert path.stat().st_mtime_ns == built_at
    assert not [leftover for leftover in model_cache.iterdir() if leftover.name.endswith(".tmp")]


@needs_model
def test_minilm_concurrent_first_use_loads_once_and_agrees(minilm: MiniLMOnnxEmbedder, model_cache: Path) -> None:
    texts = [f"Customer {index} asked about order #W{index:07d}" for index in range(THREADS)]
    expected = [minilm.embed(text) for text in texts]
    fresh = MiniLMOnnxEmbedder(cache_dir=model_cache)
    start = threading.Barrier(THREADS)

    def embed_after_barrier(text: str) -> list[float]:
        start.wait()
        return fresh.embed(text)

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        results = list(pool.map(embed_after_barrier, texts))
    assert results == expected


def _memory_config(tmp_path: Path, dims: int = EMBEDDING_DIMS) -> Any:
    from mem0.configs.base import MemoryConfig

    return MemoryConfig(
        embedder=local_embedder_config(),
        vector_store={
            "provider": "qdrant",
            "config": {"path": str(tmp_path / "qdrant"), "collection_name": "test", "embedding_model_dims": dims},
        },
        llm={"provider": "openai", "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"}},
        history_db_path=str(tmp_path / "history.db"),
    )


def test_attached_embedder_is_the_one_mem0_uses(tmp_path: Path) -> None:
    from mem0 import Memory

    memory = Memory(_memory_config(tmp_path))
    embedder = HashingEmbedder()
    attach_embedder(memory, embedder)
    try:
        memory.add("Customer prefers SMS over email", user_id="c1", infer=False)
        memory.add("Refund of $42.10 for order W2378156 approved", user_id="c1", infer=False)
        found = memory.search("refund for order W2378156", filters={"user_id": "c1"}, top_k=1)
        assert found["results"][0]["memory"] == "Refund of $42.10 for order W2378156 approved"
    finally:
        memory.vector_store.client.close()


def test_attach_embedder_refuses_a_vector_store_of_other_dimensions(tmp_path: Path) -> None:
    from mem0 import Memory

    memory = Memory(_memory_config(tmp_path, dims=EMBEDDING_DIMS * 2))
    try:
        with pytest.raises(ValueError, match="embedding_model_dims=384"):
            attach_embedder(memory, HashingEmbedder())
    finally:
        memory.vector_store.client.close()
