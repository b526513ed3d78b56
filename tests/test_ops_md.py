"""docs/ops.md is the op table as tools/gen_ops_md.py renders it: regenerated here and
compared, so the page cannot go stale."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool():
    spec = importlib.util.spec_from_file_location("gen_ops_md", ROOT / "tools" / "gen_ops_md.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ops_md_matches_the_op_table() -> None:
    tool = _tool()
    page = (ROOT / "docs" / "ops.md").read_text()
    fresh = tool.render()
    if page != fresh:
        old, new = page.splitlines(), fresh.splitlines()
        first = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b),
                     min(len(old), len(new)))
        raise AssertionError(
            f"docs/ops.md is stale (first difference at line {first + 1}); regenerate it "
            f"with `{tool.COMMAND}` and commit it\n  file: "
            f"{old[first] if first < len(old) else '<end>'}\n  now:  "
            f"{new[first] if first < len(new) else '<end>'}")


def test_every_op_and_function_has_a_row() -> None:
    from pullback.ops import OPS

    rows = _tool().rows()
    names = {r[0] for family in rows.values() for r in family}
    assert set(OPS) <= names
    assert "?" not in rows, rows.get("?")
    fourier = {r[0]: r for r in rows["fourier"]}
    assert fourier["fft_c2c"][4] == "FftC2CBackward0" and fourier["fft_c2c"][5] == "yes"
    assert "pb.fft.rfft" in fourier["fft.rfft"][2] and "np.fft.rfft" in fourier["fft.rfft"][3]
