"""XPBD baseline of seed 002's cable (seed 002 Sec. V-C compares its solver with XPBD [30]).

    python -m bench.baselines.xpbd_cable [--links 40] [--dt 0.01] [--iters 100] [--substeps 1]

The same discretisation as seed 002 Sec. III-A: n rigid cylindrical links (centre p_j, world
orientation quaternion q_j = (w, x, y, z), axis along body x, length l = L / n, mass rho A l,
solid-cylinder inertia), neighbours joined by a stretch-shear and a bend-twist constraint; the
clamp is a fixed ghost link 0 (infinite mass, centre (-l/2, 0, 0), identity orientation) joined
to the first link by the same two constraints.  Stepped by XPBD (Macklin, Mueller, Chentanez
2016) on rigid bodies (the position/orientation update of Mueller et al. 2020): per substep h =
dt / substeps, predict v += h g, p += h v, q += h/2 (w, 0) q (normalised), reset the Lagrange
multipliers, run `iters` Gauss-Seidel sweeps over the 2n constraints, then v = (p - p_prev) / h,
w = 2 Vec(q q_prev^*) / h.  The seed's setting: dt = T = 10 ms, 100 iterations, 1 substep.

Compliances from the rod energies (the derivation):

* Stretch-shear.  The continuum strain Gamma = r' - d_1 (d_1 the material tangent, body x) over
  the segment between two link centres (length l) is Gamma = (p_b - p_a)/l - (d_a + d_b)/2 =
  g / l, where g = (p_b - l/2 d_b) - (p_a + l/2 d_a) is the gap between a's +x end and b's -x end
  (seed 002's e_1 up to the frame).  The energy of the segment, int 1/2 Gamma^T S Gamma ds with
  S = diag(EA, GA, GA) in the material frame, is l/2 (g/l)^T S (g/l) = 1/2 g^T (S / l) g: the
  constraint C = g with stiffness S / l, i.e. compliance alpha_1 = l S^-1 =
  R_a diag(l/EA, l/GA, l/GA) R_a^T in world axes (seed 002's K_1 = diag(GA/L, GA/L, EA/L), axis
  last there).  The frame R_a is held fixed within a projection (the energy's derivative through
  the frame is O(|g|^2), a relative 1e-3 here).
* Bend-twist.  The Darboux vector Omega = 2 Vec(q_a^* q_b) / l (Kugelstadt and Schoemer 2016;
  for a relative rotation by angle phi about a, Vec(q_a^* q_b) = sin(phi/2) a -> phi/2 a, and the
  continuum curvature is phi / l).  Energy l/2 Omega^T B Omega, B = diag(GJ, EI, EI) in frame a,
  = 1/2 C^T (4 B / l) C with C = Vec(q_a^* q_b): compliance alpha_2 = (l/4) B^-1.  Seed 002's
  K_2 = diag(EI/L, EI/L, GJ/L) on the same e_2 = Vec(q^* q) lacks this factor 4 -- its printed
  bending/torsion gain is 4 times too soft (energy 1/2 (EI/L) (phi/2)^2 against the continuum's
  1/2 (EI/L) phi^2); this file uses the derived 4 B / l.

The projection of a 3-vector constraint C with compliance alpha (XPBD eq. (18) with alpha~ =
alpha / h^2): dlambda = -(W + alpha~)^-1 (C + alpha~ lambda), W = J M^-1 J^T the 3x3 generalised
inverse mass.  For the gap, W = (1/m_a + 1/m_b) 1 - [r_a]x Ia^-1 [r_a]x - [r_b]x Ib^-1 [r_b]x
(r the attachment arms, I^-1 in world axes) and the impulse dlambda acts on b, -dlambda on a.
For the rotation, d/dt Vec(q_a^* q_b) = G R_a^T (w_b - w_a), G = 1/2 (r0 1 - [rv]x) with
r = q_a^* q_b (r0 >= 0 chosen), so W = G R_a^T (Ia^-1 + Ib^-1) R_a G^T and the rotations are
dphi_b = Ib^-1 R_a G^T dlambda, dphi_a = -Ia^-1 R_a G^T dlambda.

The clamp.  The ghost's +x end is the clamp point s = 0, the first link's centre is at s = l/2:
the clamp joint's segment is l/2 long, so its two compliances are halved (a full-l ghost
segment gives the first link twice the continuum's rotation, an O(1/n) error in the tip:
measured 5 mm at 40 links before this).

Damping for the static sag: the velocities are multiplied by 1 / (1 + c h) after each substep
(mass-proportional, absent in the static balance).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

if __package__ in (None, ""):                     # run as a script: the checkout on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from bench.baselines.free_cable import SEED_CABLE, Cable  # noqa: E402
from sim_core.systems.rigid import _solve3  # noqa: E402  (3x3 by cofactors, the rigid kernel's)

SEED_DT = 0.01          # s, seed 002's T
SEED_ITERS = 100        # XPBD iterations per step in seed 002 Sec. V-C
SETTLE_DAMPING = 10.0   # 1/s, c of the static runs: about critical for the hanging cable's
                        # first mode (sqrt(g / L) ~ 5 rad/s)
SETTLE_TIME = 6.0       # s of damped motion for the static sag (tip steady to < 1e-6 m, printed)


@njit(cache=True)
def _rot(q, R):
    """R (3, 3) <- rotation matrix of unit quaternion q = (w, x, y, z)."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - w * z)
    R[0, 2] = 2 * (x * z + w * y)
    R[1, 0] = 2 * (x * y + w * z)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - w * x)
    R[2, 0] = 2 * (x * z - w * y)
    R[2, 1] = 2 * (y * z + w * x)
    R[2, 2] = 1 - 2 * (x * x + y * y)


@njit(cache=True)
def _inv_inertia_world(R, iinv_b, out):
    """out (3, 3) <- R diag(iinv_b) R^T."""
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                s += R[i, k] * iinv_b[k] * R[j, k]
            out[i, j] = s


@njit(cache=True)
def _rotate_by(q, dphi):
    """q <- normalise(q + 1/2 (0, dphi) q): a small world rotation dphi (rad) applied to q."""
    w, x, y, z = q[0], q[1], q[2], q[3]
    a, b, c = dphi[0], dphi[1], dphi[2]
    nw = w + 0.5 * (-a * x - b * y - c * z)
    nx = x + 0.5 * (a * w + b * z - c * y)
    ny = y + 0.5 * (b * w + c * x - a * z)
    nz = z + 0.5 * (c * w + a * y - b * x)
    n = np.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
    q[0], q[1], q[2], q[3] = nw / n, nx / n, ny / n, nz / n


@njit(cache=True)
def _cross_mat_sandwich(r, Iw, out):
    """out += -[r]x Iw [r]x  (the arm's rotational inverse mass at a point r)."""
    # [r]x = [[0,-r2,r1],[r2,0,-r0],[-r1,r0,0]]
    S = np.empty((3, 3))
    S[0, 0], S[0, 1], S[0, 2] = 0.0, -r[2], r[1]
    S[1, 0], S[1, 1], S[1, 2] = r[2], 0.0, -r[0]
    S[2, 0], S[2, 1], S[2, 2] = -r[1], r[0], 0.0
    for i in range(3):
        for j in range(3):
            s = 0.0
            for k in range(3):
                for m in range(3):
                    s += S[i, k] * Iw[k, m] * S[m, j]
            out[i, j] -= s


@njit(cache=True)
def _project(p, q, winv, iinv_b, half, c_stretch, c_bend, cscale, lam_s, lam_b, h2):
    """One Gauss-Seidel sweep over the joints j = 0..n-1 (body j to body j + 1) in place.
    c_stretch, c_bend (3,): body-frame compliances (axial/twist first); cscale (n,): joint j's
    compliances are cscale[j] times those (1/2 at the clamp); lam_*: (n, 3)."""
    n = p.shape[0] - 1
    Ra, Rb = np.empty((3, 3)), np.empty((3, 3))
    Ia, Ib = np.empty((3, 3)), np.empty((3, 3))
    W, rhs, dl = np.empty((3, 3)), np.empty(3), np.empty(3)
    ra, rb, C, t, dphi = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    for j in range(n):
        a, b = j, j + 1
        cs = cscale[j] / h2
        # ---- stretch-shear: the gap between a's +x end and b's -x end ----
        _rot(q[a], Ra)
        _rot(q[b], Rb)
        _inv_inertia_world(Ra, iinv_b[a], Ia)
        _inv_inertia_world(Rb, iinv_b[b], Ib)
        for i in range(3):
            ra[i] = half * Ra[i, 0]
            rb[i] = -half * Rb[i, 0]
            C[i] = (p[b, i] + rb[i]) - (p[a, i] + ra[i])
        for i in range(3):
            for k in range(3):
                W[i, k] = 0.0
            W[i, i] = winv[a] + winv[b]
        _cross_mat_sandwich(ra, Ia, W)
        _cross_mat_sandwich(rb, Ib, W)
        for i in range(3):                         # + alpha~ = R_a diag(c) R_a^T / h^2
            for k in range(3):
                s = 0.0
                for m in range(3):
                    s += Ra[i, m] * c_stretch[m] * Ra[k, m]
                W[i, k] += s * cs
        for i in range(3):                         # rhs = -(C + alpha~ lambda)
            s = 0.0
            for k in range(3):
                s2 = 0.0
                for m in range(3):
                    s2 += Ra[i, m] * c_stretch[m] * Ra[k, m]
                s += s2 * lam_s[j, k]
            rhs[i] = -(C[i] + s * cs)
        _solve3(W, rhs, dl)
        for i in range(3):
            lam_s[j, i] += dl[i]
            p[b, i] += winv[b] * dl[i]
            p[a, i] -= winv[a] * dl[i]
        # rotations: dphi_b = Ib (rb x dl), dphi_a = -Ia (ra x dl)
        t[0] = rb[1] * dl[2] - rb[2] * dl[1]
        t[1] = rb[2] * dl[0] - rb[0] * dl[2]
        t[2] = rb[0] * dl[1] - rb[1] * dl[0]
        for i in range(3):
            dphi[i] = Ib[i, 0] * t[0] + Ib[i, 1] * t[1] + Ib[i, 2] * t[2]
        _rotate_by(q[b], dphi)
        t[0] = ra[1] * dl[2] - ra[2] * dl[1]
        t[1] = ra[2] * dl[0] - ra[0] * dl[2]
        t[2] = ra[0] * dl[1] - ra[1] * dl[0]
        for i in range(3):
            dphi[i] = -(Ia[i, 0] * t[0] + Ia[i, 1] * t[1] + Ia[i, 2] * t[2])
        _rotate_by(q[a], dphi)

        # ---- bend-twist: C = Vec(q_a^* q_b), in frame a ----
        _rot(q[a], Ra)
        _rot(q[b], Rb)
        _inv_inertia_world(Ra, iinv_b[a], Ia)
        _inv_inertia_world(Rb, iinv_b[b], Ib)
        aw, ax, ay, az = q[a, 0], -q[a, 1], -q[a, 2], -q[a, 3]      # q_a^*
        bw, bx, by, bz = q[b, 0], q[b, 1], q[b, 2], q[b, 3]
        r0 = aw * bw - ax * bx - ay * by - az * bz
        r1 = aw * bx + ax * bw + ay * bz - az * by
        r2 = aw * by - ax * bz + ay * bw + az * bx
        r3 = aw * bz + ax * by - ay * bx + az * bw
        if r0 < 0.0:
            r0, r1, r2, r3 = -r0, -r1, -r2, -r3
        C[0], C[1], C[2] = r1, r2, r3
        # G = 1/2 (r0 1 - [rv]x);  K = G R_a^T (Ia + Ib) R_a G^T
        Gm = np.empty((3, 3))
        Gm[0, 0], Gm[0, 1], Gm[0, 2] = 0.5 * r0, 0.5 * r3, -0.5 * r2
        Gm[1, 0], Gm[1, 1], Gm[1, 2] = -0.5 * r3, 0.5 * r0, 0.5 * r1
        Gm[2, 0], Gm[2, 1], Gm[2, 2] = 0.5 * r2, -0.5 * r1, 0.5 * r0
        GRt = np.empty((3, 3))                      # G R_a^T
        for i in range(3):
            for k in range(3):
                s = 0.0
                for m in range(3):
                    s += Gm[i, m] * Ra[k, m]
                GRt[i, k] = s
        for i in range(3):
            for k in range(3):
                s = 0.0
                for m in range(3):
                    for u in range(3):
                        s += GRt[i, m] * (Ia[m, u] + Ib[m, u]) * GRt[k, u]
                W[i, k] = s
            W[i, i] += c_bend[i] * cs
        for i in range(3):
            rhs[i] = -(C[i] + c_bend[i] * cs * lam_b[j, i])
        _solve3(W, rhs, dl)
        for i in range(3):
            lam_b[j, i] += dl[i]
        for i in range(3):                          # t = R_a G^T dl (world)
            t[i] = GRt[0, i] * dl[0] + GRt[1, i] * dl[1] + GRt[2, i] * dl[2]
        for i in range(3):
            dphi[i] = Ib[i, 0] * t[0] + Ib[i, 1] * t[1] + Ib[i, 2] * t[2]
        _rotate_by(q[b], dphi)
        for i in range(3):
            dphi[i] = -(Ia[i, 0] * t[0] + Ia[i, 1] * t[1] + Ia[i, 2] * t[2])
        _rotate_by(q[a], dphi)


@njit(cache=True)
def _steps(p, q, v, w, winv, iinv_b, half, c_stretch, c_bend, cscale, gvec, dt, substeps, iters,
           damping, nsteps):
    """Advance `nsteps` steps of dt in place (see the module docstring)."""
    nb = p.shape[0]
    h = dt / substeps
    h2 = h * h
    lam_s = np.zeros((nb - 1, 3))
    lam_b = np.zeros((nb - 1, 3))
    p_prev = np.empty((nb, 3))
    q_prev = np.empty((nb, 4))
    R = np.empty((3, 3))
    wb, Lb, dphi = np.empty(3), np.empty(3), np.empty(3)
    fac = 1.0 / (1.0 + damping * h)
    for _ in range(nsteps):
        for _s in range(substeps):
            for i in range(nb):
                p_prev[i] = p[i]
                q_prev[i] = q[i]
                if winv[i] == 0.0:
                    continue
                for k in range(3):
                    v[i, k] += h * gvec[k]
                    p[i, k] += h * v[i, k]
                # gyroscopic: body-frame w += h I^-1 (-w x I w), explicit
                _rot(q[i], R)
                for k in range(3):
                    wb[k] = R[0, k] * w[i, 0] + R[1, k] * w[i, 1] + R[2, k] * w[i, 2]
                for k in range(3):
                    Lb[k] = wb[k] / iinv_b[i, k]
                t0 = wb[1] * Lb[2] - wb[2] * Lb[1]
                t1 = wb[2] * Lb[0] - wb[0] * Lb[2]
                t2 = wb[0] * Lb[1] - wb[1] * Lb[0]
                wb[0] -= h * iinv_b[i, 0] * t0
                wb[1] -= h * iinv_b[i, 1] * t1
                wb[2] -= h * iinv_b[i, 2] * t2
                for k in range(3):
                    w[i, k] = R[k, 0] * wb[0] + R[k, 1] * wb[1] + R[k, 2] * wb[2]
                    dphi[k] = h * w[i, k]
                _rotate_by(q[i], dphi)
            lam_s[:] = 0.0
            lam_b[:] = 0.0
            for _it in range(iters):
                _project(p, q, winv, iinv_b, half, c_stretch, c_bend, cscale, lam_s, lam_b, h2)
            for i in range(nb):
                if winv[i] == 0.0:
                    continue
                for k in range(3):
                    v[i, k] = (p[i, k] - p_prev[i, k]) / h * fac
                # w = 2 Vec(q q_prev^*) / h
                aw, ax, ay, az = q[i, 0], q[i, 1], q[i, 2], q[i, 3]
                bw, bx, by, bz = q_prev[i, 0], -q_prev[i, 1], -q_prev[i, 2], -q_prev[i, 3]
                r0 = aw * bw - ax * bx - ay * by - az * bz
                r1 = aw * bx + ax * bw + ay * bz - az * by
                r2 = aw * by - ax * bz + ay * bw + az * bx
                r3 = aw * bz + ax * by - ay * bx + az * bw
                sg = 1.0 if r0 >= 0.0 else -1.0
                w[i, 0] = 2.0 * sg * r1 / h * fac
                w[i, 1] = 2.0 * sg * r2 / h * fac
                w[i, 2] = 2.0 * sg * r3 / h * fac


class XPBDCable:
    """The cable of `cable` as n links stepped by XPBD.  Arrays (body 0 is the clamp's ghost):
    p (n+1, 3) m centres (world), q (n+1, 4) orientations (w, x, y, z) world-from-body,
    v (n+1, 3) m/s, w (n+1, 3) rad/s (world).  Gravity along -y; the cable starts along +x."""

    def __init__(self, n: int, cable: Cable = SEED_CABLE):
        if n < 1:
            raise ValueError(f"XPBDCable: n = {n}: need at least one link")
        c = cable
        self.n, self.cable = n, c
        self.l = c.length / n                                   # m, link length
        m = c.density * c.A * self.l                            # kg, link mass
        r = c.radius
        i_ax, i_tr = 0.5 * m * r * r, m * (3 * r * r + self.l ** 2) / 12.0   # kg m^2, solid cylinder
        self.winv = np.full(n + 1, 1.0 / m)                     # 1/kg
        self.winv[0] = 0.0
        self.iinv_b = np.tile([1.0 / i_ax, 1.0 / i_tr, 1.0 / i_tr], (n + 1, 1))   # 1/(kg m^2), body axes
        self.iinv_b[0] = 0.0
        # compliances (module docstring): body-frame, axis first
        self.c_stretch = self.l * np.array([1.0 / (c.E * c.A), 1.0 / (c.G * c.A * c.kappa_s),
                                            1.0 / (c.G * c.A * c.kappa_s)])            # m/N
        self.c_bend = 0.25 * self.l * np.array([1.0 / (c.G * c.J), 1.0 / (c.E * c.I),
                                                1.0 / (c.E * c.I)])                   # 1/(N m)
        # the clamp joint spans l/2 (the clamp at s = 0 to link 1's centre): half the compliance
        self.cscale = np.ones(n)
        self.cscale[0] = 0.5
        self.gvec = np.array([0.0, -c.gravity, 0.0])                        # m/s^2
        self.reset()

    def reset(self) -> None:
        """Straight along +x, at rest, the ghost's centre at -l/2."""
        n, ls = self.n, self.l
        self.p = np.zeros((n + 1, 3))
        self.p[:, 0] = (np.arange(n + 1) - 0.5) * ls
        self.q = np.zeros((n + 1, 4))
        self.q[:, 0] = 1.0
        self.v = np.zeros((n + 1, 3))
        self.w = np.zeros((n + 1, 3))

    def step(self, dt: float, nsteps: int = 1, iters: int = SEED_ITERS, substeps: int = 1,
             damping: float = 0.0) -> None:
        _steps(self.p, self.q, self.v, self.w, self.winv, self.iinv_b, 0.5 * self.l, self.c_stretch,
               self.c_bend, self.cscale, self.gvec, float(dt), int(substeps), int(iters), float(damping), int(nsteps))

    def centreline(self) -> tuple[np.ndarray, np.ndarray]:
        """(s (n+1,) m material coordinates, xy (2, n+1) m): the link centres and the tip."""
        ls = self.l
        s = np.append((np.arange(self.n) + 0.5) * ls, self.cable.length)
        w, x, y, z = self.q[-1]
        d1 = np.array([1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)])
        tip = self.p[-1] + 0.5 * ls * d1
        xyz = np.vstack((self.p[1:], tip))
        return s, xyz[:, :2].T.copy()

    def tip(self) -> np.ndarray:
        return self.centreline()[1][:, -1]


def static_sag(n: int, dt: float = SEED_DT, iters: int = SEED_ITERS, substeps: int = 1,
               cable: Cable = SEED_CABLE, settle: float = SETTLE_TIME,
               damping: float = SETTLE_DAMPING) -> tuple[XPBDCable, float]:
    """Release the cable from straight and damp it out for `settle` s: (the cable, the tip's
    movement in m over the last 10 % of the run -- how far from steady it still was)."""
    c = XPBDCable(n, cable)
    k = max(1, int(round(settle / dt)))
    c.step(dt, k - k // 10, iters, substeps, damping)
    before = c.tip().copy()
    c.step(dt, k // 10, iters, substeps, damping)
    return c, float(np.linalg.norm(c.tip() - before))


def fall(n: int, dt: float = SEED_DT, iters: int = SEED_ITERS, substeps: int = 1, duration: float = 0.5,
         cable: Cable = SEED_CABLE, every: float = 0.01) -> tuple[np.ndarray, np.ndarray, float]:
    """Undamped fall from straight: (t (k,) s, tip (k, 2) m sampled every `every` s, wall s)."""
    c = XPBDCable(n, cable)
    per = max(1, int(round(every / dt)))
    k = int(round(duration / (dt * per)))
    t, tips = [0.0], [c.tip().copy()]
    t0 = time.perf_counter()
    for i in range(k):
        c.step(dt, per, iters, substeps)
        t.append((i + 1) * per * dt)
        tips.append(c.tip().copy())
    return np.array(t), np.array(tips), time.perf_counter() - t0


def main(argv=None) -> int:
    from bench.baselines.free_cable import elastica, shape_error
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--links", type=int, default=40)
    ap.add_argument("--dt", type=float, default=SEED_DT)
    ap.add_argument("--iters", type=int, default=SEED_ITERS)
    ap.add_argument("--substeps", type=int, default=1)
    a = ap.parse_args(argv)
    ref = elastica()
    t0 = time.perf_counter()
    c, moved = static_sag(a.links, a.dt, a.iters, a.substeps)
    wall = time.perf_counter() - t0
    s, xy = c.centreline()
    print(f"XPBD n={a.links} dt={a.dt} iters={a.iters} substeps={a.substeps}: tip deflection "
          f"{-xy[1, -1]:.6f} m (reference {ref.tip_deflection:.6f}), shape error "
          f"{shape_error(ref, s, xy):.3e} m, last-10% tip motion {moved:.1e} m, {wall:.2f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
