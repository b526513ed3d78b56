"""Every error and warning text the runtime raises, worded as torch words them.

Kept in one place so that tests, the eager engine and compiled code agree.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np

from .. import dtypes

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward.")
NO_GRAD_FN = "element {i} of tensors does not require grad and does not have a grad_fn"
IMPLICIT_SCALAR = "grad can be implicitly created only for scalar outputs"
IMPLICIT_REAL = "grad can be implicitly created only for real scalar outputs but got {dtype}"
SHAPE_MISMATCH = ("Mismatch in shape: grad_output[{i}] has a shape of {g} and output[{i}] "
                  "has a shape of {o}.")
GRAD_NOT_TENSOR = "gradients can be either Tensors or None, but got {typ}"
BATCHED_SHAPE = (
    "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the "
    "batch dimension. The sizes of the remaining dimensions are expected to match the shape of "
    "corresponding output, but a mismatch was detected: grad_output[{i}] has a shape of {g} and "
    "output[{i}] has a shape of {o}. If you only want some tensors in `grad_output` to be "
    "considered batched, consider using vmap.")
BATCHED_NEEDS_DIM = ("is_grads_batched=True: every grad_output needs a leading batch "
                     "dimension (got a 0-dim or missing grad_output)")
COUNT_MISMATCH = "got {n} tensors and {m} gradients"
EMPTY_GRAD_INPUTS = "`inputs` argument to `grad()` cannot be empty."
COMPLEX_SEED_DTYPE = (
    "For complex Tensors, both grad_output and output are required to have the same dtype. "
    "Mismatch in dtype: grad_output[{i}] has a dtype of {g} and output[{i}] has a dtype of {o}.")
EMPTY_INPUTS = "`inputs` argument to `backward()` cannot be empty."
UNUSED_INPUT = ("The differentiated Tensor at index {i} appears to not have been used in the "
                "graph. Set allow_unused=True if this is the desired behavior.")
INPUT_NO_GRAD = "One of the differentiated Tensors does not require grad"
MATERIALIZE_UNUSED = ("Expected allow_unused to be True or not passed when materialize_grads=True,"
                      " but got: allow_unused=False.")
FLOAT_ONLY_FACTORY = "Only Tensors of floating point and complex dtype can require gradients"
FLOAT_ONLY_METHOD = "only Tensors of floating point dtype can require gradients"
FLOAT_ONLY_SETTER = "only Tensors of floating point and complex dtype can require gradients"
NONLEAF_REQUIRES_GRAD_OFF = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use "
    "var_no_grad = var.detach().")
NONLEAF_REQUIRES_GRAD = "you can only change requires_grad flags of leaf variables."
RETAINS_GRAD_READONLY = "attribute 'retains_grad' of 'pullback.Tensor' objects is not writable"
NONLEAF_GRAD_ACCESS = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information.")
GRAD_SIZE = ("attempting to assign a gradient of size '{g}' to a tensor of size '{t}'. "
             "Please ensure that the gradient and the tensor are the same size")
GRAD_DTYPE = (
    "attempting to assign a gradient with dtype '{g}' to a tensor with grad_dtype '{t}'. The "
    "gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set "
    "the tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. Set "
    "grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may break "
    "downstream systems that assume they match.")
GRAD_TYPE = "assigned grad expected to be a Tensor or None but got grad of type {typ}"
RETAIN_NO_GRAD = "can't retain_grad on Tensor that has requires_grad=False"
HOOK_NO_GRAD = "cannot register a hook on a tensor that doesn't require gradient"
POST_ACC_NONLEAF = "post accumulate grad hooks cannot be registered on non-leaf tensors"
HOOK_NOT_TENSOR = "expected Variable, but hook returned '{typ}'"
HOOK_NOT_TUPLE = "expected tuple, but hook returned '{typ}'"
HOOK_COUNT = ("hook '{name}' has returned an incorrect number of values (got {got}, but "
              "expected {expected})")
HOOK_SIZE = "hook '{name}' has changed the size of value"
HOOK_TYPE = "hook '{name}' has changed the type of value (was {was} got {got})"
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
PARTIAL_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation.")
INTERNAL_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation.")
VIEW_LEAF_INPLACE = ("a view of a leaf Variable that requires grad is being used in an in-place "
                     "operation.")
# name: qualified (numpy.cbrt, scipy.special.jv); hint: "" or "Use ... instead. "
NUMPY_NOT_DIFFERENTIABLE = (
    "{name} is not differentiable in pullback yet, and one of its arguments requires "
    "grad. {hint}Call it on tensor.detach() or under pullback.no_grad() if no gradient should "
    "flow through it")
# forward mode's form: a dual tensor among the arguments (grad mode does not stop tangents)
NUMPY_NO_TANGENT = (
    "{name} is not differentiable in pullback yet, and one of its arguments carries a "
    "forward-mode tangent (a dual tensor). {hint}Call it on forward_ad.unpack_dual(x).primal "
    "if no tangent should flow through it")
NO_GRAD_VIEW_INPLACE = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
    "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
    "your code by moving both the view and the inplace either both inside the no_grad block "
    "(if you don't want the inplace to be tracked) or both outside (if you want the inplace to "
    "be tracked).")
NO_GRAD_VIEW_BASE_MODIFIED = (
    "A view was created in no_grad mode and its base or another view of its base has been "
    "modified inplace with grad mode enabled. Given that this use case is ambiguous and "
    "error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the no_grad block (if you don't want the inplace to be "
    "tracked) or both outside (if you want the inplace to be tracked).")
DETACH_VIEW_INPLACE = (
    "Can't detach views in-place. Use detach() instead. If you are using "
    "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
    "gradients are views of DDP buckets, and hence detach_() cannot be called on these "
    "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
    "torch/optim/optimizer.py as the solution.")
CREATE_GRAPH_CYCLE = (
    "Using backward() with create_graph=True will create a reference cycle between the "
    "parameter and its gradient which can cause a memory leak. We recommend using "
    "autograd.grad when creating the graph to avoid this. If you have to use this function, "
    "make sure to reset the .grad fields of your parameters to None after use to break the "
    "cycle and avoid the leak.")
INFERENCE_SAVE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
    "`torch.inference_mode()`.")
INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details.")
INFERENCE_REQUIRES_GRAD = ("Setting requires_grad=True on inference tensor outside "
                           "InferenceMode is not allowed.")
ANOMALY_HINT = ("Hint: enable anomaly detection to find the operation that failed to compute "
                "its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
ANOMALY_ON_HINT = ("Hint: the backtrace further above shows the operation that failed to compute "
                   "its gradient. The variable in question was changed in there or anywhere "
                   "later. Good luck!")


def size_str(shape: tuple) -> str:
    """torch's '[2, 3]' rendering of a shape."""
    return "[" + ", ".join(str(n) for n in shape) + "]"


def torch_size(shape: tuple) -> str:
    return f"torch.Size({size_str(shape)})"


def legacy_type(np_dtype: Any) -> str:
    """'torch.FloatTensor' for float32 data (torch's legacy type names)."""
    return "torch." + dtypes.as_dtype(np_dtype)._legacy


def index_put_dtypes(dst: Any, src: Any) -> str:
    """torch's refusal of ``x[index] = value`` (advanced indexing) across dtypes."""
    return ("Index put requires the source and destination dtypes match, got "
            f"{dtypes.as_dtype(dst)._scalar_name} for the destination and "
            f"{dtypes.as_dtype(src)._scalar_name} for the source.")


def node_short_name(node: Any) -> str:
    """'Exp' for ExpBackward0, 'Pow1' for PowBackward1: how 2.13 names a node in the
    in-place error."""
    return re.sub(r"Backward(\d*)$", lambda m: m.group(1).lstrip("0"), type(node).__name__)


def modified_inplace(data: Any, version: int, expected: int, grad_fn: Any,
                     output_nr: int = 0, anomaly: bool = False) -> str:
    """The saved-value version error. A saved input names the tensor's current grad_fn;
    a saved output names the node that saved it (as torch 2.13 does). In anomaly mode
    the hint points at the forward traceback the warning before it shows."""
    which = ("" if grad_fn is None else
             f", which is output {output_nr} of {node_short_name(grad_fn)},")
    hint = ANOMALY_ON_HINT if anomaly else ANOMALY_HINT
    return ("one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{legacy_type(data.dtype)} {size_str(data.shape)}]{which} "
            f"is at version {version}; expected version {expected} instead. {hint}")


MULTI_VIEW = ("This view is the output of a function that returns multiple views. Such "
              "functions do not allow the output views to be modified inplace. You should "
              "replace the inplace operation by an out-of-place one.")


def custom_function_view(nr: int, name: str) -> str:
    """torch's refusal of an in-place write into an input a custom Function returned as it
    is (a view its custom backward would be bypassed for)."""
    return (f"Output {nr} of {name} is a view and is being modified inplace. This view was "
            "created inside a custom Function (or because an input was returned as-is) and "
            "the autograd logic to handle view+inplace would override the custom backward "
            "associated with the custom Function, leading to incorrect gradients. This "
            "behavior is forbidden. You can fix this by cloning the output of the custom "
            "Function.")


def multi_view(t: Any, indirect: bool) -> str:
    """torch's refusal of an in-place write into an output of split, unbind or chunk (or
    a view of one), or (``indirect``) of reading one after its base or another view of
    it was written (torch's CreationMeta::MULTI_OUTPUT_NODE)."""
    what = "its base or another view of its base has been" if indirect else "is being"
    node = t._grad_fn
    if node is None:
        head = (f"A view was created in no_grad mode and {what} modified inplace with grad "
                "mode enabled.")
    else:
        head = (f"Output {t._output_nr} of {node_short_name(node)} is a view and {what} "
                "modified inplace.")
    return f"{head} {MULTI_VIEW}"


def side_effect_in_trace(what: str) -> str:
    """``backward()`` or ``optimizer.step()`` called while a function is traced."""
    return (f"{what} was called inside a function being traced (pb.compile, pb.grad, ...): "
            "the generated code would not repeat it on later calls, nor the .grad it fills "
            "or the parameters it updates. Compile the forward and the loss, and call "
            "backward() and the optimizer's step() on the compiled function's result, "
            "outside it; or get gradients as values with pb.autograd.grad or pb.grad")


def forward_error(e: ValueError, arrays: list) -> Exception:
    """numpy's broadcasting failure worded as torch words it (other errors unchanged)."""
    if "broadcast" not in str(e):
        return e
    shapes = [a.shape for a in arrays if isinstance(a, np.ndarray)]
    for i, a in enumerate(shapes):
        for b in shapes[i + 1:]:
            n = max(len(a), len(b))
            for d in range(n - 1, -1, -1):
                sa = a[d - n + len(a)] if d - n + len(a) >= 0 else 1
                sb = b[d - n + len(b)] if d - n + len(b) >= 0 else 1
                if sa != sb and sa != 1 and sb != 1:
                    return RuntimeError(f"The size of tensor a ({sa}) must match the size of "
                                        f"tensor b ({sb}) at non-singleton dimension {d}")
    return e


def copy_construct(how: str) -> str:
    """torch's warning when ``how`` (``torch.tensor``, ``tensor.new_tensor``) is given a
    tensor: the copy is a new leaf, cut from the source's graph."""
    return ("To copy construct from a tensor, it is recommended to use "
            "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
            f".requires_grad_(True), rather than {how}(sourceTensor).")


SCALAR_CONVERSION = ("Converting a tensor with requires_grad=True to a scalar may lead to "
                     "unexpected behavior.\nConsider using tensor.detach() first.")
#: torch's warnings of ``TORCH_WARN_ONCE``, given so far (their texts)
WARNED_ONCE: set = set()


def warn_once(text: str, stacklevel: int = 3) -> None:
    """``text`` as a UserWarning, once per process, as torch's ``TORCH_WARN_ONCE``: the
    create_graph cycle, ``float()`` of a tensor that requires grad (``int()``, ``.item()``
    and ``bool()`` do not warn), a deprecated name.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     warn_once("said once (doctest)"); warn_once("said once (doctest)")
    >>> len(seen)
    1
    """
    if text not in WARNED_ONCE:
        WARNED_ONCE.add(text)
        warnings.warn(text, UserWarning, stacklevel=stacklevel)
