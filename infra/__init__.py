"""Shared infrastructure: the leaf layer every other package may import.

It imports none of the project's packages (``curation``, ``pipelines``, ``blending``,
``training``, ``mtnlg``): shipped resources (``infra.resources``), hashing (``infra.hashing``),
the one config loader of every config file (``infra.config``) and the places where a
third-party library's internals are used (``infra.compat``).
"""
