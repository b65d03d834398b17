"""Part geometry: analytic profiles (single source of truth), meshes and mesh assets."""
from sim_core.geometry.assets import build_assets, load_manifest, load_mesh
from sim_core.geometry.mesh import TriMesh, check_closed_oriented, mass_properties, mesh_part

__all__ = ["TriMesh", "mesh_part", "mass_properties", "check_closed_oriented",
           "build_assets", "load_mesh", "load_manifest"]
