"""Build pipelines: one skeleton (`skeleton.py`) and one short module per recipe kind."""
