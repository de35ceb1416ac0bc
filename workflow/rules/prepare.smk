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
    shell:
        "{PYTHONPATH_MR2} python -m mr2 prepare --config {input.config:q} --out {output:q} > {log:q} 2>&1"
