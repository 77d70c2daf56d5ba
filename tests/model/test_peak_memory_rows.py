"""Published peak memory (bench/data/peak_memory.csv, read and predicted by
bench/bench_peak_memory.py): each row carries its source, and the job is predicted as it ran.
Every source but LitGPT's config hub table is calibration (bench/provenance.toml)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
for folder in ("scripts", "bench"):
    if str(REPO / folder) not in sys.path:
        sys.path.insert(0, str(REPO / folder))

import bench_peak_memory as pm  # noqa: E402
import provenance  # noqa: E402

from dlrig.model import memory  # noqa: E402
from dlrig.workloads import resolve_workload  # noqa: E402


def test_every_row_names_its_source_date_licence_and_measure() -> None:
    rows = pm.read_rows()
    assert len(rows) == 69
    assert {r.source for r in rows} == {
        "torchtune_memory",
        "fsdp_qlora_memory",
        "torchtitan_memory",
        "litgpt_memory",
        "litgpt_hub_memory",
    }
    for r in rows:
        assert r.job.url.startswith("https://github.com/") and r.job.date and r.licence
        assert r.measure in pm.MEASURES and r.peak_gib > 0
        assert provenance.sources()[r.source].kind == "memory"


def test_every_published_peak_source_but_litgpts_config_hub_is_calibration() -> None:
    """Constants were chosen with torchtune's peaks in view (torch.compile's saved tensors,
    the paged optimizer's managed state, activation offloading), the step's peak was kept
    in the version that did not move Answer.AI's peaks, printed beside them, from -9% to -23%,
    torchtitan's selective checkpointing was modelled after its peaks came out 48% over, and
    bitsandbytes' saved inputs after Lit-GPT's QLoRA peaks came out 21-24% under
    (bench/provenance.toml). LitGPT's 2024 config hub table was added after all of them and
    nothing was set on it: it stays held out."""
    assert not provenance.held_out(["fsdp_qlora_memory"])
    assert not provenance.held_out(["torchtune_memory"])
    assert not provenance.held_out(["torchtitan_memory"])
    assert not provenance.held_out(["litgpt_memory"])
    assert provenance.held_out(["litgpt_hub_memory"])


def test_a_paged_optimizers_state_is_not_in_the_allocators_peak() -> None:
    """torchtune's Llama 3.1 8B full fine-tune on one RTX 4090 (PagedAdamW8bit, the step in
    the backward, pure bf16): 18.9 GiB peak active. bitsandbytes keeps the 8-bit moments in
    managed memory, 2 B x 8.03e9 = 14.96 GiB that torch's figure never holds: dlrig's tensors
    without them, within 5% (calibration: this row was in view when the term was written)."""
    row = next(r for r in pm.read_rows()
               if r.job.model == "llama-3.1-8b" and r.job.finetune == "full"
               and r.job.gpu == "GeForce RTX 4090")  # fmt: skip
    assert row.peak_gib == 18.9 and row.job.paged_optimizer
    assert pm.predict(row).predicted_gib == pytest.approx(18.9, rel=0.05)


def _row(source: str, table_start: str, measure: str, seq: int) -> pm.MemoryRow:
    return next(
        r for r in pm.read_rows()
        if r.source == source and r.table.startswith(table_start) and r.measure == measure
        and r.job.seq_len == seq and r.job.finetune == "lora"
    )  # fmt: skip


def test_fsdp_lora_7b_allocated_peak() -> None:
    """Answer.AI's Llama-2 7B LoRA, FSDP over 2 RTX 3090, batch 1 at 2,048 tokens with
    checkpointing: 9.16 GiB peak allocated (benchmarks_03_2024.md, the note under its first
    table); dlrig 9.08 GiB, the live tensors' peak, within 5%."""
    p = pm.predict(_row("fsdp_qlora_memory", "NB", "allocated", 2048))
    assert p.row.peak_gib == 9.16
    assert p.predicted_gib == pytest.approx(9.16, rel=0.05)


def test_a_reserved_figure_is_compared_with_the_allocator_share() -> None:
    """The same job's peak reserved, 10.22 GiB, is set against dlrig's reserve: the tensors
    with the loss's and the recomputed layer's blocks both cached (the live peak holds one at a
    time), x 1.05 (the allocator share of calibration.toml). Llama-2 7B at 2,048 tokens: the
    head, 2048 x 32000 logits at 12 B (16-bit logits, fp32 log-softmax, their gradients), is
    larger than one recomputed layer with the 16-bit logits fsdp_qlora's loop holds, so the
    reserve adds that layer: 1.05 x (allocated + layer)."""
    reserved = pm.predict(_row("fsdp_qlora_memory", "Llama-2 7B with a batch", "reserved", 2048))
    allocated = pm.predict(_row("fsdp_qlora_memory", "NB", "allocated", 2048))
    row = allocated.row
    w = resolve_workload(pm.llm.workload_doc(row.job), "test")
    layer = (
        memory.transformer_layer_activation_bytes(
            2048,
            4096,
            32,
            selective_recompute=True,
            kv_heads=32,
            ffn_hidden_size=11008,
            gated_mlp=True,
            dropout=False,
            eager_rms_norm=True,
        )
        + 4 * 32 * 2048
    )  # flash attention's fp32 log-sum-exp per row and head
    assert w.num_layers == 32 and w.vocab_size == 32000 and w.kernels.value == "eager"
    assert reserved.predicted_gib == pytest.approx(
        (allocated.predicted_gib + layer / 2**30) * 1.05, rel=1e-6
    )


def test_a_row_with_an_unknown_measure_is_refused(tmp_path: Path) -> None:
    text = pm.DATA.read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join([text[0], text[1].replace(",reserved,", ",peak,")]) + "\n")
    with pytest.raises(ValueError, match=r"bad\.csv: measure 'peak'"):
        pm.read_rows(bad)


def _torchtune(model: str, finetune: str, gpu: str) -> pm.MemoryRow:
    return next(
        r for r in pm.read_rows()
        if r.job.model == model and r.job.finetune == finetune and r.job.gpu == gpu
    )  # fmt: skip


@pytest.mark.parametrize(
    ("finetune", "peak_gib", "bound"), [("full", 37.4, 0.15), ("lora", 30.3, 0.05)]
)
def test_torchtune_a6000_rows_ran_without_checkpointing(
    finetune: str, peak_gib: float, bound: float
) -> None:
    """torchtune's README @30b8519 ('Memory and training speed') gives Llama 3.1 8B on one RTX
    A6000 at 37.4 GiB (full) and 30.3 GiB (LoRA), twice its RTX 4090 peaks for the same batch,
    packing and compile, at 1.56x and 1.52x their tokens/s on a card with less tensor
    throughput: the work a token skips is the recompute (1/4 of a full step, 1/3 of a LoRA
    one), so the rows run with enable_activation_checkpointing off. dlrig: 32.1 GiB (-14%) and
    31.2 GiB (+3%)."""
    row = _torchtune("llama-3.1-8b", finetune, "NVIDIA RTX A6000")
    assert row.peak_gib == peak_gib and row.job.checkpointing == "false"
    assert pm.predict(row).predicted_gib == pytest.approx(peak_gib, rel=bound)


def test_torchtune_3b_qlora_is_its_states_and_its_logits() -> None:
    """torchtune's 'Optimization flags' QLoRA row (README @1814feb): Llama 3.2 3B at batch 2 x
    4,096 tokens, 4.6 GiB active. Its NF4 linears (1.35 GiB), tied bf16 embedding (0.73 GiB)
    and r64 adapters with their AdamW moments (0.5 GiB) hold 2.6 GiB, every chunk's bf16
    logits 1.96 GiB more: the peak is the loss's, the checkpointed layers offloaded and the
    recomputed one not yet made. dlrig 5.08 GiB, +10%."""
    row = _torchtune("llama-3.2-3b", "qlora", "A100 SXM4 80GB")
    assert row.peak_gib == 4.6
    assert pm.predict(row).predicted_gib == pytest.approx(4.6, rel=0.12)


def _litgpt(quantize: str) -> pm.MemoryRow:
    return next(
        r for r in pm.read_rows()
        if r.source == "litgpt_memory" and r.job.model == "llama-2-7b"
        and r.table.startswith(f"'Finetuning with LoRA on 1 GPU' ({quantize}, microbatch 1)")
    )  # fmt: skip


def test_litgpt_qlora_keeps_the_4bit_linears_inputs() -> None:
    """Lit-GPT's Llama 2 7B LoRA on one A100 40GB at 1,304 tokens (resource tables, 2023-10-20):
    21.30 GB allocated in bf16, 13.84 GB on a bnb.nf4-dq base. bitsandbytes' MatMul4Bit saves
    every 4-bit linear's input, which a frozen 16-bit linear does not: beside what LoRA on q
    and v keeps already (the attention input; the output projection's input is the attention
    kernel's saved output), the MLP's input and its down projection's, 32 layers x 1,304 tokens
    x (4,096 + 11,008) x 2 B = 1.17 GiB more. Calibration: the mechanism was looked for after
    the QLoRA rows came out 21-24% under; they are now 12.5-15.3% under."""
    lora, qlora = _litgpt("None"), _litgpt("bnb.nf4-dq")
    assert lora.peak_gib == pytest.approx(21.30e9 / 2**30, abs=1e-3)
    assert qlora.peak_gib == pytest.approx(13.84e9 / 2**30, abs=1e-3)
    assert pm.predict(qlora).predicted_gib == pytest.approx(qlora.peak_gib, rel=0.15)
    assert pm.predict(lora).predicted_gib == pytest.approx(lora.peak_gib, rel=0.07)


def test_litgpts_config_hub_lora_peaks_held_out_within_5_percent() -> None:
    """LitGPT's 2024 config hub (config_hub/finetune/README.md @00af8b0), held out: Llama 2 7B
    at micro-batch 2, Llama 3 and 3.1 8B at 1 and Mistral 7B v0.2 at 2, LoRA r32 on query and
    value at 512 tokens on one A10G, 19.77 / 19.73 / 19.73 / 20.66 GB allocated; dlrig within
    5% of each, below all four. (Its QLoRA rows, 13.68-17.41 GB, come out 23-25% under: what
    the 2024 stack adds is not known; see bench/results/peak_memory.md.)"""
    rows = [r for r in pm.read_rows()
            if r.source == "litgpt_hub_memory" and r.job.finetune == "lora"]  # fmt: skip
    assert [round(r.peak_gib * 2**30 / 1e9, 2) for r in rows] == [19.77, 19.73, 19.73, 20.66]
    for r in rows:
        assert -0.05 < pm.predict(r).error < 0.0
