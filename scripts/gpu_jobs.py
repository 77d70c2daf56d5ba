"""Real training jobs on a lent GPU, timed, to hold dlrig's estimates against (scripts/gpu-check).

    python scripts/gpu_jobs.py --out jobs.json [--only resnet50,gpt2]

Each job builds the real network (torchvision, transformers, peft: present on the lent machine,
not dlrig dependencies) with random weights and synthetic data on the GPU, so the step time is
the GPU's alone, at the batch, precision and settings of the dlrig zoo entry it stands for. Each
step is timed between two `torch.cuda.synchronize()` calls after warm-up steps. One job feeds
its batches through a DataLoader timed by `dlrig.torch.StepTimer` (the in-process path), and
`dlrig.torch.describe` counts two networks on the meta device (the zoo's counts, checked).
A failing job is recorded with its error and the others still run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import socket
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

Step = Callable[[], None]


def timed(step: Step, warmup: int, steps: int) -> dict[str, Any]:
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    ordered = sorted(times)
    return {
        "warmup_steps": warmup,
        "step_s": [round(t, 6) for t in times],
        "median_step_s": ordered[len(ordered) // 2],
        "peak_allocated_gb": torch.cuda.max_memory_allocated() / 1e9,
        "peak_reserved_gb": torch.cuda.max_memory_reserved() / 1e9,
        "saved_for_backward_gb": saved_for_backward_bytes(step) / 1e9,
        "profile": profiled(step, 3),
    }


def saved_for_backward_bytes(step: Step) -> float:
    """Bytes of the distinct storages autograd saves for the backward in one step, parameters
    left out (autocast's 16-bit weight copies count): the activation memory the model
    estimates, measured (torch.autograd.graph.saved_tensors_hooks)."""
    storages: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        if not isinstance(tensor, torch.nn.Parameter):
            storage = tensor.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        step()
    torch.cuda.synchronize()
    return float(sum(storages.values()))


# Kernel names by layer class (cuBLAS on Hopper names its GEMMs nvjet_*, CUTLASS sm90_xmma_*).
KERNEL_CLASSES = (
    ("attention", re.compile(r"flash|fmha|attention|efficient_attention", re.I)),
    ("conv", re.compile(r"conv|fprop|dgrad|wgrad|cudnn", re.I)),
    ("gemm", re.compile(r"gemm|nvjet|xmma|cutlass|matmul", re.I)),
    ("optimizer", re.compile(r"multi_tensor|adam|sgd", re.I)),
)


def kernel_class(name: str) -> str:
    return next((label for label, pattern in KERNEL_CLASSES if pattern.search(name)), "other")


def profiled(step: Step, steps: int) -> dict[str, Any]:
    """`steps` steps under torch.profiler: kernels per step, GPU-busy share of the wall time
    (the union of kernel intervals: what launch overhead leaves idle), seconds by class and by
    kernel name (every kernel, the largest first)."""
    from torch.profiler import ProfilerActivity, profile

    trace = Path(tempfile.mkdtemp()) / "trace.json"
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        wall_s = time.perf_counter() - start
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text())["traceEvents"]
    trace.unlink()
    kernels = [e for e in events if e.get("cat") == "kernel"]
    launches = sum(
        1 for e in events if e.get("cat") == "cuda_runtime" and "Launch" in e.get("name", "")
    )
    by_class: dict[str, float] = {}
    by_name: dict[str, list[float]] = {}
    for k in kernels:
        by_class[kernel_class(k["name"])] = by_class.get(kernel_class(k["name"]), 0.0) + k["dur"]
        by_name.setdefault(k["name"], []).append(k["dur"])
    busy_us, end_us = 0.0, -1.0
    for k in sorted(kernels, key=lambda e: e["ts"]):
        begin, finish = k["ts"], k["ts"] + k["dur"]
        busy_us += max(0.0, finish - max(begin, end_us))
        end_us = max(end_us, finish)
    top = sorted(by_name.items(), key=lambda item: -sum(item[1]))
    return {
        "steps": steps,
        "wall_s_per_step": wall_s / steps,
        "kernels_per_step": len(kernels) / steps,
        "launch_calls_per_step": launches / steps,
        "gpu_busy_s_per_step": busy_us / 1e6 / steps,
        "kernel_s_per_step_by_class": {c: t / 1e6 / steps for c, t in sorted(by_class.items())},
        "kernels": [
            {
                "name": n[:120],
                "class": kernel_class(n),
                "calls_per_step": len(d) / steps,
                "s_per_step": sum(d) / 1e6 / steps,
            }
            for n, d in top
        ],
    }


def vision_step(model: torch.nn.Module, batch: int, side: int, precision: torch.dtype) -> Step:
    """SGD with momentum, autocast with a gradient scaler, channels_last (NVIDIA DLE's recipe)."""
    model = model.cuda().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=precision == torch.float16)
    images = torch.randn(batch, 3, side, side, device="cuda").to(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (batch,), device="cuda")

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=precision):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    return step


def hf_step(
    model: torch.nn.Module, inputs: dict[str, torch.Tensor], precision: torch.dtype, autocast: bool
) -> Step:
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-5, fused=True)
    scaler = torch.amp.GradScaler("cuda", enabled=autocast and precision == torch.float16)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=precision, enabled=autocast):
            out = model(**inputs)
        scaler.scale(out.loss).backward()
        scaler.step(optimizer)
        scaler.update()

    return step


def torchvision_job(
    zoo: str, network: str, settings: str, warmup: int, steps: int, batch: int = 256
) -> dict[str, Any]:
    """A torchvision network at `batch` (256 unless told), 224 x 224, fp16 autocast
    (vision_step)."""
    import torchvision

    step = vision_step(getattr(torchvision.models, network)(), batch, 224, torch.float16)
    return {
        "zoo": zoo,
        "batch": batch,
        "precision": "fp16 (autocast, GradScaler)",
        "settings": f"torchvision {network}, {settings}",
        **timed(step, warmup, steps),
    }


def tokens(batch: int, seq: int, vocab: int) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), device="cuda")


def bert_large_squad(attention: str = "sdpa", batch: int = 32) -> dict[str, Any]:
    from transformers import BertConfig, BertForQuestionAnswering

    config = BertConfig(
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
        attn_implementation=attention,
    )
    model = BertForQuestionAnswering(config).cuda()
    ids = tokens(batch, 384, config.vocab_size)
    inputs = {
        "input_ids": ids,
        "start_positions": torch.zeros(batch, dtype=torch.long, device="cuda"),
        "end_positions": torch.ones(batch, dtype=torch.long, device="cuda"),
    }
    step = hf_step(model, inputs, torch.float16, autocast=True)
    return {
        "zoo": "bert-large-squad",
        "batch": batch,
        "seq_len": 384,
        "precision": "fp16 (autocast, GradScaler)",
        "settings": f"transformers BERT-large, {attention} attention, fused AdamW, fp32 weights",
        **timed(step, 5, 15),
    }


def gpt2(dropout: float = 0.1) -> dict[str, Any]:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        n_positions=1024,
        attn_implementation="sdpa",
        resid_pdrop=dropout,
        embd_pdrop=dropout,
        attn_pdrop=dropout,
    )
    model = GPT2LMHeadModel(config).cuda()
    ids = tokens(12, 1024, config.vocab_size)
    step = hf_step(model, {"input_ids": ids, "labels": ids}, torch.bfloat16, autocast=True)
    return {
        "zoo": "gpt2",
        "batch": 12,
        "seq_len": 1024,
        "precision": "bf16 (autocast)",
        "settings": f"transformers GPT-2 124M, SDPA attention, dropout {dropout}, fused AdamW, "
        "fp32 weights",
        **timed(step, 5, 15),
    }


LLAMA_3_8B = {
    "vocab_size": 128256,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 8192,
    "rope_theta": 500000.0,
}
LLAMA_3_2_1B = {
    **LLAMA_3_8B,
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_key_value_heads": 8,
    "tie_word_embeddings": True,
}
QWEN2_5_7B = {
    "vocab_size": 152064,
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def decoder_lm(
    zoo: str,
    shape: dict[str, Any],
    batch: int,
    *,
    lora: bool,
    checkpointing: bool,
    qwen: bool = False,
    fp32_adapters: bool = True,
) -> dict[str, Any]:
    """A Llama-shaped (or Qwen2) causal LM of random weights: LoRA r=16 on all 7 projections
    over frozen bf16 weights, or full fine-tuning of fp32 weights under bf16 autocast."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    config = (Qwen2Config if qwen else LlamaConfig)(**shape, attn_implementation="sdpa")
    architecture = Qwen2ForCausalLM if qwen else LlamaForCausalLM
    torch.set_default_dtype(torch.bfloat16 if lora else torch.float32)
    try:
        with torch.device("cuda"):
            model = architecture(config)
    finally:
        torch.set_default_dtype(torch.float32)
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    if lora:
        from peft import LoraConfig, get_peft_model

        lora_config = LoraConfig(r=16, lora_alpha=32, target_modules=LORA_TARGETS)
        model = get_peft_model(model, lora_config, autocast_adapter_dtype=fp32_adapters)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    ids = tokens(batch, 2048, config.vocab_size)
    step = hf_step(model, {"input_ids": ids, "labels": ids}, torch.bfloat16, autocast=not lora)
    adapters = "fp32 adapters (peft's default)" if fp32_adapters else "bf16 adapters"
    method = (
        f"peft LoRA r=16 on all 7 projections, bf16 weights, {adapters}"
        if lora
        else ("full fine-tuning, fp32 weights under bf16 autocast")
    )
    return {
        "zoo": zoo,
        "batch": batch,
        "seq_len": 2048,
        "precision": "bf16",
        "trainable_params": trainable,
        "activation_checkpointing": checkpointing,
        "settings": f"transformers {architecture.__name__}, {method}, "
        f"{'gradient checkpointing (non-reentrant), ' if checkpointing else ''}"
        "SDPA attention, fused AdamW",
        **timed(step, 3, 8),
    }


LLAMA_3_70B_8_LAYERS = {
    **LLAMA_3_8B,
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_hidden_layers": 8,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
}
"""Llama 3 70B's layer shape with 8 of its 80 layers: one H100 holds it in bf16 before it is
quantised, and the step grows by layer, so its time per layer is the 70B job's."""


def quantized_4bit(model: torch.nn.Module) -> torch.nn.Module:
    """Every linear layer but the LM head as bitsandbytes NF4 (what `load_in_4bit` with
    `bnb_4bit_quant_type="nf4"` and a bf16 compute dtype loads), quantised on the GPU."""
    import bitsandbytes as bnb

    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if not isinstance(child, torch.nn.Linear) or name == "lm_head":
                continue
            layer = bnb.nn.Linear4bit(
                child.in_features,
                child.out_features,
                bias=child.bias is not None,
                compute_dtype=torch.bfloat16,
                quant_type="nf4",
                compress_statistics=False,
                device="cpu",
            )
            layer.weight = bnb.nn.Params4bit(
                child.weight.data.to("cpu"),
                requires_grad=False,
                quant_type="nf4",
                compress_statistics=False,
            )
            setattr(parent, name, layer.to("cuda"))
            del child
    torch.cuda.empty_cache()
    return model


def decoder_qlora(zoo: str, shape: dict[str, Any], batch: int, seq: int = 2048) -> dict[str, Any]:
    """QLoRA as the peft/bitsandbytes recipe runs it: NF4 base weights (bf16 compute), peft's
    prepare_model_for_kbit_training (fp32 norms and LM head, gradient checkpointing), LoRA r=16
    on all 7 projections, bf16 autocast, fused AdamW on the adapters."""
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**shape, attn_implementation="sdpa")
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(torch.float32)
    model = quantized_4bit(model)
    model.is_loaded_in_4bit = True
    model = prepare_model_for_kbit_training(
        model,
        use_gradient_checkpointing=True,
        gradient_checkpointing_kwargs={"use_reentrant": False},
    )
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=LORA_TARGETS))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    ids = tokens(batch, seq, config.vocab_size)
    step = hf_step(model, {"input_ids": ids, "labels": ids}, torch.bfloat16, autocast=True)
    import bitsandbytes as bnb

    return {
        "zoo": zoo,
        "batch": batch,
        "seq_len": seq,
        "num_layers": shape["num_hidden_layers"],
        "precision": "bf16 (autocast) over NF4 weights",
        "trainable_params": trainable,
        "activation_checkpointing": True,
        "settings": f"transformers LlamaForCausalLM, bitsandbytes {bnb.__version__} NF4 "
        "(bf16 compute, no double quantisation), peft prepare_model_for_kbit_training, LoRA "
        "r=16 on all 7 projections, gradient checkpointing (non-reentrant), SDPA attention, "
        "fused AdamW",
        **timed(step, 2, 6),
    }


def resnet50_through_steptimer() -> dict[str, Any]:
    """ResNet-50 fed by a DataLoader of pinned CPU batches, timed by dlrig.torch.StepTimer."""
    import torchvision
    from torch.utils.data import DataLoader, TensorDataset

    from dlrig.torch import StepTimer

    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    data = TensorDataset(torch.randn(2048, 3, 224, 224), torch.randint(0, 1000, (2048,)))
    loader = DataLoader(data, batch_size=128, num_workers=4, pin_memory=True)
    timer = StepTimer("cuda")
    for images, labels in timer.loader(loader):
        with timer.h2d():
            images = images.cuda(non_blocking=True).to(memory_format=torch.channels_last)
            labels = labels.cuda(non_blocking=True)
        with timer.step():
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.cross_entropy(model(images), labels)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    report = timer.report()
    return {"report": report.to_dict(), "text": str(report)}


def described() -> dict[str, Any]:
    """dlrig.torch.describe on real networks: the zoo's parameter and FLOP counts, checked."""
    import torchvision
    from transformers import GPT2Config, GPT2LMHeadModel

    from dlrig.torch import describe

    conv = describe(torchvision.models.resnet50(), torch.randn(1, 3, 224, 224))
    lm = describe(GPT2LMHeadModel(GPT2Config()), torch.randint(0, 50257, (1, 1024)))
    return {"resnet50": _jsonable(conv), "gpt2": _jsonable(lm)}


def batch_sweep(job: Callable[[int], dict[str, Any]], batches: list[int]) -> dict[str, Any]:
    """One job at several batches: how the step grows from the kernels' fixed cost (host
    dispatch, launch, ramp) at a small batch to the FLOPs and bytes at a large one. Each batch
    keeps its step times and profile summary, not the per-kernel list."""
    runs = []
    for batch in batches:
        run = job(batch)
        run["profile"] = {k: v for k, v in run["profile"].items() if k != "kernels"}
        runs.append(run)
        torch.cuda.empty_cache()
    return {"zoo": runs[0]["zoo"], "settings": runs[0]["settings"], "runs": runs}


def _jsonable(value: Any) -> Any:
    from dlrig.jsonable import to_jsonable

    return to_jsonable(value)


JOBS: dict[str, Callable[[], dict[str, Any]]] = {
    "resnet50": lambda: torchvision_job(
        "resnet50", "resnet50", "channels_last, SGD momentum, cudnn.benchmark", 8, 20
    ),
    "vit-b16": lambda: torchvision_job(
        "vit-b16", "vit_b_16", "SDPA attention, channels_last, SGD momentum", 5, 15
    ),
    "bert-large-squad": bert_large_squad,
    "bert-large-squad-eager": lambda: bert_large_squad("eager"),
    "gpt2": gpt2,
    "gpt2-no-dropout": lambda: gpt2(0.0),
    "llama-3-8b-lora": lambda: decoder_lm(
        "llama-3-8b-lora", LLAMA_3_8B, 2, lora=True, checkpointing=True
    ),
    "llama-3-8b-lora-b4-no-checkpointing": lambda: decoder_lm(
        "llama-3-8b-lora", LLAMA_3_8B, 4, lora=True, checkpointing=False
    ),
    "llama-3-8b-lora-b1": lambda: decoder_lm(
        "llama-3-8b-lora", LLAMA_3_8B, 1, lora=True, checkpointing=True
    ),
    "llama-3-8b-lora-bf16-adapters": lambda: decoder_lm(
        "llama-3-8b-lora", LLAMA_3_8B, 2, lora=True, checkpointing=True, fp32_adapters=False
    ),
    "qwen2.5-7b-lora-b4-no-checkpointing": lambda: decoder_lm(
        "qwen2.5-7b-lora", QWEN2_5_7B, 4, lora=True, checkpointing=False, qwen=True
    ),
    "qwen2.5-7b-lora": lambda: decoder_lm(
        "qwen2.5-7b-lora", QWEN2_5_7B, 2, lora=True, checkpointing=True, qwen=True
    ),
    "llama-3-8b-qlora": lambda: decoder_qlora("llama-3-8b-qlora", LLAMA_3_8B, 2),
    "llama-3-8b-qlora-b4": lambda: decoder_qlora("llama-3-8b-qlora", LLAMA_3_8B, 4),
    "llama-3-70b-qlora-8-layers": lambda: decoder_qlora(
        "llama-3-70b-qlora", LLAMA_3_70B_8_LAYERS, 1
    ),
    "llama-3.2-1b-full": lambda: decoder_lm(
        "llama-3.2-1b (full)", LLAMA_3_2_1B, 8, lora=False, checkpointing=False
    ),
    "resnet50-batches": lambda: batch_sweep(
        lambda b: torchvision_job(
            "resnet50", "resnet50", "channels_last, SGD momentum, cudnn.benchmark", 8, 20, b
        ),
        [8, 32, 64, 128],
    ),
    "bert-large-squad-batches": lambda: batch_sweep(
        lambda b: bert_large_squad("sdpa", b), [1, 4, 8, 16]
    ),
    "steptimer": resnet50_through_steptimer,
    "describe": described,
}


def device_facts() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    return {
        "name": props.name,
        "multiprocessors": props.multi_processor_count,
        "memory_gb": props.total_memory / 1e9,
        "l2_cache_mb": getattr(props, "L2_cache_size", 0) / 2**20,
        "capability": f"{props.major}.{props.minor}",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", default="", help="comma-separated job names")
    parser.add_argument("--skip", default="", help="comma-separated job names not to run")
    args = parser.parse_args()
    skipped = {n for n in args.skip.split(",") if n}
    names = [n for n in ([n for n in args.only.split(",") if n] or list(JOBS)) if n not in skipped]
    torch.backends.cudnn.benchmark = True
    doc: dict[str, Any] = {
        "provenance": f"measured by dlrig scripts/gpu_jobs.py on {socket.gethostname()} at "
        f"{dt.datetime.now(dt.UTC).isoformat()}",
        "device": device_facts(),
        "jobs": {},
    }
    for name in names:
        start = time.perf_counter()
        try:
            doc["jobs"][name] = JOBS[name]()
        except Exception as exc:  # a diagnostic run: keep the error, run the next job
            doc["jobs"][name] = {"error": repr(exc), "trace": traceback.format_exc()}
        doc["jobs"][name]["wall_s"] = round(time.perf_counter() - start, 2)
        torch.cuda.empty_cache()
        args.out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
        print(
            name,
            {
                k: v
                for k, v in doc["jobs"][name].items()
                if k in ("median_step_s", "peak_allocated_gb", "error", "wall_s")
            },
            flush=True,
        )


if __name__ == "__main__":
    main()
