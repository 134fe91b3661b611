"""Inception v3 (Szegedy et al. 2015) as torchvision defines it, without the auxiliary classifier (whose output
would not be a plain tensor; the registry's parameter count leaves it out too), module names as torchvision's.
Weights keep PyTorch's default initialisation (torchvision's init_weights=False), which is quick."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Conv(nn.Module):
    """Convolution without bias, batch norm (eps 0.001, as the TensorFlow original), ReLU."""

    def __init__(self, in_channels: int, out_channels: int, kernel, stride=1, padding=0):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel, stride=stride, padding=padding, bias=False)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)), inplace=True)


def _chain(module: nn.Module, names, x):
    for name in names:
        x = getattr(module, name)(x)
    return x


def _avg_pool_same(x):
    return F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)


class BlockA(nn.Module):
    """35x35: 1x1, 5x5, double 3x3 and pooled branches."""

    def __init__(self, in_channels: int, pool_features: int):
        super().__init__()
        self.branch1x1 = Conv(in_channels, 64, 1)
        self.branch5x5_1, self.branch5x5_2 = Conv(in_channels, 48, 1), Conv(48, 64, 5, padding=2)
        self.branch3x3dbl_1 = Conv(in_channels, 64, 1)
        self.branch3x3dbl_2, self.branch3x3dbl_3 = Conv(64, 96, 3, padding=1), Conv(96, 96, 3, padding=1)
        self.branch_pool = Conv(in_channels, pool_features, 1)

    def forward(self, x):
        return torch.cat(
            [
                self.branch1x1(x),
                _chain(self, ("branch5x5_1", "branch5x5_2"), x),
                _chain(self, ("branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3"), x),
                self.branch_pool(_avg_pool_same(x)),
            ],
            1,
        )


class ReductionB(nn.Module):
    """35x35 -> 17x17."""

    def __init__(self, in_channels: int):
        super().__init__()
        self.branch3x3 = Conv(in_channels, 384, 3, stride=2)
        self.branch3x3dbl_1 = Conv(in_channels, 64, 1)
        self.branch3x3dbl_2, self.branch3x3dbl_3 = Conv(64, 96, 3, padding=1), Conv(96, 96, 3, stride=2)

    def forward(self, x):
        return torch.cat(
            [
                self.branch3x3(x),
                _chain(self, ("branch3x3dbl_1", "branch3x3dbl_2", "branch3x3dbl_3"), x),
                F.max_pool2d(x, kernel_size=3, stride=2),
            ],
            1,
        )


class BlockC(nn.Module):
    """17x17: 7x7 convolutions factorised into 1x7 and 7x1."""

    def __init__(self, in_channels: int, c7: int):
        super().__init__()
        row, column = dict(kernel=(1, 7), padding=(0, 3)), dict(kernel=(7, 1), padding=(3, 0))
        self.branch1x1 = Conv(in_channels, 192, 1)
        self.branch7x7_1, self.branch7x7_2 = Conv(in_channels, c7, 1), Conv(c7, c7, **row)
        self.branch7x7_3 = Conv(c7, 192, **column)
        self.branch7x7dbl_1, self.branch7x7dbl_2 = Conv(in_channels, c7, 1), Conv(c7, c7, **column)
        self.branch7x7dbl_3, self.branch7x7dbl_4 = Conv(c7, c7, **row), Conv(c7, c7, **column)
        self.branch7x7dbl_5 = Conv(c7, 192, **row)
        self.branch_pool = Conv(in_channels, 192, 1)

    def forward(self, x):
        double = [f"branch7x7dbl_{index}" for index in range(1, 6)]
        return torch.cat(
            [
                self.branch1x1(x),
                _chain(self, ("branch7x7_1", "branch7x7_2", "branch7x7_3"), x),
                _chain(self, double, x),
                self.branch_pool(_avg_pool_same(x)),
            ],
            1,
        )


class ReductionD(nn.Module):
    """17x17 -> 8x8."""

    def __init__(self, in_channels: int):
        super().__init__()
        self.branch3x3_1, self.branch3x3_2 = Conv(in_channels, 192, 1), Conv(192, 320, 3, stride=2)
        self.branch7x7x3_1 = Conv(in_channels, 192, 1)
        self.branch7x7x3_2 = Conv(192, 192, (1, 7), padding=(0, 3))
        self.branch7x7x3_3 = Conv(192, 192, (7, 1), padding=(3, 0))
        self.branch7x7x3_4 = Conv(192, 192, 3, stride=2)

    def forward(self, x):
        seven = [f"branch7x7x3_{index}" for index in range(1, 5)]
        return torch.cat(
            [
                _chain(self, ("branch3x3_1", "branch3x3_2"), x),
                _chain(self, seven, x),
                F.max_pool2d(x, kernel_size=3, stride=2),
            ],
            1,
        )


class BlockE(nn.Module):
    """8x8: 3x3 convolutions split into parallel 1x3 and 3x1 ones, whose outputs are concatenated."""

    def __init__(self, in_channels: int):
        super().__init__()
        row, column = dict(kernel=(1, 3), padding=(0, 1)), dict(kernel=(3, 1), padding=(1, 0))
        self.branch1x1 = Conv(in_channels, 320, 1)
        self.branch3x3_1 = Conv(in_channels, 384, 1)
        self.branch3x3_2a, self.branch3x3_2b = Conv(384, 384, **row), Conv(384, 384, **column)
        self.branch3x3dbl_1, self.branch3x3dbl_2 = Conv(in_channels, 448, 1), Conv(448, 384, 3, padding=1)
        self.branch3x3dbl_3a, self.branch3x3dbl_3b = Conv(384, 384, **row), Conv(384, 384, **column)
        self.branch_pool = Conv(in_channels, 192, 1)

    def forward(self, x):
        single = self.branch3x3_1(x)
        double = _chain(self, ("branch3x3dbl_1", "branch3x3dbl_2"), x)
        return torch.cat(
            [
                self.branch1x1(x),
                self.branch3x3_2a(single),
                self.branch3x3_2b(single),
                self.branch3x3dbl_3a(double),
                self.branch3x3dbl_3b(double),
                self.branch_pool(_avg_pool_same(x)),
            ],
            1,
        )


class InceptionV3(nn.Module):
    """Input at least 75x75 (299x299 native)."""

    STEM = ("Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3", "maxpool1", "Conv2d_3b_1x1", "Conv2d_4a_3x3", "maxpool2")
    MIXED = (
        "Mixed_5b",
        "Mixed_5c",
        "Mixed_5d",
        "Mixed_6a",
        "Mixed_6b",
        "Mixed_6c",
        "Mixed_6d",
        "Mixed_6e",
        "Mixed_7a",
        "Mixed_7b",
        "Mixed_7c",
    )

    def __init__(self, classes: int = 1000):
        super().__init__()
        self.Conv2d_1a_3x3 = Conv(3, 32, 3, stride=2)
        self.Conv2d_2a_3x3 = Conv(32, 32, 3)
        self.Conv2d_2b_3x3 = Conv(32, 64, 3, padding=1)
        self.maxpool1 = nn.MaxPool2d(3, stride=2)
        self.Conv2d_3b_1x1 = Conv(64, 80, 1)
        self.Conv2d_4a_3x3 = Conv(80, 192, 3)
        self.maxpool2 = nn.MaxPool2d(3, stride=2)
        self.Mixed_5b, self.Mixed_5c, self.Mixed_5d = BlockA(192, 32), BlockA(256, 64), BlockA(288, 64)
        self.Mixed_6a = ReductionB(288)
        self.Mixed_6b, self.Mixed_6c = BlockC(768, 128), BlockC(768, 160)
        self.Mixed_6d, self.Mixed_6e = BlockC(768, 160), BlockC(768, 192)
        self.Mixed_7a = ReductionD(768)
        self.Mixed_7b, self.Mixed_7c = BlockE(1280), BlockE(2048)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        x = _chain(self, self.STEM + self.MIXED, x)
        return self.fc(torch.flatten(self.dropout(self.avgpool(x)), 1))


def inception_v3():
    return InceptionV3()


# The image models this module defines, by their names in registry.json: each one's builder and its number of classes
# (models/__init__.py collects them into SPECS).
IMAGE_MODELS = {"inception_v3": (inception_v3, 1000)}
