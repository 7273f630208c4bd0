"""Studies (``python evaluate.py study=ispras``): schedulers x scenarios x CCs x runs on the batched
simulator, with the CC-robustness summary and figures. ``spec`` reads and validates a study,
``runner`` trains and evaluates it on a process pool, ``robustness`` holds its statistics and
``report`` writes its tables and figures."""
