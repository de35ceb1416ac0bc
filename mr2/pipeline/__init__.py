"""The workflow's logic as Python: what `workflow/rules/common.smk` used to hold, each function taking
the pipeline config (and where it needs it, the config schema) explicitly.

Standard library, PyYAML and jsonschema only (and ``mr2.common``): the workflow imports it when it is
parsed, so a dry run needs neither torch nor pandas nor any data.

- ``mr2.pipeline.config``: a config as YAML 1.2 reads it, validated against the schemas (defaults
  filled in), the checks across keys, the names of methods, options, variants and convergence checks;
- ``mr2.pipeline.runs``: the runs of a config, each run's config as the pipeline states it and the
  hashes that name its folders;
- ``mr2.pipeline.paths``: every path pattern under the output root, and the paths a job derives;
- ``mr2.pipeline.jobs``: what a model job declares and runs (GPU resources, launcher, device options).
"""
