"""The random programs' rearrangements and gathers: ``flip``, ``roll``, ``tril``/``triu``
of a value, and ``gather``, ``index_select``, ``masked_fill`` with an index or mask
input (or a comparison) drawn to fit it."""

from __future__ import annotations

from .statements import Line


class Rearranging:
    """Generator methods (mixed into generator.Gen, which draws with ``self.rng``)."""

    def gen_rearrange(self) -> bool:
        a = self.pick(lambda v: v.rank >= 1)
        if a is None:
            return False
        r, kind = a.rank, self.rng.choice(["flip", "roll", "tri"])
        shape = a.shape
        lo, hi = a.lo, a.hi
        if kind == "flip":
            dims = self.rng.sample(range(-r, r), 1) if r == 1 else [
                d - r * self.rng.randint(0, 1) for d in self.rng.sample(range(r), 2)]
            t = self.rng.choice([f"$0.flip({', '.join(map(str, dims))})",
                                 f"T.flip($0, {dims})"])
        elif kind == "roll":
            d, s = self.rng.randrange(-r, r), self.rng.randint(-3, 3)
            t = self.rng.choice([f"$0.roll({s}, {d})", f"T.roll($0, {s})",
                                 f"T.roll($0, ({s}, 1), (0, {d}))"])
        else:
            if r < 2:
                return False
            k = self.rng.randint(-2, 2)
            t = self.rng.choice([f"$0.tril({k})", f"T.triu($0, {k})", f"$0.triu(diagonal={k})"])
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        v = self.out_val(shape, a.dtype, (lo, hi), a.req)
        self.add(Line(t, (a.name,), v.name), v)
        return True

    def gen_gather(self) -> bool:
        a = self.pick(lambda v: v.rank >= 1 and v.numel > 0)
        if a is None:
            return False
        r, kind = a.rank, self.rng.choice(["gather", "index_select", "masked_fill"])
        d = self.rng.randrange(-r, r)
        n = a.shape[d]
        lo, hi = a.lo, a.hi
        if kind == "gather" and a.writable:
            # FOUND: torch's gather saves self (for its sizes) and refuses a backward
            # after self was written in place; pullback saves the index only (uses), so
            # it does not: only values never written (arguments) are gathered from;
            # test_found.py's "gather of a value written later" is its xfail
            return False
        if kind == "gather":
            shape = tuple(self.rng.randint(1, 3) if k == d % r else self.rng.randint(1, m)
                          if m else 0 for k, m in enumerate(a.shape))
            i = self.new_input(shape, "i", domain="nonneg", high=n)
            t = self.rng.choice([f"T.gather($0, {d}, $1)", f"$0.gather({d}, $1)"])
            args = (a.name, i.name)
        elif kind == "index_select":
            i = self.new_input((self.rng.randint(0, 3),), "i", domain="nonneg", high=n)
            shape = tuple(i.shape[0] if k == d % r else m for k, m in enumerate(a.shape))
            t = self.rng.choice([f"T.index_select($0, {d}, $1)", f"$0.index_select({d}, $1)"])
            args = (a.name, i.name)
        else:
            shape, value = a.shape, self.rng.choice([0.0, -1.5, 2.0])
            if self.chance(0.5):
                m = self.new_input(a.shape[self.rng.randint(0, r):], "m")
                t, args = f"$0.masked_fill($1, {value})", (a.name, m.name)
            else:
                t, args = f"T.masked_fill($0, $0 > 0.5, {value})", (a.name,)
            lo, hi = min(lo, value), max(hi, value)
        v = self.out_val(shape, a.dtype, (lo, hi), a.req, contig=True)
        self.add(Line(t, args, v.name), v)
        return True
