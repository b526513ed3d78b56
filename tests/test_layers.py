"""The package's import layers (``tools/import_graph.py``): the repository, then the tool itself
on small synthetic packages written to ``tmp_path``."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _load_tool():
    spec = importlib.util.spec_from_file_location("import_graph", REPO / "tools/import_graph.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


def test_repository_respects_the_layers():
    found = tool.check(REPO)
    assert not found, f"{len(found)} layering problem(s):\n" + "\n".join(found)


# ----------------------------------------------------------------------------- synthetic


def write(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (paths relative to the repo root; ``pullback/...`` means
    ``src/pullback/...``), adding an empty ``__init__.py`` to every package folder."""
    for name, text in files.items():
        path = root / ("src/" + name if name.startswith("pullback/") else name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in [root / "src/pullback", *(root / "src/pullback").rglob("*")]:
        if folder.is_dir() and not (folder / "__init__.py").exists():
            (folder / "__init__.py").write_text("")
    return root


def test_clean_package_has_no_problems(tmp_path):
    write(tmp_path, {
        "pullback/__init__.py": "from .tensor import Tensor\nfrom .compiler import compile\n",
        "pullback/dtypes.py": "",
        "pullback/ops/math.py": "from ..dtypes import float32\nfrom . import registry\n",
        "pullback/ops/registry.py": "",
        "pullback/tensor.py": "from .ops import math\n",
        "pullback/compiler/__init__.py": "from .trace import compile\n",
        "pullback/compiler/trace.py": "from pullback.transforms import pipeline\n",
        "transforms/__init__.py": "",
        "transforms/pipeline.py": "import pullback.ops.math\n",
    })
    assert tool.check(tmp_path) == []


def test_two_file_cycle_through_ops_is_reported(tmp_path):
    write(tmp_path, {
        "pullback/ops/a.py": "from . import b\n",
        "pullback/ops/b.py": "from .a import thing\n",
    })
    [problem] = tool.check(tmp_path)
    assert "import cycle of 2 files" in problem
    assert "pullback.ops.a, pullback.ops.b" in problem
    assert "src/pullback/ops/a.py:1: pullback.ops.a -> pullback.ops.b" in problem
    assert "src/pullback/ops/b.py:1: pullback.ops.b -> pullback.ops.a" in problem


def test_five_file_cycle_in_the_runtime_is_reported(tmp_path):
    names = ["r0", "r1", "r2", "r3", "r4"]
    write(tmp_path, {f"pullback/{n}.py": f"from . import {names[(i + 1) % 5]}\n"
                     for i, n in enumerate(names)})
    [problem] = tool.check(tmp_path)
    assert "import cycle of 5 files (more than 4 files)" in problem
    assert "includes layer" not in problem


def test_four_file_cycle_in_the_runtime_is_allowed(tmp_path):
    names = ["r0", "r1", "r2", "r3"]
    write(tmp_path, {f"pullback/{n}.py": f"from . import {names[(i + 1) % 4]}\n"
                     for i, n in enumerate(names)})
    assert tool.check(tmp_path) == []


def test_tensor_and_record_may_import_each_other(tmp_path):
    write(tmp_path, {
        "pullback/tensor.py": "from .autograd.record import apply\n",
        "pullback/autograd/record.py": "from ..tensor import Tensor\n",
    })
    assert tool.check(tmp_path) == []
    assert tool.cycles(tool.build_graph(tmp_path)) == [
        ["pullback.autograd.record", "pullback.tensor"]]


def test_upward_import_is_reported_with_its_line(tmp_path):
    write(tmp_path, {
        "pullback/ops/x.py": '"""An op module."""\n\nfrom ..compiler.y import thing\n',
        "pullback/compiler/y.py": "thing = 1\n",
    })
    [problem] = tool.check(tmp_path)
    assert problem == (
        "upward import at src/pullback/ops/x.py:3: pullback.ops.x (layer 2, op table) imports "
        "pullback.compiler.y (layer 6, compiler)")


def test_import_inside_a_function_is_reported(tmp_path):
    write(tmp_path, {
        "pullback/dtypes.py": "",
        "pullback/tensor.py": "class T:\n    def f(self):\n        from . import dtypes\n",
    })
    assert tool.check(tmp_path) == [
        "import inside a function at src/pullback/tensor.py:3: pullback.tensor imports "
        "pullback.dtypes"]
    assert tool.function_import_problems in tool.CHECKS  # the rule can be relaxed there


def test_function_import_still_closes_a_cycle(tmp_path):
    write(tmp_path, {
        "pullback/ops/a.py": "from . import b\n",
        "pullback/ops/b.py": "def f():\n    from .a import thing\n",
    })
    found = tool.check(tmp_path)
    assert len(found) == 2
    assert found[0].startswith("import cycle of 2 files")
    assert "pullback.ops.b -> pullback.ops.a  (in a function)" in found[0]


def test_relative_and_absolute_imports_resolve(tmp_path):
    write(tmp_path, {
        "pullback/ops/__init__.py": "from . import math\nfrom .registry import OpDef\n",
        "pullback/ops/math.py": "",
        "pullback/ops/registry.py": "",
        "pullback/autograd/graph.py": "from ..ops import math, OPS\nfrom .. import ops\n",
        "transforms/__init__.py": "",
        "transforms/codegen.py": "from .cse import cse\nimport pullback.ops.registry\n",
        "transforms/cse.py": "import numpy\nfrom typing import Any\n",
    })
    edges = tool.build_graph(tmp_path).edges()
    assert edges["pullback.ops"] == ["pullback.ops.math", "pullback.ops.registry"]
    assert edges["pullback.autograd.graph"] == ["pullback.ops", "pullback.ops.math"]
    assert edges["pullback.transforms.codegen"] == [
        "pullback.ops.registry", "pullback.transforms.cse"]
    assert edges["pullback.transforms.cse"] == []


def test_front_door_and_package_init_may_import_their_submodules(tmp_path, monkeypatch):
    layers = list(tool.LAYERS)
    layers[5] = tool.Layer(6, "compiler", ("pullback.compiler", "pullback.autograd.replay"))
    monkeypatch.setattr(tool, "LAYERS", tuple(layers))
    write(tmp_path, {
        "pullback/__init__.py": "from .compiler import compile\nfrom .dtypes import float32\n",
        "pullback/dtypes.py": "",
        "pullback/compiler/__init__.py": "",
        "pullback/autograd/__init__.py": "from .replay import replay\n",
        "pullback/autograd/replay.py": "",
        "pullback/autograd/engine.py": "from .replay import replay\n",
    })
    [problem] = tool.check(tmp_path)  # engine -> replay is upward; the __init__s are not
    assert problem.startswith("upward import at src/pullback/autograd/engine.py:1:")


def test_importing_the_front_door_from_below_is_upward(tmp_path):
    write(tmp_path, {
        "pullback/__init__.py": "",
        "pullback/ops/math.py": "from .. import Tensor\n",
    })
    [problem] = tool.check(tmp_path)
    assert "imports pullback (layer 7, front end)" in problem


def test_layer_table():
    assert tool.layer_of("pullback.dtypes").number == 1
    assert tool.layer_of("pullback.ops.math").number == 2
    assert tool.layer_of("pullback.ir.builder").number == 3
    assert tool.layer_of("pullback.transforms.codegen").number == 4
    assert tool.layer_of("pullback.tensor_methods").number == 5  # not listed: the runtime
    assert tool.layer_of("pullback.compiler.tracer").number == 6
    assert tool.layer_of("pullback").number == 7
    assert tool.layer_of("pullback.nn.functional").number == 7


def test_components_are_found_without_recursion():
    n = 3 * sys.getrecursionlimit()
    chain = {f"m{i:05d}": [f"m{(i + 1) % n:05d}"] for i in range(n)}
    chain["tail"] = ["m00000"]
    components = tool.strongly_connected(chain)
    assert components == [sorted(f"m{i:05d}" for i in range(n)), ["tail"]]


def test_components_are_deterministic():
    edges = {"d": ["c"], "c": ["d", "b"], "b": ["a"], "a": ["b"], "e": []}
    assert tool.strongly_connected(edges) == [["a", "b"], ["c", "d"], ["e"]]
    assert tool.strongly_connected(dict(reversed(edges.items()))) == [["a", "b"], ["c", "d"],
                                                                      ["e"]]


def test_command_line(tmp_path, capsys):
    write(tmp_path, {"pullback/ops/x.py": "from ..compiler import y\n",
                     "pullback/compiler/y.py": ""})
    assert tool.main(["--root", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "  pullback.ops.x -> [pullback.compiler.y]\n" in out
    assert "1 problem(s):" in err
    assert tool.main(["--root", str(tmp_path), "--dot"]) == 1
    out, _ = capsys.readouterr()
    assert out.startswith("digraph pullback {")
    assert '"pullback.ops.x" -> "pullback.compiler.y" [color=red];' in out


def test_syntax_error_names_the_file(tmp_path):
    write(tmp_path, {"pullback/broken.py": "def (:\n"})
    with pytest.raises(SyntaxError) as info:
        tool.check(tmp_path)
    assert "broken.py" in str(info.value.filename)


def test_a_door_importing_another_doors_private_name_is_reported(tmp_path):
    write(tmp_path, {
        "pullback/compiler/__init__.py": "",
        "pullback/compiler/doors.py": "shared = 1\n",
        "pullback/compiler/grad.py": "_helper = 1\n",
        "pullback/compiler/vjp.py": "from .doors import shared\nfrom .grad import _helper\n",
    })
    assert tool.check(tmp_path) == [
        "front door pullback.compiler.vjp imports private _helper of front door "
        "pullback.compiler.grad at src/pullback/compiler/vjp.py:2; move it to "
        "pullback.compiler.doors"]
    assert tool.door_problems in tool.CHECKS


def test_every_package_is_in_pyproject():
    """A package missing from pyproject's list installs nowhere: ``pip install .`` (not
    editable, as the README's first command) then fails at import."""
    root = Path(__file__).resolve().parent.parent
    text = (root / "pyproject.toml").read_text()
    listed = set(re.findall(r'"(pullback[\w.]*)"', text.split("packages = ", 1)[1]
                            .split("]", 1)[0]))
    found = {".".join(p.parent.relative_to(root / "src").parts)
             for p in (root / "src" / "pullback").rglob("__init__.py")}
    found |= {"pullback.transforms"}
    assert found == listed, (sorted(found - listed), sorted(listed - found))
