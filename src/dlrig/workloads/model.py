"""The resolved workload: what one training (or inference) job asks of the hardware, frozen.

Every quantity carries its unit in its name. FLOPs count one multiply-add as 2 (dlrig.units)
and cover matrix multiplications and convolutions only; training costs about 3x the forward
pass. `activation_bytes_per_sample` is measured with 32-bit activations (what
`dlrig.torch.describe` counts on an fp32 model); the performance model scales it for 16-bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from dlrig.enums import Optimizer, Parallelism, Precision, PreprocessingStrategy
from dlrig.units import GB
from dlrig.workloads.serving import ServeSpec


class WorkloadKind(StrEnum):
    """What family of model a workload trains; decides the units a report uses."""

    VISION = "vision"
    LANGUAGE = "language"
    SPEECH = "speech"
    RECOMMENDATION = "recommendation"
    DIFFUSION = "diffusion"
    OTHER = "other"


class Mode(StrEnum):
    """Training (forward, backward, optimizer step) or inference (token-by-token decoding for
    language models, a forward pass otherwise)."""

    TRAINING = "training"
    INFERENCE = "inference"


class FinetuneMethod(StrEnum):
    """Which weights train: all of them, low-rank adapters (LoRA) on frozen 16-bit weights, or
    adapters on frozen 4-bit weights (QLoRA)."""

    FULL = "full"
    LORA = "lora"
    QLORA = "qlora"


class LoraTarget(StrEnum):
    """A transformer layer's linear projection a LoRA adapter can sit on, by peft's Llama
    names (q_proj ... down_proj); a model with one fused QKV and one fc1 (GPT-2's c_attn,
    c_fc) adapts them as q, k, v and up."""

    Q = "q"
    K = "k"
    V = "v"
    O = "o"  # noqa: E741 - the attention output projection's own name
    GATE = "gate"
    UP = "up"
    DOWN = "down"


# Every projection: peft's target_modules="all-linear", NeMo AutoModel's "*_proj", Unsloth's
# default list; the adapters dlrig assumes where a job does not say.
ALL_LORA_TARGETS: frozenset[LoraTarget] = frozenset(LoraTarget)


class QuantizedBase(StrEnum):
    """The 4-bit format of a QLoRA job's frozen base: bitsandbytes NF4 (or torchao's, as
    torchtune quantizes), quantized as the model loads, or a checkpoint quantized beforehand
    with GPTQ or AWQ (int4 weights with a 16-bit scale and a 4-bit zero point per group of
    input channels), which peft trains LoRA over."""

    NF4 = "nf4"
    # torchao's NF4Tensor, as torchtune's QLoRA builds it: the same 4-bit NF4 with
    # double-quantized scalers, which FSDP2 shards and gathers with the weights.
    TORCHAO_NF4 = "torchao-nf4"
    GPTQ = "gptq"
    AWQ = "awq"


class OptimizerStep(StrEnum):
    """How a training job's optimizer step runs (the `optimizer_step` job field): one fused
    kernel over every tensor (apex FusedAdam, torch.optim `fused=True`); torch.optim's foreach
    path (PyTorch 2's default on CUDA: each op once over lists of tensors); a Python loop over
    the tensors (torch.optim before PyTorch 2, hand-written steps such as BERT's BertAdam);
    or that loop waiting on the GPU once per tensor (a per-tensor gradient clip on PyTorch
    before 1.10); or none: the job runs the forward and the backward and steps no optimizer,
    as a harness that times forward + backward does (NeuSight's measure_e2e, Lee et al.,
    ASPLOS 2025: `loss.backward()` timed, no `optimizer.step()`) and as gradient-only jobs
    (input attribution, gradient statistics) do: no step's bytes, no moments held. What each
    moves and launches: dlrig.model.compute."""

    FUSED = "fused"
    FOREACH = "foreach"
    PER_TENSOR = "per_tensor"
    PER_TENSOR_SYNCED = "per_tensor_synced"
    NONE = "none"


class KernelLibrary(StrEnum):
    """The kernels a training job's code runs its non-matmul work with (the `kernels` job
    field): PyTorch eager as transformers writes its models, torch.compile's Inductor (default
    mode, or `reduce-overhead` with CUDA graphs), Liger Kernel's or Unsloth's Triton kernels
    patched into a transformers model, a hand-fused trainer (llm.c, llm.q), or TensorFlow's
    XLA auto-clustering (`xla`: fused element-wise chains, but reductions end a fusion and
    dropout's random numbers come from outside it). What each changes is counted in
    dlrig.model.layers (kernels and bytes) and dlrig.workloads.kernels (the job fields it
    sets)."""

    EAGER = "eager"
    COMPILE = "compile"
    COMPILE_REDUCE_OVERHEAD = "compile-reduce-overhead"
    LIGER = "liger"
    UNSLOTH = "unsloth"
    FUSED = "fused"
    XLA = "xla"


@dataclass(frozen=True)
class Dataset:
    """The training data as stored: `samples` items of `bytes_per_sample` each on disk, in
    `files` files (None: read sequentially, as shards or one array)."""

    samples: int
    bytes_per_sample: float
    files: int | None = None

    @property
    def files_per_sample(self) -> float:
        """Files a sample's read opens at random (0: the data is read sequentially)."""
        return 0.0 if self.files is None else self.files / self.samples

    @property
    def total_gb(self) -> float:
        """Size of the whole dataset on disk, GB (10**9 bytes)."""
        return self.samples * self.bytes_per_sample / GB


def transformer_structure_known(
    num_layers: int | None, hidden_size: int | None, num_heads: int | None, seq_len: int | None
) -> bool:
    """Layers, width, heads and tokens all given: a transformer's activations follow from them."""
    return bool(num_layers and hidden_size and num_heads and seq_len)


@dataclass(frozen=True)
class Workload:
    """One job: the model's size and cost, the batch, the precision and the input pipeline.

    `dataset` None means synthetic inputs made on the GPU (no storage, CPU or PCIe stage).
    `seq_len` is tokens per sample for language models (the context for inference).
    `similar_to` names a zoo model whose fitted efficiencies this one borrows. `batch_size` is
    per GPU per micro-batch; an optimizer step takes `gradient_accumulation` of them. Under
    tensor x pipeline parallelism each data-parallel replica spans that many GPUs; `zero_stage`
    says what data-parallel ranks shard (1 optimizer state, 2 + gradients, 3 + weights);
    `parallel_fixed` says the document chose the layout (else the model may shard a job that does
    not fit replicated). The transformer structure (`num_heads`, `kv_heads`, `ffn_hidden_size`,
    `gated_mlp`, `hidden_act` (the MLP's activation, transformers' name), `dropout`,
    `flash_attention` (`native_attention`: a fused kernel written for
    the card's own MMA instructions, cuDNN or FlashAttention-3; `strided_heads`: eager
    attention reads Q, K and V in place instead of copying them head-major), `vocab_size`,
    `tied_embeddings`, `memory_len`, and for encoder-decoder models `encoder_layers` over
    `encoder_seq_len` positions, the decoder being `num_layers` over `seq_len`) is the published
    config's; the activation memory is computed from it. `channels_last`: convolutions run on
    NHWC tensors (PyTorch's default is NCHW); `fused_loss`: the cross-entropy runs in one
    kernel from the 16-bit logits; `fp32_loss`: at 16-bit the log-softmax keeps an fp32 copy
    of the logits (autocast; apex O2 does not); `gradients_16bit`: at 16-bit data-parallel
    gradients are all-reduced in 16 bits (apex O2's 16-bit model; autocast's are fp32);
    `loss_chunks`: the LM head and loss run over
    that many chunks of the micro-batch's tokens, one chunk's logits alive at a time
    (`chunked_logits_kept`: all stay saved, only the upcast and gradients are per chunk);
    `logits_released`: the training loop drops the logits before the backward, which frees
    them with the loss's nodes (else it holds the model's output through the backward);
    `expanded_kv`: grouped-query attention saves K and V copied to every query head;
    `fused_activation`: a gated MLP's SiLU and product run in one kernel that saves only its
    input; `pure_16bit`: a 16-bit run keeps its weights, gradients and optimizer state in 16
    bits; `fp8_params`: an FP8 run stores its linear weights in FP8, with no 16-bit copy
    (Transformer Engine's fp8_model_init; dlrig.model.memory.FP8_WEIGHT_BYTES);
    `fp8_transpose_cache`: with fp8_params in training, TE keeps each weight's transposed FP8
    copy between steps (false: each backward makes it and frees it);
    `optimizer_in_backward`: each weight steps and frees its gradient during the
    backward; `activation_offloading`: the tensors the layers save wait in host RAM between
    the forward and the backward; `optimizer_step`: how the optimizer step runs
    (OptimizerStep); `paged_optimizer`: the
    optimizer state pages to host RAM where the GPU cannot hold it; `cuda_graphs`: each step
    replays a captured CUDA graph, so the host does not dispatch its kernels one by one;
    `kernels`: the library the job's element-wise, norm, rotary and loss kernels come from
    (KernelLibrary); `bias_epilogue`: a linear's bias is added by its matmul, not by a kernel
    of its own after it (PyTorch before 1.12 on 3-D activations); `unaligned_tensor_cores`: a
    16-bit GEMM with a dimension not a multiple of 8 still runs on the tensor cores (cuBLAS 11
    and later), not on the CUDA cores (compute.unaligned_gemm_share); `fused_norm_activation`: a
    convnet's batch norm applies its ReLU (and the residual add before it) in the same kernel
    (dlrig.model.layers.FUSED_NORM_ACTIVATION_SHARE). Run
    length is `epochs` over the dataset, or `tokens`, or `steps`; None of them: the model states
    its default.
    """

    name: str
    kind: WorkloadKind
    mode: Mode
    params: float
    forward_flops_per_sample: float
    activation_bytes_per_sample: float
    input_bytes_per_sample: float
    batch_size: int
    precision: Precision
    optimizer: Optimizer
    dataset: Dataset | None
    preprocessing_strategy: PreprocessingStrategy
    cpu_ms_per_sample: float
    offline_cpu_ms_per_sample: float
    loader_workers: int
    pin_memory: bool
    prefetch: int
    parallel: Parallelism
    epochs: float | None = None
    tokens: float | None = None
    steps: int | None = None
    seq_len: int | None = None
    hidden_size: int | None = None
    num_layers: int | None = None
    kv_bytes_per_token: float | None = None
    num_heads: int | None = None
    kv_heads: int | None = None
    ffn_hidden_size: int | None = None
    vocab_size: int | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    flash_attention: bool = False
    native_attention: bool = False
    strided_heads: bool = False
    gated_mlp: bool = False
    hidden_act: str = "gelu"
    dropout: bool = True
    tied_embeddings: bool = False
    memory_len: int | None = None
    encoder_layers: int | None = None
    encoder_seq_len: int | None = None
    parallel_fixed: bool = False
    zero_stage: int = 0
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    sequence_parallel: bool = False
    context_parallel: int = 1
    expert_parallel: int = 1
    micro_batches: int = 1
    cpu_offload: bool = False
    gradient_accumulation: int = 1
    activation_checkpointing: bool = False
    # torchtitan's selective checkpointing by op (dlrig.model.memory.selective_saved_bytes)
    selective_checkpointing: bool = False
    # Megatron's --recompute-num-layers (block method): the layers checkpointing recomputes;
    # None with activation_checkpointing: every layer
    checkpointed_layers: int | None = None
    activation_offloading: bool = False
    channels_last: bool = False
    fused_loss: bool = False
    fp32_loss: bool = True
    gradients_16bit: bool = False
    loss_chunks: int = 1
    chunked_logits_kept: bool = False
    logits_released: bool = False
    expanded_kv: bool = False
    fused_activation: bool = False
    pure_16bit: bool = False
    fp8_params: bool = False
    fp8_transpose_cache: bool = True
    optimizer_in_backward: bool = False
    optimizer_step: OptimizerStep = OptimizerStep.FUSED
    paged_optimizer: bool = False
    cuda_graphs: bool = False
    kernels: KernelLibrary = KernelLibrary.EAGER
    bias_epilogue: bool = True
    unaligned_tensor_cores: bool = True
    fused_norm_activation: bool = False
    finetune: FinetuneMethod = FinetuneMethod.FULL
    trainable_fraction: float = 1.0
    fp32_adapters: bool = False
    adapter_autocast: bool = True  # fp32 adapters stepped under torch.autocast
    adapter_dropout: float = 0.0  # LoRA dropout probability on each adapter's input
    lora_targets: frozenset[LoraTarget] = ALL_LORA_TARGETS  # the projections adapters sit on
    weight_bits: int | None = None
    quantized_base: QuantizedBase | None = None  # QLoRA's base format (None: not quantized)
    quant_group_size: int = 128  # GPTQ/AWQ: input channels sharing one scale and zero point
    model_name: str | None = None
    similar_to: str | None = None
    serve: ServeSpec | None = None
    sources: tuple[str, ...] = ()
    notes: str = ""
    assumptions: tuple[str, ...] = ()
    source: str = ""

    @property
    def is_language_model(self) -> bool:
        """A model whose samples are token sequences (reports tokens/s)."""
        return self.seq_len is not None and self.kind is WorkloadKind.LANGUAGE

    @property
    def forward_flops_per_token(self) -> float | None:
        """Forward FLOPs per token, for models with a sequence length."""
        if not self.seq_len:
            return None
        return self.forward_flops_per_sample / self.seq_len

    @property
    def recompute_share(self) -> float:
        """The share of the layers the backward recomputes (one more forward of each): 0
        without activation checkpointing, 1 with every layer checkpointed, checkpointed_layers
        over num_layers for Megatron's block method (the rest keep their activations)."""
        if not self.activation_checkpointing:
            return 0.0
        if self.checkpointed_layers is None or not self.num_layers:
            return 1.0
        return min(self.checkpointed_layers / self.num_layers, 1.0)

    @property
    def pointwise_recompute_share(self) -> float:
        """The share of the forward's element-wise work the backward runs again: the
        recomputed layers' (recompute_share), or all of it under selective checkpointing,
        which keeps only matmul and attention outputs."""
        return 1.0 if self.selective_checkpointing else self.recompute_share

    @property
    def has_transformer_structure(self) -> bool:
        """Layers, width, heads and tokens known: activations follow from the structure."""
        return transformer_structure_known(
            self.num_layers, self.hidden_size, self.num_heads, self.seq_len
        )

    @property
    def model_parallel_gpus(self) -> int:
        """GPUs one replica of the model spans (tensor x pipeline)."""
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def synthetic(self) -> bool:
        """Inputs are generated on the GPU: no storage, CPU or PCIe stage."""
        return self.dataset is None

    @property
    def async_loading(self) -> bool:
        """Background workers load the next batches while the GPU computes (DISK.2)."""
        return self.loader_workers > 0 and self.prefetch > 0
