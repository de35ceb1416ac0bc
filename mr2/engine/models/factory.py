"""Build a classifier by model name, rejecting options and input shapes the model cannot take.

``input_shape`` is the shape of one sample, without the batch dimension: (C, H, W) for images,
(C, L) for 1-D signals (MNIST-1D: (1, 40)), anything for ``mlp`` (sklearn digits: (1, 8, 8)).

| name        | input                        | features | options (defaults)                 |
|-------------|------------------------------|----------|------------------------------------|
| resnet32    | (C, H, W), H, W ≥ 8          | 64       | shortcut="A"                       |
| wrn28_10    | (C, H, W), H, W ≥ 8          | 640      | dropout=0.0                        |
| resnet18    | (C, H, W), H, W ≥ 16         | 512      | none                               |
| resnet50    | (C, H, W), H, W ≥ 16         | 2048     | none                               |
| vit_b_16    | (3, S, S), S = image_size    | 768      | image_size=224, dropout=0.0        |
| cnn1d       | (C, L), L ≥ 8                | features | width=32, features=128             |
| small_cnn   | (C, H, W), H, W ≥ 4          | 4·width  | width=16                           |
| mlp         | any shape                    | hidden   | hidden=128, depth=2                |

The CIFAR nets (resnet32, wrn28_10) and small_cnn pool globally, so inputs larger than 32×32
(even 224×224) are accepted; they are designed for 28–32 pixels and cost grows with H·W.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from torch import nn

from ...common.options import check_option_type

from .cifar_resnet import CifarResNet, WideResNet
from .classifier import Classifier
from .heads import DEFAULT_COSINE_SCALE, build_head
from .small import Cnn1d, Mlp, SmallCnn
from .tv import TORCHVISION_HEAD_PREFIX, torchvision_resnet, torchvision_vit_b_16
from .weights import load_weights

Shape = tuple[int, ...]


def _image(min_size: int) -> Callable[[Shape, dict[str, Any]], str | None]:
    def check(shape: Shape, opts: dict[str, Any]) -> str | None:
        if len(shape) != 3:
            return "expected an image shape (C, H, W)"
        if min(shape[1:]) < min_size:
            return f"H and W must be at least {min_size}"
        return None

    return check


def _signal(shape: Shape, opts: dict[str, Any]) -> str | None:
    if len(shape) != 2:
        return "expected a 1-D signal shape (C, L)"
    return "L must be at least 8" if shape[1] < 8 else None


def _vit(shape: Shape, opts: dict[str, Any]) -> str | None:
    size = opts["image_size"]
    if size % 16 != 0:
        return f"image_size {size} is not a multiple of the patch size 16"
    if tuple(shape) != (3, size, size):
        return f"expected (3, {size}, {size}) (set the image_size option for other square sizes)"
    return None


def _any(shape: Shape, opts: dict[str, Any]) -> str | None:
    return None


@dataclass(frozen=True)
class ModelSpec:
    """``build(input_shape, **options)`` returns a backbone with a ``feature_dim`` attribute."""

    build: Callable[..., nn.Module]
    defaults: dict[str, Any]
    check_input: Callable[[Shape, dict[str, Any]], str | None]
    torchvision_head_prefix: str | None = None
    summary: str = ""


MODELS: dict[str, ModelSpec] = {
    "resnet32": ModelSpec(lambda s, **o: CifarResNet(s[0], n=5, **o), {"shortcut": "A"}, _image(8),
                          summary="CIFAR ResNet-32 (He et al. 2016), 0.46M parameters"),
    "wrn28_10": ModelSpec(lambda s, **o: WideResNet(s[0], depth=28, widen=10, **o), {"dropout": 0.0}, _image(8),
                          summary="Wide ResNet 28-10 (Zagoruyko & Komodakis 2016), 36.5M parameters"),
    "resnet18": ModelSpec(lambda s: torchvision_resnet(18, s[0]), {}, _image(16), TORCHVISION_HEAD_PREFIX["resnet18"],
                          summary="torchvision ResNet-18"),
    "resnet50": ModelSpec(lambda s: torchvision_resnet(50, s[0]), {}, _image(16), TORCHVISION_HEAD_PREFIX["resnet50"],
                          summary="torchvision ResNet-50"),
    "vit_b_16": ModelSpec(lambda s, **o: torchvision_vit_b_16(**o), {"image_size": 224, "dropout": 0.0}, _vit,
                          TORCHVISION_HEAD_PREFIX["vit_b_16"], summary="torchvision ViT-B/16"),
    "cnn1d": ModelSpec(lambda s, **o: Cnn1d(s[0], s[1], **o), {"width": 32, "features": 128}, _signal,
                       summary="1-D CNN for MNIST-1D"),
    "small_cnn": ModelSpec(lambda s, **o: SmallCnn(s[0], **o), {"width": 16}, _image(4),
                           summary="small CNN for quick runs"),
    "mlp": ModelSpec(lambda s, **o: Mlp(s, **o), {"hidden": 128, "depth": 2}, _any,
                     summary="MLP for tiny inputs"),
}


def _check_model(name: str) -> ModelSpec:
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(sorted(MODELS))}")
    return MODELS[name]


def model_options(name: str) -> dict[str, Any]:
    """The options model ``name`` accepts, with their defaults."""
    return dict(_check_model(name).defaults)


def resolve_model_options(name: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Defaults of ``name`` overridden by ``options``; an option it does not take, or of another
    kind than its default (``check_option_type``), or a size option (an integer) below 1, is an
    error that names it."""
    defaults = _check_model(name).defaults
    if not isinstance(options or {}, dict):
        raise ValueError(f"model {name!r}: options must be a mapping of option names to values, got {options!r}")
    options = dict(options or {})
    for key, value in options.items():
        if key not in defaults:
            accepted = ", ".join(sorted(defaults)) or "none"
            raise ValueError(f"model {name!r} does not take option {key!r}; accepted options: {accepted}")
        check_option_type(f"model {name!r}", key, value, defaults[key])
        if type(defaults[key]) is int and value < 1:  # widths, depths, sizes
            raise ValueError(f"model {name!r}: option {key!r} must be at least 1, got {value!r}")
    return {**defaults, **options}


def build_model(
    name: str,
    num_classes: int,
    input_shape: tuple[int, ...],
    head: str = "linear",
    cosine_scale: float = DEFAULT_COSINE_SCALE,
    weights: str | Path | None = None,
    **options: Any,
) -> Classifier:
    """Classifier ``name`` (a key of ``MODELS``) for K = ``num_classes`` classes and samples of
    shape ``input_shape`` (no batch dimension), randomly initialised (seed with
    ``torch.manual_seed`` first for a reproducible init).

    ``head``: ``"linear"`` or ``"cosine"`` (logits s·cos θ, s = ``cosine_scale``, default 16;
    the returned features are then L2-normalised). ``weights``: a local state_dict file to load
    (see ``mr2.models.weights``; Classifier format incl. head, or a bare/torchvision backbone
    state_dict whose classifier keys are ignored). ``options``: model options (table above).
    """
    spec = _check_model(name)
    opts = resolve_model_options(name, options)
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes must be an integer >= 2, got {num_classes!r}")
    try:
        shape = tuple(operator.index(d) for d in input_shape)
    except TypeError:
        shape = ()
    if not shape or min(shape) < 1:
        raise ValueError(f"input_shape must be a non-empty tuple of positive integers, got {input_shape!r}")
    problem = spec.check_input(shape, opts)
    if problem:
        raise ValueError(f"model {name!r} cannot take input shape {shape}: {problem}")
    backbone = spec.build(shape, **opts)
    model = Classifier(backbone, build_head(head, backbone.feature_dim, num_classes, cosine_scale), backbone.feature_dim)
    if weights is not None:
        load_weights(model, weights, ignore_prefix=spec.torchvision_head_prefix)
    return model


def build_from_config(model_cfg: dict[str, Any], num_classes: int, input_shape: Shape,
                      with_weights: bool = True) -> Classifier:
    """``build_model`` from a run config's ``model`` section (name, head, cosine_scale, weights,
    options). ``with_weights=False`` skips the weights file, for a model whose trained state is
    loaded afterwards."""
    return build_model(model_cfg["name"], num_classes, tuple(input_shape), head=model_cfg["head"],
                       cosine_scale=model_cfg["cosine_scale"],
                       weights=model_cfg["weights"] if with_weights else None, **model_cfg["options"])
