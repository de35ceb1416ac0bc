rule prepare:
    """Dataset -> a cached, checksummed tensor file (split into train/validation/test)."""
    input:
        config=DATA_CONFIG,
    output:
        DATA,
    log:
        log_of("prepare", DATA_KEY),
    benchmark:
        benchmark_of("prepare", DATA_KEY)
    conda:
        ENV_TORCH
    params:
        repo=REPO,
    shell:
        "PYTHONPATH={params.repo:q}${{PYTHONPATH:+:$PYTHONPATH}} python -m mr2 prepare --config {input.config:q} --out {output:q} > {log:q} 2>&1"
