"""Pytree arguments in the persistent cache: a later process's first call of a front
door (vmap(hessian(f)) and jacfwd(jacrev(f)) too) on params as a dict, nested dicts,
a list of (w, b) tuples or a namedtuple runs
the variant the first process kept, without a trace, and gives the values the first
process, torch and central differences give; a changed global, another key or another
shape in the dict traces again; keys of containers of another type never collide."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from pullback.compiler import disk_variants

MODULE = """
import numpy as np
from collections import namedtuple
K = {k}
P = namedtuple("P", "w b")

def mlp(params, x):
    h = np.tanh(x @ params["l1"]["w"] + params["l1"]["b"])
    return np.sum((h @ params["l2"]["w"] + params["l2"]["b"]) ** 2) * K

def layers(params, x):
    h = x
    for w, b in params:
        h = np.tanh(h @ w + b)
    return np.sum(h ** 2) * K

def nt(p, x):
    return np.sum(np.sin(x @ p.w + p.b) ** 2) * K

def wide(params, x):
    return {{"out": np.tanh(x @ params["l1"]["w"]) * K, "b": params["l1"]["b"] * 2.0}}
"""

SCRIPT = """
import json, sys
import numpy as np
import pullback as pb
from pullback.compiler import cache_files
cache_files._versions = lambda by_folders: {"pullback": "pinned by the test"}
from pullback.compiler import disk_variants
import user
from user import P

trace = sys.modules["pullback.compiler.trace"]
traced = []
real = trace._trace_call
trace._trace_call = lambda *a, **k: traced.append(1) or real(*a, **k)
change = sys.argv[1]
r = np.random.default_rng(0)
params = {"l1": {"w": r.normal(size=(3, 2)), "b": r.normal(size=2)},
          "l2": {"w": r.normal(size=(2, 1)), "b": r.normal(size=1)}}
if change == "key":
    params["l0"] = {"w": np.ones(2)}
if change == "shape":
    params["l1"]["w"] = r.normal(size=(3, 3))[:, :2].copy()[:2]
x = r.normal(size=(4, 3)) if change != "shape" else r.normal(size=(4, 2))
pairs = [(params["l1"]["w"], params["l1"]["b"]), (params["l2"]["w"], params["l2"]["b"])]
p = P(params["l1"]["w"], params["l1"]["b"])
leaves = lambda t: [np.asarray(v).tolist() for v in pb.tree_leaves(t)]
calls = {
    "value_and_grad": lambda: pb.value_and_grad(user.mlp)(params, x),
    "grad_pairs": lambda: pb.grad(user.layers)(pairs, x),
    "grad_namedtuple": lambda: pb.grad(user.nt)(p, x),
    "hessian": lambda: pb.hessian(user.mlp)(params, x),
    "hessian_argnums": lambda: pb.hessian(user.nt, argnums=(0, 1))(p, x),
    "jvp": lambda: pb.jvp(user.wide, (params, x), (params, x)),
    "jacfwd": lambda: pb.jacfwd(user.wide)(params, x),
    "vmap": lambda: pb.vmap(user.mlp, in_axes=(None, 0))(params, np.stack([x, 2 * x])),
    "vmap_hessian": lambda: pb.vmap(pb.hessian(user.nt), in_axes=(0, None))(
        P(np.stack([p.w, -p.w]), np.stack([p.b, p.b])), x),
    "jacfwd_jacrev": lambda: pb.jacfwd(pb.jacrev(user.wide))({"l1": params["l1"]}, x[:2]),
}
out = {}
for name, call in calls.items():
    traced.clear()
    got = call()
    out[name] = {"traced": len(traced), "leaves": leaves(got),
                 "tree": repr(pb.tree_structure(got))}
print(json.dumps({"calls": out, "stats": disk_variants.STATS}))
"""

R = np.random.default_rng(0)
PARAMS = {"l1": {"w": R.normal(size=(3, 2)), "b": R.normal(size=2)},
          "l2": {"w": R.normal(size=(2, 1)), "b": R.normal(size=1)}}
X = R.normal(size=(4, 3))


def _run(tmp_path, change: str = "", k: float = 2.0) -> dict:
    (tmp_path / "user.py").write_text(MODULE.format(k=k))
    (tmp_path / "job.py").write_text(SCRIPT)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, str(tmp_path / "job.py"), change], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _torch_mlp(w1, b1, w2, b2, k: float = 2.0):
    h = torch.tanh(torch.tensor(X) @ w1 + b1)
    return torch.sum((h @ w2 + b2) ** 2) * k


def _check_against_torch(calls: dict) -> None:
    flat = [PARAMS["l1"]["b"], PARAMS["l1"]["w"], PARAMS["l2"]["b"], PARAMS["l2"]["w"]]
    ts = [torch.tensor(a, requires_grad=True) for a in flat]
    value = _torch_mlp(ts[1], ts[0], ts[3], ts[2])
    grads = torch.autograd.grad(value, ts)
    got = calls["value_and_grad"]["leaves"]  # (value, then the gradient's leaves, sorted keys)
    np.testing.assert_allclose(got[0], value.item(), rtol=1e-12)
    for g, want in zip(got[1:], grads):
        np.testing.assert_allclose(g, want.numpy(), rtol=1e-10, atol=1e-12)
    # the Hessian's block d2/dw1 dw1 against torch's, and a column by central differences
    h = torch.autograd.functional.hessian(
        lambda w1: _torch_mlp(w1, ts[0], ts[3], ts[2]), torch.tensor(flat[1])).numpy()
    blocks = dict(zip(["b", "w"], [calls["hessian"]["leaves"][i * 4:(i + 1) * 4]
                                   for i in range(2)]))  # (l1's rows: b, w; then l2's)
    np.testing.assert_allclose(blocks["w"][1], h, rtol=1e-9, atol=1e-12)
    eps, e = 1e-5, np.zeros(2)
    e[0] = 1.0

    def grad_b1(b1):
        t = torch.tensor(b1, requires_grad=True)
        return torch.autograd.grad(_torch_mlp(ts[1], t, ts[3], ts[2]), t)[0].numpy()
    column = (grad_b1(flat[0] + eps * e) - grad_b1(flat[0] - eps * e)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(blocks["b"][0])[:, 0], column, rtol=1e-6, atol=1e-8)


def test_a_later_process_runs_pytree_calls_without_a_trace(tmp_path):
    first = _run(tmp_path)
    assert all(c["traced"] >= 1 for c in first["calls"].values())
    second = _run(tmp_path)
    assert {n: c["traced"] for n, c in second["calls"].items()} == \
        dict.fromkeys(first["calls"], 0)
    assert second["stats"]["misses"] == 0 and second["stats"]["refused"] == 0
    for name, c in first["calls"].items():  # the same values, in the same structures
        assert second["calls"][name]["tree"] == c["tree"], name
        np.testing.assert_allclose(np.concatenate([np.ravel(v) for v in
                                                   second["calls"][name]["leaves"]]),
                                   np.concatenate([np.ravel(v) for v in c["leaves"]]),
                                   rtol=0, atol=0, err_msg=name)
    assert "{'l1': {'b': *, 'w': *}" in second["calls"]["value_and_grad"]["tree"]
    assert "P(*, *)" in second["calls"]["grad_namedtuple"]["tree"]
    _check_against_torch(second["calls"])
    # a changed global, another key in the dict, another shape: traced again
    for change, k in [("", 3.0), ("key", 2.0), ("shape", 2.0)]:
        again = _run(tmp_path, change, k)
        traced = {n: c["traced"] for n, c in again["calls"].items()}
        names = traced if k != 2.0 else ("value_and_grad", "hessian", "jvp", "jacfwd_jacrev")
        assert all(traced[n] >= 1 for n in names), (change, traced)
        if k != 2.0:  # (the new global's values: K scales every result)
            np.testing.assert_allclose(again["calls"]["hessian"]["leaves"][0],
                                       np.multiply(first["calls"]["hessian"]["leaves"][0], 1.5))


def _key(*args):
    return disk_variants.key_of(_f, ("grad", 0, False), args)


def _f(p):
    return p


Named = collections.namedtuple("Named", "a b")
Other = collections.namedtuple("Named", "a c")  # (the same name, other fields)
Tuple = collections.namedtuple("tuple", "a b")  # (named as the builtin)


def test_keys_of_containers_of_another_type_never_collide():
    a, b = np.ones(2), np.zeros(3)
    keys = [_key({"a": a, "b": b}), _key([("a", a), ("b", b)]), _key((("a", a), ("b", b))),
            _key((a, b)), _key([a, b]), _key(Named(a, b)), _key(Other(a, b)), _key(Tuple(a, b)),
            _key(collections.OrderedDict(a=a, b=b)), _key(collections.OrderedDict(b=b, a=a)),
            _key({"a": a, "b": b, "c": a}), _key({"a": b, "b": a}), _key({"a": {"b": a}}),
            _key({"a": [a]}), _key({"a": (a,)})]
    assert len(set(keys)) == len(keys)
    # dicts are flattened in sorted key order: the order they were built in is no part
    assert _key({"a": a, "b": b}) == _key({"b": b, "a": a})


def test_deep_pytrees_are_kept_and_cyclic_or_huge_ones_refused():
    deep: object = np.ones(2)
    for _ in range(30):
        deep = {"level": [deep]}
    assert len(_key(deep)) == 64
    cyclic: list = []
    cyclic.append(cyclic)
    with pytest.raises(disk_variants.NotPortable):
        disk_variants.literal(cyclic)
    with pytest.raises(disk_variants.NotPortable):
        _key([{"w": np.ones(1)} for _ in range(2000)])
    with pytest.raises(disk_variants.NotPortable):
        _key({"w": object()})


def test_output_structures_round_trip():
    tree = (dict, {"a": None, 3: (list, [None, ("const", 1.5)]), "n": (Named, [None, None]),
                   "t": (tuple, [("const", None), ("const", "s"), ("const", True)])})
    text = disk_variants.tree_text(tree)
    assert disk_variants.tree_of(json.loads(json.dumps(text))) == tree
    with pytest.raises(disk_variants.NotPortable):
        disk_variants.tree_text((tuple, [("const", object())]))
    local = collections.namedtuple("Local", "a")
    with pytest.raises(disk_variants.NotPortable):  # (not found again under its name)
        disk_variants.tree_text((local, [None]))
