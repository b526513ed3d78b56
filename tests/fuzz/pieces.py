"""The random programs' joins and splits: ``T.cat``, ``T.stack``, ``T.hstack``... of
values whose shapes fit, and ``split``, ``chunk``, ``unbind``, ``tensor_split`` into
named pieces (``v3, v4 = v1.split(2, -1)``). The pieces of split, chunk and unbind are
views torch forbids writing into in place: the in-place generator may still pick them,
and torch's error is then the reference pullback must raise."""

from __future__ import annotations

from .statements import Line


def _span(vals: list) -> tuple:
    return min(v.lo for v in vals), max(v.hi for v in vals)


class Pieces:
    """Generator methods (mixed into generator.Gen, which draws with ``self.rng``)."""

    def _joinable(self, a, dim: int | None):
        """A value to join with ``a``: the same shape (``dim`` None: to stack), or the
        same but along ``dim``; an existing one or a new input."""
        def fits(v):
            if dim is None:
                return v.shape == a.shape
            return len(v.shape) == len(a.shape) and all(
                m == n for k, (m, n) in enumerate(zip(v.shape, a.shape)) if k != dim % a.rank)
        cands = self.floats(fits)
        if cands and self.chance(0.6):
            return self.rng.choice(cands)
        shape = list(a.shape)
        if dim is not None:
            shape[dim % a.rank] = self._dim()
        return self.new_input(tuple(shape), "x" if self.chance(0.75) else "c",
                              dtype=self.rng.choice(self.dtypes))

    def gen_join(self) -> bool:
        a = self.pick()
        if a is None:
            return False
        stack = a.rank == 0 or self.chance(0.35)
        r = a.rank + 1 if stack else a.rank
        d = self.rng.randrange(-r, r)
        others = [self._joinable(a, None if stack else d)
                  for _ in range(self.rng.choice([1, 1, 2]))]
        vals = [a] + others
        names = ", ".join(f"${k}" for k in range(len(vals)))
        if stack:
            t = self.rng.choice([f"T.stack([{names}], {d})", f"T.stack(({names}), dim={d})"])
            shape = a.shape[:d % r] + (len(vals),) + a.shape[d % r:]
        else:
            t = self.rng.choice([f"T.cat([{names}], {d})", f"T.cat(({names}), dim={d})",
                                 f"T.concat([{names}], {d})"]
                                + ([f"T.hstack([{names}])"] if d % r == min(1, r - 1) else [])
                                + ([f"T.vstack([{names}])"] if d % r == 0 and r >= 2 else []))
            shape = tuple(sum(v.shape[k] for v in vals) if k == d % r else n
                          for k, n in enumerate(a.shape))
        dtype = "float64" if any(v.dtype == "float64" for v in vals) else "float32"
        v = self.out_val(shape, dtype, _span(vals), any(x.req for x in vals))
        self.add(Line(t, tuple(x.name for x in vals), v.name), v)
        return True

    def _pieces(self, n: int) -> tuple | None:
        """(template, the pieces' lengths) of a split of a length-``n`` dim; None when
        it would make more than four pieces."""
        c = self.rng.random()
        if c < 0.3:
            size = self.rng.randint(1, max(n, 1)) if n else self.rng.choice([0, 1, 2])
            lengths = [min(size, n - k) for k in range(0, n, size)] if n and size else [n]
            return f"$0.split({size}, {{d}})", lengths
        if c < 0.5 and n:
            cuts = sorted(self.rng.sample(range(n + 1), self.rng.randint(1, min(2, n + 1))))
            lengths = [b - a for a, b in zip([0] + cuts, cuts + [n])]
            return f"$0.split({lengths!r}, dim={{d}})", lengths
        if c < 0.7:
            chunks = self.rng.randint(1, 4)
            size = -(-n // chunks) if n else 0
            lengths = [min(size, n - k) for k in range(0, n, size)] if n else [0] * chunks
            return self.rng.choice([f"$0.chunk({chunks}, {{d}})",
                                    f"T.chunk($0, {chunks}, dim={{d}})"]), lengths
        if c < 0.85:
            sections = self.rng.randint(1, 3)
            lengths = [n // sections + (k < n % sections) for k in range(sections)]
            return f"T.tensor_split($0, {sections}, {{d}})", lengths
        return self.rng.choice(["$0.unbind({d})", "T.unbind($0, {d})"]), None

    def gen_split(self) -> bool:
        a = self.pick(lambda v: v.rank >= 1)
        if a is None:
            return False
        d = self.rng.randrange(-a.rank, a.rank)
        n = a.shape[d]
        t, lengths = self._pieces(n)
        unbind = lengths is None
        if unbind:
            lengths = [1] * n
        if not 1 <= len(lengths) <= 4:
            return False
        plain = t.startswith("T.tensor_split")  # slices: ordinary views
        # FOUND: a write under no_grad into a piece of an argument's split: pb.compile
        # raises TraceError (no writes to inputs) where torch raises RuntimeError (a
        # multi-output view); test_found.py's "split piece of an argument" is its xfail
        argument = a.family in {i.name for i in self.inputs}
        vals = []
        for k in lengths:
            shape = a.shape[:d % a.rank] + ((k,) if not unbind else ()) + a.shape[d % a.rank + 1:]
            v = self.out_val(shape, a.dtype, (a.lo, a.hi), a.req, family=a.family,
                             contig=False, writable=a.writable if plain else (
                                 not argument and self.chance(0.3)))
            vals.append(v)
        names = ", ".join(v.name for v in vals) + ("," if len(vals) == 1 else "")
        self.body.append(Line(t.format(d=d), (a.name,), names))
        self.used.add(a.name)
        for v in vals:
            self.vals[v.name] = v
        return True
