"""Contact materials: what a pair's contacts obey, apart from the world's solver settings.

A world's ``ContactParams`` (its ``[contact]`` table) holds the solver settings -- which
solver, its sweeps and tolerances, the clustering -- and the **default material**: friction
mu, penetration gain beta, detection band and contact law.  A pair may carry a material of
its own (``ContactPair.material``; ``None``: the default), so a nut on a bolt (mu 0.15), a
cable on a drum (mu 0.3) and a frictionless guide share one world and one solve.

The band acts at detection (``pair_params``: the pair's detector sees its own band); mu and
beta act in the solve, per contact: ``per_contact`` turns the contacts' pair indices
(``Contacts.pair``) into the arrays mu (m,) and beta (m,) that every solver kernel takes
(``solver_sor``, ``solver_pgs``, ``solvers.push_out``, the haptic proxy).  A kernel sees
only numbers per contact, so the same arithmetic runs whether a world has one material or
many: a uniform mu gives the bitwise result of the scalar it replaced.

The contact **law** is the key of ``LAWS``: ``complementarity``, rigid contact, Signorini's
condition with the penetration push-out (``solver_pgs`` module docstring) and Coulomb's cone
with maximum dissipation (``solver_sor``); and ``compliant``, seed 001's spring-damper normal
force (``stiffness``, ``restitution``, ``model``; ``contact.compliant``), solved analytically
over the step before the configured solver (``contact.compliant_stage``).  A ``Law`` row
names its parameters (read from a ``[materials.NAME]`` table, checked against
``Law.params``) and the solvers it runs with.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from sim_core.types import ContactPair, ContactParams, Contacts, Material, Model


@dataclass(frozen=True)
class LawParam:
    """One parameter of a contact law: its bounds (inclusive; `gt` exclusive), unit and meaning."""
    lo: float | None
    hi: float
    unit: str
    doc: str
    gt: float | None = None        # exclusive lower bound (a stiffness, a restitution: > 0)
    default: float | None = None   # None: the [materials.NAME] table must give it
    kind: str = "float"            # "int": a choice by number (the compliant law's model)


@dataclass(frozen=True)
class Law:
    """A contact law: what its material's parameters are and which solvers implement it."""
    doc: str
    params: dict[str, LawParam]    # the law's own parameters: keys of a [materials.NAME] table
    solvers: tuple[str, ...]       # the keys of contact.SOLVERS that solve it


LAWS: dict[str, Law] = {
    "complementarity": Law(
        doc="rigid contact: Signorini with the penetration push-out, Coulomb's cone with maximum "
            "dissipation (seed 000 eqs. (2), (3), (7))",
        params={}, solvers=("sor", "pgs", "pgs_subspace")),
    "compliant": Law(
        doc="seed 001's spring-damper normal force (contact.compliant), analytic over the step "
            "(contact.compliant_stage); Coulomb friction with that normal force held",
        params={
            "stiffness": LawParam(None, 1e15, "N/m", "K of the spring (N/m^1.5 for model 3)", gt=0.0),
            "restitution": LawParam(None, 1.0, "", "coefficient of restitution e, (0, 1]: the damping "
                                    "from seed 001 eq. (10)", gt=0.0),
            "model": LawParam(0, 3, "", "0 Kelvin-Voigt (may pull: rebound ratio e exactly), 1 Kelvin-Voigt "
                              "clamped at zero force, 2 Hunt-Crossley (n = 1), 3 Hunt-Crossley Hertz (n = 1.5)",
                              default=0, kind="int"),
        }, solvers=("sor", "pgs")),
}


def law_param(material: Material, name: str) -> float:
    """A law parameter of a material (its default where the table left it out)."""
    for k, v in material.law_params:
        if k == name:
            return v
    p = LAWS[material.law].params[name]
    if p.default is None:
        raise KeyError(f"material has no {name!r}")
    return float(p.default)


def compliant_pairs(model: Model) -> np.ndarray:
    """(P,) bool: the pairs whose material's law is "compliant" (cached on the constant model)."""
    got = model.__dict__.get("_compliant_cache")
    if got is None:
        got = np.array([material_of(model.contact, p).law == "compliant" for p in model.pairs], bool)
        object.__setattr__(model, "_compliant_cache", got)
    return got


def material_of(params: ContactParams, pair: ContactPair) -> Material:
    """The pair's material: its own, or the world's default (``params.material``)."""
    return params.material if pair.material is None else pair.material


@lru_cache(maxsize=256)
def _with_band(params: ContactParams, band: float) -> ContactParams:
    return replace(params, band=band)


def pair_params(params: ContactParams, pair: ContactPair) -> ContactParams:
    """The contact parameters a pair's detector sees: the world's, with the pair's band (the
    very object ``params`` where the band is the default's, so the detection is unchanged)."""
    if pair.material is None or pair.material.band == params.band:
        return params
    return _with_band(params, pair.material.band)


LAW_SOLVERS = ("pgs", "pgs_subspace")    # the solvers that implement seed 002 eq. (8)'s friction law


def check_solver(model: Model) -> None:
    """ValueError where a pair's law is unknown or the configured solver does not implement it."""
    for k, pair in enumerate(model.pairs):
        law = material_of(model.contact, pair).law
        if law not in LAWS:
            raise ValueError(f"pair {k}: unknown contact law {law!r} (known: {', '.join(LAWS)})")
        if material_of(model.contact, pair).friction_exponent != 1.0 and model.contact.solver not in LAW_SOLVERS:
            raise ValueError(f"pair {k}: friction_exponent != 1 (seed 002 eq. (8)) needs solver "
                             f"{' or '.join(map(repr, LAW_SOLVERS))}, got {model.contact.solver!r}")
        if model.contact.solver not in LAWS[law].solvers:
            raise ValueError(f"pair {k}: contact law {law!r} is not solved by solver {model.contact.solver!r} "
                             f"(by: {', '.join(LAWS[law].solvers)})")


def uniform(material: Material, m: int) -> tuple[np.ndarray, np.ndarray]:
    """mu (m,) and beta (m,) of m contacts of one material."""
    return np.full(m, material.friction), np.full(m, material.penetration_gain)


def per_contact(model: Model, contacts: Contacts) -> tuple[np.ndarray, np.ndarray]:
    """The friction mu (m,) and the penetration gain beta (m,) of each contact, from its pair's
    material (``Contacts.pair``; None: pair 0)."""
    first, same, mu, beta = _by_pair(model)
    if same or contacts.pair is None:
        return uniform(first, len(contacts))
    return mu[contacts.pair], beta[contacts.pair]


def exponents(model: Model, contacts: Contacts) -> np.ndarray | None:
    """N (m,) of each contact's friction law ||f_t|| <= mu f_n^N (``Material.friction_exponent``),
    or None where every contact's is 1 (Coulomb: the kernels' arithmetic of before)."""
    got = model.__dict__.get("_exponent_cache")
    if got is None:
        mats = [material_of(model.contact, p) for p in model.pairs] or [model.contact.material]
        got = np.array([x.friction_exponent for x in mats])
        object.__setattr__(model, "_exponent_cache", got)
    if np.all(got == 1.0):
        return None
    return got[contacts.pairs()]


def _by_pair(model: Model):
    """(pair 0's material (the default without pairs), whether every pair has the default,
    mu (P,), beta (P,) per pair): cached on the model, which is constant (``dataclasses.replace``
    makes a new one)."""
    got = model.__dict__.get("_materials_cache")
    if got is None:
        mats = [material_of(model.contact, p) for p in model.pairs]
        got = (mats[0] if mats else model.contact.material, all(p.material is None for p in model.pairs),
               np.array([x.friction for x in mats]), np.array([x.penetration_gain for x in mats]))
        object.__setattr__(model, "_materials_cache", got)
    return got


def from_table(t: dict) -> Material:
    """The Material of a validated [materials.NAME] table (``config``), or of [contact]'s
    material keys; the law's own parameters by name."""
    own = LAWS[t["law"]].params
    return Material(float(t["friction"]), float(t["penetration_gain"]), float(t["band"]), t["law"],
                    tuple(sorted((k, float(t[k])) for k in own)), float(t.get("friction_exponent", 1.0)))
