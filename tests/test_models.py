"""Engine models: shapes, parameter counts, heads, weight files, freezing, seeding, errors."""

from __future__ import annotations

import math

import pytest
import torch
import torchvision

from mr2.engine.models import MODELS, Classifier, build_model, freeze_backbone, load_weights, model_options, unfreeze_backbone
from mr2.engine.models.cifar_resnet import PadShortcut


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Small models on a shared 2-core machine run far faster (and steadier) on one thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def n_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def run(model: Classifier, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    model.eval()
    with torch.no_grad():
        return model(x)


# ------------------------------------------------------------------ shapes and feature_dim
SMALL = [
    ("resnet32", (3, 32, 32), 64),
    ("resnet32", (1, 28, 28), 64),
    ("resnet18", (3, 32, 32), 512),
    ("resnet18", (1, 28, 28), 512),
    ("cnn1d", (1, 40), 128),
    ("small_cnn", (1, 28, 28), 64),
    ("small_cnn", (3, 32, 32), 64),
    ("mlp", (1, 8, 8), 128),
]


@pytest.mark.parametrize("name,shape,dim", SMALL)
@pytest.mark.parametrize("head", ["linear", "cosine"])
def test_output_shapes(name, shape, dim, head):
    torch.manual_seed(0)
    model = build_model(name, 7, shape, head=head)
    logits, feats = run(model, torch.randn(3, *shape))
    assert model.feature_dim == dim
    assert logits.shape == (3, 7) and feats.shape == (3, dim)
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("name,shape,dim", [("wrn28_10", (3, 32, 32), 640), ("resnet50", (3, 32, 32), 2048)])
def test_big_cnns_forward_once(name, shape, dim):
    model = build_model(name, 5, shape)
    logits, feats = run(model, torch.randn(1, *shape))
    assert model.feature_dim == dim and logits.shape == (1, 5) and feats.shape == (1, dim)


@pytest.mark.slow
def test_vit_b_16_forward_once():
    model = build_model("vit_b_16", 5, (3, 224, 224))
    logits, feats = run(model, torch.randn(1, 3, 224, 224))
    assert model.feature_dim == 768 and logits.shape == (1, 5) and feats.shape == (1, 768)
    assert 85e6 < n_params(model) < 87e6  # ViT-B/16 is 86M parameters


def test_every_registered_model_is_covered():
    assert set(MODELS) == {"resnet32", "wrn28_10", "resnet18", "resnet50", "vit_b_16", "cnn1d", "small_cnn", "mlp"}


def test_cnn1d_features_depend_on_position():
    # the flatten keeps position: a shifted signal gives other features
    torch.manual_seed(0)
    model = build_model("cnn1d", 10, (1, 40))
    x = torch.randn(1, 1, 40)
    _, f = run(model, torch.cat([x, x.roll(8, dims=2)]))
    assert not torch.allclose(f[0], f[1])


# ------------------------------------------------------------------ architectures
def test_resnet32_parameter_count():
    """He et al. (2016) give 0.46M for ResNet-32 with option A shortcuts."""
    a = build_model("resnet32", 10, (3, 32, 32))
    assert abs(n_params(a) - 0.46e6) < 0.01e6
    assert sum(isinstance(m, torch.nn.Conv2d) for m in a.backbone.modules()) == 31  # 1 + 3·5·2 convs
    b = build_model("resnet32", 10, (3, 32, 32), shortcut="B")
    # option B adds two 1x1 projections (16->32, 32->64), each with a BatchNorm (weight, bias)
    assert n_params(b) - n_params(a) == (16 * 32 + 2 * 32) + (32 * 64 + 2 * 64)


def test_resnet32_head_size_scales_with_classes():
    assert n_params(build_model("resnet32", 100, (3, 32, 32))) - n_params(build_model("resnet32", 10, (3, 32, 32))) == 90 * 65


def test_wrn28_10_parameter_count():
    model = build_model("wrn28_10", 10, (3, 32, 32))
    assert abs(n_params(model) - 36.5e6) < 0.1e6  # Zagoruyko & Komodakis: 36.5M
    assert model.feature_dim == 640


def test_option_a_shortcut_subsamples_and_zero_pads():
    x = torch.randn(2, 16, 7, 7)
    y = PadShortcut(16, 32, 2)(x)
    assert y.shape == (2, 32, 4, 4)
    assert torch.equal(y[:, :16], x[:, :, ::2, ::2]) and (y[:, 16:] == 0).all()


def test_torchvision_backbones_match_torchvision_features():
    torch.manual_seed(0)
    model = build_model("resnet18", 10, (3, 32, 32))
    ref = torchvision.models.resnet18(weights=None)
    ref.load_state_dict({**model.backbone.state_dict(), "fc.weight": torch.zeros(1000, 512), "fc.bias": torch.zeros(1000)})
    ref.fc = torch.nn.Identity()
    x = torch.randn(2, 3, 32, 32)
    _, feats = run(model, x)
    ref.eval()
    with torch.no_grad():
        assert torch.allclose(feats, ref(x), atol=1e-6)


# ------------------------------------------------------------------ heads
def test_linear_head_returns_backbone_features():
    torch.manual_seed(0)
    model = build_model("small_cnn", 4, (1, 28, 28))
    x = torch.randn(5, 1, 28, 28)
    logits, feats = run(model, x)
    with torch.no_grad():
        assert torch.allclose(feats, model.backbone(x))
        assert torch.allclose(logits, model.head(model.backbone(x)))


def test_cosine_head_bounded_unit_features():
    torch.manual_seed(0)
    scale = 7.5
    model = build_model("small_cnn", 6, (1, 28, 28), head="cosine", cosine_scale=scale)
    x = torch.randn(16, 1, 28, 28) * 10
    logits, feats = run(model, x)
    assert torch.allclose(feats.norm(dim=1), torch.ones(16), atol=1e-5)
    assert logits.abs().max() <= scale + 1e-5
    with torch.no_grad():
        raw = model.backbone(x)
        assert not torch.allclose(raw.norm(dim=1), torch.ones(16))  # the backbone output itself is not normalised
        assert torch.allclose(model.head(raw), logits, atol=1e-5)
        w = model.head.weight
        cos = (raw @ w.t()) / (raw.norm(dim=1, keepdim=True) * w.norm(dim=1))
    assert torch.allclose(logits, scale * cos, atol=1e-5)


def test_cosine_scale_reaches_bound_for_aligned_weight():
    model = build_model("mlp", 3, (4,), head="cosine", cosine_scale=16.0, hidden=4, depth=1)
    f = torch.tensor([[1.0, 2.0, 0.0, 3.0]])
    with torch.no_grad():
        model.head.weight[0] = f[0] * 5
        assert model.head(f)[0, 0].item() == pytest.approx(16.0)


# ------------------------------------------------------------------ weights files
def test_weights_round_trip(tmp_path):
    torch.manual_seed(0)
    src = build_model("resnet32", 10, (3, 32, 32), head="cosine")
    src.train()
    with torch.no_grad():
        src(torch.randn(8, 3, 32, 32))  # move BatchNorm running statistics off their defaults
    path = tmp_path / "w.pt"
    torch.save(src.state_dict(), path)
    torch.manual_seed(1)
    dst = build_model("resnet32", 10, (3, 32, 32), head="cosine", weights=str(path))
    for k, v in src.state_dict().items():
        assert torch.equal(v, dst.state_dict()[k]), k
    x = torch.randn(2, 3, 32, 32)
    assert torch.equal(run(src, x)[0], run(dst, x)[0])


def test_weights_without_head_keep_fresh_head(tmp_path):
    torch.manual_seed(0)
    src = build_model("small_cnn", 10, (1, 28, 28))
    torch.save(src.state_dict(), tmp_path / "w.pt")
    torch.manual_seed(1)
    dst = build_model("small_cnn", 3, (1, 28, 28))
    fresh = dst.head.fc.weight.clone()
    load_weights(dst, tmp_path / "w.pt", head=False)
    assert torch.equal(dst.head.fc.weight, fresh)
    for k, v in src.backbone.state_dict().items():
        assert torch.equal(v, dst.backbone.state_dict()[k])


def test_missing_weights_file_names_path(tmp_path):
    path = tmp_path / "nowhere" / "weights.pt"
    with pytest.raises(FileNotFoundError, match="nowhere/weights.pt"):
        build_model("mlp", 3, (1, 8, 8), weights=str(path))


def test_key_mismatch_is_reported(tmp_path):
    torch.save(build_model("resnet32", 10, (3, 32, 32)).state_dict(), tmp_path / "r32.pt")
    with pytest.raises(ValueError, match=r"r32\.pt does not match the model's backbone; missing keys: backbone\.net\.0\.weight.*unexpected keys: backbone\.blocks"):
        build_model("small_cnn", 10, (3, 32, 32), weights=str(tmp_path / "r32.pt"))
    with pytest.raises(ValueError, match=r"model's head; shape mismatches: head\.fc\.bias \(file \(10,\), model \(5,\)\), head\.fc\.weight \(file \(10, 64\), model \(5, 64\)\)"):
        build_model("resnet32", 5, (3, 32, 32), weights=str(tmp_path / "r32.pt"))


def test_non_state_dict_file_is_rejected(tmp_path):
    torch.save({"epoch": 3}, tmp_path / "x.pt")
    with pytest.raises(ValueError, match="plain state_dict"):
        build_model("mlp", 3, (1, 8, 8), weights=str(tmp_path / "x.pt"))
    (tmp_path / "junk.pt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="junk.pt: not a readable torch file"):
        build_model("mlp", 3, (1, 8, 8), weights=str(tmp_path / "junk.pt"))


def test_torchvision_state_dict_loads_with_head_ignored(tmp_path):
    torch.manual_seed(0)
    tv = torchvision.models.resnet18(weights=None)  # a torchvision-format file, 1000-class fc
    torch.save(tv.state_dict(), tmp_path / "tv.pt")
    torch.manual_seed(1)
    model = build_model("resnet18", 10, (3, 32, 32), weights=str(tmp_path / "tv.pt"))
    own = model.backbone.state_dict()
    assert all(torch.equal(v, own[k]) for k, v in tv.state_dict().items() if not k.startswith("fc."))
    assert model.head.fc.weight.shape == (10, 512)
    # a torchvision file for another architecture is a clear mismatch
    with pytest.raises(ValueError, match="bare backbone.*unexpected keys"):
        build_model("resnet32", 10, (3, 32, 32), weights=str(tmp_path / "tv.pt"))


# ------------------------------------------------------------------ training modes
def test_freeze_backbone_leaves_only_head_trainable():
    torch.manual_seed(0)
    model = freeze_backbone(build_model("small_cnn", 4, (1, 28, 28), head="cosine"))
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == {n for n, _ in model.named_parameters() if n.startswith("head.")} == {"head.weight"}
    model.train()
    assert model.head.training and not model.backbone.training  # BatchNorm statistics stay frozen
    bn = next(m for m in model.backbone.modules() if isinstance(m, torch.nn.BatchNorm2d))
    before = bn.running_mean.clone()
    logits, _ = model(torch.randn(8, 1, 28, 28))
    logits.sum().backward()
    assert torch.equal(bn.running_mean, before)
    assert model.head.weight.grad is not None
    assert all(p.grad is None for p in model.backbone.parameters())
    unfreeze_backbone(model)
    assert all(p.requires_grad for p in model.parameters()) and model.backbone.training


def test_seeded_builds_are_identical():
    def build(seed):
        torch.manual_seed(seed)
        return build_model("resnet32", 10, (3, 32, 32), head="cosine")

    a, b, c = build(3), build(3), build(4)
    assert all(torch.equal(v, b.state_dict()[k]) for k, v in a.state_dict().items())
    assert not torch.equal(a.head.weight, c.head.weight)
    x = torch.randn(2, 3, 32, 32)
    assert torch.equal(run(a, x)[0], run(b, x)[0])


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(name="resnet33"), "unknown model 'resnet33'"),
        (dict(head="arcface"), "unknown head 'arcface'"),
        (dict(cosine_scale=0.0, head="cosine"), "cosine_scale"),
        (dict(depth=3), "does not take option 'depth'; accepted options: shortcut"),
        (dict(name="cnn1d", input_shape=(1, 28, 28)), "'cnn1d' cannot take input shape \\(1, 28, 28\\)"),
        (dict(name="vit_b_16", input_shape=(3, 32, 32)), "'vit_b_16' cannot take input shape \\(3, 32, 32\\).*image_size"),
        (dict(name="vit_b_16", input_shape=(3, 40, 40), image_size=40), "multiple of the patch size"),
        (dict(name="small_cnn", input_shape=(40,)), "'small_cnn' cannot take input shape"),
        (dict(input_shape=(3, 4, 4)), "at least 8"),
        (dict(input_shape=(3, 0, 32)), "positive integers"),
        (dict(num_classes=1), "num_classes"),
        (dict(shortcut="C"), "shortcut"),
        (dict(name="wrn28_10", dropout=1.5), "dropout"),
        (dict(name="mlp", input_shape=(64,), depth=0), "depth"),
    ],
)
def test_invalid_arguments_raise_value_error(kwargs, match):
    args = dict(name="resnet32", num_classes=10, input_shape=(3, 32, 32))
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        build_model(args.pop("name"), args.pop("num_classes"), args.pop("input_shape"), **args)


def test_large_inputs_accepted_by_pooling_nets():
    # documented choice: resnet32 takes any H, W >= 8, including 64x48
    logits, _ = run(build_model("resnet32", 3, (3, 64, 48)), torch.randn(1, 3, 64, 48))
    assert logits.shape == (1, 3)


def test_model_options_lists_defaults():
    assert model_options("wrn28_10") == {"dropout": 0.0}
    assert model_options("vit_b_16")["image_size"] == 224
    assert math.isclose(model_options("wrn28_10")["dropout"], 0.0)
