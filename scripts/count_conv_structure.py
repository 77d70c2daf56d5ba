"""Count the convolution facts of dlrig.model.layers.CLASSIC_STRUCTURE from the layer shapes.

    .venv/bin/python scripts/count_conv_structure.py

For ResNet-50 and ResNet-152 v1.5 at 224 x 224 (torchvision: the stride on the bottleneck's 3x3)
and NVIDIA DLE SSD300 (PyTorch/Detection/SSD ssd/model.py: ResNet-50 up to layer3 with
layer3's strides set to 1, so it runs at 38 x 38; extra blocks [1024, 512, 512, 256, 256,
256] through 1x1 bottlenecks [256, 256, 128, 128, 128], the first three 3x3s stride 2 and
padded, the last two unpadded; loc and conf 3x3 heads with [4, 6, 6, 6, 4, 4] default boxes
and 81 classes), prints the forward FLOPs (2 x multiply-adds), the FLOP-weighted harmonic
width (a conv of c_in -> c_out with a k x k kernel moves 2 k^2 c_in c_out / (c_in + c_out)
FLOPs per operand element) and the share of FLOPs in 3x3 stride-1 convolutions (Winograd-
eligible).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Conv:
    c_in: int
    c_out: int
    kernel: int
    out_size: int  # output height = width
    stride1: bool = True

    @property
    def flops(self) -> float:
        return 2.0 * self.c_in * self.c_out * self.kernel**2 * self.out_size**2

    @property
    def width(self) -> float:
        return 2.0 * self.kernel**2 * self.c_in * self.c_out / (self.c_in + self.c_out)


def bottlenecks(c_in: int, mid: int, out: int, blocks: int, size: int, in_size: int) -> list[Conv]:
    """One ResNet v1.5 stage: the first block's 1x1 runs at the input size, its 3x3 strides."""
    convs: list[Conv] = []
    for i in range(blocks):
        first = i == 0
        convs.append(Conv(c_in if first else out, mid, 1, in_size if first else size))
        convs.append(Conv(mid, mid, 3, size, stride1=not (first and in_size != size)))
        convs.append(Conv(mid, out, 1, size))
        if first:
            convs.append(Conv(c_in, out, 1, size, stride1=False))
    return convs


def resnet(blocks: tuple[int, int, int, int]) -> list[Conv]:
    """ResNet-50 (3, 4, 6, 3) or ResNet-152 (3, 8, 36, 3) at 224 x 224."""
    convs = [Conv(3, 64, 7, 112, stride1=False)]
    convs += bottlenecks(64, 64, 256, blocks[0], 56, 56)
    convs += bottlenecks(256, 128, 512, blocks[1], 28, 56)
    convs += bottlenecks(512, 256, 1024, blocks[2], 14, 28)
    convs += bottlenecks(1024, 512, 2048, blocks[3], 7, 14)
    return convs


def ssd300() -> list[Conv]:
    convs = [Conv(3, 64, 7, 150, stride1=False)]
    convs += bottlenecks(64, 64, 256, 3, 75, 75)
    convs += bottlenecks(256, 128, 512, 4, 38, 75)
    convs += bottlenecks(512, 256, 1024, 6, 38, 38)
    channels = [1024, 512, 512, 256, 256, 256]
    mids = [256, 256, 128, 128, 128]
    sizes = [38, 19, 10, 5, 3, 1]
    for i, mid in enumerate(mids):
        convs.append(Conv(channels[i], mid, 1, sizes[i]))
        convs.append(Conv(mid, channels[i + 1], 3, sizes[i + 1], stride1=i >= 3))
    for c, boxes, size in zip(channels, [4, 6, 6, 6, 4, 4], sizes, strict=True):
        convs.append(Conv(c, boxes * 4, 3, size))
        convs.append(Conv(c, boxes * 81, 3, size))
    return convs


def main() -> None:
    models = {"resnet50": resnet((3, 4, 6, 3)), "resnet152": resnet((3, 8, 36, 3))}
    models["ssd300"] = ssd300()
    for name, convs in models.items():
        flops = sum(c.flops for c in convs)
        width = flops / sum(c.flops / c.width for c in convs)
        winograd = sum(c.flops for c in convs if c.kernel == 3 and c.stride1) / flops
        print(f"{name}: {flops / 1e9:.2f} GFLOPs forward, harmonic width {width:.0f}, "
              f"3x3 stride-1 share {winograd:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
