"""The shared launcher, the reproduce runner, and one experiment package per paper."""
