"""Reading trained-weight files (.npz) with one-line errors naming the file and the field.

Shared by the neural SDF (``neural_sdf``) and the C-space model (``cspace``): every field is
checked for presence, type, shape and finiteness before any of it is used.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


class WeightsError(ValueError):
    """A weight file that cannot be used (one line: file, field, what is wrong)."""


def read_npz(path, missing_hint: str) -> Fields:
    """Open a weight file; `missing_hint` completes the message when it does not exist."""
    path = Path(path)
    try:
        z = np.load(path, allow_pickle=False)
        data = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise WeightsError(f"{path}: no such weight file ({missing_hint})") from None
    except Exception as e:  # noqa: BLE001 - zip, header or array errors: all mean "corrupt"
        raise WeightsError(f"{path}: not a readable .npz weight file ({type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else 'corrupt'})") from None
    return Fields(path, data)


class Fields:
    """Checked access to the arrays of one weight file."""

    def __init__(self, path: Path, data: dict):
        self.path, self.data = path, data

    def error(self, msg: str) -> WeightsError:
        return WeightsError(f"{self.path}: {msg}")

    def str(self, name: str) -> str:
        a = self._get(name)
        if a.dtype.kind != "U" or a.shape != ():
            raise self.error(f"field {name!r} must be a string, got {a.dtype} {a.shape}")
        return str(a)

    def array(self, name: str, shape=None) -> np.ndarray:
        a = self._get(name)
        if a.dtype.kind not in "fi":
            raise self.error(f"field {name!r} must be numeric, got {a.dtype}")
        if shape is not None and a.shape != shape:
            raise self.error(f"field {name!r} has shape {a.shape}, expected {shape}")
        if not np.all(np.isfinite(a)):
            raise self.error(f"field {name!r} holds NaN or infinite values")
        return a

    def number(self, name: str, lo: float | None = None, hi: float | None = None, *, above: float | None = None,
               why: str = "") -> float:
        """A finite scalar within its range: "FILE: field 'scale' must be > 0 (got -0.004)"."""
        return float(self.bounded(name, (), lo, hi, above=above, why=why))

    def bounded(self, name: str, shape, lo: float | None = None, hi: float | None = None, *,
                above: float | None = None, why: str = "", index=None) -> np.ndarray:
        """``array`` whose entries (or the entries at `index`, and `name` then names them as
        ``name[i]``) are >= lo (or > above) and <= hi."""
        a = self.array(name, shape)
        picked = a if index is None else a[np.asarray(index)]
        flat = np.atleast_1d(picked).ravel()
        ok = np.ones(flat.shape, bool)
        if lo is not None:
            ok &= flat >= lo
        if above is not None:
            ok &= flat > above
        if hi is not None:
            ok &= flat <= hi
        if not ok.all():
            i = int(np.argmin(ok))
            where = name if a.ndim == 0 else f"{name}[{int(np.atleast_1d(index)[i]) if index is not None else i}]"
            cond = " and ".join(f"{op} {v:g}" for op, v in ((">=", lo), (">", above), ("<=", hi)) if v is not None)
            raise self.error(f"field {where!r} must be {cond} (got {flat[i]:g})" + (f": {why}" if why else ""))
        return a

    def choice(self, name: str, allowed) -> str:
        got = self.str(name)
        if got not in allowed:
            raise self.error(f"field {name!r} is {got!r}, expected one of {sorted(allowed)}")
        return got

    def same(self, name: str, asked: str | None, what: str) -> str:
        """A string field that must equal what the caller asked for (when it asks)."""
        got = self.str(name)
        if asked is not None and got != asked:
            raise self.error(f"field {name!r} is {got!r}, but these weights were asked for {what} {asked!r}")
        return got

    def expect(self, name: str, value: str) -> str:
        got = self.str(name)
        if got != value:
            raise self.error(f"field {name!r} is {got!r}, expected {value!r}")
        return got

    def _get(self, name: str) -> np.ndarray:
        if name not in self.data:
            raise self.error(f"field {name!r} is missing")
        return self.data[name]


def save_npz(path, arrays: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:             # np.savez would add ".npz" to a name without it
        np.savez(f, **arrays)
