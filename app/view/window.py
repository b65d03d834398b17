"""The OpenGL view: draws one state snapshot per frame in a pyglet window.

The render loop owns a :class:`View` and, each frame, polls window events and draws the
latest :class:`Snapshot` (filled by the session from shared memory)::

    view = View(1280, 720)
    view.on_key = keyboard.on_key                # forwarded input (see below)
    while not view.close_requested:
        view.poll()
        view.draw(latest_snapshot())
    view.close()

What is drawn: the parts (mesh by asset name, pose ``p_w``/``R_wb``, sRGB(A) colour) with
Blinn-Phong lighting; the arm as boxes and capsules (a solid whose colour has alpha < 1, the
gripper, translucent); a floor grid under the scene; the haptic proxy as a ghost -- its
silhouette, hatched with cyan stripes over whatever lies behind it and outlined
``ghost_outline_px`` pixels wide (stencil, no depth test: the proxy is usually within
microns of its part, and a ghost depth-tested against the part z-fights with it, or, a
millimetre off, breaks into patches where the two surfaces interleave); then the overlays --
contact points as dots and contact forces as arrows (``force_scale`` m/N, capped at
``force_max_len``) -- drawn as annotations over the picture: flat colour and a dark outline
that nothing hides, the fill solid where the point is in view and dimmer where a part hides
it (the contacts of a nut on its bolt are all inside the nut); last the HUD (one line per
entry, top left) and, when shown, the help (top right).
GL 3.3 core: one shader program, one VBO + VAO per mesh name, uploaded on first use and
cached (see ``gl.py``).

Input: right-drag orbits the camera, middle-drag pans, ctrl+scroll zooms (plain scroll
zooms too when no ``on_scroll`` is set); ``h`` or F1 shows or hides the help panel (the
session's ``help_keys``, the camera, what each overlay means).  Left-drag, scroll and the
other keys go to the callbacks the session sets:

* ``on_drag(dx, dy, buttons)`` -- pixels, x right and y *up*; ``buttons`` is pyglet's mask
  (``BUTTON_LEFT`` 1, ``BUTTON_MIDDLE`` 2, ``BUTTON_RIGHT`` 4) and never includes a drag
  the camera took (right or middle alone);
* ``on_scroll(dy)`` -- wheel clicks, positive away from the user;
* ``on_key(key, pressed)`` -- pyglet's key name in lower case: ``"a"``, ``"1"``,
  ``"left"``, ``"space"``, ``"escape"``, ``"lshift"``, ... (Escape does not close the
  window here: the session decides what it means.)

Closing the window sets ``close_requested``; the owner calls :meth:`close`.  Drive the
window with a loop like the one above, not ``pyglet.app.run()`` (whose own on_draw/flip
would show a stale back buffer).

Frames are drawn into an offscreen framebuffer and copied to the window, so
:meth:`screenshot` is exactly the last frame, visible window or not.  ``samples`` (MSAA)
defaults to 4 on a GPU and 1 on a software renderer (llvmpipe: 4x halves the frame rate);
:func:`render_png` always uses 4.  ``direct=True`` (a shown window, one sample) skips the
offscreen copy and draws into the window's back buffer -- the interactive session's choice,
where every millisecond of a software renderer counts; a screenshot is then only valid
from a frame drawn with ``present=False``.

pyglet wants to run in the main thread of its process (required on macOS, safest on X11),
and every call on a ``View`` must come from the thread that created it.
"""
from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyglet  # the top-level package only: pyglet.gl / pyglet.window load in _load_gl

from app.view import mesh as view_mesh
from app.view.camera import OrbitCamera, frame_from_axis, normal_matrix, pose_matrix
from sim_core.io.png import write_png

# Bound by _load_gl() when the first View opens.  pyglet fixes its window system (GLX with
# an X display, EGL when headless) the first time pyglet.gl is imported, so importing this
# module early -- before a test fixture starts Xvfb, say -- must not import GL yet.
GL = GpuMesh = Program = RenderTarget = None

BUTTON_LEFT, BUTTON_MIDDLE, BUTTON_RIGHT = 1, 2, 4
HELP_KEYS = ("h", "f1")          # toggle the help panel; the view keeps them (not forwarded)

_ZERO3 = np.zeros((0, 3))
_I3 = np.eye(3)


@dataclass
class Snapshot:
    """What one frame draws.  Poses are world frame, metres; colours sRGB floats in [0, 1]."""
    t: float = 0.0
    """session clock, s"""
    parts: list = field(default_factory=list)
    """[(mesh name, p_w (3,), R_wb (3, 3), rgba)]: static part, moving part, ..."""
    ghost: tuple | None = None
    """(mesh name, p_w, R_wb) of the haptic proxy, drawn translucent; None: no ghost"""
    arm: list = field(default_factory=list)
    """simple solids: ("box", center_w, R_wb, (sx, sy, sz) edge lengths[, rgba]) or
    ("capsule", p0_w, p1_w, radius[, rgba])"""
    contacts: np.ndarray = field(default_factory=lambda: _ZERO3)
    """(M, 3) contact points, world, m"""
    forces: np.ndarray = field(default_factory=lambda: _ZERO3)
    """(M, 3) contact forces at those points, world, N (drawn as arrows from the point)"""
    hud: dict = field(default_factory=dict)
    """HUD lines, label -> text, drawn in insertion order"""
    shapes: dict = field(default_factory=dict)
    """mesh name -> its vertices (n, 3) this frame, in the order ``View.add_mesh`` got them:
    a deforming part (the snap socket's prongs), its faces unchanged"""


def _load_gl() -> bool:
    """Import the GL side (see above); returns True when pyglet runs headless (EGL)."""
    global GL, GpuMesh, Program, RenderTarget
    from app.view import gl as view_gl
    GL, GpuMesh, Program, RenderTarget = (view_gl.GL, view_gl.GpuMesh, view_gl.Program,
                                          view_gl.RenderTarget)
    return view_gl.HEADLESS


def has_display() -> bool:
    """True when windows can be shown (an X display, or a non-Linux desktop)."""
    if "app.view.gl" in sys.modules:
        return not sys.modules["app.view.gl"].HEADLESS
    return not sys.platform.startswith("linux") or bool(os.environ.get("DISPLAY"))


def _rgba(c, default=(0.7, 0.7, 0.7, 1.0)) -> tuple:
    if c is None:
        return default
    c = tuple(float(x) for x in c)
    return c if len(c) == 4 else c + (1.0,)


class View:
    """A pyglet window drawing :class:`Snapshot` s; see the module docstring."""

    background = (0.145, 0.165, 0.205)      # sRGB clear colour
    ghost_rgba = (0.30, 0.92, 1.0, 0.8)      # the proxy's hatching: cyan, apart from every part's hue
    ghost_outline_rgba = (0.62, 0.98, 1.0, 1.0)
    ghost_outline_px = 2.0                   # the ghost's outline width, pixels
    arm_rgba = (0.86, 0.87, 0.89, 1.0)
    contact_rgba = (1.0, 0.86, 0.12, 1.0)
    force_rgba = (1.0, 0.30, 0.12, 1.0)
    outline_rgba = (0.03, 0.035, 0.05, 1.0)  # the overlays' outline, always on top
    hidden_alpha = 0.6                       # an overlay's fill where a part hides its point (dimmer)
    outline_px = 1.5                         # outline width, pixels
    force_scale = 0.004                      # m of arrow per N
    force_max_len = 0.06                     # m
    marker_radius = 0.0012                   # m
    show_grid = True
    hud_font_size = 12

    def __init__(self, width: int = 1280, height: int = 720, visible: bool = True,
                 mesh_dir: Path | None = None, *, samples: int | None = None, vsync: bool = False,
                 caption: str = "tightsim", direct: bool = False):
        if _load_gl() and visible:
            raise RuntimeError("view: no display (DISPLAY is not set); use visible=False "
                               "or run under xvfb-run")
        if mesh_dir is None:
            from sim_core.paths import assets_dir
            mesh_dir = assets_dir() / "parts"
        self.mesh_dir = Path(mesh_dir)
        self.visible = bool(visible)
        self.window = self._open_window(width, height, visible, vsync, caption)
        self.window.switch_to()
        self.gl_version = GL.glGetString(GL.GL_VERSION).decode()
        self.gl_renderer = GL.glGetString(GL.GL_RENDERER).decode()
        self.camera = OrbitCamera(width=width, height=height)
        self.auto_fit = True                 # frame the first snapshot's parts and arm
        self.close_requested = False
        self.on_drag: Callable[[float, float, int], None] | None = None
        self.on_scroll: Callable[[float], None] | None = None
        self.on_key: Callable[[str, bool], None] | None = None
        self.frames = 0
        self._prog = Program()
        if samples is None:                  # MSAA halves llvmpipe's frame rate; keep it for GPUs
            software = any(w in self.gl_renderer.lower() for w in ("llvmpipe", "softpipe", "swrast"))
            samples = 1 if software else 4
        self._target = RenderTarget(samples, direct=direct and self.visible)
        # the ghost's outline needs a stencil: the offscreen target has one; a window may not
        self._stencil = not self._target.direct or bool(getattr(self.window.config, "stencil_size", 0))
        self._meshes: dict[str, GpuMesh] = {}
        self._bounds: dict[str, np.ndarray] = {}     # name -> (8, 3) local box corners
        self._mesh_data: dict[str, tuple] = {}       # name -> (vertices, faces), for outlines
        self._outlines: dict[str, GpuMesh] = {}      # name -> the mesh with smooth normals
        self._prims_data = {"box": view_mesh.unit_box(), "cylinder": view_mesh.unit_cylinder(),
                            "cone": view_mesh.unit_cone(), "sphere": view_mesh.unit_sphere()}
        self._prims = {k: GpuMesh(v) for k, v in self._prims_data.items()}
        self._prims["grid"] = GpuMesh(view_mesh.grid_lines(1.0, 0.1), GL.GL_LINES)
        self._unit_marker = view_mesh.unit_sphere(12, 8)
        self._markers = GpuMesh(np.zeros((0, 6)), usage=GL.GL_STREAM_DRAW)   # rebuilt per frame
        self._arrows = GpuMesh(np.zeros((0, 6)), usage=GL.GL_STREAM_DRAW)
        self._marker_hulls = GpuMesh(np.zeros((0, 6)), usage=GL.GL_STREAM_DRAW)   # their outlines
        self._arrow_hulls = GpuMesh(np.zeros((0, 6)), usage=GL.GL_STREAM_DRAW)
        self._hud = _Hud(self.hud_font_size)
        self._help = _Hud(self.hud_font_size, right=True)
        self.show_help = False               # h or F1 toggles the help panel
        self.help_keys: list[tuple[str, str]] = []   # the session's bindings, listed first in the help
        self._fitted = False
        self._closed = False
        self._keys = pyglet.window.key.KeyStateHandler()
        self.window.push_handlers(on_mouse_drag=self._mouse_drag, on_mouse_scroll=self._mouse_scroll,
                                  on_key_press=self._key_press, on_key_release=self._key_release,
                                  on_close=self._close_event)
        self.window.push_handlers(self._keys)           # on top: sees keys before ours stop them

    @staticmethod
    def _open_window(width, height, visible, vsync, caption):
        kw = dict(width=width, height=height, visible=visible, vsync=vsync, caption=caption,
                  resizable=visible)
        try:
            # depth 24 as the offscreen target has: a direct-drawn frame must depth-test alike
            # (and a stencil, which the ghost's silhouette needs)
            cfg = pyglet.gl.Config(major_version=3, minor_version=3, forward_compatible=True,
                                   double_buffer=True, depth_size=24, stencil_size=8)
            return pyglet.window.Window(config=cfg, **kw)
        except pyglet.window.NoSuchConfigException:
            return pyglet.window.Window(**kw)

    # -- meshes ------------------------------------------------------------------------
    def add_mesh(self, name: str, vertices: np.ndarray, faces: np.ndarray) -> None:
        """Upload (or replace) a mesh under `name` (part frame, metres, CCW outward faces)."""
        self.window.switch_to()
        for cache in (self._meshes, self._outlines):
            old = cache.pop(name, None)
            if old is not None:
                old.delete()
        self._meshes[name] = GpuMesh(view_mesh.interleave(vertices, faces))
        self._mesh_data[name] = (np.asarray(vertices, float), np.asarray(faces))
        lo, hi = np.min(vertices, axis=0), np.max(vertices, axis=0)
        self._bounds[name] = np.array([[x, y, z] for x in (lo[0], hi[0])
                                       for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])

    def update_mesh(self, name: str, vertices: np.ndarray) -> None:
        """Move the vertices of the mesh `name` (added before; its faces stay): a deforming part."""
        self.window.switch_to()
        _, faces = self._mesh_data[name]
        if len(vertices) != len(self._mesh_data[name][0]):
            raise ValueError(f"update_mesh: {name}: {len(vertices)} vertices, the mesh has "
                             f"{len(self._mesh_data[name][0])}")
        self._meshes[name].update(view_mesh.interleave(vertices, faces))
        self._mesh_data[name] = (np.asarray(vertices, float), faces)
        old = self._outlines.pop(name, None)
        if old is not None:
            old.delete()

    def _mesh(self, name: str) -> GpuMesh:
        if name not in self._meshes:
            path = self.mesh_dir / f"{name}.ply"
            if path.exists():
                from sim_core.geometry.assets import load_mesh
                m = load_mesh(path)
            else:                                     # regenerate from the part definition
                from sim_core.geometry import profiles
                from sim_core.geometry.mesh import mesh_part
                spec = profiles.all_parts().get(name)
                if spec is None:
                    raise ValueError(f"{path}: no such mesh file and no part named {name!r}")
                m = mesh_part(spec)
            self.add_mesh(name, m.vertices, m.faces)
        return self._meshes[name]

    def _outline(self, name: str) -> GpuMesh:
        """The mesh `name` with normals averaged over every face at a vertex (no creases):
        grown along them, its shell has no cracks at sharp edges (the ghost's outline)."""
        if name not in self._outlines:
            self._mesh(name)
            v, f = self._mesh_data[name]
            self._outlines[name] = GpuMesh(view_mesh.interleave(v, f, crease_deg=180.0))
        return self._outlines[name]

    # -- drawing -----------------------------------------------------------------------
    def poll(self) -> None:
        """Process pending window events (input callbacks run here)."""
        self.window.dispatch_events()

    def draw(self, snap: Snapshot, present: bool = True) -> None:
        """Render `snap`; on a visible window also show it (``present``: swap buffers)."""
        win = self.window
        win.switch_to()
        w, h = win.get_framebuffer_size()
        self._target.ensure(w, h)
        self.camera.width, self.camera.height = w, h
        for name, *_ in list(snap.parts) + ([snap.ghost] if snap.ghost else []):
            self._mesh(name)
        for name, V in snap.shapes.items():
            self.update_mesh(name, V)
        if self.auto_fit and not self._fitted:
            self.fit(snap)
        self._target.bind()
        GL.glClearColor(*self.background, 1.0)
        GL.glClearStencil(0)
        GL.glClear(GL.GL_COLOR_BUFFER_BIT | GL.GL_DEPTH_BUFFER_BIT | GL.GL_STENCIL_BUFFER_BIT)
        self._draw_scene(snap)
        GL.glBindVertexArray(0)
        GL.glUseProgram(0)
        GL.glDisable(GL.GL_DEPTH_TEST)
        GL.glDisable(GL.GL_CULL_FACE)
        hud = {str(k): str(v) for k, v in snap.hud.items()}
        if "clock" not in hud:
            hud = {"clock": f"{snap.t:.2f} s", **hud}
        hud.setdefault("help", "h or F1")
        self._hud.draw(list(hud.items()), win.width, win.height)     # window units, as pyglet projects
        if self.show_help:
            self._help.draw(self.help_lines(), win.width, win.height)
        self._target.resolve()
        if self.visible and present:
            self._target.present()
            win.flip()
        self.frames += 1

    def _draw_scene(self, snap: Snapshot) -> None:
        p = self._prog
        p.use()
        V = self.camera.view()
        p.mat4("u_view", V)
        p.mat4("u_proj", self.camera.projection())
        p.vec3("u_up_e", V[:3, 2])
        p.float("u_grow", 0.0)
        p.vec2("u_px", (2.0 / max(self.camera.width, 1), 2.0 / max(self.camera.height, 1)))
        GL.glEnable(GL.GL_DEPTH_TEST)
        GL.glDepthFunc(GL.GL_LESS)
        GL.glDepthMask(GL.GL_TRUE)
        GL.glEnable(GL.GL_CULL_FACE)
        GL.glCullFace(GL.GL_BACK)
        GL.glDisable(GL.GL_BLEND)

        clear_parts = []
        for name, p_w, R_wb, rgba in snap.parts:
            rgba = _rgba(rgba)
            if rgba[3] < 1.0:
                clear_parts.append((name, p_w, R_wb, rgba))
            else:
                self._solid(self._mesh(name), p_w, R_wb, rgba, spec=0.45)
        clear_arm = [item for item in snap.arm if self._arm_rgba(item)[3] < 1.0]
        for item in snap.arm:
            if self._arm_rgba(item)[3] >= 1.0:
                self._arm_solid(item)

        GL.glEnable(GL.GL_BLEND)
        GL.glBlendFunc(GL.GL_SRC_ALPHA, GL.GL_ONE_MINUS_SRC_ALPHA)
        if self.show_grid and snap.parts:
            self._grid(snap)

        # translucent pass: depth-tested against the solids, writing no depth
        GL.glDepthMask(GL.GL_FALSE)
        GL.glDepthFunc(GL.GL_LEQUAL)
        for name, p_w, R_wb, rgba in clear_parts:
            self._solid(self._mesh(name), p_w, R_wb, rgba, spec=0.25)
        GL.glDisable(GL.GL_CULL_FACE)                   # a translucent box shows its far side too
        for item in clear_arm:
            self._arm_solid(item)
        GL.glEnable(GL.GL_CULL_FACE)
        if snap.ghost is not None:
            self._ghost(*snap.ghost[:3])

        # overlays, drawn over the picture as annotations: flat colour with a dark outline that
        # is never hidden; the fill is solid where nothing hides the point and dim where a part does
        self._update_overlays(snap)
        GL.glDisable(GL.GL_DEPTH_TEST)
        for mesh in (self._marker_hulls, self._arrow_hulls):
            self._flat(mesh, self.outline_rgba)
        GL.glEnable(GL.GL_DEPTH_TEST)
        for func, alpha in ((GL.GL_LEQUAL, 1.0), (GL.GL_GREATER, self.hidden_alpha)):
            GL.glDepthFunc(func)
            for mesh, rgba in ((self._markers, self.contact_rgba), (self._arrows, self.force_rgba)):
                self._flat(mesh, rgba[:3] + (alpha,))
        GL.glDepthFunc(GL.GL_LESS)
        GL.glDepthMask(GL.GL_TRUE)
        GL.glDisable(GL.GL_BLEND)

    def _ghost(self, name: str, p_w, R_wb) -> None:
        """The proxy's silhouette, whatever is in front of or behind it: the stencil marks the
        pixels the mesh covers; those get diagonal stripes of the ghost's colour, each pixel
        once (an even hatching that reads as an overlay on any part's colour, where a tint
        would mix with it: cyan over orange is olive); then an outline ``ghost_outline_px``
        wide around them (the smooth-normal shell grown on screen, where the stencil is
        clear).  No depth test, so nothing z-fights and no surface of the part cuts it into
        patches."""
        p = self._prog
        GL.glDisable(GL.GL_DEPTH_TEST)
        GL.glDisable(GL.GL_CULL_FACE)
        GL.glEnable(GL.GL_STENCIL_TEST)
        GL.glStencilMask(0xFF)
        p.mat4("u_model", pose_matrix(p_w, R_wb))
        p.mat3("u_nmat", normal_matrix(R_wb))
        mesh = self._mesh(name)
        GL.glColorMask(GL.GL_FALSE, GL.GL_FALSE, GL.GL_FALSE, GL.GL_FALSE)      # 1: the footprint
        GL.glStencilFunc(GL.GL_ALWAYS, 1, 0xFF)
        GL.glStencilOp(GL.GL_KEEP, GL.GL_KEEP, GL.GL_REPLACE)
        mesh.draw()
        GL.glColorMask(GL.GL_TRUE, GL.GL_TRUE, GL.GL_TRUE, GL.GL_TRUE)
        GL.glStencilFunc(GL.GL_EQUAL, 1, 0xFF)                                   # 2: hatched, once
        GL.glStencilOp(GL.GL_KEEP, GL.GL_KEEP, GL.GL_INCR)
        p.color(self.ghost_rgba)
        p.float("u_unlit", 3.0)
        mesh.draw()
        if self._stencil:                                                        # 3: the outline
            GL.glStencilFunc(GL.GL_EQUAL, 0, 0xFF)
            p.color(self.ghost_outline_rgba)
            p.float("u_unlit", 2.0)
            p.float("u_grow", self.ghost_outline_px)
            self._outline(name).draw()
            p.float("u_grow", 0.0)
        GL.glDisable(GL.GL_STENCIL_TEST)
        GL.glEnable(GL.GL_CULL_FACE)
        GL.glEnable(GL.GL_DEPTH_TEST)

    def _flat(self, mesh: GpuMesh, rgba) -> None:
        """A world-space overlay batch in one flat colour."""
        p = self._prog
        p.mat4("u_model", np.eye(4))
        p.mat3("u_nmat", _I3)
        p.color(rgba)
        p.float("u_unlit", 2.0)
        mesh.draw()

    def _solid(self, mesh: GpuMesh, p_w, R_wb, rgba, spec: float, scale=(1.0, 1.0, 1.0)) -> None:
        p = self._prog
        p.mat4("u_model", pose_matrix(p_w, R_wb, scale))
        p.mat3("u_nmat", normal_matrix(R_wb, scale))
        p.color(rgba)
        p.float("u_unlit", 0.0)
        p.float("u_spec", spec)
        mesh.draw()

    def _arm_rgba(self, item) -> tuple:
        return _rgba(item[4] if len(item) > 4 else None, self.arm_rgba)

    def _arm_solid(self, item) -> None:
        kind = item[0]
        rgba = self._arm_rgba(item)
        if kind == "box":
            _, c, R, size = item[:4]
            self._solid(self._prims["box"], c, R, rgba, 0.3, scale=size)
        elif kind == "capsule":
            _, p0, p1, r = item[:4]
            p0, p1, r = np.asarray(p0, float), np.asarray(p1, float), float(r)
            axis = p1 - p0
            L = float(np.linalg.norm(axis))
            if L > 1e-9:
                self._solid(self._prims["cylinder"], p0, frame_from_axis(axis), rgba, 0.3,
                            scale=(r, r, L))
            for q in (p0, p1):
                self._solid(self._prims["sphere"], q, _I3, rgba, 0.3, scale=(r, r, r))
        else:
            raise ValueError(f"view: unknown arm solid {kind!r} (expected 'box' or 'capsule')")

    def _update_overlays(self, snap: Snapshot) -> None:
        """Contact markers and force arrows, and their outlines, as four world-space vertex
        batches (4 draws, not 6M).  An outline is its shape grown by ``outline_px`` pixels at
        the shape's distance from the eye, so it reads the same at any zoom."""
        pts = np.asarray(snap.contacts, dtype=float).reshape(-1, 3)
        fs = np.asarray(snap.forces, dtype=float).reshape(-1, 3)[:len(pts)]
        r = self.marker_radius
        cam = self.camera
        px = 2.0 * math.tan(math.radians(cam.fovy_deg) / 2.0) / max(cam.height, 1)   # m per pixel per m
        pad = self.outline_px * px * np.linalg.norm(pts - cam.eye(), axis=1)             # (M,) m
        eye = np.broadcast_to(_I3, (len(pts), 3, 3))
        self._markers.update(view_mesh.place(self._unit_marker, pts, eye, np.full((len(pts), 3), r)))
        self._marker_hulls.update(view_mesh.place(self._unit_marker, pts, eye,
                                                  np.repeat((r + pad)[:, None], 3, axis=1)))
        fn = np.linalg.norm(fs, axis=1)
        L = np.minimum(fn * self.force_scale, self.force_max_len)
        keep = L > 1e-6
        q, f, L, pad = pts[:len(fs)][keep], fs[keep], L[keep], pad[:len(fs)][keep]
        R = frame_from_axis(f) if len(f) else np.zeros((0, 3, 3))
        head = np.minimum(4.5 * r, 0.6 * L)                  # cone length
        shaft = L - head
        for batch, grow in ((self._arrows, 0.0), (self._arrow_hulls, 1.0)):
            g = grow * pad
            cyl = view_mesh.place(self._prims_data["cylinder"], q, R,
                                  np.column_stack([0.5 * r + g, 0.5 * r + g, shaft]))
            cone = view_mesh.place(self._prims_data["cone"], q + R[:, :, 2] * (shaft - g)[:, None], R,
                                   np.column_stack([2.2 * r + 2.0 * g, 2.2 * r + 2.0 * g, head + 2.5 * g]))
            batch.update(np.vstack([cyl, cone]))

    def _grid(self, snap: Snapshot) -> None:
        lo, hi = self._scene_box(snap)
        half = max(0.05, 1.6 * float(np.max(hi[:2] - lo[:2])), 0.6 * float(hi[2] - lo[2]))
        half = 0.1 * math.ceil(half / 0.1)                  # 20 cells across: half / 10 each
        c = 0.5 * (lo + hi)
        M = pose_matrix([round(c[0], 2), round(c[1], 2), lo[2]], _I3, (half, half, 1.0))
        p = self._prog
        p.mat4("u_model", M)
        p.mat3("u_nmat", np.eye(3))
        bg = np.array(self.background)
        p.color(tuple(bg + 0.14) + (0.8,))
        p.float("u_unlit", 1.0)
        self._prims["grid"].draw()

    def _scene_box(self, snap: Snapshot) -> tuple[np.ndarray, np.ndarray]:
        pts = [np.asarray(p_w, float) + self._bounds[name] @ np.asarray(R_wb, float).T
               for name, p_w, R_wb, *_ in snap.parts]
        if not pts:
            return np.zeros(3), np.zeros(3)
        allp = np.vstack(pts)
        return allp.min(axis=0), allp.max(axis=0)

    def _arm_points(self, snap: Snapshot) -> np.ndarray:
        """Points that bound the arm's solids: a box's corners, a capsule's ends +- its radius."""
        pts = []
        for item in snap.arm:
            if item[0] == "box":
                _, c, R, size = item[:4]
                corners = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])
                pts.append(np.asarray(c, float) + (corners * np.asarray(size, float)) @ np.asarray(R, float).T)
            elif item[0] == "capsule":
                _, p0, p1, r = item[:4]
                for q in (p0, p1):
                    pts.append(np.asarray(q, float) + float(r) * np.vstack([np.eye(3), -np.eye(3)]))
        return np.vstack(pts) if pts else np.zeros((0, 3))

    def fit(self, snap: Snapshot) -> None:
        """Frame the snapshot's parts and arm (called on the first frame): from the camera's
        direction, aim at the middle of their bounding box and back off until every corner
        of the parts' boxes and every end of the arm's solids is in the picture."""
        for name, *_ in snap.parts:
            self._mesh(name)
        if snap.parts:
            lo, hi = self._scene_box(snap)
            corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
            pts = np.vstack([corners, self._arm_points(snap)])
            self.camera.fit_points(pts)
            self._fitted = True

    def finish(self) -> None:
        """Wait until the GPU (llvmpipe: its threads) has finished the frame (benchmarks)."""
        self.window.switch_to()
        GL.glFinish()

    def screenshot(self) -> np.ndarray:
        """(H, W, 3) uint8 RGB of the last frame drawn, row 0 at the top."""
        self.window.switch_to()
        return self._target.read_rgb()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.window.switch_to()
        self._hud.delete()
        self._help.delete()
        self._target.delete()
        self.window.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- input ---------------------------------------------------------------------------
    def _mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        if buttons == BUTTON_RIGHT:
            self.camera.orbit(dx, dy)
        elif buttons == BUTTON_MIDDLE:
            self.camera.pan(dx, dy)
        elif self.on_drag is not None:
            self.on_drag(float(dx), float(dy), int(buttons))
        return True

    def _mouse_scroll(self, x, y, scroll_x, scroll_y):
        k = pyglet.window.key
        ctrl = self._keys[k.LCTRL] or self._keys[k.RCTRL]
        if ctrl or self.on_scroll is None:
            self.camera.zoom(scroll_y)
        else:
            self.on_scroll(float(scroll_y))
        return True

    def _key_press(self, symbol, modifiers):
        name = key_name(symbol)
        if name in HELP_KEYS:
            self.show_help = not self.show_help
        elif self.on_key is not None:
            self.on_key(name, True)
        return True                                   # keep Escape from closing the window

    def _key_release(self, symbol, modifiers):
        name = key_name(symbol)
        if self.on_key is not None and name not in HELP_KEYS:
            self.on_key(name, False)
        return True

    def help_lines(self) -> list[tuple[str, str]]:
        """The help panel: the session's bindings (``help_keys``), the camera, the overlays."""
        return [*self.help_keys,
                ("camera", ""),
                ("right drag", "orbit"),
                ("middle drag", "pan"),
                ("ctrl + scroll", "zoom" + ("" if self.on_scroll is not None else " (plain scroll too)")),
                ("h or F1", "show or hide this help"),
                ("overlays", ""),
                ("cyan ghost", "the haptic proxy: where the hand holds"),
                ("", "the part; its outline, over everything"),
                ("yellow dots", "contact points, drawn over everything:"),
                ("", "solid in view, dimmer where hidden"),
                ("red arrows", "contact forces on the moving part,"),
                ("", f"{self.force_scale * 1e3:g} mm per N, at most {self.force_max_len * 1e3:g} mm"),
                ("top left", "loop rates, physics step, frame rate,"),
                ("", "the force sent to the device, the clock,"),
                ("", "the task figure (advance, insertion, seating)")]

    def _close_event(self):
        self.close_requested = True
        return True


def key_name(symbol: int) -> str:
    """pyglet key symbol -> lower-case name ("a", "1", "left", "space", "escape")."""
    return pyglet.window.key.symbol_string(symbol).lstrip("_").lower()


class _Hud:
    """Text panels: one pyglet label per line over a translucent panel, in the top left
    corner (the HUD) or the top right one (``right``: the help).

    Labels are created when the set of lines or the window size changes; otherwise only the
    labels whose text changed are updated (a full re-layout costs about 1 ms a frame).  An
    entry with an empty text is a heading; a label starting with "note" is a warning.  If
    no font can be loaded (a machine without fontconfig or fonts) the panel is left out and
    ``error`` says why; the scene still draws."""
    FONTS = ["DejaVu Sans Mono", "Liberation Mono", "Courier New", "monospace"]
    PAD = 10
    COLORS = {"text": (232, 236, 242, 255), "note": (255, 196, 90, 255), "heading": (120, 200, 255, 255)}

    def __init__(self, font_size: int, right: bool = False):
        self.font_size, self.right = font_size, right
        self.lines: list[str] = []
        self.labels: list = []
        self.error: str | None = None
        self.size = (0, 0)
        self.batch = pyglet.graphics.Batch()
        self.panel = None

    def _layout(self, lines: list[str], kinds: list[str], w: int, h: int) -> None:
        self.delete()
        step = round(self.font_size * 1.75)
        back, front = pyglet.graphics.Group(order=0), pyglet.graphics.Group(order=1)
        for i, (text, kind) in enumerate(zip(lines, kinds)):
            self.labels.append(pyglet.text.Label(
                text, x=self.PAD + 10, y=h - self.PAD - 8 - i * step, anchor_y="top",
                color=self.COLORS[kind], font_name=self.FONTS, font_size=self.font_size,
                batch=self.batch, group=front))
        height = len(lines) * step + 10
        self.panel = pyglet.shapes.Rectangle(self.PAD, h - self.PAD - height, 10, height,
                                             color=(10, 12, 16, 170), batch=self.batch, group=back)
        self.lines, self.size = lines, (w, h)

    def draw(self, entries: list[tuple[str, str]], w: int, h: int) -> None:
        """Draw ``(label, text)`` entries, one a line, the texts aligned."""
        if self.error is not None or not entries:
            return
        keyw = max(len(k) for k, _ in entries)
        lines = [f"{k:<{keyw}}  {v}".rstrip() for k, v in entries]
        kinds = ["heading" if not v else "note" if k.startswith("note") else "text" for k, v in entries]
        try:
            if len(lines) != len(self.lines) or (w, h) != self.size or any(
                    a.split(" ", 1)[0] != b.split(" ", 1)[0] for a, b in zip(lines, self.lines)):
                self._layout(lines, kinds, w, h)
            else:
                for lab, new, old in zip(self.labels, lines, self.lines):
                    if new != old:
                        lab.text = new
                self.lines = lines
            self.panel.width = max(lab.content_width for lab in self.labels) + 20
            if self.right and self.panel.x != w - self.PAD - self.panel.width:
                self.panel.x = w - self.PAD - self.panel.width
                for lab in self.labels:
                    lab.x = self.panel.x + 10
            self.batch.draw()
        except Exception as e:                       # no usable font on this machine
            self.error = f"view: HUD disabled: {type(e).__name__}: {e}"
            warnings.warn(self.error, RuntimeWarning, stacklevel=2)

    def delete(self) -> None:
        for lab in self.labels:
            lab.delete()
        if self.panel is not None:
            self.panel.delete()
        self.labels, self.panel, self.lines = [], None, []


# ------------------------------------------------------------------------------- files

def render_png(snap: Snapshot, path, width: int = 1280, height: int = 720,
               mesh_dir: Path | None = None, samples: int = 4) -> None:
    """Render one frame offscreen (4x MSAA: one frame, so quality over speed) to a PNG file."""
    with View(width, height, visible=False, mesh_dir=mesh_dir, samples=samples) as view:
        view.draw(snap)
        write_png(path, view.screenshot())
