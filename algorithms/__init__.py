"""Pure-functional algorithms of the reprojax papers, one subpackage per paper slug.

Import a paper's public API with ``from algorithms import <slug>``.
"""
