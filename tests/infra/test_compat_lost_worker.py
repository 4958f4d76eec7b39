"""infra.compat.beam.fail_on_lost_worker: an SDK worker whose control stream ends or breaks fails
the runner's pending instructions instead of leaving them waiting forever."""
import threading

import pytest


@pytest.fixture
def control(monkeypatch):
    """Beam's ControlConnection with the replacement in place (restored after the test)."""
    from apache_beam.runners.portability.fn_api_runner import worker_handlers

    from infra.compat import beam

    conn = worker_handlers.ControlConnection
    monkeypatch.setattr(conn, "_read", getattr(conn._read, "_beam_original", conn._read))
    assert beam.fail_on_lost_worker()
    return worker_handlers


def _request():
    from apache_beam.portability.api import beam_fn_api_pb2

    return beam_fn_api_pb2.InstructionRequest()


def test_a_broken_control_stream_fails_the_pending_instruction(control):
    from infra.compat.beam import LOST_WORKER

    gone = threading.Event()

    def stream():  # the worker answers nothing, then its connection breaks
        gone.wait()
        raise ConnectionResetError("the worker went away")
        yield  # noqa: unreachable - a generator

    conn = control.ControlConnection()
    future = conn.push(_request())
    conn.set_input(stream())
    gone.set()
    with pytest.raises(RuntimeError, match=f"^{LOST_WORKER}: its control stream failed"):
        future.get(timeout=60)  # a guard: without the fix this waits forever


def test_a_stream_that_ends_with_unanswered_instructions_fails_them(control):
    from infra.compat.beam import LOST_WORKER

    conn = control.ControlConnection()
    answered, pending = conn.push(_request()), conn.push(_request())
    response = control.beam_fn_api_pb2.InstructionResponse(instruction_id=answered.instruction_id)
    conn.set_input(iter([response]))
    assert answered.get(timeout=60).instruction_id == answered.instruction_id
    with pytest.raises(RuntimeError, match=f"^{LOST_WORKER}: its control stream ended with 1"):
        pending.get(timeout=60)


def test_a_different_beam_keeps_its_own_code_with_a_warning(control, monkeypatch, caplog):
    from infra.compat import beam

    conn = control.ControlConnection

    def other(self):  # not the code the replacement was written for
        for data in self._input:
            self._futures_by_id.pop(data.instruction_id).set(data)

    monkeypatch.setattr(conn, "_read", other)
    assert not beam.fail_on_lost_worker()
    assert conn._read is other and "fail_on_lost_worker" in caplog.text
