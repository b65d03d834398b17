"""Named fields over a flat float64 record (what the shared-memory slots and rings carry)."""
from __future__ import annotations

import numpy as np


class Layout:
    """``Layout(t=1, p=3, R=9)``: offsets of named fields in a float64 vector."""

    def __init__(self, **sizes: int):
        self.slices: dict[str, slice] = {}
        o = 0
        for name, n in sizes.items():
            self.slices[name] = slice(o, o + n)
            o += n
        self.size = o

    def pack(self, out: np.ndarray | None = None, **values) -> np.ndarray:
        v = np.zeros(self.size) if out is None else out
        for name, x in values.items():
            v[self.slices[name]] = np.ravel(x)
        return v

    def get(self, v: np.ndarray, name: str) -> np.ndarray:
        return v[self.slices[name]]

    def unpack(self, v: np.ndarray) -> dict:
        return {k: v[s] for k, s in self.slices.items()}


MAX_CONTACTS = 32
ARM_NQ, ARM_NV = 9, 8      # the Panda's configuration (its infinite-turn gripper as cos, sin) and velocities

# haptic loop -> physics, render: the proxy and the loop's health (written every tick)
PROXY = Layout(t=1, p=3, R=9, V=6, device_wrench=6, proxy_contact=6, energy=1, period=1, work=1,
               late=1, fault=1, realtime=1, ticks=1, device_p=3, device_q=4)


def snapshot_layout(bodies: int = 1, shape: int = 0) -> Layout:
    """physics -> render: every body's pose and the contacts (written every physics step),
    sized by the world's body count: ``p`` (B*3) m, each body's COM (world), ``R`` (B*9),
    each body's rotation (row-major, world from body); ``n`` contacts at ``x`` (m, world) with
    forces ``f`` (N, world) on the bodies; the arm's configuration; the live task figure
    (``scenario.LiveFigures`` / ``task_fields``, drawn by the HUD); ``shape``: the systems'
    numbers for the view (``systems.base.view_numbers``: the snap socket's prong modes), as many
    as the world has (``systems.base.view_size``)."""
    return Layout(t=1, p=3 * bodies, R=9 * bodies, n=1, x=3 * MAX_CONTACTS, f=3 * MAX_CONTACTS, rate=1, step=1,
                  max_pen=1, misses=1, steps=1, nq=1, q=ARM_NQ,
                  task=1, task_value=1, task_aux=1, task_met=1, shape=shape)


SNAPSHOT = snapshot_layout(1)        # a one-body world's (each shipped scenario's)
# haptic loop -> logger: one record per tick
# (``seq``: the record's number, stamped by ``shm.RingWriter`` so the logger finds any gap)
TICK = Layout(t=1, dev_p=3, dev_q=4, dev_v=3, dev_w=3, buttons=1, p=3, R=9, V=6, device_wrench=6,
              energy=1, period=1, work=1, seq=1)
# physics loop -> logger: one record per physics step (everything replay needs, bit-exact): the
# inputs of the step and its length, the held part (``Model.hand_body``) and the arm after it
STAGE_NAMES = ("broadphase", "detection", "clustering", "cspace", "arm", "solving", "integration")
PHYS = Layout(t=1, dt=1, p_set=3, R_set=9, v_set=3, w_set=3, f_ext=6, t_after=1, p=3, R=9, V=6, wrench=6,
              max_pen=1, n_contacts=1, n_clusters=1, fallback=1, times=len(STAGE_NAMES),
              nq=1, q=ARM_NQ, nv=1, qd=ARM_NV, tau=ARM_NV, seq=1)


def arm_fields(st, info=None) -> dict:
    """The arm's q, qd (and motor torques) of a state, padded to the layout's sizes."""
    from sim_core.systems.arm.system import joints
    aq, aqd = joints(st)
    q, qd = np.zeros(ARM_NQ), np.zeros(ARM_NV)
    q[:aq.size], qd[:aqd.size] = aq, aqd
    out = {"nq": aq.size, "q": q, "nv": aqd.size, "qd": qd}
    if info is not None:
        tau = np.zeros(ARM_NV)
        tau[:info.tau.size] = info.tau
        out["tau"] = tau
    return out


def pack_physics(before, inp, after, info, out: np.ndarray | None = None, body: int = 0) -> np.ndarray:
    """A ``PHYS`` record of a step: the inputs and the state of `body` (the held part)."""
    b = body
    return PHYS.pack(out, t=before.t, dt=info.dt, p_set=inp.p_set_w[b], R_set=inp.R_set_w[b],
                     v_set=inp.v_set_w[b], w_set=inp.w_set_w[b], f_ext=inp.f_ext[b], t_after=after.t,
                     p=after.p_w[b], R=after.R_wb[b], V=after.V[b], wrench=info.contact_wrench[b],
                     max_pen=info.max_penetration, n_contacts=info.n_contacts, n_clusters=info.n_clusters,
                     fallback=float(info.fallback), times=[info.times.get(k, 0.0) for k in STAGE_NAMES],
                     **arm_fields(after, info))
