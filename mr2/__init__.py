"""mr2: a reproducible replication of MR² (Margin Regularization for performance disparity
Reduction, ICLR 2026).

Layers, bottom to top (imports only go downward; ``tests/test_layers.py`` enforces it):

- ``mr2.common``: atomic file output, YAML, the identity of a run (standard library and YAML);
- ``mr2.method``: the paper's statistics, margins and losses (torch);
- ``mr2.engine``: configs, data, models, training and evaluation (imports the method);
- ``mr2.results``: tables, figures, premise analysis, report (pandas; no torch);
- ``mr2.pipeline``: the Snakemake workflow's logic: config checks, runs, hashes, paths (standard
  library, YAML and jsonschema: the workflow parses without torch or pandas);
- ``mr2.cli``: the command line ``python -m mr2 <step>`` over the engine and the results.

``theory/`` stands beside them. ``docs/method.md`` maps every symbol of the paper to the code.
"""

__version__ = "0.1.0"

from mr2.common.kernels import pin_cpu_kernels

try:
    pin_cpu_kernels()  # before torch's first operator: the same numbers on every x86-64 host
except ValueError as exc:  # a bad MR2_CPU_ISA: the command line says so in one line (mr2.cli), the engine
    KERNEL_ERROR: ValueError | None = exc  # refuses to load (mr2.engine)
else:
    KERNEL_ERROR = None
