"""The tracer's part for state outside the traced function: random generators it
draws from and objects it changes (a captured list, an attribute, a global) go back
to what they were when the trace ends, as the generated code, run on this call too,
makes the same draws and changes again.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

from ..ops.sampling import state_of


class OutsideChanges:
    """``Tracer``'s methods for state outside the function (its ``rewinds``,
    ``changed``, ``unguarded`` and ``writes``, made in ``Tracer.__init__``)."""

    def will_draw(self, gen: Any) -> None:
        """The traced code is about to draw from ``gen``: when the trace ends, ``gen``
        goes back to where it is now, so that the generated code, run on this call
        too, draws what eager code would (same stream, same values)."""
        if id(gen) not in self.rewinds:
            self.rewinds[id(gen)] = (gen, state_of(gen))

    def will_change(self, key: Any, target: Any, restore: Callable, before: Any) -> None:
        """The traced code is about to change ``target`` (state outside the function):
        when the trace ends, ``restore(target, before)`` puts back what is there now."""
        if key not in self.changed:
            self.changed[key] = (target, restore, before)

    def unguard(self, key: tuple, replayed: bool) -> None:
        """A change to ``key`` (see ``unguarded``) was made again by generated code, or
        not (``replayed`` False, which stays)."""
        self.unguarded[key] = self.unguarded.get(key, True) and replayed

    def wrote(self, target: Any) -> None:
        """The equation just recorded makes a change to ``target`` on every call."""
        self.writes.append((self.builder.eqns[-1], target))

    def _put_back(self) -> None:
        """Undo the changes the trace made to state outside the function, and drop the
        writes into objects only the trace holds (a list the function made and handed
        to a helper that appends to it): nobody can see them."""
        _restore(self.changed)
        if not self.writes:
            self.changed = {}
            return
        ours = _counts([t for t, _, _ in self.changed.values()], 1)
        ours = _counts([t for _, t in self.writes], 2, ours)  # (the entry and the effect)
        dead = set()
        for e, t in self.writes:  # (``t``, a local name, as ``_REFS``'s ``obj``)
            if _references(t) - _REFS <= ours.get(id(t), 0):
                dead.add(id(e))
        del e, t
        if dead:
            self.builder.eqns = [e for e in self.builder.eqns if id(e) not in dead]
        self.changed, self.writes = {}, []


def _counts(targets: list, each: int, into: dict | None = None) -> dict:
    into = {} if into is None else into
    for t in targets:
        into[id(t)] = into.get(id(t), 0) + each
    return into


def _restore(changed: dict) -> None:
    for target, restore, before in reversed(changed.values()):
        restore(target, before)


def _references(target: Any) -> int:
    """The references to ``target`` (as ``sys.getrefcount`` counts them from here)."""
    return sys.getrefcount(target)


def _own_references() -> int:
    obj: list = []
    return _references(obj)


#: what ``_references`` counts for an object only a local name refers to
_REFS = _own_references()
