"""The throughput mesh: pairwise iperf3 tests between host groups, scheduled in rounds.

Public API: ``expand_pairs(site)``, ``mesh_schedule(paths)``, ``run_mesh(site, transports)``;
the result dict is described in advisor.mesh.results, its symptoms (slow, asymmetric, lossy,
buffer-limited paths) in advisor.mesh.symptoms.
"""

from advisor.mesh.runner import MeshProgress, run_mesh
from advisor.mesh.schedule import PathRequest, expand_pairs, mesh_schedule

__all__ = ["MeshProgress", "PathRequest", "expand_pairs", "mesh_schedule", "run_mesh"]
