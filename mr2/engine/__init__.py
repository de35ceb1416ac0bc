"""The engine: run configs, datasets, models, training, evaluation, and what they share
(device, precision, data-parallel processes, speed settings). Imports the method layer and
``mr2.common``; never the results layer or the pipeline. Its modules are imported one by one
(this package imports nothing), so ``mr2.engine.config`` stays free of torch."""
