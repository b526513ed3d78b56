"""``pb.jacfwd``, ``pb.jacrev`` and ``pb.hessian``: whole Jacobians, as JAX and
torch.func give them (each output leaf's Jacobian has shape ``out.shape + in.shape``).

``jacfwd`` runs the generated tangent program (``forward.py``) once per basis vector of
the inputs, ``jacrev`` the generated pullback (``vjp.py``) once per basis vector of the
output; ``hessian(f) = jacfwd(jacrev(f))``, forward over reverse. Inside a trace or on
tensors with a graph the same loops run eagerly and assemble the Jacobian with ops, so
it is differentiable.

>>> import numpy as np, pullback as pb
>>> f = lambda x: (x ** 3).sum()
>>> pb.hessian(f)(np.array([1., 2.]))
array([[ 6.,  0.],
       [ 0., 12.]])
>>> pb.jacfwd(pb.grad(f))(np.array([1., 2.]))
array([[ 6.,  0.],
       [ 0., 12.]])
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ..autograd import anomaly_mode
from ..autograd.record import trace_hooks
from ..creation import local
from ..ir import every_eqn
from ..ops.indexing import fill_op
from ..ops.joining import stack
from ..ops.table.batching import Unbatchable
from ..pytree import tree_flatten, tree_leaves, tree_unflatten
from ..tensor import Tensor
from .compiled import CompiledNode
from .conversions import functional
from .doors import OutputError, as_kind, check_argnums, check_target, has_graph, kind_of
from .forward import JVPProgram
from .jax_options import HolomorphicJacobian, with_static
from .lazy_arrays import check_call
from .trace import param_names
from .user_lines import def_line
from .vjp import VJPFunction, vjp_for

__all__ = ["jacfwd", "jacrev", "hessian"]


def _shape(x: Any) -> tuple:
    return tuple(np.shape(x._data if isinstance(x, Tensor) else x))


def _zeros_like(x: Any) -> Any:
    if isinstance(x, Tensor):
        if trace_hooks() and x._data.dtype.kind in "fc":  # (an equation: see _row_seed)
            return fill_op(x, value=0, shape=x._data.shape)
        return Tensor._make(np.zeros_like(x._data))
    return np.zeros_like(np.asarray(x, dtype=float) if isinstance(x, float) else x)


def _basis(x: Any, j: int) -> Any:
    """The j-th basis vector of the space of ``x`` (C order, as the Jacobian's columns
    run), of its kind. A fresh C-contiguous array: ``zeros_like`` keeps a transposed or
    Fortran input's layout, where ``reshape(-1)`` is a copy the write would be lost in."""
    d = x._data if isinstance(x, Tensor) else np.asarray(x)
    if d.dtype.kind not in "fc":  # (a complex input keeps a complex basis)
        d = d.astype(float)
    e = np.zeros(d.shape, d.dtype)
    e.reshape(-1)[j] = 1
    if isinstance(x, Tensor) and trace_hooks():  # (a constant of the trace: see _row_seed)
        return local(e)
    return Tensor._make(e) if isinstance(x, Tensor) else e


def _row_seed(p: Any, j: int, seeded: bool) -> Any:
    """jacrev's cotangent for output leaf ``p`` in row ``j`` (the basis vector when
    ``seeded``, else zeros). Inside a trace (hessian's inner jacrev, traced by its outer
    jacfwd) a one-element basis and zeros are equations on ``p`` (``np.full``), not
    Tensors made here: such a Tensor would be a captured value of the trace, which keeps
    the variant out of the persistent cache; a larger basis vector is a constant of the
    trace (``creation.local``), written inline in the code when small."""
    if trace_hooks() and isinstance(p, Tensor) and (not seeded or p._data.size == 1):
        return fill_op(p, value=1 if seeded else 0, shape=p._data.shape)
    return _basis(p, j) if seeded else _zeros_like(p)


def _assemble(columns: list, lead: tuple, tail: tuple, like: Any, axis: int) -> Any:
    """One Jacobian block of shape ``lead + tail`` from its columns (``axis=-1``: the
    columns run over ``tail``, as jacfwd makes them) or rows (``axis=0``, jacrev)."""
    shape = lead + tail
    if not columns:
        return _zeros_like(like).reshape(shape) if isinstance(like, Tensor) else \
            np.zeros(shape, np.asarray(like).dtype)
    if any(isinstance(c, Tensor) for c in columns):
        cols = [c if isinstance(c, Tensor) else Tensor._make(np.asarray(c)) for c in columns]
        return stack([c.reshape(-1) for c in cols], dim=axis).reshape(shape)
    return np.stack([np.reshape(c, -1) for c in columns], axis=axis).reshape(shape)


class Jacobian:
    """``jacfwd(f)`` / ``jacrev(f)``: the Jacobian function of ``f``."""

    def __init__(self, fn: Callable, argnums: Any, has_aux: bool, forward: bool,
                 scalar: str | None = None, door: str | None = None) -> None:
        self.fn = fn
        self.argnums = argnums
        self.has_aux = has_aux
        self.forward = forward
        self.scalar = scalar  # hessian: refuse a non-scalar output, in its name
        self.name = "jacfwd" if forward else "jacrev"
        self.door = door or self.name  # the transform's name in ConversionError
        # complex inputs refused (None: allowed, holomorphic=True's wrapper): "jax" or
        # "torch" says whose words
        self.real_only: str | None = None
        self._programs: dict = {}
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args: Any) -> Any:
        nums = check_argnums(self.name, self.argnums, len(args))
        targets = [tree_leaves(args[k]) for k in nums]
        if self.real_only:
            self._check_real([x for ts in targets for x in ts])
        with functional(self.door):
            cols = self._forward(args, nums, targets) if self.forward else \
                self._reverse(args, nums, targets)
        out, blocks, aux = cols
        out_tree = tree_flatten(out)[1]
        per_out = []
        for row in blocks:
            it = iter(row)
            per_arg = [tree_unflatten(tree_flatten(args[k])[1], [next(it) for _ in ts])
                       for k, ts in zip(nums, targets)]
            per_out.append(tuple(per_arg) if isinstance(self.argnums, tuple) else per_arg[0])
        jac = tree_unflatten(out_tree, per_out)
        return (jac, aux) if self.has_aux else jac

    @property
    def kept_settings(self) -> tuple:
        """What a kept variant of a transform over this one adds to its key (beside the
        function's code: ``disk_variants.kept_function``): how it differentiates."""
        argnums = self.argnums if isinstance(self.argnums, (int, tuple)) else repr(self.argnums)
        return (self.name, self.door, argnums, self.has_aux, self.forward, self.scalar,
                self.real_only)

    def _check_real(self, leaves: list) -> None:
        """JAX's and torch.func's rule: a Jacobian of complex inputs needs
        holomorphic=True (forward and reverse mode would disagree on what it is)."""
        for k, x in enumerate(leaves):
            d = np.result_type(x._data if isinstance(x, Tensor) else x)
            if d.kind != "c":
                continue
            if self.real_only == "torch":
                raise RuntimeError(f"{self.name}: Expected all inputs to be real but received "
                                   f"complex tensor at flattened input idx: {k}")
            raise TypeError(f"{self.name}: input {k} is {d}; {self.name} takes real inputs "
                            "unless holomorphic=True (the complex Jacobian of a holomorphic "
                            "function); for a real function of complex inputs, use pb.vjp "
                            "or pb.grad (torch's conjugate convention)")

    def _check_scalar(self, out_leaves: list) -> None:
        if self.scalar and (len(out_leaves) != 1 or int(np.prod(_shape(out_leaves[0]))) != 1):
            ndim = len(_shape(out_leaves[0])) if out_leaves else 0
            raise OutputError(f"{self.scalar}(f)(*args): Expected f(*args) to return a scalar "
                              f"Tensor, got tensor with {ndim} dims; for the Jacobian of a "
                              "non-scalar function's Jacobian use jacfwd(jacrev(f))")

    def _forward(self, args: tuple, nums: tuple, targets: list) -> tuple:
        """Columns: the output's tangent along every basis vector of every target leaf,
        from one evaluation of ``fn`` (as JAX's vmapped jvp): its draws and prints happen
        once, whatever the number of columns."""
        out, aux, tangent_of = self._linearized(args, nums)
        zeros = [[_zeros_like(x) for x in ts] for ts in targets]
        blocks = None
        slot = -1
        for a, ts in enumerate(targets):
            for leaf, x in enumerate(ts):
                slot += 1
                fast = _batched_columns(tangent_of, slot, x)
                if fast is not None:  # every column of the block from one batched run
                    if blocks is None:
                        blocks = [[] for _ in fast]
                    for i, (o, c) in enumerate(zip(tree_leaves(out), fast)):
                        blocks[i].append(np.moveaxis(np.reshape(c, (-1,) + _shape(o)), 0, -1)
                                         .reshape(_shape(o) + _shape(x)) if not isinstance(
                                             c, Tensor) else _assemble(list(c), _shape(o),
                                                                       _shape(x), o, -1))
                    continue
                columns = []
                for j in range(int(np.prod(_shape(x)))):
                    tangents = [list(z) for z in zeros]
                    tangents[a][leaf] = _basis(x, j)
                    got = tangent_of([_rebuild(args[k], t) for k, t in zip(nums, tangents)])
                    columns.append(tree_leaves(got))
                outs = tree_leaves(out)
                if blocks is None:
                    blocks = [[] for _ in outs]
                for i, o in enumerate(outs):
                    blocks[i].append(_assemble([c[i] for c in columns], _shape(o), _shape(x),
                                               o, -1))
        return out, blocks, aux

    def _linearized(self, args: tuple, nums: tuple) -> tuple:
        """``(out, aux, tangent_of)``: generated code on plain values (one forward run,
        then the tangent program per column); else (inside a trace, on tensors with a
        graph, or when no generated code applies) ``fn`` on dual tensors, per column."""
        programs = self._programs.get(nums)
        if programs is None:
            programs = self._programs[nums] = (
                JVPProgram(self.fn, self.has_aux, nums, self.name, linear=True),
                JVPProgram(self.fn, self.has_aux, nums, self.name, writes=False))
        linear, program = programs
        if not (trace_hooks() or anomaly_mode.is_anomaly_enabled()
                or any(has_graph(x) for x in tree_leaves(args))):
            got = linear.linearized(args)
            if got is not None:
                return got
        zeros = [_rebuild(args[k], [_zeros_like(x) for x in tree_leaves(args[k])])
                 for k in nums]
        got = program.call(args, zeros)
        return got[0], (got[2] if self.has_aux else None), \
            lambda tangents: program.call(args, tangents)[1]

    def _reverse(self, args: tuple, nums: tuple, targets: list) -> tuple:
        """Rows: one pullback per basis vector of every output leaf."""
        def partial(*ts: Any) -> Any:
            full = list(args)
            for k, t in zip(nums, ts):
                full[k] = t
            return self.fn(*full)

        if all(_differentiable(a) for a in args):  # fn itself: its compiled vjp is cached
            got, picks = vjp_for(self.door, self.fn, args, self.has_aux), nums
        else:  # the other arguments closed over (traced anew per call; Dask's refused
            # here, by their names: closed over, they would be computed)
            check_call(self.door, def_line(self.fn), args, param_names(self.fn, len(args)))
            got = vjp_for(self.door, partial, tuple(args[k] for k in nums), self.has_aux)
            picks = tuple(range(len(nums)))
        out, pull = got[0], got[1]
        aux = got[2] if self.has_aux else None
        outs, tree = tree_flatten(out)
        self._check_scalar(outs)
        flat_targets = [x for ts in targets for x in ts]
        fast = batched_rows(pull)
        if fast is not None:  # every row of a block from one batched pullback
            return out, [[g for k in picks for g in per_primal[k]] for per_primal in fast], aux
        blocks = []
        for i, o in enumerate(outs):
            rows = []
            for j in range(int(np.prod(_shape(o)))):
                cts = [_row_seed(p, j, p_i == i) for p_i, p in enumerate(outs)]
                grads = pull(tree_unflatten(tree, cts))
                rows.append([leaf for k in picks for leaf in tree_leaves(grads[k])])
            blocks.append([_assemble([r[n] for r in rows], _shape(o), _shape(x), x, 0)
                           for n, x in enumerate(flat_targets)])
        return out, blocks, aux


def _batched_columns(tangent_of: Callable, slot: int, x: Any) -> list | None:
    """jacfwd's columns for input leaf ``x`` (tangent ``slot``) from one batched run of
    the generated joint (``JVPProgram._columns``), or None where that does not apply."""
    columns = getattr(tangent_of, "columns", None)
    if columns is None:
        return None
    d = x._data if isinstance(x, Tensor) else np.asarray(x)
    n = int(np.prod(d.shape))
    dtype = d.dtype if d.dtype.kind in "fc" else np.dtype(float)
    return columns(slot, np.eye(n, dtype=dtype).reshape((n,) + d.shape))


def batched_rows(pull: VJPFunction) -> list | None:
    """jacrev's blocks by one batched pullback per output leaf (the generated backward
    over a batch of basis cotangents): per output leaf, per primal, its leaves' blocks
    (``out.shape + leaf.shape``). None where ``pull`` does not run one compiled node on
    plain values (the rows are then pulled back one by one)."""
    outs = pull.outs
    node = outs[0]._grad_fn if outs else None
    if pull.nested or trace_hooks() or anomaly_mode.is_anomaly_enabled() or not isinstance(
            node, CompiledNode) or node.variant.adjoint is None \
            or node.variant.returned is not None or any(o._grad_fn is not node for o in outs) \
            or not all(e.op.pure for e in every_eqn(node.variant.traced.graph)):
        # (the joint runs the forward again: not a program that draws or prints; read in
        # the traced forward, whose adjoint adds pure ops only: the joint is not made
        # when the batched backward's code is in the persistent cache)
        return None
    variant = node.variant
    floats = [j for j, v in enumerate(variant.traced.graph.outputs) if v.dtype.kind in "fc"]
    seeds_like = [variant.traced.graph.outputs[j] for j in floats]
    wrt_of = {id(node.inputs[k]): w for w, k in enumerate(variant.wrt)}
    inputs = [t._data for t in node.inputs]
    n_out = len(variant.traced.graph.outputs)
    blocks = []
    for o in outs:
        size = o._data.size
        seed = floats.index(o._output_nr)
        try:
            module, batched = variant.batched_backward(size, seed, inputs)
        except Unbatchable:
            return None
        seeds = [np.eye(size, dtype=v.dtype).reshape((size,) + v.shape) if s == seed
                 else np.zeros(v.shape, v.dtype) for s, v in enumerate(seeds_like)]
        result = module.fn(*inputs, *seeds)
        grads, batched = result[n_out:], batched[n_out:]
        per_primal = []
        for p, ts in zip(pull.primals, pull.targets):
            row = []
            for leaf, t in zip(tree_leaves(p), ts):
                w = wrt_of.get(id(t))
                g = np.zeros((size,) + t._data.shape, t._data.dtype) if w is None or \
                    grads[w] is None else grads[w] if batched[w] else \
                    np.broadcast_to(grads[w], (size,) + t._data.shape)
                row.append(as_kind(kind_of(leaf), np.reshape(g, o._data.shape + t._data.shape)))
            per_primal.append(row)
        blocks.append(per_primal)
    return blocks


def _differentiable(a: Any) -> bool:
    """Whether ``a`` could be a target: float or complex values only (an int array is
    traced, but closed over, as torch.func's jacrev and hessian take it)."""
    try:
        check_target("jacrev", 0, a)
    except TypeError:
        return False
    return all(np.result_type(x._data if isinstance(x, Tensor) else x).kind in "fc"
               for x in tree_leaves(a))


def _rebuild(arg: Any, leaves: list) -> Any:
    """``leaves`` in the structure of ``arg`` (itself when it is one value)."""
    if isinstance(arg, (Tensor, np.ndarray, float)):
        return leaves[0]
    return tree_unflatten(tree_flatten(arg)[1], leaves)


def jacfwd(fn: Callable, argnums: Any = 0, has_aux: bool = False, *,
           holomorphic: bool = False, static_argnums: Any = None,
           static_argnames: Any = None) -> Any:
    """The Jacobian of ``fn`` with respect to ``argnums`` by forward mode (one tangent
    program run per input element): best when inputs are fewer than outputs. The
    options are ``grad``'s."""
    return _jacobian(fn, argnums, has_aux, True, holomorphic, static_argnums,
                     static_argnames)


def jacrev(fn: Callable, argnums: Any = 0, has_aux: bool = False, *,
           holomorphic: bool = False, static_argnums: Any = None,
           static_argnames: Any = None) -> Any:
    """The Jacobian of ``fn`` with respect to ``argnums`` by reverse mode (one pullback
    per output element): best when outputs are fewer than inputs. The options are
    ``grad``'s."""
    return _jacobian(fn, argnums, has_aux, False, holomorphic, static_argnums,
                     static_argnames)


def _jacobian(fn: Callable, argnums: Any, has_aux: bool, forward: bool, holomorphic: bool,
              static_argnums: Any, static_argnames: Any) -> Any:
    how = "jacfwd" if forward else "jacrev"

    def make(f: Callable, nums: Any) -> Any:
        jac = Jacobian(f, nums, has_aux, forward=forward)
        if holomorphic:
            return HolomorphicJacobian(jac, nums, how, not forward)
        jac.real_only = "jax"
        return jac
    return with_static(make, fn, argnums, static_argnums, static_argnames, how)


def hessian(fn: Callable, argnums: Any = 0) -> Jacobian:
    """The Hessian of scalar-valued ``fn``: ``jacfwd(jacrev(fn))``, forward over
    reverse. A non-scalar output is refused (its 'Hessian' is jacfwd(jacrev(f)))."""
    outer = Jacobian(Jacobian(fn, argnums, False, forward=False, scalar="hessian"), argnums,
                     False, forward=True, door="hessian")
    outer.name = "hessian"
    outer.real_only = "jax"
    return outer
