"""pullback.nn: torch.nn's functional API (modules come with their issue)."""

from . import functional

__all__ = ["functional"]
