"""Gymnasium environments of the workbench: importing this package registers them.

``gymnasium.make("mpsched/Multipath-v0", scenario="ispras_s1", cc="bbr2", decision="blocked")``
and ``gymnasium.make_vec("mpsched/Multipath-v0", num_envs=64, vectorization_mode="vector_entry_point")``.
"""

from gymnasium.envs.registration import register, registry

if "mpsched/Multipath-v0" not in registry:
    register(id="mpsched/Multipath-v0", entry_point="envs.multipath_env:MultipathEnv",
             vector_entry_point="envs.vector_env:MultipathVectorEnv")
