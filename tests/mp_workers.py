"""Worker functions for tests/test_multiprocessing.py, in a module of their own so that a
spawned process imports only what it needs (not torch, unless a torch worker runs)."""

import importlib

import numpy as np

DATA = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)


def train(lib_name, model, seed):
    lib = importlib.import_module(lib_name)
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    x = lib.tensor(DATA * (seed + 1))
    for _ in range(4):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()


def write_through_queue(q, done):
    t = q.get()
    t.data[...] += 1.0
    t.mul_(2.0)
    done.put(bool(t.is_shared()))


def fill(i, t, value):
    t.data[i] = value + i


def fail(i):
    if i == 1:
        raise ValueError("worker one fails")
