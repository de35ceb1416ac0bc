rule prepare:
    """Dataset -> a cached, checksummed tensor file (split into train/validation/test)."""
    output:
        DATA,
    params:
        args=prepare_args,
    log:
        f"{LOGS}/prepare/{{dataset}}.log",
    conda:
        ENV
    shell:
        "python -m mr2 prepare {params.args} --out {output} > {log} 2>&1"
