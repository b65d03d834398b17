import os as _os

# One BLAS thread unless the user says otherwise (set before NumPy loads its BLAS).  The
# networks' products are small, a few thousand rows, and OpenBLAS's workers spin after each
# call on the cores numba's kernels (and, in a session, the other loops) need: measured on
# the bolting run, 5.0 ms a step with two BLAS threads, 2.1 ms with one.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _limit_blas() -> None:
    """Hold an already loaded BLAS to the same thread count (a host that imported NumPy
    first, e.g. pytest): the neural SDF's float32 products sum in an order that depends on
    the thread count, and the patch clustering's normal classes turn a last-bit difference
    into another contact set, so a log replayed with two threads drifted from its run with
    one (1.4e-7 m in 1.5 s).  threadpoolctl does what the variable does once BLAS is loaded."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:      # pragma: no cover - a dependency; the variable still applies
        return
    try:
        n = max(1, int(_os.environ["OPENBLAS_NUM_THREADS"]))
    except ValueError:
        n = 1
    threadpool_limits(limits=n, user_api="blas")


_limit_blas()


def _kernel_cache() -> None:
    """numba's kernels cached per source tree (``paths.use_numba_cache``: a changed callee in
    another file is never served stale), set before any kernel is defined; a damaged cache
    file is discarded and its kernel compiled again (``paths.use_kernel_cache_guard``)."""
    from sim_core.paths import use_kernel_cache_guard, use_numba_cache
    use_numba_cache()
    use_kernel_cache_guard()


_kernel_cache()
