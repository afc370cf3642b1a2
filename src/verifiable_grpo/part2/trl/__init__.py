"""Part II's TRL backend: the family study on TRL's GRPOTrainer (`--backend trl`).

- backend.py: one arm / seed / regime, under the same lock and manifest as our trainer;
- commands.py: `family run|study --backend trl` (argument checks, exit codes);
- run_schema.py: the run configuration's keys (model, LoRA, data, budgets), declared once;
  run_config.py loads a file through it and checks it against the machine;
- data.py: GSM8K rows and the held-out evaluation; trainer.py: the GRPOTrainer subclass
  (our samplers, telemetry, checkpoint hooks); checkpoints.py: sealed checkpoints;
- study.py, study_args.py: many runs on one node (GPU slots, shards, retries);
- versions.py: the TRL defaults that moved between versions (chapter II.8).
"""
