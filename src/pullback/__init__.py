"""pullback: PyTorch's autograd on numpy, with the backward pass compiled to Python.

>>> import pullback as pb
>>> x = pb.tensor([1., 2., 3.], requires_grad=True)
>>> (x ** 2).sum().backward()
>>> x.grad
tensor([2., 4., 6.])

The functions ``pb.<name>`` (``pb.exp``, ``pb.sum``, ``pb.matmul``...) are every op-table
binding declared with ``function=`` (see ``pullback.ops``).
"""

from .settings import config
from . import ops  # declares the op table first
from .tensor import Tensor
from . import numpy_inplace  # numpy's functions that write into an argument, on Tensors
from . import autograd
from .autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                 is_inference_mode_enabled, no_grad, set_grad_enabled)
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .autograd.custom import custom_jvp, custom_vjp
from .autograd.fixed_points import fixed_point
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
                       linspace, manual_seed, ones, ones_like, rand, rand_like, randint, randn,
                       randn_like, tensor, zeros, zeros_like)
from .dtypes import (bool, cdouble, cfloat, complex64, complex128, double, dtype, float,
                     float16, float32, float64, half, int8, int16, int32, int64, long, short,
                     uint8)
from .dtypes import int
from . import datasets, fft, linalg, nn, optim, special, utils
from . import distributions
from . import scipy
from .compiler import numpy_polynomial  # numpy.polynomial on traced values (source pass)
from .serialization import load, save
from .devices import cuda, device
from .ops.sampling import Generator
from .torch_functions import (allclose, bernoulli, bincount, broadcast_shapes, bucketize, equal,
                              finfo, get_default_dtype, histc, iinfo, is_complex,
                              is_floating_point, is_nonzero, is_tensor, isclose, logspace,
                              multinomial, normal, numel, promote_types, randperm,
                              searchsorted, set_default_dtype, tril_indices, triu_indices,
                              unique)
from .tensor_extras import index_put  # (and Tensor methods)
from .torch_utilities import (are_deterministic_algorithms_enabled, asarray, bartlett_window,
                              blackman_window, can_cast, conj_physical, detach, is_conj,
                              is_neg, is_same_size, is_signed, randint_like, resolve_conj,
                              resolve_neg, get_float32_matmul_precision,
                              get_num_interop_threads, get_num_threads, get_rng_state,
                              hamming_window, hann_window, initial_seed,
                              is_deterministic_algorithms_warn_only_enabled, kaiser_window,
                              result_type, scalar_tensor, seed, set_float32_matmul_precision,
                              set_num_interop_threads, set_num_threads, set_rng_state,
                              use_deterministic_algorithms)
from .pytree import (register_pytree_node, tree_flatten, tree_leaves, tree_map, tree_structure,
                     tree_unflatten)


def _install(entry: ops.Public) -> None:
    for name in entry.functions:
        if "." in name:  # a namespace's (pb.linalg.inv): linalg.py installs it
            continue
        # torch's functions take axis= for dim= (nn.functional's, written in Python, do not)
        globals()[name] = ops.table.bindings.torch_aliases(
            ops.table.bindings.public_callable(entry.fn, name), name)


def _check(entry: ops.Public) -> None:
    for name in entry.functions:
        if "." not in name and name in globals():
            raise ValueError(f"pullback.{name} exists already; choose another function name")


ops.subscribe(_install, _check)
del _install, _check

__version__ = "0.1.0"

from .compiler import (ConversionError, compile, grad, hessian, jacfwd, jacrev, jvp, linearize,
                       stop_gradient, value_and_grad, vjp, vmap, export)
from .compiler.jax_options import checkpoint, remat
from .compiler.control_flow import cond, fori_loop, scan, switch, while_loop
from . import debug, func, viz
from . import profiler
from .compiler import cache_files as _cache_files

_cache_files.snapshot()  # (the persistent cache's fingerprint of the code just loaded)
