"""Offline training of the C-space surface h(q) of a task (seed 000 Sec. IV.A, V.B).

Data: configurations of the moving part near the ones a task passes through -- every step of
the task's headless run (approach, first contact, engagement), each perturbed by a random
translation and rotation whose size is drawn log-uniformly from 1 um / 3 urad up to 0.5 mm /
10 mrad, so most samples lie close to the collision surface and some far from it.  Each is
labelled with the exact detector: colliding if any contact node of the moving part is inside
the static part (exact SDF < 0), free otherwise.  70 % train, 30 % held out.

Training: the seed's tanh 64-64 network with a sigmoid output, binary cross-entropy on the
labels (free = 1), Adam with cosine decay, torch, seeded.  The report gives the held-out
accuracy overall and near the surface (perturbations up to 20 um / 0.1 mrad).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim_core import shapes
from sim_core.collision import broadphase
from sim_core.contact import cspace
from sim_core.math.so3 import exp_so3, log_so3
from sim_core.types import BodyPose

NEAR_P, NEAR_R = 2e-5, 1e-4      # m, rad: "near the surface" perturbation sizes (held-out report)
SCALE_P = (3e-7, 1e-4)           # m, range of the translation perturbation sizes (log-uniform)
SCALE_R = (1e-6, 2e-3)           # rad, same for rotations
HELD_OUT = 0.3
ALONG = 0.5                      # share of samples on the way from a base pose to its aligned pose


@dataclass
class CSpaceSettings:
    samples: int = 60_000
    steps: int = 6000
    batch: int = 4096
    lr: float = 3e-3
    seed: int = 0
    threads: int = 1


def base_configurations(task: str) -> tuple[object, dict, list]:
    """The model and config of a task and (p_s, R_sb) at every step of its headless run."""
    from sim_core import config as config_mod
    from sim_core.paths import scenario_path
    from sim_core.scenarios import scenario
    cfg = config_mod.load(scenario_path(task))
    cfg["contact"]["cspace"] = "off"            # the data comes from the N-space model alone
    model, state = scenario.build(cfg, str(scenario_path(task)))
    shape = model.shapes[0]
    poses = []
    scenario.simulate(model, scenario.record(cfg), state,
                      on_step=lambda prev, inp, nxt, info: poses.append(
                          (shape.R_ws.T @ (nxt.p_w[0] - shape.p_ws), shape.R_ws.T @ nxt.R_wb[0])))
    return model, cfg, poses


def perturb(poses, n: int, rng: np.random.Generator, along: float = ALONG):
    """n configurations around the base poses: (P (n,3), R (n,3,3), sizes (n,2)).  A fraction
    `along` first moves the base pose a uniform fraction of the way to its aligned pose, so
    the samples also cover the way out of a tilted, offset contact to the free region, where
    the surface the SQP looks for lies."""
    k = rng.integers(0, len(poses), n)
    sp = np.exp(rng.uniform(*np.log(SCALE_P), n))
    sr = np.exp(rng.uniform(*np.log(SCALE_R), n))
    dp = rng.standard_normal((n, 3)) * sp[:, None]
    dw = rng.standard_normal((n, 3)) * sr[:, None]
    frac = np.where(rng.random(n) < along, rng.random(n), 0.0)
    P = np.empty((n, 3))
    R = np.empty((n, 3, 3))
    for j, i in enumerate(k):
        p0, R0 = poses[i]
        pa, Ra = cspace.aligned(p0, R0)
        P[j] = p0 + frac[j] * (pa - p0) + dp[j]
        R[j] = R0 @ exp_so3(frac[j] * log_so3(R0.T @ Ra)) @ exp_so3(dw[j])
    return P, R, np.stack([sp, sr], 1)


def label(model, P, R, progress=None) -> np.ndarray:
    """1 where the configuration is collision-free (no node inside the static part by the
    exact SDF), 0 where it collides."""
    out = np.empty(len(P))
    body, shape = shapes.nodes_of(model, 0), model.shapes[0]
    exact = shape.sdf_exact
    for i in range(len(P)):
        p_w = shape.R_ws @ P[i] + shape.p_ws
        st = BodyPose(0.0, p_w, shape.R_ws @ R[i], np.zeros(6))
        _, x_s = broadphase.candidates(body, shape, st, model.contact.broadphase_margin, 0.0)
        out[i] = 1.0 if x_s.shape[0] == 0 or exact.query(x_s)[0].min() >= 0.0 else 0.0
        if progress is not None and i % 200 == 0:
            progress(i)
    return out


def train(task: str, settings: CSpaceSettings | None = None, progress: bool = True):
    """Generate, label and train; returns (net, report dict)."""
    import torch

    from sim_core.geometry import profiles
    from sim_core.io.progress import Progress
    s = settings or CSpaceSettings()
    t0 = time.perf_counter()
    model, cfg, poses = base_configurations(task)
    rng = np.random.default_rng(s.seed)
    P, R, sizes = perturb(poses, s.samples, rng)
    bar = Progress(s.samples, f"label {task}") if progress else None
    y = label(model, P, R, bar)
    if bar:
        bar(s.samples)
    kind = cspace.TASK_KIND[task]
    parts = profiles.all_parts()
    static, moving = parts[cfg["parts"]["static"]], parts[cfg["parts"]["moving"]]
    lead, pitch = (static.thread.c, static.thread.p) if kind == "nut" else (0.0, 1.0)
    F = cspace.features(kind, lead, pitch, P, R)
    mean, std = F.mean(0), F.std(0) + 1e-12
    Fn = (F - mean) / std
    n_train = int(round((1 - HELD_OUT) * len(y)))
    order = rng.permutation(len(y))
    tr, te = order[:n_train], order[n_train:]

    torch.manual_seed(s.seed)
    torch.set_num_threads(s.threads)
    k = F.shape[1]
    net = torch.nn.Sequential(torch.nn.Linear(k, cspace.HIDDEN), torch.nn.Tanh(),
                              torch.nn.Linear(cspace.HIDDEN, cspace.HIDDEN), torch.nn.Tanh(),
                              torch.nn.Linear(cspace.HIDDEN, 1))
    opt = torch.optim.Adam(net.parameters(), lr=s.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, s.steps)
    X = torch.as_tensor(Fn[tr], dtype=torch.float32)
    Y = torch.as_tensor(y[tr], dtype=torch.float32)
    gen = torch.Generator().manual_seed(s.seed)
    lossf = torch.nn.BCEWithLogitsLoss()
    bar = Progress(s.steps, f"train {task}") if progress else None
    for step in range(s.steps):
        idx = torch.randint(0, X.shape[0], (min(s.batch, X.shape[0]),), generator=gen)
        opt.zero_grad()
        loss = lossf(net(X[idx])[:, 0], Y[idx])
        loss.backward()
        opt.step()
        sched.step()
        if bar and (step % 50 == 0 or step == s.steps - 1):
            bar(step + 1, f"loss {loss.item():.4f}")
    lin = [m for m in net if isinstance(m, torch.nn.Linear)]
    g = lambda t: t.detach().numpy().astype(np.float64)  # noqa: E731
    digest = cspace.pair_digest(static, moving)
    out = cspace.CSpaceNet(task=task, kind=kind, lead=lead, pitch=pitch, mean=mean, std=std,
                           W1=g(lin[0].weight), b1=g(lin[0].bias), W2=g(lin[1].weight), b2=g(lin[1].bias),
                           W3=g(lin[2].weight), b3=g(lin[2].bias), digest=digest)
    pred = out.logit(P[te], R[te]) >= 0.0
    truth = y[te] > 0.5
    near = (sizes[te, 0] <= NEAR_P) & (sizes[te, 1] <= NEAR_R)
    report = {"task": task, "samples": int(len(y)), "held_out": int(len(te)),
              "colliding_fraction": float(1 - y.mean()),
              "accuracy_held_out": float((pred == truth).mean()),
              "near_surface_points": int(near.sum()),
              "accuracy_near_surface": float((pred[near] == truth[near]).mean()) if near.any() else float("nan"),
              "near_surface_colliding_fraction": float(1 - truth[near].mean()) if near.any() else float("nan"),
              "false_free": float((pred & ~truth).mean()), "false_colliding": float((~pred & truth).mean()),
              "steps": s.steps, "batch": s.batch, "seed": s.seed,
              "train_seconds": round(time.perf_counter() - t0, 1)}
    return out, report


def pair_name(task: str) -> str:
    """File stem of a task's C-space weights: the part pair, so that every scenario with the
    same two parts uses them."""
    from sim_core import config as config_mod
    from sim_core.paths import scenario_path
    cfg = config_mod.load(scenario_path(task))
    return f"{cfg['parts']['static']}__{cfg['parts']['moving']}"


def write(task: str, net, report: dict, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = pair_name(task)
    net.save(out_dir / f"{stem}.npz")
    (out_dir / f"{stem}.json").write_text(json.dumps(report, indent=1) + "\n")
    return out_dir / f"{stem}.npz"
