"""pullback.nn: torch.nn's functional API (modules and optimizers come with their issue)."""

from . import functional

__all__ = ["functional"]
