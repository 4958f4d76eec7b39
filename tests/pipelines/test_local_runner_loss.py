"""Regression (issue 13): the local runner lost documents between stages at 100k documents.

Cause: Beam's FnApiRunner flushes its gRPC data streams from a timer thread (every 1 s), and that
flush (send the buffer, then clear it) races with the thread writing to the stream: what is
written while a send blocks on a full send queue is cleared unsent, and a flush inside an
element splits it.  At 100k sample documents (hundreds of MB per stage input) whole chunks of
documents vanished without an error.  ``infra.compat.beam.safe_local_data_plane`` (applied by
``curate.pipeline_options``) turns the timed flush off.

The test makes the race likely at a small size: a 5 ms flush timer instead of 1 s, a 64 KiB send
queue instead of 100 MB and 16 KiB chunks instead of 10 MB, on in-process gRPC workers (so the
shrunk settings apply to both ends).  Before the fix it loses or garbles elements; with it, all
arrive.
"""
import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.runners.portability.fn_api_runner import worker_handlers
from apache_beam.runners.worker import data_plane

from pipelines import curate

N = 4000


@pytest.fixture
def fragile_data_plane(monkeypatch):
    monkeypatch.setattr(worker_handlers, "DATA_BUFFER_TIME_LIMIT_MS", 5)
    monkeypatch.setattr(data_plane, "_DEFAULT_SEND_QUEUE_MAX_BYTES", 1 << 16)
    init = data_plane.SizeBasedBufferingClosableOutputStream.__init__
    defaults = list(init.__defaults__)
    defaults[2] = 1 << 14  # size_flush_threshold
    monkeypatch.setattr(init, "__defaults__", tuple(defaults))


def test_no_element_is_lost_between_the_local_runners_stages(fragile_data_plane):
    options = curate.pipeline_options(["--direct_running_mode=multi_threading",
                                       "--direct_num_workers=2"])
    with beam.Pipeline(options=options) as p:
        docs = (p | beam.Create(list(range(20))) | beam.Reshuffle()
                | beam.FlatMap(lambda s: [(s, i, "x" * 2000) for i in range(N // 20)]))
        # A Flatten of two branches is materialised between stages: its input reaches the next
        # stage's workers as many chunks, the case the timed flush garbled.
        even = docs | "Even" >> beam.Filter(lambda t: t[1] % 2 == 0)
        odd = docs | "Odd" >> beam.Filter(lambda t: t[1] % 2 == 1)
        total = ((even, odd) | beam.Flatten() | beam.Map(lambda t: 1) | beam.CombineGlobally(sum))
        assert_that(total, equal_to([N]))
