"""Thin OpenGL 3.3 core helpers for the view: shader program, mesh buffers, render target.

pyglet owns the window and the context; the raw calls here go through PyOpenGL, which
accepts NumPy arrays directly.  The two must load GL from the same window system: pyglet
uses GLX on X11 and EGL when headless, so ``PYOPENGL_PLATFORM`` is pinned to match before
``OpenGL`` is first imported (PyOpenGL would otherwise pick EGL under a Wayland session while
pyglet talks GLX to XWayland).  With no ``DISPLAY`` on Linux, pyglet is switched to its
headless (EGL) mode, so offscreen rendering also works without an X server when the
platform's EGL can make a context (Mesa's llvmpipe can).

The scene is drawn into an offscreen framebuffer (multisampled when ``samples > 1``),
resolved into a single-sample one, and blitted to the window when it is visible.  Screenshots
read the resolved framebuffer, so they show exactly the last frame whether or not the window
is mapped, and never depend on the (undefined) back buffer after a swap.
"""
from __future__ import annotations

import ctypes
import os
import sys

import pyglet


def _choose_platform() -> bool:
    """Decide pyglet's headless mode and PyOpenGL's platform once, before either loads GL."""
    linux = sys.platform.startswith("linux")
    settled = "pyglet.gl" in sys.modules or "pyglet.window" in sys.modules
    if not settled and linux and not os.environ.get("DISPLAY"):
        pyglet.options["headless"] = True
    headless = bool(pyglet.options["headless"])
    if linux and "OpenGL" not in sys.modules:
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl" if headless else "glx")
    return headless


HEADLESS = _choose_platform()

import numpy as np  # noqa: E402
from OpenGL import GL  # noqa: E402

VERTEX_SHADER = """
#version 330 core
layout(location = 0) in vec3 a_pos;
layout(location = 1) in vec3 a_nrm;
uniform mat4 u_model;
uniform mat4 u_view;
uniform mat4 u_proj;
uniform mat3 u_nmat;          // inverse transpose of the model's 3x3 block
uniform float u_grow;         // pixels: push the vertex out along its normal on screen (ghost outline)
uniform vec2 u_px;            // NDC units per pixel (2 / viewport size)
out vec3 v_pos_e;             // eye-space position
out vec3 v_nrm_e;             // eye-space normal
out vec3 v_pos_l;             // model-space position (grid fade)
void main() {
    v_pos_l = a_pos;
    vec4 p = u_view * u_model * vec4(a_pos, 1.0);
    v_pos_e = p.xyz;
    v_nrm_e = mat3(u_view) * (u_nmat * a_nrm);
    gl_Position = u_proj * p;
    if (u_grow > 0.0) {       // the outline shell: u_grow pixels out, whatever the distance
        vec2 d = (u_proj * vec4(v_nrm_e, 0.0)).xy;
        float l = length(d);
        if (l > 1e-9) gl_Position.xy += d / l * u_grow * u_px * gl_Position.w;
    }
}
"""

# Blinn-Phong with camera-fixed key and fill lights, a sky/ground hemisphere ambient about
# world up and a faint rim term, lit in linear colour and written with gamma 2 (sqrt): close
# to sRGB's 2.2 and free of pow(), which matters because llvmpipe spends most of a frame in
# this shader (u_color arrives already linearised: rgb^2, done once on the CPU).
FRAGMENT_SHADER = """
#version 330 core
in vec3 v_pos_e;
in vec3 v_nrm_e;
in vec3 v_pos_l;
uniform vec4 u_color;         // linear rgb, straight alpha
uniform float u_unlit;        // 1: flat colour fading out towards |xy| = 1 (grid lines); 2: flat colour;
                              // 3: flat colour in diagonal screen stripes (the ghost's hatching)
uniform float u_spec;         // specular strength
uniform vec3 u_up_e;          // world +z in eye space
out vec4 frag;
void main() {
    if (u_unlit > 2.5 && mod(gl_FragCoord.x + gl_FragCoord.y, 6.0) >= 3.0) discard;
    if (u_unlit > 1.5) {
        frag = vec4(sqrt(u_color.rgb), u_color.a);
        return;
    }
    if (u_unlit > 0.5) {
        float fade = 1.0 - smoothstep(0.35, 1.0, length(v_pos_l.xy));
        frag = vec4(sqrt(u_color.rgb), u_color.a * fade);
        return;
    }
    vec3 n = normalize(v_nrm_e);
    if (!gl_FrontFacing) n = -n;
    vec3 v = normalize(-v_pos_e);
    const vec3 key = vec3(-0.4479, 0.6470, 0.6171);      // normalize(-0.45, 0.65, 0.62)
    const vec3 fill = vec3(0.8056, -0.2877, 0.5179);     // normalize(0.7, -0.25, 0.45)
    float hemi = 0.5 + 0.5 * dot(n, u_up_e);
    vec3 ambient = mix(vec3(0.10, 0.09, 0.08), vec3(0.30, 0.32, 0.36), hemi);
    vec3 c = u_color.rgb * (ambient + 0.85 * max(dot(n, key), 0.0) + 0.28 * max(dot(n, fill), 0.0));
    float s = max(dot(n, normalize(key + v)), 0.0);      // s^48 by squaring
    float s2 = s * s, s4 = s2 * s2, s8 = s4 * s4, s16 = s8 * s8;
    c += u_spec * (s16 * s16 * s16);
    float r = 1.0 - max(dot(n, v), 0.0);
    c += 0.12 * (r * r * r) * vec3(0.6, 0.7, 0.9);
    frag = vec4(sqrt(clamp(c, 0.0, 1.0)), u_color.a);
}
"""


def _compile(kind, src: str) -> int:
    sh = GL.glCreateShader(kind)
    GL.glShaderSource(sh, src)
    GL.glCompileShader(sh)
    if not GL.glGetShaderiv(sh, GL.GL_COMPILE_STATUS):
        log = GL.glGetShaderInfoLog(sh)
        raise RuntimeError(f"view: shader compile failed: {log!r}")
    return sh


class Program:
    """The scene's one shader program, with its uniform locations looked up once."""
    UNIFORMS = ("u_model", "u_view", "u_proj", "u_nmat", "u_color", "u_unlit", "u_spec", "u_up_e", "u_grow", "u_px")

    def __init__(self):
        vs = _compile(GL.GL_VERTEX_SHADER, VERTEX_SHADER)
        fs = _compile(GL.GL_FRAGMENT_SHADER, FRAGMENT_SHADER)
        self.id = GL.glCreateProgram()
        GL.glAttachShader(self.id, vs)
        GL.glAttachShader(self.id, fs)
        GL.glLinkProgram(self.id)
        if not GL.glGetProgramiv(self.id, GL.GL_LINK_STATUS):
            raise RuntimeError(f"view: shader link failed: {GL.glGetProgramInfoLog(self.id)!r}")
        GL.glDeleteShader(vs)
        GL.glDeleteShader(fs)
        self.loc = {u: GL.glGetUniformLocation(self.id, u) for u in self.UNIFORMS}

    def use(self):
        GL.glUseProgram(self.id)

    def mat4(self, name: str, M: np.ndarray):
        GL.glUniformMatrix4fv(self.loc[name], 1, GL.GL_TRUE, np.asarray(M, dtype=np.float32))

    def mat3(self, name: str, M: np.ndarray):
        GL.glUniformMatrix3fv(self.loc[name], 1, GL.GL_TRUE, np.asarray(M, dtype=np.float32))

    def vec4(self, name: str, v):
        GL.glUniform4f(self.loc[name], *(float(x) for x in v))

    def color(self, rgba):
        """An sRGB(A) colour as the shader wants it: rgb squared (gamma 2), alpha as is."""
        r, g, b, a = (float(x) for x in rgba)
        GL.glUniform4f(self.loc["u_color"], r * r, g * g, b * b, a)

    def vec2(self, name: str, v):
        GL.glUniform2f(self.loc[name], *(float(x) for x in v))

    def vec3(self, name: str, v):
        GL.glUniform3f(self.loc[name], *(float(x) for x in v))

    def float(self, name: str, x: float):
        GL.glUniform1f(self.loc[name], float(x))


class GpuMesh:
    """One VBO of interleaved [position, normal] float32 and its VAO.

    Part meshes are uploaded once (``GL_STATIC_DRAW``); ``update`` refills a streamed one
    (the contact overlays, rebuilt each frame) with a fresh data store."""

    def __init__(self, data: np.ndarray, mode=GL.GL_TRIANGLES, usage=GL.GL_STATIC_DRAW):
        self.mode, self.usage = mode, usage
        self.vao = GL.glGenVertexArrays(1)
        self.vbo = GL.glGenBuffers(1)
        GL.glBindVertexArray(self.vao)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, self.vbo)
        stride = 6 * 4
        GL.glEnableVertexAttribArray(0)
        GL.glVertexAttribPointer(0, 3, GL.GL_FLOAT, GL.GL_FALSE, stride, ctypes.c_void_p(0))
        GL.glEnableVertexAttribArray(1)
        GL.glVertexAttribPointer(1, 3, GL.GL_FLOAT, GL.GL_FALSE, stride, ctypes.c_void_p(12))
        GL.glBindVertexArray(0)
        self.update(data)

    def update(self, data: np.ndarray) -> None:
        data = np.ascontiguousarray(data, dtype=np.float32).reshape(-1, 6)
        self.count = len(data)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, self.vbo)
        GL.glBufferData(GL.GL_ARRAY_BUFFER, max(data.nbytes, 24), data if len(data) else None,
                        self.usage)
        GL.glBindBuffer(GL.GL_ARRAY_BUFFER, 0)

    def draw(self):
        if self.count:
            GL.glBindVertexArray(self.vao)
            GL.glDrawArrays(self.mode, 0, self.count)

    def delete(self):
        GL.glDeleteVertexArrays(1, [self.vao])
        GL.glDeleteBuffers(1, [self.vbo])


class RenderTarget:
    """Offscreen colour+depth framebuffer (MSAA with `samples` > 1) and its resolved copy.

    ``direct``: with one sample, draw straight into the window's back buffer instead -- no
    offscreen copy to blit every frame (1.9 ms of a 10 ms llvmpipe frame at 1280x720).  The
    frame can then be read back only before it is presented (``View.draw(present=False)``)."""

    def __init__(self, samples: int = 4, direct: bool = False):
        max_samples = int(GL.glGetIntegerv(GL.GL_MAX_SAMPLES))
        self.samples = max(1, min(int(samples), max_samples))
        self.direct = bool(direct) and self.samples == 1
        self.size = (0, 0)
        self._fbos: list[int] = []
        self._rbos: list[int] = []

    def _release(self):
        if self._fbos:
            GL.glDeleteFramebuffers(len(self._fbos), self._fbos)
            GL.glDeleteRenderbuffers(len(self._rbos), self._rbos)
        self._fbos, self._rbos = [], []

    def _renderbuffer(self, fmt, w, h, samples):
        rb = int(GL.glGenRenderbuffers(1))
        GL.glBindRenderbuffer(GL.GL_RENDERBUFFER, rb)
        if samples > 1:
            GL.glRenderbufferStorageMultisample(GL.GL_RENDERBUFFER, samples, fmt, w, h)
        else:
            GL.glRenderbufferStorage(GL.GL_RENDERBUFFER, fmt, w, h)
        self._rbos.append(rb)
        return rb

    def _framebuffer(self, w, h, samples, depth: bool) -> int:
        fb = int(GL.glGenFramebuffers(1))
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, fb)
        GL.glFramebufferRenderbuffer(GL.GL_FRAMEBUFFER, GL.GL_COLOR_ATTACHMENT0, GL.GL_RENDERBUFFER,
                                     self._renderbuffer(GL.GL_RGBA8, w, h, samples))
        if depth:
            GL.glFramebufferRenderbuffer(GL.GL_FRAMEBUFFER, GL.GL_DEPTH_STENCIL_ATTACHMENT,
                                         GL.GL_RENDERBUFFER,
                                         self._renderbuffer(GL.GL_DEPTH24_STENCIL8, w, h, samples))
        status = GL.glCheckFramebufferStatus(GL.GL_FRAMEBUFFER)
        if status != GL.GL_FRAMEBUFFER_COMPLETE:
            raise RuntimeError(f"view: framebuffer incomplete (status 0x{int(status):x})")
        self._fbos.append(fb)
        return fb

    def ensure(self, w: int, h: int):
        """(Re)allocate for a w x h frame; a no-op when the size is unchanged."""
        if (w, h) == self.size:
            return
        self._release()
        if self.direct:
            self.draw_fbo = self.read_fbo = 0
            self.size = (w, h)
            return
        self.draw_fbo = self._framebuffer(w, h, self.samples, depth=True)
        self.read_fbo = (self._framebuffer(w, h, 1, depth=False) if self.samples > 1
                         else self.draw_fbo)
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, 0)
        self.size = (w, h)

    def bind(self):
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, self.draw_fbo)
        GL.glViewport(0, 0, *self.size)

    def resolve(self):
        if self.read_fbo != self.draw_fbo:
            self._blit(self.draw_fbo, self.read_fbo)

    def present(self):
        """Copy the resolved frame to the window's back buffer."""
        if not self.direct:
            self._blit(self.read_fbo, 0)

    def _blit(self, src: int, dst: int):
        w, h = self.size
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, src)
        GL.glBindFramebuffer(GL.GL_DRAW_FRAMEBUFFER, dst)
        GL.glBlitFramebuffer(0, 0, w, h, 0, 0, w, h, GL.GL_COLOR_BUFFER_BIT, GL.GL_NEAREST)
        GL.glBindFramebuffer(GL.GL_FRAMEBUFFER, 0)

    def read_rgb(self) -> np.ndarray:
        """(H, W, 3) uint8 of the resolved frame, row 0 at the top."""
        w, h = self.size
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, self.read_fbo)
        GL.glReadBuffer(GL.GL_BACK if self.direct else GL.GL_COLOR_ATTACHMENT0)
        GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
        raw = GL.glReadPixels(0, 0, w, h, GL.GL_RGB, GL.GL_UNSIGNED_BYTE)
        GL.glBindFramebuffer(GL.GL_READ_FRAMEBUFFER, 0)
        img = np.frombuffer(raw, dtype=np.uint8).reshape(h, w, 3)
        return np.ascontiguousarray(img[::-1])

    def delete(self):
        self._release()
        self.size = (0, 0)
