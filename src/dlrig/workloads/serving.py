"""A serving workload: a language model answering many users at once (issue 14).

The model's structure (layers, heads, KV heads, experts) comes from its published config; the
serving settings (weight format, KV-cache precision, prompt and output lengths, users, engine)
are what the user asks about. Frozen; the performance model reads it (dlrig.model.serving).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class WeightFormat(StrEnum):
    """How the weights are stored: 16-bit, 8-bit float, integers with per-group scales, or
    4-bit floats (E2M1) with a scale per block: NVIDIA's NVFP4 (an FP8 scale per 16 values)
    and the Open Compute Project's MXFP4 (a power-of-two scale per 32)."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"
    NVFP4 = "nvfp4"
    MXFP4 = "mxfp4"

    @property
    def is_fp4(self) -> bool:
        return self in (WeightFormat.NVFP4, WeightFormat.MXFP4)


class KVPrecision(StrEnum):
    """The element type of the KV cache."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"


class Engine(StrEnum):
    """A batched server (continuous batching, paged KV cache, tensor parallel across GPUs):
    `batched` is TensorRT-LLM-like (its profile chosen on TensorRT-LLM's rows), `vllm` is vLLM
    and `sglang` SGLang (each on its own rows); or a local runner, `local` (llama.cpp: layers
    split across GPUs, the rest offloaded to the CPU and RAM)."""

    BATCHED = "batched"
    LOCAL = "local"
    VLLM = "vllm"
    SGLANG = "sglang"

    @property
    def display_name(self) -> str:
        """The engine as a sentence names it."""
        return {"batched": "the batched engine", "local": "llama.cpp", "vllm": "vLLM",
                "sglang": "SGLang"}[self.value]  # fmt: skip

    @property
    def is_batched(self) -> bool:
        """A batched server: weights and KV cache split tensor parallel, users batched."""
        return self is not Engine.LOCAL


@dataclass(frozen=True)
class ServeSpec:
    """One serving workload: the model's structure and what is asked of it.

    `total_params` are all weights held in memory; `active_params` those one token reads
    (equal for a dense model, fewer for a mixture of experts). `kv_latent_dim` replaces
    2 x kv_heads x head_dim as the elements cached per token per layer for latent attention
    (DeepSeek's MLA). Lengths are means in tokens.
    """

    total_params: float
    active_params: float
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    tied_embeddings: bool
    experts: int | None
    experts_per_token: int | None
    kv_latent_dim: int | None
    quantization: WeightFormat
    kv_precision: KVPrecision
    prompt_tokens: int
    output_tokens: int
    users: int
    min_tokens_per_s_per_user: float | None
    engine: Engine
    tensor_parallel: int | None = None  # GPUs one copy spans; None: the model chooses
    # Poisson arrivals (issue 36): requests/s at the whole build, and the bounds on the 99th
    # percentile time to first token and time per output token (seconds).
    arrival_rate: float | None = None
    ttft_target_s: float | None = None
    tpot_target_s: float | None = None
    # Leading prompt tokens every request shares (a system prompt): a prefix cache skips them.
    shared_prefix_tokens: int = 0
    # The serving stack's seconds a request beside the GPU's work; None: the model's default.
    request_overhead_s: float | None = None
    # The most requests one engine runs at once (per GPU under attention data parallelism);
    # None: the engine's default.
    max_batch: int | None = None
    # The most tokens one engine iteration computes (prompts' and decodes' together); None: the
    # engine's default.
    max_num_tokens: int | None = None
    # Mixture of experts: attention apart on each of the copy's GPUs, the experts split among
    # them (expert parallel); and the layers that hold experts (None: all).
    attention_data_parallel: bool = False
    expert_layers: int | None = None
    # An offline batch job: this many requests sent at once (dlrig.model.serving_batch).
    requests: int | None = None
    # Chunked local attention (Llama 4): `chunked_attention_layers` of the layers attend only
    # within fixed windows of `attention_chunk_tokens` tokens; the others see the whole context.
    attention_chunk_tokens: int | None = None
    chunked_attention_layers: int = 0

    @property
    def is_moe(self) -> bool:
        """A mixture of experts: a token reads only some of the weights."""
        return bool(self.experts and self.experts_per_token and self.experts > 1)

    @property
    def moe_layers(self) -> int:
        """Layers whose feed-forward is a mixture of experts."""
        return (self.expert_layers or self.layers) if self.is_moe else 0

    @property
    def context_tokens(self) -> int:
        """Tokens a finished conversation holds in the KV cache: prompt plus output."""
        return self.prompt_tokens + self.output_tokens
