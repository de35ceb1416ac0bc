"""On a CUDA device (skipped without a GPU): the MR² loss against the same loss on the CPU, and the
whole-step CUDA graph (``train.cuda_graph``) against the eager step.

On CUDA the loss takes its fixed-shape, sync-free paths (dense pairs, B statistics slots when
B < K); on the CPU the label-dependent ones (sparse pairs, slots of the classes present). The
values, gradients and statistics must agree. A step replayed from a CUDA graph must give the
eager step's numbers within float tolerance on the same seed (float atomics make neither path
bit-reproducible on a GPU), and every loss marked ``capturable`` must capture. Needs torch,
pandas, PyYAML, tqdm and scikit-learn (the digits data), so it runs on a bare GPU machine
(``scripts/gpu_check.sh``).
"""

import threading

import pandas as pd
import pytest
import torch
from test_losses import assert_same_steps, mr2_steps
from test_step import loss_steps

from mr2.engine import config as run_config
from mr2.engine.step import capture, on_stream
from mr2.engine.train import train
from mr2.method.losses.factory import METHODS

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.parametrize("k,b", [(10, 64), (100, 512), (1000, 512)])
@pytest.mark.parametrize("method", ["mr2", "mr2_uniform", "mr2_no_rep"])
def test_cuda_loss_equals_cpu_loss(k, b, method):
    assert_same_steps(mr2_steps(method, k, b, 32, device="cuda"), mr2_steps(method, k, b, 32))


@pytest.mark.parametrize("method,amp,tol", [("erm", "off", 1e-4), ("mr2", "off", 1e-4), ("mr2", "bf16", 1e-2)])
def test_cuda_graph_training_equals_eager_training(digits, tmp_path, method, amp, tol):
    """small_cnn on digits (crop+flip on the device), 2 epochs of 22 steps: 3 warm-up steps, the
    capture, then replays, across an epoch boundary; epoch logs and final weights as eager's."""
    runs = {}
    for graph in (False, True):
        cfg = run_config.deep_merge(run_config.DEFAULTS, {
            "data": {"name": "digits"}, "model": {"name": "small_cnn", "options": {"width": 8}}, "method": {"name": method},
            "device": "cuda", "amp": amp, "train": {"epochs": 2, "batch_size": 64, "crop_padding": 1, "cuda_graph": graph}})
        messages = []
        train(cfg, digits, tmp_path / str(graph), log=messages.append)
        assert not any("capture failed" in m for m in messages), messages
        log = pd.read_csv(tmp_path / str(graph) / "epochs.csv").query("name != 'seconds'").reset_index(drop=True)
        runs[graph] = (log, torch.load(tmp_path / str(graph) / "model.pt", weights_only=False)["state"])
    (log_e, state_e), (log_g, state_g) = runs[False], runs[True]
    pd.testing.assert_frame_equal(log_e, log_g, check_exact=False, rtol=tol, atol=tol)
    for part in ("model", "loss"):
        for key, value in state_e[part].items():
            if value.is_floating_point():
                torch.testing.assert_close(state_g[part][key], value, rtol=tol, atol=tol, msg=f"{part}.{key}")
            else:
                assert torch.equal(state_g[part][key], value), key


def test_cuda_graph_trains_on_a_file_backed_split(tmp_path):
    """Image files decoded by DataLoader workers, whose pin-memory thread allocates pinned memory
    while the step is captured: the capture must not fail (it restricts only its own thread)."""
    pytest.importorskip("PIL")
    from test_data import write_image_folder

    from mr2.engine.data import prepare_dataset

    write_image_folder(tmp_path / "imgs", per_class=(24, 4))  # 72 training images of 3 classes
    data_cfg = {"name": "image_folder", "root": str(tmp_path / "imgs"), "image_size": 12}
    prepare_dataset(data_cfg, tmp_path / "files.pt")
    cfg = run_config.deep_merge(run_config.DEFAULTS, {
        "data": data_cfg, "model": {"name": "small_cnn", "options": {"width": 8}}, "method": {"name": "mr2"},
        "device": "cuda", "train": {"epochs": 2, "batch_size": 8, "num_workers": 2, "cuda_graph": True}})
    messages = []
    train(cfg, tmp_path / "files.pt", tmp_path / "run", log=messages.append)
    assert not any("capture failed" in m for m in messages), messages
    log = pd.read_csv(tmp_path / "run" / "epochs.csv").query("name == 'train_loss'")
    assert len(log) == 2 and log["value"].notna().all()


def test_capture_goes_on_while_another_thread_pins_memory_and_copies():
    """What a DataLoader's pin-memory thread does (pinned allocations, whose reuse queries CUDA
    events), here with copies to the GPU on its own stream, all during a long capture."""
    x = torch.ones(1 << 16, device="cuda")
    stream, copies = torch.cuda.Stream(), torch.cuda.Stream()
    target = torch.empty(1 << 20, device="cuda")
    stop, errors = threading.Event(), []

    def pin_and_copy():
        n = 0
        try:
            with torch.cuda.stream(copies):
                while not stop.is_set():
                    target[: 1 << (8 + n % 12)].copy_(torch.rand(1 << (8 + n % 12)).pin_memory(), non_blocking=True)
                    n += 1
        except Exception as exc:  # noqa: BLE001 - the test's finding
            errors.append(exc)

    def run():
        for _ in range(3000):
            x.add_(1.0)

    with on_stream(stream):
        run()
    opt = torch.optim.SGD([torch.zeros(1, device="cuda", requires_grad=True)], lr=0.1)
    worker = threading.Thread(target=pin_and_copy)
    worker.start()
    try:
        replay = capture(run, stream, [], opt)
    finally:
        stop.set()
        worker.join()
    assert not errors, errors
    replay()
    torch.cuda.synchronize()
    assert torch.equal(x, torch.full_like(x, 6001.0))  # 1 + warm-up (3000) + one replay (3000)


# last in this file: a failed capture is the one case that leaves a capture stream behind
@pytest.mark.parametrize("method", sorted(METHODS, key=lambda m: (m == "center", m)))
def test_cuda_graph_captures_exactly_the_capturable_losses(method):
    """Capture two training steps of each loss (forward and backward) in a CUDA graph after a
    warm-up on the same side stream (torch's recipe); ``capturable`` says whether that works."""
    loss, run = loss_steps(method, device="cuda")
    stream = torch.cuda.Stream()
    with on_stream(stream):
        run()  # warm-up: lazy state outside the graph
    opt = torch.optim.SGD([torch.zeros(1, device="cuda", requires_grad=True)], lr=0.1)  # capture() takes one
    try:
        replay, error = capture(run, stream, [], opt), None
    except Exception as exc:  # noqa: BLE001 - e.g. "operation not permitted when stream is capturing"
        replay, error = None, exc
    torch.cuda.synchronize()
    assert (replay is not None) == loss.capturable, error
    if replay is not None:
        replay()
        torch.cuda.synchronize()
