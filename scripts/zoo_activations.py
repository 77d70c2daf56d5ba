"""Count zoo models' saved activations on the meta device (dlrig.torch.describe).

The zoo's `activation_bytes_per_sample` for ResNet-50 and ResNet-152 comes from here: the
networks are written out from their paper (He et al. 2015, "Deep Residual Learning", table 1:
bottleneck stages of 3, 4, 6, 3 and 3, 8, 36, 3 blocks; v1.5 strides the 3x3 convolution, as
NVIDIA's recipe and torchvision do) and run once on meta tensors in training mode, fp32, at
224 x 224. Each parameter count is checked against torchvision's published one (25,557,032 and
60,192,808) so that the module is the network the zoo names.

WaveGlow likewise (Prenger et al. 2018, "WaveGlow: A Flow-based Generative Network for Speech
Synthesis"; the defaults of NVIDIA's DeepLearningExamples recipe Lambda ran: 12 flows, groups
of 8 samples, 2 channels output early every 4 flows, WN of 8 dilated 3-tap layers of 512
channels, mel upsampled by a 1024/256 transposed convolution), trained on an 8000-sample
segment and its 80 x 32 mel, loss included. Its count checks against the zoo's 268,294,760:
the recipe's weight normalization adds one gain per output channel of the WN convolutions,
which the module here leaves out (the weights it recomputes each step are per batch, not per
sample).

Usage: .venv/bin/python scripts/zoo_activations.py
"""

from __future__ import annotations

import torch
from torch import nn

from dlrig.torch import describe

# pytorch.org/vision model cards (resnet50, resnet152); the zoo's WaveGlow count (Lambda's
# DeepLearningExamples model built from its defaults).
PUBLISHED_PARAMS = {"resnet50": 25_557_032, "resnet152": 60_192_808, "waveglow": 268_294_760}
STAGES = {"resnet50": (3, 4, 6, 3), "resnet152": (3, 8, 36, 3)}


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (strided in v1.5), 1x1 expand, each with batch norm; ReLU after each and
    after the residual sum; a 1x1 strided projection when the shape changes."""

    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        c_out = width * 4
        self.body = nn.Sequential(
            nn.Conv2d(c_in, width, 1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.Conv2d(width, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out)
            )
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.shortcut(x))


def resnet(stages: tuple[int, int, int, int], classes: int = 1000) -> nn.Module:
    """ResNet v1.5 with bottleneck blocks: a 7x7/2 stem, a 3x3/2 max pool, four stages of the
    given block counts, average pool and one linear classifier."""
    layers: list[nn.Module] = [
        nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, stride=2, padding=1),
    ]
    c_in = 64
    for width, blocks, stride in zip((64, 128, 256, 512), stages, (1, 2, 2, 2), strict=True):
        for i in range(blocks):
            layers.append(Bottleneck(c_in, width, stride if i == 0 else 1))
            c_in = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, classes)]
    return nn.Sequential(*layers)


class WaveNetLike(nn.Module):
    """WaveGlow's affine-coupling network: a 1x1 start, gated dilated layers (tanh x sigmoid of
    the audio and mel convolutions summed) with residual and skip 1x1 convolutions, a 1x1 end
    giving log-scale and shift."""

    def __init__(self, n_in: int, n_mel: int, layers: int = 8, channels: int = 512) -> None:
        super().__init__()
        self.channels = channels
        self.start = nn.Conv1d(n_in, channels, 1)
        self.end = nn.Conv1d(channels, 2 * n_in, 1)
        self.dilated = nn.ModuleList()
        self.cond = nn.ModuleList()
        self.res_skip = nn.ModuleList()
        for i in range(layers):
            d = 2**i
            self.dilated.append(nn.Conv1d(channels, 2 * channels, 3, dilation=d, padding=d))
            self.cond.append(nn.Conv1d(n_mel, 2 * channels, 1))
            out = 2 * channels if i < layers - 1 else channels
            self.res_skip.append(nn.Conv1d(channels, out, 1))

    def forward(self, audio: torch.Tensor, mel: torch.Tensor) -> torch.Tensor:
        audio = self.start(audio)
        skips = torch.zeros_like(audio)
        c = self.channels
        for dilated, cond, res_skip in zip(self.dilated, self.cond, self.res_skip, strict=True):
            z = dilated(audio) + cond(mel)
            out = res_skip(torch.tanh(z[:, :c]) * torch.sigmoid(z[:, c:]))
            if out.size(1) > c:
                audio = out[:, :c] + audio
            skips = skips + out[:, -c:]
        return self.end(skips)


class WaveGlow(nn.Module):
    """Flows of an invertible 1x1 convolution and an affine coupling over groups of 8 audio
    samples; 2 channels leave early every 4 flows; the loss is sum(z^2) - sum(log s) (the
    1x1 convolutions' log-determinants act on weights only)."""

    def __init__(self, n_mel: int = 80, flows: int = 12, group: int = 8) -> None:
        super().__init__()
        self.group, self.flows = group, flows
        self.upsample = nn.ConvTranspose1d(n_mel, n_mel, 1024, stride=256)
        self.mix = nn.ModuleList()
        self.coupling = nn.ModuleList()
        remaining = group
        for k in range(flows):
            if k % 4 == 0 and k > 0:
                remaining -= 2
            self.mix.append(nn.Conv1d(remaining, remaining, 1, bias=False))
            self.coupling.append(WaveNetLike(remaining // 2, n_mel * group))

    def forward(self, mel: torch.Tensor, audio: torch.Tensor) -> torch.Tensor:
        g = self.group
        mel = self.upsample(mel)[:, :, : audio.size(1)]
        mel = mel.unfold(2, g, g).permute(0, 2, 1, 3).contiguous()
        mel = mel.view(mel.size(0), mel.size(1), -1).permute(0, 2, 1)
        x = audio.unfold(1, g, g).permute(0, 2, 1)
        early: list[torch.Tensor] = []
        loss = torch.zeros(())
        for k in range(self.flows):
            if k % 4 == 0 and k > 0:
                early.append(x[:, :2])
                x = x[:, 2:]
            x = self.mix[k](x)
            half = x.size(1) // 2
            out = self.coupling[k](x[:, :half], mel)
            log_s = out[:, half:]
            x = torch.cat([x[:, :half], torch.exp(log_s) * x[:, half:] + out[:, :half]], 1)
            loss = loss - log_s.sum()
        z = torch.cat([*early, x], 1)
        return loss + (z * z).sum()


def weight_norm_gains(model: WaveGlow) -> int:
    """The per-output-channel gains weight normalization adds to the coupling convolutions."""
    return sum(
        conv.out_channels
        for net in model.coupling
        for conv in net.modules()
        if isinstance(conv, nn.Conv1d) and conv is not net.end
    )


def report(name: str, counted: dict[str, float], params: int) -> None:
    if params != PUBLISHED_PARAMS[name]:
        raise SystemExit(f"{name} has {params} params, not {PUBLISHED_PARAMS[name]}")
    print(
        f"{name} (fp32, train mode): params {params}, forward "
        f"{counted['forward_flops_per_sample'] / 1e9:.2f} GFLOPs/sample, saved activations "
        f"{counted['activation_bytes_per_sample'] / 1e6:.1f} MB/sample"
    )


def main() -> None:
    for name, stages in STAGES.items():
        counted = describe(resnet(stages).train(), torch.empty(8, 3, 224, 224))
        report(name, counted, int(counted["params"]))
    waveglow = WaveGlow().train()
    counted = describe(waveglow, (torch.empty(4, 80, 32), torch.empty(4, 8000)))
    report("waveglow", counted, int(counted["params"]) + weight_norm_gains(waveglow))


if __name__ == "__main__":
    main()
