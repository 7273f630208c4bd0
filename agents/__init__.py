"""Schedulers: heuristics that run inside the compiled core (``envs.schedulers``) and learned
agents that act through the Gymnasium environment."""
