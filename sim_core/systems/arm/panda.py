"""Franka Emika Panda: the project's description of the arm as data, and its URDF.

Kinematics: Franka's published modified (Craig) Denavit-Hartenberg parameters.  Joint
position, velocity and torque limits: Franka's published Panda limits.  Link masses,
centres of mass and inertias (about the centre of mass, in each link's DH frame): the
physically feasible set identified by Gaz, Cognetti, Oliva, Robuffo Giordano and De Luca,
"Dynamic identification of the Franka Emika Panda robot with retrieval of feasible
parameters using penalty-based optimization", IEEE RA-L 4(4), 2019.

The bolting arm adds the seed's infinite-turn gripper (seed 000 Sec. V.A): an 8th,
continuous joint about the flange's z axis carrying the gripper (n_r = 8); the peg-in-hole
arm has the gripper fixed to the flange (n_r = 7).  ``urdf_text`` writes the URDF that
``tightsim assets build`` stores in assets/robots/; Pinocchio reads it.
"""
from __future__ import annotations

import math

# modified DH per joint: (a_{i-1}, d_i, alpha_{i-1}) in m, m, rad
DH = [(0.0, 0.333, 0.0), (0.0, 0.0, -math.pi / 2), (0.0, 0.316, math.pi / 2),
      (0.0825, 0.0, math.pi / 2), (-0.0825, 0.384, -math.pi / 2), (0.0, 0.0, math.pi / 2),
      (0.088, 0.0, math.pi / 2)]
FLANGE_D = 0.107                                   # m, joint 7 to the flange along z

Q_MIN = [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973]    # rad
Q_MAX = [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973]          # rad
V_MAX = [2.1750, 2.1750, 2.1750, 2.1750, 2.6100, 2.6100, 2.6100]           # rad/s
TAU_MAX = [87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0]                       # N m

# (mass kg, centre of mass (m) in the link frame, inertia about it: ixx iyy izz ixy ixz iyz)
LINKS = [
    (4.970684, (3.875e-03, 2.081e-03, -4.762e-02),
     (7.03370e-01, 7.06610e-01, 9.11700e-03, -1.39000e-04, 6.77200e-03, 1.91690e-02)),
    (0.646926, (-3.141e-03, -2.872e-02, 3.495e-03),
     (7.96200e-03, 2.81100e-02, 2.59950e-02, -3.92500e-03, 1.02540e-02, 7.04000e-04)),
    (3.228604, (2.7518e-02, 3.9252e-02, -6.6502e-02),
     (3.72420e-02, 3.61550e-02, 1.08300e-02, -4.76100e-03, -1.13960e-02, -1.28050e-02)),
    (3.587895, (-5.317e-02, 1.04419e-01, 2.7454e-02),
     (2.58530e-02, 1.95520e-02, 2.83230e-02, 7.79600e-03, -1.33200e-03, 8.64100e-03)),
    (1.225946, (-1.1953e-02, 4.1065e-02, -3.8437e-02),
     (3.55490e-02, 2.94740e-02, 8.62700e-03, -2.11700e-03, -4.03700e-03, 2.29000e-04)),
    (1.666555, (6.0149e-02, -1.4117e-02, -1.0517e-02),
     (1.96400e-03, 4.35400e-03, 5.43300e-03, 1.09000e-04, -1.15800e-03, 3.41000e-04)),
    (0.735522, (1.0517e-02, -4.252e-03, 6.1597e-02),
     (1.25160e-02, 1.00270e-02, 4.81500e-03, -4.28000e-04, -1.19600e-03, -7.41000e-04)),
]
# the gripper body (the seed's infinite-turn gripper, a 0.73 kg hand-sized cylinder of
# radius 45 mm and 100 mm along z, centre 50 mm past the flange) and its joint's limits
GRIPPER = (0.73, (0.0, 0.0, 0.05), (0.0024, 0.0024, 0.00074, 0.0, 0.0, 0.0))
GRIPPER_V_MAX, GRIPPER_TAU_MAX = 9.6, 7.5        # rad/s, N m: an X5-1-class actuator (90 rpm)
TCP_D = 0.10                                       # m, flange to the grasp point along z


def _f(x: float) -> str:
    return repr(float(x))


def _inertial(mass, com, inertia) -> str:
    ixx, iyy, izz, ixy, ixz, iyz = inertia
    return (f'    <inertial><origin xyz="{_f(com[0])} {_f(com[1])} {_f(com[2])}" rpy="0 0 0"/>'
            f'<mass value="{_f(mass)}"/><inertia ixx="{_f(ixx)}" ixy="{_f(ixy)}" ixz="{_f(ixz)}" '
            f'iyy="{_f(iyy)}" iyz="{_f(iyz)}" izz="{_f(izz)}"/></inertial>\n')


def urdf_text(gripper_joint: bool) -> str:
    """The arm's URDF: 7 revolute joints, and the gripper on an 8th continuous joint
    (`gripper_joint`) or fixed to the flange."""
    name = "panda_gripper" if gripper_joint else "panda"
    out = [f'<?xml version="1.0"?>\n<!-- tightsim: Franka Emika Panda, sim_core/systems/arm/panda.py -->\n'
           f'<robot name="{name}">\n  <link name="base"/>\n']
    parent = "base"
    for i, ((a, d, alpha), (m, c, inertia)) in enumerate(zip(DH, LINKS), start=1):
        link = f"link{i}"
        out.append(f'  <link name="{link}">\n{_inertial(m, c, inertia)}  </link>\n')
        xyz = (a, -d * math.sin(alpha), d * math.cos(alpha))
        out.append(f'  <joint name="joint{i}" type="revolute"><parent link="{parent}"/><child link="{link}"/>'
                   f'<origin xyz="{_f(xyz[0])} {_f(xyz[1])} {_f(xyz[2])}" rpy="{_f(alpha)} 0 0"/>'
                   f'<axis xyz="0 0 1"/><limit lower="{_f(Q_MIN[i - 1])}" upper="{_f(Q_MAX[i - 1])}" '
                   f'velocity="{_f(V_MAX[i - 1])}" effort="{_f(TAU_MAX[i - 1])}"/></joint>\n')
        parent = link
    out.append('  <link name="flange"/>\n')
    out.append(f'  <joint name="flange_joint" type="fixed"><parent link="link7"/><child link="flange"/>'
               f'<origin xyz="0 0 {_f(FLANGE_D)}" rpy="0 0 0"/></joint>\n')
    m, c, inertia = GRIPPER
    out.append(f'  <link name="gripper">\n{_inertial(m, c, inertia)}  </link>\n')
    if gripper_joint:
        out.append(f'  <joint name="gripper_joint" type="continuous"><parent link="flange"/><child link="gripper"/>'
                   f'<origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="0 0 1"/>'
                   f'<limit velocity="{_f(GRIPPER_V_MAX)}" effort="{_f(GRIPPER_TAU_MAX)}"/></joint>\n')
    else:
        out.append('  <joint name="gripper_fixed" type="fixed"><parent link="flange"/><child link="gripper"/>'
                   '<origin xyz="0 0 0" rpy="0 0 0"/></joint>\n')
    out.append('  <link name="tcp"/>\n')
    out.append(f'  <joint name="tcp_joint" type="fixed"><parent link="gripper"/><child link="tcp"/>'
               f'<origin xyz="0 0 {_f(TCP_D)}" rpy="0 0 0"/></joint>\n</robot>\n')
    return "".join(out)
