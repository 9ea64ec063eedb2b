"""erf, erfc and erfinv on arrays, vectorised with NumPy (no SciPy).

erf and erfc use six near-minimax polynomials (generated at 50 digits by
`scripts/erf_coefficients.py`), picked per element and evaluated by Horner's
rule in one pass over a gathered coefficient table:

    |x| < 1/2        erf(x)  = x * P0(x*x)
    1/2 <= |x| < 1   erfc(|x|) = exp(-x*x) * P1(|x|)
    |x| >= 1         erfc(|x|) = exp(-x*x) * Pk(1/|x|) / |x|   (k = 2..5 by range)

with exp(-x*x) computed from an exactly squared high part of |x|, so erfc keeps
its relative accuracy far into the tail. erfinv starts from Winitzki's closed-form
approximation and takes Halley steps on erf (on erfc in the tails, where 1 - |y|
is exact), converging to a few units in the last place.
"""

from __future__ import annotations

import numpy as np

_PIECES = (  # (centre, half width, coefficients highest power first)
    (0.125, 0.125, (
        -1.2757552949301143e-19, 1.2307154179828511e-17, -1.0890239994332592e-15,
        8.774530700097397e-14, -6.3744178527620835e-12, 4.1270254211564467e-10,
        -2.347229163519518e-08, 1.151603779513705e-06, -4.762336934468491e-05,
        0.0016130716680617086, -0.04364205888669792, 1.0830752376761712
    )),
    (0.75, 0.25, (
        1.0350358504999337e-16, -1.3586639402228971e-15, 1.6922598911156157e-14,
        -2.098775696242263e-13, 2.5256004719947655e-12, -2.9410027836191583e-11,
        3.3068719940073687e-10, -3.580139366634323e-09, 3.719539429927566e-08,
        -3.693562193204623e-07, 3.4885738930506322e-06, -3.114966996062544e-05,
        0.00026090055674831536, -0.002028688468670017, 0.014434883221956143,
        -0.09199317291394885, 0.5069376502931449
    )),
    (0.75, 0.25, (
        -7.246223463392182e-14, 4.954610238494047e-13, -2.131674344670521e-12,
        7.572928239245689e-12, -1.9390299970962835e-11, 5.5773449791326684e-12,
        3.361511282508109e-10, -2.76285383958412e-09, 1.504111074069672e-08,
        -6.190282725037982e-08, 1.698137678366937e-07, 3.42291885694053e-08,
        -4.423080530839256e-06, 3.68053906361951e-05, -0.0001971317783287133,
        0.0006295812459770508, 0.0012092420392931361, -0.042270244446368704, 0.46817959203854037
    )),
    (0.375, 0.125, (
        1.185605633682284e-14, -1.0394393746160895e-13, 4.672788429784681e-13,
        -7.77559583332632e-13, -7.786986124840471e-12, 9.092916465592578e-11,
        -5.169575543800155e-10, 1.268719065618051e-09, 8.113133665384168e-09,
        -1.2191986824682897e-07, 7.486050921529027e-07, -1.1538108984379362e-06,
        -2.838914231333185e-05, 0.00034622662915240903, -0.0014381248079936,
        -0.018948191196769486, 0.530860349316975
    )),
    (0.1875, 0.0625, (
        -9.374674651763294e-16, 3.686822957747018e-15, 3.123349419439349e-14,
        -5.139357365940977e-13, 2.3921265721751074e-12, 1.8027952056758922e-11,
        -3.67561033256304e-10, 1.7813480207113523e-09, 2.0514105703408596e-08,
        -4.02701724925813e-07, 1.2379957954710356e-06, 5.221330575902631e-05,
        -0.0008157912375101985, -0.005993561956300755, 0.5547541131463941
    )),
    (0.0625, 0.0625, (
        4.144724997928343e-15, -2.9283234088107964e-14, -1.0341242724149169e-13,
        1.740108667157827e-12, -3.0580458186898236e-13, -9.403283402174215e-11,
        3.1928353031872537e-10, 5.310045809811047e-09, -4.181998265057185e-08,
        -3.3361991040203575e-07, 5.568155782584886e-06, 2.46120129279952e-05,
        -0.001064115276169939, -0.002178410581095827, 0.5630940451988934
    )),
)


_BOUNDS = (0.5, 1.0, 2.0, 4.0, 8.0)  # where pieces 1, 2, 3, 4, 5 start in |x|


def _exp_neg_square(a):
    """exp(-a*a) for a >= 0, with a*a split into an exact part and a small correction."""
    hi = (a.view(np.int64) & ~np.int64((1 << 27) - 1)).view(np.float64)  # 26 bits: hi*hi exact
    lo = a - hi
    return np.exp(-hi * hi) * np.exp(-lo * (a + hi))


def _pieces(x):
    """(|x|, piece index, polynomial value) for float64 `x`: each element is evaluated
    by its own piece only, with scalar coefficients (the pieces' elements gathered)."""
    a = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = 1.0 / a
        # piece: |x| in [0, 1/2), [1/2, 1), [1, 2), ... [8, inf]
        # C-contiguous whatever a's layout (a may be any view), so that the flat views
        # below are views: `p` is written through `flat_p`
        k = np.zeros_like(a, dtype=np.int8, order="C")
        for bound in _BOUNDS:
            k += a >= bound
        p = np.empty_like(a, order="C")
        flat_k, flat_p = k.reshape(-1), p.reshape(-1)
        for j, (centre, width, coeffs) in enumerate(_PIECES):
            idx = np.flatnonzero(flat_k == j)
            if not idx.size:
                continue
            v = (a if j == 1 else s if j else a * a).reshape(-1)[idx]
            h = (v - centre) * (1.0 / width)  # widths are powers of two: exact
            acc = np.full_like(h, coeffs[0])
            for c in coeffs[1:]:
                acc *= h
                acc += c
            flat_p[idx] = acc
    return a, k, p


def _erfc_abs(a, k, p):
    """erfc(|x|) for the elements with |x| >= 1/2 (others: anything finite)."""
    b = np.minimum(a, 28.0)  # erfc underflows to 0 long before: keeps inf and nan out
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = _exp_neg_square(b) * np.where(k == 1, p, p / b)
    return np.where(np.isnan(a), a, r)


def _arr(x):
    return x if hasattr(x, "dtype") and hasattr(x, "shape") else np.asarray(x)


def _f64(x):
    x = _arr(x)
    return x if x.dtype == np.float64 else x.astype(np.float64)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, element-wise, in x's floating dtype."""
    x = _arr(x)
    xd = _f64(x)
    a, k, p = _pieces(xd)
    r = np.where(k == 0, xd * p, np.copysign(1.0 - _erfc_abs(a, k, p), xd))
    return _out(r, x)


def erfc(x: np.ndarray) -> np.ndarray:
    """The complementary error function 1 - erf(x), accurate in the tail."""
    x = _arr(x)
    xd = _f64(x)
    a, k, p = _pieces(xd)
    c = _erfc_abs(a, k, p)
    r = np.where(k == 0, 1.0 - xd * p, np.where(xd < 0, 2.0 - c, c))
    return _out(r, x)


def erfinv(y: np.ndarray) -> np.ndarray:
    """The inverse of erf on [-1, 1] (+-inf at +-1, nan outside)."""
    y = _arr(y)
    yd = _f64(y)
    a = np.abs(yd)
    tail = a > 0.5
    q = 1.0 - a  # exact for a >= 1/2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Winitzki's approximation (relative error below 2e-3 everywhere).
        w = 0.147
        ln = np.log1p(-a * a)
        b = 2.0 / (np.pi * w) + 0.5 * ln
        x = np.sqrt(np.sqrt(b * b - ln / w) - b)
        x = np.where(a < 1e-3, a * (np.sqrt(np.pi) / 2), x)
        x = np.where(a < 1.0, x, 0.0)
        for _ in range(3):  # Halley on erf(x) - a, written as q - erfc(x) in the tail
            xa, k, p = _pieces(x)
            small = x * p
            c = np.where(k == 0, 1.0 - small, _erfc_abs(xa, k, p))
            f = np.where(tail, q - c, np.where(k == 0, small, 1.0 - c) - a)
            r = f * (np.sqrt(np.pi) / 2) * np.exp(x * x)  # f / f'
            x = x - r / (1.0 + x * r)
    x = np.where(a == 1.0, np.inf, np.where(a > 1.0, np.nan, x))
    return _out(np.copysign(x, yd), y)


def _out(r, like):
    r = _arr(r)
    return r.astype(like.dtype) if like.dtype.kind == "f" and r.dtype != like.dtype else r
