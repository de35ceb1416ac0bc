"""Batched, on-device augmentation (no Python loop over images).

All randomness is drawn from the passed ``torch.Generator`` (or the global generator when None)
on the generator's own device, then moved to the data's device: with a CPU generator the
augmentation of a batch is the same on CPU and CUDA, and fixed by the generator's seed.

- ``random_crop_flip``: zero-pad by ``padding`` on each side, cut an H x W window at a random
  offset (dy, dx) in [0, 2·padding]² per image, then mirror it horizontally with probability 1/2.
  out[n, c, i, j] = padded[n, c, dy_n + i, dx_n + j'] with j' = W-1-j if flipped else j.
- ``random_shift``: the 1-D analogue for signals, out[n, c, t] = x[n, c, t - s_n] (zero outside),
  s_n uniform in [-max_shift, max_shift].
- ``normalize``: (x - mean) / std per channel; uint8 is first mapped to [0, 1] by /255.
- ``auto_augment``: torchvision's AutoAugment (CIFAR-10 policy) with the sub-policy sampled
  per image (see its docstring).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import torch
import torch.nn.functional as F


def _randint(high: int, size: tuple[int, ...], generator: torch.Generator | None, device) -> torch.Tensor:
    """Uniform integers in [0, high), drawn on the generator's device, returned on ``device``."""
    gen_device = generator.device if generator is not None else torch.device("cpu")
    return torch.randint(high, size, generator=generator, device=gen_device).to(device)


def _rand(size: tuple[int, ...], generator: torch.Generator | None, device) -> torch.Tensor:
    """Uniform floats in [0, 1), drawn on the generator's device, returned on ``device``."""
    gen_device = generator.device if generator is not None else torch.device("cpu")
    return torch.rand(size, generator=generator, device=gen_device).to(device)


def random_crop_flip(x: torch.Tensor, padding: int = 4, generator: torch.Generator | None = None,
                     flip: bool = True) -> torch.Tensor:
    """Per-image zero-padded random crop of the same size plus random horizontal flip; x (N, C, H, W).

    ``flip=False`` keeps the crop and never mirrors (for data where mirroring changes the class,
    e.g. digits); the random draws are the same, so the crops do not depend on it."""
    if x.dim() != 4:
        raise ValueError(f"random_crop_flip expects (N, C, H, W), got shape {tuple(x.shape)}")
    if padding < 0:
        raise ValueError(f"padding must be >= 0, got {padding}")
    n, c, h, w = x.shape
    padded = F.pad(x, (padding, padding, padding, padding)) if padding else x
    dy = _randint(2 * padding + 1, (n,), generator, x.device)
    dx = _randint(2 * padding + 1, (n,), generator, x.device)
    mirror = _randint(2, (n,), generator, x.device).bool() & flip
    cols = torch.arange(w, device=x.device)
    cols = torch.where(mirror[:, None], cols.flip(0), cols)  # (N, W)
    rows = dy[:, None] + torch.arange(h, device=x.device)  # (N, H)
    cols = dx[:, None] + cols
    batch = torch.arange(n, device=x.device)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]]  # (N, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()


def random_shift(x: torch.Tensor, max_shift: int = 4, generator: torch.Generator | None = None) -> torch.Tensor:
    """Per-signal random shift s in [-max_shift, max_shift] with zero fill; x (N, C, L)."""
    if x.dim() != 3:
        raise ValueError(f"random_shift expects (N, C, L), got shape {tuple(x.shape)}")
    if max_shift < 0:
        raise ValueError(f"max_shift must be >= 0, got {max_shift}")
    n, c, length = x.shape
    shift = _randint(2 * max_shift + 1, (n,), generator, x.device) - max_shift
    src = torch.arange(length, device=x.device)[None, :] - shift[:, None]  # (N, L)
    valid = (src >= 0) & (src < length)
    out = torch.gather(x, 2, src.clamp(0, length - 1)[:, None, :].expand(n, c, length))
    return out * valid[:, None, :].to(out.dtype)


def normalize(x: torch.Tensor, mean: Sequence[float] | torch.Tensor, std: Sequence[float] | torch.Tensor) -> torch.Tensor:
    """float32 (x - mean_c) / std_c per channel (dim 1); uint8 x is first divided by 255.

    ``mean``/``std`` may be sequences or tensors (kept on the device: no host sync per call).
    """
    xf = x.to(torch.float32)
    if x.dtype == torch.uint8:
        xf = xf / 255.0
    c = x.shape[1]
    if len(mean) != c or len(std) != c:
        raise ValueError(f"normalize: {c} channels but {len(mean)} means and {len(std)} stds")
    if not isinstance(std, torch.Tensor) and min(std) <= 0:
        raise ValueError(f"normalize: std must be positive, got {list(std)}")
    shape = (1, c) + (1,) * (x.dim() - 2)
    m = torch.as_tensor(mean, dtype=torch.float32, device=x.device).view(shape)
    s = torch.as_tensor(std, dtype=torch.float32, device=x.device).view(shape)
    return (xf - m) / s


# --------------------------------------------------------------------------- AutoAugment

NUM_MAGNITUDE_BINS = 10  # torchvision's AutoAugment uses 10 bins


@lru_cache(maxsize=1)
def _cifar10_autoaugment():
    """torchvision's AutoAugment object; used for its CIFAR-10 policy table and op implementations."""
    from torchvision.transforms import v2

    return v2.AutoAugment(policy=v2.AutoAugmentPolicy.CIFAR10)


def sample_auto_augment(n: int, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """Per-image AutoAugment decisions: sub-policy index, whether each of its two ops fires, signs.

    Same law as torchvision's ``AutoAugment.forward``: sub-policy uniform over the policy list;
    op j applied when u <= p_j; a signed magnitude negated when u' <= 0.5.
    """
    aa = _cifar10_autoaugment()
    probs = torch.tensor([[op[1] for op in sub] for sub in aa._policies], dtype=torch.float64)
    policy = _randint(len(aa._policies), (n,), generator, "cpu")
    apply = _rand((n, 2), generator, "cpu").double() <= probs[policy]
    negate = _rand((n, 2), generator, "cpu") <= 0.5
    return {"policy": policy, "apply": apply, "negate": negate}


def _op_magnitude(aa, transform_id: str, magnitude_idx, negate: bool, height: int, width: int) -> float:
    magnitudes_fn, signed = aa._AUGMENTATION_SPACE[transform_id]
    magnitudes = magnitudes_fn(NUM_MAGNITUDE_BINS, height, width)
    if magnitudes is None:
        return 0.0
    m = float(magnitudes[magnitude_idx])
    return -m if (signed and negate) else m


def apply_auto_augment(x: torch.Tensor, decisions: dict[str, torch.Tensor]) -> torch.Tensor:
    """Apply per-image AutoAugment decisions to uint8 x (N, C, H, W).

    Images sharing (sub-policy, op, sign) are transformed together as one batch through
    torchvision's own op implementation; the loop runs over the ≤ 2·25·2 such groups, not over
    images. Every op used is per-image on a batch (pointwise, per-image histograms/means, or one
    common affine map), so each image gets exactly what a one-image call would give it.
    """
    if x.dtype != torch.uint8 or x.dim() != 4:
        raise ValueError(f"auto_augment expects uint8 (N, C, H, W), got {x.dtype} {tuple(x.shape)}")
    aa = _cifar10_autoaugment()
    out = x.clone()
    h, w = x.shape[-2:]
    policy = decisions["policy"].cpu()
    for j in (0, 1):  # every image's first op before its second
        fired = torch.nonzero(decisions["apply"][:, j].cpu()).flatten()
        key = policy[fired] * 2 + decisions["negate"][fired, j].cpu().long()  # (sub-policy, sign)
        for k in torch.unique(key).tolist():
            sel = fired[key == k].to(x.device)
            transform_id, _prob, magnitude_idx = aa._policies[k // 2][j]
            mag = _op_magnitude(aa, transform_id, magnitude_idx, bool(k % 2), h, w)
            out[sel] = aa._apply_image_or_video_transform(
                out[sel], transform_id, mag, interpolation=aa.interpolation, fill=aa._fill
            )
    return out


def auto_augment(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """AutoAugment, CIFAR-10 policy (torchvision.transforms.v2), with a policy drawn PER IMAGE.

    torchvision's ``AutoAugment`` called on a batch draws one sub-policy for the whole batch;
    here each image draws its own sub-policy, op firings and signs from ``generator``
    (``sample_auto_augment``), and the ops are applied group-wise (``apply_auto_augment``).
    Input and output: uint8 (N, C, H, W), C in {1, 3}. Off by default in training.
    """
    return apply_auto_augment(x, sample_auto_augment(len(x), generator))
