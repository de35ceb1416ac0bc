REFERENCE = config.get("reference", "erm")
SWEEP_METHOD = config.get("sweeps", {}).get("method", "mr2")


rule aggregate:
    """All runs -> tidy tables (a row per run and class, per run, per epoch) and the groups."""
    input:
        all_run_files(),
    output:
        expand(f"{TABLES}/{{name}}.csv", name=TABLE_NAMES),
    params:
        runs=all_run_dirs(),
        reference=REFERENCE,
        out=lambda wildcards, output: folder_of(output[0]),
    log:
        f"{LOGS}/aggregate.log",
    conda:
        ENV
    shell:
        "python -m mr2 aggregate --runs {params.runs} --reference {params.reference} --out {params.out} > {log} 2>&1"


rule results_table:
    """Per method: all / easy / medium / hard / worst-class accuracy, mean ± sd, paired Δ to ERM."""
    input:
        expand(f"{TABLES}/{{name}}.csv", name=TABLE_NAMES),
    output:
        csv=report(f"{TABLES}/results.csv", caption="../report/results_table.rst", category="Results"),
        md=f"{TABLES}/results.md",
    params:
        reference=REFERENCE,
        tables=lambda wildcards, input: folder_of(input[0]),
    log:
        f"{LOGS}/results_table.log",
    conda:
        ENV
    shell:
        "python -m mr2 table --tables {params.tables} --reference {params.reference} > {log} 2>&1"


rule figures:
    """The report's figures (PNG and PDF), from the tidy tables only."""
    input:
        expand(f"{TABLES}/{{name}}.csv", name=TABLE_NAMES),
    output:
        png=[report(f"{FIGURES}/{n}.png", caption=f"../report/{n}.rst", category="Figures") for n in FIGURE_NAMES],
        pdf=[f"{FIGURES}/{n}.pdf" for n in FIGURE_NAMES],
    params:
        reference=REFERENCE,
        sweep_method=SWEEP_METHOD,
        tables=lambda wildcards, input: folder_of(input[0]),
        out=lambda wildcards, output: folder_of(output.png[0]),
    log:
        f"{LOGS}/figures.log",
    conda:
        ENV
    shell:
        "python -m mr2 figures --tables {params.tables} --reference {params.reference}"
        " --sweep-method {params.sweep_method} --out {params.out} > {log} 2>&1"


rule pipeline_config:
    """The pipeline config as run (after schema defaults), recorded with the results."""
    output:
        PIPELINE_CONFIG,
    params:
        config=json.dumps(config, sort_keys=True),
    log:
        f"{LOGS}/pipeline_config.log",
    conda:
        ENV
    shell:
        "echo {params.config:q} > {output} 2> {log}"


rule report:
    """results/report.md: table, generated findings, figures with captions, the config."""
    input:
        md=f"{TABLES}/results.md",
        figures=rules.figures.output.png,
        cfg=PIPELINE_CONFIG,
        analysis=rules.analysis.output.summary,
        premise=rules.analysis.output.png,
        theory=f"{THEORY}/bound.md",
        theory_figure=f"{FIGURES}/{THEORY_FIGURE}.png",
    output:
        REPORT,
    params:
        reference=REFERENCE,
        tables=lambda wildcards, input: folder_of(input.md),
        figures=lambda wildcards, input: folder_of(input.figures[0]),
        analysis=lambda wildcards, input: folder_of(input.analysis),
    log:
        f"{LOGS}/report.log",
    conda:
        ENV
    shell:
        "python -m mr2 report --tables {params.tables} --figures {params.figures} --captions workflow/report"
        " --config {input.cfg} --analysis {params.analysis} --reference {params.reference}"
        " --section {input.theory} --out {output} > {log} 2>&1"
