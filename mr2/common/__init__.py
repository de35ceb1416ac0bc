"""The ground floor shared by every layer: atomic file output, YAML reading, and the identity of
a run (its keys and label). Standard library and PyYAML only: no torch, no pandas, so the
results layer and the pipeline's parse-time code can use it without the training stack."""
