"""The change pipeline: the only way a file changes (pipeline.py), the snapshots it plans on
(snapshot.py), its worker thread (worker.py), the checks of a result (gate.py), and the plans
edit and multiedit share (edits.py)."""
