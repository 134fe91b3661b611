"""ResNet-50, -101 and -152 (He et al. 2015) as torchvision defines them ("ResNet v1.5": the stride of a stage's
first bottleneck sits on its 3x3 convolution), with the same module names, so a state dict of either loads into
the other."""

import torch
import torch.nn as nn

EXPANSION = 4  # a bottleneck's output has 4x the channels of its 3x3 convolution
BLOCKS = {"resnet50": (3, 4, 6, 3), "resnet101": (3, 4, 23, 3), "resnet152": (3, 8, 36, 3)}


class Bottleneck(nn.Module):
    def __init__(self, in_channels: int, width: int, stride: int):
        super().__init__()
        out_channels = width * EXPANSION
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out_channels, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False), nn.BatchNorm2d(out_channels)
            )

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        return self.relu(self.bn3(self.conv3(out)) + shortcut)


class ResNet(nn.Module):
    def __init__(self, blocks, classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        channels = 64
        for stage, count in enumerate(blocks):
            width = 64 * 2**stage
            layers = []
            for index in range(count):
                layers.append(Bottleneck(channels, width, stride=2 if stage > 0 and index == 0 else 1))
                channels = width * EXPANSION
            setattr(self, f"layer{stage + 1}", nn.Sequential(*layers))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, classes)
        for module in self.modules():  # torchvision's initialisation
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet50():
    return ResNet(BLOCKS["resnet50"])


def resnet101():
    return ResNet(BLOCKS["resnet101"])


def resnet152():
    return ResNet(BLOCKS["resnet152"])


# The image models this module defines, by their names in registry.json: each one's builder and its number of classes
# (models/__init__.py collects them into SPECS).
IMAGE_MODELS = {"resnet50": (resnet50, 1000), "resnet101": (resnet101, 1000), "resnet152": (resnet152, 1000)}
