"""Shipped data, not code: source configs, blend specs, quality configs, the lid.176 language
model, the GPT-2 tokenizer and eval-task samples.  A resource package so that it installs with
the wheel and the sdist; read it through ``infra.resources`` (``pkg://data_manifests/...``)."""
