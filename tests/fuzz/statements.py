"""The statements of a random program (generator.py): a line, an ``if`` with two arms,
a ``with T.no_grad():`` block. Each renders as Python source over ``T`` and ``F``."""

from __future__ import annotations

import re
from dataclasses import dataclass

_ARG = re.compile(r"\$(\d+)")


def fill(template: str, args: tuple) -> str:
    """``"T.tanh($0) * $1"`` with the names in ``args``."""
    return _ARG.sub(lambda m: args[int(m.group(1))], template)


@dataclass(frozen=True)
class Line:
    """One line of source: ``template`` with ``$k`` for the k-th name in ``args``;
    ``out`` is the name it assigns ("v3, v4" for several; None for an in-place write)."""

    template: str
    args: tuple = ()
    out: str | None = None

    def render(self, indent: str) -> list:
        text = fill(self.template, self.args)
        return [indent + (f"{self.out} = {text}" if self.out else text)]

    @property
    def uses(self) -> tuple:
        return self.args


@dataclass(frozen=True)
class If:
    """``if <cond>:`` one arm ``else:`` the other; both arms assign the same ``out``."""

    cond: Line
    then: tuple
    orelse: tuple
    out: str | None = None

    def render(self, indent: str) -> list:
        lines = [indent + f"if {fill(self.cond.template, self.cond.args)}:"]
        for s in self.then:
            lines += s.render(indent + "    ")
        lines.append(indent + "else:")
        for s in self.orelse:
            lines += s.render(indent + "    ")
        return lines

    @property
    def uses(self) -> tuple:
        return self.cond.args + sum((s.uses for s in self.then + self.orelse), ())


@dataclass(frozen=True)
class NoGrad:
    """``with T.no_grad():`` around statements."""

    body: tuple
    out: str | None = None

    def render(self, indent: str) -> list:
        lines = [indent + "with T.no_grad():"]
        for s in self.body:
            lines += s.render(indent + "    ")
        return lines

    @property
    def uses(self) -> tuple:
        return sum((s.uses for s in self.body), ())
