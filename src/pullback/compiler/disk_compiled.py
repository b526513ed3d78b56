"""``pb.compile``'s whole variants in the persistent cache (``disk_variants.py`` does
the same for ``pb.grad``): a later process's first call runs the forward kept here,
and its first ``.backward()`` the backward kept beside it, without a trace.

A variant is keyed as ``disk_variants``' are (the function's code, the call's plain
key, settings, versions), plus the front door's name, the grad mode and, for a
compiled module, a description of the module (``target``: every submodule's class,
its ``training`` flag, its parameters' and buffers' names, shapes, dtypes and
``requires_grad``, a library module's hyperparameters; a hook or any other value makes
it not kept). The module's parameters are the variant's captured tensors: an entry
names each by its dotted name, and a later process reads them from its own module.

The backwards generated for a variant (and jacrev's batched backward) are kept in the
variant's own entry, written again with each (one file read and one HMAC for a later
process's forward and backward), up to ``_MAX_MORE``; more backwards in entries of
their own.

A variant read from here has no graph: what needs one (a backward for other outputs'
gradients than the kept one's, ``create_graph``, anomaly mode, Jacobian rows) traces
again, once (``retrace``). What a variant needs is refused as in ``disk_variants``:
guards on traced values, draws, other impure ops (prints, callbacks), cuts, notes,
nested outputs, captured tensors of a plain function.
"""

from __future__ import annotations

import hashlib
import json
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from ..autograd.grad_mode import STATE
from ..ir import every_eqn
from ..settings import config
from .cache_files import Refused
from .disk_cache import warned
from .disk_variants import (
    NotPortable,
    _refused,
    captured_text,
    checked_entry,
    code_hash,
    entry_fields,
    entry_module,
    key_of,
    read_entry,
    write_entry,
)
from .trace import Traced


def compile_key(fn: Callable, how: str, args: tuple, target: Any) -> str:
    """The entry's name for compiled ``fn`` (``target``: a module's description, or
    None) called on ``args``; ``NotPortable`` when something is not plain."""
    fn = getattr(fn, "__func__", fn)
    if not isinstance(fn, types.FunctionType):  # (another door's function, a vmap of
        raise NotPortable(type(fn).__name__)    # one say: its settings are not in a key)
    return key_of(fn, ("compile", how, STATE.grad_enabled, code_hash(fn.__code__),
                       repr(target)), args)  # (plain values: repr is canonical, and
    # cheaper than JSON, for a later process's first call)


@dataclass
class Entry:
    """A variant's entry as written (or read): what writing it again with its first
    backward needs; ``backwards``: ``(needs, present)`` -> the backward it keeps."""

    key: str
    fields: dict
    module: Any
    captured: Any
    backwards: dict = field(default_factory=dict)


def load(fn: Callable, how: str, args: tuple, target: Any, tensors: dict,
         own: Callable, guards: Callable | None = None
         ) -> tuple[Traced, Any, dict, Entry] | None:
    """The kept variant for this call: its ``Traced`` (no graph values), forward module,
    fields (``key`` among them) and entry; None: trace. ``tensors``: the module's
    tensors by dotted name; ``own``: descriptions the key makes sufficient (``captured_text``);
    ``guards``: ``checked_entry``'s."""
    def referenced(fields: dict) -> set:  # (the parameters: inputs of the variant)
        return {id(x) for name in fields["captures"]
                for x in (tensors[name], tensors[name]._data)}
    got = checked_entry(fn, args, lambda: compile_key(fn, how, args, target), referenced, own,
                        more=True, guards=guards)
    if got is None:
        return None
    fields, slots, captured, module, graph, more = got
    captures = [tensors[name] for name in fields["captures"]]
    traced = Traced(graph, slots, list(fields["requires"]), captures, [], None,
                    len(graph.outputs), captured, captured and captured.check,
                    notes=tuple(fields.get("notes", ())))
    entry = Entry(fields["key"], {k: v for k, v in fields.items() if k not in _MORE},
                  module, captured, dict(_part_of(meta, m) for meta, m in more))
    fields["returned"] = fields["returned"] and tuple(map(tuple, fields["returned"]))
    return traced, module, fields, entry


_MORE = ("more", "code")  # (fields write_entry adds)


def store(fn: Callable, how: str, args: tuple, target: Any, names: dict, own: Callable,
          traced: Traced, module: Any, meta: dict) -> Entry | None:
    """Keep a variant just traced (``meta``: the Variant's wrt, returned, tracked,
    checked and residuals); its entry, or None when not kept. ``names``: the module's
    tensors' dotted names by id."""
    if traced.guards or traced.generators or traced.cut is not None or \
            traced.out_tree is not None or not all(id(t) in names for t in traced.captures) \
            or not all(e.op.pure for e in every_eqn(traced.graph)) or warned(module):
        return None  # (a print or callback: a kept variant's graph has no equations, and
        # jacrev's batched rows run the forward again only for pure ones)
    try:
        key = compile_key(fn, how, args, target)
        fields = entry_fields(key, module, traced.graph) | meta | {
            "slots": [[i, list(p)] for i, p in traced.arg_slots],
            "requires": list(traced.requires),
            "captures": [names[id(t)] for t in traced.captures],
            "captured": captured_text(traced.captured, own), "notes": list(traced.notes)}
    except (NotPortable, TypeError, ValueError):
        return None
    if not write_entry(config.cache_dir, key, fields, module, traced.captured):
        return None
    return Entry(key, fields, module, traced.captured)


def backward_key(key: str, needs: tuple, present: tuple) -> str:
    return hashlib.sha256(json.dumps([key, "backward", needs, present]).encode()).hexdigest()


def load_backward(key: str, needs: tuple, present: tuple) -> Any:
    """The backward module kept for variant ``key``'s ``(needs, present)``, or None."""
    directory = config.cache_dir
    try:
        found = read_entry(directory, backward_key(key, needs, present))
        return found and entry_module(*found)
    except Refused as e:
        return _refused(directory, str(e))
    except (OSError, ValueError, EOFError, KeyError, TypeError, IndexError) as e:
        return _refused(directory, f"{type(e).__name__}: {e}")


def store_backward(entry: Entry, needs: tuple, present: tuple, module: Any,
                   graph: Any) -> None:
    """Keep a backward just generated: in the variant's own entry (written again with
    it) while it keeps fewer than ``_MAX_MORE`` modules, else in an entry beside it."""
    if warned(module) or _keep(entry, (needs, present), module):
        return
    bkey = backward_key(entry.key, needs, present)
    try:
        fields = entry_fields(bkey, module, graph)
    except (NotPortable, TypeError, ValueError):
        return
    write_entry(config.cache_dir, bkey, fields, module)


def store_batched(entry: Entry, size: int, seed: int, found: tuple) -> None:
    """Keep jacrev's batched backward (``found``: its module and which outputs carry
    the batch) in the variant's entry, while there is room."""
    if not warned(found[0]):
        _keep(entry, ("batched", size, seed), found)


def _keep(entry: Entry, part: tuple, kept: Any) -> bool:
    """Write ``entry`` again with ``kept`` (a module, or a batched backward's module and
    flags) as ``part``; False when the entry has no room or the module cannot be kept."""
    if len(entry.backwards) >= _MAX_MORE:
        return False
    more = [_part_meta(k, v) for k, v in [*entry.backwards.items(), (part, kept)]]
    try:
        written = write_entry(config.cache_dir, entry.key, entry.fields, entry.module,
                              entry.captured, more)
    except NotPortable:
        return False
    if written:
        entry.backwards[part] = kept
    return written


def _part_meta(part: tuple, kept: Any) -> tuple:
    """A part as ``write_entry``'s ``more`` pair: its plain JSON meta and module."""
    if part[0] == "batched":
        return [*part, list(kept[1])], kept[0]
    return [list(part[0]), list(part[1])], kept


def _part_of(meta: list, module: Any) -> tuple:
    """``_part_meta``'s inverse: the part's key in ``Entry.backwards`` and what it keeps."""
    if meta[0] == "batched":
        return ("batched", meta[1], meta[2]), (module, tuple(meta[3]))
    return (tuple(meta[0]), tuple(meta[1])), module


_MAX_MORE = 4  # modules kept in a variant's entry besides its forward (write_entry's)


__all__ = ["Entry", "load", "store", "load_backward", "store_backward", "store_batched",
           "compile_key"]
