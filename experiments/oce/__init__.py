"""OCE: orthogonal concept erasure against UCE on a text-conditioned flow model of digits."""
