"""Seed 001's compliant contact law: the closed forms of a spring-damper normal force.

The law (seed 001 eq. (1)), penetration delta >= 0 (m), its rate delta' (m/s, > 0 going in):

    Kelvin-Voigt:    F_N = D delta' + K delta                       (K N/m, D N s/m)
    Hunt-Crossley:   F_N = K delta^n (1 + c delta'),  clamped >= 0  (n = 1: K N/m; n = 1.5: N/m^1.5)

A mass m (a body's effective mass along the normal, ``compliant_stage``) under a constant
force F along the normal (positive: pressing in; gravity, the drive, the other contacts) obeys
(seed 001 eq. (3))

    m delta'' + D delta' + K delta = F.

**The closed form (derived; seed 001 eq. (4) differs).**  With r = D / (2 m), w0^2 = K / m,
q = w0^2 - r^2, the static penetration d_s = F / K and x = delta - d_s,

    x(t)      = x0 C(t) + (v0 + r x0) S(t)
    delta'(t) = v0 C(t) - (w0^2 x0 + r v0) S(t)

where C = e^{-rt} cos(wd t), S = e^{-rt} sin(wd t) / wd with wd = sqrt(q) (under-damped),
cosh / sinh with sqrt(-q) (over-damped), C = e^{-rt}, S = t e^{-rt} (critical).  From delta(0)
= 0 the print's eq. (4) reads  delta = e^{-rt} [(v0 + r F/K) / wd sin wd t - F/K cos wd t] + F/K:
its sine term has + r F / K where the solution has **- r F / K** (substitute t -> 0 in the
derivative: the print gives delta'(0) = v0 + 2 r F / K, not v0).  The code evaluates C and S
with the exponential folded in (no overflow when r t is large) and, where |q| t^2 is small, by
their series (no cancellation near critical damping).

**Separation and the two readings of eq. (10).**  From delta = 0 at v0 with F = 0 the linear
law returns to delta = 0 after pi / wd (seed 001 eq. (6) prints pi sqrt(m / K), the undamped
half period; the damped one is longer) at the speed v0 exp(-zeta pi / sqrt(1 - zeta^2)),
zeta = D / (2 sqrt(K m)), so the coefficient of restitution e fixes

    zeta = -ln e / sqrt(pi^2 + ln^2 e),   D = 2 zeta sqrt(K m)           (seed 001 eq. (10))

(the print's eq. (10) has lost the minus sign: ln e < 0 and D must be >= 0).  This is reading
(a), ``KELVIN_VOIGT``: the force is allowed to pull (D delta' + K delta < 0 near the end of the
restitution phase) and the contact ends at delta = 0; the rebound speed ratio is e exactly
(F = 0).  Reading (b), ``KELVIN_VOIGT_CLAMPED``: the physical force max(0, D delta' + K delta)
ends the contact where it reaches zero, at delta > 0, before the surface is back: the body
leaves faster than in (a), so the restitution it really gives is larger than e
(``restitution_clamped`` measures it: e = 0.2, 0.4, 0.6, 0.8 give 0.325, 0.472,
0.632, 0.808).

**Hunt-Crossley (seed 001 Sec. 3.3).**  No force at zero penetration, no pull.  Its damping
from e is exact in the phase plane: with F = 0, m v dv / (1 + c v) = -K delta^n d delta, and
integrating over the contact (delta from 0 back to 0) gives, with alpha = c v0,

    alpha (1 + e) = ln((1 + alpha) / (1 - e alpha))        (any n; ``hunt_crossley_alpha``)

so c = alpha(e) / v0 depends on the impact speed (the law keeps c fixed from the touchdown
speed, ``compliant_stage``).  The same integral gives the maximum penetration in closed form
(``hunt_crossley_max_penetration``).  The print's eqs. (11)-(13) (an Emden-Fowler reduction
with two phase constants) are not used: the motion is integrated numerically (``hc_motion``:
scipy's DOP853 at rtol 1e-12, separation by events).

**Stiffness.**  Seed 001 eq. (2) gives K = 4 / (3 (sigma_i + sigma_j)) sqrt(R) -- Hertz's
constant, in N/m^1.5, for the force K delta^1.5 -- while the seed then uses a linear spring in
N/m (K = 140e6 N/m for its ball).  Here K is given (``stiffness``, N/m for Kelvin-Voigt and
HC n = 1; N/m^1.5 for HC n = 1.5), and ``hertz_stiffness`` computes eq. (2)'s constant (the
print's R_i, not sqrt(R_i), is another slip: Hertz's constant goes as sqrt(R)).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

KELVIN_VOIGT = 0            # reading (a): F = D delta' + K delta, may pull; ends at delta = 0
KELVIN_VOIGT_CLAMPED = 1    # reading (b): F = max(0, D delta' + K delta); ends where F = 0
HUNT_CROSSLEY = 2           # F = K delta (1 + c delta'), clamped >= 0, K in N/m
HUNT_CROSSLEY_HERTZ = 3     # F = K delta^1.5 (1 + c delta'), clamped >= 0, K in N/m^1.5
MODELS = {"kelvin_voigt": KELVIN_VOIGT, "kelvin_voigt_clamped": KELVIN_VOIGT_CLAMPED,
          "hunt_crossley": HUNT_CROSSLEY, "hunt_crossley_hertz": HUNT_CROSSLEY_HERTZ}
EXPONENT = {HUNT_CROSSLEY: 1.0, HUNT_CROSSLEY_HERTZ: 1.5}

SERIES_BELOW = 1e-3         # |q| t^2 under which C, S come from their series (error < 1e-20 relative)
SCAN = 256                  # grid points over the first period when bracketing a root
ODE_RTOL = 1e-12            # the numerical reference and the Hunt-Crossley motion


def damping_ratio(e: float) -> float:
    """zeta of the linear law whose rebound speed ratio is e (reading (a), seed 001 eq. (10))."""
    if not 0.0 < e <= 1.0:
        raise ValueError(f"restitution {e} outside (0, 1]")
    L = math.log(e)
    return -L / math.sqrt(math.pi ** 2 + L * L)


def damping(K: float, m: float, e: float) -> float:
    """D (N s/m) for stiffness K (N/m), mass m (kg), restitution e (seed 001 eq. (10), sign fixed)."""
    return 2.0 * damping_ratio(e) * math.sqrt(K * m)


def hertz_stiffness(R: float, E_i: float, nu_i: float, E_j: float, nu_j: float) -> float:
    """Seed 001 eq. (2) as Hertz has it: K = 4 sqrt(R) / (3 (sigma_i + sigma_j)), N/m^1.5."""
    s = (1 - nu_i ** 2) / E_i + (1 - nu_j ** 2) / E_j
    return 4.0 * math.sqrt(R) / (3.0 * s)


def _cs(r: float, q: float, t: float) -> tuple[float, float]:
    """(C, S) of the module docstring at t >= 0: e^{-rt} cos, e^{-rt} sin / wd (or cosh, sinh)."""
    z = q * t * t
    if abs(z) < SERIES_BELOW:
        c, s, term_c, term_s = 1.0, 1.0, 1.0, 1.0
        for k in range(1, 6):
            term_c *= -z / ((2 * k - 1) * (2 * k))
            term_s *= -z / ((2 * k) * (2 * k + 1))
            c += term_c
            s += term_s
        E = math.exp(-r * t)
        return E * c, E * s * t
    if q > 0.0:
        w = math.sqrt(q)
        E = math.exp(-r * t)
        return E * math.cos(w * t), E * math.sin(w * t) / w
    b = math.sqrt(-q)
    hi, lo = math.exp((b - r) * t), math.exp(-(b + r) * t)
    return 0.5 * (hi + lo), 0.5 * (hi - lo) / b


@dataclass(frozen=True)
class KV:
    """The linear law's motion: m delta'' + D delta' + K delta = F from (d0, v0) at t = 0."""
    m: float                       # kg, effective mass along the normal
    K: float                       # N/m
    D: float                       # N s/m
    F: float                       # N, constant force pressing in (along -n on the body)
    d0: float                      # m, penetration at t = 0
    v0: float                      # m/s, penetration rate at t = 0 (> 0: going in)
    clamped: bool = False          # reading (b): the contact ends where the force reaches zero

    @property
    def r(self) -> float:
        return self.D / (2.0 * self.m)

    @property
    def q(self) -> float:
        return self.K / self.m - self.r ** 2

    def at(self, t: float) -> tuple[float, float]:
        """(delta m, delta' m/s) at t (s) while in contact."""
        r, w02 = self.r, self.K / self.m
        ds = self.F / self.K
        x0 = self.d0 - ds
        C, S = _cs(r, self.q, t)
        return ds + x0 * C + (self.v0 + r * x0) * S, self.v0 * C - (w02 * x0 + r * self.v0) * S

    def force(self, t: float) -> float:
        """N, the law's force at t (unclamped: reading (a) may give < 0)."""
        d, v = self.at(t)
        return self.D * v + self.K * d

    def _gauge(self, t: float) -> float:
        """What reaches zero at the contact's end: delta (a) or the force (b)."""
        return self.force(t) if self.clamped else self.at(t)[0]

    def _horizon(self) -> np.ndarray:
        """Times to bracket a root on: the first period (under-damped: a contact that has not
        ended by then never does, the oscillation about d_s decaying), else a geometric grid
        out to 40 of the slow time constant."""
        q = self.q
        if q > 0.0:
            return np.linspace(0.0, 2.0 * math.pi / math.sqrt(q), SCAN + 1)[1:]
        slow = self.r - math.sqrt(max(-q, 0.0))
        w0 = math.sqrt(self.K / self.m)
        return np.geomspace(1e-6 / w0, 40.0 / max(slow, 1e-300 + 1e-9 * w0), 4 * SCAN)

    def _first_root(self, f) -> float:
        prev = 0.0
        for t in self._horizon():
            if f(t) <= 0.0:
                if prev == 0.0:            # ends within the first grid cell: bracket off t = 0
                    prev = 1e-9 * float(t)
                    if f(prev) <= 0.0:
                        return 0.0
                return brentq(f, prev, float(t), xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=400)
            prev = float(t)
        return math.inf

    def separation_time(self) -> float:
        """s: when the contact ends (inf: never, 0: at once): delta = 0 going out (a), or the
        force = 0 going out (b)."""
        g0 = self.K * self.d0 + self.D * self.v0 if self.clamped else self.d0
        if g0 < 0.0 or (g0 == 0.0 and (self.v0 < 0.0 or (self.v0 == 0.0 and self.F <= 0.0))):
            return 0.0
        return self._first_root(self._gauge)

    def max_penetration(self) -> tuple[float, float]:
        """(t s, delta m) of the deepest point (the first delta' = 0; t = 0 when leaving)."""
        if self.v0 <= 0.0:
            return 0.0, self.d0
        q = self.q
        if q > 0.0:
            wd = math.sqrt(q)
            t = math.atan2(self.v0 * wd, self.K / self.m * (self.d0 - self.F / self.K) + self.r * self.v0) / wd
        else:
            t = self._first_root(lambda s: self.at(s)[1])
        return t, self.at(t)[0]

    def impulse(self, T: float) -> tuple[float, float, float, float]:
        """(J N s, t_end s, delta, delta') over a step of length T: J the normal force's impulse
        on the body (out of the surface) while in contact, t_end = min(T, separation), the
        state at t_end.  Exact: m (delta'(t) - v0) = F t - J."""
        t = min(T, self.separation_time())
        d, v = self.at(t) if t > 0.0 else (self.d0, self.v0)
        return self.F * t - self.m * (v - self.v0), t, d, v


def kelvin_voigt(m: float, K: float, e: float, F: float, d0: float, v0: float, clamped: bool = False) -> KV:
    """The linear law with its damping from restitution e (reading (a) of eq. (10))."""
    return KV(m, K, damping(K, m, e), F, d0, v0, clamped)


def restitution_clamped(e: float, K: float = 140e6, m: float = 1.0, v0: float = 1.0) -> float:
    """The rebound speed ratio the clamped force (reading (b)) really gives, D from e by
    eq. (10), no external force: the speed where the force reaches zero (the body then leaves
    freely)."""
    kv = kelvin_voigt(m, K, e, 0.0, 0.0, v0, clamped=True)
    return -kv.at(kv.separation_time())[1] / v0


# --- Hunt-Crossley ---------------------------------------------------------------------------

@lru_cache(maxsize=64)
def hunt_crossley_alpha(e: float) -> float:
    """alpha = c v0 of the Hunt-Crossley law giving restitution e (module docstring)."""
    if not 0.0 < e <= 1.0:
        raise ValueError(f"restitution {e} outside (0, 1]")
    if e == 1.0:
        return 0.0

    def f(a):
        return math.log1p(a) - math.log1p(-e * a) - a * (1.0 + e)

    lo, hi = 1e-3 * (1.0 - e), (1.0 - 1e-15) / e
    while f(lo) >= 0.0:
        lo *= 0.1
    return brentq(f, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps)


def hunt_crossley_max_penetration(m: float, K: float, c: float, v0: float, n: float = 1.0) -> float:
    """m: the deepest point from delta = 0 at v0 with no external force (phase-plane integral)."""
    work = v0 * v0 / 2.0 if c == 0.0 else (c * v0 - math.log1p(c * v0)) / (c * c)
    return ((n + 1.0) * m * work / K) ** (1.0 / (n + 1.0))


def hc_force(K: float, c: float, n: float, d: float, v: float) -> float:
    return K * max(d, 0.0) ** n * max(1.0 + c * v, 0.0)


def hc_motion(m: float, K: float, c: float, n: float, F: float, d0: float, v0: float, T: float,
              dense: bool = False):
    """The Hunt-Crossley motion from (d0, v0) over at most T: returns (J N s, t_end, delta,
    delta', solution).  Ends at T or when the contact does (delta back to 0 going out; with
    the force >= 0 by construction it never pulls)."""
    def rhs(t, y):
        return (y[1], (F - hc_force(K, c, n, y[0], y[1])) / m)

    def out(t, y):
        return y[0]
    out.terminal, out.direction = True, -1.0
    if d0 <= 0.0 and v0 <= 0.0:
        return 0.0, 0.0, d0, v0, None
    w0 = math.sqrt(K / m) if n == 1.0 else 1.0 / max(T, 1e-12)
    sol = solve_ivp(rhs, (0.0, T), (d0, v0), method="DOP853", rtol=ODE_RTOL, atol=1e-15 * max(abs(v0), 1e-3),
                    events=out, dense_output=dense, max_step=0.05 / w0 if n == 1.0 else np.inf)
    t = float(sol.t[-1])
    d, v = float(sol.y[0, -1]), float(sol.y[1, -1])
    return F * t - m * (v - v0), t, d, v, sol


# The step's Hunt-Crossley motion: an adaptive Dormand-Prince 5(4) pair in one numba kernel.
# ``hc_motion`` (scipy's DOP853) is its reference: ~11 ms a call there (the grinding tip's
# 10 ms step, ~80 steps of Python), ~0.1 ms here.  Both stop where the penetration returns to 0
# going out; this one finds that instant by the secant method on re-integrated steps.
HC_RTOL = 1e-11            # relative error per step of the kernel's integration
HC_MAX_STEPS = 200_000     # steps at most in one call (a 1 s step of a stiff contact: ~20 000)
_DP_C = (0.2, 0.3, 0.8, 8.0 / 9.0)
_DP_B = (35.0 / 384.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0)
_DP_E = (71.0 / 57600.0, -71.0 / 16695.0, 71.0 / 1920.0, -17253.0 / 339200.0, 22.0 / 525.0, -1.0 / 40.0)


@njit(cache=True, inline="always")
def _hc_acc(K, c, n, F, m, d, v):
    """delta'' = (F - K delta^n (1 + c delta')) / m, the force >= 0 (it never pulls)."""
    f = 0.0
    if d > 0.0:
        f = K * d ** n * max(1.0 + c * v, 0.0)
    return (F - f) / m


@njit(cache=True)
def _dp5(K, c, n, F, m, d, v, h):
    """One Dormand-Prince step of size h: (delta, delta', error of delta, error of delta')."""
    k1d, k1v = v, _hc_acc(K, c, n, F, m, d, v)
    yd, yv = d + h * 0.2 * k1d, v + h * 0.2 * k1v
    k2d, k2v = yv, _hc_acc(K, c, n, F, m, yd, yv)
    yd = d + h * (3.0 / 40.0 * k1d + 9.0 / 40.0 * k2d)
    yv = v + h * (3.0 / 40.0 * k1v + 9.0 / 40.0 * k2v)
    k3d, k3v = yv, _hc_acc(K, c, n, F, m, yd, yv)
    yd = d + h * (44.0 / 45.0 * k1d - 56.0 / 15.0 * k2d + 32.0 / 9.0 * k3d)
    yv = v + h * (44.0 / 45.0 * k1v - 56.0 / 15.0 * k2v + 32.0 / 9.0 * k3v)
    k4d, k4v = yv, _hc_acc(K, c, n, F, m, yd, yv)
    yd = d + h * (19372.0 / 6561.0 * k1d - 25360.0 / 2187.0 * k2d + 64448.0 / 6561.0 * k3d
                  - 212.0 / 729.0 * k4d)
    yv = v + h * (19372.0 / 6561.0 * k1v - 25360.0 / 2187.0 * k2v + 64448.0 / 6561.0 * k3v
                  - 212.0 / 729.0 * k4v)
    k5d, k5v = yv, _hc_acc(K, c, n, F, m, yd, yv)
    yd = d + h * (9017.0 / 3168.0 * k1d - 355.0 / 33.0 * k2d + 46732.0 / 5247.0 * k3d + 49.0 / 176.0 * k4d
                  - 5103.0 / 18656.0 * k5d)
    yv = v + h * (9017.0 / 3168.0 * k1v - 355.0 / 33.0 * k2v + 46732.0 / 5247.0 * k3v + 49.0 / 176.0 * k4v
                  - 5103.0 / 18656.0 * k5v)
    k6d, k6v = yv, _hc_acc(K, c, n, F, m, yd, yv)
    b1, b3, b4, b5, b6 = _DP_B
    d1 = d + h * (b1 * k1d + b3 * k3d + b4 * k4d + b5 * k5d + b6 * k6d)
    v1 = v + h * (b1 * k1v + b3 * k3v + b4 * k4v + b5 * k5v + b6 * k6v)
    k7d, k7v = v1, _hc_acc(K, c, n, F, m, d1, v1)
    e1, e3, e4, e5, e6, e7 = _DP_E
    ed = h * (e1 * k1d + e3 * k3d + e4 * k4d + e5 * k5d + e6 * k6d + e7 * k7d)
    ev = h * (e1 * k1v + e3 * k3v + e4 * k4v + e5 * k5v + e6 * k6v + e7 * k7v)
    return d1, v1, ed, ev


@njit(cache=True)
def hc_motion_fast(m, K, c, n, F, d0, v0, T):
    """``hc_motion`` without its solution object, in one kernel: (J N s, t_end, delta, delta')."""
    if d0 <= 0.0 and v0 <= 0.0:
        return 0.0, 0.0, d0, v0
    atol = 1e-15 * max(abs(v0), 1e-3)
    w = math.sqrt(n * K * max(d0, 1e-9) ** (n - 1.0) / m)    # the contact's rate at d0: the first step's scale
    h = min(T, 0.01 / w)
    t, d, v = 0.0, d0, v0
    for _ in range(HC_MAX_STEPS):
        if t >= T:
            break
        h = min(h, T - t)
        d1, v1, ed, ev = _dp5(K, c, n, F, m, d, v, h)
        sd = atol + HC_RTOL * max(abs(d), abs(d1))
        sv = atol + HC_RTOL * max(abs(v), abs(v1))
        err = math.sqrt(0.5 * ((ed / sd) ** 2 + (ev / sv) ** 2))
        if err <= 1.0:
            if d > 0.0 and d1 <= 0.0:            # out of contact inside this step: where exactly
                lo, hi, glo, ghi = 0.0, h, d, d1
                s = h
                for _k in range(60):
                    s = lo + (hi - lo) * glo / (glo - ghi) if glo != ghi else 0.5 * (lo + hi)
                    if not lo < s < hi:
                        s = 0.5 * (lo + hi)
                    ds, vs, _, _ = _dp5(K, c, n, F, m, d, v, s)
                    if ds > 0.0:
                        lo, glo = s, ds
                    else:
                        hi, ghi = s, ds
                    if hi - lo <= 1e-15 * (t + h) or ds == 0.0:
                        break
                d1, v1, _, _ = _dp5(K, c, n, F, m, d, v, hi)
                t += hi
                return F * t - m * (v1 - v0), t, 0.0, v1
            t += h
            d, v = d1, v1
        h *= min(5.0, max(0.2, 0.9 * (err + 1e-300) ** -0.2))
    return F * t - m * (v - v0), t, d, v
