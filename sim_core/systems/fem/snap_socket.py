"""The snap fit's socket as a system of the core (``systems.base.System``): the two FEM prongs of
``systems.fem.snap`` in the core's one step, the plug a rigid body of the world (issue 27).

The plug is the world's body ``body``, driven towards its set pose by the core's spring-damper
drive -- in translation exactly seed 003's admittance (eq. (5)): its PMI block's translational
rows are m / T + K T / 4 + D / 2 (``systems.rigid``), the admittance's A (``snap.Admittance``).
Per step, in the core's order:

* ``prepare`` -- the prongs' last contact force on the plug joins the bodies' pull;
* ``fold`` -- the plug's block is known (the drive, the external wrench, anything folded in
  before): the plug's end-of-step velocity is V_free + A^-1 F for a force F on it.  The socket
  solves its own contacts against that block (``snap.solve_contacts``: detection, the
  representatives, the Delassus operator of the prongs' modes and the plug, the
  maximum-dissipation solve) and folds the result into the block as a known force,
  b += F_plug.  This is exact, not a splitting: the plug touches nothing else, so the core's
  solve then gives the plug the very velocity the socket's solve assumed.  The plug keeps its
  orientation (its rotational rows become w+ = 0): the snap's contact treats a translating plug
  (``snap``: the arm holds it; the seed's eq. (5) is 6-D, its Sec. V moves the plug straight
  down), and the contact forces' moment is carried by that hold, not applied;
* ``advance`` -- the prongs' modal PMI with the contact loads (``snap.advance_prongs``), the
  floor's force (eq. (29), corrected) and the hooks' deflection kept in the sub-state; the step
  reports the contact force on the plug, the deepest penetration and the solve's sweeps.

The view (``app.view.session``) draws the socket deforming: ``view_state`` (the prongs' modal
coordinates) travels in the physics snapshot, and ``view_parts`` turns it into the socket mesh's
vertices (``connector.socket_surface``: each prong vertex's motion per mode is the FEM's own,
``snap.SnapModel.vertex_P``, not a display shape).

``pull`` is what the haptic side feels of the socket between two physics steps
(``app.physics_loop``), as a cable's tension is: the drive's pull on its set point, through which
the arm holds the plug -- compliant (the admittance's 2 kN/m in series with the prongs or the
seat), below the device coupling's stiffness.  The hand holds the admittance's set point, as a
teleoperator holds a robot's: it feels the hooks' resistance, the click and the seat through the
arm's compliance.  A step of any
other length than the prongs' T is refused: their modal PMI is built for one T
(``pmi.ModalPmi``); a new T is a new model (``snap.build``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from sim_core.geometry.connector import socket_surface
from sim_core.systems.fem import snap

DT_TOL = 1e-12     # relative: a step this close to the model's T is that T


@dataclass(frozen=True)
class SocketState:
    """The socket's part of ``State.systems``."""
    q: np.ndarray                  # (2, r) the prongs' modal coordinates (right, left)
    qd: np.ndarray                 # (2, r) their rates, 1/s
    force: np.ndarray              # (3,) N, world: the contacts' force on the plug in the last step
    floor: np.ndarray              # (3,) N, world: the floor's force on the socket in the last step
    deflection: np.ndarray         # (2,) m, each hook tip's outward deflection after the last step
    seat: float = 0.0              # N, the seat's share of ``force`` (its normal force on the plug)
    hand: np.ndarray | None = None  # (3,) N, world: the drive's pull on its set point after the last
                                    # step, K (p - p_set) + D (v - v_set) -- what the hand holding the
                                    # plug through it feels (``pull``)
    speed: np.ndarray | None = None  # (2, k) m/s, the prong surface points' speeds over the last step
                                     # (``snap.SnapState.speed``: the detection's reach)
    u: np.ndarray | None = None      # (2, k, 3) m, prong frame: the surface points' displacements at q
                                     # (``snap.SnapState.u``; None: computed from q -- what a
                                     # sub-state given another q must carry)


@dataclass(frozen=True)
class SnapSocket:
    """Two FEM prongs (``snap.SnapModel``, constant) around the world's body ``body``, the plug."""
    snap: snap.SnapModel
    body: int = 0
    holds: tuple = ()              # it holds no body: the plug keeps its drive

    def start(self, model, state) -> SocketState:
        r = self.snap.modal.size
        return SocketState(np.zeros((2, r)), np.zeros((2, r)), np.zeros(3), np.zeros(3), np.zeros(2))

    def _snap_state(self, state, sub: SocketState) -> snap.SnapState:
        b = self.body
        return snap.SnapState(state.t, sub.q, sub.qd, state.p_w[b], state.V[b, :3], sub.speed, sub.u)

    def prepare(self, model, state, sub: SocketState, inp, dt: float, blocks) -> None:
        if abs(dt - self.snap.T) > DT_TOL * self.snap.T:
            raise ValueError(f"snap socket: a step of {dt:g} s, but its prongs' modal PMI is built for "
                             f"T = {self.snap.T:g} s (a new T is a new model: systems.fem.snap.build)")
        blocks.pull[self.body, :3] += sub.force
        return None

    def fold(self, model, state, sub: SocketState, inp, dt: float, prep, blocks):
        b = self.body
        A, rhs = blocks.A[b], blocks.b[b]
        A[3:, :] = 0.0                         # the plug keeps its orientation: w+ = 0
        A[:3, 3:] = 0.0
        A[3:, 3:] = np.eye(3)
        rhs[3:] = 0.0
        A_inv = np.linalg.inv(A[:3, :3])
        st = self._snap_state(state, sub)
        qh_free = snap.free_rates(self.snap, st)
        sol = snap.solve_contacts(self.snap, st, qh_free, A_inv, A_inv @ rhs[:3])
        rhs[:3] += sol.F_plug                  # the contacts' force, now known: the core solves the rest
        return st, qh_free, sol, (inp.p_set_w[b], inp.v_set_w[b])

    def advance(self, model, sub: SocketState, fold, V_next, dt: float) -> tuple[SocketState, dict]:
        st, qh_free, sol, (p_set, v_set) = fold
        q1, qd1, floor, tip = snap.advance_prongs(self.snap, st, qh_free, sol)
        wrench = np.zeros((model.n_bodies, 6))
        wrench[self.body, :3] = sol.F_plug
        V1 = V_next[self.body, :3]
        p1 = st.p + 0.5 * dt * (st.V + V1)     # the core's midpoint (``systems.rigid.advance``)
        hand = model.drive.K[self.body, :3] * (p1 - p_set) + model.drive.D[self.body, :3] * (V1 - v_set)
        return (SocketState(q1, qd1, sol.F_plug, floor, tip, sol.seat, hand, sol.speed, sol.u),
                {"wrench": wrench, "max_penetration": sol.penetration, "n_contacts": sol.m, "sweeps": sol.sweeps})

    def pull(self, model, sub: SocketState, body: int) -> np.ndarray:
        """(6,) [f_w N; tau_b N m]: what the hand holding `body` feels of the socket: the drive's
        pull on its set point after the last step.  Not the contacts' force itself: a hook's
        impact on the plug is an impulse of tens of newtons for a step, which held for the next
        step on the 0.5 kg proxy kicked it up and the plug after it (a session: 155 N, 2.3 mm into
        the hooks); through the admittance the hand feels it as the arm would, smoothed by the
        plug's mass -- and at rest the two are the same force.  The seat too: the set point the
        hand holds may go below it (the batch's waypoints end 4 mm under it), the plug not; a
        seat rendered rigid at the proxy stopped the set point at the seat, where the
        admittance's 2 kN/m could push the plug with 6 N, short of the 15 N the hooks take."""
        out = np.zeros(6)
        if body == self.body and sub.hand is not None:
            out[:3] = sub.hand
        return out

    def energy(self, sub: SocketState) -> float:
        """J, both prongs' elastic and kinetic energy (in the coupled model's modes)."""
        return sum(self.snap.modal.energy(sub.q[s], sub.qd[s]) for s in (0, 1))

    # ---- the view ----------------------------------------------------------------------------
    VIEW_NAME = "socket"           # the mesh the view draws it as (``snap_fit.meshes`` gives its rest shape)

    @cached_property
    def _view(self):
        sm = self.snap
        V, F, vertex, side = socket_surface(sm.prong.mesh, sm.prong.spec, sm.spacing, sm.seat_z)
        r = sm.modal.size
        B = np.zeros((len(V), 3, 2, r))                    # vertex motion per (side, mode)
        for s, sgn in enumerate((1.0, -1.0)):
            on = side == sgn
            B[on, :, s] = sm.vertex_P[vertex[on]]
            B[on, 0, s] *= sgn                             # the left prong is mirrored in x
        return V, F, B.reshape(len(V) * 3, 2 * r)

    @property
    def view_size(self) -> int:
        """How many numbers ``view_state`` puts in the physics snapshot."""
        return 2 * self.snap.modal.size

    def view_state(self, sub: SocketState) -> np.ndarray:
        return sub.q.ravel()

    def view_mesh(self) -> tuple[np.ndarray, np.ndarray]:
        """(rest vertices (n, 3) world, faces (F, 3)) of the socket."""
        V, F, _ = self._view
        return V, F

    def view_parts(self, numbers: np.ndarray) -> dict:
        """{mesh name: its vertices (n, 3), world} at the snapshot's ``view_state`` numbers."""
        V, _, B = self._view
        return {self.VIEW_NAME: V + (B @ numbers).reshape(-1, 3)}
