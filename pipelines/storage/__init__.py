"""Evaluation-task files for the decontamination stage and the config's checks
(``task_files``).  File access itself (Beam's FileSystems, http(s), staging) is
``infra.storage``, which importing this package sets up in the process."""
import infra.storage  # noqa: F401 - Beam's patches and the http(s) filesystem in this process
