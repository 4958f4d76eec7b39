"""Per-element DoFns run back to back inside one DoFn, with their tagged outputs merged.

``ChainFn([a, b, c])`` feeds what ``a`` yields on its main output to ``b``, and so on; what any
of them yields on a tagged output (``removed``, ``dead_letter``, ...) leaves the chain on that
tag.  The runner would fuse the same DoFns into one stage anyway; the chain's gain is that the
removals of every stage come out as ONE PCollection, so one writer per kind of output handles a
whole stage (a Flatten of several large PCollections is materialised on the local runner's
driver, see ``sinks.flatten_small``), and the same chain runs every input group.

Each DoFn keeps its own counters and ``@timed`` stage time (a generator is paused while the
next DoFn works on what it yielded).  Only ``setup``/``teardown`` and per-element ``process``
are supported: a DoFn that buffers across elements (``finish_bundle`` output) cannot be chained.
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

import apache_beam as beam
from apache_beam.pvalue import TaggedOutput

from pipelines.plumbing import progress


class ChainFn(beam.DoFn):
    def __init__(self, fns: Sequence[beam.DoFn]) -> None:
        self.fns = list(fns)

    def setup(self) -> None:
        for fn in self.fns:
            fn.setup()

    def teardown(self) -> None:
        for fn in self.fns:
            fn.teardown()

    def finish_bundle(self) -> None:
        progress.flush()  # the chain's DoFns report progress per element; write it out

    def process(self, element: Any) -> Iterator:
        return self._run(0, element)

    def _run(self, i: int, element: Any) -> Iterator:
        if i == len(self.fns):
            yield element
            return
        for out in self.fns[i].process(element) or ():
            if isinstance(out, TaggedOutput):
                yield out
            else:
                yield from self._run(i + 1, out)

