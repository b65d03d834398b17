"""The 1 kHz side: PMI proxy, four-channel passive coupling, passivity observer/controller.

Pure computation; the session runs it in its own process (ARCHITECTURE sec. 3).  One tick:

    lc = LocalContact.from_array(shared_buffer)           # latest from the physics loop (or None)
    f_dev, F, B = coupling.step(p, q, v, w, proxy, proxy.env_wrench, T, clutch=...)
    proxy.step(F, B, lc, T)                               # PMI + contacts at 1 kHz
    device.write(f_dev)                                   # [N; N m], device base axes

Modules: ``local_contact`` (the contact model the physics loop publishes, its shared-memory
packing and first-order gap update), ``proxy`` (PMI proxy; ``solve_contacts`` is the one
call into the contact solver), ``coupling`` (workspace map, clutch, channels, ramps,
limits, passivity observer/controller), ``batch`` (the same kernels looped in numba, for
tests and benchmarks).
"""
import sim_core  # noqa: E402,F401 - numba's kernel cache is set up before any kernel here
