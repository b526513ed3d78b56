"""``pb.custom_vjp`` and ``pb.custom_jvp``: JAX's functional custom rules.

Each decorated function gets a custom ``autograd.Function`` of its own, named after it,
so there is one machinery for user rules: eagerly it is a node (``fBackward``), inside
a trace one opaque step whose generated code calls the user's rule (``function_ir``),
under ``create_graph`` the eager Function again. The Function's arguments are the Tensor
leaves of the call's arguments (pytrees flattened, as JAX does); everything else (Python
numbers, arrays that are not Tensors, the ``nondiff_argnums`` objects) is static, kept
in a ``_Call`` passed as a keyword.

- ``custom_vjp``: forward runs ``fwd`` (its residuals stay on the ctx); backward runs
  ``bwd(*nondiff, residuals, cotangent)``. Under ``create_graph`` (a gradient of a
  gradient) the residuals are computed anew by ``fwd`` from the inputs with their
  history, so ``bwd`` written with differentiable ops differentiates again, as in JAX.
  Forward mode raises JAX's error.
- ``custom_jvp``: forward runs ``fun``; forward mode runs the rule on the tangents;
  reverse mode transposes the rule, which is linear in its tangents: the gradient of
  ``<tangent_out(t), g>`` in a dummy ``t`` (at zero) is ``J^T g``. Under ``create_graph``
  the primals keep their history, so reverse over reverse and forward over reverse
  differentiate the rule again.

Both run with the inputs detached and grad on, and refuse (as JAX does) to be
differentiated with respect to a value the function closes over: their rule only
covers the explicit arguments, and anything else would be a silently wrong gradient.

>>> import pullback as pb
>>> @pb.custom_vjp
... def clip_gradient(x):
...     return x
>>> clip_gradient.defvjp(lambda x: (x, None), lambda res, g: (g.clip(-1, 1),))
>>> x = pb.tensor([1., 2.], requires_grad=True)
>>> (clip_gradient(x) * 5).sum().backward()
>>> x.grad
tensor([1., 1.])
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from ..pytree import PyTreeDef, tree_flatten, tree_unflatten
from . import forward_ad, record
from .backward import grad as autograd_grad
from .function import Function
from .grad_mode import STATE, enable_grad

JVP_OF_VJP = "can't apply forward-mode autodiff (jvp) to a custom_vjp function."
CLOSURE = ("Detected differentiation of a {kind} function with respect to a closed-over value. "
           "That isn't supported because the custom {rule} rule only specifies how to "
           "differentiate the {kind} function with respect to explicit input parameters. "
           "(function {name}: pass the value as an argument)")
NONDIFF_GRAD = ("custom_vjp function {name}: argument {i} is in nondiff_argnums but is being "
                "differentiated (it requires grad); nondiff_argnums is for arguments that are not "
                "arrays, e.g. functions. In particular, array-valued arguments should typically "
                "not be indicated as nondiff_argnums.")


def _name(f: Any) -> str:
    return getattr(f, "__name__", str(f))


def _resolve_kwargs(fun: Callable, args: tuple, kwargs: dict) -> tuple:
    """Keyword arguments bound to positions (defaults filled in), as JAX does."""
    if not kwargs:
        return args
    if isinstance(fun, functools.partial):
        raise TypeError("keyword arguments could not be resolved to positions")
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError("keyword arguments could not be resolved to positions")
    return bound.args


class _Call:
    """The static part of one call: the argument trees and the leaves that are not
    Tensors; the Tensors (the Function's arguments) go in at ``tensor_pos``."""

    __slots__ = ("owner", "trees", "leaves", "tensor_pos", "arg_of", "out_tree", "nondiff")

    def __init__(self, owner: Any, args: tuple) -> None:
        self.owner = owner
        self.nondiff = frozenset(i % len(args) for i in owner.nondiff_argnums)
        self.trees: list[PyTreeDef] = []
        self.leaves: list = []
        self.arg_of: list[int] = []  # leaf index -> argument index
        for i, a in enumerate(args):
            leaves, tree = tree_flatten(a)
            self.trees.append(tree)
            self.leaves.extend(leaves)
            self.arg_of.extend([i] * len(leaves))
        self.tensor_pos = tuple(k for k, v in enumerate(self.leaves)
                                if isinstance(v, record.Tensor))
        self.out_tree: PyTreeDef | None = None

    def tensors(self) -> tuple:
        return tuple(self.leaves[k] for k in self.tensor_pos)

    def args(self, tensors: tuple, zero_static: bool = False) -> list:
        """The call's arguments with ``tensors`` at the Tensor leaves (and, for
        tangents, zeros at the other leaves)."""
        leaves = [_zero_like(v) for v in self.leaves] if zero_static else list(self.leaves)
        for k, t in zip(self.tensor_pos, tensors):
            leaves[k] = t
        out, start = [], 0
        for tree in self.trees:
            out.append(tree_unflatten(tree, leaves[start:start + tree.num_leaves]))
            start += tree.num_leaves
        return out

    def split(self, args: list) -> tuple[list, list]:
        """(nondiff arguments, differentiable arguments), each in order."""
        return ([a for i, a in enumerate(args) if i in self.nondiff],
                [a for i, a in enumerate(args) if i not in self.nondiff])

    def diff_tensor(self, j: int) -> bool:
        return self.arg_of[self.tensor_pos[j]] not in self.nondiff

    def flat_out(self, out: Any) -> tuple:
        leaves, self.out_tree = tree_flatten(out)
        return tuple(leaves)


def _check_closure(call: _Call, kind: str, rule: str, *trees: Any) -> None:
    for tree in trees:
        for leaf in tree_flatten(tree)[0]:
            if isinstance(leaf, record.Tensor) and leaf.requires_grad:
                raise TypeError(CLOSURE.format(kind=kind, rule=rule,
                                               name=_name(call.owner.fun)))


def _differentiated(call: _Call) -> bool:
    """Whether a rule may be needed: a Tensor argument requires grad or has a tangent,
    or this thread traces (the generated code may be differentiated). Inside a rule's
    own forward (inputs detached, tracers blind) the function runs as it is."""
    tensors = call.tensors()
    if not tensors:
        return False
    return (bool(record.TRACING and record.trace_hooks())
            or any(t.requires_grad for t in tensors) or forward_ad.has_tangents(tensors))


def _detached(tensors: tuple) -> tuple:
    return tuple(t.detach() for t in tensors)


def _as_tensor_like(v: Any, like: Any) -> Any:
    """A rule's result as a Tensor of ``like``'s face (rules may return arrays)."""
    if v is None or isinstance(v, record.Tensor):
        return v
    return type(like)._make(np.asarray(v, dtype=like._data.dtype))


class _CustomBase:
    """What ``custom_vjp`` and ``custom_jvp`` share: the wrapper, the call path."""

    kind = ""

    def __init__(self, fun: Callable, nondiff_argnums: tuple = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        name = _name(fun)
        self._function = type(name if name.isidentifier() else "custom", (_RuleFunction,),
                              {"owner": self, "__module__": __name__,
                               "__qualname__": name if name.isidentifier() else "custom"})

    def _defined(self) -> bool:
        raise NotImplementedError

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self._defined():
            rule = "VJP" if self.kind == "custom_vjp" else "JVP"
            how = "defvjp" if self.kind == "custom_vjp" else "defjvp"
            raise AttributeError(f"No {rule} defined for {self.kind} function "
                                 f"{_name(self.fun)} using {how}.")
        args = _resolve_kwargs(self.fun, args, kwargs)
        for i in self.nondiff_argnums:
            if not -len(args) <= i < len(args):
                raise TypeError(f"{self.kind} function {_name(self.fun)}: nondiff_argnums "
                                f"{self.nondiff_argnums} out of range for {len(args)} arguments")
        call = _Call(self, args)
        if not _differentiated(call):  # the function itself, as in JAX
            return self.fun(*args)
        self._check_nondiff(call)
        outs = self._function.apply(*call.tensors(), call=call)
        for k in call.tensor_pos:  # generated code may keep the call: not its arguments
            call.leaves[k] = None
        outs = outs if isinstance(outs, tuple) else (outs,)
        return tree_unflatten(call.out_tree, outs)

    def _check_nondiff(self, call: _Call) -> None:
        """custom_jvp: nondiff Tensors are constants (JAX stops their gradient)."""

    def __repr__(self) -> str:
        return f"<{self.kind} {_name(self.fun)}>"


class _RuleFunction(Function):
    """The Function of one custom_vjp/custom_jvp function (subclassed per function)."""

    owner: Any = None

    @staticmethod
    def forward(ctx: Any, *tensors: Any, call: _Call) -> Any:
        return call.owner._forward(ctx, tensors, call)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        return ctx.call.owner._backward(ctx, grads)

    @staticmethod
    def jvp(ctx: Any, *tangents: Any) -> Any:
        return ctx.call.owner._jvp(ctx, tangents)


# ----------------------------------------------------------------------- custom_vjp
class custom_vjp(_CustomBase):
    """A function with a custom VJP, as ``jax.custom_vjp``: ``f.defvjp(fwd, bwd)`` with
    ``fwd(*args) -> (out, residuals)`` and ``bwd(*nondiff, residuals, g)`` returning a
    tuple with one cotangent (a pytree like the argument, or None for zero) per
    differentiable argument."""

    kind = "custom_vjp"

    def __init__(self, fun: Callable, nondiff_argnums: tuple = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        if symbolic_zeros:
            raise NotImplementedError(f"custom_vjp function {_name(self.fun)}: "
                                      "symbolic_zeros=True is not supported by pullback")
        self.fwd, self.bwd = fwd, bwd
        name = _name(self.fun)
        self._function._pb_rules = (f"{_name(fwd)}: the fwd rule of {name} (pb.custom_vjp)",
                                    f"{_name(bwd)}: the bwd rule of {name}")

    def _defined(self) -> bool:
        return self.fwd is not None and self.bwd is not None

    def _check_nondiff(self, call: _Call) -> None:
        for j, k in enumerate(call.tensor_pos):
            if not call.diff_tensor(j) and call.leaves[k].requires_grad:
                raise TypeError(NONDIFF_GRAD.format(name=_name(self.fun), i=call.arg_of[k]))

    def _run_fwd(self, call: _Call, tensors: tuple) -> tuple:
        pair = self.fwd(*call.args(tensors))
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError(
                f"Custom VJP fwd rule {_name(self.fwd)} for function {_name(self.fun)} must "
                "produce a pair (list or tuple of length two) where the first element "
                "represents the primal output and the second element represents residuals "
                "(values stored from the forward pass for use on the backward pass), but "
                f"instead of a pair the fwd rule {_name(self.fwd)} produced {pair!r}.")
        return pair[0], pair[1]

    def _forward(self, ctx: Any, tensors: tuple, call: _Call) -> Any:
        with enable_grad():
            out, res = self._run_fwd(call, _detached(tensors))
        _check_closure(call, self.kind, "VJP", out, res)
        ctx.call, ctx.res = call, res
        ctx.save_for_backward(*tensors)
        return call.flat_out(out)

    def _backward(self, ctx: Any, grads: tuple) -> tuple:
        call = ctx.call
        saved = ctx.saved_tensors
        res = ctx.res
        if STATE.grad_enabled and any(t.requires_grad for t in saved):
            with enable_grad():  # create_graph: residuals with the inputs' history
                res = self._run_fwd(call, saved)[1]
        nondiff, _ = call.split(call.args(saved))
        cts = tree_unflatten(call.out_tree, list(grads))
        got = self.bwd(*nondiff, res, cts)
        return _cotangents(call, got, saved, self)

    def _jvp(self, ctx: Any, tangents: tuple) -> Any:
        raise TypeError(f"{JVP_OF_VJP} (function {_name(self.fun)}: define it with "
                        "pb.custom_jvp to use it in forward mode)")


def _cotangents(call: _Call, got: Any, saved: tuple, owner: custom_vjp) -> tuple:
    """``bwd``'s result checked against the differentiable arguments' structure, as
    one gradient (or None) per Tensor argument of the Function."""
    diff = [i for i in range(len(call.trees)) if i not in call.nondiff]
    if not isinstance(got, tuple) or len(got) != len(diff):
        shown = type(got).__name__ if not isinstance(got, tuple) else f"a tuple of {len(got)}"
        raise TypeError(
            f"Custom VJP bwd rule {_name(owner.bwd)} for function {_name(owner.fun)} must "
            "produce a tuple of length equal to the number of differentiable arguments "
            f"to the primal function ({len(diff)}), with one cotangent per argument "
            f"(None for zero), but got {shown}.")
    per_leaf: dict[int, Any] = {}
    start = 0
    starts = []
    for tree in call.trees:
        starts.append(start)
        start += tree.num_leaves
    for i, ct in zip(diff, got):
        if ct is None:
            continue
        leaves, tree = tree_flatten(ct)
        if tree != call.trees[i]:
            raise TypeError(
                f"Custom VJP bwd rule {_name(owner.bwd)} for function {_name(owner.fun)} "
                "must produce an output with the same container (pytree) structure as the "
                f"args tuple of the primal function, but got cotangent structure {tree} for "
                f"argument {i} of structure {call.trees[i]}.")
        for n, leaf in enumerate(leaves):
            per_leaf[starts[i] + n] = leaf
    out = []
    for j, k in enumerate(call.tensor_pos):
        g = per_leaf.get(k) if call.diff_tensor(j) else None
        out.append(_as_tensor_like(g, saved[j]))
    return tuple(out)


# ----------------------------------------------------------------------- custom_jvp
class custom_jvp(_CustomBase):
    """A function with a custom JVP, as ``jax.custom_jvp``: ``f.defjvp(rule)`` with
    ``rule(*nondiff, primals, tangents) -> (primal_out, tangent_out)``. Reverse mode
    transposes the rule (it is linear in the tangents)."""

    kind = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums: tuple = ()) -> None:
        super().__init__(fun, nondiff_argnums)
        self.jvp: Callable | None = None

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        if symbolic_zeros:
            raise NotImplementedError(f"custom_jvp function {_name(self.fun)}: "
                                      "symbolic_zeros=True is not supported by pullback")
        self.jvp = jvp
        name = _name(self.fun)
        self._function._pb_rules = (f"{name} (pb.custom_jvp)",
                                    f"{_name(jvp)} transposed: the jvp rule of {name}",
                                    f"{_name(jvp)}: the jvp rule of {name}")
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument: ``jvp_i(t_i, primal_out, *primals)``, summed."""
        if self.nondiff_argnums:
            raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

        def jvp(primals: tuple, tangents: tuple) -> tuple:
            out = self(*primals)
            terms = [rule(t, out, *primals) for t, rule in zip(tangents, jvps) if rule]
            if not terms:
                return out, _zeros_tree(out)
            total = terms[0]
            for term in terms[1:]:
                total = _tree_add(total, term)
            return out, total

        jvp.__name__ = _name(self.fun) + "_jvps"
        self.defjvp(jvp)

    def _defined(self) -> bool:
        return self.jvp is not None

    def _forward(self, ctx: Any, tensors: tuple, call: _Call) -> Any:
        with enable_grad():
            out = self.fun(*call.args(_detached(tensors)))
        _check_closure(call, self.kind, "JVP", out)
        ctx.call = call
        ctx.save_for_backward(*tensors)
        return call.flat_out(out)

    def _rule(self, call: _Call, primals: tuple, tangents: tuple) -> tuple:
        """The user's rule on Tensor leaves ``primals`` and ``tangents``: (primal
        out, tangent out) leaves, checked as JAX checks them."""
        nondiff, p_args = call.split(call.args(primals))
        _, t_args = call.split(call.args(tangents, zero_static=True))
        pair = self.jvp(*nondiff, tuple(p_args), tuple(t_args))
        rule, fun = _name(self.jvp), _name(self.fun)
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise TypeError(f"Custom JVP rule {rule} for function {fun} must produce a pair "
                            "(list or tuple of length two) representing primal and tangent "
                            f"outputs, but got {pair!r}.")
        p_leaves, p_tree = tree_flatten(pair[0])
        t_leaves, t_tree = tree_flatten(pair[1])
        if p_tree != t_tree:
            raise TypeError(f"Custom JVP rule {rule} for function {fun} must produce primal "
                            "and tangent outputs with equal container (pytree) structures, but "
                            f"got {p_tree} and {t_tree} respectively.")
        if call.out_tree is not None and p_tree != call.out_tree:
            raise TypeError(f"Custom JVP rule {rule} for function {fun} must produce a pair "
                            "where the first element represents the primal output (equal in "
                            f"value to the output of {fun}, and in particular of the same "
                            f"container/pytree structure), but got {p_tree} while {fun} had "
                            f"output structure {call.out_tree}.")
        for p, t in zip(p_leaves, t_leaves):
            if np.shape(p) != np.shape(t):
                raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                                f"equal shapes, but got {np.shape(p)} and {np.shape(t)} "
                                f"respectively (rule {rule} of function {fun}).")
        return p_leaves, t_leaves

    def _jvp(self, ctx: Any, tangents: tuple) -> tuple:
        _, t_out = self._rule(ctx.call, ctx.saved_tensors, tangents)
        return tuple(t_out)

    def _backward(self, ctx: Any, grads: tuple) -> tuple:
        """Reverse mode by transposition: the rule is linear in the tangents."""
        call = ctx.call
        saved = ctx.saved_tensors
        create = STATE.grad_enabled
        primals = saved if create else _detached(saved)
        with enable_grad():
            # zero tangents to differentiate in: made by ops from the primals, so that
            # a trace around a create_graph backward follows them
            dummies = tuple(_dummy(p) for p in primals)
            _, t_out = self._rule(call, primals, dummies)
        pairs = [(t, g) for t, g in zip(t_out, grads)
                 if isinstance(t, record.Tensor) and t.requires_grad and g is not None]
        wanted = [j for j in range(len(dummies)) if call.diff_tensor(j)]
        if not pairs or not wanted:
            return (None,) * len(dummies)
        got = autograd_grad([t for t, _ in pairs], [dummies[j] for j in wanted],
                            [_as_tensor_like(g, t) for t, g in pairs],
                            create_graph=create, allow_unused=True)
        out: list = [None] * len(dummies)
        for j, g in zip(wanted, got):
            out[j] = g
        return tuple(out)


def _dummy(p: Any) -> Any:
    """A zero tangent the rule's output is differentiated in: ``p * 0`` keeps the
    primal's history (the gradient in it is the one wanted: the rule is linear in it)."""
    d = p * 0
    return d if d.requires_grad else d.requires_grad_()


def _zero_like(v: Any) -> Any:
    if isinstance(v, (bool, np.bool_)) or isinstance(v, str) or v is None:
        return v
    try:
        return np.zeros_like(v)
    except (TypeError, ValueError):
        return v


def _zeros_tree(tree: Any) -> Any:
    leaves, td = tree_flatten(tree)
    return tree_unflatten(td, [x * 0 for x in leaves])


def _tree_add(a: Any, b: Any) -> Any:
    la, ta = tree_flatten(a)
    lb, _ = tree_flatten(b)
    return tree_unflatten(ta, [x + y for x, y in zip(la, lb)])


__all__ = ["custom_vjp", "custom_jvp"]
