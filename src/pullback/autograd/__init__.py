"""pullback.autograd: torch.autograd's engine and API on numpy."""

from .backward import backward, grad
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled, no_grad, set_grad_enabled)
from .graph import AccumulateGrad, Node, RemovableHandle
from .anomaly_mode import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                           set_detect_anomaly)
from .function import Function, once_differentiable
from . import function_ir
from .custom import custom_jvp, custom_vjp
from .fixed_points import fixed_point
from .variable import Variable
from . import forward_ad, functional
from . import profiler
from .gradcheck import GradcheckError, gradcheck, gradgradcheck

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "is_inference_mode_enabled", "Node", "AccumulateGrad",
           "RemovableHandle", "Function", "once_differentiable", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "Variable", "gradcheck", "gradgradcheck", "GradcheckError", "forward_ad",
           "functional", "profiler"]
