"""pullback.utils: torch.utils' autograd helpers (``checkpoint``) and its data loading
(``data``: ``TensorDataset``, ``DataLoader``, ``random_split``)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
