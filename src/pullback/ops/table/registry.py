"""The op table: every primitive op and every public function, declared once.

A primitive is declared with ``defop`` beside its numpy forward, with one VJP rule
per input and every other fact about it:

    tanh = defop("tanh", np.tanh, "TanhBackward0",
                 vjp=(lambda g, out, x: g * conj(1 - out * out),), uses=("out",),
                 template="np.tanh({0})", function=True, method=True, inplace=True,
                 functional=True, numpy=np.tanh)

Every rule has the signature ``rule(g, out, *inputs, **params)``: the first
``len(vjp)`` names after ``g, out`` are the op's inputs, the rest its static params.
``uses`` says, per rule, which of ``out`` and the inputs it reads; the runtime saves
exactly those. The rules are written with pullback's ops only, so the same rule runs
on numpy arrays (eager backward), on Tensors (``create_graph=True``) and on IR values
(the compiler's adjoint pass).

A public function that chooses among primitives (``sum`` is ``sum_all`` or ``sum_dim``)
is declared with ``@public`` on its torch-signature implementation. Either way the
names given (``function``, ``method``, ``inplace``, ``functional``, ``numpy``) are all
it takes: ``pullback.<name>``, ``Tensor.<name>``, ``Tensor.<name>_``,
``pullback.nn.functional.<name>`` and numpy's dispatch are derived from ``PUBLIC``
by whoever ``subscribe``s to it, for ops declared before or after they subscribe.
"""

from __future__ import annotations

import inspect
import types
from typing import Any, Callable

import numpy as np

from .promotion import promoted, promoting_template
from .quiet import INSIDE, quietly
from .results import AllInputs, output_names, result_type

#: name -> OpDef: every primitive
OPS: dict[str, OpDef] = {}
#: every public binding, in declaration order
PUBLIC: list[Public] = []
_SUBSCRIBERS: list[tuple] = []  # (check or None, install)


class OpDef:
    """One primitive: forward on numpy values, VJP rules, and its properties.

    - ``grad_fn``: torch's node name; ``torch_args``: torch's input names (``_saved_*``)
    - ``is_view``: torch treats the result as a view (version counter, CopySlices)
    - ``aliases``: numpy's result may share memory with an input (views, reshapes)
    - ``elementwise``: inputs broadcast against each other, position by position
    - ``pure``: the same inputs give the same result (random draws are not)
    - ``fresh``: the result is a new array nothing else refers to (or a predicate on
      the IR equation, where that depends on how generated code spells it)
    - ``template``: how generated code spells it: ``"np.tanh({0})"`` (``{0}`` inputs,
      ``{name}`` params, ``{out_shape}``), or ``template(eqn, args, literal) -> str``
    - ``promote``: the two operands that take torch's common dtype, input positions or a
      param's name (promotion.py: a 0-d float64 tensor times a float32 vector is
      float32); ``to_float``: an integer common dtype becomes the default float dtype
    - ``variadic``: the inputs are one list of any length (``cat``): one rule,
      ``rule(g, out, tensors, i, **params)``, gives the gradient of ``tensors[i]``
    - ``outputs``: several outputs (results.py): a tuple of names (a named tuple) or
      ``tuple`` (any number); the rules get ``g`` and ``out`` as such tuples, with
      zeros for the outputs no gradient reached; ``multi`` says there are several
    - ``regions``: for an op whose outputs are views of its input (split, unbind),
      ``regions(shape, **params)`` gives each output's basic index into the input
    - ``jvp``: optional forward-mode rules, one per input (None: derived), with the VJP
      rules' signature ``rule(t, out, *inputs, **params)``: the tangent of the output
      that input ``i``'s tangent ``t`` gives (jvp.py derives the rest from ``vjp``); a
      variadic op of several outputs (a region) has one rule for all of them,
      ``rule(tangents, out, inputs, **params)``: the outputs' tangents (None where
      none), or NotImplemented (the derived rule)
    - ``shape_from_data``: the result's shape depends on the input's values (nonzero):
      a trace, specialized on shapes, cannot follow it, so the compiler refuses the op
    - ``batch``: the batching rule (``vmap``), ``rule(op, args, batched, **params)``
      (batching.py); None derives one for elementwise ops and ops of one input whose
      params name axes, and any other op runs once per batch element
    - ``draws_from``: for a random draw, ``draws_from(params)`` gives the numpy
      Generator it reads, None for pullback's own (which ``pb.manual_seed`` replaces;
      ``sampling.own_generator``); a compiled function with draws checks its generators
    """

    __slots__ = ("name", "forward", "vjp", "uses", "grad_fn", "arg_names", "n_inputs",
                 "torch_args", "is_view", "aliases", "elementwise", "pure", "fresh",
                 "template", "promote", "to_float", "differentiable", "node_cls",
                 "variadic", "result", "multi", "output_names", "regions", "jvp",
                 "shape_from_data", "draws_from", "batch")

    def __init__(self, name: str, forward: Callable, grad_fn: str | None = None, *,
                 vjp: tuple | None = None, uses: tuple | None = None, is_view: bool = False,
                 aliases: bool | None = None, elementwise: bool | None = None,
                 pure: bool = True, fresh: bool | None = None, template: str | None = None,
                 torch_args: tuple = ("self", "other"), promote: tuple | None = None,
                 to_float: bool = False, variadic: bool = False, outputs: Any = None,
                 regions: Callable | None = None, jvp: tuple | None = None,
                 shape_from_data: bool = False, draws_from: Callable | None = None,
                 batch: Callable | None = None) -> None:
        ufunc = isinstance(forward, np.ufunc)
        elementwise_ufunc = ufunc and forward.signature is None  # (matmul is a gufunc)
        self.name = name
        self.forward = forward
        self.grad_fn = grad_fn
        self.vjp = vjp
        if jvp is not None and (vjp is None or len(jvp) != len(vjp)):
            raise ValueError(f"op {name}: jvp= takes one rule (or None) per VJP rule")
        self.jvp = jvp
        self.shape_from_data = shape_from_data
        self.draws_from = draws_from
        self.batch = batch
        self.torch_args = torch_args
        self.variadic = variadic
        self.result = result_type(name, outputs)
        self.multi = outputs is not None
        self.output_names = output_names(self.result) if self.multi else ()
        self.regions = regions
        is_view = is_view or regions is not None
        self.is_view = is_view
        self.aliases = is_view if aliases is None else aliases
        self.elementwise = elementwise_ufunc if elementwise is None else elementwise
        self.pure = pure
        self.fresh = (ufunc and not self.aliases) if fresh is None else fresh
        self.promote = promote
        self.to_float = to_float
        self.template = (promoting_template(template, promote, to_float)
                         if promote is not None and isinstance(template, str) else template)
        self.differentiable = vjp is not None
        self.node_cls = None  # set by the runtime when the first node is made
        self.arg_names, self.n_inputs, self.uses = _signature(self, vjp, uses)

    def rule_uses(self, i: int) -> frozenset:
        """What the rule of input ``i`` reads (input positions, 'out', ('out', k))."""
        return self.uses[0 if self.variadic else i]

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    def __reduce__(self) -> tuple:
        return (_op_named, (self.name,))  # pickled by name: the table holds one per name

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        """An op stored on a class is a method: ``Tensor.tanh = OPS['tanh']``."""
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, *args: Any, **params: Any) -> Any:
        handler = None  # call() inlined: this is every op's entry point
        for a in args:
            h = _HANDLERS.get(type(a), _UNSEEN)
            if h is _UNSEEN:
                h = _handler_of(type(a))
            if h is not None and h is not handler and (
                    handler is None or h.priority > handler.priority):
                handler = h
        if handler is None:
            if self.promote is not None:
                args = promoted(self, args, params)
            if INSIDE.get():  # (quietly, inlined: the eager backward on arrays)
                return self.forward(*args, **params)
            return quietly(self.forward, *args, **params)
        return handler(self, args, params)


def _op_named(name: str) -> OpDef:
    return OPS[name]


def _signature(op: OpDef, vjp: tuple | None, uses: tuple | None) -> tuple:
    """(arg_names, n_inputs, uses): names from the rules (or the forward), the inputs
    being the first ``len(vjp)`` (a variadic op's one list: its rule's third argument,
    followed by ``i``); ``uses`` parsed into input positions and outputs."""
    if vjp is None:
        if isinstance(op.forward, np.ufunc):  # its inputs only, not numpy's keywords
            return tuple(f"x{i}" for i in range(op.forward.nin)), None, ()
        return tuple(inspect.signature(op.forward).parameters), None, ()
    first = next(r for r in vjp if r is not None)
    params = [p for p in inspect.signature(first).parameters.values()
              if p.kind is p.POSITIONAL_OR_KEYWORD][2:]
    names = tuple(p.name for p in params if not p.name.startswith("_"))
    if op.variadic:
        if len(vjp) != 1 or names[1:2] != ("i",):
            raise ValueError(f"op {op.name}: a variadic op has one rule, "
                             "rule(g, out, tensors, i, **params)")
        names = names[:1] + names[2:]
    parsed = tuple(_parse_uses(op, u, names) for u in (uses or ("",) * len(vjp)))
    if len(parsed) != len(vjp):
        raise ValueError(f"op {op.name}: {len(vjp)} rules but {len(parsed)} uses entries")
    return names, (None if op.variadic else len(vjp)), parsed


def _parse_uses(op: OpDef, spec: str, arg_names: tuple) -> frozenset:
    """'x out' -> frozenset({0, 'out'}): input positions and/or the output; an output's
    name -> ('out', k); a variadic op's list name -> every input (``AllInputs``)."""
    found: set = set()
    every = False
    for n in spec.split():
        if n == "out":
            found.add("out")
        elif n in op.output_names:
            found.add(("out", op.output_names.index(n)))
        elif op.variadic and n == arg_names[0]:
            every = True
        elif n in arg_names and not op.variadic:
            found.add(arg_names.index(n))
        else:
            raise ValueError(f"op {op.name}: uses names {n!r}, not a rule argument "
                             f"{arg_names} or an output {op.output_names}")
    return AllInputs(found) if every else frozenset(found)


class Public:
    """Where one callable is reachable: ``pullback.<functions>``, ``Tensor.<methods>``,
    ``Tensor.<inplace>`` (a primitive written into its first input), the
    ``nn.functional`` names, and numpy functions (``{np_fn: implementation}``)."""

    __slots__ = ("fn", "functions", "methods", "inplace", "functional", "numpy", "operands")

    def __init__(self, fn: Callable, functions: tuple, methods: tuple, inplace: str | None,
                 functional: tuple, numpy: dict, operands: Callable | None = None) -> None:
        self.fn = fn
        self.operands = operands
        self.functions = functions
        self.methods = methods
        self.inplace = inplace
        self.functional = functional
        self.numpy = numpy

    def __repr__(self) -> str:
        return f"<public {self.functions or self.methods or self.functional}>"


def _names(spec: Any, name: str) -> tuple:
    """True -> (name,); a string -> (it,); a tuple as it is; False/None -> ()."""
    if spec is True:
        return (name,)
    if not spec:
        return ()
    return (spec,) if isinstance(spec, str) else tuple(spec)


def _numpy(spec: Any, fn: Callable) -> dict:
    """numpy=np.tanh means numpy's call maps onto ``fn`` as it is; a dict gives an
    implementation with numpy's signature per numpy function."""
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return dict(spec)
    return {f: fn for f in (spec if isinstance(spec, tuple) else (spec,))}


def declare(fn: Callable, name: str, *, function: Any = False, method: Any = False,
            inplace: Any = False, functional: Any = False, numpy: Any = None,
            operands: Callable | None = None) -> None:
    """Make ``fn`` reachable under the given names (see ``Public``). A name another
    binding has, or one a surface refuses (``pb.grad``...), raises before anything
    is registered. The in-place form of a public function that is not a primitive
    needs ``operands``: a function of the same signature giving ``(op, inputs,
    params)``, the primitive call that is written into the first input."""
    inplace_name = (name + "_") if inplace is True else (inplace or None)
    if inplace_name is not None and not isinstance(inplace_name, str):
        raise TypeError(f"{name}: inplace= takes True or one method name, not {inplace!r}")
    if inplace_name is not None and not isinstance(fn, OpDef) and operands is None:
        raise TypeError(f"{name}: the in-place form of a public function needs operands=")
    entry = Public(fn, _names(function, name), _names(method, name), inplace_name,
                   _names(functional, name), _numpy(numpy, fn), operands)
    if not (entry.functions or entry.methods or entry.inplace or entry.functional
            or entry.numpy):
        return
    _check_unique(entry)
    for check, _ in _SUBSCRIBERS:
        if check is not None:
            check(entry)
    PUBLIC.append(entry)
    for _, install in _SUBSCRIBERS:
        install(entry)


def _check_unique(entry: Public) -> None:
    taken = [(kind, n) for e in PUBLIC for kind, n in _keys(e)]
    for key in _keys(entry):
        if key in taken:
            raise ValueError(f"the {key[0]} name {key[1]!r} is declared twice")


def _keys(e: Public) -> list:
    return ([("function", n) for n in e.functions] + [("method", n) for n in e.methods]
            + [("method", e.inplace)] * bool(e.inplace)
            + [("functional", n) for n in e.functional]
            + [("numpy", _numpy_name(f)) for f in e.numpy])


def _numpy_name(f: Any) -> Any:
    """numpy's full name of a function (``np.cross`` and ``np.linalg.cross`` differ)."""
    name = getattr(f, "__name__", None)
    return f if name is None else f"{getattr(f, '__module__', None) or 'numpy'}.{name}"


def defop(name: str, forward: Callable, grad_fn: str | None = None, *,
          function: Any = False, method: Any = False, inplace: Any = False,
          functional: Any = False, numpy: Any = None, **facts: Any) -> OpDef:
    """Declare a primitive op and put it in the table (an op without ``vjp`` is
    non-differentiable: its outputs never require grad). ``facts`` are OpDef's."""
    if name in OPS:
        raise ValueError(f"op {name!r} is declared twice")
    op = OpDef(name, forward, grad_fn, **facts)
    if (op.variadic or op.multi) and (function or method or inplace or functional or numpy):
        raise ValueError(f"op {name!r} takes a list or returns several values: make it "
                         "reachable with a @public function of torch's signature")
    declare(op, name, function=function, method=method, inplace=inplace,
            functional=functional, numpy=numpy)
    OPS[name] = op
    return op


def unary(name: str, forward: Callable, grad_fn: str, rule: Callable, uses: str = "x", *,
          public: bool = True, aliases: tuple = (), **facts: Any) -> OpDef:
    """Declare a one-input op with one VJP rule ``rule(g, out, x, **params)`` reading
    ``uses`` (``"x"``, ``"out"``, ``"x out"`` or ``""``): the shared form of every unary
    family (exp, tan, erf, i0, bessel_j0...).

    ``public=True`` makes it ``pb.<name>``, ``Tensor.<name>`` and ``Tensor.<name>_``, under
    torch's ``aliases`` too (``arcsin`` for ``asin``); ``public=False`` reaches it only
    through the names given in ``facts`` (``function="special.i0e"``). A numpy ufunc as
    the forward is also numpy's function on Tensors and spelled as it in generated code
    (``np.tan({0})``); any other forward is declared elementwise and fresh (a kernel that
    returns a new array). Every default yields to an explicit fact."""
    if public:
        names = (name,) + tuple(aliases)
        facts.setdefault("function", names)
        facts.setdefault("method", names)
        facts.setdefault("inplace", True)
    if isinstance(forward, np.ufunc):
        facts.setdefault("template", f"np.{forward.__name__}({{0}})")
        facts.setdefault("numpy", forward)
    else:
        facts.setdefault("elementwise", True)
        facts.setdefault("fresh", True)
        if getattr(forward, "__module__", "").startswith("pullback.ops.kernels."):
            # a kernel of its own (erf, i0): the runtime module generated code reads has it
            facts.setdefault("template", f"rt.{forward.__name__}({{0}})")
    return defop(name, forward, grad_fn, vjp=(rule,), uses=(uses,), **facts)


def public(name: str, **names: Any) -> Callable:
    """Declare a torch-signature function that chooses among primitives::

        @public("sum", function=True, method=True, numpy={np.sum: numpy_sum})
        def reduce_sum(input, dim=None, keepdim=False, *, dtype=None): ...

    The function takes the public name (``pullback.sum.__name__ == 'sum'``; it
    pickles as ``pullback.sum`` when it is one)."""

    def register(fn: Callable) -> Callable:
        fn.__name__ = name
        if names.get("function"):
            fn.__qualname__, fn.__module__ = name, "pullback"
        declare(fn, name, **names)
        return fn

    return register


def subscribe(install: Callable, check: Callable | None = None) -> None:
    """Call ``install(entry)`` for every public binding, now and when declared later;
    ``check(entry)`` first, which may raise to refuse a binding before anything of
    it is registered anywhere."""
    _SUBSCRIBERS.append((check, install))
    for entry in PUBLIC:
        install(entry)


class Meta:
    """Shape and dtype of a value the backward does not keep (rules may read
    ``.shape``/``.dtype``/``.ndim`` of any input; reading data from a Meta is a bug)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: np.dtype) -> None:
        self.shape = shape
        self.dtype = dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Meta({self.shape}, {self.dtype})"

    # Reading data from a Meta fails loudly instead of computing something silently wrong
    # (numpy would otherwise treat it as an object scalar, and ``==`` as identity).
    __array_ufunc__ = None
    __hash__ = object.__hash__

    def _no_data(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self!r} holds no data: a VJP rule read a value its op's `uses` "
                        "does not declare")

    __array__ = __bool__ = __float__ = __int__ = __index__ = __len__ = __iter__ = _no_data
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __getitem__ = _no_data


_HANDLERS: dict = {}  # type -> its _pb_dispatch (None for plain values), looked up once
_UNSEEN = object()


def _handler_of(kind: type) -> Any:
    h = _HANDLERS[kind] = getattr(kind, "_pb_dispatch", None)
    return h


def dispatcher(priority: int) -> Callable:
    """Mark a function as a value kind's ``_pb_dispatch`` (higher priority wins)."""

    def mark(fn: Callable) -> staticmethod:
        fn.priority = priority
        return staticmethod(fn)

    return mark


def is_traced(x: Any) -> bool:
    """Whether ``x`` is a value an op records on (a Tensor or an IR value)."""
    return getattr(type(x), "_pb_dispatch", None) is not None


def c_order(x: Any) -> Any:
    """``x`` laid out C-contiguous (itself when it is). torch makes the results of
    reductions, softmax and the indexing of a contiguous tensor contiguous whatever
    the input's strides, where numpy keeps the input's order; and a reshape of the
    result is a view or a copy by the strides (``shape._viewable``)."""
    if type(x) is not np.ndarray or x.flags.c_contiguous:
        return x
    return np.ascontiguousarray(x)


def reduced_axes(shape: tuple, target: tuple) -> tuple:
    """Axes to sum (keepdims=True) so that ``shape`` reduces to the broadcast-compatible
    ``target``; the sum is then reshaped to ``target`` when ``shape`` had more dims.

    >>> reduced_axes((4, 3, 2), (3, 1))
    (0, 2)
    """
    lead = len(shape) - len(target)
    return tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(target) if n == 1 and shape[lead + i] != 1)


def rt_call(name: str, *keywords: str) -> Callable:
    """A template calling the runtime helper ``rt.<name>`` on the op's inputs and, as
    keywords, its params: ``"axis=dim"`` passes the param ``dim`` as ``axis=``, a bare
    ``"dim"`` as ``dim=``::

        rt_call("logsumexp", "axis=dim", "keepdims=keepdim")  # rt.logsumexp(x, axis=1, ...)
    """
    pairs = [k.split("=") if "=" in k else (k, k) for k in keywords]

    def text(e: Any, a: list, lit: Callable) -> str:
        kept = [f"{k}={lit(e.params[p])}" for k, p in pairs]
        return f"rt.{name}({', '.join(a + kept)})"
    return text
