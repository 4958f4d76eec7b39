"""The peers' side of the benchmarks that compare with another project: scripts run by
that project's own venv (made by ``environment``), which import nothing of ours."""
