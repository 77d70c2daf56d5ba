"""The workload file as written by a user (YAML or TOML), validated with pydantic (design.md).

`model` is a zoo name or an inline block; the inline block's keys are those that
`dlrig.torch.describe` returns (`params`, `param_bytes`, `forward_flops_per_sample`,
`activation_bytes_per_sample`) plus optional facts the model uses when known. Unknown keys are
errors, everywhere.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from dlrig.enums import Optimizer, Parallelism, Precision, PreprocessingStrategy
from dlrig.workloads.model import (
    FinetuneMethod,
    KernelLibrary,
    LoraTarget,
    Mode,
    OptimizerStep,
    WorkloadKind,
)
from dlrig.workloads.serving import Engine, KVPrecision, WeightFormat

# Every number is finite and bounded far beyond any real job (a 405B-parameter model, 15T
# tokens, a 1M-token context), so that `.inf` or `1e308` is an error naming the field instead of
# an overflow in the model.
PositiveInt = Annotated[int, Field(gt=0, le=10**12)]
# Counts of whole things (parameters, FLOPs, bytes): at least one when given.
Amount = Annotated[float, Field(ge=1, le=1e21)]
Milliseconds = Annotated[float, Field(ge=0, le=1e6, description="ms")]
SmallCount = Annotated[int, Field(ge=0, le=1024)]
MAX_BATCH_SIZE = 1_000_000_000  # recommenders batch millions of tiny samples (NCF: 10.8M)
MAX_SEQ_LEN = 10_000_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ModelBlock(_Strict):
    """The model's size and cost; FLOPs per sample or per token (then `seq_len` is needed)."""

    params: Annotated[float, Field(ge=1, le=1e15)]
    param_bytes: Amount | None = None
    forward_flops_per_sample: Amount | None = None
    forward_flops_per_token: Amount | None = None
    activation_bytes_per_sample: Annotated[float, Field(ge=0, le=1e15)] | None = Field(
        default=None, description="bytes saved for backward per sample: 0, or at least 1"
    )
    kind: WorkloadKind = WorkloadKind.OTHER
    seq_len: Annotated[int, Field(gt=0, le=MAX_SEQ_LEN)] | None = None
    hidden_size: Annotated[int, Field(gt=0, le=10**7)] | None = None
    num_layers: Annotated[int, Field(gt=0, le=10**6)] | None = None
    kv_bytes_per_token: Annotated[float, Field(gt=0, le=1e12)] | None = Field(
        default=None, description="16-bit KV-cache bytes per token of context (inference)"
    )
    num_heads: Annotated[int, Field(gt=0, le=10**4)] | None = Field(
        default=None, description="attention heads per layer (transformers)"
    )
    kv_heads: Annotated[int, Field(gt=0, le=10**4)] | None = Field(
        default=None, description="key/value heads per layer (grouped-query attention)"
    )
    ffn_hidden_size: Annotated[int, Field(gt=0, le=10**7)] | None = Field(
        default=None, description="inner width of the feed-forward block (transformers)"
    )
    vocab_size: Annotated[int, Field(gt=0, le=10**8)] | None = None
    experts: Annotated[int, Field(gt=0, le=10**5)] | None = Field(
        default=None, description="feed-forward experts per layer (mixture of experts)"
    )
    experts_per_token: Annotated[int, Field(gt=0, le=10**5)] | None = None
    attention: Literal["eager", "eager_strided", "flash", "cudnn"] = Field(
        default="eager",
        description="attention kernel: eager keeps the score matrices for backward (and copies "
        "Q, K and V into head-major tensors first, as transformers' and older NVIDIA Deep "
        "Learning Examples' code does; eager_strided reads them in place as strided batched "
        "matmuls, as DLE's BERT has since 2022-03), flash "
        "(FlashAttention-2, PyTorch SDPA) recomputes them, cudnn (cuDNN / Transformer Engine "
        "fused attention as NeMo and Megatron run it, or FlashAttention-3) does too with the "
        "warpgroup MMA of Hopper and data-centre Blackwell",
    )
    gated_mlp: bool = Field(
        default=False, description="gated feed-forward (SwiGLU, GeGLU): three matrices, not two"
    )
    hidden_act: Literal["gelu", "gelu_new", "gelu_pytorch_tanh", "quick_gelu", "relu", "silu"] = (
        Field(
            default="gelu",
            description="the MLP's activation as the published config names it (transformers' "
            "ACT2FN): gelu_new (GPT-2's NewGELUActivation) and quick_gelu are written as "
            "element-wise ops, 8 and 3 kernels in eager PyTorch; the others are one kernel",
        )
    )
    dropout: bool = Field(default=True, description="dropout layers train (their masks are kept)")
    tied_embeddings: bool = Field(
        default=False, description="the output projection shares the input embedding matrix"
    )
    memory_len: Annotated[int, Field(gt=0, le=MAX_SEQ_LEN)] | None = Field(
        default=None,
        description="tokens of cached earlier segments each query also attends to (Transformer-XL)",
    )
    encoder_layers: Annotated[int, Field(gt=0, le=10**6)] | None = Field(
        default=None,
        description="encoder layers of an encoder-decoder model (Whisper); num_layers and "
        "seq_len are then the decoder's",
    )
    encoder_seq_len: Annotated[int, Field(gt=0, le=MAX_SEQ_LEN)] | None = Field(
        default=None, description="positions the encoder runs over (Whisper: 1500 frames)"
    )

    @model_validator(mode="after")
    def _flops_given(self) -> ModelBlock:
        if self.forward_flops_per_sample is None and self.forward_flops_per_token is None:
            raise ValueError("give 'forward_flops_per_sample' or 'forward_flops_per_token'")
        if self.forward_flops_per_sample is not None and self.forward_flops_per_token is not None:
            raise ValueError(
                "give 'forward_flops_per_sample' or 'forward_flops_per_token', not both"
            )
        if (
            self.activation_bytes_per_sample is not None
            and 0 < self.activation_bytes_per_sample < 1
        ):
            raise ValueError("'activation_bytes_per_sample' is 0 or at least 1 byte")
        if (self.experts is None) != (self.experts_per_token is None):
            raise ValueError("give 'experts' and 'experts_per_token' together")
        if self.experts and self.experts_per_token and self.experts_per_token > self.experts:
            raise ValueError("'experts_per_token' is at most 'experts'")
        if self.num_heads and self.kv_heads and self.kv_heads > self.num_heads:
            raise ValueError("'kv_heads' is at most 'num_heads'")
        if self.num_heads and self.kv_heads and self.num_heads % self.kv_heads:
            raise ValueError("'num_heads' is a multiple of 'kv_heads' (query heads per group)")
        if self.hidden_size and self.num_heads and self.hidden_size % self.num_heads:
            raise ValueError("'hidden_size' is a multiple of 'num_heads' (the head width)")
        if (self.encoder_layers is None) != (self.encoder_seq_len is None):
            raise ValueError("give 'encoder_layers' and 'encoder_seq_len' together")
        return self


# One sample of 1 TB is past any dataset (a 4K video clip is ~GBs).
MAX_INPUT_BYTES = 1e12

DType = Literal["float32", "float16", "bfloat16", "uint8", "int8", "int32", "int64", "uint16"]

DTYPE_BYTES: dict[str, int] = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "uint8": 1,
    "int8": 1,
    "int32": 4,
    "int64": 8,
    "uint16": 2,
}


class InputBlock(_Strict):
    """One sample as it crosses PCIe: a tensor shape (or several) and its element type."""

    shape: list[Annotated[int, Field(gt=0, le=10**9)]] = Field(min_length=1, max_length=8)
    dtype: DType = "float32"
    tensors: Annotated[int, Field(gt=0, le=1024)] = Field(
        default=1, description="how many tensors of this shape"
    )

    @model_validator(mode="after")
    def _sane_size(self) -> InputBlock:
        elements = 1
        for dim in self.shape:
            elements *= dim
        if elements * DTYPE_BYTES[self.dtype] * self.tensors > MAX_INPUT_BYTES:
            raise ValueError(f"one sample is larger than {MAX_INPUT_BYTES:.0e} bytes")
        return self


class DatasetBlock(_Strict):
    samples: Annotated[int, Field(gt=0, le=10**13)]
    bytes_per_sample: Annotated[float, Field(ge=1, le=MAX_INPUT_BYTES)]
    files: Annotated[int, Field(gt=0, le=10**13)] | None = Field(
        default=None,
        description="the files the samples are stored in: one a sample (an ImageNet folder of "
        "JPEGs) is read a file at a time in random order, each costing the drive a random "
        "access; a few large shards or one tokenized array read sequentially (absent: read "
        "sequentially)",
    )


class PreprocessingBlock(_Strict):
    """CPU.1: `cpu_ms_per_sample` is the online cost (decode, augment) on one core;
    `offline_cpu_ms_per_sample` the cost of loading an already-preprocessed sample."""

    strategy: PreprocessingStrategy = PreprocessingStrategy.ONLINE
    cpu_ms_per_sample: Milliseconds | None = None
    offline_cpu_ms_per_sample: Milliseconds | None = None


class LoaderBlock(_Strict):
    """The data loader: background workers, pinned host memory and batches loaded ahead."""

    workers: SmallCount = 4
    pin_memory: bool = True
    prefetch: SmallCount = 2


class ParallelBlock(_Strict):
    """How the job splits over its GPUs beyond plain data parallelism: ZeRO/FSDP sharding
    stage, tensor, pipeline and sequence parallelism, and optimizer-state offload to the CPU.
    Data-parallel degree is what is left: GPUs / (tensor x pipeline)."""

    strategy: Parallelism = Parallelism.DDP
    zero_stage: Annotated[int, Field(ge=0, le=3)] | None = Field(
        default=None,
        description="0 none, 1 optimizer state, 2 + gradients, 3 + weights sharded "
        "(default: 3 under fsdp, 0 otherwise)",
    )
    tensor: Annotated[int, Field(ge=1, le=1024)] = Field(
        default=1, description="tensor-parallel degree (GPUs splitting each layer)"
    )
    pipeline: Annotated[int, Field(ge=1, le=1024)] = Field(
        default=1, description="pipeline-parallel degree (stages of consecutive layers)"
    )
    sequence: bool = Field(
        default=False, description="sequence parallelism beside tensor parallelism"
    )
    context: Annotated[int, Field(ge=1, le=1024)] = Field(
        default=1,
        description="context-parallel degree (GPUs splitting each sequence, ring attention)",
    )
    expert: Annotated[int, Field(ge=1, le=1024)] = Field(
        default=1,
        description="expert-parallel degree (GPUs splitting each layer's experts, mixture of "
        "experts)",
    )
    micro_batches: Annotated[int, Field(ge=1, le=10**6)] | None = Field(
        default=None, description="pipeline micro-batches per step (default: 4 x pipeline)"
    )
    cpu_offload: bool = Field(default=False, description="optimizer state kept in host RAM")

    @model_validator(mode="after")
    def _consistent(self) -> ParallelBlock:
        if self.sequence and self.tensor == 1:
            raise ValueError("'sequence' parallelism needs 'tensor' of 2 or more")
        if self.strategy is Parallelism.HOST_PS and (
            self.tensor > 1 or self.pipeline > 1 or self.context > 1 or self.expert > 1
        ):
            raise ValueError(
                "'host-ps' keeps whole replicas: 'tensor', 'pipeline', 'context' and 'expert' are 1"
            )
        return self


def _parallel_form(value: Any) -> str:
    """`parallel: fsdp` names a strategy, `parallel: {...}` is the block: each form reports its
    own error (not "should be 'ddp', 'fsdp' or 'host-ps'" for a block's bad key)."""
    return "block" if isinstance(value, dict | ParallelBlock) else "by-name"


class FinetuneBlock(_Strict):
    method: FinetuneMethod = FinetuneMethod.FULL
    trainable_fraction: Annotated[float, Field(gt=0, le=1)] | None = None
    # fp32: peft's default (get_peft_model's autocast_adapter_dtype=True upcasts bf16/fp16
    # adapters); 16bit: the training precision, as torchtune's LoRALinear and NeMo keep them.
    adapter_precision: Literal["fp32", "16bit"] | None = None
    autocast: bool = Field(
        default=True,
        description="fp32 adapters only: the step runs under torch.autocast, as Hugging Face's "
        "Trainer, TRL and accelerate run a bf16/fp16 job, so the adapters multiply in 16 bits "
        "and only their input is cast to fp32 and back; false: a 16-bit model stepped without "
        "autocast, whose fp32 adapters multiply, scale and add in fp32",
    )
    adapter_dropout: Annotated[float, Field(ge=0, lt=1)] = Field(
        default=0.0,
        description="LoRA dropout on each adapter's input (peft's lora_dropout, default 0: "
        "no kernel); above 0 each adapted linear writes a dropped copy of its input and a mask",
    )
    target_modules: list[LoraTarget] | None = Field(
        default=None,
        description="lora/qlora only: the projections the adapters sit on, among q, k, v, o, "
        "gate, up, down (peft's target_modules by their Llama names; default: all seven, "
        "peft's 'all-linear'); each adapted projection's adapter reads its input and writes "
        "into its output",
    )
    base_format: Literal["nf4", "torchao-nf4", "gptq", "awq"] | None = Field(
        default=None,
        description="qlora only: the frozen base's 4-bit format, nf4 (bitsandbytes, the "
        "default), torchao-nf4 (torchao's NF4Tensor, as torchtune quantizes) or a GPTQ or AWQ "
        "checkpoint (int4, a 16-bit scale and a 4-bit zero point per "
        "group of `group_size` input channels)",
    )
    group_size: Annotated[int, Field(ge=16, le=65536)] | None = Field(
        default=None, description="gptq/awq only: input channels per scale (default 128)"
    )

    @model_validator(mode="after")
    def _base_format_needs_qlora(self) -> FinetuneBlock:
        if self.base_format is not None and self.method is not FinetuneMethod.QLORA:
            raise ValueError("'base_format' is the 4-bit base of method 'qlora' only")
        if self.group_size is not None and self.base_format not in ("gptq", "awq"):
            raise ValueError("'group_size' is for base_format 'gptq' or 'awq' only")
        if not self.autocast and (
            self.method is FinetuneMethod.FULL or self.adapter_precision == "16bit"
        ):
            raise ValueError("'autocast: false' changes only fp32 LoRA adapters")
        if self.adapter_dropout > 0 and self.method is FinetuneMethod.FULL:
            raise ValueError("'adapter_dropout' is for method 'lora' or 'qlora' only")
        if self.target_modules is not None:
            if self.method is FinetuneMethod.FULL:
                raise ValueError("'target_modules' is for method 'lora' or 'qlora' only")
            if not self.target_modules:
                raise ValueError("'target_modules' names at least one projection")
        return self


class ServeBlock(_Strict):
    """Serving a language model (issue 14): its structure from the published config, and the
    weight format, KV-cache precision, mean prompt and output lengths, users and engine."""

    layers: Annotated[int, Field(gt=0, le=10**4)]
    hidden_size: Annotated[int, Field(gt=0, le=10**6)]
    heads: Annotated[int, Field(gt=0, le=10**4)]
    kv_heads: Annotated[int, Field(gt=0, le=10**4)]
    head_dim: Annotated[int, Field(gt=0, le=10**5)]
    vocab_size: Annotated[int, Field(gt=0, le=10**8)]
    tied_embeddings: bool = False
    active_params: Annotated[float, Field(ge=1, le=1e15)] | None = Field(
        default=None, description="weights one token reads (mixture of experts); default all"
    )
    experts: Annotated[int, Field(gt=0, le=10**5)] | None = None
    experts_per_token: Annotated[int, Field(gt=0, le=10**5)] | None = None
    kv_latent_dim: Annotated[int, Field(gt=0, le=10**6)] | None = Field(
        default=None, description="elements cached per token per layer (latent attention)"
    )
    quantization: WeightFormat = WeightFormat.BF16
    kv_precision: KVPrecision = KVPrecision.BF16
    prompt_tokens: Annotated[int, Field(gt=0, le=MAX_SEQ_LEN)] = 1000
    output_tokens: Annotated[int, Field(gt=0, le=MAX_SEQ_LEN)] = 300
    users: Annotated[int, Field(gt=0, le=10**6)] = 1
    min_tokens_per_s_per_user: Annotated[float, Field(gt=0, le=1e6)] | None = None
    engine: Engine = Engine.BATCHED
    tensor_parallel: Annotated[int, Field(gt=0, le=64)] | None = Field(
        default=None,
        description="GPUs one copy of the model spans (vLLM --tensor-parallel-size, "
        "TensorRT-LLM tp_size); the build's other GPUs serve more copies. Default: the fewest "
        "that hold the weights and every user's context",
    )
    arrival_rate: Annotated[float, Field(gt=0, le=1e6)] | None = Field(
        default=None,
        description="requests/s arriving at the build at random (Poisson, MLPerf's Server "
        "scenario): the time to first token and per output token they see",
    )
    ttft_target_s: Annotated[float, Field(gt=0, le=1e4)] | None = Field(
        default=None,
        description="bound on the 99th-percentile time to first token, seconds (MLPerf "
        "llama2-70b Server: 2.0): the largest arrival rate that meets it",
    )
    tpot_target_s: Annotated[float, Field(gt=0, le=1e3)] | None = Field(
        default=None,
        description="bound on the 99th-percentile time per output token after the first, "
        "seconds (MLPerf llama2-70b Server: 0.2): the largest arrival rate that meets it",
    )
    requests: Annotated[int, Field(gt=0, le=10**6)] | None = Field(
        default=None,
        description="batched engines: an offline batch job of this many requests of these "
        "lengths, all sent at once (an evaluation, synthetic data, a corpus to label), which "
        "are then the users asking: the run is the batch, its time and output tokens/s with "
        "the requests running in waves of as many as the build runs at once, the last wave "
        "with the rest (trtllm-bench throughput, vLLM benchmark_throughput)",
    )
    shared_prefix_tokens: Annotated[int, Field(ge=0, le=MAX_SEQ_LEN)] = Field(
        default=0,
        description="leading prompt tokens every request shares (a system prompt, a fixed "
        "preamble), at most prompt_tokens: vLLM's prefix cache computes them once",
    )
    attention_data_parallel: bool = Field(
        default=False,
        description="mixture of experts only: each of the copy's `tensor_parallel` GPUs runs "
        "attention for its own requests with a whole copy of the weights outside the experts, "
        "and the GPUs split the experts (expert parallel), exchanging the tokens at each expert "
        "layer (TensorRT-LLM enable_attention_dp with --ep, vLLM --data-parallel-size with "
        "--enable-expert-parallel)",
    )
    expert_layers: Annotated[int, Field(gt=0, le=10**4)] | None = Field(
        default=None,
        description="layers that hold experts, where some layers are dense (Llama 4 Maverick: "
        "24 of 48); default all",
    )
    attention_chunk_tokens: Annotated[int, Field(gt=0, le=MAX_SEQ_LEN)] | None = Field(
        default=None,
        description="chunked local attention (Llama 4's attention_chunk_size: 8,192): the "
        "window of tokens each of `chunked_attention_layers` attends within; the KV cache "
        "still holds the whole context, as vLLM keeps it for Llama 4 by default",
    )
    chunked_attention_layers: Annotated[int, Field(ge=0, le=10**4)] = Field(
        default=0,
        description="layers with chunked local attention (Llama 4: 3 of every 4), at most "
        "`layers`; the others attend to the whole context",
    )
    max_batch: Annotated[int, Field(gt=0, le=10**6)] | None = Field(
        default=None,
        description="batched engines: the most requests one engine runs at once, on each GPU "
        "under attention data parallelism (TensorRT-LLM max_batch_size, vLLM max_num_seqs, "
        "SGLang max_running_requests); the others wait. Default: the engine's own "
        "(TensorRT-LLM 2,048; vLLM 256, or 1,024 on cards of 70 GiB and more; SGLang 2,048)",
    )
    max_num_tokens: Annotated[int, Field(gt=0, le=10**7)] | None = Field(
        default=None,
        description="batched engines: the most tokens one iteration computes, the running "
        "requests' next tokens and waiting prompts together (TensorRT-LLM max_num_tokens, vLLM "
        "max_num_batched_tokens, SGLang chunked_prefill_size); on TensorRT-LLM its profiling "
        "pass at this many tokens, on SGLang its reserve, also sets what the KV cache is left. "
        "Default: the engine's own (TensorRT-LLM 8,192; vLLM 2,048, or 8,192 on cards of 70 "
        "GiB and more; SGLang 2,048 to 16,384 by the card's memory)",
    )
    request_overhead_s: Annotated[float, Field(ge=0, le=60)] | None = Field(
        default=None,
        description="seconds a request spends in the serving stack beside the GPU's work "
        "(HTTP, tokenizer, the first token streamed back), part of its time to first token. "
        "Default: 5.9 ms, a dedicated vLLM server's; 0 for an in-process harness (MLPerf's "
        "LoadGen sends token IDs)",
    )

    @model_validator(mode="after")
    def _experts_paired(self) -> ServeBlock:
        if (self.experts is None) != (self.experts_per_token is None):
            raise ValueError("give 'experts' and 'experts_per_token' together")
        if self.experts and self.experts_per_token and self.experts_per_token > self.experts:
            raise ValueError("'experts_per_token' is at most 'experts'")
        if (self.attention_data_parallel or self.expert_layers) and not self.experts:
            raise ValueError(
                "'attention_data_parallel' and 'expert_layers' are for a mixture of experts: "
                "give 'experts' and 'experts_per_token'"
            )
        if self.attention_data_parallel and not (self.tensor_parallel or 0) > 1:
            raise ValueError(
                "'attention_data_parallel' needs 'tensor_parallel' of 2 or more: the GPUs that "
                "run attention apart and split the experts"
            )
        batched = [f"'{e.value}'" for e in Engine if e.is_batched]
        engines = f"{', '.join(batched[:-1])} or {batched[-1]}"
        for field, what, why in (
            ("max_batch", "limit", "serves every user in one batch"),
            ("max_num_tokens", "token budget", "computes each prompt alone"),
            ("requests", "offline batch", "serves every user in one batch"),
        ):
            if getattr(self, field) is not None and self.engine is Engine.LOCAL:
                raise ValueError(
                    f"'{field}' is a batched engine's {what} (engine {engines}): a local runner "
                    f"{why}"
                )
        if self.requests is not None and self.arrival_rate is not None:
            raise ValueError(
                "'requests' (a batch sent at once) and 'arrival_rate' (requests arriving at "
                "random) ask different questions: give one"
            )
        if (self.attention_chunk_tokens is None) != (self.chunked_attention_layers == 0):
            raise ValueError(
                "give 'attention_chunk_tokens' and 'chunked_attention_layers' together"
            )
        if self.chunked_attention_layers > self.layers:
            raise ValueError(
                f"'chunked_attention_layers' ({self.chunked_attention_layers}) is at most "
                f"'layers' ({self.layers})"
            )
        if self.expert_layers is not None and self.expert_layers > self.layers:
            raise ValueError(
                f"'expert_layers' ({self.expert_layers}) is at most 'layers' ({self.layers})"
            )
        if (
            self.tensor_parallel is not None
            and not self.attention_data_parallel
            and self.heads % self.tensor_parallel
        ):
            raise ValueError(
                f"'tensor_parallel' ({self.tensor_parallel}) must divide 'heads' ({self.heads}): "
                "each GPU holds whole attention heads"
            )
        if self.kv_heads > self.heads:
            raise ValueError("'kv_heads' is at most 'heads'")
        if self.shared_prefix_tokens > self.prompt_tokens:
            raise ValueError(
                f"'shared_prefix_tokens' ({self.shared_prefix_tokens}) is at most "
                f"'prompt_tokens' ({self.prompt_tokens})"
            )
        if self.engine is Engine.LOCAL and self.quantization is WeightFormat.NVFP4:
            raise ValueError(
                "the local engine (llama.cpp) has no NVFP4 format: use quantization mxfp4 or "
                "int4, or engine batched"
            )
        return self


class WorkloadFile(_Strict):
    """The top level of a workload file (design.md, plus `mode`, `finetune`, `seq_len`,
    `similar_to`, `activation_checkpointing`, `activation_offloading`, `pure_16bit`,
    `fp8_params`, `fp8_transpose_cache`,
    `fused_loss`, `loss_precision`, `gradient_precision`, `loss_chunks`, `chunked_logits_kept`,
    `logits_released`, `expanded_kv`, `fused_activation`, `cuda_graphs`, `kernels`,
    `bias_epilogue`, `unaligned_tensor_cores`, `fused_norm_activation`, `memory_format`,
    `gradient_accumulation`, `steps`, `sources`, `notes`, and `parallel` as a block)."""

    name: str | None = None
    model: str | ModelBlock
    mode: Mode = Mode.TRAINING
    batch_size: Annotated[int, Field(gt=0, le=MAX_BATCH_SIZE)] | None = None
    precision: Precision | None = None
    optimizer: Optimizer | None = None
    input: InputBlock | list[InputBlock] | None = None
    dataset: Literal["synthetic"] | DatasetBlock | None = None
    preprocessing: PreprocessingBlock | None = None
    loader: LoaderBlock | None = None
    parallel: (
        Annotated[
            Annotated[Parallelism, Tag("by-name")] | Annotated[ParallelBlock, Tag("block")],
            Discriminator(_parallel_form),
        ]
        | None
    ) = None
    gradient_accumulation: Annotated[int, Field(ge=1, le=10**5)] = Field(
        default=1, description="micro-batches of batch_size per optimizer step"
    )
    finetune: FinetuneBlock | None = None
    seq_len: Annotated[int, Field(gt=0, le=MAX_SEQ_LEN)] | None = None
    similar_to: str | None = Field(
        default=None,
        description="a zoo model whose fitted efficiencies this one shares (same layer types)",
    )
    activation_checkpointing: bool = Field(
        default=False, description="recompute activations in backward (one extra forward)"
    )
    selective_checkpointing: bool = Field(
        default=False,
        description="torchtitan's selective activation checkpointing by op "
        "(activation_checkpoint.mode 'selective', selective_ac_option 'op', its configs' "
        "default): each layer keeps the outputs of every second matmul and of its attention, "
        "and the backward recomputes the rest; instead of activation_checkpointing",
    )
    checkpointed_layers: Annotated[int, Field(ge=1, le=10**4)] | None = Field(
        default=None,
        description="with activation_checkpointing: the layers recomputed (Megatron's "
        "--recompute-num-layers with --recompute-method block, NeMo's "
        "activations_checkpoint_num_layers); the others keep their activations; default: "
        "every layer",
    )
    activation_offloading: bool = Field(
        default=False,
        description="the tensors the forward saves go to pinned host RAM on a side stream "
        "and come back in the backward (torchtune enable_activation_offloading): the GPU "
        "keeps the last 5 in flight; with checkpointing, those are the layers' inputs",
    )
    pure_16bit: bool = Field(
        default=False,
        description="weights, gradients and optimizer state all in the 16-bit precision "
        "(as llm.q trains): no fp32 master copy",
    )
    fp8_params: bool = Field(
        default=False,
        description="with precision fp8: the linear weights are stored in FP8 with no 16-bit "
        "copy (Transformer Engine's fp8_model_init, NeMo's fp8_params, Megatron's "
        "--fp8-param-gather): a byte a weight, and in training a second byte for the transposed "
        "copy TE keeps for the backward; embeddings, the output projection and adapters stay "
        "16-bit, and the optimizer keeps its fp32 master copy",
    )
    fp8_transpose_cache: bool = Field(
        default=True,
        description="with fp8_params in training: TE keeps each FP8 weight's transposed copy "
        "between steps, a byte a weight (its default where FP8 GEMMs take only the TN layout); "
        "false: each backward makes it and frees it, as ROCm TE's "
        "keep_fp8_weight_transpose_cache=False (AMD's MLPerf ENABLE_TRANSPOSE_CACHE=0) and TE "
        "1.x under Megatron's disable_parameter_transpose_cache run",
    )
    optimizer_in_backward: bool = Field(
        default=False,
        description="each weight steps as soon as its gradient is ready and frees it "
        "(torchtune optimizer_in_bwd): about one layer's gradients held at a time; no "
        "gradient accumulation",
    )
    optimizer_step: OptimizerStep = Field(
        default=OptimizerStep.FUSED,
        description="how the optimizer step runs: fused (one kernel: apex FusedAdam, torch.optim "
        "fused=True), foreach (torch.optim's default on PyTorch 2: each op over lists of "
        "tensors, every op reading and writing whole tensors: Adam 20 element moves a "
        "parameter, not 7), per_tensor (a Python loop over the tensors: torch.optim before "
        "PyTorch 2, BERT's BertAdam; its launches are counted) or per_tensor_synced (that loop "
        "waiting on the GPU once per tensor: clip_grad_norm_ per tensor on PyTorch before 1.10) "
        "or none (forward and backward only, no optimizer step and no moments: a harness "
        "timing forward + backward, gradient attribution)",
    )
    paged_optimizer: bool = Field(
        default=False,
        description="optimizer state in CUDA unified memory (bitsandbytes Paged* optimizers): "
        "what does not fit the GPU pages to host RAM and back over PCIe each step",
    )
    fused_loss: bool = Field(
        default=False,
        description="cross-entropy in one fused kernel from the 16-bit logits (flash-attn's, "
        "llm-foundry's default, Liger): no fp32 log-softmax copy",
    )
    loss_precision: Literal["fp32", "16bit"] = Field(
        default="fp32",
        description="the precision a 16-bit run's cross-entropy log-softmax runs in: fp32 as "
        "autocast and transformers run it (an fp32 copy of the logits), 16bit where the whole "
        "model is 16-bit (apex amp O2, NVIDIA Deep Learning Examples' Transformer-XL); "
        "ignored at fp32",
    )
    gradient_precision: Literal["fp32", "16bit"] = Field(
        default="fp32",
        description="the precision a 16-bit run's data-parallel gradients are all-reduced in: "
        "fp32 under autocast, whose parameters stay fp32; 16bit where the model itself is "
        "16-bit and the optimizer keeps an fp32 master copy (apex amp O2, as NVIDIA Deep "
        "Learning Examples' BERT, GNMT and Transformer-XL run). Sharded and pure 16-bit runs "
        "reduce in 16 bits either way; ignored at fp32",
    )
    loss_chunks: int = Field(
        default=1,
        ge=1,
        description="the LM head and its cross-entropy run over this many chunks of the "
        "micro-batch's tokens, each chunk's logits freed before the next (llm.q "
        "--lmhead-chunks, Liger's fused linear cross-entropy): 1/n of the logits live at once",
    )
    chunked_logits_kept: bool = Field(
        default=False,
        description="with loss_chunks: every chunk's logits and log-softmax stay saved for the "
        "backward, only the fp32 upcast and its gradients are per chunk (torchtune's "
        "CEWithChunkedOutputLoss); false: each chunk's logits are freed and recomputed",
    )
    logits_released: bool = Field(
        default=False,
        description="the training loop drops its reference to the logits before the backward "
        "(torchtune's recipes `del logits`), so they go with the loss's nodes before the "
        "backward recomputes a checkpointed layer; false: the loop keeps the model's output "
        "(`out = model(**batch); out.loss.backward()`) and its 16-bit logits until the step ends",
    )
    expanded_kv: bool = Field(
        default=False,
        description="grouped-query attention's K and V are copied to every query head before "
        "the attention kernel, which saves the copies for its backward (torchtune's "
        "MultiHeadAttention): K and V kept at the query heads' width",
    )
    fused_activation: bool = Field(
        default=False,
        description="a gated MLP's activation (SwiGLU) in one kernel that recomputes the SiLU "
        "in the backward (llm.q, Liger Kernel): 3 saved f-wide tensors, not 4",
    )
    cuda_graphs: bool = Field(
        default=False,
        description="each step replays a captured CUDA graph (torch.compile "
        "mode='reduce-overhead', llm.q --use-cuda-graphs): the host launches the step once, "
        "not kernel by kernel",
    )
    kernels: KernelLibrary = Field(
        default=KernelLibrary.EAGER,
        description="the library the job's element-wise, norm, rotary and loss kernels come "
        "from: eager (PyTorch and transformers as written), compile (torch.compile's default "
        "mode: element-wise and norm chains fused), compile-reduce-overhead (the same with "
        "CUDA graphs), liger (Liger Kernel: RMSNorm, RoPE, SwiGLU, fused linear "
        "cross-entropy), unsloth (its Triton kernels and gradient checkpointing), fused "
        "(hand-written trainers such as llm.c and llm.q) or xla (TensorFlow's XLA "
        "auto-clustering, --xla / tf.config.optimizer.set_jit: element-wise chains fused, "
        "each reduction ends a fusion, dropout's random numbers made outside it); it sets "
        "fused_loss, loss_chunks, fused_activation, cuda_graphs, activation_checkpointing and "
        "fused_norm_activation unless the file sets them",
    )
    bias_epilogue: bool = Field(
        default=True,
        description="a linear layer's bias is added by its matmul (addmm; PyTorch 1.12 and later "
        "for activations of up to 3 dimensions); false: by a separate element-wise kernel "
        "that reads and writes the output again, as F.linear ran on 3-D activations before "
        "PyTorch 1.12 (pytorch/pytorch#39661, #72728)",
    )
    unaligned_tensor_cores: bool = Field(
        default=True,
        description="a 16-bit matmul with a dimension that is not a multiple of 8 (a "
        "267,735-word vocabulary) still runs on the tensor cores, as cuBLAS 11.0 and later "
        "run it; false: cuBLAS 10.x and earlier (CUDA 10.2 builds of PyTorch, NGC containers "
        "before 20.06), which run it on the CUDA cores at the FP32 rate",
    )
    fused_norm_activation: bool = Field(
        default=False,
        description="a convnet's batch norm applies its ReLU, and the residual add before it, "
        "in the same kernel: cuDNN's fused batch norm (MXNet --fuse-bn-relu / "
        "--fuse-bn-add-relu, PaddlePaddle fuse_bn_act_ops / fuse_bn_add_act_ops), or a "
        "compiler's fusion (torch.compile, XLA); fewer passes over the activations",
    )
    memory_format: Literal["channels_first", "channels_last"] = Field(
        default="channels_first",
        description="convnet tensor layout: PyTorch's default NCHW (channels_first) or "
        "NHWC (torch.channels_last), the tensor cores' own",
    )
    epochs: Annotated[float, Field(gt=0, le=1e6)] | None = None
    tokens: Annotated[float, Field(gt=0, le=1e16)] | None = None
    steps: PositiveInt | None = None
    serve: ServeBlock | None = None
    sources: list[str] = Field(default_factory=list)
    notes: str = ""

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("name"), int | float):
            return {**data, "name": str(data["name"])}
        return data

    @model_validator(mode="after")
    def _optimizer_in_backward_alone(self) -> WorkloadFile:
        if self.optimizer_in_backward and self.gradient_accumulation > 1:
            raise ValueError(
                "'optimizer_in_backward' steps each weight during the backward, so it cannot "
                "accumulate gradients: set 'gradient_accumulation' to 1"
            )
        return self

    @model_validator(mode="after")
    def _fp8_params_need_fp8(self) -> WorkloadFile:
        if self.fp8_params and self.precision is not Precision.FP8:
            raise ValueError(
                "'fp8_params' stores the weights in FP8 for FP8 compute: set 'precision: fp8' "
                "with it"
            )
        if not self.fp8_transpose_cache and not self.fp8_params:
            raise ValueError(
                "'fp8_transpose_cache' says whether FP8-stored weights keep their transposed "
                "copy: set 'fp8_params: true' with it"
            )
        return self

    @model_validator(mode="after")
    def _one_checkpointing_policy(self) -> WorkloadFile:
        if self.selective_checkpointing and self.activation_checkpointing:
            raise ValueError(
                "'selective_checkpointing' and 'activation_checkpointing' are two policies for "
                "the same layers: set one of them"
            )
        return self

    @model_validator(mode="after")
    def _checkpointed_layers_need_checkpointing(self) -> WorkloadFile:
        if self.checkpointed_layers is not None and not self.activation_checkpointing:
            raise ValueError(
                "'checkpointed_layers' says how many layers activation checkpointing "
                "recomputes: set 'activation_checkpointing: true' with it"
            )
        return self
