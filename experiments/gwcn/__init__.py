"""GWCN experiment: size transfer at every sparsity (synthetic, real graphs, SBM classification)."""
