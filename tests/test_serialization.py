"""pb.save / pb.load: round trips of module and optimizer state dicts and of nested
structures; files with pickles (run nothing), truncated or malformed files are
refused with a LoadError."""

from __future__ import annotations

import io
import json
import math
import os
import pickle
import zipfile
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

import pullback as pb
from pullback.serialization import LoadError


def round_trip(obj):
    buffer = io.BytesIO()
    pb.save(obj, buffer)
    buffer.seek(0)
    return pb.load(buffer)


def test_module_state_dict_round_trip(tmp_path):
    model = pb.nn.Sequential(pb.nn.Linear(3, 4), pb.nn.Tanh(), pb.nn.RNN(4, 2))
    path = tmp_path / "model.pt"
    pb.save(model.state_dict(), path)
    assert sorted(os.listdir(tmp_path)) == ["model.pt"]  # (no .npz appended)
    with zipfile.ZipFile(path) as z:
        assert z.namelist()[0] == "pullback.json"
        assert json.loads(z.read("pullback.json"))["format"] == "pullback"
    loaded = pb.load(str(path))
    assert isinstance(loaded, OrderedDict) and list(loaded) == list(model.state_dict())
    twin = pb.nn.Sequential(pb.nn.Linear(3, 4), pb.nn.Tanh(), pb.nn.RNN(4, 2))
    assert repr(twin.load_state_dict(loaded)) == "<All keys matched successfully>"
    x = pb.randn(5, 2, 3)
    np.testing.assert_array_equal(model(x)[0].detach().numpy(), twin(x)[0].detach().numpy())


def test_optimizer_state_dict_round_trip_continues_training():
    def loss(p):
        return ((p - 3) ** 2).sum()
    w = pb.tensor([1.0, -2.0], requires_grad=True)
    opt = pb.optim.Adam([w], lr=0.1, amsgrad=True)
    for _ in range(3):
        opt.zero_grad()
        loss(w).backward()
        opt.step()
    saved = round_trip({"opt": opt.state_dict(), "w": w.detach()})
    assert saved["opt"]["param_groups"] == opt.state_dict()["param_groups"]
    assert saved["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)  # a tuple again
    assert list(saved["opt"]["state"]) == [0]
    w2 = saved["w"].clone().requires_grad_()
    opt2 = pb.optim.Adam([w2], lr=0.1, amsgrad=True)
    opt2.load_state_dict(saved["opt"])
    for p, o in ((w, opt), (w2, opt2)):
        for _ in range(4):
            o.zero_grad()
            loss(p).backward()
            o.step()
    np.testing.assert_array_equal(w.detach().numpy(), w2.detach().numpy())


def test_nested_values_round_trip():
    shared = pb.tensor([1.0, 2.0])
    obj = {"ints": [1, -2, 10 ** 20], "floats": (0.5, math.inf, -0.0), "nan": math.nan,
           "text": "héllo", "none": None, "flags": [True, False], "z": 1 + 2j,
           3: "int key", 2.5: "float key", None: "none key",
           "scalar": np.float32(1.5), "array": np.arange(6).reshape(2, 3),
           "bools": pb.tensor([True, False]), "half": pb.ones(2, dtype=pb.float16),
           "complex": pb.tensor([1 + 1j]), "param": pb.nn.Parameter(pb.ones(2)),
           "frozen": pb.nn.Parameter(pb.ones(1), requires_grad=False),
           "leaf": pb.ones(1, requires_grad=True), "same": [shared, shared],
           "empty": pb.zeros(0, 3), "zero_d": pb.tensor(2.0), "view": pb.ones(4, 4)[1:, ::2],
           "nested": {"a": [{"b": ()}]}}
    got = round_trip(obj)
    assert got["ints"] == [1, -2, 10 ** 20] and got["floats"] == (0.5, math.inf, -0.0)
    assert math.isnan(got["nan"]) and got["text"] == "héllo" and got["none"] is None
    assert got["flags"] == [True, False] and got["z"] == 1 + 2j
    assert got[3] == "int key" and got[2.5] == "float key" and got[None] == "none key"
    assert got["scalar"] == np.float32(1.5) and got["scalar"].dtype == np.float32
    assert np.array_equal(got["array"], obj["array"]) and isinstance(got["array"], np.ndarray)
    assert isinstance(got["scalar"], np.generic)
    for key in ("bools", "half", "complex", "empty", "zero_d", "view"):
        assert got[key].dtype == obj[key].dtype and got[key].shape == obj[key].shape
        assert np.array_equal(got[key].numpy(), obj[key].numpy())
    assert type(got["param"]) is pb.nn.Parameter and got["param"].requires_grad
    assert type(got["frozen"]) is pb.nn.Parameter and not got["frozen"].requires_grad
    assert type(got["leaf"]) is pb.Tensor and got["leaf"].requires_grad
    assert got["same"][0] is got["same"][1]
    assert got["nested"] == {"a": [{"b": ()}]}


def test_file_objects_and_paths(tmp_path):
    with open(tmp_path / "a.bin", "wb") as fh:
        pb.save([pb.ones(2)], fh)
    with open(tmp_path / "a.bin", "rb") as fh:
        assert pb.load(fh, map_location="cpu", weights_only=True)[0].shape == (2,)
    pb.save({"x": 1}, Path(tmp_path / "b"))
    assert pb.load(Path(tmp_path / "b")) == {"x": 1}


@pytest.mark.parametrize("bad", [object(), {1, 2}, len, {(1, 2): 3}])
def test_unsupported_values_are_refused(bad):
    with pytest.raises(TypeError, match="pb.save"):
        round_trip({"x": bad})


# ------------------------------------------------------------------ hostile files
class Payload:
    """Unpickling this would create a file: the test that nothing ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def test_a_pickle_is_refused_and_never_run(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps({"weight": Payload(marker)}))
    with pytest.raises(LoadError, match="holds a pickle, which pb.load never runs"):
        pb.load(path)
    assert not marker.exists()
    pickle.loads(path.read_bytes())  # (the payload is real: unpickling runs it)
    assert marker.exists()


def test_an_object_array_with_a_pickle_inside_is_refused(tmp_path):
    marker = tmp_path / "ran"
    buffer = io.BytesIO()
    pb.save({"w": np.zeros(2)}, buffer)
    member = io.BytesIO()
    np.save(member, np.array([Payload(marker)], dtype=object), allow_pickle=True)
    evil = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as src, zipfile.ZipFile(evil, "w") as z:
        z.writestr("pullback.json", src.read("pullback.json"))
        z.writestr("a0.npy", member.getvalue())
    evil.seek(0)
    with pytest.raises(LoadError, match="pickled object array, which pb.load never runs"):
        pb.load(evil)
    assert not marker.exists()


def test_a_torch_file_is_refused(tmp_path, torch):
    path = tmp_path / "torch.pt"
    torch.save({"w": torch.ones(2)}, path)
    with pytest.raises(LoadError, match="a torch.save archive: it holds a pickle"):
        pb.load(path)


def saved_bytes():
    buffer = io.BytesIO()
    pb.save({"w": pb.ones(100), "b": [pb.zeros(3)]}, buffer)
    return buffer.getvalue()


def with_header(header):
    data = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(saved_bytes())) as src, zipfile.ZipFile(data, "w") as z:
        for name in src.namelist():
            z.writestr(name, header if name == "pullback.json" else src.read(name))
    return data.getvalue()


@pytest.mark.parametrize("data, message", [
    (saved_bytes()[:len(saved_bytes()) // 2], "a damaged or truncated zip archive"),
    (saved_bytes()[:40], "a damaged or truncated zip archive"),
    (b"", "an empty file"),
    (b"hello, world", "not a zip archive"),
    (b"\x93NUMPY\x01\x00", "a single .npy array"),
    (with_header("{not json"), "its header cannot be read"),
    (with_header('{"format": "other"}'), "has no pullback header"),
    (with_header('{"format": "pullback", "version": 99}'), "format version 99"),
    (with_header('{"format": "pullback", "version": 1, "tree": {"code": "os.system"}}'),
     "unknown entry 'code'"),
    (with_header('{"format": "pullback", "version": 1, "tree": {"tensor": "a9"}}'),
     "names an array 'a9' it does not hold"),
    (with_header('{"format": "pullback", "version": 1, "tree": {"dict": [[[1], 2]]}}'),
     "malformed dict entry"),
])
def test_damaged_files_are_refused(data, message):
    with pytest.raises(LoadError, match=message):
        pb.load(io.BytesIO(data))


def test_a_corrupted_array_is_refused():
    data = bytearray(saved_bytes())
    at = data.index(b"\x93NUMPY") + 200  # inside the first array's data
    data[at] ^= 0xFF
    with pytest.raises(LoadError, match="cannot be read"):
        pb.load(io.BytesIO(bytes(data)))
