"""A base for per-document scorers that hold a model: loaded on first use in each process,
dropped when pickled, so Beam ships the scorer cheaply and each worker loads the model once."""
from __future__ import annotations


class LazyModel:
    _model = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_model"] = None
        return state
