"""The seed's bouncing ball in MuJoCo (seed 001 Sec. 4.2, Table 1's "Mujoco" row).

    python -c "from bench.peers.ball_mujoco import drop; print(drop(1e-4, 1.0)['z'].max())"

The ball of `bench.peers` (m = 1 kg, R = 0.1 m, the seed's I = 0.1 kg m^2 on every axis --
a solid sphere would have 0.004, which a straight drop never feels) on a free joint,
dropped from rest with its centre at 1.0 m onto a plane, g = 9.81.

What MuJoCo can express.  A contact is a soft constraint: the solver makes the normal
acceleration a1 = (1 - d) a0 + d a_ref with a_ref = -b v - k d r (r the signed distance, v
its rate, d the impedance of `solimp`).  Two parameterisations of (k, b):
  * solref = (timeconst, dampratio) > 0: a mass-normalised spring of natural period about
    2 pi timeconst dampratio and damping ratio dampratio.  Restitution 1 needs damping ratio
    0, which this form cannot give (dampratio = 0 makes k infinite), and MuJoCo raises
    timeconst to 2 dt whenever it is smaller (the `refsafe` flag) -- the softening that lets
    its default contact run at 16 ms steps;
  * solref = (-stiffness, -damping) <= 0: k and b directly, as accelerations per metre and
    per m/s (N/m and N s/m for a unit effective mass, which the ball's normal direction is:
    the contact normal passes through its centre).
Chosen here: solref = (-140e6, 0), the seed's K = 140e6 N/m and no damping (restitution 1),
with solimp dmin = dmax = 0.9999 (MuJoCo's largest impedance), so d is constant and the
contact is K delta with gravity (1 - d) = 1e-4 of its value during contact.  condim = 1: a
frictionless normal constraint (a straight drop has no tangential motion to resist, and a
pyramidal friction cone would mix the normal force into its edges).  Integrator "Euler",
MuJoCo's semi-implicit Euler (velocity first, then position with the new velocity); the
spring is explicit in the step, so the contact (period 2 pi sqrt(m/K) = 0.53 ms) is
resolved only for steps well below 2 sqrt(m/K) = 0.17 ms.  Both geoms carry the same
solref/solimp, so MuJoCo's mixing (a solmix-weighted mean) gives these values exactly.
"""
from __future__ import annotations

from bench.peers import GRAVITY, INERTIA, MASS, RADIUS, STIFFNESS, Z0, record

SOLIMP = "0.9999 0.9999 0.001 0.5 2"      # dmin dmax width midpoint power: constant d = 0.9999


def model_xml(dt: float, stiff: bool = True) -> str:
    """MJCF of the ball over a plane at time step dt (s); stiff=False keeps MuJoCo's default
    contact (solref 0.02 1, solimp 0.9 0.95 0.001), the setting of its 16 ms in Table 1."""
    contact = (f'condim="1" solref="{-STIFFNESS:.9g} 0" solimp="{SOLIMP}"' if stiff
               else 'condim="1"')
    return f"""<mujoco model="seed001_ball">
  <option timestep="{dt:.17g}" gravity="0 0 {-GRAVITY}" integrator="Euler"/>
  <worldbody>
    <geom name="ground" type="plane" size="1 1 0.1" {contact}/>
    <body name="ball" pos="0 0 {Z0}">
      <freejoint/>
      <inertial pos="0 0 0" mass="{MASS}" diaginertia="{INERTIA} {INERTIA} {INERTIA}"/>
      <geom name="ball" type="sphere" size="{RADIUS}" {contact}/>
    </body>
  </worldbody>
</mujoco>"""


def drop(dt: float, duration: float, stiff: bool = True) -> dict:
    """Drop the ball for `duration` s at the fixed step `dt` (s): arrays "t" (s), "z" (m, centre
    height) and "vz" (m/s), one entry per step end, the initial state first.  stiff=False:
    MuJoCo's default (soft, critically damped) contact instead of K = 140e6 N/m."""
    import mujoco
    m = mujoco.MjModel.from_xml_string(model_xml(dt, stiff))
    d = mujoco.MjData(m)
    def step():
        mujoco.mj_step(m, d)
        return d.time, d.qpos[2], d.qvel[2]                # qpos[2]: centre z; qvel[2]: world vz
    return record(dt, duration, step, d.qpos[2])
