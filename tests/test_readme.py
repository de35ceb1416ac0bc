"""The result pages are generated: each block of docs/results.md equals a results table the pipeline
wrote (kept in docs/results/<name>/), and that Markdown equals what the code makes of its CSV; the
README's verdict, short table and headline are what the code makes of the snapshots; the README stays
a front page (at most 250 lines, in the issue's order, every page it links present)."""

import itertools
import re
from pathlib import Path

import pandas as pd
import pytest

from mr2.results.readme import (fill_block, readme_blocks, report_figure, report_sections, require_block,
                               snapshot_markdown, update_readme)
from mr2.results.tables import write_results_table

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results.md"  # every snapshot's blocks
BLOCKS = readme_blocks(PAGE.read_text())


def test_the_readme_shows_the_default_run_and_the_convergence_check():
    assert {"default", "convergence"} <= set(BLOCKS)


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_each_block_is_the_table_the_pipeline_wrote(name):
    folder = ROOT / "docs" / "results" / name
    md = (folder / "results.md").read_text().strip("\n")
    assert BLOCKS[name] == md
    assert snapshot_markdown(folder / "results.csv").strip("\n") == md  # the Markdown is the CSV's


@pytest.mark.parametrize("name", sorted(readme_blocks(PAGE.read_text(), "excerpt")))
def test_each_excerpt_is_the_report_text_the_pipeline_wrote(name):
    text = readme_blocks(PAGE.read_text(), "excerpt")[name]
    assert text == (ROOT / "docs" / "results" / name / "excerpt.md").read_text().strip("\n")
    assert name in BLOCKS  # an excerpt stands beside its run's results table


@pytest.mark.parametrize("block", sorted(readme_blocks(PAGE.read_text(), "figure")))
def test_each_figure_is_the_report_figure_the_pipeline_drew(block):
    """A figure block shows the snapshot's copy of a report figure with the report's caption."""
    name, stem = block.split(".", 1)
    text = readme_blocks(PAGE.read_text(), "figure")[block]
    folder = ROOT / "docs" / "results" / name
    assert text == (folder / f"{stem}.md").read_text().strip("\n")
    assert text.startswith(f"![{stem}](results/{name}/{stem}.png)\n\n") and len(text.splitlines()) > 3
    assert (folder / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert name in BLOCKS  # a figure stands beside its run's results table


REPORT = """# Report

## Results

a table

## Long-tailed data: groups

intro

### lt

![figure](figures/x.png)
A caption of the figure,
over two lines.

| a | b |

- Positive control: **reproduced**.

## Does the premise hold?

### Link 1

![figure](figures/z.png)

A caption after a blank line.

holds

## Figures

![f](figures/y.png)
"""


def test_report_sections_keep_whole_sections_without_their_figures():
    out = report_sections(REPORT, ["Long-tailed data", "Link 1"])
    assert out == ("**Long-tailed data: groups**\n\nintro\n\n**lt**\n\n| a | b |\n\n"
                   "- Positive control: **reproduced**.\n\n**Link 1**\n\nholds")
    assert report_sections(REPORT, ["Does the premise"]).endswith("**Link 1**\n\nholds")  # subsections come along
    with pytest.raises(ValueError, match="no section 'Sweeps'"):
        report_sections(REPORT, ["Sweeps"])
    # a (sub)section that held only a figure leaves no empty heading behind
    assert report_sections(REPORT, ["Figures"]) == ""
    assert report_sections("## A\n\n### fig\n\n![x](x.png)\n\n### fig\n\ntext\n", ["A"]) == "**A**\n\n**fig**\n\ntext"


def test_report_figure_finds_a_figure_and_its_caption():
    assert report_figure(REPORT, "x") == ("figures/x.png", "A caption of the figure,\nover two lines.")
    assert report_figure(REPORT, "z") == ("figures/z.png", "A caption after a blank line.")
    assert report_figure(REPORT, "y") == ("figures/y.png", "")  # the last line of the report: no caption
    with pytest.raises(ValueError, match="no figure 'w'"):
        report_figure(REPORT, "w")


def test_the_verdict_blocks_are_what_the_code_makes_of_the_snapshots():
    """The verdict blocks of docs/results.md and the README (full table, judged rows, headline) are
    regenerated from docs/results/*/ and compared: generated text is tested by regenerating it. The full
    table comes before every results table of the page."""
    from mr2.results.snapshots import snapshot_primaries, snapshot_verdicts
    from mr2.results.verdict_text import BEGIN, HEADLINE, SHORT, readme_verdicts, verdict_blocks

    snapshots = ROOT / "docs" / "results"
    table, primaries = snapshot_verdicts(snapshots), snapshot_primaries(snapshots)
    text = PAGE.read_text()
    assert readme_verdicts(text) == verdict_blocks(table, primaries, "results")[(BEGIN, END_OF(BEGIN))]
    assert text.index(BEGIN) < min(text.index(f"<!-- results:{name} -->") for name in BLOCKS)
    front = (ROOT / "README.md").read_text()
    blocks = verdict_blocks(table, primaries, "docs/results")
    assert readme_verdicts(front, SHORT) == blocks[SHORT] and readme_verdicts(front, HEADLINE) == blocks[HEADLINE]
    assert "Run sets not judged" not in blocks[SHORT]  # the front page shows the judged rows only


def END_OF(begin: str) -> str:
    return begin.replace("<!-- ", "<!-- /")


def test_the_readme_is_a_front_page():
    """The first screen is the title, then one plain sentence and one line per judged row (the headline
    block); at most 250 lines, in the order: the verdict, limitations, the two commands with their
    measured time, rerunning one ablation / method / config, where everything else is; every page and
    file it links exists."""
    from mr2.results.verdict_text import HEADLINE

    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert lines[0].startswith("# ") and lines[2] == HEADLINE[0]
    block = lines[3:lines.index(HEADLINE[1])]
    assert block[0].startswith("**") and block[0].endswith("**") and block[0].count(". ") <= 1  # one sentence
    assert block[1] == "" and all(line.startswith("- ") for line in block[2:])
    assert len(lines) <= 250
    headings = [h for h in re.findall(r"^## (.+)$", text, re.M)]
    assert [h.split(" ")[0] for h in headings] == ["The", "Limitations:", "Two", "Rerun", "Where"]
    assert "bash scripts/run.sh" in text and "bash scripts/test.sh" in text and re.search(r"\*\*\d+ min \d+ s\*\*", text)
    for link in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        assert (ROOT / link).exists(), link
    assert max(len(line) for line in lines if not line.startswith(("|", "- ", "**"))) <= 400  # prose
    assert "small margin term added to cross-entropy" not in text and "rescaling of the logits" in text


def test_update_readme_fills_one_block_and_keeps_the_rest(tmp_path):
    table = pd.DataFrame([{"dataset": "d", "method": "erm", "variant": "default", "n_seeds": 2, "n_paired": 0,
                           "all_mean": 81.25, "all_std": 0.5, "all_diff": float("nan"), "all_diff_lo": float("nan"),
                           "all_diff_hi": float("nan")}])
    tables = tmp_path / "tables"
    tables.mkdir()
    write_results_table(table, tables / "results.csv", tables / "results.md")
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- results:x -->\nold\n<!-- /results:x -->\nafter\n")
    with pytest.raises(FileNotFoundError, match=r"elsewhere/results.csv.* not found"):  # a run without its table
        update_readme(tmp_path / "elsewhere", "x", readme, tmp_path)
    assert not (tmp_path / "docs").exists() and "old" in readme.read_text()  # nothing made or changed
    update_readme(tables, "x", readme, tmp_path)
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("after\n") and "old" not in text
    assert readme_blocks(text)["x"] == (tmp_path / "docs/results/x/results.md").read_text().strip("\n")
    assert "81.2 ± 0.5" in text or "81.3 ± 0.5" in text
    with pytest.raises(ValueError, match="no block"):
        update_readme(tables, "y", readme, tmp_path)
    # a section of the run's report (default: beside the tables) kept and shown in the excerpt block
    (tmp_path / "report.md").write_text(REPORT)
    with pytest.raises(ValueError, match="no block <!-- excerpt:x -->"):
        update_readme(tables, "x", readme, tmp_path, sections=["Long-tailed data"])
    readme.write_text(text + "<!-- excerpt:x -->\n<!-- /excerpt:x -->\n")
    update_readme(tables, "x", readme, tmp_path, sections=["Long-tailed data"])
    excerpt = (tmp_path / "docs/results/x/excerpt.md").read_text().strip("\n")
    assert readme_blocks(readme.read_text(), "excerpt")["x"] == excerpt == report_sections(REPORT, ["Long-tailed data"])
    # a figure of the report copied with its caption into the snapshot and shown in its block
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures/x.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    with pytest.raises(ValueError, match="no block <!-- figure:x.x -->"):
        update_readme(tables, "x", readme, tmp_path, figures=["x"])
    assert not (tmp_path / "docs/results/x/x.png").exists()  # nothing copied before the README is checked
    readme.write_text(readme.read_text() + "<!-- figure:x.x -->\n<!-- /figure:x.x -->\n")
    update_readme(tables, "x", readme, tmp_path, figures=["x"])
    shown = readme_blocks(readme.read_text(), "figure")["x.x"]
    assert shown == "![x](docs/results/x/x.png)\n\nA caption of the figure,\nover two lines."
    # a caption naming the run's tables points at the snapshot's copies
    (tmp_path / "report.md").write_text(REPORT.replace("over two lines.", "see results/tables/comparisons.csv."))
    update_readme(tables, "x", readme, tmp_path, figures=["x"])
    assert readme_blocks(readme.read_text(), "figure")["x.x"].endswith("see docs/results/x/comparisons.csv.")
    (tmp_path / "report.md").write_text(REPORT)
    update_readme(tables, "x", readme, tmp_path, figures=["x"])
    assert (tmp_path / "docs/results/x/x.png").read_bytes().endswith(b"fake")
    assert (tmp_path / "docs/results/x/x.md").read_text().strip("\n") == shown
    outside = tmp_path.parent / f"{tmp_path.name}-outside.png"  # a file that exists, but not beside the report
    outside.write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "report.md").write_text(REPORT + f"\n![e](../{outside.name})\n")
    for bad, error in [("../x", "letters, digits"), ("w", "no figure 'w'"), ("y", "not a file beside the report"),
                       (outside.stem, "not a file beside the report")]:
        with pytest.raises((ValueError, FileNotFoundError), match=error):
            update_readme(tables, "x", readme, tmp_path, figures=[bad])


def test_blocks_sections_and_captions_at_their_edges(tmp_path):
    text = "a\n<!-- results:x -->\nold\n<!-- /results:x -->\nz\n"
    assert fill_block(text, "x", "new", "results") == "a\n<!-- results:x -->\nnew\n<!-- /results:x -->\nz\n"
    for half in ("a\n<!-- results:x -->\nz\n", "a\n<!-- /results:x -->\nz\n"):  # one marker of the two
        with pytest.raises(ValueError, match="no block <!-- results:x --> ... <!-- /results:x -->"):
            require_block(half, "x", "results")
    with pytest.raises(ValueError, match="no section 'P', 'Q'"):
        report_sections(REPORT, ["P", "Q"])
    # a section that held only a figure, followed by a top-level heading, leaves no heading behind
    assert report_sections("## A\n\n![x](x.png)\n\n# B\n\ntext\n", ["A", "B"]) == "**B**\n\ntext"
    # a caption ends at a heading or another image even without a blank line before it
    assert report_figure("![a](a.png)\ncap\n## H\n", "a") == ("a.png", "cap")
    assert report_figure("![a](a.png)\ncap\n![b](b.png)\n", "a") == ("a.png", "cap")
    table = pd.DataFrame([{"dataset": "d", "method": "erm", "variant": "default", "n_seeds": 2, "n_paired": 0,
                           "all_mean": 81.25, "all_std": 0.5, "all_diff": float("nan"), "all_diff_lo": float("nan"),
                           "all_diff_hi": float("nan")}])
    table.to_csv(tmp_path / "r.csv", index=False)
    assert "Δ: difference to ldam (default)" in snapshot_markdown(tmp_path / "r.csv", reference="ldam")


def test_update_readme_defaults_errors_stale_files_and_settings(tmp_path, monkeypatch):
    tables = tmp_path / "run" / "tables"
    tables.mkdir(parents=True)
    readme = tmp_path / "README.md"
    readme.write_text("<!-- results:x -->\n<!-- /results:x -->\n<!-- excerpt:x -->\n<!-- /excerpt:x -->\n")
    with pytest.raises(FileNotFoundError, match=rf"{tables / 'results.csv'}, {tables / 'results.md'} not found"):
        update_readme(tables, "x", readme, tmp_path)
    with pytest.raises(ValueError, match=r"snapshot name '\.\./x'"):
        update_readme(tables, "../x", readme, tmp_path)
    with pytest.raises(ValueError, match=r"figure 'a b'"):
        update_readme(tables, "x", readme, tmp_path, figures=["a b"])
    table = pd.DataFrame([{"dataset": "d", "method": "erm", "variant": "default", "n_seeds": 2, "n_paired": 0,
                           "all_mean": 81.25, "all_std": 0.5, "all_diff": float("nan"), "all_diff_lo": float("nan"),
                           "all_diff_hi": float("nan")}])
    write_results_table(table, tables / "results.csv", tables / "results.md")
    with pytest.raises(FileNotFoundError, match=r"report.md not found: the run's report holds the sections \['A'\] "
                                                r"and figures \[\]"):
        update_readme(tables, "x", readme, tmp_path, sections=["A"])
    # a report named explicitly is read from there, not from beside the tables
    (tmp_path / "elsewhere.md").write_text("## A\n\nfrom elsewhere\n")
    update_readme(tables, "x", readme, tmp_path, sections=["A"], report=tmp_path / "elsewhere.md")
    assert readme_blocks(readme.read_text(), "excerpt")["x"] == "**A**\n\nfrom elsewhere"
    # settings keep their text as written ("None", "NA" are values, not missing) and gain the config
    pd.DataFrame({"dataset": ["d"], "cap": ["None"], "model": ["NA"]}).to_csv(tables / "settings.csv", index=False)
    (tables / "comparisons.csv").write_text("dataset\nd\n")
    folder = update_readme(tables, "x", readme, tmp_path, config="config/x.yaml")
    assert (folder / "settings.csv").read_text().splitlines() == ["dataset,cap,model,config", "d,None,NA,config/x.yaml"]
    assert (folder / "comparisons.csv").is_file()
    # a later snapshot of a run without comparisons drops the stale copy; by default the page
    # (docs/results.md) and the snapshots are those of the current folder, and the config is the
    # snapshot's name
    (tables / "comparisons.csv").unlink()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs" / "results.md").write_text(readme.read_text())
    assert update_readme(tables, "x") == Path("docs") / "results" / "x"
    assert not (folder / "comparisons.csv").exists() and (folder / "results.csv").is_file()
    assert (folder / "settings.csv").read_text().splitlines()[1] == "d,None,NA,x"
    page = (tmp_path / "docs" / "results.md").read_text()
    assert readme_blocks(page)["x"] == (folder / "results.md").read_text().strip("\n")


def test_the_own_loop_snippet_runs_as_written():
    import re

    text = (ROOT / "docs" / "pipeline.md").read_text()
    code = re.search(r"<!-- snippet:own-loop -->\n```python\n(.*?)```\n<!-- /snippet:own-loop -->", text, re.S).group(1)
    scope: dict = {}
    exec(compile(code, "README snippet", "exec"), scope)  # noqa: S102 - our own README
    gamma = scope["criterion"].margins()
    assert gamma.shape == (10,) and abs(float(gamma.mean()) - 1.0) < 1e-5  # Corollary 1 keeps the mean at c̄
    assert scope["criterion"].stats.count.sum() == 20 * 32  # every sample merged into the statistics


def one_row_tables(folder):
    table = pd.DataFrame([{"dataset": "d", "method": "erm", "variant": "default", "n_seeds": 2, "n_paired": 0,
                           "all_mean": 81.25, "all_std": 0.5, "all_diff": float("nan"), "all_diff_lo": float("nan"),
                           "all_diff_hi": float("nan")}])
    folder.mkdir(parents=True, exist_ok=True)
    write_results_table(table, folder / "results.csv", folder / "results.md")
    return folder


def test_a_marker_quoted_in_prose_is_text_and_an_unclear_block_is_refused(tmp_path):
    """Issue 41: a begin marker quoted in a sentence once made `mr2 readme` delete every line up to the
    real block with exit code 0. Markers count only as whole lines; a doubled or reversed marker is one
    line of error and the README is left as it was."""
    import test_safety as safety

    tables = one_row_tables(tmp_path / "tables")
    readme = tmp_path / "README.md"
    prose = ("The table sits between `<!-- results:x -->` and its end marker.\nline A <!-- /results:x --> quoted\n"
             "line B\n<!-- results:x -->\nold\n<!-- /results:x -->\nafter\n")
    readme.write_text(prose)
    update_readme(tables, "x", readme, tmp_path, log=lambda *_: None)
    text = readme.read_text()
    assert text.startswith(prose.split("<!-- results:x -->\nold")[0]) and text.endswith("<!-- /results:x -->\nafter\n")
    assert "old" not in text and readme_blocks(text)["x"] == (tmp_path / "docs/results/x/results.md").read_text().strip()
    for bad, needle in [("<!-- results:x -->\na\n<!-- /results:x -->\n<!-- results:x -->\nb\n<!-- /results:x -->\n",
                         "marker line <!-- results:x --> 2 times (lines 1, 4)"),
                        ("keep\n<!-- /results:x -->\nkeep too\n<!-- results:x -->\n",
                         "<!-- /results:x --> (line 2) comes before <!-- results:x --> (line 4)"),
                        ("the block `<!-- results:x -->` ... `<!-- /results:x -->` is shown here\n",
                         "no block <!-- results:x --> ... <!-- /results:x -->")]:
        readme.write_text(bad)
        res = safety.mr2("readme", "--tables", str(tables), "--name", "x", "--readme", str(readme))
        safety.assert_one_line_error(res, needle)
        assert readme.read_text() == bad  # nothing lost, nothing written
    with pytest.raises(ValueError, match="hold one of its marker lines"):
        fill_block("<!-- results:x -->\n<!-- /results:x -->\n", "x", "a\n<!-- /results:x -->\nb")


def test_the_default_page_in_docs_keeps_its_snapshot_under_the_repository_docs_results(tmp_path):
    """`mr2 readme --readme docs/results.md` (the default page) keeps the snapshot in docs/results/<name>/
    beside the page, not in docs/docs/results/, and refreshes the front page's verdict blocks."""
    import test_safety as safety

    tables = one_row_tables(tmp_path / "tables")
    page = tmp_path / "docs" / "results.md"
    page.parent.mkdir()
    page.write_text("<!-- results:x -->\n<!-- /results:x -->\n")
    res = safety.mr2("readme", "--tables", str(tables), "--name", "x", "--readme", str(page))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "docs" / "results" / "x" / "results.md").is_file()
    assert not (tmp_path / "docs" / "docs").exists()
    assert readme_blocks(page.read_text())["x"] == (tmp_path / "docs/results/x/results.md").read_text().strip()


@pytest.mark.parametrize("name", ["..", ".", "-x", "a/b", "a..b"])
def test_a_snapshot_name_that_is_no_safe_name_is_refused_before_anything_is_written(tmp_path, name):
    import test_safety as safety

    tables = one_row_tables(tmp_path / "tables")
    readme = tmp_path / "README.md"
    readme.write_text(f"<!-- results:{name} -->\n<!-- /results:{name} -->\n")
    res = safety.mr2("readme", "--tables", str(tables), f"--name={name}", "--readme", str(readme))
    safety.assert_one_line_error(res, f"snapshot name {name!r} is not a safe name")
    assert not (tmp_path / "docs").exists() and not (ROOT / "docs" / "results.csv").exists()


def test_a_new_snapshot_without_its_excerpt_and_figure_removes_the_old_ones(tmp_path):
    """Issue 41: a re-snapshot kept an earlier run's excerpt ("16 seeds") under the new table."""
    tables = one_row_tables(tmp_path / "run" / "tables")
    (tmp_path / "run" / "report.md").write_text(REPORT.replace("intro", "16 seeds"))
    (tmp_path / "run" / "figures").mkdir()
    (tmp_path / "run" / "figures" / "x.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- results:x -->\n<!-- /results:x -->\nb\n<!-- excerpt:x -->\n<!-- /excerpt:x -->\nc\n"
                      "<!-- figure:x.x -->\n<!-- /figure:x.x -->\nd\n<!-- excerpt:y -->\nother\n<!-- /excerpt:y -->\n")
    update_readme(tables, "x", readme, tmp_path, sections=["Long-tailed data"], figures=["x"], log=lambda *_: None)
    folder = tmp_path / "docs" / "results" / "x"
    assert "16 seeds" in readme.read_text() and (folder / "excerpt.md").is_file() and (folder / "x.png").is_file()
    said = []
    update_readme(tables, "x", readme, tmp_path, log=said.append)  # the next run's table alone
    text = readme.read_text()
    assert "16 seeds" not in text and "excerpt:x" not in text and "figure:x.x" not in text
    assert text.startswith("a\n<!-- results:x -->\n") and "\nb\nc\nd\n<!-- excerpt:y -->\nother\n" in text
    assert not (folder / "excerpt.md").exists() and not (folder / "x.png").exists() and not (folder / "x.md").exists()
    assert (folder / "results.md").is_file() and len(said) == 2 and "excerpt:x" in said[0] and "figure:x.x" in said[1]


def fmt(x: float) -> str:
    """A ρ as the pages write it: two decimals, signed, with a minus sign (−)."""
    return f"{x:+.2f}".replace("-", "−")


def sign(x: float) -> str:
    """A Δ in points as the pages write it: one decimal, signed, with a minus sign (−)."""
    return f"{x:+.1f}".replace("-", "−")


def t_interval(values, level: float = 0.95) -> tuple[float, float]:
    """The t-interval of the mean of ``values`` (seeds) at ``level`` (0.90: the two one-sided tests')."""
    import numpy as np
    from scipy import stats

    values = np.asarray(values, dtype=float)
    half = stats.t.ppf(0.5 + level / 2, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
    return values.mean() - half, values.mean() + half


def group_by_seed(snap: Path, dataset: str, group: str) -> pd.DataFrame:
    """Accuracy (%) of a group of classes ("all": every class) per run of a snapshot's default
    variants, from its per_class.csv and groups.csv: a column per method, a row per seed."""
    pc = pd.read_csv(snap / "per_class.csv").merge(pd.read_csv(snap / "groups.csv"), on=["dataset", "class"])
    in_group = pc["group"].eq(group) if group != "all" else True
    rows = pc[pc["variant"].eq("default") & pc["dataset"].eq(dataset) & in_group]
    return rows.groupby(["method", "seed"])["accuracy"].mean().unstack("method") * 100


def paired_by_seed(snap: Path, dataset: str, a: str, b: str, group: str):
    """Method ``a``'s accuracy minus method ``b``'s on a group of classes, paired by seed (points; the
    seeds both ran), from a snapshot's per-seed tables."""
    t = group_by_seed(snap, dataset, group)
    return (t[a] - t[b]).dropna().to_numpy()


def flat(path: Path) -> str:
    """A page as one line, every run of whitespace one space: a sentence is found whatever its line breaks."""
    return " ".join(path.read_text().split())


def paired_text(snap: Path, dataset: str, a: str, b: str, group: str, seeds: int) -> str:
    """``paired_by_seed`` as the pages write it (``delta_text``), over exactly ``seeds`` paired seeds."""
    d = paired_by_seed(snap, dataset, a, b, group)
    assert len(d) == seeds, (a, b, group, len(d))
    return delta_text(d)


def delta_text(d) -> str:
    """A paired Δ as the pages write it: mean [95 % t-interval over seeds], each signed (−)."""
    lo, hi = t_interval(d)
    return f"{sign(d.mean())} [{sign(lo)}, {sign(hi)}]"


def premise_rho(snap: Path, dataset: str):
    """ρ(a method's per-class column, ERM's per-class test error) per seed across classes, from a
    snapshot's per_class.csv: a function of (method, column) giving the mean and its 95 % t-interval."""
    import numpy as np
    from scipy import stats

    pc = pd.read_csv(snap / "per_class.csv")
    pc = pc[pc["dataset"].eq(dataset) & pc["variant"].eq("default")]
    error = 1 - pc[pc["method"].eq("erm")].groupby("class")["accuracy"].mean()

    def rho(method, column):
        r = np.array([stats.spearmanr(error.loc[g["class"]].to_numpy(), g[column].to_numpy())[0]
                      for _, g in pc[pc["method"].eq(method)].groupby("seed")])
        return (r.mean(), *t_interval(r))
    return rho


def margin_change_rho(pc: pd.DataFrame) -> tuple[float, float, float]:
    """ρ(γ_k, MR² − ce_temperature): per seed, Spearman's ρ across classes between MR²'s γ_k and its paired
    accuracy change against the tuned temperature, from one dataset's default-variant per-class rows:
    the mean and its 95 % t-interval over seeds."""
    import numpy as np
    from scipy import stats

    gamma = pc[pc["method"].eq("mr2")].pivot_table(index="seed", columns="class", values="gamma")
    acc = pc.pivot_table(index=["seed", "class"], columns="method", values="accuracy")
    change = (acc["mr2"] - acc["ce_temperature"]).unstack("class").round(9)  # exact ties stay ties
    rho = np.array([stats.spearmanr(gamma.loc[s, change.columns], change.loc[s])[0] for s in change.index])
    return (rho.mean(), *t_interval(rho))


# ----------------------------------------------------------------------------- numbers, not sentences
DELTA = re.compile(r"([+−-]\d+\.\d) \[([+−-]\d+\.\d), ([+−-]\d+\.\d)\]")
RHO = re.compile(r"ρ\(ERM error, (γ_k|a_k)\) = ([+−-]\d\.\d\d)")
OPTIONS = re.compile(r"c̄ = (\d+(?:\.\d+)?)(?:,| and) λ = (\d+(?:\.\d+)?)")
MARKER = re.compile(r"<!-- (/?)[a-z][a-z0-9:._-]* -->")


def hand_written(text: str) -> str:
    """A page without its generated blocks (between marker lines): what a person wrote."""
    out, depth = [], 0
    for line in text.splitlines():
        found = MARKER.fullmatch(line.strip())
        if found:
            depth += -1 if found.group(1) else 1
            continue
        if depth == 0:
            out.append(line)
    return "\n".join(out)


def snapshot_folders():
    return sorted(p for p in (ROOT / "docs" / "results").iterdir() if (p / "per_class.csv").is_file())


def group_tables(pc: pd.DataFrame, groups: pd.Series) -> dict[str, pd.DataFrame]:
    """Accuracy (%) per (method, variant) column and seed row of each group of ``groups`` (class -> group),
    "all" classes and the worst class, from per-class rows of one dataset key."""
    pc = pc.assign(group=pc["class"].map(groups), key=pc["method"] + "/" + pc["variant"])
    out = {g: pc[pc["group"].eq(g)].groupby(["key", "seed"])["accuracy"].mean().unstack("key") * 100
           for g in groups.dropna().unique()}
    out["all"] = pc.groupby(["key", "seed"])["accuracy"].mean().unstack("key") * 100
    out["worst"] = pc.groupby(["key", "seed"])["accuracy"].min().unstack("key") * 100
    return out


def deltas(a: pd.Series, b: pd.Series) -> set[tuple[str, str, str]]:
    """The paired Δ a − b (by seed) as the pages write it, with its 95 % and its 90 % interval."""
    d = (a - b).dropna().to_numpy()
    if len(d) < 2:
        return set()
    return {(sign(d.mean()), sign(lo), sign(hi)) for lo, hi in (t_interval(d), t_interval(d, 0.90))}


def same_draws(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Two snapshots' per-class rows of one dataset key hold the same ERM runs (every seed's every class
    at the same accuracy): their methods trained on the same draws and pair by seed."""
    a, b = (pc[pc["method"].eq("erm") & pc["variant"].eq("default")].sort_values(["seed", "class"])[
        ["seed", "class", "accuracy"]].reset_index(drop=True) for pc in (a, b))
    return len(a) > 0 and a.equals(b)


def paired_across_snapshots() -> set[tuple[str, str, str]]:
    """The paired Δs between two snapshots that share their ERM runs (config/tuned-controls-spread.yaml
    reuses config/tuned-controls.yaml's): each method of one against each of the other, on each group
    of the first's groups, by seed."""
    seen: set[tuple[str, str, str]] = set()
    snaps = [(pd.read_csv(snap / "per_class.csv"), pd.read_csv(snap / "groups.csv")) for snap in snapshot_folders()]
    for (pa, groups), (pb, _) in itertools.permutations(snaps, 2):
        for key in set(pa["dataset"]) & set(pb["dataset"]):
            here, there = pa[pa["dataset"].eq(key)], pb[pb["dataset"].eq(key)]
            if not same_draws(here, there):
                continue
            by_class = groups[groups["dataset"].eq(key)].set_index("class")["group"]
            mine, theirs = group_tables(here, by_class), group_tables(there, by_class)
            for name, t in mine.items():
                for m, o in itertools.product(t.columns, theirs[name].columns):
                    seen |= deltas(t[m], theirs[name][o])
    return seen


def every_paired_delta() -> set[tuple[str, str, str]]:
    """Every paired Δ [interval] a page may quote, recomputed with pandas and scipy from the per-seed
    per-class tables of every snapshot: each two methods (any variant) on each group of each dataset key
    (the snapshot's groups; on long-tailed data also the many/medium/few-shot classes by training count),
    each method at factor× its epochs against itself, each group ranked on ERM's other seeds, and each
    two methods of two snapshots that share their ERM runs (``paired_across_snapshots``)."""
    from mr2.results.groups import held_out_group_accuracy

    seen: set[tuple[str, str, str]] = paired_across_snapshots()
    for snap in snapshot_folders():
        pc = pd.read_csv(snap / "per_class.csv")
        groups = pd.read_csv(snap / "groups.csv")
        excerpt = (snap / "excerpt.md").read_text() if (snap / "excerpt.md").is_file() else ""
        counts = {d: [int(c) for c in n.split(",")] for d, n in
                  re.findall(r"^\*\*([^*\n]+)\*\*\n\nTraining counts n_k by class: ([\d, ]+);", excerpt, flags=re.M)}
        for key in pc["dataset"].unique():
            base = key.split(".x")[0]
            here = pc[pc["dataset"].eq(key)]
            tables = group_tables(here, groups[groups["dataset"].eq(base)].set_index("class")["group"])
            if key in counts:  # long-tailed: many/medium/few-shot by the training counts the excerpt states
                n = pd.Series(counts[key], dtype=float)
                shots = pd.Series("medium", index=n.index).mask(n > n.max() / 5, "many").mask(n < n.max() / 25, "few")
                tables |= group_tables(here, shots)
            short = group_tables(pc[pc["dataset"].eq(base)], groups[groups["dataset"].eq(base)].set_index("class")["group"])
            for name, t in tables.items():
                for a, b in itertools.permutations(t.columns, 2):
                    seen |= deltas(t[a], t[b])
                if key != base and name in short:
                    for m in t.columns.intersection(short[name].columns):
                        seen |= deltas(t[m], short[name][m])
        held = held_out_group_accuracy(pc[pc["dataset"].isin([k for k in pc["dataset"].unique() if ".x" not in k])])
        for dataset, frame in held.groupby("dataset") if len(held) else []:
            frame = frame.assign(key=frame["method"] + "/" + frame["variant"])
            for group in ("easy", "medium", "hard"):
                t = frame.pivot_table(index="seed", columns="key", values=group) * 100
                for a, b in itertools.permutations(t.columns, 2):
                    seen |= deltas(t[a], t[b])
    return seen


@pytest.mark.parametrize("page", ["README.md", "docs/results.md"])
def test_every_delta_a_page_quotes_is_recomputed_from_a_snapshots_per_seed_tables(page):
    """Each "Δ [lo, hi]" written by hand on the page (outside its generated blocks) is a paired Δ with its
    interval that the committed per-seed tables give, to the printed digit."""
    text = hand_written((ROOT / page).read_text())
    quoted = {tuple(x.replace("−", "-") for x in m) for m in DELTA.findall(text)}
    assert quoted, page
    known = {tuple(x.replace("−", "-") for x in d) for d in every_paired_delta()}
    assert sorted(quoted - known) == []


def test_every_rho_and_option_the_readme_quotes_is_a_snapshots():
    """Each ρ(ERM error, γ_k or a_k) the README and docs/results.md quote is the mean over seeds of a
    snapshot's per-seed Spearman ρ (recomputed with scipy), and each "c̄ = …, λ = …" is a trial a
    snapshot's search ran (tuning.csv) or the release's options (c̄ = 1, λ = 0.1)."""
    import json

    rhos = set()
    for snap in snapshot_folders():
        for dataset in pd.read_csv(snap / "per_class.csv")["dataset"].unique():
            if ".x" in dataset:
                continue
            rho = premise_rho(snap, dataset)
            for method, column, name in (("mr2", "gamma", "γ_k"), ("erm", "a", "a_k"), ("mr2", "a", "a_k")):
                try:
                    rhos.add((name, fmt(rho(method, column)[0])))
                except (KeyError, ValueError, IndexError, ZeroDivisionError):
                    continue
    chosen = {("1", "0.1")}  # the release's options; then every trial a snapshot's search ran (chosen or not)
    for path in (ROOT / "docs" / "results").glob("*/tune/*/tuning.csv"):
        for options in pd.read_csv(path)["options"].map(json.loads):
            if {"c_bar", "lam"} <= set(options):
                chosen.add((f"{options['c_bar']:g}", f"{options['lam']:g}"))
    for page in ("README.md", "docs/results.md"):
        text = " ".join(hand_written((ROOT / page).read_text()).split())
        for name, value in RHO.findall(text):
            assert (name, value.replace("-", "−")) in rhos, (page, name, value)
        for c_bar, lam in OPTIONS.findall(text):
            assert (c_bar, lam) in chosen, (page, c_bar, lam)


def test_the_readmes_margins_are_the_tuned_runs():
    """The README's reading of MR²'s margins on the tuned Fashion-MNIST run — every γ_k between the
    smallest and the largest class mean, the logits multiplied by about 1/mean γ, the class-wise
    modulation ± half the range over the mean — recomputed from the snapshot's per-class γ_k."""
    text = " ".join((ROOT / "README.md").read_text().split())
    pc = pd.read_csv(ROOT / "docs" / "results" / "tuned-fashion-mnist" / "per_class.csv")
    gamma = pc[pc["method"].eq("mr2") & pc["variant"].eq("default") & pc["dataset"].eq("fashion_mnist")]
    means = gamma.groupby("class")["gamma"].mean()
    assert f"between {means.min():.3f} and {means.max():.3f}" in text
    assert f"by about {1 / means.mean():.1f}" in text
    assert f"±{100 * (means.max() - means.min()) / 2 / means.mean():.0f} % class-wise modulation" in text


def test_the_controls_tuning_quoted_on_the_results_page_is_its_record():
    """docs/results.md's account of config/tuned-controls.yaml's tuning stage: each method's chosen
    options and validation hard-group accuracy, untuned ERM's, and the group sizes, recomputed from the
    committed tuning.csv and reference_groups.csv."""
    import json

    folder = ROOT / "docs" / "results" / "tuned-controls" / "tune" / "fashion_mnist"
    trials = pd.read_csv(folder / "tuning.csv")
    page = " ".join(PAGE.read_text().split())
    for _, r in trials[trials["chosen"]].iterrows():
        options = json.loads(r["options"])
        assert f"(validation hard {r['hard']:.1f})" in page, r["method"]
        for value in options.values():
            assert f"{value:g}" in page, (r["method"], value)
    assert trials["admitted"].all()  # the page says every trial was admitted by the claim rule
    groups = pd.read_csv(folder / "reference_groups.csv")
    hard = groups[groups["group"].eq("hard")]
    assert f"the hard group holds {len(hard)} of the {len(groups)} classes" in page
    assert ", ".join(hard.sort_values("val_accuracy")["class_name"]) in page
    erm = re.search(r"against untuned ERM's (\d+\.\d)", page).group(1)
    md = (folder / "tuning.md").read_text()
    assert f"hard {erm}" in md  # tuning.md's line on the reference's validation scores


@pytest.mark.parametrize("snapshot, heading, end, method", [
    ("tuned-controls-mnist1d/tune/mnist1d", "### MNIST-1D against equally tuned controls",
     "<!-- results:tuned-controls-mnist1d -->", "mr2"),
    ("tuned-controls-baselines/tune/fashion_mnist", "#### The baselines beside the equally tuned controls", "\n### ",
     "dro"),
    ("tuned-controls-spread/tune/fashion_mnist", "### MR² fed the spread against the same controls",
     "<!-- results:tuned-controls-spread -->", "mr2")])
def test_a_tuning_stage_quoted_on_the_results_page_is_its_record(snapshot, heading, end, method):
    """A docs/results.md section on a tuning stage: each chosen option it quotes, each "(validation hard
    x)" of a chosen trial, and how many of ``method``'s trials the claim rule admitted ("n of its m
    trials"), recomputed from the committed tuning.csv."""
    import json

    trials = pd.read_csv(ROOT / "docs" / "results" / snapshot / "tuning.csv")
    text = PAGE.read_text()
    start = text.index(heading)
    section = " ".join(text[start:text.index(end, start + len(heading))].split())
    quoted = 0
    for _, r in trials[trials["chosen"]].iterrows():
        options = json.loads(r["options"])
        if not any(re.search(rf"(?<![\d.]){re.escape(f'{v:g}')}(?![\d])", section) for v in options.values()):
            continue  # a method the section does not speak of
        quoted += 1
        for value in options.values():
            assert re.search(rf"(?<![\d.]){re.escape(f'{value:g}')}(?![\d])", section), (r["method"], value)
    assert quoted >= 2
    for hard in re.findall(r"\(validation hard (\d+\.\d)\)", section):
        assert hard in {f"{h:.1f}" for h in trials.loc[trials["chosen"], "hard"]}, hard
    of = trials[trials["method"].eq(method)]
    admitted, tried = re.search(r"(\d+) of its (\d+)\s+trials", section).groups()
    assert (int(admitted), int(tried)) == (int(of["admitted"].sum()), len(of))


def test_the_controls_margins_quoted_on_the_results_page_are_the_snapshots():
    """The numbers docs/results.md quotes about MR²'s margins in the primary test's run set, read by
    pattern from the section and recomputed with pandas and scipy from the snapshots' per-class tables:
    the range of the class means of γ_k, the modulation ± half that range over their mean (this run's
    and the earlier tuned run's at c̄ = 0.302), and Spearman's ρ per seed between a class's γ_k and MR² −
    ce_temperature on it (mean [95 % t-interval] over seeds, ``margin_change_rho``)."""
    text = " ".join(PAGE.read_text().split())
    start = text.index("## MR² against equally tuned controls")
    section = text[start:text.index("<!-- results:tuned-controls -->", start)].replace("−", "-")

    def gammas(name):
        pc = pd.read_csv(ROOT / "docs" / "results" / name / "per_class.csv")
        pc = pc[pc["dataset"].eq("fashion_mnist") & pc["variant"].eq("default")]
        return pc, pc[pc["method"].eq("mr2")].pivot_table(index="seed", columns="class", values="gamma")

    def modulation(g) -> int:
        means = g.mean()
        return round(100 * (means.max() - means.min()) / 2 / means.mean())

    pc, g = gammas("tuned-controls")
    low, high = re.search(r"γ_k from (\d\.\d{3}) to (\d\.\d{3})", section).groups()
    assert (low, high) == (f"{g.mean().min():.3f}", f"{g.mean().max():.3f}")
    quoted = [int(x) for x in re.findall(r"± (\d+) %", section)]
    assert quoted[:2] == [modulation(g), modulation(gammas("tuned-fashion-mnist")[1])]
    found = re.search(r"ρ\(γ_k, MR² - temperature\) = ([+-]\d\.\d\d) \[([+-]\d\.\d\d), ([+-]\d\.\d\d)\]", section)
    assert found.groups() == tuple(f"{x:+.2f}" for x in margin_change_rho(pc))


def test_the_spread_fed_trials_are_compared_with_mr2s_own_trial_by_trial():
    """docs/results.md's pairing of the spread-fed MR²'s trials with MR²'s in config/tuned-controls.yaml:
    the same options trial by trial, and the mean, largest loss and largest gain of the validation hard
    group that it quotes, recomputed from the two committed tuning.csv files."""
    spread = pd.read_csv(ROOT / "docs/results/tuned-controls-spread/tune/fashion_mnist/tuning.csv")
    paper = pd.read_csv(ROOT / "docs/results/tuned-controls/tune/fashion_mnist/tuning.csv")
    pairs = spread[spread["method"].eq("mr2")].merge(paper[paper["method"].eq("mr2")], on=["trial", "options"],
                                                      suffixes=("_spread", "_a"))
    assert len(pairs) == 8  # every trial drew the same c̄ and λ
    d = pairs["hard_spread"] - pairs["hard_a"]
    text = " ".join(PAGE.read_text().split())
    section = text[text.index("### MR² fed the spread against the same controls"):]
    found = re.search(r"validation hard group is (\d\.\d) points (lower|higher) on average over the 8 trials "
                      r"\(from (\d\.\d) lower to (\d\.\d) higher\)", section)
    assert found, "the pairing sentence"
    mean, way, low, high = found.groups()
    assert (mean, way) == (f"{abs(d.mean()):.1f}", "lower" if d.mean() < 0 else "higher")
    assert (low, high) == (f"{-d.min():.1f}", f"{d.max():.1f}")


def test_the_spread_fed_margins_quoted_on_the_results_page_are_the_snapshots():
    """docs/results.md's reading of the spread-fed MR²'s final runs, read by pattern from its section and
    recomputed with pandas and scipy from the snapshot's per-class table: the range of the class means
    of γ_k, its ± half-range over their mean, the hard classes' range, the two classes with the largest
    γ_k and their groups, and the per-seed Spearman ρ (mean [95 % t-interval]) between ERM's error and
    γ_k, between ERM's error and ‖ŝ_k‖² of MR²'s, ERM's and ce_temperature's features, and between γ_k
    and MR² − ce_temperature."""
    snap = ROOT / "docs" / "results" / "tuned-controls-spread"
    text = " ".join(PAGE.read_text().split())
    start = text.index("### MR² fed the spread against the same controls")
    section = text[start:text.index("<!-- results:tuned-controls-spread -->", start)].replace("−", "-")
    pc = pd.read_csv(snap / "per_class.csv")
    pc = pc[pc["dataset"].eq("fashion_mnist") & pc["variant"].eq("default")]
    groups = pd.read_csv(snap / "groups.csv").query("dataset == 'fashion_mnist'").set_index("class")["group"]
    names = pc.drop_duplicates("class").set_index("class")["class_name"]
    means = pc[pc["method"].eq("mr2")].groupby("class")["gamma"].mean()
    assert f"γ_k run from {means.min():.3f} to {means.max():.3f}" in section
    assert f"(± {round(100 * (means.max() - means.min()) / 2 / means.mean())} % around their mean)" in section
    hard = means[groups[groups.eq("hard")].index]
    assert f"the hard classes' between {hard.min():.3f} and {hard.max():.3f}" in section
    first, second, group1, group2 = re.search(r"the largest on (\S+) and (\S+) \(an? (\w+) and an? (\w+) class\)",
                                              section).groups()
    top = means.sort_values().index[-2:]
    assert {first: group1, second: group2} == {names[c]: groups[c] for c in top}

    def text_of(mean, lo, hi) -> str:
        return f"{mean:+.2f} [{lo:+.2f}, {hi:+.2f}]"

    rho = premise_rho(snap, "fashion_mnist")
    assert f"ρ(ERM error, γ_k) = {text_of(*rho('mr2', 'gamma'))}" in section
    assert f"features is {text_of(*rho('mr2', 'spread'))}, against {text_of(*rho('erm', 'spread'))} on ERM's" in section
    assert f"ρ {text_of(*rho('erm', 'spread'))} between ERM's error and ‖ŝ_k‖²" in section
    assert f"({text_of(*rho('ce_temperature', 'spread'))} on ce_temperature's" in section
    c_bar, tau = (float(x) for x in re.search(r"chose c̄ = (\d\.\d+) and λ = .*?τ = (\d\.\d+)", section).groups())
    assert "three times that temperature's" in section and round(tau / c_bar) == 3
    assert f"ρ(γ_k, MR² - temperature) = {text_of(*margin_change_rho(pc))}" in section
    fed_a = ROOT / "docs" / "results" / "tuned-controls"  # its MR² fed a_k, on the same draws (same ERM runs)
    against_a = {group: delta_text((group_by_seed(snap, "fashion_mnist", group)["mr2"]
                                    - group_by_seed(fed_a, "fashion_mnist", group)["mr2"]).dropna().to_numpy())
                 .replace("−", "-") for group in ("hard", "easy")}
    assert f"hard {against_a['hard']}, easy {against_a['easy']}: which statistic" in section
