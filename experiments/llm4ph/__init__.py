"""LLM4PH's persistent-homology reasoning benchmark (see README.md)."""
