"""SNV's continual-learning experiment (see README.md)."""
