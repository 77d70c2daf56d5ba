"""Read workload files and zoo presets into `Workload` values.

A workload document names a zoo model (`model: resnet50`) or gives an inline model block. A zoo
name pulls in the preset's whole document; the user's keys then override it (sub-blocks such as
`loader` key by key), so `{model: resnet50, batch_size: 64}` is resnet50 at batch 64. Every
default taken for a missing input is recorded in `Workload.assumptions`.
"""

from __future__ import annotations

import functools
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from dlrig.enums import Optimizer, Parallelism, Precision, PreprocessingStrategy
from dlrig.errors import UnknownWorkloadError, ValidationError
from dlrig.io.documents import read_document
from dlrig.io.paths import is_there, shown
from dlrig.io.validation import closest, validate_document
from dlrig.units import MB, s_to_ms
from dlrig.workloads.kernels import preset_fields
from dlrig.workloads.model import (
    ALL_LORA_TARGETS,
    Dataset,
    FinetuneMethod,
    KernelLibrary,
    Mode,
    QuantizedBase,
    Workload,
    WorkloadKind,
    transformer_structure_known,
)
from dlrig.workloads.schema import (
    DTYPE_BYTES,
    FinetuneBlock,
    InputBlock,
    ModelBlock,
    ParallelBlock,
    ServeBlock,
    WorkloadFile,
)
from dlrig.workloads.serving import ServeSpec

DEFAULT_BATCH_SIZE = 32
# Bytes per second one core copies and collates an already-preprocessed sample (a memcpy-bound
# tensor stack; CPU.1's "preprocess once" loader does little else).
OFFLINE_COLLATE_BYTES_PER_S = 2e9
# FLOPs per byte of 32-bit saved activations, used only when a model block gives no activation
# bytes: ResNet-50 (8.18e9 / 100e6 = 82) and BERT-base (2.7e10 / 8e8 = 88) are near 80.
FLOPS_PER_ACTIVATION_BYTE = 80.0
TOKEN_BYTES = 8  # int64 token ids, what PyTorch language-model loaders hand the GPU

# The zoo's files: training and inference presets, then the serving presets (issue 14).
ZOO_FILES = ("zoo.toml", "serve.toml")
_MERGED_BLOCKS = ("input", "dataset", "preprocessing", "loader", "finetune", "model", "serve")


def normalize_name(name: str) -> str:
    """Lower-case alphanumerics: 'ResNet-50', 'resnet 50' and 'resnet50' are one name."""
    return re.sub(r"[^a-z0-9]+", "", name.lower())


@functools.lru_cache(maxsize=1)
def zoo_documents() -> dict[str, dict[str, Any]]:
    """The zoo's raw documents by preset name, in file order (parsed once per process)."""
    entries: dict[str, dict[str, Any]] = {}
    for file in ZOO_FILES:
        resource = resources.files("dlrig.workloads").joinpath("data", file)
        with resource.open("rb") as fh:
            doc = tomllib.load(fh)
        entries.update({entry["name"]: entry for entry in doc.get("workload", [])})
    return entries


def _zoo_name(name: str) -> str:
    index = {normalize_name(n): n for n in zoo_documents()}
    return index.get(normalize_name(name), name)


def _fitted_relative(name: str) -> str:
    """The zoo entry whose fitted factors `similar_to: name` means: name's own `similar_to`,
    followed to its end (gpt2 -> bert-base-squad), so that a workload similar to an unfitted
    entry gets its relative's factors rather than the defaults."""
    doc = zoo_document(name)
    seen = {doc["name"]}
    while doc.get("similar_to") and doc["similar_to"] not in seen:
        doc = zoo_document(doc["similar_to"])
        seen.add(doc["name"])
    return str(doc["name"])


def zoo_document(name: str) -> dict[str, Any]:
    """The raw document of the zoo preset called name (case and spacing forgiven)."""
    docs = zoo_documents()
    index = {normalize_name(n): n for n in docs}
    found = index.get(normalize_name(name))
    if found is None:
        near = closest(name, list(docs))
        raise UnknownWorkloadError(
            f"unknown workload '{shown(name)}'",
            hint=f"closest zoo names: {', '.join(near)}; or give a workload file path",
        )
    return docs[found]


@functools.lru_cache(maxsize=1)
def zoo() -> tuple[Workload, ...]:
    """Every zoo preset as a Workload, in file order."""
    return tuple(resolve_workload(doc, f"zoo:{name}") for name, doc in zoo_documents().items())


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        old = merged.get(key)
        if key in _MERGED_BLOCKS and isinstance(old, dict) and isinstance(value, dict):
            merged[key] = {**old, **value}
        else:
            merged[key] = value
    return merged


def _without_library_fields(base: dict[str, Any], library: Any) -> dict[str, Any]:
    """The zoo document less the job fields the user's own `kernels` sets: a preset's
    `loss_chunks: 8` (torchtune's chunked loss) is how its library ran, not the user's."""
    try:
        fields = set(preset_fields(KernelLibrary(library), None, None))
    except ValueError:  # absent, or a bad name the schema reports
        return base
    if "loss_chunks" in fields:
        fields.add("chunked_logits_kept")
    return {k: v for k, v in base.items() if k not in fields}


def _library_fields(wf: WorkloadFile, m: ModelBlock) -> dict[str, Any]:
    """The job fields the workload's `kernels` sets that the document itself does not; a
    library's full recompute gives way to the document's selective checkpointing, the other
    policy for the same layers."""
    preset = preset_fields(wf.kernels, m.hidden_size, m.vocab_size)
    if wf.selective_checkpointing:
        preset.pop("activation_checkpointing", None)
    return {k: v for k, v in preset.items() if k not in wf.model_fields_set}


def expand_document(doc: dict[str, Any], source: str) -> dict[str, Any]:
    """The document with a zoo `model` name replaced by the preset's document under it."""
    model = doc.get("model")
    if isinstance(model, str):
        try:
            base = zoo_document(model)
        except UnknownWorkloadError as exc:
            raise UnknownWorkloadError(f"{source}: model: {exc.message}", hint=exc.hint) from None
        top = {k: v for k, v in doc.items() if k != "model"}
        base = _without_library_fields(base, top.get("kernels"))
        if top.get("selective_checkpointing") and "activation_checkpointing" not in top:
            # the user's policy for the layers replaces the zoo entry's full recompute
            base = {k: v for k, v in base.items() if k != "activation_checkpointing"}
        merged = _merge(base, top)
        if "name" not in doc:
            merged["name"] = base["name"]
        return merged
    return doc


def parse_workload(doc: dict[str, Any], source: str) -> WorkloadFile:
    """Validate a (zoo-expanded) workload document; errors name the file and the field."""
    return validate_document(WorkloadFile, doc, source)


def _input_bytes(block: InputBlock | list[InputBlock]) -> float:
    blocks = block if isinstance(block, list) else [block]
    total = 0.0
    for b in blocks:
        elements = 1
        for dim in b.shape:
            elements *= dim
        total += elements * DTYPE_BYTES[b.dtype] * b.tensors
    return total


def resolve_workload(doc: dict[str, Any], source: str) -> Workload:
    """Validate a workload document (zoo name or inline model) and fill in stated defaults."""
    model_ref = doc.get("model")
    wf = parse_workload(expand_document(doc, source), source)
    if not isinstance(wf.model, ModelBlock):  # expand_document replaced every zoo name
        raise ValidationError(f"{source}: model: expected a zoo name or an inline model block")
    m = wf.model
    library = _library_fields(wf, m)
    if library:
        wf = wf.model_copy(update=library)
    assumed: list[str] = []
    seq_len = wf.seq_len or m.seq_len

    if m.forward_flops_per_sample is not None:
        flops_per_sample = m.forward_flops_per_sample
    elif seq_len is not None and m.forward_flops_per_token is not None:
        per_token = m.forward_flops_per_token
        if m.seq_len and seq_len != m.seq_len and m.hidden_size and m.num_layers:
            # A block's per-token FLOPs hold its attention scores at its own length, 4 L s h
            # per token (Kaplan et al. 2020; the zoo's convention): a workload that changes
            # the length changes that term, not the matmuls' 2 x params.
            per_token += 4.0 * m.num_layers * m.hidden_size * (seq_len - m.seq_len)
        flops_per_sample = per_token * seq_len
    else:
        raise ValidationError(
            f"{source}: model: forward_flops_per_token needs a seq_len (tokens per sample)",
            hint="add seq_len: N to the model block or the workload",
        )

    if m.activation_bytes_per_sample is not None:
        activation_bytes = m.activation_bytes_per_sample
    else:
        activation_bytes = flops_per_sample / FLOPS_PER_ACTIVATION_BYTE
    # A training transformer's activations follow from its structure (model.memory); the
    # FLOPs-based figure is then unused and no assumption of the user's job.
    from_structure = wf.mode is Mode.TRAINING and transformer_structure_known(
        m.num_layers, m.hidden_size, m.num_heads, seq_len
    )
    if m.activation_bytes_per_sample is None and not from_structure:
        assumed.append(
            f"activation bytes per sample not given: {activation_bytes / MB:.0f} MB assumed "
            f"(forward FLOPs / {FLOPS_PER_ACTIVATION_BYTE:.0f}, as ResNet-50 and BERT)"
        )

    batch_size = wf.batch_size
    if batch_size is None:
        batch_size = DEFAULT_BATCH_SIZE
        assumed.append(f"batch size not given: {DEFAULT_BATCH_SIZE} per GPU assumed")
    precision = wf.precision
    if precision is None:
        precision = Precision.FP32
        assumed.append("precision not given: fp32 assumed")
    optimizer = wf.optimizer
    if optimizer is None:
        optimizer = Optimizer.ADAMW
        if wf.mode is Mode.TRAINING:
            assumed.append("optimizer not given: adamw assumed (2 moments per trainable weight)")

    if wf.input is not None:
        input_bytes = _input_bytes(wf.input)
    elif seq_len is not None:
        input_bytes = float(seq_len * TOKEN_BYTES)
        assumed.append(f"input not given: {seq_len} int64 tokens per sample assumed")
    else:
        input_bytes = 0.0
        assumed.append("input not given: no bytes counted over PCIe")

    dataset: Dataset | None
    if isinstance(wf.dataset, str):
        dataset = None
    elif wf.dataset is None:
        dataset = None
        assumed.append("dataset not given: synthetic inputs assumed (no storage/CPU/PCIe stage)")
    else:
        dataset = Dataset(wf.dataset.samples, wf.dataset.bytes_per_sample, wf.dataset.files)

    pre = wf.preprocessing
    strategy = pre.strategy if pre else PreprocessingStrategy.ONLINE
    cpu_ms = pre.cpu_ms_per_sample if pre and pre.cpu_ms_per_sample is not None else None
    if cpu_ms is None:
        cpu_ms = 0.0
        if dataset is not None:
            assumed.append("preprocessing cost not given: 0 CPU ms per sample assumed")
    offline_ms = pre.offline_cpu_ms_per_sample if pre else None
    if offline_ms is None:
        offline_ms = s_to_ms(input_bytes / OFFLINE_COLLATE_BYTES_PER_S)
        if dataset is not None and strategy is PreprocessingStrategy.OFFLINE:
            assumed.append(
                f"offline loading cost not given: {offline_ms:.3f} CPU ms per sample assumed "
                "(collating the input at 2 GB/s per core)"
            )

    loader = wf.loader
    if loader is None and dataset is not None:
        assumed.append("loader not given: 4 workers, pinned memory, prefetch 2 assumed")
    workers = loader.workers if loader else 4
    pin = loader.pin_memory if loader else True
    prefetch = loader.prefetch if loader else 2

    block = wf.parallel if isinstance(wf.parallel, ParallelBlock) else None
    parallel = wf.parallel if isinstance(wf.parallel, Parallelism) else Parallelism.DDP
    if block:
        parallel = block.strategy
    zero_stage = block.zero_stage if block and block.zero_stage is not None else None
    if zero_stage is None:
        zero_stage = 3 if parallel is Parallelism.FSDP else 0
    if block:
        _check_split_fields(block, m.experts, seq_len, source)
    if wf.checkpointed_layers is not None and wf.checkpointed_layers > (m.num_layers or 0):
        raise ValidationError(
            f"{source}: checkpointed_layers = {wf.checkpointed_layers} needs a model of that "
            f"many layers (num_layers {m.num_layers or 'not given'})",
            field="checkpointed_layers",
            reason="at most the model's num_layers",
            hint="give the model's num_layers, or leave checkpointed_layers out (every layer)",
        )
    if wf.selective_checkpointing and not (m.hidden_size and m.num_layers):
        raise ValidationError(
            f"{source}: selective_checkpointing keeps a transformer layer's matmul outputs, "
            "whose widths the model does not give",
            field="selective_checkpointing",
            reason="a model with hidden_size and num_layers",
            hint="give the model's widths, or use activation_checkpointing",
        )
    pipeline = block.pipeline if block else 1
    micro_batches = 1
    if pipeline > 1:
        micro_batches = block.micro_batches if block and block.micro_batches else 4 * pipeline
    method = wf.finetune.method if wf.finetune else FinetuneMethod.FULL
    fraction = 1.0
    if wf.finetune and wf.finetune.trainable_fraction is not None:
        fraction = wf.finetune.trainable_fraction
    elif method is not FinetuneMethod.FULL:
        fraction = 0.005
        assumed.append("LoRA trainable fraction not given: 0.5% of parameters assumed")
    adapter_precision = wf.finetune.adapter_precision if wf.finetune else None
    if method is not FinetuneMethod.FULL and adapter_precision is None:
        adapter_precision = "fp32"
        assumed.append(
            "LoRA adapter precision not given: fp32 assumed, peft's default (get_peft_model's "
            "autocast_adapter_dtype=True)"
        )

    if wf.kernels is KernelLibrary.UNSLOTH and wf.activation_checkpointing:
        assumed.append(
            "kernels unsloth: its gradient checkpointing copies each layer's saved input to "
            'host RAM (use_gradient_checkpointing="unsloth"); the memory estimate keeps '
            "them on the GPU, an over-estimate"
        )
    if wf.kernels is not KernelLibrary.EAGER and not (m.hidden_size and m.num_layers and seq_len):
        preset = preset_fields(wf.kernels, None, None)
        applied = sorted(k for k, v in preset.items() if v and getattr(wf, k) == v)
        assumed.append(
            f"kernels {wf.kernels.value}: counted per transformer layer; this model gives no "
            "hidden_size, num_layers and seq_len, so its layers are counted as eager and only "
            "the job fields the library sets apply"
            + (f" ({', '.join(applied)})" if applied else "")
        )
    elif wf.kernels is KernelLibrary.LIGER and not m.gated_mlp:
        assumed.append(
            "kernels liger: its RMSNorm, RoPE and SwiGLU kernels patch Llama-family models; "
            "this model's layers are counted as eager, only its loss is Liger's"
        )
    similar = None
    if wf.similar_to is not None:
        try:
            similar = _fitted_relative(wf.similar_to)
        except UnknownWorkloadError as exc:
            raise UnknownWorkloadError(
                f"{source}: field 'similar_to': {exc.message}",
                hint=exc.hint,
                field="similar_to",
                reason=exc.message,
            ) from None

    kind = m.kind
    if kind is WorkloadKind.OTHER and seq_len is not None and m.forward_flops_per_token:
        kind = WorkloadKind.LANGUAGE

    return Workload(
        name=wf.name or "unnamed workload",
        kind=kind,
        mode=wf.mode,
        params=m.params,
        forward_flops_per_sample=flops_per_sample,
        activation_bytes_per_sample=activation_bytes,
        input_bytes_per_sample=input_bytes,
        batch_size=batch_size,
        precision=precision,
        optimizer=optimizer,
        dataset=dataset,
        preprocessing_strategy=strategy,
        cpu_ms_per_sample=cpu_ms,
        offline_cpu_ms_per_sample=offline_ms,
        loader_workers=workers,
        pin_memory=pin,
        prefetch=prefetch,
        parallel=parallel,
        epochs=wf.epochs,
        tokens=wf.tokens,
        steps=wf.steps,
        seq_len=seq_len,
        hidden_size=m.hidden_size,
        num_layers=m.num_layers,
        kv_bytes_per_token=m.kv_bytes_per_token,
        num_heads=m.num_heads,
        kv_heads=m.kv_heads or m.num_heads,
        ffn_hidden_size=m.ffn_hidden_size,
        vocab_size=m.vocab_size,
        experts=m.experts,
        experts_per_token=m.experts_per_token,
        flash_attention=m.attention in ("flash", "cudnn"),
        native_attention=m.attention == "cudnn",
        strided_heads=m.attention == "eager_strided",
        gated_mlp=m.gated_mlp,
        hidden_act=m.hidden_act,
        dropout=m.dropout,
        tied_embeddings=m.tied_embeddings,
        memory_len=m.memory_len,
        encoder_layers=m.encoder_layers,
        encoder_seq_len=m.encoder_seq_len,
        parallel_fixed=wf.parallel is not None,
        zero_stage=zero_stage,
        tensor_parallel=block.tensor if block else 1,
        pipeline_parallel=pipeline,
        sequence_parallel=block.sequence if block else False,
        context_parallel=block.context if block else 1,
        expert_parallel=block.expert if block else 1,
        micro_batches=micro_batches,
        cpu_offload=block.cpu_offload if block else False,
        gradient_accumulation=wf.gradient_accumulation,
        activation_checkpointing=wf.activation_checkpointing,
        selective_checkpointing=wf.selective_checkpointing,
        checkpointed_layers=wf.checkpointed_layers,
        activation_offloading=wf.activation_offloading,
        channels_last=wf.memory_format == "channels_last",
        fused_loss=wf.fused_loss,
        fp32_loss=wf.loss_precision == "fp32",
        gradients_16bit=wf.gradient_precision == "16bit",
        loss_chunks=wf.loss_chunks,
        chunked_logits_kept=wf.chunked_logits_kept,
        logits_released=wf.logits_released,
        expanded_kv=wf.expanded_kv,
        fused_activation=wf.fused_activation,
        pure_16bit=wf.pure_16bit and precision in (Precision.FP16, Precision.BF16, Precision.FP8),
        fp8_params=wf.fp8_params,
        fp8_transpose_cache=wf.fp8_transpose_cache,
        optimizer_in_backward=wf.optimizer_in_backward,
        optimizer_step=wf.optimizer_step,
        paged_optimizer=wf.paged_optimizer,
        cuda_graphs=wf.cuda_graphs,
        kernels=wf.kernels,
        bias_epilogue=wf.bias_epilogue,
        unaligned_tensor_cores=wf.unaligned_tensor_cores,
        fused_norm_activation=wf.fused_norm_activation,
        finetune=method,
        trainable_fraction=fraction,
        fp32_adapters=method is not FinetuneMethod.FULL and adapter_precision == "fp32",
        adapter_autocast=wf.finetune.autocast if wf.finetune else True,
        adapter_dropout=wf.finetune.adapter_dropout if wf.finetune else 0.0,
        lora_targets=frozenset(wf.finetune.target_modules)
        if wf.finetune and wf.finetune.target_modules
        else ALL_LORA_TARGETS,
        weight_bits=4 if method is FinetuneMethod.QLORA else None,
        quantized_base=_quantized_base(method, wf.finetune),
        quant_group_size=(wf.finetune.group_size if wf.finetune else None) or 128,
        model_name=_zoo_name(model_ref) if isinstance(model_ref, str) else wf.name,
        similar_to=similar,
        serve=_serve_spec(wf.serve, m.params) if wf.serve else None,
        sources=tuple(wf.sources),
        notes=wf.notes,
        assumptions=tuple(assumed),
        source=source,
    )


def _check_split_fields(
    block: ParallelBlock, experts: int | None, seq_len: int | None, source: str
) -> None:
    """Context parallelism splits a sequence, expert parallelism a layer's experts: each
    needs the model to have what it splits."""
    if block.context > 1 and not (seq_len and seq_len % block.context == 0):
        raise ValidationError(
            f"{source}: parallel.context = {block.context} needs a seq_len it divides "
            f"(seq_len {seq_len or 'not given'})",
            field="parallel.context",
            reason="a divisor of the sequence length",
            hint="give seq_len, or set parallel.context to a divisor of it",
        )
    if block.expert > 1 and not (experts and experts % block.expert == 0):
        raise ValidationError(
            f"{source}: parallel.expert = {block.expert} needs a mixture of experts whose "
            f"expert count it divides (model experts: {experts or 'none'})",
            field="parallel.expert",
            reason="a divisor of the model's experts",
            hint="give the model's experts and experts_per_token, or set parallel.expert to 1",
        )


def _serve_spec(block: ServeBlock, params: float) -> ServeSpec:
    """The serving workload: the model block's parameters are the total held in memory."""
    return ServeSpec(
        total_params=params,
        active_params=min(block.active_params or params, params),
        layers=block.layers,
        hidden_size=block.hidden_size,
        heads=block.heads,
        kv_heads=block.kv_heads,
        head_dim=block.head_dim,
        vocab_size=block.vocab_size,
        tied_embeddings=block.tied_embeddings,
        experts=block.experts,
        experts_per_token=block.experts_per_token,
        kv_latent_dim=block.kv_latent_dim,
        quantization=block.quantization,
        kv_precision=block.kv_precision,
        prompt_tokens=block.prompt_tokens,
        output_tokens=block.output_tokens,
        # A batch sends every request at once: its requests are the users asking.
        users=block.requests or block.users,
        min_tokens_per_s_per_user=block.min_tokens_per_s_per_user,
        engine=block.engine,
        tensor_parallel=block.tensor_parallel,
        arrival_rate=block.arrival_rate,
        ttft_target_s=block.ttft_target_s,
        tpot_target_s=block.tpot_target_s,
        shared_prefix_tokens=block.shared_prefix_tokens,
        request_overhead_s=block.request_overhead_s,
        max_batch=block.max_batch,
        max_num_tokens=block.max_num_tokens,
        attention_data_parallel=block.attention_data_parallel,
        expert_layers=block.expert_layers,
        requests=block.requests,
        attention_chunk_tokens=block.attention_chunk_tokens,
        chunked_attention_layers=block.chunked_attention_layers,
    )


def workload_document(ref: str | Path) -> tuple[str, dict[str, Any]]:
    """(source, raw document) for a zoo name or a workload file path; `--set` edits this."""
    text = str(ref)
    if not text.strip():
        raise UnknownWorkloadError(
            "no workload given (an empty name)",
            hint="a zoo name (dlrig workloads lists them) or a workload file path",
        )
    looks_like_path = (
        text == "-"
        or text.endswith((".yaml", ".yml", ".toml", ".json"))
        or "/" in text
        or is_there(text)
    )
    if looks_like_path:
        return read_document(ref)
    zoo_document(text)  # raises UnknownWorkloadError with the closest names
    return f"zoo:{text}", {"model": text}


def load_workload(ref: str | Path) -> Workload:
    """A workload by zoo name ('resnet50', 'ResNet 50') or from a YAML/TOML/JSON file path."""
    source, doc = workload_document(ref)
    return resolve_workload(doc, source)


def _quantized_base(method: FinetuneMethod, block: FinetuneBlock | None) -> QuantizedBase | None:
    """QLoRA's base format: the block's `base_format`, else bitsandbytes NF4."""
    if method is not FinetuneMethod.QLORA:
        return None
    return QuantizedBase(block.base_format) if block and block.base_format else QuantizedBase.NF4
