"""Models of the engine: backbones, heads, the ``Classifier`` wrapper and ``build_model``.

Every model returns ``(logits, features)``; see ``factory`` for the models and their options,
``heads`` for the linear and cosine heads, ``classifier`` for the training modes and
``weights`` for loading local weight files.
"""

from .classifier import Classifier, HeadOnly, as_trained_net, freeze_backbone, unfreeze_backbone
from .factory import MODELS, ModelSpec, build_from_config, build_model, model_options, resolve_model_options
from .heads import DEFAULT_COSINE_SCALE, HEADS, CosineHead, LinearHead, cosine_logits
from .weights import load_weights, read_state_dict

__all__ = [
    "Classifier",
    "HeadOnly",
    "CosineHead",
    "DEFAULT_COSINE_SCALE",
    "HEADS",
    "LinearHead",
    "MODELS",
    "ModelSpec",
    "as_trained_net",
    "build_from_config",
    "build_model",
    "cosine_logits",
    "freeze_backbone",
    "load_weights",
    "model_options",
    "read_state_dict",
    "resolve_model_options",
    "unfreeze_backbone",
]
