"""``pullback.func``: torch.func's names and signatures over pullback's transforms.

>>> import pullback as pb
>>> from pullback.func import grad_and_value, vmap
>>> x = pb.tensor([1., 2., 3.])
>>> vmap(pb.dot)(pb.ones(4, 3), pb.ones(4, 3))
tensor([3., 3., 3., 3.])
>>> vmap(lambda a: a * 2, in_dims=1)(pb.ones(3, 5)).shape
(5, 3)
>>> g, value = grad_and_value(lambda a: (a ** 2).sum())(x)
>>> g, value
(tensor([2., 4., 6.]), tensor(14.))

``functional_call`` runs a module with other parameters; with ``stack_module_state``
and ``vmap`` it runs an ensemble of models as one batched model:

>>> nets = [pb.nn.Linear(3, 2) for _ in range(4)]
>>> params, buffers = stack_module_state(nets)
>>> call = lambda p, b, x: functional_call(nets[0], (p, b), (x,))
>>> vmap(call, in_dims=(0, 0, None))(params, buffers, pb.ones(5, 3)).shape
(4, 5, 2)
"""

from __future__ import annotations

from typing import Any, Callable

from .compiler import hessian as _hessian
from .compiler import jacfwd as _jacfwd
from .compiler import jacrev as _jacrev
from .compiler import jvp as _jvp
from .compiler import vjp as _vjp
from .compiler.grad import GradFunction
from .compiler.grad import grad as _grad
from .compiler.vmap import VmapFunction
from .nn.module import Module
from .ops.joining import stack


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> VmapFunction:
    """torch.func.vmap: ``func`` over dimension ``in_dims`` of its inputs."""
    return VmapFunction(func, in_dims, out_dims, None, randomness, chunk_size, "torch")


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """torch.func.grad: the gradient of ``func``'s scalar output (``(grad, aux)`` with
    ``has_aux``)."""
    return _grad(func, argnums, has_aux)


def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """torch.func.grad_and_value: ``(grad, value)``, or ``(grad, (value, aux))``; its
    errors name it as torch's do."""
    inner = GradFunction(func, argnums, has_aux, True, "grad_and_value")

    def grad_and_value_f(*args: Any, **kwargs: Any) -> tuple:
        value, g = inner(*args, **kwargs)
        return g, value

    return grad_and_value_f


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """torch.func.vjp: ``(output, vjp_fn)`` (``(output, vjp_fn, aux)`` with ``has_aux``)."""
    return _vjp(func, *primals, has_aux=has_aux)


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """torch.func.jvp: ``(output, jvp_out)``."""
    return _jvp(func, tuple(primals), tuple(tangents), has_aux=has_aux)


def jacrev(func: Callable, argnums: Any = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """torch.func.jacrev: the Jacobian by reverse mode."""
    return _torch_words(_jacrev(func, argnums, has_aux))


def jacfwd(func: Callable, argnums: Any = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """torch.func.jacfwd: the Jacobian by forward mode."""
    return _torch_words(_jacfwd(func, argnums, has_aux))


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """torch.func.hessian: forward over reverse."""
    h = _torch_words(_hessian(func, argnums))
    h.name = "jacfwd"  # (torch's hessian is its jacfwd, named so in its errors)
    return h


def _torch_words(jacobian: Any) -> Any:
    """A Jacobian refusing complex inputs with torch.func's text."""
    jacobian.real_only = "torch"
    return jacobian


def functional_call(module: Module, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """torch.func.functional_call: ``module(*args, **kwargs)`` with its parameters and
    buffers replaced, by name, by the given tensors (a dict or a tuple of dicts); the
    module is left as it was."""
    dicts = parameter_and_buffer_dicts
    given: dict = {}
    for d in (dicts if isinstance(dicts, (tuple, list)) else (dicts,)):
        for name, value in d.items():
            if name in given:
                raise ValueError(f"{name} appeared in multiple dictionaries; behavior of "
                                 "functional call is ambiguous")
            given[name] = value
    known = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
    if strict:
        missing = sorted(known - set(given))
        unexpected = sorted(set(given) - known)
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               f"Unexpected key(s): {', '.join(map(repr, unexpected))}.\n\t"
                               f"Missing key(s): {', '.join(map(repr, missing))}.")
    saved = [_swap(module, name, value) for name, value in given.items()]
    try:
        call_args = args if isinstance(args, tuple) else () if args is None else (args,)
        return module(*call_args, **(kwargs or {}))
    finally:
        for owner, table, leaf, old in reversed(saved):
            getattr(owner, table)[leaf] = old


def _swap(module: Module, name: str, value: Any) -> tuple:
    """Put ``value`` where ``name`` (a dotted path) is; what to put back."""
    *path, leaf = name.split(".")
    owner = module
    for part in path:
        owner = owner._modules[part]
    table = "_parameters" if leaf in owner._parameters else "_buffers" \
        if leaf in owner._buffers else None
    if table is None:
        raise AttributeError(f"{type(owner).__name__} has no parameter or buffer {leaf!r} "
                             f"({name})")
    old = getattr(owner, table)[leaf]
    getattr(owner, table)[leaf] = value
    return owner, table, leaf, old


def stack_module_state(models: Any) -> tuple[dict, dict]:
    """torch.func.stack_module_state: each parameter and buffer of the (same-shaped)
    ``models`` stacked along a new first dimension: ``(params, buffers)``."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({type(m) for m in models}) > 1 or len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same "
                           "class and in the same mode (train or eval).")
    params = {name: stack([dict(m.named_parameters())[name].detach() for m in models])
              .requires_grad_(p.requires_grad)
              for name, p in models[0].named_parameters()}
    buffers = {name: stack([dict(m.named_buffers())[name] for m in models])
               for name, _ in models[0].named_buffers()}
    return params, buffers


__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "functional_call", "stack_module_state"]
