"""Beam's local runner loses data between the runner and its workers (issue 13); the fix in
``infra.compat.beam`` has two halves, and each has a test here that fails without it.

- The race itself, deterministic, on Beam's own stream class (the reproduction in
  docs/runners.md): a flush from the timer thread sends the buffer, then clears it, wiping what
  the writing thread wrote while the send blocked.
- Half 1 (``disable_timed_flush``): no data stream of a local-runner pipeline flushes from a
  timer. Without it the runner's streams (and an in-process worker's) get Beam's timed flush.
- Half 2 (``stream_runner_input``): a stage's input reaches the worker in messages of about the
  size threshold. Without it, the runner sends the whole input as one message when it is done.
- End to end, on in-process gRPC workers with the race made likely (a 5 ms flush timer instead
  of 1 s, a 64 KiB send queue instead of 100 MB, 16 KiB chunks instead of 10 MB): every element
  arrives.
"""
import threading

import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import fn_runner, worker_handlers
from apache_beam.runners.worker import data_plane
from apache_beam.testing.util import assert_that, equal_to

from infra.compat import beam as compat
from pipelines.driver import beam_options

N = 4000  # elements of ~2 KB: an 8 MB stage input
THRESHOLD = 1 << 14  # the shrunk size flush threshold of every data stream


def _beam_as_installed(mp: pytest.MonkeyPatch) -> None:
    """Beam without either half of the fix (as shipped, with the timer at 5 ms)."""
    method = fn_runner.BundleManager._send_input_to_worker
    mp.setattr(fn_runner.BundleManager, "_send_input_to_worker",
               getattr(method, "_beam_original", method))
    mp.setattr(worker_handlers, "DATA_BUFFER_TIME_LIMIT_MS", 5)


@pytest.fixture
def beam_as_installed(monkeypatch):
    _beam_as_installed(monkeypatch)


@pytest.fixture(scope="module")
def recorded_run():
    """Run a pipeline on the local runner (fix applied by ``beam_options.pipeline_options``, as the
    job does) on a fragile data plane, recording every data stream Beam creates: its timer
    setting and the size of each message it hands to the channel. Beam is restored after."""
    with pytest.MonkeyPatch.context() as mp:
        _beam_as_installed(mp)
        yield _recorded_run(mp)


def _recorded_run(monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[int, list[int]]],
                                                          Exception | None]:
    monkeypatch.setattr(data_plane, "_DEFAULT_SEND_QUEUE_MAX_BYTES", 1 << 16)
    init = data_plane.SizeBasedBufferingClosableOutputStream.__init__
    defaults = list(init.__defaults__)
    defaults[2] = THRESHOLD  # size_flush_threshold
    monkeypatch.setattr(init, "__defaults__", tuple(defaults))
    streams: list[tuple[int, list[int]]] = []
    create = data_plane.ClosableOutputStream.create

    def recording_create(close_callback, flush_callback, data_buffer_time_limit_ms):
        sizes: list[int] = []
        streams.append((data_buffer_time_limit_ms, sizes))

        def counted(callback):
            def send(data):
                sizes.append(len(data))
                callback(data)
            return send
        return create(counted(close_callback), counted(flush_callback), data_buffer_time_limit_ms)

    monkeypatch.setattr(data_plane.ClosableOutputStream, "create", staticmethod(recording_create))
    options = beam_options.pipeline_options(["--direct_running_mode=multi_threading",
                                       "--direct_num_workers=2"])
    try:
        _count_through_a_flatten(beam.Pipeline(options=options))
    except Exception as e:  # lost or garbled elements: for the end-to-end test to report
        return streams, e
    return streams, None


def _count_through_a_flatten(pipeline: beam.Pipeline) -> None:
    with pipeline as p:
        docs = (p | beam.Create(list(range(20))) | beam.Reshuffle()
                | beam.FlatMap(lambda s: [(s, i, "x" * 2000) for i in range(N // 20)]))
        # A Flatten of two branches is materialised between stages: its input reaches the next
        # stage's workers as many chunks, the case the timed flush garbled.
        even = docs | "Even" >> beam.Filter(lambda t: t[1] % 2 == 0)
        odd = docs | "Odd" >> beam.Filter(lambda t: t[1] % 2 == 1)
        total = ((even, odd) | beam.Flatten() | beam.Map(lambda t: 1) | beam.CombineGlobally(sum))
        assert_that(total, equal_to([N]))


def test_upstream_race_loses_what_is_written_during_a_timed_flush():
    """The reproduction in docs/runners.md. If Beam fixes the race, this fails: then the fix
    in infra/compat/beam.py can go."""
    sending, sent = threading.Event(), threading.Event()
    received: list[bytes] = []

    def slow_send(data: bytes) -> None:  # a send that blocks, as on a full send queue
        received.append(data)
        sending.set()
        sent.wait(5)

    stream = data_plane.TimeBasedBufferingClosableOutputStream(
        close_callback=received.append, flush_callback=slow_send, time_flush_threshold_ms=50)
    stream.write(b"a" * 10)
    assert sending.wait(5)  # the timer thread is inside flush(): send(get()) ... _clear()
    stream.write(b"b" * 10)  # the writer goes on meanwhile
    sent.set()
    stream.close()
    assert b"".join(received).count(b"b") == 0  # written, never delivered


def test_local_runner_streams_never_flush_on_a_timer(recorded_run):
    """Half 1: every data stream of the local runner (runner and in-process workers) is
    flushed by its writer only."""
    streams, _ = recorded_run
    assert streams and {limit for limit, _ in streams} == {0}


def test_runner_sends_stage_input_in_bounded_messages(recorded_run):
    """Half 2: no message holds more than about two thresholds (the flushed buffer plus one
    chunk of whole elements); the whole 8 MB stage input in one message is what Beam does."""
    streams, _ = recorded_run
    largest = max(size for _, sizes in streams for size in sizes)
    assert largest <= 4 * THRESHOLD, largest


def test_no_element_is_lost_between_the_local_runners_stages(recorded_run):
    streams, error = recorded_run
    assert error is None, error  # the pipeline's own assert_that: exactly N elements arrived
    assert sum(sum(sizes) for _, sizes in streams) > N * 2000  # and they crossed the streams


def test_other_runners_are_left_alone(beam_as_installed):
    beam_options.pipeline_options(["--runner=PortableRunner", "--job_endpoint=localhost:1"])
    assert worker_handlers.DATA_BUFFER_TIME_LIMIT_MS == 5
    assert not hasattr(fn_runner.BundleManager._send_input_to_worker, "_beam_original")
    beam_options.pipeline_options(["--runner", "DirectRunner"])
    assert worker_handlers.DATA_BUFFER_TIME_LIMIT_MS == 0
    assert hasattr(fn_runner.BundleManager._send_input_to_worker, "_beam_original")


@pytest.mark.parametrize("runner, local", [
    (None, True), ("FnApiRunner", True), ("direct", True), ("DirectRunner", True),
    ("apache_beam.runners.portability.fn_api_runner.FnApiRunner", True),
    ("PortableRunner", False), ("DataflowRunner", False), ("flink", False)])
def test_which_runners_are_local(runner, local):
    assert compat.is_local_runner(runner) is local
