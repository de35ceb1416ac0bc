"""Reading back the premise analysis's tables (mr2.results.premise_tables.read_analysis): every table
by name, the epoch column as nullable integers (final rows have none), a missing table an error
naming it and the command that writes it."""

from __future__ import annotations

import pandas as pd
import pytest

from mr2.results import premise_tables

NAMES = ["correlations", "correlation_summary", "decomposition", "decomposition_summary", "margins"]


def write_tables(folder):
    folder.mkdir()
    for name in NAMES:
        if name.startswith("correlation"):  # a final row without an epoch, then epochs 1 and 12
            text = "dataset,source,epoch,rho\ntoy,final,,0.5\ntoy,epoch,1,0.25\ntoy,epoch,12,-0.75\n"
        else:
            text = "dataset,class,a\ntoy,0,1.5\ntoy,1,2.5\n"
        (folder / f"{name}.csv").write_text(text, encoding="utf-8")


def test_read_analysis_reads_every_table_with_integer_epochs(tmp_path):
    write_tables(tmp_path / "analysis")
    tables = premise_tables.read_analysis(tmp_path / "analysis")
    assert list(tables) == NAMES
    for name in ("correlations", "correlation_summary"):
        frame = tables[name]
        assert list(frame.columns) == ["dataset", "source", "epoch", "rho"]
        assert str(frame["epoch"].dtype) == "Int64"
        assert frame["epoch"].isna().tolist() == [True, False, False]
        assert frame["epoch"].iloc[1:].tolist() == [1, 12]
        assert frame["rho"].tolist() == [0.5, 0.25, -0.75]
    for name in ("decomposition", "decomposition_summary", "margins"):
        frame = tables[name]
        assert list(frame.columns) == ["dataset", "class", "a"]  # no epoch column added
        assert frame["class"].tolist() == [0, 1] and frame["a"].tolist() == [1.5, 2.5]


def test_a_missing_table_is_an_error_naming_it_and_the_command(tmp_path):
    write_tables(tmp_path / "analysis")
    (tmp_path / "analysis" / "margins.csv").unlink()
    with pytest.raises(FileNotFoundError) as error:
        premise_tables.read_analysis(tmp_path / "analysis")
    message = str(error.value)
    assert str(tmp_path / "analysis" / "margins.csv") in message
    assert "python -m mr2 analysis" in message


def test_margins_table_against_a_hand_computation():
    """ERM (seeds 0, 1) and MR² (seeds 0, 1, 2) on two classes, an ERM variant that is not the
    reference, no γ column (so γ_k = 1 for every run), class 1 without a group: every column by hand."""
    acc = {("erm", "default", 0): (0.9, 0.5), ("erm", "default", 1): (0.7, 0.3),
           ("erm", "lr=0.1", 0): (0.1, 0.1), ("mr2", "default", 0): (0.8, 0.6),
           ("mr2", "default", 1): (0.6, 0.4), ("mr2", "default", 2): (0.75, 0.45)}
    per_class = pd.DataFrame([{"dataset": "d", "method": m, "variant": v, "seed": s, "class": c,
                               "class_name": f"n{c}", "accuracy": a[c]} for (m, v, s), a in acc.items() for c in (0, 1)])
    groups = pd.DataFrame({"dataset": ["d"], "class": [0], "group": ["easy"]})
    out = premise_tables.margins_table(per_class, groups)
    assert len(out) == len(per_class) and (out["gamma"] == 1.0).all()
    erm_mean = {0: 0.8, 1: 0.4}  # ERM's default runs only
    for _, r in out.iterrows():
        c, key = r["class"], (r["method"], r["variant"], r["seed"])
        assert r["erm_accuracy"] == pytest.approx(erm_mean[c]) and r["erm_error"] == pytest.approx(1 - erm_mean[c])
        assert r["class_name"] == f"n{c}" and (r["group"] == "easy" if c == 0 else pd.isna(r["group"]))
        same_seed = acc.get(("erm", "default", r["seed"]))
        if key[0] == "erm" and key[1] == "default" or same_seed is None:
            assert pd.isna(r["change"])  # the reference itself; MR²'s seed 2 has no ERM run
        else:
            assert r["change"] == pytest.approx(acc[key][c] - same_seed[c])
        others = [acc[("erm", "default", s)][c] for s in (0, 1) if s != r["seed"]]
        assert r["erm_error_other_seeds"] == pytest.approx(1 - sum(others) / len(others))
