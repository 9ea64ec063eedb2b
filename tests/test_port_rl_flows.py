"""Reinforcement-learning and probabilistic-model programs ported from PyTorch (PPO, SAC,
Glow, Gaussian-process regression), run under torch and retrograd with the same weights
and inputs, plus the minimal cases of the gaps the port found: `Tensor(w.size())` /
`FloatTensor(w.size())` as a shape (DDPG's fanin_init)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import retrograd as rg

LIBS = (torch, rg)


def _np(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x.detach().numpy())


def _close(a, b, rtol=1e-7, atol=1e-9):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, rtol, atol)
        return
    if isinstance(a, float):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)
        return
    x, y = _np(a), _np(b)
    assert x.shape == y.shape and x.dtype == y.dtype
    np.testing.assert_allclose(y, x, rtol=rtol, atol=atol)


def _copy_weights(tmod, rmod):
    rmod.load_state_dict({k: rg.tensor(v.detach().numpy()) for k, v in tmod.state_dict().items()})


# ---------------------------------------------------------------- Tensor(size) is a shape

@pytest.mark.parametrize("ctor", ["Tensor", "FloatTensor", "DoubleTensor", "LongTensor"])
@pytest.mark.parametrize("shape", [(4, 3), (5,), ()])
def test_legacy_constructor_takes_a_size(ctor, shape):
    tw, rw = torch.zeros(shape), rg.zeros(shape)
    for size_t, size_r in [(tw.size(), rw.size()), (tw.shape, rw.shape),
                           (torch.Size(shape), rg.Size(shape))]:
        t, r = getattr(torch, ctor)(size_t), getattr(rg, ctor)(size_r)
        assert tuple(r.shape) == tuple(t.shape)
        assert str(r.dtype) == str(t.dtype).replace("torch.", "")


def test_tensor_of_a_size_is_still_its_values():
    for f in ("tensor", "as_tensor", "asarray"):
        t, r = getattr(torch, f)(torch.zeros(2, 5).shape), getattr(rg, f)(rg.zeros(2, 5).shape)
        assert r.tolist() == t.tolist() == [2, 5] and str(r.dtype) == "int64"


def test_ddpg_fanin_init():
    """DDPG's fanin_init: `torch.Tensor(size).uniform_(-v, v)` on a weight's size()."""
    for L in LIBS:
        fc = L.nn.Linear(6, 4)
        size = fc.weight.size()
        v = 1.0 / np.sqrt(size[0])
        w = L.Tensor(size).uniform_(-v, v)
        assert tuple(w.shape) == (4, 6) and float(w.abs().max()) <= v
        with L.no_grad():
            fc.weight.copy_(w)


# ---------------------------------------------------------------- whole programs

def _ppo(L, W, data, continuous):
    nn, D = L.nn, L.distributions

    class Agent(nn.Module):
        def __init__(self):
            super().__init__()
            self.critic = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
            self.actor = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
            self.actor_logstd = nn.Parameter(L.zeros(1, 2, dtype=L.float64))

        def get_action_and_value(self, x, action):
            if continuous:
                mean = self.actor(x)
                probs = D.Normal(mean, L.exp(self.actor_logstd.expand_as(mean)))
                return probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)
            probs = D.Categorical(logits=self.actor(x))
            return probs.log_prob(action), probs.entropy(), self.critic(x)

    agent = Agent().double()
    if W is not None:
        agent.load_state_dict({k: L.tensor(v) for k, v in W.items()})
    opt = L.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
    obs = L.tensor(data["obs"])
    actions = L.tensor(data["act_c"] if continuous else data["act_d"])
    rewards, dones = L.tensor(data["rew"]), L.tensor(data["done"])
    with L.no_grad():
        logprobs, _, values = agent.get_action_and_value(obs.reshape(-1, 4),
                                                         actions.reshape((24,) + actions.shape[2:]))
        logprobs, values = logprobs.reshape(8, 3), values.reshape(8, 3)
        advantages = L.zeros_like(rewards)
        lastgaelam = 0
        for t in reversed(range(8)):
            nonterminal = 1.0 - dones[t + 1] if t < 7 else L.ones(3, dtype=L.float64)
            nextvalues = values[t + 1] if t < 7 else values[t]
            delta = rewards[t] + 0.99 * nextvalues * nonterminal - values[t]
            advantages[t] = lastgaelam = delta + 0.99 * 0.95 * nonterminal * lastgaelam
        returns = advantages + values
    b_obs, b_logp = obs.reshape(-1, 4), logprobs.reshape(-1)
    b_act = actions.reshape((24,) + actions.shape[2:])
    b_adv, b_ret, b_val = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
    out = [advantages]
    for mb in data["perm"]:
        idx = L.as_tensor(mb)
        newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[idx], b_act[idx])
        logratio = newlogprob - b_logp[idx]
        ratio = logratio.exp()
        mb_adv = (b_adv[idx] - b_adv[idx].mean()) / (b_adv[idx].std() + 1e-8)
        pg_loss = L.max(-mb_adv * ratio, -mb_adv * L.clamp(ratio, 0.8, 1.2)).mean()
        newvalue = newvalue.view(-1)
        v_clipped = b_val[idx] + L.clamp(newvalue - b_val[idx], -0.2, 0.2)
        v_loss = 0.5 * L.max((newvalue - b_ret[idx]) ** 2, (v_clipped - b_ret[idx]) ** 2).mean()
        loss = pg_loss - 0.01 * entropy.mean() + 0.5 * v_loss
        opt.zero_grad()
        loss.backward()
        gn = nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
        opt.step()
        out += [loss, gn]
    return out + list(agent.parameters())


@pytest.mark.parametrize("continuous", [False, True])
def test_ppo_program(continuous):
    """CleanRL-style PPO: GAE in a reversed loop, advantage normalisation, clipped ratio and
    value loss, entropy bonus, clip_grad_norm_, Adam; Categorical and Normal policies."""
    rng = np.random.default_rng(0)
    data = {"obs": rng.normal(size=(8, 3, 4)), "act_d": rng.integers(0, 2, (8, 3)),
            "act_c": rng.normal(size=(8, 3, 2)), "rew": rng.normal(size=(8, 3)),
            "done": (rng.random((8, 3)) < 0.2) * 1.0,
            "perm": [p[s:s + 12] for p in (rng.permutation(24) for _ in range(2)) for s in (0, 12)]}
    W = {k: rng.normal(size=s) * 0.3 for k, s in [
        ("critic.0.weight", (16, 4)), ("critic.0.bias", (16,)), ("critic.2.weight", (1, 16)),
        ("critic.2.bias", (1,)), ("actor.0.weight", (16, 4)), ("actor.0.bias", (16,)),
        ("actor.2.weight", (2, 16)), ("actor.2.bias", (2,)), ("actor_logstd", (1, 2))]}
    _close(_ppo(torch, W, data, continuous), _ppo(rg, W, data, continuous), rtol=1e-6, atol=1e-9)


# ---------------------------------------------------------------- cholesky of a nan matrix

@pytest.mark.parametrize("n, pos, val", [(2, (1, 0), np.nan), (3, (2, 2), np.nan),
                                         (3, (0, 0), np.nan), (40, (5, 3), np.nan),
                                         (40, (39, 39), np.nan), (40, (5, 3), np.inf)])
@pytest.mark.parametrize("batched", [False, True])
def test_cholesky_nan_input_is_not_positive_definite(n, pos, val, batched):
    """A GP whose hyperparameters diverged gives a nan kernel matrix: torch's cholesky
    raises LinAlgError (LAPACK's nan-pivot check) and cholesky_ex reports the order."""
    a = np.eye(n) * 2
    a[pos] = val
    if batched:
        a = np.stack([np.eye(n), a])
    infos = []
    for L in LIBS:
        with pytest.raises(L.linalg.LinAlgError, match="not positive-definite"):
            L.linalg.cholesky(L.tensor(a))
        with pytest.raises(RuntimeError):
            L.linalg.cholesky(L.tensor(a))
        infos.append(L.linalg.cholesky_ex(L.tensor(a)).info.tolist())
    assert infos[0] == infos[1]


def test_gp_jitter_loop_gives_up_on_nan_kernel():
    """The usual jitter loop: retry with more jitter on LinAlgError; a nan kernel fails
    every try under both libraries instead of returning a nan factor."""
    K = np.full((3, 3), 0.5) + np.eye(3)
    K[1, 2] = K[2, 1] = np.nan
    for L in LIBS:
        Kt, fails = L.tensor(K), 0
        for jitter in (1e-6, 1e-4, 1e-2):
            try:
                L.linalg.cholesky(Kt + jitter * L.eye(3, dtype=Kt.dtype))
            except L.linalg.LinAlgError:
                fails += 1
        assert fails == 3


# ---------------------------------------------------------------- small dtype/error gaps

@pytest.mark.parametrize("default", ["float32", "float64"])
def test_clip_grad_norm_without_grads_is_default_dtype(default):
    old_t, old_r = torch.get_default_dtype(), rg.get_default_dtype()
    try:
        torch.set_default_dtype(getattr(torch, default))
        rg.set_default_dtype(getattr(rg, default))
        for params in ([], "nograd"):
            got = []
            for L in LIBS:
                ps = [L.zeros(2, requires_grad=True)] if params == "nograd" else []
                got.append(L.nn.utils.clip_grad_norm_(ps, 1.0))
            assert str(got[1].dtype) == str(got[0].dtype).replace("torch.", "")
            assert float(got[1]) == float(got[0]) == 0.0
    finally:
        torch.set_default_dtype(old_t)
        rg.set_default_dtype(old_r)


@pytest.mark.parametrize("make", [
    lambda L: L.distributions.Normal(L.zeros(3), L.ones(2)),
    lambda L: L.distributions.Uniform(L.zeros(3), L.ones(2)),
    lambda L: L.distributions.Gamma(L.ones(3), L.ones(2)),
    lambda L: L.distributions.Beta(L.ones(3), L.ones(2))])
def test_distribution_parameters_that_do_not_broadcast_raise_runtime_error(make):
    for L in LIBS:
        with pytest.raises(RuntimeError):
            make(L)


# ---------------------------------------------------------------- KL with x log x at 0

@pytest.mark.parametrize("low, high", [(0.5, 1.0), (0.0, 0.5), (0.0, 1.0), (0.2, 0.7)])
@pytest.mark.parametrize("q", [
    lambda D, L: D.Beta(L.tensor([2.0]), L.tensor([3.0])),
    lambda D, L: D.Gamma(L.tensor([2.0]), L.tensor([1.5])),
    lambda D, L: D.Pareto(L.tensor([0.5]) * 0 + 1e-3, L.tensor([2.0]))])
def test_kl_uniform_at_the_support_edge(low, high, q):
    """x log x at x = 0 is 0 (torch's xlogy), not nan: KL(Uniform(0.5, 1) || Beta) was nan."""
    out = []
    for L in LIBS:
        D = L.distributions
        lo = L.tensor([low], requires_grad=True)
        hi = L.tensor([high], requires_grad=True)
        kl = D.kl_divergence(D.Uniform(lo, hi), q(D, L))
        out.append([kl] + list(L.autograd.grad(kl.sum(), [lo, hi])))
    for a, b in zip(*out):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-6, atol=1e-9)


def test_cauchy_moments_are_constants():
    for L in LIBS:
        D = L.distributions
        loc = L.tensor([0.0, 1.0], requires_grad=True)
        scale = L.tensor([1.0, 2.0], requires_grad=True)
        for d, names in [(D.Cauchy(loc, scale), ("mean", "variance")),
                         (D.HalfCauchy(scale), ("mean", "variance", "mode"))]:
            for name in names:
                assert not getattr(d, name).requires_grad, (L.__name__, type(d).__name__, name)
    t = torch.distributions.Cauchy(torch.zeros(2), torch.ones(2))
    r = rg.distributions.Cauchy(rg.zeros(2), rg.ones(2))
    np.testing.assert_array_equal(r.mean.numpy(), t.mean.numpy())
    np.testing.assert_array_equal(r.variance.numpy(), t.variance.numpy())


# ---------------------------------------------------------------- sigmoid clamps, cdf checks

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_transform_clamps_at_tiny_as_torch(dtype):
    """torch's _clipped_sigmoid and SigmoidTransform.inv clamp below at finfo.tiny (not
    eps): a logit-space flow gives the same values and log-densities near 0."""
    x = np.array([100.0, -100.0, 0.0, -30.0])
    y = np.array([0.0, 1.0, 1e-30, 0.5])
    out = []
    for L in LIBS:
        T = L.distributions.transforms
        dt = getattr(L, dtype)
        xs = L.tensor(x, dtype=dt, requires_grad=True)
        loc = L.tensor([0.0], dtype=dt, requires_grad=True)
        td = L.distributions.TransformedDistribution(
            L.distributions.Normal(loc, L.tensor([1.0], dtype=dt)), [T.SigmoidTransform()])
        lp = td.log_prob(L.tensor(y[[0, 2, 3]], dtype=dt))
        sb = T.StickBreakingTransform()(xs[None, :3] * 0.5)
        out.append([T.SigmoidTransform()(xs), T.SigmoidTransform().inv(L.tensor(y, dtype=dt)), lp,
                    sb, L.autograd.grad(lp.sum(), loc)[0]])
    for a, b in zip(*out):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-5, atol=0)


def test_transformed_cdf_checks_the_base_space():
    """LogNormal/Weibull (transformed distributions in torch) take cdf(0) = 0; a value whose
    pre-image is outside the base support still raises ValueError."""
    for L in LIBS:
        D = L.distributions
        for d in (D.LogNormal(L.tensor(0.0), L.tensor(1.0)),
                  D.Weibull(L.tensor(1.5), L.tensor(2.0)),
                  D.TransformedDistribution(D.Normal(L.tensor(0.0), L.tensor(1.0)),
                                            [D.ExpTransform()])):
            assert d.cdf(L.tensor([0.0])).tolist() == [0.0]
        with pytest.raises(ValueError):
            D.LogNormal(L.tensor(0.0), L.tensor(1.0)).cdf(L.tensor([-1.0]))
        u = D.TransformedDistribution(D.Uniform(L.tensor(0.0), L.tensor(1.0)), [D.ExpTransform()])
        with pytest.raises(ValueError):
            u.cdf(L.tensor([0.5]))  # log 0.5 < 0: outside Uniform(0, 1)
    t = torch.distributions.LogNormal(torch.tensor([0.0, 1.0]), torch.tensor(1.0))
    r = rg.distributions.LogNormal(rg.tensor([0.0, 1.0]), rg.tensor(1.0))
    np.testing.assert_allclose(r.cdf(rg.tensor([0.0, 2.0])).numpy(),
                               t.cdf(torch.tensor([0.0, 2.0])).numpy(), rtol=1e-6)


def _sac(L, W, data):
    nn, D, F = L.nn, L.distributions, L.nn.functional

    class Actor(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(5, 16)
            self.mean = nn.Linear(16, 2)
            self.logstd = nn.Linear(16, 2)

        def forward(self, x, eps):
            h = F.relu(self.fc(x))
            mean, log_std = self.mean(h), L.tanh(self.logstd(h))
            std = (-5 + 0.5 * 7 * (log_std + 1)).exp()
            base = D.Independent(D.Normal(mean, std), 1)
            dist = D.TransformedDistribution(base, [D.transforms.TanhTransform(cache_size=1)])
            a = dist.transforms[0](mean + std * eps)
            return a, dist.log_prob(a).unsqueeze(-1)

    def q_net():
        return nn.Sequential(nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 1))

    actor, q1, q2 = Actor().double(), q_net().double(), q_net().double()
    for m, k in ((actor, "actor"), (q1, "q1"), (q2, "q2")):
        m.load_state_dict({n: L.tensor(v) for n, v in W[k].items()})
    q1_t, q2_t = q_net().double(), q_net().double()
    q1_t.load_state_dict(q1.state_dict())
    q2_t.load_state_dict(q2.state_dict())
    q_opt = L.optim.Adam(list(q1.parameters()) + list(q2.parameters()), lr=1e-3)
    a_opt = L.optim.Adam(actor.parameters(), lr=3e-4)
    log_alpha = L.zeros(1, dtype=L.float64, requires_grad=True)
    al_opt = L.optim.Adam([log_alpha], lr=1e-3)
    out = []
    for step in range(2):
        obs, nobs, act, eps = (L.tensor(data[k][step]) for k in ("obs", "nobs", "act", "eps"))
        rew, done = L.tensor(data["rew"][step]), L.tensor(data["done"][step])
        alpha = log_alpha.exp().item()
        with L.no_grad():
            na, nlogp = actor(nobs, eps)
            qn = L.min(q1_t(L.cat([nobs, na], 1)), q2_t(L.cat([nobs, na], 1))) - alpha * nlogp
            target = rew + (1 - done) * 0.99 * qn.view(-1)
        q_loss = F.mse_loss(q1(L.cat([obs, act], 1)).view(-1), target) + \
            F.mse_loss(q2(L.cat([obs, act], 1)).view(-1), target)
        q_opt.zero_grad()
        q_loss.backward()
        q_opt.step()
        pi, logp = actor(obs, eps)
        qpi = L.min(q1(L.cat([obs, pi], 1)), q2(L.cat([obs, pi], 1)))
        a_loss = (alpha * logp - qpi).mean()
        a_opt.zero_grad()
        a_loss.backward()
        a_opt.step()
        al_loss = (-log_alpha.exp() * (logp.detach() - 2.0)).mean()
        al_opt.zero_grad()
        al_loss.backward()
        al_opt.step()
        with L.no_grad():
            for p, tp in zip(q1.parameters(), q1_t.parameters()):
                tp.mul_(1 - 0.005).add_(p, alpha=0.005)
            L._foreach_lerp_(list(q2_t.parameters()), list(q2.parameters()), 0.005)
        out += [q_loss, a_loss, al_loss, logp]
    return out + list(q1_t.parameters()) + list(q2_t.parameters()) + list(actor.parameters())


def test_sac_program():
    """CleanRL-style SAC: tanh-squashed Independent Normal policy (TransformedDistribution
    with a cached TanhTransform), twin Q targets, entropy temperature, Polyak updates with
    mul_/add_ and _foreach_lerp_ under no_grad."""
    rng = np.random.default_rng(1)
    data = {k: rng.normal(size=(2, 6, d)) for k, d in (("obs", 5), ("nobs", 5), ("eps", 2))}
    data["act"] = np.tanh(rng.normal(size=(2, 6, 2)))
    data["rew"], data["done"] = rng.normal(size=(2, 6)), (rng.random((2, 6)) < 0.3) * 1.0
    torch.manual_seed(0)
    tnn = torch.nn
    W = {"actor": {"fc.weight": (16, 5), "fc.bias": (16,), "mean.weight": (2, 16),
                   "mean.bias": (2,), "logstd.weight": (2, 16), "logstd.bias": (2,)},
         "q1": None, "q2": None}
    W["actor"] = {k: rng.normal(size=s) * 0.3 for k, s in W["actor"].items()}
    for k in ("q1", "q2"):
        q = tnn.Sequential(tnn.Linear(7, 16), tnn.ReLU(), tnn.Linear(16, 1)).double()
        W[k] = {n: v.numpy() for n, v in q.state_dict().items()}
    _close(_sac(torch, W, data), _sac(rg, W, data), rtol=1e-6, atol=1e-9)


def _gp(L, X, y, Xs):
    log_ls = L.tensor([0.1, -0.2], dtype=L.float64, requires_grad=True)
    log_var = L.tensor(0.3, dtype=L.float64, requires_grad=True)
    log_noise = L.tensor(-1.0, dtype=L.float64, requires_grad=True)
    opt = L.optim.Adam([log_ls, log_var, log_noise], lr=0.05)

    def kern(a, b):
        return log_var.exp() * L.exp(-0.5 * L.cdist(a / log_ls.exp(), b / log_ls.exp()) ** 2)

    out = []
    for _ in range(3):
        K = kern(X, X) + (log_noise.exp() + 1e-6) * L.eye(len(X), dtype=L.float64)
        C = L.linalg.cholesky(K)
        alpha = L.cholesky_solve(y.unsqueeze(-1), C)
        nll = 0.5 * (y.unsqueeze(-1) * alpha).sum() + L.log(L.diagonal(C)).sum()
        mvn = L.distributions.MultivariateNormal(L.zeros(len(X), dtype=L.float64), scale_tril=C)
        loss = nll - 0.01 * mvn.log_prob(y)
        opt.zero_grad()
        loss.backward()
        out += [loss, log_ls.grad.clone(), log_var.grad.clone(), log_noise.grad.clone()]
        opt.step()
    with L.no_grad():
        Ks = kern(X, Xs)
        v = L.linalg.solve_triangular(C, Ks, upper=False)
        mu = Ks.T @ L.cholesky_solve(y.unsqueeze(-1), C)
        var = kern(Xs, Xs).diagonal() - (v ** 2).sum(0)
    return out + [mu, var]


def test_gp_regression_program():
    """Exact GP regression: RBF kernel from cdist, cholesky / cholesky_solve marginal
    likelihood with its gradients, a few Adam steps, predictive mean and variance."""
    rng = np.random.default_rng(5)
    X, y, Xs = rng.normal(size=(10, 2)), rng.normal(size=10), rng.normal(size=(4, 2))
    _close(_gp(torch, *map(torch.tensor, (X, y, Xs))), _gp(rg, *map(rg.tensor, (X, y, Xs))),
           rtol=1e-6, atol=1e-9)


def _glow_step(L, w0, x):
    """Invertible 1x1 convolution with LU-decomposed weights plus actnorm with
    data-dependent initialisation, a log-likelihood step, and the inverse pass."""
    F = L.nn.functional
    q, _ = L.linalg.qr(L.tensor(w0))
    P, Lw, U = L.linalg.lu(q)
    s = L.diag(U)
    w_l = Lw.clone().requires_grad_(True)
    w_u = L.triu(U, 1).clone().requires_grad_(True)
    w_s = L.log(L.abs(s)).requires_grad_(True)
    u_mask = L.triu(L.ones_like(U), 1)
    x = L.tensor(x)
    with L.no_grad():
        flat = x.permute(1, 0, 2, 3).reshape(x.shape[1], -1)
        loc = -flat.mean(1).view(1, -1, 1, 1)
        scale = (1 / (flat.std(1) + 1e-6)).view(1, -1, 1, 1)
    loc.requires_grad_(True)
    scale.requires_grad_(True)
    h = scale * (x + loc)
    weight = P @ (w_l * u_mask.T + L.eye(len(s), dtype=L.float64)) @ \
        (w_u * u_mask + L.diag(L.sign(s) * L.exp(w_s)))
    z = F.conv2d(h, weight.unsqueeze(2).unsqueeze(3))
    hw = x.shape[2] * x.shape[3]
    logdet = hw * L.log(L.abs(scale)).sum() + hw * w_s.sum()
    logdet2 = hw * L.log(L.abs(scale)).sum() + hw * L.linalg.slogdet(weight)[1]
    logp = (-0.5 * z ** 2 - 0.5 * np.log(2 * np.pi)).flatten(1).sum(1) + logdet
    loss = -logp.mean()
    loss.backward()
    with L.no_grad():
        back = F.conv2d(z, weight.inverse().unsqueeze(2).unsqueeze(3)) / scale - loc
    return [loss, logdet2 - logdet, w_l.grad, w_u.grad, w_s.grad, loc.grad, scale.grad, back - x]


def test_glow_lu_invconv_program():
    rng = np.random.default_rng(4)
    w0, x = rng.normal(size=(4, 4)), rng.random((3, 4, 3, 3))
    _close(_glow_step(torch, w0, x), _glow_step(rg, w0, x), rtol=1e-6, atol=1e-9)
