"""File access for jobs and tools: a run's files through Beam's FileSystems (local, gs://,
s3://, and http(s):// for reading), and files a worker stages locally (models,
tokenizer). The decontamination stage's evaluation-task files are ``pipelines.storage``'s."""
from infra.compat import beam, beam_speed

# Every process that reads or writes a run's files through Beam (the driver of a job, each Beam
# worker, the run-folder tools) imports this package: Beam's speed-only patches go in here, once
# per process (a Beam they were not written for gets one warning and its own speed), and a
# worker pool's harness, which Beam starts without the job's options, gets empty ones (S3 from
# the worker's environment).
beam_speed.enable()
beam.default_filesystem_options()

# Beam finds a filesystem among the loaded FileSystem subclasses: importing it registers
# http:// and https:// in this process (a worker pool's harness imports nothing else first).
from infra.storage import http_filesystem  # noqa: E402,F401
