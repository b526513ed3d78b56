"""Optimizers step for step against torch's (20 steps, every option combination that
changes the arithmetic), parameter groups, gradients present on some steps only,
mixed dtypes and complex parameters, state dicts, and torch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb

from .test_module_api import same_error

R = np.random.default_rng(0)
SHAPES = [(3, 4), (4,), (2, 2, 2)]
INIT = [R.standard_normal(s).astype(np.float32) for s in SHAPES]
COEF = [np.abs(R.standard_normal(s)).astype(np.float32) + 0.1 for s in SHAPES]

OPTIMIZERS = {
    "sgd": lambda O, ps: O.SGD(ps, lr=0.05),
    "sgd_momentum_dampening_wd": lambda O, ps: O.SGD(ps, lr=0.05, momentum=0.9, dampening=0.1,
                                                     weight_decay=0.01),
    "sgd_nesterov": lambda O, ps: O.SGD(ps, lr=0.05, momentum=0.9, nesterov=True),
    "sgd_maximize": lambda O, ps: O.SGD(ps, lr=0.01, momentum=0.5, maximize=True),
    "adam": lambda O, ps: O.Adam(ps, lr=0.05),
    "adam_amsgrad_wd": lambda O, ps: O.Adam(ps, lr=0.05, amsgrad=True, weight_decay=0.1),
    "adam_maximize_betas": lambda O, ps: O.Adam(ps, lr=0.05, maximize=True, betas=(0.8, 0.99),
                                                eps=1e-6),
    "adam_decoupled": lambda O, ps: O.Adam(ps, lr=0.05, weight_decay=0.1,
                                           decoupled_weight_decay=True),
    "adamw": lambda O, ps: O.AdamW(ps, lr=0.05),
    "adamw_amsgrad": lambda O, ps: O.AdamW(ps, lr=0.05, amsgrad=True, weight_decay=0.3),
    "rmsprop": lambda O, ps: O.RMSprop(ps, lr=0.01),
    "rmsprop_centered_momentum_wd": lambda O, ps: O.RMSprop(ps, lr=0.01, centered=True,
                                                            momentum=0.9, weight_decay=0.01),
    "rmsprop_momentum_maximize": lambda O, ps: O.RMSprop(ps, lr=0.01, momentum=0.5,
                                                         maximize=True, alpha=0.9),
    "nadam": lambda O, ps: O.NAdam(ps, lr=0.05),
    "nadam_wd_decay": lambda O, ps: O.NAdam(ps, lr=0.05, weight_decay=0.1, momentum_decay=0.01,
                                            betas=(0.8, 0.99)),
    "nadam_decoupled_maximize": lambda O, ps: O.NAdam(ps, lr=0.01, weight_decay=0.1,
                                                      decoupled_weight_decay=True,
                                                      maximize=True),
    "radam": lambda O, ps: O.RAdam(ps, lr=0.05),
    "radam_wd_betas": lambda O, ps: O.RAdam(ps, lr=0.05, weight_decay=0.1, betas=(0.8, 0.9)),
    "radam_decoupled_maximize": lambda O, ps: O.RAdam(ps, lr=0.01, weight_decay=0.1,
                                                      decoupled_weight_decay=True,
                                                      maximize=True),
    "adagrad": lambda O, ps: O.Adagrad(ps, lr=0.1),
    "adagrad_everything": lambda O, ps: O.Adagrad(ps, lr=0.1, lr_decay=0.01, weight_decay=0.1,
                                                  initial_accumulator_value=0.5, eps=1e-8),
    "adadelta": lambda O, ps: O.Adadelta(ps),
    "adadelta_everything": lambda O, ps: O.Adadelta(ps, lr=0.5, rho=0.8, eps=1e-4,
                                                    weight_decay=0.1, maximize=True),
    "adamax": lambda O, ps: O.Adamax(ps, lr=0.05),
    "adamax_everything": lambda O, ps: O.Adamax(ps, lr=0.05, betas=(0.8, 0.99), eps=1e-6,
                                                weight_decay=0.1, maximize=True),
    "asgd": lambda O, ps: O.ASGD(ps, lr=0.05),
    "asgd_averaging": lambda O, ps: O.ASGD(ps, lr=0.05, lambd=0.01, alpha=0.5, t0=5,
                                           weight_decay=0.1),
    "asgd_maximize": lambda O, ps: O.ASGD(ps, lr=0.01, t0=0, maximize=True),
    "rprop": lambda O, ps: O.Rprop(ps, lr=0.05),
    "rprop_everything": lambda O, ps: O.Rprop(ps, lr=0.05, etas=(0.3, 1.7),
                                              step_sizes=(0.01, 0.1), maximize=True),
}


def loss_of(T, ps, active=None):
    terms = [(T.tensor(c) * p * p + p.tanh() * 0.5).sum()
             for k, (p, c) in enumerate(zip(ps, COEF)) if active is None or k in active]
    return sum(terms)


def trajectory(T, make, steps=20, active=lambda t: None, init=INIT, dtype=None):
    ps = [T.tensor(a.copy(), requires_grad=True, dtype=dtype) for a in init]
    opt = make(T.optim, ps)
    out = []
    for t in range(steps):
        opt.zero_grad()
        loss_of(T, ps, active(t)).backward()
        opt.step()
        out.append([p.detach().numpy().copy() for p in ps])
    return out, opt, ps


def assert_same_trajectory(a, b, rtol=2e-5, atol=1e-6):
    for t, (xs, ys) in enumerate(zip(a, b)):
        for x, y in zip(xs, ys):
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=f"step {t + 1}")


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_trajectory_matches_torch(name, torch):
    ours, opt, ps = trajectory(pb, OPTIMIZERS[name])
    theirs, topt, _ = trajectory(torch, OPTIMIZERS[name])
    assert_same_trajectory(ours, theirs)
    assert all(p.is_leaf and p.requires_grad and p.grad_fn is None for p in ps)
    assert [p._version for p in ps] == [20, 20, 20]  # one in-place write per step


@pytest.mark.parametrize("name", ["sgd_momentum_dampening_wd", "adam_amsgrad_wd",
                                  "rmsprop_centered_momentum_wd", "adagrad_everything",
                                  "adadelta_everything", "adamax_everything", "asgd_averaging",
                                  "rprop_everything"])
def test_gradients_on_some_steps_only_match_torch(name, torch):
    """Parameters without a gradient are skipped (their state and step count too), so
    Adam's bias corrections differ per parameter, as in torch."""
    def active(t):
        return {0, 2} if t % 3 else {1}
    ours, _, _ = trajectory(pb, OPTIMIZERS[name], active=active)
    theirs, _, _ = trajectory(torch, OPTIMIZERS[name], active=active)
    assert_same_trajectory(ours, theirs)


@pytest.mark.parametrize("name", ["sgd_momentum_dampening_wd", "adam_amsgrad_wd", "rmsprop",
                                  "adagrad", "adadelta", "adamax", "asgd_averaging", "rprop"])
def test_float64_and_complex_parameters_match_torch(name, torch):
    ours, _, _ = trajectory(pb, OPTIMIZERS[name], dtype=pb.float64)
    theirs, _, _ = trajectory(torch, OPTIMIZERS[name], dtype=torch.float64)
    assert_same_trajectory(ours, theirs, rtol=1e-12, atol=1e-12)
    z = [(a + 1j * c).astype(np.complex64) for a, c in zip(INIT, COEF)]
    results = []
    for T in (pb, torch):
        ps = [T.tensor(a.copy(), requires_grad=True) for a in z]
        opt = OPTIMIZERS[name](T.optim, ps)
        for _ in range(5):
            opt.zero_grad()
            sum((p * p.conj()).real.sum() for p in ps).backward()
            opt.step()
        results.append([p.detach().numpy() for p in ps])
    assert_same_trajectory([results[0]], [results[1]])


@pytest.mark.parametrize("name", ["asgd_averaging", "adamax", "rprop", "adadelta"])
def test_a_scheduled_rate_takes_effect_as_in_torch(name, torch):
    """ASGD's rate follows ``lr`` a step late (it keeps ``eta`` between steps)."""
    results = []
    for T in (pb, torch):
        ps = [T.tensor(a.copy(), requires_grad=True) for a in INIT]
        opt = OPTIMIZERS[name](T.optim, ps)
        sched = T.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
        out = []
        for _ in range(10):
            opt.zero_grad()
            loss_of(T, ps).backward()
            opt.step()
            sched.step()
            out.append([p.detach().numpy().copy() for p in ps])
        results.append(out)
    assert_same_trajectory(*results)


def test_param_groups_and_add_param_group_match_torch(torch):
    def run(T):
        ps = [T.tensor(a.copy(), requires_grad=True) for a in INIT]
        opt = T.optim.Adam([{"params": [ps[0]], "lr": 0.1, "amsgrad": True},
                            {"params": [ps[1]]}], lr=0.01, betas=(0.5, 0.9))
        out = []
        for t in range(12):
            if t == 5:
                opt.add_param_group({"params": ps[2], "weight_decay": 0.5})
            opt.zero_grad()
            loss_of(T, ps).backward()
            opt.step()
            out.append([p.detach().numpy().copy() for p in ps])
        return out, opt
    (ours, opt), (theirs, topt) = run(pb), run(torch)
    assert_same_trajectory(ours, theirs)
    assert repr(opt) == repr(topt)
    assert opt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]


def test_mixed_dtypes_in_one_group(torch):
    init = [INIT[0].astype(np.float64), INIT[1], INIT[2].astype(np.float64)]
    results = []
    for T in (pb, torch):
        ps = [T.tensor(a.copy(), requires_grad=True) for a in init]
        opt = T.optim.Adam(ps, lr=0.05)
        for _ in range(10):
            opt.zero_grad()
            sum((p * p).sum() + p.tanh().sum() for p in ps).backward()
            opt.step()
        results.append([p.detach().numpy() for p in ps])
    assert [a.dtype for a in results[0]] == [a.dtype for a in results[1]]
    assert_same_trajectory([results[0]], [results[1]])


def state_as_numpy(sd):
    return {"state": {k: {n: np.asarray(v.detach().numpy() if hasattr(v, "detach") else v)
                          for n, v in s.items()} for k, s in sd["state"].items()},
            "param_groups": sd["param_groups"]}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_state_dict_is_torchs(name, torch):
    _, opt, _ = trajectory(pb, OPTIMIZERS[name], steps=3)
    _, topt, _ = trajectory(torch, OPTIMIZERS[name], steps=3)
    ours, theirs = state_as_numpy(opt.state_dict()), state_as_numpy(topt.state_dict())
    assert ours["param_groups"] == theirs["param_groups"]
    assert ours["state"].keys() == theirs["state"].keys()
    for k in theirs["state"]:
        assert list(ours["state"][k]) == list(theirs["state"][k])
        for n, v in theirs["state"][k].items():
            assert ours["state"][k][n].dtype == v.dtype and ours["state"][k][n].shape == v.shape
            np.testing.assert_allclose(ours["state"][k][n], v, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["sgd_nesterov", "adam_amsgrad_wd", "rmsprop_centered_momentum_wd",
                                  "adagrad_everything", "adadelta_everything", "adamax_everything",
                                  "asgd_averaging", "rprop_everything"])
def test_state_dict_round_trip_continues_the_same_trajectory(name, torch):
    """Training 10 steps, then a new optimizer loaded from the first's state dict
    (taken from torch's, converted), for 10 more: torch's 20 steps."""
    theirs, _, _ = trajectory(torch, OPTIMIZERS[name])
    _, topt, tps = trajectory(torch, OPTIMIZERS[name], steps=10)
    sd = topt.state_dict()
    state = {k: {n: pb.tensor(v.numpy()) for n, v in s.items()} for k, s in sd["state"].items()}
    ps = [pb.tensor(p.detach().numpy().copy(), requires_grad=True) for p in tps]
    opt = OPTIMIZERS[name](pb.optim, ps)
    opt.load_state_dict({"state": state, "param_groups": sd["param_groups"]})
    ours = []
    for _ in range(10):
        opt.zero_grad()
        loss_of(pb, ps).backward()
        opt.step()
        ours.append([p.detach().numpy().copy() for p in ps])
    assert_same_trajectory(ours, theirs[10:])
    again = pb.optim.SGD(ps)  # a pullback state dict loads into the same kind of optimizer
    with pytest.raises(ValueError, match="different number of parameter groups"):
        again.load_state_dict({"state": {}, "param_groups": []})


def test_replaced_parameter_arrays_are_laid_out_again(torch):
    """p.data = ... (and module.double()) after the optimizer was made: it keeps
    updating the parameter, with its state, as torch's does."""
    results = []
    for T in (pb, torch):
        ps = [T.tensor(a.copy(), requires_grad=True) for a in INIT]
        opt = T.optim.Adam(ps, lr=0.05)
        for t in range(8):
            if t == 3:
                ps[1].data = ps[1].data * 2
            opt.zero_grad()
            loss_of(T, ps).backward()
            opt.step()
        results.append([p.detach().numpy() for p in ps])
    assert_same_trajectory([results[0]], [results[1]])
    model = pb.nn.Linear(2, 1)
    opt = pb.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(pb.ones(1, 2)).sum().backward()
    opt.step()
    model.double()
    model(pb.ones(1, 2, dtype=pb.float64)).sum().backward()
    opt.step()
    assert model.weight.dtype == pb.float64
    assert opt.state[model.weight]["momentum_buffer"].dtype == pb.float64


def test_leaves_versions_no_grad_and_closure():
    w = pb.tensor([1.0, 2.0], requires_grad=True)
    opt = pb.optim.SGD([w], lr=0.5)
    y = w * w  # saves w: a step before its backward is an in-place change, as in torch
    with pb.enable_grad():
        loss = opt.step(closure=lambda: (w * 3).sum().backward() or pb.tensor(7.0))
    assert loss.item() == 7.0 and w.is_leaf and w.grad_fn is None and w._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    assert w.detach().numpy().tolist() == [-0.5, 0.5]


def test_zero_grad_as_torch(torch):
    results = []
    for T in (pb, torch):
        w = T.tensor([1.0], requires_grad=True)
        opt = T.optim.SGD([w])
        (w * 2).sum().backward()
        opt.zero_grad(set_to_none=False)
        results.append(w.grad.numpy().tolist())
        opt.zero_grad()
        results.append(w.grad)
    assert results[:2] == results[2:] == [[0.0], None]


ERRORS = {
    "empty": lambda T: T.optim.SGD([], lr=0.1),
    "non_leaf": lambda T: T.optim.Adam([T.ones(2, requires_grad=True) * 2]),
    "not_a_tensor": lambda T: T.optim.SGD([1.0], lr=0.1),
    "a_tensor": lambda T: T.optim.SGD(T.ones(2, requires_grad=True), lr=0.1),
    "a_set": lambda T: T.optim.SGD([{"params": {T.ones(2, requires_grad=True)}}], lr=0.1),
    "two_groups": lambda T: _two_groups(T),
    "names_mixed": lambda T: T.optim.SGD([("a", T.ones(1, requires_grad=True)),
                                          T.ones(1, requires_grad=True)]),
    "lr": lambda T: T.optim.SGD([T.ones(1, requires_grad=True)], lr=-1),
    "momentum": lambda T: T.optim.SGD([T.ones(1, requires_grad=True)], momentum=-1),
    "nesterov": lambda T: T.optim.SGD([T.ones(1, requires_grad=True)], nesterov=True),
    "beta": lambda T: T.optim.Adam([T.ones(1, requires_grad=True)], betas=(0.9, 1.0)),
    "eps": lambda T: T.optim.AdamW([T.ones(1, requires_grad=True)], eps=-1e-8),
    "wd": lambda T: T.optim.Adam([T.ones(1, requires_grad=True)], weight_decay=-1),
    "alpha": lambda T: T.optim.RMSprop([T.ones(1, requires_grad=True)], alpha=-0.1),
    "lr_decay": lambda T: T.optim.Adagrad([T.ones(1, requires_grad=True)], lr_decay=-1),
    "accumulator": lambda T: T.optim.Adagrad([T.ones(1, requires_grad=True)],
                                             initial_accumulator_value=-1),
    "rho": lambda T: T.optim.Adadelta([T.ones(1, requires_grad=True)], rho=1.5),
    "adamax_beta": lambda T: T.optim.Adamax([T.ones(1, requires_grad=True)], betas=(1.0, 0.9)),
    "asgd_wd": lambda T: T.optim.ASGD([T.ones(1, requires_grad=True)], weight_decay=-1),
    "etas": lambda T: T.optim.Rprop([T.ones(1, requires_grad=True)], etas=(0.5, 0.9)),
    "load_sizes": lambda T: T.optim.SGD([T.ones(1, requires_grad=True)]).load_state_dict(
        {"state": {}, "param_groups": [{"params": [0, 1], "lr": 0.1}]}),
    # parameters in containers (docs/reliability.md): torch takes Tensors and groups only
    "nested_list": lambda T: T.optim.SGD([[T.ones(1, requires_grad=True)]], lr=0.1),
    "dict_of_params": lambda T: T.optim.SGD({"a": T.ones(1, requires_grad=True)}, lr=0.1),
    "nested_in_group": lambda T: T.optim.Adam(
        [{"params": [[T.ones(1, requires_grad=True)]]}], lr=0.1),
}


def _two_groups(T):
    w = T.ones(1, requires_grad=True)
    T.optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_are_torchs(name, torch):
    same_error(ERRORS[name], torch)


def test_duplicate_parameters_warn_as_torch(torch):
    messages = []
    for T in (pb, torch):
        w = T.ones(1, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            T.optim.SGD([w, w], lr=0.1)
        messages.append([str(c.message) for c in caught])
    assert messages[0] == messages[1] and messages[0]


def test_named_parameters_are_kept_in_groups(torch):
    model = pb.nn.Linear(2, 1)
    opt = pb.optim.SGD(model.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["weight", "bias"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]
