"""Learned schedulers that act through the Gymnasium environment, and their training (the heuristic
schedulers run inside the compiled core: ``envs.schedulers``)."""
