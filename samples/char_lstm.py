"""A character-level LSTM: learn to continue a text one character at a time.

Shows: nn.LSTM (batch_first) and nn.Linear predicting the next character of the
opening of "Alice's Adventures in Wonderland" (samples/data/, public domain), trained
with Adam on random windows, the loss compiled by pb.compile (the LSTM unrolled over
the window into generated code); then the trained model writing text from a prompt,
one character at a time, carrying its state (h, c) from step to step; and the error a
wrongly shaped state gets.

    python samples/char_lstm.py               # 300 steps
    python samples/char_lstm.py --steps 20    # (or PULLBACK_SAMPLE_STEPS=20)
"""

import argparse
import os
import time
from pathlib import Path

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback import nn

TEXT = Path(__file__).resolve().parent / "data" / "alice_rabbit_hole.txt"
WINDOW, BATCH, HIDDEN = 32, 16, 128


class CharModel(nn.Module):
    """One-hot characters in, an LSTM over them, scores for the next character out."""

    def __init__(self, vocab: int, hidden: int = HIDDEN) -> None:
        super().__init__()
        self.vocab = vocab
        self.lstm = nn.LSTM(vocab, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, codes, state=None):
        # (batch, time) codes -> (batch, time, vocab) one-hot rows
        one_hot = (codes.unsqueeze(-1) == pb.arange(self.vocab)).float()
        out, state = self.lstm(one_hot, state)
        return self.head(out), state


def windows(codes, rng):
    """A batch of random windows and the same windows shifted by one (the targets)."""
    starts = rng.integers(0, len(codes) - WINDOW - 1, BATCH)
    x = np.stack([codes[s:s + WINDOW] for s in starts])
    y = np.stack([codes[s + 1:s + WINDOW + 1] for s in starts])
    return pb.tensor(x), pb.tensor(y)


def generate(model, chars, prompt, length, rng, temperature=0.8):
    """Feed ``prompt``, then sample ``length`` characters, each fed back in."""
    index = {c: i for i, c in enumerate(chars)}
    model.eval()
    out, state = [], None
    with pb.no_grad():
        codes = pb.tensor([[index[c] for c in prompt]])
        for _ in range(length):
            scores, state = model(codes, state)  # state carries (h, c) forward
            probs = F.softmax(scores[0, -1] / temperature, dim=0).numpy().astype(np.float64)
            code = int(rng.choice(len(chars), p=probs / probs.sum()))
            out.append(chars[code])
            codes = pb.tensor([[code]])
    model.train()
    return prompt + "".join(out)


def main(steps):
    text = TEXT.read_text(encoding="utf-8")
    chars = sorted(set(text))
    codes = np.array([chars.index(c) for c in text], dtype=np.int64)
    print(f"text: {len(text)} characters, {len(chars)} distinct, from {TEXT.name}")

    pb.manual_seed(0)
    model = CharModel(len(chars))
    print(model)
    opt = pb.optim.Adam(model.parameters(), lr=0.005)

    @pb.compile
    def loss_fn(x, y):  # the LSTM unrolled over the window, traced once
        scores, _ = model(x)
        return F.cross_entropy(scores.reshape(-1, len(chars)), y.reshape(-1))

    rng = np.random.default_rng(0)
    print(f"loss before training: {np.log(len(chars)):.3f} would be a uniform guess")
    start, losses = time.perf_counter(), []
    for step in range(1, steps + 1):
        opt.zero_grad()
        loss = loss_fn(*windows(codes, rng))
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step == 1 or step % max(1, steps // 10) == 0 or step == steps:
            print(f"step {step:4d}   loss {np.mean(losses[-10:]):.3f} (mean of the last "
                  f"{min(10, len(losses))} steps)")
    seconds = time.perf_counter() - start
    print(f"first loss: {losses[0]:.3f}   last loss: {losses[-1]:.3f}")
    print(f"time per step: {1000 * seconds / steps:.1f} ms (the first includes tracing)")
    print(f"compiled loss cache: {loss_fn.cache.info}")

    sample = generate(model, chars, "Alice ", 120, np.random.default_rng(1))
    print(f"sampled text: {sample!r}")

    try:
        model.lstm(pb.zeros(1, 5, len(chars)), (pb.zeros(1, 1, 7), pb.zeros(1, 1, HIDDEN)))
    except RuntimeError as error:
        print("expected error: RuntimeError:", error)
    print("next: docs/nn.md, section 2 (the recurrent layers: RNN, LSTM, GRU and their cells)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int,
                        default=int(os.environ.get("PULLBACK_SAMPLE_STEPS", 300)))
    main(parser.parse_args().steps)
