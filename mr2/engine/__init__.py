"""The engine: run configs, datasets, models, training, evaluation, and what they share
(device, precision, data-parallel processes, speed settings). Imports the method layer and
``mr2.common``; never the results layer or the pipeline. Its modules are imported one by one
(this package imports only the kernel cap, ``mr2.common.kernels``), so ``mr2.engine.config`` stays free of torch."""

from ..common.kernels import pin_cpu_kernels

pin_cpu_kernels()  # a bad MR2_CPU_ISA, which `import mr2` lets through for the command line's one-line error, stops here
