# Does the paper's premise hold? Each link of MR²'s chain measured from the tidy tables
# (mr2/results/premise_*.py): rank correlations with seed intervals, a_k's decomposition, two figures;
# their names are the figures' registry's (ANALYSIS_TABLES, ANALYSIS_FIGURES, common.smk).


rule analysis:
    """ERM's per-class error against ‖μ̂_k‖², ‖ŝ_k‖², a_k (L2/L3/L5) and MR²'s γ_k; γ_k against the gains."""
    input:
        expand(f"{TABLES}/{{name}}.csv", name=TABLE_NAMES),
    output:
        tables=[f"{ANALYSIS}/{n}.csv" for n in ANALYSIS_TABLES if n != "correlation_summary"],
        summary=report(f"{ANALYSIS}/correlation_summary.csv", caption="../report/premise_table.rst", category="Premise"),
        png=[report(f"{ANALYSIS}/{n}.png", caption=f"../report/{n}.rst", category="Premise") for n in ANALYSIS_FIGURES],
        pdf=[f"{ANALYSIS}/{n}.pdf" for n in ANALYSIS_FIGURES],
    log:
        log_of("analysis"),
    benchmark:
        benchmark_of("analysis")
    localrule: True
    conda:
        ENV_RESULTS
    params:
        repo=REPO,
        reference=REFERENCE,
        method=MR2_METHOD,
        tables=lambda wildcards, input: folder_of(input[0]),
        out=lambda wildcards, output: folder_of(output.summary),
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 analysis --tables {params.tables:q} --reference {params.reference:q} --method {params.method:q}"
        " --out {params.out:q} > {log:q} 2>&1"
