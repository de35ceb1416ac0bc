"""mr2: a reproducible replication of MR² (Margin Regularization for performance disparity
Reduction, ICLR 2026). See PAPER.md in the docs and README.md for the map from equations to code."""

__version__ = "0.1.0"
