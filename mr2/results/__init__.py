"""The results: tidy tables of all runs, easy/medium/hard groups, the results table, figures,
the premise analysis and the report. Reads only the files that evaluation writes (CSV, JSON,
YAML) and imports only ``mr2.common``, pandas, scipy, matplotlib and seaborn: never torch,
the method or the engine."""
