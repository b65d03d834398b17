"""Part mesh assets: binary PLY files plus a JSON manifest, built deterministically.

Layout (``out_dir`` is normally ``paths.assets_dir()``)::

    <out_dir>/parts/<name>.ply      binary little-endian PLY: vertex x y z as double,
                                    faces as 'list uchar int vertex_indices' (triangles)
    <out_dir>/parts/manifest.json   {"format": 1, "units": "m", "target_triangles": ...,
                                     "parts": {name: {"kind", "file", "sha256", "triangles",
                                                      "vertices", "dimensions", "volume"}}}

Building twice gives byte-identical files (no timestamps; floats written with repr).
Readers raise ``ValueError`` with a single line naming the file and what is wrong.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np

from sim_core.geometry.mesh import TriMesh, check_closed_oriented, mesh_part, part_kind, signed_volume
from sim_core.geometry.profiles import all_parts

MANIFEST_FORMAT = 1
KINDS = ("peg", "hole", "bolt", "nut")

_FACE_DTYPE = np.dtype([("n", "u1"), ("i", "<i4", (3,))])   # 13 bytes, packed
_VERTEX_DTYPE = np.dtype("<f8")
_HEADER_MAX = 65536


# --------------------------------------------------------------------------- writing

def ply_bytes(mesh: TriMesh) -> bytes:
    """The binary little-endian PLY encoding of a triangle mesh."""
    v = np.ascontiguousarray(mesh.vertices, dtype=_VERTEX_DTYPE)
    f = mesh.faces
    if len(f) and (f.min() < 0 or f.max() >= len(v) or len(v) > np.iinfo(np.int32).max):
        raise ValueError("ply_bytes: face indices out of range for a PLY 'int' list")
    header = ("ply\n"
              "format binary_little_endian 1.0\n"
              "comment tightsim part mesh, units m\n"
              f"element vertex {len(v)}\n"
              "property double x\n"
              "property double y\n"
              "property double z\n"
              f"element face {len(f)}\n"
              "property list uchar int vertex_indices\n"
              "end_header\n").encode("ascii")
    rec = np.empty(len(f), dtype=_FACE_DTYPE)
    rec["n"] = 3
    rec["i"] = f
    return header + v.tobytes() + rec.tobytes()


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def write_ply(path: Path, mesh: TriMesh) -> str:
    """Write `mesh` to `path`; returns the file's sha256 (hex)."""
    data = ply_bytes(mesh)
    write_atomic(Path(path), data)
    return hashlib.sha256(data).hexdigest()


def _plain(x):
    """JSON-safe plain Python value (numpy scalars -> float/int)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x)
    return x


def manifest_text(manifest: dict) -> str:
    return json.dumps(manifest, indent=2, sort_keys=True, allow_nan=False) + "\n"


def build_assets(out_dir: Path, target_triangles: int = 5000, parts: dict | None = None) -> dict:
    """Mesh every part (default: ``all_parts()``), write ``<out_dir>/parts/<name>.ply`` and
    ``<out_dir>/parts/manifest.json``; returns the manifest.  Each mesh is checked to be
    closed and outward-oriented before it is written."""
    out_dir = Path(out_dir)
    parts = all_parts() if parts is None else parts
    pdir = out_dir / "parts"
    pdir.mkdir(parents=True, exist_ok=True)
    entries = {}
    for name in sorted(parts):
        spec = parts[name]
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise ValueError(f"build_assets: bad part name {name!r}")
        mesh = mesh_part(spec, target_triangles)
        check_closed_oriented(mesh)
        rel = f"parts/{name}.ply"
        sha = write_ply(out_dir / rel, mesh)
        entries[name] = {"kind": part_kind(spec), "file": rel, "sha256": sha,
                         "triangles": mesh.n_faces, "vertices": mesh.n_vertices,
                         "dimensions": _plain(spec.dimensions()),
                         "volume": float(signed_volume(mesh))}
    manifest = {"format": MANIFEST_FORMAT, "units": "m", "target_triangles": int(target_triangles),
                "parts": entries}
    write_atomic(pdir / "manifest.json", manifest_text(manifest).encode("utf-8"))
    write_robots(out_dir)
    return manifest


def write_robots(out_dir: Path) -> list[Path]:
    """The arm's descriptions, ``<out_dir>/robots/panda.urdf`` (7 joints, peg-in-hole) and
    ``panda_gripper.urdf`` (8, with the infinite-turn gripper; bolting)."""
    from sim_core.systems.arm import panda
    rdir = Path(out_dir) / "robots"
    rdir.mkdir(parents=True, exist_ok=True)
    out = []
    for name, joint in (("panda", False), ("panda_gripper", True)):
        path = rdir / f"{name}.urdf"
        write_atomic(path, panda.urdf_text(joint).encode("utf-8"))
        out.append(path)
    return out


# --------------------------------------------------------------------------- reading

def _one_line(x) -> str:
    s = repr(x)
    return s if len(s) <= 80 else s[:77] + "..."


def load_mesh(path: Path, validate: bool = False) -> TriMesh:
    """Read a PLY written by ``write_ply``/``build_assets``.

    Raises ValueError("<path>: <what is wrong>") for a missing/unreadable or malformed file;
    with ``validate`` also runs ``check_closed_oriented``."""
    path = Path(path)

    def bad(msg: str):
        return ValueError(f"{path}: {msg}")

    try:
        data = path.read_bytes()
    except OSError as e:
        raise bad(f"cannot read file ({type(e).__name__}: {e.strerror or e})") from None
    if not data.startswith(b"ply\n"):
        raise bad("not a PLY file (first line is not 'ply')")
    end = data.find(b"end_header\n", 0, _HEADER_MAX)
    if end < 0:
        raise bad("header field 'end_header' missing")
    body_at = end + len(b"end_header\n")
    try:
        lines = data[:end].decode("ascii").split("\n")[1:]
    except UnicodeDecodeError:
        raise bad("header is not ASCII") from None
    fmt = None
    elements: list[list] = []        # [name, count, [properties]]
    for ln in lines:
        words = ln.split()
        if not words or words[0] in ("comment", "obj_info"):
            continue
        if words[0] == "format":
            fmt = " ".join(words[1:])
        elif words[0] == "element":
            if len(words) != 3:
                raise bad(f"malformed header line {_one_line(ln)}")
            try:
                count = int(words[2])
            except ValueError:
                raise bad(f"header field 'element {words[1]}' has a bad count {_one_line(words[2])}") from None
            if count < 0:
                raise bad(f"header field 'element {words[1]}' has a negative count")
            elements.append([words[1], count, []])
        elif words[0] == "property":
            if not elements:
                raise bad(f"header property before any element: {_one_line(ln)}")
            elements[-1][2].append(" ".join(words[1:]))
        else:
            raise bad(f"unexpected header line {_one_line(ln)}")
    if fmt is None:
        raise bad("header field 'format' missing")
    if fmt != "binary_little_endian 1.0":
        raise bad(f"unsupported format {_one_line(fmt)} (need 'binary_little_endian 1.0')")
    names = [e[0] for e in elements]
    for need in ("vertex", "face"):
        if need not in names:
            raise bad(f"header field 'element {need}' missing")
    if names != ["vertex", "face"]:
        raise bad(f"unexpected elements {names} (need exactly vertex, face)")
    (_, nv, vprops), (_, nf, fprops) = elements
    want_v = [["double", "x"], ["double", "y"], ["double", "z"]]
    got_v = [p.split() for p in vprops]
    for k, (want, got) in enumerate(zip(want_v, got_v + [None] * 3)):
        if got is None:
            raise bad(f"header field 'property double {want[1]}' missing")
        if got != want and not (got[0] == "float64" and got[1:] == want[1:]):
            raise bad(f"vertex property {k} is {_one_line(vprops[k])}, expected 'double {want[1]}'")
    if len(got_v) != 3:
        raise bad(f"vertex has {len(got_v)} properties, expected x y z")
    if len(fprops) != 1 or fprops[0].split() not in (["list", "uchar", "int", "vertex_indices"],
                                                     ["list", "uint8", "int32", "vertex_indices"],
                                                     ["list", "uchar", "int", "vertex_index"]):
        raise bad("face property must be 'list uchar int vertex_indices'")
    nbytes_v = nv * _VERTEX_DTYPE.itemsize * 3
    need = nbytes_v + nf * _FACE_DTYPE.itemsize
    have = len(data) - body_at
    if have < need:
        raise bad(f"truncated: {have} data bytes after the header, expected {need} "
                  f"({nv} vertices, {nf} faces)")
    if have > need:
        raise bad(f"{have - need} unexpected bytes after the face data")
    verts = np.frombuffer(data, dtype=_VERTEX_DTYPE, count=3 * nv, offset=body_at)
    verts = verts.reshape(nv, 3).astype(np.float64)
    fin = np.isfinite(verts).all(axis=1)
    if not fin.all():
        raise bad(f"vertex {int(np.argmin(fin))} has a non-finite coordinate")
    rec = np.frombuffer(data, dtype=_FACE_DTYPE, count=nf, offset=body_at + nbytes_v)
    ok_n = rec["n"] == 3
    if not ok_n.all():
        k = int(np.argmin(ok_n))
        raise bad(f"face {k} has {int(rec['n'][k])} vertices (only triangles are supported)")
    faces = rec["i"].astype(np.int64)
    out = (faces < 0) | (faces >= nv)
    if out.any():
        k = int(np.argmax(out.any(axis=1)))
        idx = int(faces[k][out[k]][0])
        raise bad(f"face {k} index {idx} out of range [0, {nv})")
    mesh = TriMesh(verts, faces)
    if validate:
        try:
            check_closed_oriented(mesh)
        except ValueError as e:
            raise bad(str(e).replace("\n", " ")) from None
    return mesh


# A part mesh against its part definition (``check_part_mesh``).  A mesh file is any PLY in
# the assets folder: a user may replace it, and a wrong one used to run on (a vertex at 1e30 m
# gave an insertion depth of -1e32 mm; at 1e300 m the mass properties overflowed) or fail
# deep inside with a message naming nothing.  Bounds, each with its reason:
SIZE_RANGE = (0.5, 2.0)    # mesh extent / the part's largest dimension: the shipped meshes
                           # are 1.0-1.155 (a nut's corners stand out of its across-flats);
                           # twice the part cannot be its mesh (it would not fit the hole)
MM_RATIO = 1000.0          # a mesh written in millimetres is this much too large
FLAT = 1e-3                # smallest extent / largest: thinner than this is collapsed
MIN_FILL = 1e-3            # volume / extent^3: the shipped parts fill 0.09-0.29 of their box


def part_size(spec) -> float:
    """The part's largest stated dimension (m): what its mesh's extent is compared with."""
    return max(float(x) for x in spec.dimensions().values())


def check_part_mesh(mesh: TriMesh, spec, where: str) -> None:
    """Raise ValueError("<where>: <field>: ...", one line) unless the mesh has the part's size
    (not millimetres, no stray vertex), is not collapsed and encloses a positive volume.
    Checked before anything is computed from the coordinates, so nothing overflows."""
    v = mesh.vertices
    size = part_size(spec)
    lo, hi = SIZE_RANGE
    if len(v) < 4 or len(mesh.faces) < 4:
        raise ValueError(f"{where}: faces: {len(v)} vertices, {len(mesh.faces)} faces: not a solid")

    def stray(k: int) -> ValueError:
        return ValueError(f"{where}: vertex {k} at {_xyz(v[k])} m: outside the part, which is {size:g} m "
                          f"across (its mesh at most {hi:g}x that)")

    far = np.abs(v).max(axis=1)                 # compared, not subtracted: 1e300 stays finite
    if far.max() > hi * size * MM_RATIO:        # beyond even the part in millimetres
        raise stray(int(np.argmax(far)))
    extent = v.max(axis=0) - v.min(axis=0)
    span = float(extent.max())
    if span == 0.0:
        raise ValueError(f"{where}: vertices: all at one point {_xyz(v[0])} m: the mesh is collapsed "
                         f"(the part is {size:g} m across)")
    if span > hi * size:
        r = np.linalg.norm(v - np.median(v, axis=0), axis=1)     # the median: robust to strays
        k = int(np.argmax(r))
        if lo <= span / MM_RATIO / size <= hi and r[k] <= 10.0 * np.median(r):
            raise ValueError(f"{where}: vertices span {span:.4g} m, {span / size:.0f}x the part's {size:g} m: "
                             "looks like millimetres (write the mesh in metres)")
        raise stray(k)
    axis = int(np.argmin(extent))
    if extent[axis] < FLAT * span:
        raise ValueError(f"{where}: vertices: collapsed to a plane ({extent[axis]:.3g} m thick along "
                         f"{'xyz'[axis]}, {span:.3g} m across): zero volume")
    if span < lo * size:
        raise ValueError(f"{where}: vertices span {span:.4g} m, the part is {size:g} m across "
                         f"(its mesh at least {lo:g}x that)")
    vol = signed_volume(mesh)
    if not vol > MIN_FILL * span ** 3:
        raise ValueError(f"{where}: faces: enclosed volume {vol:.3g} m^3 in a {span:.3g} m box: a degenerate, "
                         "open or inside-out mesh")


def _xyz(p) -> str:
    return "(" + ", ".join(f"{x:.4g}" for x in p) + ")"


_ENTRY_FIELDS = {"kind": str, "file": str, "sha256": str, "triangles": int, "vertices": int,
                 "dimensions": dict, "volume": float}


def manifest_path(assets_dir: Path) -> Path:
    return Path(assets_dir) / "parts" / "manifest.json"


def load_manifest(assets_dir: Path, check_files: bool = False) -> dict:
    """Read and validate ``<assets_dir>/parts/manifest.json``.

    Raises ValueError("<file>: <field> ...") (one line) if it is missing or corrupt; with
    ``check_files`` also verifies that every part file exists with the recorded sha256."""
    assets_dir = Path(assets_dir)
    path = manifest_path(assets_dir)

    def bad(msg: str):
        return ValueError(f"{path}: {msg}")

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise bad("manifest missing (build it with `tightsim assets build`)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise bad(f"cannot read manifest ({type(e).__name__})") from None
    try:
        m = json.loads(text)
    except json.JSONDecodeError as e:
        raise bad(f"invalid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if not isinstance(m, dict):
        raise bad("top level is not an object")

    def field(obj: dict, key: str, typ, where: str):
        if key not in obj:
            raise bad(f"field '{where}' missing")
        val = obj[key]
        ok = (isinstance(val, (int, float)) and not isinstance(val, bool)) if typ is float else \
            (isinstance(val, int) and not isinstance(val, bool)) if typ is int else isinstance(val, typ)
        if not ok:
            raise bad(f"field '{where}' has type {type(val).__name__}, expected {typ.__name__}")
        return val

    if field(m, "format", int, "format") != MANIFEST_FORMAT:
        raise bad(f"field 'format' is {m['format']!r}, expected {MANIFEST_FORMAT}")
    if field(m, "units", str, "units") != "m":
        raise bad(f"field 'units' is {_one_line(m['units'])}, expected 'm'")
    if field(m, "target_triangles", int, "target_triangles") <= 0:
        raise bad("field 'target_triangles' is not positive")
    parts = field(m, "parts", dict, "parts")
    for name, entry in parts.items():
        where = f"parts.{name}"
        if not isinstance(entry, dict):
            raise bad(f"field '{where}' is not an object")
        for key, typ in _ENTRY_FIELDS.items():
            field(entry, key, typ, f"{where}.{key}")
        if entry["kind"] not in KINDS:
            raise bad(f"field '{where}.kind' is {_one_line(entry['kind'])}, expected one of {', '.join(KINDS)}")
        sha = entry["sha256"]
        if len(sha) != 64 or any(ch not in "0123456789abcdef" for ch in sha):
            raise bad(f"field '{where}.sha256' is not a sha256 hex digest")
        rel = entry["file"]
        if rel.startswith("/") or ".." in Path(rel).parts:
            raise bad(f"field '{where}.file' is not a relative path inside the assets folder")
        for key in ("triangles", "vertices"):
            if entry[key] < 0:
                raise bad(f"field '{where}.{key}' is negative")
        vol = entry["volume"]
        if not (math.isfinite(vol) and vol > 0):
            raise bad(f"field '{where}.volume' is not a positive number")
        for dk, dv in entry["dimensions"].items():
            if not (isinstance(dv, (int, float)) and not isinstance(dv, bool)):
                raise bad(f"field '{where}.dimensions.{dk}' is not a number")
        if check_files:
            fpath = assets_dir / rel
            try:
                digest = hashlib.sha256(fpath.read_bytes()).hexdigest()
            except OSError:
                raise bad(f"field '{where}.file': {fpath} cannot be read") from None
            if digest != sha:
                raise bad(f"field '{where}.sha256' does not match {fpath}")
    return m


def load_part_mesh(assets_dir: Path, name: str) -> TriMesh:
    """The mesh of part `name` listed in the manifest, checked against its sha256."""
    m = load_manifest(assets_dir)
    path = manifest_path(assets_dir)
    entry = m["parts"].get(name)
    if entry is None:
        raise ValueError(f"{path}: field 'parts.{name}' missing")
    fpath = Path(assets_dir) / entry["file"]
    try:
        digest = hashlib.sha256(fpath.read_bytes()).hexdigest()
    except OSError:
        raise ValueError(f"{fpath}: cannot read file") from None
    if digest != entry["sha256"]:
        raise ValueError(f"{fpath}: sha256 does not match {path} (stale asset; rebuild)")
    mesh = load_mesh(fpath)
    if mesh.n_faces != entry["triangles"] or mesh.n_vertices != entry["vertices"]:
        raise ValueError(f"{fpath}: triangle/vertex counts differ from {path}")
    return mesh
