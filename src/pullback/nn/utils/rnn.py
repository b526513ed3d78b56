"""``pad_sequence``: variable-length sequences stacked into one padded batch (the padding
is a constant; the gradient flows back to each sequence's own entries).

>>> import pullback as pb
>>> from pullback.nn.utils.rnn import pad_sequence
>>> pad_sequence([pb.ones(2), pb.ones(3)], batch_first=True)
tensor([[1., 1., 0.],
        [1., 1., 1.]])
"""

from __future__ import annotations

from typing import Sequence

from ...creation import full
from ...ops.joining import cat, stack
from ...tensor import Tensor


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Pad each ``(L_i, *)`` tensor with ``padding_value`` to the longest ``L``, then stack
    them: ``(L, B, *)``, or ``(B, L, *)`` with ``batch_first``."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    seqs = list(sequences.unbind(0)) if isinstance(sequences, Tensor) else list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(seqs[0].shape[1:])
    for s in seqs[1:]:
        for d, (i, j) in enumerate(zip(trailing, tuple(s.shape[1:])), start=1):
            if i != j:
                raise RuntimeError(f"The size of tensor a ({i}) must match the size of tensor "
                                   f"b ({j}) at non-singleton dimension {d}")
    longest = max(s.shape[0] for s in seqs)
    padded = []
    for s in seqs:
        n = longest - s.shape[0]
        if n == 0:
            padded.append(s)
            continue
        pad = full((n,) + trailing, padding_value, dtype=s.dtype)
        padded.append(cat([s, pad] if padding_side == "right" else [pad, s], 0))
    return stack(padded, 1 if not batch_first else 0)
