"""Op-table tests. ``ops.cases`` is importable from every test (tests/ is on sys.path).

``numeric_grad`` is tests/conftest.py's, loaded by path: several test folders have a
conftest.py, and the module name ``conftest`` means whichever pytest loaded last.
"""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "_pullback_tests_conftest", Path(__file__).resolve().parent.parent / "conftest.py")
_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_conftest)
numeric_grad = _conftest.numeric_grad


def raised(call) -> tuple:
    """(type, message) of the exception ``call()`` raises (it must raise)."""
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the point is to catch and compare
        return type(e), str(e)
    raise AssertionError(f"{call} did not raise")
