"""Transformer activation memory from the structure: Korthikanti et al. 2022,
"Reducing Activation Recomputation in Large Transformer Models" (arXiv:2205.05198), sec. 4."""

from __future__ import annotations

import pytest

from dlrig.model.memory import transformer_layer_activation_bytes


def test_korthikanti_gpt3_175b_layer() -> None:
    """Worked config: GPT-3 175B (s = 2048, h = 12288, a = 96, the paper's Table 3).
    Eq. 1: s b h (34 + 5 a s / h) = 2048 x 12288 x (34 + 80) = 2,868,903,936 B per sample."""
    assert transformer_layer_activation_bytes(2048, 12288, 96) == 2048 * 12288 * 114
    assert transformer_layer_activation_bytes(2048, 12288, 96) == pytest.approx(2.869e9, rel=1e-3)


def test_korthikanti_tensor_sequence_parallel_and_selective_recompute() -> None:
    """Eq. 2: tensor parallel t: s b h (10 + 24/t + 5 a s / (h t)); eq. 4: with sequence
    parallelism s b h / t (34 + 5 a s / h); selective recompute: 34 s b h / t."""
    s, h, a, t = 2048, 12288, 96, 8
    sbh = s * h
    assert transformer_layer_activation_bytes(s, h, a, t) == pytest.approx(
        sbh * (10 + 24 / t + 5 * a * s / (h * t))
    )
    assert transformer_layer_activation_bytes(s, h, a, t, sequence_parallel=True) == (
        pytest.approx(sbh / t * (34 + 5 * a * s / h))
    )
    full = transformer_layer_activation_bytes(s, h, a, t, True, selective_recompute=True)
    assert full == pytest.approx(34 * sbh / t)


def test_bert_base_squad_needs_far_less_than_the_zoo_figure() -> None:
    """BERT-base at s = 384 (h = 768, 12 heads, 12 layers): 384 x 768 x (34 + 30) x 12 =
    226.5 MB per sample at 16-bit, against the zoo's Lambda-implied 800 MB fp32 halved to
    400 MB (issue 10: BERT at 1.75x its real need). Lambda 2024 ran it at batch 192 on a
    48 GB Quadro RTX 8000 (lambda_pytorch_train_v1_2024.csv): 192 x 226.5 MB = 43.5 GB fits."""
    per_sample = 12 * transformer_layer_activation_bytes(384, 768, 12)
    assert per_sample == 12 * 384 * 768 * 64
    assert per_sample * 192 < 48e9 - 2e9
    assert 400e6 / per_sample == pytest.approx(1.77, abs=0.01)
