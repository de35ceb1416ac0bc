"""torchvision backbones (ResNet-18, ResNet-50, ViT-B/16), always built with random
initialisation; pre-trained weights come only from a local file (``mr2.models.weights``),
never from a download.

- ResNet-18/50: torchvision's ImageNet ResNet with ``fc`` replaced by the identity: 512/2048
  features after global average pooling. Inputs need at least 16×16 pixels (the stem and
  four stages downsample by 32; global pooling takes any remaining size). An input with
  C ≠ 3 channels gets a fresh 7×7 stem conv with C input channels (its pre-trained weights then
  cannot be loaded: that is reported as a shape mismatch).
- ViT-B/16: torchvision's ViT-B/16 with ``heads`` replaced by the identity: the class token
  after the final LayerNorm, 768 features. Inputs must be 3 × image_size × image_size with
  ``image_size`` (default 224) a multiple of 16; weights saved at another size do not load
  (position embeddings differ in shape).

``TORCHVISION_HEAD_PREFIX`` names the classifier keys of each torchvision state_dict: they are
dropped when such a file is loaded into the backbone (the new head is ours).
"""

from __future__ import annotations

from torch import nn

TORCHVISION_HEAD_PREFIX = {"resnet18": "fc.", "resnet50": "fc.", "vit_b_16": "heads."}


def torchvision_resnet(depth: int, in_channels: int) -> nn.Module:
    """torchvision ResNet-``depth`` (18 or 50), random init, ``fc`` = identity."""
    import torchvision  # imported here: it costs seconds at start-up and most runs never need it

    net = {18: torchvision.models.resnet18, 50: torchvision.models.resnet50}[depth](weights=None)
    if in_channels != 3:
        net.conv1 = nn.Conv2d(in_channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
        nn.init.kaiming_normal_(net.conv1.weight, mode="fan_out", nonlinearity="relu")
    net.feature_dim = net.fc.in_features
    net.fc = nn.Identity()
    return net


def torchvision_vit_b_16(image_size: int = 224, dropout: float = 0.0) -> nn.Module:
    """torchvision ViT-B/16, random init, ``heads`` = identity (class-token features)."""
    import torchvision

    net = torchvision.models.vit_b_16(weights=None, image_size=image_size, dropout=dropout)
    net.feature_dim = net.hidden_dim
    net.heads = nn.Identity()
    return net
