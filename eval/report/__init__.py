"""The training report and trajectory viewer: `python -m eval.report RUN_DIR... --out report/`.

Modules: `load` (run directories, ART/TRL metrics), `run_metrics` (per-run figures on top of
eval/summary.py), `paired` (paired bootstrap + exact McNemar), `flags` (suspected reward
hacking), `reading` (the seeded reading list), `viewer_data` + `viewer.js` (the trajectory
viewer), `figures` (matplotlib PNGs), `page` (the self-contained HTML), `build` (all of it).
"""
