"""Frames per second of the OpenGL view drawing the bolting scene (figures only).

Runs under the current DISPLAY (e.g. ``xvfb-run -s "-screen 0 1280x720x24" python
bench/render_fps.py``).  Each frame animates the stand-in bolting snapshot (nut turning,
contacts and arrows moving, HUD text changing every frame as the clock does), draws it,
presents it when the window is visible, and waits for the renderer (glFinish) so the time
is the whole frame, not just command submission.  Prints median and p99 frame time and the
fps they imply, per configuration, after a short warm-up (mesh upload, shader compile), and
the process CPU time per frame (llvmpipe's raster threads included): the share of the
machine a 60 fps render loop takes from the haptic and physics processes.
Mesa's ``LP_NUM_THREADS`` sets llvmpipe's thread count (default: one per core).

    python bench/render_fps.py [--seconds 5] [--width 1280] [--height 720]
                               [--samples 1 4] [--hidden] [--arm]

"direct" is the interactive session's configuration: one sample, drawn straight into the
shown window's back buffer (no offscreen framebuffer to copy).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np


def run(seconds: float, width: int, height: int, samples: int, visible: bool, arm: bool,
        direct: bool = False) -> dict:
    from app.view.scene import bolting_snapshot
    from app.view.window import View

    with View(width, height, visible=visible, samples=samples, direct=direct) as view:
        t_load = time.perf_counter()
        view.draw(bolting_snapshot(0.0, with_arm=arm))
        view.finish()
        first = time.perf_counter() - t_load
        for i in range(10):                                   # warm-up
            view.poll()
            view.draw(bolting_snapshot(0.01 * i, with_arm=arm))
            view.finish()
        times = []
        cpu0 = time.process_time()                            # all threads: llvmpipe's too
        t_end = time.perf_counter() + seconds
        k = 0
        while time.perf_counter() < t_end:
            snap = bolting_snapshot(0.6 + k / 60.0, with_arm=arm)   # 60 Hz session clock
            t0 = time.perf_counter()
            view.poll()
            view.draw(snap)
            view.finish()
            times.append(time.perf_counter() - t0)
            k += 1
        cpu = time.process_time() - cpu0
        info = (view.gl_renderer, view.gl_version, view._target.samples, view._target.direct)
    ft = np.array(times) * 1e3
    return {"samples": info[2], "direct": info[3], "frames": len(ft), "median_ms": float(np.median(ft)),
            "p99_ms": float(np.percentile(ft, 99)), "first_ms": first * 1e3,
            "cpu_ms": cpu * 1e3 / len(ft),
            "renderer": info[0], "gl": info[1]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=720)
    ap.add_argument("--samples", type=int, nargs="+", default=[1, 4], help="MSAA samples to try")
    ap.add_argument("--hidden", action="store_true", help="offscreen window (no present)")
    ap.add_argument("--arm", action="store_true", help="also draw the gripper stand-in")
    a = ap.parse_args(argv)
    print(f"DISPLAY={os.environ.get('DISPLAY', '')!r}  {a.width}x{a.height}  "
          f"{'hidden' if a.hidden else 'visible'} window, {a.seconds:g} s per configuration")
    configs = [(s, False) for s in a.samples]
    if 1 in a.samples and not a.hidden:
        configs.insert(0, (1, True))        # the session's path: no offscreen copy
    for s, direct in configs:
        r = run(a.seconds, a.width, a.height, s, not a.hidden, a.arm, direct)
        label = "direct " if r["direct"] else "MSAA x" + str(r["samples"])
        print(f"  {label:7s}: {r['frames']} frames  median {r['median_ms']:.2f} ms "
              f"({1e3 / r['median_ms']:.1f} fps)  p99 {r['p99_ms']:.2f} ms "
              f"({1e3 / r['p99_ms']:.1f} fps)  first frame {r['first_ms']:.0f} ms")
        print(f"           CPU {r['cpu_ms']:.2f} ms per frame (all threads) = "
              f"{r['cpu_ms'] * 60 / 1e3:.2f} cores at 60 fps")
    print(f"  renderer: {r['renderer']}, OpenGL {r['gl']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
