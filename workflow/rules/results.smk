# The results layer: tidy tables, the results table, figures and the report. CPU only and quick, so
# they run where Snakemake runs (localrule), also under the SLURM profile.


rule aggregate:
    """All runs -> tidy tables (a row per run and class, per run, per epoch) and the groups; refused
    when the output root's pipeline_config.json records another config than this one (every shared
    output below is built from one config)."""
    input:
        runs=all_run_files,
        cfg=PIPELINE_CONFIG,
    output:
        expand(f"{TABLES}/{{name}}.csv", name=TABLE_NAMES),
    log:
        log_of("aggregate"),
    benchmark:
        benchmark_of("aggregate")
    localrule: True
    conda:
        ENV_RESULTS
    params:
        repo=REPO,
        runs=lambda wildcards, input: run_dirs_of(input.runs),
        reference=REFERENCE,
        out=lambda wildcards, output: folder_of(output[0]),
        digest=CONFIG_DIGEST,
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 aggregate --runs {params.runs:q} --reference {params.reference:q} --out {params.out:q}"
        " --pipeline-config {input.cfg:q} --config-digest {params.digest:q} > {log:q} 2>&1"


rule results_table:
    """Per method: all / easy / medium / hard / worst-class accuracy, mean ± sd, paired Δ to ERM."""
    input:
        expand(f"{TABLES}/{{name}}.csv", name=TABLE_NAMES),
    output:
        csv=report(f"{TABLES}/results.csv", caption="../report/results_table.rst", category="Results"),
        md=f"{TABLES}/results.md",
        comparisons=f"{TABLES}/comparisons.csv",
        settings=f"{TABLES}/settings.csv",
        convergence=f"{TABLES}/convergence.csv",
    log:
        log_of("results_table"),
    benchmark:
        benchmark_of("results_table")
    localrule: True
    conda:
        ENV_RESULTS
    params:
        repo=REPO,
        reference=REFERENCE,
        effect=config["effect_of_interest"],
        tolerance=(config.get("convergence") or {}).get("tolerance", 1.0),
        tables=lambda wildcards, input: folder_of(input[0]),
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 table --tables {params.tables:q} --reference {params.reference:q}"
        " --effect-of-interest {params.effect:q} --tolerance {params.tolerance:q} > {log:q} 2>&1"


rule figures:
    """The report's figures (PNG and PDF), from the tidy tables; which methods they draw is read from
    the pipeline config, as the report reads it (mr2.results.figures.registry.figure_options)."""
    input:
        tables=expand(f"{TABLES}/{{name}}.csv", name=TABLE_NAMES),
        cfg=PIPELINE_CONFIG,
    output:
        png=[report(f"{FIGURES}/{n}.png", caption=f"../report/{n}.rst", category="Figures") for n in figure_names()],
        pdf=[f"{FIGURES}/{n}.pdf" for n in figure_names()],
    log:
        log_of("figures"),
    benchmark:
        benchmark_of("figures")
    localrule: True
    conda:
        ENV_RESULTS
    params:
        repo=REPO,
        tables=lambda wildcards, input: folder_of(input.tables[0]),
        out=lambda wildcards, output: folder_of(output.png[0]),
        names=figure_names(),
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 figures --tables {params.tables:q} --config {input.cfg:q}"
        " --names {params.names:q} --out {params.out:q} > {log:q} 2>&1"


rule report:
    """<root>/report.md: verdict, table, generated findings, figures with captions, the config; and the same
    as one self-contained HTML page for Snakemake's --report."""
    input:
        md=f"{TABLES}/results.md",
        comparisons=f"{TABLES}/comparisons.csv",
        figures=rules.figures.output.png,
        cfg=PIPELINE_CONFIG,
        analysis=rules.analysis.output.summary,
        premise=rules.analysis.output.png,
        theory=f"{THEORY}/bound.md",
        theory_figure=f"{FIGURES}/{THEORY_FIGURE}.png",
    output:
        md=REPORT,
        html=report(REPORT_HTML, caption="../report/report_page.rst", category="Report"),
    log:
        log_of("report"),
    benchmark:
        benchmark_of("report")
    localrule: True
    conda:
        ENV_RESULTS
    params:
        repo=REPO,
        tables=lambda wildcards, input: folder_of(input.md),
        figures=lambda wildcards, input: folder_of(input.figures[0]),
        analysis=lambda wildcards, input: folder_of(input.analysis),
        captions=str(CAPTIONS),
        effect=config["effect_of_interest"],
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 report --tables {params.tables:q} --figures {params.figures:q} --captions {params.captions:q}"
        " --config {input.cfg:q} --analysis {params.analysis:q}"
        " --section {input.theory:q} --out {output.md:q} --html {output.html:q} --effect-of-interest {params.effect:q}"
        " > {log:q} 2>&1"
