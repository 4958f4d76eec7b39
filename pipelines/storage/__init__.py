"""File access for jobs and tools: a run's files through Beam's FileSystems (local, gs://,
s3://), files a worker stages locally (models, tokenizer), evaluation-task files."""
from infra.compat import beam_speed

# Every process that reads or writes a run's files through Beam (the driver of a job, each Beam
# worker, the run-folder tools) imports this package: Beam's speed-only patches go in here, once
# per process (a Beam they were not written for gets one warning and its own speed).
beam_speed.enable()
