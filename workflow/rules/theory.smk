rule theory_bound:
    """Proposition 1 on every trained model: each term, the bound, test error, tightness (a table,
    the report's theory section and a figure), from the tidy tables only."""
    input:
        expand(f"{TABLES}/{{name}}.csv", name=["runs", "per_class"]),
    output:
        csv=report(f"{THEORY}/bound.csv", caption="../report/bound_table.rst", category="Theory"),
        md=f"{THEORY}/bound.md",
        png=report(f"{FIGURES}/{THEORY_FIGURE}.png", caption=f"../report/{THEORY_FIGURE}.rst", category="Theory"),
        pdf=f"{FIGURES}/{THEORY_FIGURE}.pdf",
    log:
        log_of("theory_bound"),
    benchmark:
        benchmark_of("theory_bound")
    localrule: True
    conda:
        ENV_TORCH
    params:
        repo=REPO,
        tables=lambda wildcards, input: folder_of(input[0]),
        figure=lambda wildcards, output: str(Path(output.png).with_suffix("")),
        assumptions=theory_args(config),
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m theory bound --tables {params.tables:q} --out {output.csv:q} --markdown {output.md:q}"
        " --figure {params.figure:q} {params.assumptions:q} > {log:q} 2>&1"
