#!/usr/bin/env bash
# Mutation testing of the method, the results and the theory with mutmut (3.x), outside CI.
#
#   scripts/mutation.sh [TARGET ...]          TARGET: method | results | theory | a file to mutate
#                                             (e.g. mr2/method/losses/supcon.py) or several files of one
#                                             package joined by commas (one run, one test mapping);
#                                             default: method theory
#
# Each target mutates only its own files and runs only the test files that exercise them (mutmut
# then runs, per mutant, only the tests that reach the mutated function); for the method, the unit
# tests of the losses, margins, statistics, JTT and LfF without the training runs on digits (those train
# through the engine and would make each mutant cost minutes); MR2_MUTATION=1 skips the tests that
# need the end-to-end smoke run (its steps are subprocesses, which never see the mutant under test,
# and it takes minutes). The run happens in a
# copy of the working tree under $MUTATION_DIR (default: a temporary folder), never in the
# repository. Environment: PYTHON (default: the project venv's python, else python3),
# MUTATION_JOBS (parallel children, default 2), MUTATION_BUDGET (seconds per target, default
# 1800; the run is stopped there and the mutants not yet run are reported as not checked),
# MUTATION_TESTS (pytest arguments joined by commas, instead of the target's test files: a file's
# own fast tests, e.g. "tests/test_verdicts.py,-k,not report").
# Writes mutmut's table of every mutant and a one-line score per target to
# $MUTATION_DIR/<target>.results / .score and prints them; docs/mutation.md records the last run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$HOME/.cache/mr2/venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON="$(command -v python3)"
JOBS="${MUTATION_JOBS:-2}"
BUDGET="${MUTATION_BUDGET:-1800}"
OUT="${MUTATION_DIR:-$(mktemp -d -t mr2-mutation.XXXXXX)}"
case "$JOBS$BUDGET" in *[!0-9]*) echo "mutation.sh: MUTATION_JOBS and MUTATION_BUDGET must be whole numbers" >&2; exit 2;; esac

if ! "$PYTHON" -c "import mutmut, sys; sys.exit(int(mutmut.__version__.split('.')[0]) < 3)" 2>/dev/null; then
    echo "mutation.sh: installing mutmut 3 into $("$PYTHON" -c 'import sys; print(sys.prefix)')"
    "$PYTHON" -m pip install --quiet "mutmut>=3.8,<4"
fi
MUTMUT="$(dirname "$PYTHON")/mutmut"
[ -x "$MUTMUT" ] || { echo "mutation.sh: no mutmut executable next to $PYTHON" >&2; exit 2; }

# target -> files to mutate (globs) and the test files that exercise them
only_for() {
    case "$1" in
        method)  echo '"mr2/method/*"';;
        results) echo '"mr2/results/*"';;
        theory)  echo '"theory/*"';;
        *.py)    echo "\"${1//,/\", \"}\"";;
        *) echo "mutation.sh: unknown target '$1' (method, results, theory or a .py file)" >&2; exit 2;;
    esac
}
tests_for() {
    case "$1" in
        method|mr2/method/*) echo '"tests/test_losses.py", "tests/test_baselines.py", "tests/test_margins.py", "tests/test_stats.py", "tests/test_jtt_lff.py", "-k", "not digits and not error_set_without and not trains_above_chance and not jtt_chain and not upsampled_runs and not resumes and not dry_run"';;
        results|mr2/results/*) echo '"tests/test_results.py", "tests/test_verdicts.py", "tests/test_longtail_results.py", "tests/test_regimes.py", "tests/test_analysis.py", "tests/test_figures.py", "tests/test_figure_tables.py", "tests/test_readme.py", "tests/test_margin_text.py", "tests/test_premise_figures.py", "tests/test_premise_tables.py", "tests/test_premise_correlations.py", "tests/test_report_text.py"';;
        theory|theory/*) echo '"tests/test_theory_corollary.py", "tests/test_theory_bound.py", "tests/test_theory_pipeline.py"';;
    esac
}

[ $# -gt 0 ] || set -- method theory
for target in "$@"; do
    only="$(only_for "$target")"
    selection="$(tests_for "$target")"
    [ -z "${MUTATION_TESTS:-}" ] || selection="$(printf '%s' "$MUTATION_TESTS" | sed 's/"/\\"/g; s/,/", "/g; s/.*/"&"/')"
    name="$(echo "$target" | tr '/.,' '___')"
    work="$OUT/$name"
    rm -rf "$work"
    bash "$ROOT/scripts/copy_tree.sh" "$work"
    top="$(cd "$work" && ls -A | grep -v -x -e mr2 -e theory -e tests -e pyproject.toml | sed 's/.*/"&"/' | paste -sd, -)"
    cat >> "$work/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = ["mr2", "theory"]
only_mutate = [$only]
also_copy = [$top]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]
pytest_add_cli_args_test_selection = [$selection]
use_git_change_detection = false
EOF
    echo "== $target: mutating $only in $work (budget ${BUDGET}s, $JOBS children)"
    (cd "$work" && MR2_MUTATION=1 OMP_NUM_THREADS=1 MPLBACKEND=Agg timeout --signal=INT --kill-after=60 "$BUDGET" "$MUTMUT" run --max-children "$JOBS" >"$OUT/$name.log" 2>&1) || \
        echo "   (stopped at the budget or failed: see $OUT/$name.log)"
    (cd "$work" && "$MUTMUT" results --all true >"$OUT/$name.results" 2>&1) || true
    "$PYTHON" - "$OUT/$name.results" "$target" >"$OUT/$name.score" <<'EOF'
import collections, sys
counts = collections.Counter(line.rsplit(":", 1)[1].strip() for line in open(sys.argv[1]) if line.count(":") and line.startswith("    "))
done = counts["killed"] + counts["survived"] + counts["timeout"] + counts["suspicious"]
score = 100 * (counts["killed"] + counts["timeout"]) / done if done else float("nan")
print(f"{sys.argv[2]}: {done} mutants run, killed {counts['killed']}, timeout {counts['timeout']}, "
      f"survived {counts['survived']}, suspicious {counts['suspicious']}, not run {counts['not checked']}, "
      f"no tests {counts['no tests']}; score {score:.1f}% of those run")
EOF
    cat "$OUT/$name.score"
    grep -E ": survived$" "$OUT/$name.results" || true
done
echo "results in $OUT"
