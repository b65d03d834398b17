"""The seed's contact solver against the PGS baseline, on the scenarios' own contact problems.

    python bench/solver.py [--tasks peg_in_hole bolting]

1. Per task, the headless scenario (neural detection, k-means M_c = 12 -- pinned: the learned
   default has a safety net that switches to k-means, block SOR with the
   C-space row) is run once and every step's solving problem is recorded: the
   PMI system, the 12 clustered contacts, the C-space row.  Each problem is then solved again,
   side by side in one run, by (a) PGS, (b) block SOR without and (c) with the C-space row,
   timing the solving stage (Jacobians, Delassus blocks, sweeps) -- median and p99 ms,
   sweeps used, and the constraint residuals of the SOR solutions.  The C-space stage
   (network + SQP for N^C) is timed on the same steps.
2. Each scenario is run headless with PGS and with the seed's solver (default config but
   k-means clustering, same everything else),
   and the maximum penetration of the moving part's nodes by the exact SDF is printed for
   both, with the task figure.
"""
from __future__ import annotations

import argparse
import copy
import time

import sim_core  # noqa: F401 - first: it sets the BLAS thread count the physics runs with

# isort: split
from dataclasses import replace  # noqa: E402

import numpy as np  # noqa: E402

from sim_core.contact import cspace, frames, materials, solver_pgs, solver_sor
from sim_core.contact import solvers as contact_solve  # noqa: E402
from sim_core.dynamics import blocks as dynamics
from sim_core.dynamics import pmi
from sim_core.scenarios import scenario

TARGET_MS = 0.5


def record(task: str):
    """(model, problems): per step with contacts, (state, reps, F0, B); the model has its
    C-space network loaded (the row is computed when timing)."""
    _, _, cfg = scenario.load(task)
    cfg = copy.deepcopy(cfg)
    cfg["contact"]["cspace"] = "on"
    cfg["contact"]["clustering"] = "kmeans"     # the solver's figures: k-means' 12 representatives
    model, state = scenario.build(cfg)
    probs = []

    def on_step(prev, inp, nxt, info):
        if info.contacts is not None and len(info.contacts):
            F0, B = dynamics.drive_terms(model.drive.K[0], model.drive.D[0], model.dt, prev.p_w[0], prev.R_wb[0],
                                         prev.V[0], inp.p_set_w[0], inp.R_set_w[0], inp.v_set_w[0],
                                         inp.w_set_w[0], inp.f_ext[0])
            probs.append((prev, info.contacts, F0, B))
    scenario.simulate(model, scenario.record(cfg), state, on_step=on_step)
    return model, probs


def time_solvers(model, probs):
    c = model.contact
    pgs, sor = replace(c, solver="pgs"), replace(c, solver="sor")
    body, shape, net = model.bodies[0], model.shapes[0], model.pairs[0].cspace
    out = {"pgs": [], "sor": [], "sor+C": [], "cspace": [], "sweeps": [], "sweeps+C": [], "res": []}
    for full, reps, F0, B in probs:
        st = full.body(0)
        t0 = time.perf_counter()
        row = cspace.row_for(net, body, shape, st)
        out["cspace"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        contact_solve.solve_body(pgs, reps, body, st, F0, B, model.dt)
        out["pgs"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        its = contact_solve.solve_body(sor, reps, body, st, F0, B, model.dt, warm=full.warm).sweeps
        out["sor"].append(time.perf_counter() - t0)
        out["sweeps"].append(its)
        t0 = time.perf_counter()
        its = contact_solve.solve_body(sor, reps, body, st, F0, B, model.dt, warm=full.warm, row=row).sweeps
        out["sor+C"].append(time.perf_counter() - t0)
        out["sweeps+C"].append(its)
        # residuals of the SOR solution (without C-space: the N-space conditions)
        A, b = pmi.system(body.mass, body.inertia_b, st.V, model.dt, F0, B)
        A_inv = np.linalg.inv(A)
        G, Cf = frames.contact_jacobians(reps.x_w, reps.n_w, st.p_w, st.R_wb)
        mu, beta = materials.uniform(c.material, len(reps))
        bn = solver_pgs.normal_targets(G, st.V, reps.d, model.dt, beta)
        lam0, _ = solver_sor.warm_start(reps, Cf, full.warm)
        lam, _, V, _, _, _ = solver_sor.sor(G, A_inv, A_inv @ b, bn, mu, c.sor_relaxation, c.sor_iterations,
                                            c.sor_tolerance, lam0, np.zeros(6), 0.0, 0.0)
        out["res"].append(solver_sor.residuals(G, A_inv, V, bn, mu, lam))
    return {k: np.array(v) for k, v in out.items()}


def penetration_runs(task: str):
    rows = []
    for solver in ("pgs", "sor"):
        _, _, cfg = scenario.load(task)
        cfg = copy.deepcopy(cfg)
        cfg["contact"]["solver"] = solver
        cfg["contact"]["clustering"] = "kmeans"
        model, state = scenario.build(cfg)
        res = scenario.simulate(model, scenario.record(cfg), state)
        s = scenario.summarize(res, state)
        fig = (f"advance {s['advance_per_rev_m'] * 1e3:.4f} mm/rev" if "advance_per_rev_m" in s
               else f"insertion {s['insertion_depth_m'] * 1e3:.2f} mm")
        rows.append((solver, s.get("max_penetration_exact_sdf_m", s["max_penetration_m"]), fig))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", nargs="+", default=["peg_in_hole", "bolting"])
    a = ap.parse_args(argv)
    for task in a.tasks:
        model, probs = record(task)
        time_solvers(model, probs[:5])                      # compile
        r = time_solvers(model, probs)
        print(f"\n{task}: {len(probs)} steps with contacts (M_c = {model.contact.clusters}); solving stage, ms")
        print(f"  {'solver':24s} {'median':>8s} {'p99':>8s} {'sweeps med':>10s} {'max':>5s}")
        for k, label, sw in (("pgs", "PGS (baseline)", None), ("sor", "block SOR", "sweeps"),
                             ("sor+C", "block SOR + C-space row", "sweeps+C"), ("cspace", "C-space stage (N^C)", None)):
            v = r[k] * 1e3
            extra = f" {np.median(r[sw]):10.0f} {r[sw].max():5d}" if sw else ""
            print(f"  {label:24s} {np.median(v):8.3f} {np.percentile(v, 99):8.3f}{extra}")
        print(f"  target: SOR + C-space <= {TARGET_MS} ms median -> {np.median(r['sor+C']) * 1e3:.3f} ms "
              f"({'met' if np.median(r['sor+C']) * 1e3 <= TARGET_MS else 'NOT met'})")
        res = r["res"]
        print(f"  SOR residuals, median / max over steps: Signorini {np.median(res[:, 0]):.1e}"
              f" / {res[:, 0].max():.1e} m/s, complementarity {np.median(res[:, 1]):.1e} / {res[:, 1].max():.1e} W,"
              f" cone {np.median(res[:, 2]):.1e} / {res[:, 2].max():.1e} N,"
              f" natural (dissipation) {np.median(res[:, 4]):.1e} / {res[:, 4].max():.1e} N")
        for solver, pen, fig in penetration_runs(task):
            print(f"  scenario with {solver.upper():3s}: max penetration (exact SDF) {pen * 1e6:7.1f} um, {fig}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
