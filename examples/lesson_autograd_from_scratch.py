"""The lesson "Un autograd desde cero" (Deep learning a secas, lesson 6), redone with retrograd.

Parts 1 to 4: the graph of L = (a*b + c)*f, the local derivatives, the
topological order, every value and gradient, the numerical gradient check,
x*x + x (a value used three times), ReLU, and one neuron compared with PyTorch.
The lines marked "lesson:" print exactly what the lesson's own cells print.

    python examples/lesson_autograd_from_scratch.py [--draw graph.svg]
"""

from __future__ import annotations

import argparse

import retrograd.viz as viz
from retrograd.value import Value


def part1_graph() -> None:
    print("== Part 1: the computation graph")
    a, b, c = Value(2.0), Value(3.0), Value(-4.0)
    e = a * b  # Python calls a.__mul__(b)
    d = e + c
    # the lesson prints the children (micrograd's `_prev`, a set) in order:
    # viz.operands gives them in the order the op took them
    print("e =", e.data, " op:", e._op, " hijos:", [h.data for h in viz.operands(e)])
    print("d =", d.data, " op:", d._op, " hijos:", [h.data for h in viz.operands(d)])
    f = Value(-2.0)
    L = d * f
    print(f"forward: a={a.data} * b={b.data} -> e={e.data}; + c={c.data} -> d={d.data}; "
          f"* f={f.data} -> L={L.data}")


def part2_local_derivatives() -> None:
    print("== Part 2: local derivatives")
    a, b = Value(2.0), Value(3.0)
    e = a * b
    e.grad = 1.0  # dL/de, suppose it is 1
    e._backward()  # hands it to a and b, micrograd's way
    print("a.grad =", a.grad, "  b.grad =", b.grad)
    # the chain rule for L = (a*b + c)*f: what comes from above times the local derivative
    c, f = Value(-4.0), Value(-2.0)
    a, b = Value(2.0), Value(3.0)
    e = a * b
    L = (e + c) * f
    L.backward()
    print(f"dL/da = dL/de * de/da = ({e.grad}) * {b.data} = {e.grad * b.data}")


def backward(raiz: Value) -> list[Value]:
    """The lesson's `backward`: a topological order, dL/dL = 1, then each node's
    `_backward` from the output to the leaves. The order comes from
    `viz.topological_order`, the lesson's `visitar` without recursion."""
    orden = viz.topological_order(raiz)
    raiz.grad = 1.0
    for v in reversed(orden):
        v._backward()
    return orden


def part3_backward(draw: str | None) -> None:
    print("== Part 3: backward, in order")
    a, b, c, f = Value(2.0), Value(3.0), Value(-4.0), Value(-2.0)
    L = (a * b + c) * f
    orden = backward(L)
    print("orden:", " ".join(str(v._op or v.data) for v in orden))
    by_loop = [v.grad for v in orden]

    # the full example, with retrograd's own backward()
    a, b = Value(2.0), Value(3.0)
    c, f = Value(-4.0), Value(-2.0)
    e = a * b  # 6
    d = e + c  # 2
    L = d * f  # -4
    L.backward()
    for nombre, v in [("L", L), ("d", d), ("f", f), ("e", e),
                      ("c", c), ("a", a), ("b", b)]:
        print(f"{nombre}: valor={v.data:5}  grad={v.grad:5}")
    same = by_loop == [v.grad for v in (a, b, e, c, d, f, L)]
    print("the lesson's loop over the order gives the same gradients:", same)
    print("step by step:")
    print(f"  dL/dd = 1 * f = {L.grad * f.data}, dL/df = 1 * d = {L.grad * d.data}")
    print(f"  dL/de = dL/dc = {d.grad} * 1 = {d.grad * 1.0}")
    print(f"  dL/da = {e.grad} * b = {e.grad * b.data}, dL/db = {e.grad} * a = {e.grad * a.data}")
    if draw:
        names = {a: "a", b: "b", c: "c", d: "d", e: "e", f: "f", L: "L"}
        written, message = viz.render(L, draw, labels=names)
        print(f"graph drawn to {written}" + (f" ({message})" if message else ""))


def part4_checks() -> None:
    print("== Part 4: is it right? checking it")

    def L_de(a0: float) -> float:  # L as a plain function of a
        return ((Value(a0) * Value(3.0) + Value(-4.0)) * Value(-2.0)).data

    a = Value(2.0)
    L = (a * Value(3.0) + Value(-4.0)) * Value(-2.0)
    L.backward()
    h = 1e-4  # a small step
    pendiente = (L_de(2.0 + h) - L_de(2.0)) / h  # how much L changed
    print("autograd: dL/da =", a.grad)
    print("numérico: dL/da =", round(pendiente, 6))

    x = Value(3.0)
    y = x * x + x  # x is used three times
    y.backward()
    print("x*x + x en x=3: dy/dx =", x.grad, "(2x+1 = 7)")

    # the trap: a _backward that assigns (=) instead of adding (+=)
    def mul_eq(s: Value, o: Value) -> Value:
        out = Value(s.data * o.data, (s, o), "*")

        def _backward() -> None:
            s.grad = o.data * out.grad  # = overwrites the other contribution
            o.grad = s.data * out.grad
        out._backward = _backward
        return out

    def add_eq(s: Value, o: Value) -> Value:
        out = Value(s.data + o.data, (s, o), "+")

        def _backward() -> None:
            s.grad = out.grad
            o.grad = out.grad
        out._backward = _backward
        return out

    x = Value(3.0)
    y = add_eq(mul_eq(x, x), x)
    y.backward()
    print("with = instead of +=: dy/dx =", x.grad)

    # a new op, ReLU: a forward and a local derivative (the lesson's function) ...
    def relu(v: Value) -> Value:
        out = Value(max(0.0, v.data), (v,), "relu")  # forward

        def _backward() -> None:  # local derivative: 1 if it let the value through, else 0
            v.grad += (out.data > 0) * out.grad
        out._backward = _backward
        return out

    for z0 in (2.5, -1.0):
        z = Value(z0)
        y = relu(z)
        y.backward()
        print(f"z = {z0:4}  relu = {y.data}  dy/dz = {z.grad}")
    # ... and retrograd's own Value.relu() agrees
    for z0 in (2.5, -1.0):
        z = Value(z0)
        y = z.relu()
        y.backward()
        print(f"z = {z0:4}  Value.relu() = {y.data}  dy/dz = {z.grad}")

    # the acid test: a neuron, against torch.autograd
    x1, x2 = Value(1.0), Value(-2.0)
    w1, w2, b = Value(0.5), Value(-1.5), Value(0.25)
    y = (w1 * x1 + w2 * x2 + b).relu()
    y.backward()
    print("nuestro:", [v.grad for v in (w1, w2, b, x1, x2)])
    try:
        import torch
    except ImportError:
        print("torch  : skipped (PyTorch is not installed)")
        print("y:", y.data)
    else:
        T = torch.tensor([1.0, -2.0, 0.5, -1.5, 0.25], requires_grad=True)
        tx1, tx2, tw1, tw2, tb = T
        yt = torch.relu(tw1 * tx1 + tw2 * tx2 + tb)
        yt.backward()
        print("torch  :", T.grad[[2, 3, 4, 0, 1]].tolist())
        print("y:", y.data, "y torch:", yt.item())

    # gradients accumulate: a second backward() adds (so the training loop zeroes them)
    a = Value(2.0)
    L = (a * Value(3.0) + Value(-4.0)) * Value(-2.0)
    L.backward()
    L.backward()
    print("backward twice: dL/da =", a.grad)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draw", metavar="FILE", help="also draw L's graph (.svg, .png, .dot)")
    args = parser.parse_args()
    part1_graph()
    part2_local_derivatives()
    part3_backward(args.draw)
    part4_checks()


if __name__ == "__main__":
    main()
