"""The names task: the data handling, the five models (against PyTorch where it has the same
layers, and that each learns), sampling, `rg.jit` of the whole step, and the command line
(`retrograd train --task names`, `retrograd sample`) on a small slice of the names."""

import json

import numpy as np
import pytest
import torch

import retrograd as rg
from retrograd import optim
from retrograd.cli import main
from retrograd.models import names as M
from retrograd.nn import functional as F

NAMES = M.read_items(M.default_data())


@pytest.fixture(autouse=True, scope="module")
def one_blas_thread():
    """Small products: BLAS threads only wait on each other (many times slower on a busy
    machine), as the names run itself knows."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # slower, not wrong
        yield
        return
    with threadpool_limits(1, user_api="blas"):
        yield


@pytest.fixture(scope="module")
def small():
    items = NAMES[::200]  # 161 names
    vocab = M.Vocabulary.of(items)
    context = max(map(len, items)) + 1
    X, Y = M.encode(items, vocab, context)
    return items, vocab, context, X, Y


@pytest.fixture
def small_file(tmp_path):
    path = tmp_path / "names.txt"
    path.write_text("\n".join(NAMES[::100]) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------- data

def test_shipped_names_and_split():
    lines = M.default_data().read_text(encoding="utf-8").split()
    assert len(NAMES) == len(lines) > 32000 and NAMES[:2] == ["emma", "olivia"]
    train, test = M.split(NAMES)
    assert len(test) == len(NAMES) // 10 and len(train) == len(NAMES) - len(test)
    assert sorted(train + test) == sorted(NAMES)
    assert M.split(NAMES) == (train, test)  # fixed by the seed


def test_encode_shifts_targets_by_one():
    vocab = M.Vocabulary.of(["ab", "ca"])
    assert len(vocab) == 4 and vocab.encode("cab") == [3, 1, 2]
    X, Y = M.encode(["ab", "c"], vocab, 4)
    np.testing.assert_array_equal(X, [[0, 1, 2, 0], [0, 3, 0, 0]])
    np.testing.assert_array_equal(Y, [[1, 2, 0, -1], [3, 0, -1, -1]])
    assert vocab.decode([3, 1]) == "ca"


@pytest.mark.parametrize("content, message", [
    (b"", "0 non-blank lines"),
    (b"\n  \n", "0 non-blank lines"),
    (b"aaa\naa\na\n", "single distinct character"),
    (b"emma\n\xff\xfeolivia\n", "not UTF-8"),
    (b"emma\n", "1 non-blank line;"),
])
def test_bad_data_is_refused(tmp_path, content, message):
    path = tmp_path / "data.txt"
    path.write_bytes(content)
    with pytest.raises(M.DataError, match=message):
        M.read_items(path)


# ---------------------------------------------------------------- models

def _torch_transformer(model: M.Transformer, idx: np.ndarray) -> torch.Tensor:
    """The same forward pass written with torch from the model's weights."""
    w = {k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()}
    TF = torch.nn.functional
    T = idx.shape[1]
    x = TF.embedding(torch.tensor(idx), w["wte.weight"]) + w["wpe.weight"][:T]
    for i in range(len(model.blocks)):
        p = f"blocks.{i}."
        h = TF.layer_norm(x, (x.shape[-1],), w[p + "ln1.weight"], w[p + "ln1.bias"])
        B, T, C = h.shape
        q, k, v = TF.linear(h, w[p + "attn.qkv.weight"], w[p + "attn.qkv.bias"]).split(C, 2)
        q, k, v = (t.view(B, T, 4, C // 4).transpose(1, 2) for t in (q, k, v))
        y = TF.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(B, T, C)
        x = x + TF.linear(y, w[p + "attn.proj.weight"], w[p + "attn.proj.bias"])
        h = TF.layer_norm(x, (C,), w[p + "ln2.weight"], w[p + "ln2.bias"])
        h = TF.gelu(TF.linear(h, w[p + "fc.weight"], w[p + "fc.bias"]), approximate="tanh")
        x = x + TF.linear(h, w[p + "fc2.weight"], w[p + "fc2.bias"])
    x = TF.layer_norm(x, (x.shape[-1],), w["ln_f.weight"], w["ln_f.bias"])
    return TF.linear(x, w["head.weight"])


def test_transformer_matches_torch_and_is_causal(small):
    items, vocab, context, X, Y = small
    rg.manual_seed(0)
    model = M.build("transformer", len(vocab), context)
    got = model(rg.tensor(X[:8])).numpy()
    want = _torch_transformer(model, X[:8]).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    changed = X[:8].copy()
    changed[:, 5:] = 1  # later tokens must not change earlier logits
    np.testing.assert_array_equal(model(rg.tensor(changed)).numpy()[:, :5], got[:, :5])


@pytest.mark.parametrize("name", ["bigram", "mlp", "rnn", "gru"])
def test_models_are_causal(small, name):
    items, vocab, context, X, Y = small
    rg.manual_seed(0)
    model = M.build(name, len(vocab), context)
    got = model(rg.tensor(X[:4])).numpy()
    assert got.shape == (4, context, len(vocab))
    changed = X[:4].copy()
    changed[:, 4:] = 2
    np.testing.assert_allclose(model(rg.tensor(changed)).numpy()[:, :4], got[:, :4], atol=1e-6)


def _losses(name, small, steps, use_jit, lr=1e-2):
    items, vocab, context, X, Y = small
    rg.manual_seed(0)
    model = M.build(name, len(vocab), context)
    opt = optim.AdamW(model.parameters(), lr=lr)
    V = len(vocab)

    def step(x, y):
        loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1), ignore_index=-1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    f = rg.jit(step) if use_jit else step
    rng = np.random.default_rng(0)
    out = []
    for _ in range(steps):
        ix = rng.integers(0, len(X), 32)
        out.append(float(f(rg.tensor(X[ix]), rg.tensor(Y[ix])).item()))
    return out, model


@pytest.mark.parametrize("name", ["bigram", "mlp", "rnn", "gru", "transformer"])
def test_each_model_learns_and_jit_agrees(small, name):
    eager, _ = _losses(name, small, 25, use_jit=False)
    jitted, _ = _losses(name, small, 25, use_jit=True)
    start, end = np.mean(eager[:3]), np.mean(eager[-3:])
    assert end < start - 0.2, (name, eager)
    assert eager[0] == pytest.approx(np.log(len(small[1])), abs=1.5)  # near uniform at first
    np.testing.assert_allclose(jitted, eager, rtol=2e-5, atol=2e-5)


def test_sampling_is_reproducible(small):
    items, vocab, context, X, Y = small
    _, model = _losses("gru", small, 5, use_jit=False)
    a = M.sample(model, 10, context, seed=3)
    assert a == M.sample(model, 10, context, seed=3)
    assert a != M.sample(model, 10, context, seed=4)
    assert all(0 not in s and 0 < len(s) < context for s in a)
    greedy = M.sample(model, 3, context, top_k=1, seed=0)
    assert greedy[0] == greedy[1] == greedy[2]  # top-1 leaves no choice


def test_sampling_follows_the_model_distribution():
    """A bigram whose table gives 'a' probability p and the end 1 - p: names 'a'*k, never
    empty, so k - 1 is geometric: P(k = 1) = 1 - p, P(k = 2) = p (1 - p)."""
    vocab_size, p = 3, 0.3
    model = M.Bigram(vocab_size, 8)
    table = np.full((vocab_size, vocab_size), -30.0, dtype=np.float32)
    table[:, 0], table[:, 1] = np.log(1 - p), np.log(p)
    model.logits.weight.data[...] = table
    lengths = np.array([len(s) for s in M.sample(model, 4000, 8, seed=0)])
    assert lengths.min() == 1
    assert abs(np.mean(lengths == 1) - (1 - p)) < 0.03
    assert abs(np.mean(lengths == 2) - p * (1 - p)) < 0.03


# ---------------------------------------------------------------- command line

def test_train_and_sample_from_the_command_line(tmp_path, small_file, capsys):
    out = tmp_path / "run"
    assert main(["train", "--task", "names", "--model", "bigram", "--data", str(small_file),
                 "--steps", "30", "--lr", "0.1", "--batch-size", "32", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "test loss" in printed.out and "samples:" in printed.out
    assert "loss" in printed.err  # the progress bar
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["task"] == "names" and metrics["status"] == "finished"
    assert metrics["steps_done"] == 30 and len(metrics["samples"]) == 20
    assert metrics["checkpoint_test_loss"] == pytest.approx(metrics["test_loss"])
    assert metrics["history"][0]["test_loss"] > metrics["test_loss"]
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    graph = (out / metrics["files"]["graph"]).read_text()
    assert "logits.weight" in graph and "cross_entropy" in graph and "loss" in graph
    # the test loss from the checkpoint, by hand: nats per character over the test split
    items = M.read_items(small_file)
    vocab = M.Vocabulary(metrics["vocabulary"])
    _, test = M.split(items)
    X, Y = M.encode(test, vocab, metrics["context"])
    model = M.build("bigram", len(vocab), metrics["context"])
    model.load_state_dict(rg.load(out / "model.npz"))
    logp = torch.log_softmax(torch.tensor(model(rg.tensor(X)).numpy()), -1)
    y = torch.tensor(Y)
    nll = -logp.gather(-1, y.clamp(min=0)[..., None])[..., 0][y >= 0].mean()
    assert float(nll) == pytest.approx(metrics["test_loss"], rel=1e-5)
    # the saved run samples the names the run printed (same seed), and others with another
    assert main(["sample", "--run", str(out)]) == 0
    assert capsys.readouterr().out.split() == metrics["samples"]
    assert main(["sample", "--run", str(out), "--n", "5", "--seed", "7", "--temperature",
                 "0.5", "--top-k", "3"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 5


@pytest.mark.parametrize("content", [b"", b"zzz\nzz\n", b"\xff\xfe\xfa\n\xc3\n", None])
def test_bad_data_exits_2_and_writes_nothing(tmp_path, capsys, content):
    data = tmp_path / "data.txt"
    if content is not None:
        data.write_bytes(content)
    out = tmp_path / "run"
    status = main(["train", "--task", "names", "--data", str(data), "--steps", "2",
                   "--out", str(out)])
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1 and "--data" in err
    assert not out.exists()


@pytest.mark.parametrize("argv, message", [
    (["train", "--task", "names", "--epochs", "3"], "--epochs"),
    (["train", "--steps", "3"], "--steps"),
    (["train", "--task", "names", "--model", "cnn"], "unknown model"),
    (["train", "--task", "names", "--steps", "0"], "positive"),
    (["sample"], "--run"),
    (["sample", "--run", "nowhere"], "no such run folder"),
    (["sample", "--run", ".", "--temperature", "0"], "positive"),
    (["sample", "--run", ".", "--top-k", "-1"], "positive"),
])
def test_bad_arguments_exit_2(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_bigram_reaches_the_counting_solution(small):
    """Trained on the whole slice at once, the bigram's loss comes down to the entropy of
    the pair counts (the maximum-likelihood bigram, computed by counting)."""
    items, vocab, context, X, Y = small
    rg.manual_seed(0)
    model = M.build("bigram", len(vocab), context)
    opt = optim.AdamW(model.parameters(), lr=0.2, weight_decay=0.0)
    step = rg.jit(lambda x, y: _step(model, opt, x, y))
    x, y = rg.tensor(X), rg.tensor(Y)
    for _ in range(400):
        loss = float(step(x, y).item())
    real = Y >= 0
    counts = np.zeros((len(vocab), len(vocab)))
    np.add.at(counts, (X[real], Y[real]), 1)
    p = counts / counts.sum(1, keepdims=True)
    floor = -np.log(p[X[real], Y[real]]).mean()
    assert floor <= loss < floor + 0.02


def _step(model, opt, x, y):
    loss = M.loss(model, x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss
