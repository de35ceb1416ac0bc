"""Batched augmentation: shapes, determinism, and that crops/flips/shifts do what they claim."""

import pytest
import torch
import torch.nn.functional as F

from mr2.engine.augment import (
    _cifar10_autoaugment,
    apply_auto_augment,
    auto_augment,
    normalize,
    random_crop_flip,
    random_shift,
    sample_auto_augment,
)


def gen(seed):
    return torch.Generator().manual_seed(seed)


def unique_images(n=64, c=2, h=6, w=7):
    """Images whose every pixel value is distinct and non-zero (so a crop is identifiable)."""
    return (torch.arange(n * c * h * w, dtype=torch.float32) + 1).view(n, c, h, w)


def identify_crop(out_img, img, padding):
    """All (dy, dx, flip) whose padded crop of img equals out_img (brute force, test only)."""
    c, h, w = img.shape
    padded = F.pad(img, (padding,) * 4)
    hits = []
    for dy in range(2 * padding + 1):
        for dx in range(2 * padding + 1):
            crop = padded[:, dy : dy + h, dx : dx + w]
            for flip in (False, True):
                if torch.equal(crop.flip(-1) if flip else crop, out_img):
                    hits.append((dy, dx, flip))
    return hits


def test_crop_flip_every_output_is_a_padded_crop_and_offsets_vary():
    x = unique_images()
    out = random_crop_flip(x, padding=2, generator=gen(0))
    assert out.shape == x.shape and out.dtype == x.dtype
    found = []
    for i in range(len(x)):
        hits = identify_crop(out[i], x[i], 2)
        assert len(hits) == 1, f"image {i} is not a unique crop of its padded input"
        found.append(hits[0])
    offsets = {(dy, dx) for dy, dx, _ in found}
    flips = [f for *_, f in found]
    assert len(offsets) > 5  # 25 possible offsets, 64 images: content really moves
    assert any(flips) and not all(flips)
    # shifted crops bring in zero padding; unshifted ones do not
    shifted = [i for i, (dy, dx, _) in enumerate(found) if (dy, dx) != (2, 2)]
    assert all((out[i] == 0).any() for i in shifted)


def test_flip_really_mirrors_columns_without_padding():
    x = unique_images(n=40)
    out = random_crop_flip(x, padding=0, generator=gen(3))
    same = (out == x).flatten(1).all(1)
    mirrored = (out == x.flip(-1)).flatten(1).all(1)
    assert torch.all(same ^ mirrored)
    assert same.any() and mirrored.any()
    i = int(torch.nonzero(mirrored)[0])
    assert torch.equal(out[i, :, :, 0], x[i, :, :, -1])


def test_crop_flip_uint8_and_determinism():
    x = torch.randint(0, 256, (16, 3, 8, 8), dtype=torch.uint8, generator=gen(1))
    a = random_crop_flip(x, 4, gen(7))
    b = random_crop_flip(x, 4, gen(7))
    c = random_crop_flip(x, 4, gen(8))
    assert a.dtype == torch.uint8 and a.shape == x.shape
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_crop_flip_rejects_bad_input():
    with pytest.raises(ValueError, match="N, C, H, W"):
        random_crop_flip(torch.zeros(3, 8, 8), 2)
    with pytest.raises(ValueError, match="padding"):
        random_crop_flip(torch.zeros(1, 3, 8, 8), -1)


def test_random_shift_is_a_zero_filled_shift():
    n, c, length, m = 50, 2, 12, 3
    x = (torch.arange(n * c * length, dtype=torch.float32) + 1).view(n, c, length)
    out = random_shift(x, m, gen(0))
    assert out.shape == x.shape
    shifts = []
    for i in range(n):
        matches = []
        for s in range(-m, m + 1):
            ref = torch.zeros_like(x[i])
            if s >= 0:
                ref[:, s:] = x[i, :, : length - s]
            else:
                ref[:, :s] = x[i, :, -s:]
            if torch.equal(ref, out[i]):
                matches.append(s)
        assert len(matches) == 1
        shifts.append(matches[0])
    assert len(set(shifts)) >= 5 and min(shifts) >= -m and max(shifts) <= m
    assert torch.equal(random_shift(x, m, gen(0)), out)
    assert torch.equal(random_shift(x, 0, gen(0)), x)


def test_normalize_uint8_float_and_signals():
    x = torch.tensor([[[[0, 255]], [[51, 102]]]], dtype=torch.uint8)  # (1, 2, 1, 2)
    out = normalize(x, (0.5, 0.2), (0.5, 0.1))
    assert out.dtype == torch.float32
    expected = torch.tensor([[[[-1.0, 1.0]], [[0.0, 2.0]]]])
    torch.testing.assert_close(out, expected)
    sig = torch.tensor([[[1.0, 3.0]]])  # float input is not divided by 255
    torch.testing.assert_close(normalize(sig, (1.0,), (2.0,)), torch.tensor([[[0.0, 1.0]]]))
    with pytest.raises(ValueError, match="channels"):
        normalize(x, (0.5,), (0.5,))
    with pytest.raises(ValueError, match="std"):
        normalize(sig, (0.0,), (0.0,))
    as_tensors = normalize(x, torch.tensor([0.5, 0.2]), torch.tensor([0.5, 0.1]))
    torch.testing.assert_close(as_tensors, expected)


def test_auto_augment_deterministic_and_per_image():
    img = torch.randint(0, 256, (3, 16, 16), dtype=torch.uint8, generator=gen(2))
    x = img.expand(48, 3, 16, 16).contiguous()  # 48 copies of one image
    a = auto_augment(x, gen(5))
    assert a.shape == x.shape and a.dtype == torch.uint8
    assert torch.equal(a, auto_augment(x, gen(5)))
    assert not torch.equal(a, auto_augment(x, gen(6)))
    distinct = {tuple(a[i].flatten().tolist()) for i in range(len(a))}
    assert len(distinct) > 5  # a per-batch policy would give at most a couple of versions


def test_auto_augment_batched_equals_one_image_at_a_time():
    """Group-wise application gives each image what torchvision's op gives it alone (3-D input)."""
    x = torch.randint(0, 256, (64, 3, 12, 12), dtype=torch.uint8, generator=gen(4))
    d = sample_auto_augment(len(x), gen(9))
    out = apply_auto_augment(x, d)
    aa = _cifar10_autoaugment()
    from mr2.engine.augment import _op_magnitude

    for i in range(len(x)):
        img = x[i]
        for j, (tid, _p, midx) in enumerate(aa._policies[int(d["policy"][i])]):
            if bool(d["apply"][i, j]):
                mag = _op_magnitude(aa, tid, midx, bool(d["negate"][i, j]), 12, 12)
                img = aa._apply_image_or_video_transform(img, tid, mag, interpolation=aa.interpolation, fill=aa._fill)
        assert torch.equal(out[i], img), f"image {i} differs from its one-image reference"


def test_auto_augment_sampling_law():
    n = 20000
    d = sample_auto_augment(n, gen(0))
    aa = _cifar10_autoaugment()
    probs = torch.tensor([[op[1] for op in sub] for sub in aa._policies])
    counts = torch.bincount(d["policy"], minlength=len(probs)).double()
    assert counts.min() > 0.8 * n / len(probs) and counts.max() < 1.2 * n / len(probs)
    fired = d["apply"].double().mean(0)
    expected = probs[d["policy"]].double().mean(0)
    torch.testing.assert_close(fired, expected, atol=0.02, rtol=0)


def test_auto_augment_rejects_float():
    with pytest.raises(ValueError, match="uint8"):
        auto_augment(torch.zeros(2, 3, 8, 8), gen(0))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu_with_cpu_generator():
    x = torch.randint(0, 256, (32, 3, 8, 8), dtype=torch.uint8, generator=gen(1))
    cpu = random_crop_flip(x, 2, gen(3))
    cuda = random_crop_flip(x.cuda(), 2, gen(3)).cpu()
    assert torch.equal(cpu, cuda)
    s = torch.randn(8, 1, 20, generator=gen(1))
    assert torch.equal(random_shift(s, 3, gen(2)), random_shift(s.cuda(), 3, gen(2)).cpu())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_auto_augment_on_cuda_matches_cpu():
    """Same decisions on both devices; float rounding in the colour ops may move a value by 1."""
    x = torch.randint(0, 256, (64, 3, 16, 16), dtype=torch.uint8, generator=gen(1))
    cpu = auto_augment(x, gen(2))
    cuda = auto_augment(x.cuda(), gen(2))
    assert cuda.device.type == "cuda" and cuda.dtype == torch.uint8
    assert (cpu.int() - cuda.cpu().int()).abs().max() <= 1
