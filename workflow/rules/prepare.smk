rule prepare:
    """Dataset -> a cached, checksummed tensor file (split into train/validation/test)."""
    input:
        config=DATA_CONFIG,
    output:
        DATA,
    log:
        f"{LOGS}/prepare/{{dataset}}.log",
    conda:
        ENV_TORCH
    shell:
        "python -m mr2 prepare --config {input.config:q} --out {output:q} > {log:q} 2>&1"
