"""Print the polynomial tables of `retrograd/ops/_special.py` (needs mpmath).

Each piece is a near-minimax polynomial (mpmath.chebyfit at 50 digits) in
`h = (v - centre) / half_width` over one interval of a variable `v`:
  piece 0: erf(x) / x in v = x*x on [0, 1/4]         (|x| < 1/2)
  piece 1: erfc(x) * exp(x*x) in v = x on [1/2, 1]
  pieces 2-5: x * erfc(x) * exp(x*x) in v = 1/x on [1/2, 1], [1/4, 1/2], [1/8, 1/4], [0, 1/8]
Run: python scripts/erf_coefficients.py > /tmp/tables.txt
"""

import mpmath

mpmath.mp.dps = 50


def erf_ratio(u):
    x = mpmath.sqrt(u)
    return mpmath.erf(x) / x if x else 2 / mpmath.sqrt(mpmath.pi)


def erfcx(x):
    return mpmath.erfc(x) * mpmath.exp(x * x)


def x_erfcx(s):
    return 1 / mpmath.sqrt(mpmath.pi) if s == 0 else erfcx(1 / s) / s


PIECES = [(erf_ratio, 0, 0.25, 11), (erfcx, 0.5, 1, 16), (x_erfcx, 0.5, 1, 18),
          (x_erfcx, 0.25, 0.5, 16), (x_erfcx, 0.125, 0.25, 14), (x_erfcx, 0, 0.125, 14)]


def main() -> None:
    print("_PIECES = (  # (centre, half width, coefficients highest power first)")
    for f, lo, hi, deg in PIECES:
        c = (mpmath.mpf(lo) + hi) / 2
        w = (mpmath.mpf(hi) - lo) / 2
        poly, err = mpmath.chebyfit(lambda h, f=f, c=c, w=w: f(c + w * h), [-1, 1], deg + 1,
                                    error=True)
        assert err < 1e-19, (lo, hi, err)
        coeffs = ", ".join(repr(float(p)) for p in poly)
        print(f"    ({float(c)!r}, {float(w)!r}, ({coeffs})),")
    print(")")


if __name__ == "__main__":
    main()
