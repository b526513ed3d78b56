"""Learning-rate schedules against torch's, value for value (the chainable forms
make the same float operations), and their state dicts and warnings."""

from __future__ import annotations

import warnings

import pytest

import pullback as pb

SCHEDULERS = {
    "step": lambda S, o: S.StepLR(o, step_size=3, gamma=0.5),
    "multistep": lambda S, o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "exponential": lambda S, o: S.ExponentialLR(o, gamma=0.9),
    "cosine": lambda S, o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "cosine_restart_period": lambda S, o: S.CosineAnnealingLR(o, T_max=3),
    "lambda": lambda S, o: S.LambdaLR(o, lr_lambda=lambda e: 1 / (e + 1)),
    "lambda_per_group": lambda S, o: S.LambdaLR(o, lr_lambda=[lambda e: 0.9 ** e,
                                                              lambda e: e + 1]),
    "multiplicative": lambda S, o: S.MultiplicativeLR(o, lr_lambda=lambda e: 0.95),
    "constant": lambda S, o: S.ConstantLR(o, factor=0.25, total_iters=4),
    "linear": lambda S, o: S.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=7),
    "polynomial": lambda S, o: S.PolynomialLR(o, total_iters=9, power=2.0),
    "warm_restarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=3, eta_min=0.01),
    "warm_restarts_mult": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2),
    "sequential": lambda S, o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.2,
                                                             total_iters=4),
                                                  S.CosineAnnealingLR(o, T_max=6)],
                                              milestones=[4]),
    "sequential_three": lambda S, o: S.SequentialLR(
        o, [S.ConstantLR(o, factor=0.5, total_iters=2), S.ExponentialLR(o, gamma=0.8),
            S.StepLR(o, step_size=3)], milestones=[3, 9]),
    "chained": lambda S, o: S.ChainedScheduler([S.ConstantLR(o, factor=0.3, total_iters=5),
                                                S.ExponentialLR(o, gamma=0.9)]),
    "one_cycle": lambda S, o: S.OneCycleLR(o, max_lr=[0.1, 0.3], total_steps=21,
                                           pct_start=0.25),
    "one_cycle_three_linear": lambda S, o: S.OneCycleLR(o, max_lr=0.2, epochs=3,
                                                        steps_per_epoch=7, three_phase=True,
                                                        anneal_strategy="linear"),
    "cyclic": lambda S, o: S.CyclicLR(o, base_lr=0.1, max_lr=[1.0, 0.5], step_size_up=3),
    "cyclic_triangular2": lambda S, o: S.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.2,
                                                  step_size_up=2, step_size_down=4,
                                                  mode="triangular2", base_momentum=0.7,
                                                  max_momentum=[0.95, 0.9]),
    "cyclic_exp_range": lambda S, o: S.CyclicLR(o, base_lr=0.05, max_lr=0.3, step_size_up=3,
                                                mode="exp_range", gamma=0.9,
                                                cycle_momentum=False),
    "cyclic_scale_fn": lambda S, o: S.CyclicLR(o, base_lr=0.1, max_lr=0.4, step_size_up=1,
                                               step_size_down=2, scale_fn=lambda x: 0.8 ** x,
                                               scale_mode="iterations"),
    "cyclic_scale_fn_cycle": lambda S, o: S.CyclicLR(o, base_lr=0.2, max_lr=0.6,
                                                     step_size_up=2, mode="exp_range",
                                                     scale_fn=lambda c: 1 / c),
}


def lrs(T, make, epochs=20):
    w, v = T.zeros(1, requires_grad=True), T.zeros(1, requires_grad=True)
    opt = T.optim.SGD([{"params": [w]}, {"params": [v], "lr": 0.5}], lr=1.0, momentum=0.9)
    sched = make(T.optim.lr_scheduler, opt)
    out = [sched.get_last_lr()]
    for _ in range(epochs):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr() + [g["lr"] for g in opt.param_groups]
                   + [g["momentum"] for g in opt.param_groups])  # (OneCycleLR cycles it)
    return out, sched


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_lr_sequence_is_torchs(name, torch):
    ours, sched = lrs(pb, SCHEDULERS[name])
    theirs, tsched = lrs(torch, SCHEDULERS[name])
    assert ours == theirs
    for attr in ("last_epoch", "base_lrs"):  # (the combining ones have no base_lrs)
        assert hasattr(sched, attr) == hasattr(tsched, attr)
        assert getattr(sched, attr, None) == getattr(tsched, attr, None)


def test_reduce_on_plateau_is_torchs(torch):
    metrics = [1.0, 0.9, 0.9, 0.95, 0.91, 0.9, 0.89, 0.9, 0.9, 0.9, 0.9, 0.5, 0.6, 0.6, 0.6]
    results = []
    for T in (pb, torch):
        for kw in ({"patience": 2}, {"patience": 1, "cooldown": 2, "factor": 0.5},
                   {"mode": "max", "patience": 0, "threshold_mode": "abs", "threshold": 0.01},
                   {"patience": 0, "min_lr": [0.3, 0.01]}):
            w = T.zeros(1, requires_grad=True)
            opt = T.optim.SGD([{"params": [w]}, {"params": [T.zeros(1, requires_grad=True)]}],
                              lr=1.0)
            sched = T.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
            seq = []
            for m in metrics:
                opt.step()
                sched.step(m)
                seq.append((sched.get_last_lr(), sched.num_bad_epochs, sched.best))
            results.append(seq)
    assert results[:4] == results[4:]


def test_state_dict_round_trip_continues_the_schedule():
    full, _ = lrs(pb, SCHEDULERS["cosine"])
    w = pb.zeros(1, requires_grad=True)
    opt = pb.optim.SGD([{"params": [w]}, {"params": [pb.zeros(1, requires_grad=True)],
                                          "lr": 0.5}], lr=1.0)
    sched = SCHEDULERS["cosine"](pb.optim.lr_scheduler, opt)
    for _ in range(8):
        opt.step()
        sched.step()
    saved_opt, saved = opt.state_dict(), sched.state_dict()
    assert "optimizer" not in saved
    opt2 = pb.optim.SGD([{"params": [w]}, {"params": [pb.zeros(1, requires_grad=True)]}],
                        lr=1.0)
    opt2.load_state_dict(saved_opt)
    sched2 = pb.optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=7, last_epoch=8 - 1)
    sched2.load_state_dict(saved)
    rest = []
    for _ in range(12):
        opt2.step()
        sched2.step()
        rest.append(sched2.get_last_lr() + [g["lr"] for g in opt2.param_groups])
    assert rest == [row[:4] for row in full[9:]]


def scheduler_messages(T):
    opt = T.optim.SGD([T.zeros(1, requires_grad=True)], lr=1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched = T.optim.lr_scheduler.StepLR(opt, 2)
        sched.step()  # before any optimizer.step()
        sched.get_lr()
    texts = [str(c.message) for c in caught]
    for bad in (lambda: T.optim.lr_scheduler.StepLR(object(), 2),
                lambda: T.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.0),
                lambda: T.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="avg"),
                lambda: T.optim.lr_scheduler.LambdaLR(opt, [len, len])):
        try:
            bad()
        except Exception as e:  # noqa: BLE001
            texts.append((type(e).__name__, str(e)))
    return texts


def test_warnings_and_errors_are_torchs(torch):
    assert scheduler_messages(pb) == scheduler_messages(torch)


def _error(call):
    try:
        call()
    except (ValueError, TypeError) as e:
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("make", [
    lambda S, o: S.LinearLR(o, start_factor=0.0),
    lambda S, o: S.ConstantLR(o, factor=1.5),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda S, o: S.OneCycleLR(o, max_lr=0.1),
    lambda S, o: S.OneCycleLR(o, max_lr=0.1, total_steps=5, anneal_strategy="exp"),
    lambda S, o: S.OneCycleLR(o, max_lr=0.1, total_steps=5, pct_start=2),
    lambda S, o: S.SequentialLR(o, [S.StepLR(o, 2)], milestones=[1]),
    lambda S, o: S.SequentialLR(o, [S.StepLR(o, 2), S.ReduceLROnPlateau(o)], milestones=[1]),
    lambda S, o: S.ChainedScheduler([]),
    lambda S, o: S.OneCycleLR(o, max_lr=[0.1, 0.2], total_steps=5),
    lambda S, o: S.CyclicLR(o, base_lr=0.1, max_lr=1.0, mode="cosine"),
    lambda S, o: S.CyclicLR(o, base_lr=[0.1, 0.2], max_lr=1.0),
    lambda S, o: S.CyclicLR(o, base_lr=0.1, max_lr=1.0, max_momentum=(0.9, 0.8)),
])
def test_scheduler_errors_are_torchs(make, torch):
    errors = []
    for T in (pb, torch):
        opt = T.optim.SGD([T.zeros(1, requires_grad=True)], lr=1.0, momentum=0.9)
        errors.append(_error(lambda T=T, opt=opt: make(T.optim.lr_scheduler, opt)))
    assert errors[0] is not None and errors[0] == errors[1]


@pytest.mark.parametrize("make", [
    lambda S, o: S.OneCycleLR(o, max_lr=0.05, total_steps=10),
    lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.05, step_size_up=3),
])
def test_cycles_adams_beta1_as_torch(make, torch):
    seqs = []
    for T in (pb, torch):
        opt = T.optim.Adam([T.zeros(1, requires_grad=True)], lr=1.0, betas=(0.9, 0.99))
        sched = make(T.optim.lr_scheduler, opt)
        seq = []
        for _ in range(9):
            opt.step()
            sched.step()
            seq.append((opt.param_groups[0]["lr"], opt.param_groups[0]["betas"]))
        seqs.append(seq)
    assert seqs[0] == seqs[1]


def test_cyclic_needs_momentum_or_beta1_as_torch(torch):
    errors = []
    for T in (pb, torch):
        opt = T.optim.Adagrad([T.zeros(1, requires_grad=True)])
        errors.append(_error(lambda T=T, opt=opt: T.optim.lr_scheduler.CyclicLR(opt, 0.1, 1.0)))
        T.optim.lr_scheduler.CyclicLR(opt, 0.1, 1.0, cycle_momentum=False)
    assert errors[0] is not None and errors[0] == errors[1]


class Halving:
    """A scale_fn with state: saved in a CyclicLR's state dict (a lambda is not)."""

    def __init__(self):
        self.base = 0.5

    def __call__(self, x):
        return self.base ** x


def test_cyclic_state_dict_round_trip_continues_the_schedule():
    full, _ = lrs(pb, SCHEDULERS["cyclic_triangular2"])
    w, v = pb.zeros(1, requires_grad=True), pb.zeros(1, requires_grad=True)
    opt = pb.optim.SGD([{"params": [w]}, {"params": [v], "lr": 0.5}], lr=1.0, momentum=0.9)
    sched = SCHEDULERS["cyclic_triangular2"](pb.optim.lr_scheduler, opt)
    for _ in range(7):
        opt.step()
        sched.step()
    saved_opt, saved = opt.state_dict(), sched.state_dict()
    assert saved["_scale_fn_custom"] is None
    opt2 = pb.optim.SGD([{"params": [w]}, {"params": [v]}], lr=1.0, momentum=0.9)
    opt2.load_state_dict(saved_opt)
    sched2 = pb.optim.lr_scheduler.CyclicLR(opt2, base_lr=0.3, max_lr=0.4, last_epoch=6)
    sched2.load_state_dict(saved)
    rest = []
    for _ in range(13):
        opt2.step()
        sched2.step()
        rest.append(sched2.get_last_lr() + [g["lr"] for g in opt2.param_groups]
                    + [g["momentum"] for g in opt2.param_groups])
    assert rest == full[8:]
    fn = Halving()
    sched3 = pb.optim.lr_scheduler.CyclicLR(opt2, 0.1, 0.2, scale_fn=fn)
    fn.base = 0.25
    state = sched3.state_dict()
    assert state["_scale_fn_custom"] == {"base": 0.25}
    fn.base = 0.5
    sched3.load_state_dict(state)
    assert fn.base == 0.25
