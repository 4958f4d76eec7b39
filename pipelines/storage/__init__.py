"""File access for jobs and tools: a run's files through Beam's FileSystems (local, gs://,
s3://), files a worker stages locally (models, tokenizer), evaluation-task files."""
