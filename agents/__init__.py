"""Schedulers: heuristics that run inside the compiled core (``agents.heuristics``) and learned
agents that act through the Gymnasium environment."""
