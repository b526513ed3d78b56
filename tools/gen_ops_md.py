"""Generate docs/ops.md, the op reference, from the op table (``pullback.ops``).

Run from the repository root::

    python tools/gen_ops_md.py            # rewrite docs/ops.md
    python tools/gen_ops_md.py --check    # exit 1 when docs/ops.md is stale

One section per op family (a module of ``src/pullback/ops/``), one row per primitive
(``defop``) and per public function over primitives (``@public``): its names (``pb.<name>``,
``Tensor.<name>``, the in-place method, ``F.<name>``, numpy's functions), torch's node name,
whether gradients flow, and the first sentence of its rule's or function's docstring as
the note. ``tests/test_ops_md.py`` regenerates the page and compares it with the file, so
a new op without a regenerated page fails the suite.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

from pullback.ops import OPS, PUBLIC, OpDef
from pullback.ops.table.batching import native, rule_of

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "ops.md"
OPS_DIR = ROOT / "src" / "pullback" / "ops"
#: ops whose rules need the passes (control-flow regions) are declared in transforms/
TRANSFORMS_DIR = ROOT / "transforms"
COMMAND = "python tools/gen_ops_md.py"

HEADER = f"""# Op reference

Generated from the op table by `{COMMAND}`; do not edit by hand
(`tests/test_ops_md.py` fails when this page and the table differ).

Each op family is a module of `src/pullback/ops/`. A **primitive** is one `defop`
declaration: its own node (`grad_fn`, torch's name) and VJP rule. A **function** is a
`@public` implementation over primitives (its nodes are theirs). Names: `pb.x` is
`pullback.x` (`pb.linalg.x`, `pb.fft.x` for torch's namespaces), `Tensor.x` a method,
`Tensor.x_` its in-place form, `F.x` is `pullback.nn.functional.x`, `np.x` numpy's
function on Tensors and inside `pb.grad`. Differentiable: `yes` (a rule), `no` (its
results never require grad) or `via ops` (the primitives it calls decide). vmap: how a
primitive runs on a batch (`pb.vmap`): `derived` (an elementwise op, or one whose axis
params shift), `declared` (a `batch=` rule of its own), `loop` (once per batch
element, stacked: slower, never wrong), `via ops` for a function.
"""


def _first_sentence(doc: str | None) -> str:
    if not doc:
        return ""
    text = " ".join(doc.strip().split("\n\n")[0].split())
    m = re.match(r"(.+?(?<!e\.g|i\.e)\.)(\s|$)", text)
    return (m.group(1) if m else text).rstrip(":.") + "."


def _cell(text: str) -> str:
    return text.replace("|", "\\|") or " "


def _file_of(obj: Any, kernels: bool = False) -> Path | None:
    """The op family (a module directly in ``ops/``) defining function ``obj``; with
    ``kernels``, a module of ``ops/kernels/`` too."""
    code = getattr(obj, "__code__", None)
    if code is None:
        return None
    path = Path(code.co_filename).resolve()
    folders = (OPS_DIR.resolve(), TRANSFORMS_DIR.resolve(), OPS_DIR.resolve() / "kernels")
    return path if path.parent in (folders if kernels else folders[:2]) else None


def _op_module(op: Any, sources: dict) -> str:
    """The family declaring primitive ``op``: the module whose source calls something
    with its quoted name first, else the file of one of its functions."""
    pattern = re.compile(r'\(\s*"' + re.escape(op.name) + r'"\s*,')
    found = [stem for stem, text in sources.items() if pattern.search(text)]
    if len(found) == 1:
        return found[0]
    for obj in [r for r in (op.vjp or ()) if r is not None] + [op.forward, op.template]:
        path = _file_of(obj)
        if path is not None and (not found or path.stem in found):
            return path.stem
    return found[0] if found else "?"


def _names(entries: list) -> tuple[str, str]:
    torch, numpy = [], []
    for e in entries:
        torch += [f"pb.{n}" for n in e.functions] + [f"Tensor.{n}" for n in e.methods]
        torch += [f"Tensor.{e.inplace}"] * bool(e.inplace)
        torch += [f"F.{n}" for n in e.functional]
        numpy += ["np." + _numpy_name(f).removeprefix("numpy.") for f in e.numpy]
    return ", ".join(torch), ", ".join(numpy)


def _numpy_name(f: Any) -> str:
    name = getattr(f, "__name__", repr(f))
    module = getattr(f, "__module__", None) or "numpy"
    module = re.sub(r"\._[a-z_]+$", "", module)  # numpy.fft._pocketfft -> numpy.fft
    return f"{module}.{name}"


def _rule_note(op: Any) -> str:
    for fn in [r for r in (op.vjp or ()) if r is not None] + [op.forward]:
        if getattr(fn, "__name__", "<lambda>") != "<lambda>" and _file_of(fn, True) is not None:
            note = _first_sentence(fn.__doc__)
            if note:
                return note
    return ""


def _batching(op: Any) -> str:
    if not native(op):
        return "loop"
    return "declared" if rule_of(op) is op.batch else "derived"


def rows() -> dict:
    """{family: [(name, kind, torch names, numpy names, grad_fn, differentiable, vmap,
    note)]}."""
    sources = {p.stem: p.read_text() for p in sorted(OPS_DIR.glob("*.py"))}
    by_fn: dict = {}
    for e in PUBLIC:
        by_fn.setdefault(id(e.fn), []).append(e)
    families: dict = {}
    for op in OPS.values():
        torch, numpy = _names(by_fn.get(id(op), []))
        families.setdefault(_op_module(op, sources), []).append(
            (op.name, "primitive", torch, numpy, op.grad_fn or "",
             "yes" if op.differentiable else "no", _batching(op), _rule_note(op)))
    seen: set = set()
    for e in PUBLIC:
        if isinstance(e.fn, OpDef) or id(e.fn) in seen:
            continue
        seen.add(id(e.fn))
        torch, numpy = _names(by_fn[id(e.fn)])
        path = _file_of(e.fn)
        families.setdefault(path.stem if path else "?", []).append(
            (e.fn.__name__, "function", torch, numpy, "", "via ops", "via ops",
             _first_sentence(e.fn.__doc__)))
    return families


def _family_intro(stem: str) -> str:
    if stem == "?":
        return ""
    package = "transforms" if (TRANSFORMS_DIR / f"{stem}.py").exists() else "ops"
    return _first_sentence(importlib.import_module(f"pullback.{package}.{stem}").__doc__)


def render() -> str:
    families = rows()
    out = [HEADER]
    total = sum(len(r) for r in families.values())
    prims = sum(1 for r in families.values() for row in r if row[1] == "primitive")
    looping = sum(1 for r in families.values() for row in r if row[6] == "loop")
    out.append(f"{prims} primitives and {total - prims} functions in {len(families)} "
               f"families; {prims - looping} primitives batch natively under vmap.\n")
    for stem in sorted(families):
        out.append(f"## {stem}\n")
        intro = _family_intro(stem)
        if intro:
            out.append(intro + "\n")
        out.append("| op | kind | torch | numpy | grad_fn | differentiable | vmap | notes |")
        out.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for row in families[stem]:
            name, *rest = row
            out.append("| " + " | ".join([f"`{name}`"] + [_cell(c) for c in rest]) + " |")
        out.append("")
    return "\n".join(out)


def main(argv: list) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run `{COMMAND}`")
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

