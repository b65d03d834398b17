"""The application: command line, sessions, (later) the OpenGL view, logging and replay."""
import os as _os

# One BLAS thread unless the user says otherwise (set before NumPy loads its BLAS).  The
# networks' products are small, a few thousand rows, and OpenBLAS's workers spin after each
# call on the cores numba's kernels (and, in a session, the other loops) need: measured on
# the bolting run, 5.0 ms a step with two BLAS threads, 2.1 ms with one.
_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

