"""mr2.results.margin_text: the per-class γ_k trajectories and the sentences the margins notebook ends
with, on a small hand-built per-epoch log whose every expected number is worked out by hand below.

The log (``epochs``) holds MR²'s default per-class γ_k of two datasets plus rows that must be ignored:
another method (erm), another variant (c_bar=0.5), another logged name ("a") and dataset-level rows
(class missing). Each expected sentence is written out from the hand-chosen means in the comments."""

from __future__ import annotations

import pandas as pd
import pytest

from mr2.results.margin_text import class_trajectories, margin_sentences

# ----------------------------------------------------------------------------- the hand-built tables
# cifar: 7 classes, 3 seeds, epochs 1, 2 and 4. The mean over seeds of class c at epoch e is
# CIFAR[e][c]; seed s adds CIFAR_OFFSET[e][s] (they sum to 0, so the mean is CIFAR[e][c], while the
# median, the first or the last seed would not be; the last epoch's differ, so changes vary by seed).
CIFAR = {1: [0.50, 0.60, 0.70, 0.80, 0.90, 1.10, 0.24],
         2: [0.61, 0.72, 0.83, 0.94, 1.05, 1.16, 0.27],
         4: [0.42, 0.57, 0.96, 0.73, 1.21, 1.34, 0.18]}
EARLY = {0: -0.03, 1: 0.01, 2: 0.02}
CIFAR_OFFSET = {1: EARLY, 2: EARLY, 4: {0: 0.02, 1: -0.04, 2: 0.02}}
# groups: 0, 1 easy; 2, 3 medium; 4, 5 hard; 6 has no group
CIFAR_GROUP = ["easy", "easy", "medium", "medium", "hard", "hard", None]
CIFAR_NAME = ["apple", "bee", "cat", "dog", "eel", "fox", "gnu"]
# mnist: 4 classes, 2 seeds (offsets -0.05, +0.05), epochs 2 and 3; class 2 (medium) is logged only
# at epoch 3, so the medium group is missing at the first epoch.
MNIST = {2: {0: 0.30, 1: 0.90, 3: 0.50},
         3: {0: 0.42, 1: 0.80, 2: 0.65, 3: 0.48}}
MNIST_OFFSET = {0: -0.05, 1: 0.05}
MNIST_GROUP = ["hard", "easy", "medium", "hard"]
MNIST_NAME = ["zero", "one", "two", "three"]
# mr2 variant c_bar=0.5 on cifar, seeds 0 and 1 (values per seed, mean in the comment):
# epoch 1: class 2 -> 1.8 (mean 1.8), class 4 -> 2.0/2.2 (2.1), class 5 -> 2.4/2.6 (2.5), class 6 -> 1.0/1.0
# epoch 4: class 4 -> 2.5/2.7 (2.6), class 5 -> 2.3/2.3 (2.3), class 6 -> 1.3/1.5 (1.4); class 2 absent
CBAR = [(1, 2, 0, 1.8), (1, 2, 1, 1.8), (1, 4, 0, 2.0), (1, 4, 1, 2.2), (1, 5, 0, 2.4), (1, 5, 1, 2.6),
        (1, 6, 0, 1.0), (1, 6, 1, 1.0), (4, 4, 0, 2.5), (4, 4, 1, 2.7), (4, 5, 0, 2.3), (4, 5, 1, 2.3),
        (4, 6, 0, 1.3), (4, 6, 1, 1.5)]  # (epoch, class, seed, value)
# erm on cifar, seed 0: epoch 1 class 0 -> 3.0, class 1 -> 3.2; epoch 4 class 0 -> 3.5, class 1 -> 3.1
ERM = [(1, 0, 3.0), (1, 1, 3.2), (4, 0, 3.5), (4, 1, 3.1)]
# mr2 default, logged name "a" on cifar class 2: seeds 0/1 at epoch 1 -> 5.0/5.4, at epoch 4 -> 6.0/6.2
A_ROWS = [(1, 0, 5.0), (1, 1, 5.4), (4, 0, 6.0), (4, 1, 6.2)]


def row(dataset, method, variant, seed, epoch, name, cls, value):
    return {"dataset": dataset, "method": method, "variant": variant, "seed": seed, "epoch": epoch,
            "name": name, "class": cls, "value": value}


def epochs_table() -> pd.DataFrame:
    rows = []
    for e, values in CIFAR.items():
        for s, off in CIFAR_OFFSET[e].items():
            rows += [row("cifar", "mr2", "default", s, e, "gamma", c, v + off) for c, v in enumerate(values)]
            # dataset-level rows: no class (one of them even named gamma), huge values
            rows.append(row("cifar", "mr2", "default", s, e, "gamma", pd.NA, 50.0))
            rows.append(row("cifar", "mr2", "default", s, e, "train_loss", pd.NA, 2.0 / e))
    for e, values in MNIST.items():
        for s, off in MNIST_OFFSET.items():
            rows += [row("mnist", "mr2", "default", s, e, "gamma", c, v + off) for c, v in values.items()]
            rows.append(row("mnist", "mr2", "default", s, e, "train_loss", pd.NA, 1.0 / e))
    rows += [row("cifar", "mr2", "c_bar=0.5", s, e, "gamma", c, v) for e, c, s, v in CBAR]
    rows += [row("cifar", "erm", "default", 0, e, "gamma", c, v) for e, c, v in ERM]
    rows += [row("cifar", "mr2", "default", s, e, "a", 2, v) for e, s, v in A_ROWS]
    frame = pd.DataFrame(rows)
    frame["class"] = frame["class"].astype("Int64")  # as mr2.results.tables.aggregate writes it
    return frame


def groups_table() -> pd.DataFrame:
    rows = [{"dataset": "cifar", "class": c, "group": g} for c, g in enumerate(CIFAR_GROUP) if g]
    rows += [{"dataset": "mnist", "class": c, "group": g} for c, g in enumerate(MNIST_GROUP)]
    rows += [{"dataset": "svhn", "class": 6, "group": "easy"}]  # another dataset's class 6: not cifar's
    return pd.DataFrame(rows)


def names_table() -> pd.DataFrame:
    """As mr2.results.groups.class_names returns it (here with a float class column)."""
    rows = [{"dataset": "cifar", "class": float(c), "class_name": n} for c, n in enumerate(CIFAR_NAME)]
    rows += [{"dataset": "mnist", "class": float(c), "class_name": n} for c, n in enumerate(MNIST_NAME)]
    rows += [{"dataset": "svhn", "class": 0.0, "class_name": "other"}]
    return pd.DataFrame(rows)


def expected_frame(rows, names=True):
    """rows: (dataset, epoch, class, mean value, group, class_name)."""
    frame = pd.DataFrame(rows, columns=["dataset", "epoch", "class", "value", "group", "class_name"])
    return frame.astype({"epoch": "int64", "class": "int64", "value": "float64"})


def check_frame(got, expected):
    assert list(got.columns) == ["dataset", "epoch", "class", "value", "group", "class_name"]
    assert got["class"].dtype == "int64"
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected, check_exact=False, rtol=0, atol=1e-12,
                                  check_dtype=False)
    # NaN group (class without a group) compared exactly
    assert got["group"].isna().tolist() == expected["group"].isna().tolist()


# ----------------------------------------------------------------------------- class_trajectories
def default_rows(with_names):
    rows = []
    for e in (1, 2, 4):
        rows += [("cifar", e, c, CIFAR[e][c], CIFAR_GROUP[c], CIFAR_NAME[c] if with_names else str(c))
                 for c in range(7)]
    for e in (2, 3):
        rows += [("mnist", e, c, MNIST[e][c], MNIST_GROUP[c], MNIST_NAME[c] if with_names else str(c))
                 for c in sorted(MNIST[e])]
    return rows


def test_class_trajectories_mean_over_seeds_with_group_and_name():
    got = class_trajectories(epochs_table(), groups_table(), names=names_table())
    check_frame(got, expected_frame(default_rows(True)))
    # spot checks written out: cifar class 0 at epoch 1 is the mean of 0.47, 0.51, 0.52
    first = got[(got["dataset"] == "cifar") & (got["epoch"] == 1) & (got["class"] == 0)]
    assert first["value"].item() == pytest.approx(0.50)
    assert first["group"].item() == "easy" and first["class_name"].item() == "apple"
    gnu = got[(got["dataset"] == "cifar") & (got["class"] == 6)]
    assert gnu["group"].isna().all() and (gnu["class_name"] == "gnu").all() and len(gnu) == 3
    assert len(got) == 21 + 7


def test_class_trajectories_without_names_uses_class_index_as_text():
    got = class_trajectories(epochs_table(), groups_table())
    check_frame(got, expected_frame(default_rows(False)))
    assert got["class_name"].map(type).eq(str).all()
    assert got.loc[got["dataset"] == "mnist", "class_name"].tolist() == ["0", "1", "3", "0", "1", "2", "3"]


def test_class_trajectories_selects_method_variant_and_name():
    erm = class_trajectories(epochs_table(), groups_table(), method="erm", names=names_table())
    check_frame(erm, expected_frame([("cifar", 1, 0, 3.0, "easy", "apple"), ("cifar", 1, 1, 3.2, "easy", "bee"),
                                     ("cifar", 4, 0, 3.5, "easy", "apple"), ("cifar", 4, 1, 3.1, "easy", "bee")]))
    cbar = class_trajectories(epochs_table(), groups_table(), variant="c_bar=0.5")
    check_frame(cbar, expected_frame([("cifar", 1, 2, 1.8, "medium", "2"), ("cifar", 1, 4, 2.1, "hard", "4"),
                                      ("cifar", 1, 5, 2.5, "hard", "5"), ("cifar", 1, 6, 1.0, None, "6"),
                                      ("cifar", 4, 4, 2.6, "hard", "4"), ("cifar", 4, 5, 2.3, "hard", "5"),
                                      ("cifar", 4, 6, 1.4, None, "6")]))
    a = class_trajectories(epochs_table(), groups_table(), name="a", names=names_table())
    check_frame(a, expected_frame([("cifar", 1, 2, 5.2, "medium", "cat"), ("cifar", 4, 2, 6.1, "medium", "cat")]))
    # only dataset-level rows of that name: nothing
    assert class_trajectories(epochs_table(), groups_table(), name="train_loss").empty


def test_class_trajectories_keeps_a_class_without_a_name():
    names = names_table()
    names = names[~((names["dataset"] == "cifar") & (names["class"] == 6.0))]  # gnu's name missing
    got = class_trajectories(epochs_table(), groups_table(), names=names)
    gnu = got[(got["dataset"] == "cifar") & (got["class"] == 6)]
    assert gnu["epoch"].tolist() == [1, 2, 4] and gnu["value"].tolist() == pytest.approx([0.24, 0.27, 0.18])
    assert gnu["class_name"].isna().all() and gnu["group"].isna().all()
    assert len(got) == 28


# ----------------------------------------------------------------------------- margin_sentences
# Intervals: mean ± t·sd/√n over seeds (sd with n − 1), t = 4.3027 for 3 seeds, 12.7062 for 2.
# cifar, epoch 1 -> 4. Per seed, a group's mean over its classes (class 6 has no group, left out) is
# the group's mean plus the seed's offset (-0.03, 0.01, 0.02 at epoch 1; 0.02, -0.04, 0.02 at epoch 4):
#   sd of the epoch-1 offsets 0.026458 -> half-width 4.3027 · 0.026458/√3 = 0.066
#   sd of the epoch-4 offsets 0.034641 -> half-width 4.3027 · 0.034641/√3 = 0.086
#   easy   (0.50 + 0.60) / 2 = 0.550 ± 0.066 -> (0.42 + 0.57) / 2 = 0.495 ± 0.086
#   medium (0.70 + 0.80) / 2 = 0.750 ± 0.066 -> (0.96 + 0.73) / 2 = 0.845 ± 0.086
#   hard   (0.90 + 1.10) / 2 = 1.000 ± 0.066 -> (1.21 + 1.34) / 2 = 1.275 ± 0.086
#   hard / easy per seed at the end: 1.295/0.515 = 2.5146, 1.235/0.455 = 2.7143, 2.5146: mean 2.581,
#   sd 0.1153, half-width 0.286 -> 2.58 [2.29, 2.87], above 1: larger
#   final, descending (mean, seed range = mean - 0.04 .. mean + 0.02): fox 1.34, eel 1.21, cat 0.96,
#   dog 0.73, bee 0.57, apple 0.42, gnu 0.18
#   changes per seed: the mean change plus (0.05, -0.05, 0): sd 0.05, half-width 0.124
#   eel +0.31 [+0.186, +0.434] (a rise); apple -0.08 [-0.204, +0.044] (contains 0: not shown)
CIFAR_LINES = [
    "cifar: MR²'s margins γ_k from epoch 1 to epoch 4 (mean over classes and seeds [95 % t-interval over seeds]): "
    "easy classes 0.550 [0.484, 0.616] → 0.495 [0.409, 0.581]; medium classes 0.750 [0.684, 0.816] → "
    "0.845 [0.759, 0.931]; hard classes 1.000 [0.934, 1.066] → 1.275 [1.189, 1.361].",
    "cifar: at the end the hard classes' mean γ_k is 2.58 [2.29, 2.87] times the easy classes' (mean of the "
    "per-seed ratios): larger, as Corollary 1 intends for harder classes.",
    "cifar: largest final γ_k (mean over seeds, their range): fox (hard, 1.340, seeds 1.300 to 1.360), "
    "eel (hard, 1.210, seeds 1.170 to 1.230), cat (medium, 0.960, seeds 0.920 to 0.980); smallest: "
    "gnu (no group, 0.180, seeds 0.140 to 0.200), apple (easy, 0.420, seeds 0.380 to 0.440), "
    "bee (easy, 0.570, seeds 0.530 to 0.590).",
    "cifar: over training (last minus first epoch, per seed) γ_k rose most for eel, +0.310 [+0.186, +0.434] "
    "(a rise), and fell most for apple, -0.080 [-0.204, +0.044] (rise or fall: not shown).",
]
# mnist, epoch 2 -> 3, two seeds (offsets -0.05, +0.05 at both epochs: sd 0.0707, half-width 12.7062 ·
# 0.0707/√2 = 0.635); medium (class 2) only at epoch 3: left out of the first sentence.
#   easy 0.900 -> 0.800; hard (0.30 + 0.50) / 2 = 0.400 -> (0.42 + 0.48) / 2 = 0.450
#   hard / easy per seed: 0.40/0.75 = 0.5333, 0.50/0.85 = 0.5882: mean 0.561, half-width 0.349
#   -> 0.56 [0.21, 0.91], below 1: smaller
#   final, descending: one 0.80, two 0.65, three 0.48, zero 0.42 (each ± 0.05 over seeds)
#   changes: zero +0.12, one -0.10 on both seeds: no spread, so no direction
MNIST_LINES = [
    "mnist: MR²'s margins γ_k from epoch 2 to epoch 3 (mean over classes and seeds [95 % t-interval over seeds]): "
    "easy classes 0.900 [0.265, 1.535] → 0.800 [0.165, 1.435]; hard classes 0.400 [-0.235, 1.035] → "
    "0.450 [-0.185, 1.085].",
    "mnist: at the end the hard classes' mean γ_k is 0.56 [0.21, 0.91] times the easy classes' (mean of the "
    "per-seed ratios): smaller: the margins favour the easy classes.",
    "mnist: largest final γ_k (mean over seeds, their range): one (easy, 0.800, seeds 0.750 to 0.850), "
    "two (medium, 0.650, seeds 0.600 to 0.700), three (hard, 0.480, seeds 0.430 to 0.530); smallest: "
    "zero (hard, 0.420, seeds 0.370 to 0.470), three (hard, 0.480, seeds 0.430 to 0.530), "
    "two (medium, 0.650, seeds 0.600 to 0.700).",
    "mnist: over training (last minus first epoch, per seed) γ_k rose most for zero, +0.120 [+0.120, +0.120] "
    "(rise or fall: undetermined (no spread between seeds)), and fell most for one, -0.100 [-0.100, -0.100] "
    "(rise or fall: undetermined (no spread between seeds)).",
]


def test_margin_sentences_two_datasets():
    assert margin_sentences(epochs_table(), groups_table(), names=names_table()) == CIFAR_LINES + MNIST_LINES


def test_margin_sentences_without_names_name_classes_by_index():
    lines = margin_sentences(epochs_table(), groups_table())
    assert lines[2] == CIFAR_LINES[2].replace("fox", "5").replace("eel", "4").replace("cat", "2").replace(
        "gnu", "6").replace("apple", "0").replace("bee", "1")
    assert lines[3] == CIFAR_LINES[3].replace("eel", "4").replace("apple", "0")
    assert lines[7] == MNIST_LINES[3].replace("zero", "0").replace("one", "1")
    assert [lines[i] for i in (0, 1, 4, 5)] == [CIFAR_LINES[0], CIFAR_LINES[1], MNIST_LINES[0], MNIST_LINES[1]]
    assert len(lines) == 8


def test_margin_sentences_of_another_variant():
    # c_bar=0.5, two seeds, epoch 1 -> 4: medium (class 2) only at epoch 1: left out; no easy class:
    # no ratio sentence. Half-width 12.7062 · sd/√2.
    #   hard per seed (2.0 + 2.4)/2 = 2.2, (2.2 + 2.6)/2 = 2.4: 2.300 ± 12.7062 · 0.1414/√2 = ± 1.271
    #        -> (2.5 + 2.3)/2 = 2.4, (2.7 + 2.3)/2 = 2.5: 2.450 ± 0.635
    #   final, descending: eel 2.6 (2.5 to 2.7), fox 2.3 (2.3 both), gnu 1.4 (1.3 to 1.5)
    #   changes: eel +0.5 on both seeds (no spread); fox -0.1, -0.3: -0.200 ± 1.271 (contains 0)
    assert margin_sentences(epochs_table(), groups_table(), variant="c_bar=0.5", names=names_table()) == [
        "cifar: MR² (c_bar=0.5)'s margins γ_k from epoch 1 to epoch 4 (mean over classes and seeds [95 % t-interval "
        "over seeds]): hard classes 2.300 [1.029, 3.571] → 2.450 [1.815, 3.085].",
        "cifar: largest final γ_k (mean over seeds, their range): eel (hard, 2.600, seeds 2.500 to 2.700), "
        "fox (hard, 2.300, seeds 2.300 to 2.300), gnu (no group, 1.400, seeds 1.300 to 1.500); smallest: "
        "gnu (no group, 1.400, seeds 1.300 to 1.500), fox (hard, 2.300, seeds 2.300 to 2.300), "
        "eel (hard, 2.600, seeds 2.500 to 2.700).",
        "cifar: over training (last minus first epoch, per seed) γ_k rose most for eel, +0.500 [+0.500, +0.500] "
        "(rise or fall: undetermined (no spread between seeds)), and fell most for fox, -0.200 [-1.471, +1.071] "
        "(rise or fall: not shown).",
    ]


def test_margin_sentences_of_another_method_and_name():
    # erm, one seed: apple 3.0 -> 3.5 (+0.5), bee 3.2 -> 3.1 (-0.1); both easy, so no ratio sentence
    assert margin_sentences(epochs_table(), groups_table(), method="erm", names=names_table()) == [
        "cifar: ERM's margins γ_k from epoch 1 to epoch 4 (mean over classes and seeds [95 % t-interval over "
        "seeds]): easy classes 3.100 (1 seed, no interval) → 3.300 (1 seed, no interval).",
        "cifar: largest final γ_k (mean over seeds, their range): apple (easy, 3.500, 1 seed), bee (easy, 3.100, "
        "1 seed); smallest: bee (easy, 3.100, 1 seed), apple (easy, 3.500, 1 seed).",
        "cifar: over training (last minus first epoch, per seed) γ_k rose most for apple, +0.500 (1 seed, no "
        "interval) (rise or fall: undetermined (too few seeds for an interval)), and fell most for bee, -0.100 "
        "(1 seed, no interval) (rise or fall: undetermined (too few seeds for an interval)).",
    ]
    # name "a", two seeds: cat 5.0, 5.4 -> 6.0, 6.2: 5.200 ± 12.7062 · 0.2828/√2 = ± 2.541 -> 6.100 ± 1.271;
    # change 1.0, 0.8: +0.900 ± 1.271 (contains 0)
    assert margin_sentences(epochs_table(), groups_table(), name="a", names=names_table()) == [
        "cifar: MR²'s margins γ_k from epoch 1 to epoch 4 (mean over classes and seeds [95 % t-interval over "
        "seeds]): medium classes 5.200 [2.659, 7.741] → 6.100 [4.829, 7.371].",
        "cifar: largest final γ_k (mean over seeds, their range): cat (medium, 6.100, seeds 6.000 to 6.200); "
        "smallest: cat (medium, 6.100, seeds 6.000 to 6.200).",
        "cifar: over training (last minus first epoch, per seed) γ_k rose most for cat, +0.900 [-0.371, +2.171] "
        "(rise or fall: not shown), and fell most for cat, +0.900 [-0.371, +2.171] (rise or fall: not shown).",
    ]


def svhn_log(*class_2_finals: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """svhn, a seed per value of ``class_2_finals``, epochs 1.0 and 2.0, classes 0, 1, 4 easy and 2, 3
    hard (values exact in binary); class 2's final γ_k on seed s is ``class_2_finals[s]``. Returns the
    epochs and groups tables."""
    rows = []
    for seed, final in enumerate(class_2_finals):
        values = {1.0: [0.5, 0.125, 0.25, 0.75, 0.0], 2.0: [0.25, 0.75, final, 0.875, 0.5]}
        rows += [row("svhn", "mr2", "default", seed, e, "gamma", c, v)
                 for e, vs in values.items() for c, v in enumerate(vs)]
    groups = pd.DataFrame({"dataset": "svhn", "class": [0, 1, 2, 3, 4],
                           "group": ["easy", "easy", "hard", "hard", "easy"]})
    return pd.DataFrame(rows), groups


def test_margin_sentences_of_one_seed_state_no_direction():
    # svhn, one seed, epochs 1 and 2 (as floats: the sentence still says "epoch 1"); classes 0, 1, 4
    # easy, 2, 3 hard (values exact in binary; three easy classes, so a median would differ)
    #   easy (0.5 + 0.125 + 0) / 3 = 0.2083 -> (0.25 + 0.75 + 0.5) / 3 = 0.5
    #   hard (0.25 + 0.75) / 2 = 0.5 -> (0.125 + 0.875) / 2 = 0.5
    #   ratio 0.5 / 0.5 = 1, no interval: no direction; final: 3 0.875, 1 0.75, 4 0.5, 0 0.25, 2 0.125
    #   changes: 0 -0.25, 1 +0.625, 2 -0.125, 3 +0.125, 4 +0.5
    assert margin_sentences(*svhn_log(0.125)) == [
        "svhn: MR²'s margins γ_k from epoch 1 to epoch 2 (mean over classes and seeds [95 % t-interval over seeds]): "
        "easy classes 0.208 (1 seed, no interval) → 0.500 (1 seed, no interval); hard classes 0.500 (1 seed, no "
        "interval) → 0.500 (1 seed, no interval).",
        "svhn: at the end the hard classes' mean γ_k is 1.00 (1 seed, no interval) times the easy classes' (mean of "
        "the per-seed ratios): larger or not: undetermined (too few seeds for an interval).",
        "svhn: largest final γ_k (mean over seeds, their range): 3 (hard, 0.875, 1 seed), 1 (easy, 0.750, 1 seed), "
        "4 (easy, 0.500, 1 seed); smallest: 2 (hard, 0.125, 1 seed), 0 (easy, 0.250, 1 seed), 4 (easy, 0.500, "
        "1 seed).",
        "svhn: over training (last minus first epoch, per seed) γ_k rose most for 1, +0.625 (1 seed, no interval) "
        "(rise or fall: undetermined (too few seeds for an interval)), and fell most for 0, -0.250 (1 seed, no "
        "interval) (rise or fall: undetermined (too few seeds for an interval)).",
    ]


def test_a_ratio_whose_interval_contains_one_is_not_shown_either_way():
    # two seeds: class 2 ends at 0.125 (ratio 0.5/0.5 = 1) and at 0.625 (hard (0.625 + 0.875)/2 = 0.75,
    # easy 0.5: 1.5): mean 1.25, sd 0.3536, half-width 12.7062 · 0.3536/√2 = 3.177 -> [-1.93, 4.43]
    assert margin_sentences(*svhn_log(0.125, 0.625))[1] == (
        "svhn: at the end the hard classes' mean γ_k is 1.25 [-1.93, 4.43] times the easy classes' (mean of the "
        "per-seed ratios): larger or not: not shown.")


def test_a_ratio_above_one_on_every_seed_is_larger():
    # three seeds, class 2 ending at 0.625, 0.75, 0.875: hard 0.75, 0.8125, 0.875 over easy 0.5: ratios
    # 1.5, 1.625, 1.75: mean 1.625, sd 0.125, half-width 4.3027 · 0.125/√3 = 0.311 -> [1.31, 1.94]
    assert margin_sentences(*svhn_log(0.625, 0.75, 0.875))[1] == (
        "svhn: at the end the hard classes' mean γ_k is 1.62 [1.31, 1.94] times the easy classes' (mean of the "
        "per-seed ratios): larger, as Corollary 1 intends for harder classes.")


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "focal"}, "No per-class gamma of Focal is logged: nothing to say about its margins."),
    ({"method": "mystery"}, "No per-class gamma of mystery is logged: nothing to say about its margins."),
    ({"name": "spread"}, "No per-class spread of MR² is logged: nothing to say about its margins."),
    # train_loss is logged, but only per dataset (class missing)
    ({"name": "train_loss"}, "No per-class train_loss of MR² is logged: nothing to say about its margins."),
    ({"variant": "lam=0"}, "No per-class gamma of MR² (lam=0) is logged: nothing to say about its margins."),
    ({"method": "mr2_uniform", "variant": "c_bar=0.5"},
     "No per-class gamma of MR² uniform γ (c_bar=0.5) is logged: nothing to say about its margins."),
])
def test_margin_sentences_when_nothing_is_logged(kwargs, message):
    assert margin_sentences(epochs_table(), groups_table(), names=names_table(), **kwargs) == [message]
