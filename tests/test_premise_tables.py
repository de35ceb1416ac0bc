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
