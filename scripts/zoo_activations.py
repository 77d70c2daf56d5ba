"""Count a zoo convnet's saved activations on the meta device (dlrig.torch.describe).

The zoo's `activation_bytes_per_sample` for ResNet-50 and ResNet-152 comes from here: the
networks are written out from their paper (He et al. 2015, "Deep Residual Learning", table 1:
bottleneck stages of 3, 4, 6, 3 and 3, 8, 36, 3 blocks; v1.5 strides the 3x3 convolution, as
NVIDIA's recipe and torchvision do) and run once on meta tensors in training mode, fp32, at
224 x 224. Each parameter count is checked against torchvision's published one (25,557,032 and
60,192,808) so that the module is the network the zoo names.

Usage: .venv/bin/python scripts/zoo_activations.py
"""

from __future__ import annotations

import torch
from torch import nn

from dlrig.torch import describe

# pytorch.org/vision model cards: resnet50 and resnet152 parameter counts.
PUBLISHED_PARAMS = {"resnet50": 25_557_032, "resnet152": 60_192_808}
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


def main() -> None:
    for name, stages in STAGES.items():
        counted = describe(resnet(stages).train(), torch.empty(8, 3, 224, 224))
        if counted["params"] != PUBLISHED_PARAMS[name]:
            raise SystemExit(f"{name} has {counted['params']} params, not {PUBLISHED_PARAMS[name]}")
        print(
            f"{name} (fp32, 224x224, train mode): params {counted['params']}, forward "
            f"{counted['forward_flops_per_sample'] / 1e9:.2f} GFLOPs/sample, saved activations "
            f"{counted['activation_bytes_per_sample'] / 1e6:.1f} MB/sample"
        )


if __name__ == "__main__":
    main()
