"""``compiled_html``: one HTML page showing what ``pb.compile`` made of a function, the
generated forward and backward side by side. Each block of the forward is headed by
the line of your code it came from (``# model.py:12: h = ...``); each block of the
backward by the line whose gradient it computes (``# grad of: h = ...``). On the
page, a backward block links to its forward line and back, and both show the line.

>>> import pullback as pb
>>> @pb.compile
... def f(x, w):
...     h = (x @ w).tanh()
...     return (h * h).sum()
>>> page = pb.viz.compiled_html(f, pb.ones(2, 3), pb.ones(3, 3, requires_grad=True))
>>> page.startswith("<!DOCTYPE html>"), 'href="#fwd-' in page, 'href="#bwd-' in page
(True, True, True)
"""

from __future__ import annotations

import html
import os
import re
from typing import Any

from ..compiler.inspection import inspect

_FORWARD = re.compile(r"^(\s*)# (?!grad of: )(.+?:\d+): (.*)$")
_BACKWARD = re.compile(r"^(\s*)# grad of: (.*)  \(([^()]*:\d+)\)$")
_STYLE = """
body { font-family: sans-serif; margin: 1em; }
.columns { display: flex; gap: 1em; align-items: flex-start; }
.column { flex: 1; min-width: 0; }
pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; margin: 0; }
.block { border-left: 3px solid #ccc; padding-left: 0.3em; margin: 0.1em 0; }
.block:target { border-left-color: #e69500; background: #fff3dd; }
.line { color: #2a6f2a; }
a { color: #1a4f9c; text-decoration: none; }
table { border-collapse: collapse; font-family: monospace; }
td, th { padding: 0.1em 0.6em; text-align: left; }
"""


def _key(where: str) -> str:
    """An HTML id for a user's source line (``model.py:12``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", where)


def _blocks(source: str, pattern: re.Pattern, kind: str) -> list:
    """The source split at its comments: (where, comment, lines) per block; where is
    None for the lines before the first comment."""
    blocks: list = [(None, None, [])]
    for line in source.rstrip("\n").split("\n"):
        m = pattern.match(line)
        if m is None:
            blocks[-1][2].append(line)
            continue
        where = m.group(2) if kind == "fwd" else m.group(3)
        blocks.append((where, line, []))
    return blocks


def _column(source: str, kind: str, links: dict) -> str:
    """One column: blocks with ids; each comment links to the other column's block
    (``links``: where -> the other column's ids)."""
    pattern = _FORWARD if kind == "fwd" else _BACKWARD
    out = []
    for n, (where, comment, lines) in enumerate(_blocks(source, pattern, kind)):
        body = html.escape("\n".join(lines))
        if where is None:
            out.append(f"<pre>{body}</pre>" if lines else "")
            continue
        ident = f"{kind}-{_key(where)}-{n}"
        targets = links.get(where, [])
        link = "".join(f' <a href="#{t}">{"grad" if kind == "fwd" else "forward"}</a>'
                       for t in targets)
        out.append(f'<div class="block" id="{ident}"><pre><span class="line">'
                   f"{html.escape(comment)}</span>{link}\n{body}</pre></div>")
    return "\n".join(x for x in out if x)


def _ids(source: str, kind: str) -> dict:
    """where -> the ids its blocks get in ``_column``."""
    pattern = _FORWARD if kind == "fwd" else _BACKWARD
    out: dict = {}
    for n, (where, _, _) in enumerate(_blocks(source, pattern, kind)):
        if where is not None:
            out.setdefault(where, []).append(f"{kind}-{_key(where)}-{n}")
    return out


def compiled_html(fn: Any, *args: Any, path: str | os.PathLike | None = None) -> str:
    """The page for ``fn`` (a ``pb.compile``, ``pb.grad`` or ``pb.value_and_grad``
    function, or a compiled module) traced on ``args``; written to ``path`` if given.
    Returns the HTML text."""
    info = inspect(fn, *args)
    name = html.escape(getattr(fn, "__qualname__", type(fn).__name__))
    backward = info.backward or ""
    fwd_ids, bwd_ids = _ids(info.forward, "fwd"), _ids(backward, "bwd")
    columns = [("Forward (generated)", _column(info.forward, "fwd", bwd_ids))]
    if backward:
        columns.append(("Backward (generated)", _column(backward, "bwd", fwd_ids)))
    saved = "".join(f"<tr><td>{html.escape(s.name)}</td><td>{s.dtype}{list(s.shape)}</td>"
                    f"<td>{s.nbytes} B</td><td>{html.escape(s.made_by)}</td></tr>"
                    for s in info.saved)
    page = "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>pullback: {name}</title>", f"<style>{_STYLE}</style>", "</head>", "<body>",
        f"<h1>{name}</h1>",
        "<p>Blocks are headed by the line of your code they come from; a link jumps to "
        "the same line in the other column.</p>",
        '<div class="columns">',
        *[f'<div class="column"><h2>{title}</h2>\n{body}\n</div>' for title, body in columns],
        "</div>",
        "<h2>Values the forward keeps for the backward</h2>",
        "<table><tr><th>name</th><th>type</th><th>size</th><th>made by</th></tr>"
        f"{saved}</table>" if saved else "<p>None.</p>",
        f"<h2>Traced IR</h2>\n<pre>{html.escape(info.ir)}</pre>",
        "</body>", "</html>", ""])
    if path is not None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(page)
    return page


__all__ = ["compiled_html"]
