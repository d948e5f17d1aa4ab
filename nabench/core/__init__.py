"""The lowest layer: errors, atomic writes, per-item RNG, Arrow list helpers, the version.

Nothing here imports any other part of nabench.
"""
