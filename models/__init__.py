"""Flax Linen models shared by the papers (``from models import fno``)."""
