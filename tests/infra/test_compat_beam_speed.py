"""infra.compat.beam_speed: Beam's speed-only patches give Beam's own answers, and a Beam they
were not written for is left alone with one warning (never an error)."""
import functools
import logging

import apache_beam as beam
import pytest


@pytest.fixture
def unpatched(monkeypatch):
    """Beam's own functions back in place for the test (restored after it)."""
    from apache_beam.io.aws import s3io
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.transforms import core, userstate

    for owner, name in ((core, "get_function_args_defaults"), (s3io.S3IO, "__init__"),
                        (PipelineOptions, "view_as"), (userstate, "get_dofn_specs"),
                        (core, "_check_fn_use_yield_and_return")):
        f = getattr(owner, name)
        monkeypatch.setattr(owner, name, getattr(f, "_beam_original", f))
    return core, s3io


class _Fn(beam.DoFn):
    def process(self, element, side=3, *rest, key=None):
        yield element

    @staticmethod
    def helper(a, b=2):
        return a


def _plain(x, y=1, *, z=2):
    return x


def test_memoized_signatures_equal_beams_and_callers_get_their_own_lists(unpatched):
    from infra.compat import beam_speed

    core, _ = unpatched
    callables = [_plain, _Fn().process, _Fn.process, _Fn.helper, functools.partial(_plain, 1),
                 len, str.strip, lambda element, n=5: element]
    expected = [core.get_function_args_defaults(f) for f in callables]
    assert beam_speed.memoize_function_signatures()
    assert core.get_function_args_defaults._beam_original is not None
    for _ in range(2):  # computed, then from the cache
        assert [core.get_function_args_defaults(f) for f in callables] == expected
    args, defaults = core.get_function_args_defaults(_plain)
    args.append("mutated")
    assert core.get_function_args_defaults(_plain)[0] == ["x", "y"]
    # Beam's own questions about a DoFn still get the same answers.
    from apache_beam.transforms import userstate

    assert not userstate.is_stateful_dofn(beam.ParDo(_Fn()).fn)


def test_one_s3_client_per_set_of_options(unpatched):
    from infra.compat import beam_speed

    _, s3io = unpatched
    assert beam_speed.reuse_s3_clients()
    a = {"s3_endpoint_url": "http://127.0.0.1:1", "s3_region_name": "us-east-1",
         "s3_access_key_id": "k", "s3_secret_access_key": "s"}
    first, again = s3io.S3IO(options=a), s3io.S3IO(options=dict(a))
    other = s3io.S3IO(options={**a, "s3_endpoint_url": "http://127.0.0.1:2"})
    assert first.client is again.client and other.client is not first.client
    given = object()
    assert s3io.S3IO(client=given).client is given  # an explicit client is used as it is


def test_option_views_are_shared_and_see_every_change(unpatched):
    from apache_beam.options.pipeline_options import (PipelineOptions, StandardOptions,
                                                      TypeOptions)

    from infra.compat import beam_speed

    assert beam_speed.cache_option_views()
    options = PipelineOptions(["--runner", "FnApiRunner", "--no_pipeline_type_check", "--extra=1"])
    std = options.view_as(StandardOptions)
    assert std is options.view_as(StandardOptions)
    assert std.runner == "FnApiRunner" and not options.view_as(TypeOptions).pipeline_type_check
    std.runner = "PortableRunner"  # a change through one view reaches every view and the source
    assert options.view_as(StandardOptions).runner == "PortableRunner"
    assert options.get_all_options()["runner"] == "PortableRunner"
    other = PipelineOptions([])
    assert other.view_as(StandardOptions) is not std and other.view_as(StandardOptions).runner is None
    options._all_options = dict(options._all_options)  # a replaced store: the view is rebuilt
    assert options.view_as(StandardOptions) is not std


class _Stateful(beam.DoFn):
    COUNT = beam.transforms.userstate.CombiningValueStateSpec("count", sum)
    TIMER = beam.transforms.userstate.TimerSpec("flush", beam.TimeDomain.WATERMARK)

    def process(self, element, count=beam.DoFn.StateParam(COUNT), timer=beam.DoFn.TimerParam(TIMER)):
        yield element

    @beam.transforms.userstate.on_timer(TIMER)
    def flush(self):
        yield 0


class _Holder(beam.DoFn):
    def __init__(self, method):
        self.method = method  # an instance attribute that is a bound method: never cached

    def process(self, element):
        yield element


class _Duplicated(beam.DoFn):
    def process(self, element, a=beam.DoFn.StateParam(_Stateful.COUNT),
                b=beam.DoFn.StateParam(_Stateful.COUNT)):
        yield element


def test_dofn_specs_equal_beams_per_class_and_errors_stay_errors(unpatched):
    from apache_beam.transforms import userstate

    from infra.compat import beam_speed

    dofns = [_Fn(), _Stateful(), _Holder(_Stateful().flush), _Holder(len)]
    expected = [userstate.get_dofn_specs(d) for d in dofns]
    assert expected[1] != (set(), set()) and expected[2] == (set(), set())
    assert beam_speed.cache_dofn_specs()
    for _ in range(2):  # computed, then from the cache
        assert [userstate.get_dofn_specs(d) for d in dofns] == expected
    specs = userstate.get_dofn_specs(_Stateful())
    specs[0].clear()  # callers own their sets
    assert userstate.get_dofn_specs(_Stateful()) == expected[1]
    assert userstate.is_stateful_dofn(_Stateful()) and not userstate.is_stateful_dofn(_Fn())
    for _ in range(2):
        with pytest.raises(ValueError, match="duplicate"):
            userstate.get_dofn_specs(_Duplicated())


class _YieldsAndReturns(beam.DoFn):
    def process(self, element):
        if element:
            return [element]
        yield element


def test_the_yield_and_return_check_gives_beams_answer_once_per_function(unpatched, caplog):
    from infra.compat import beam_speed

    core, _ = unpatched
    callables = [_Fn().process, _Fn.helper, _YieldsAndReturns().process, _plain, len,
                 functools.partial(_plain, 1), lambda x: x]
    expected = [core._check_fn_use_yield_and_return(f) for f in callables]
    assert expected[2] is True and expected[0] is False
    assert beam_speed.memoize_yield_return_check()
    for _ in range(2):  # computed, then from the cache
        assert [core._check_fn_use_yield_and_return(f) for f in callables] == expected
    with caplog.at_level(logging.WARNING):  # ParDo still warns, each time one is made
        beam.ParDo(_YieldsAndReturns())
        beam.ParDo(_YieldsAndReturns())
    assert caplog.text.count("Using yield and return") == 2


def test_a_beam_they_were_not_written_for_is_left_alone_with_a_warning(unpatched, monkeypatch, caplog):
    import apache_beam

    from infra.compat import beam_speed

    core, s3io = unpatched
    monkeypatch.setattr(apache_beam, "__version__", "2.99.0")
    with caplog.at_level(logging.WARNING, logger="mtnlg.compat"):
        assert not beam_speed.memoize_function_signatures()
        assert not beam_speed.reuse_s3_clients()
        assert not beam_speed.cache_option_views()
        assert not beam_speed.cache_dofn_specs()
        assert not beam_speed.memoize_yield_return_check()
    assert not hasattr(core.get_function_args_defaults, "_beam_original")
    assert not hasattr(s3io.S3IO.__init__, "_beam_original")
    assert "2.99.0 is outside" in caplog.text


def test_changed_beam_code_is_left_alone(unpatched, monkeypatch, caplog):
    from infra.compat import beam_speed

    core, _ = unpatched
    monkeypatch.setattr(beam_speed, "_ARGS_DEFAULTS_SHA256", "0" * 64)
    with caplog.at_level(logging.WARNING, logger="mtnlg.compat"):
        assert not beam_speed.memoize_function_signatures()
    assert "is not the code the function-signature cache wraps" in caplog.text


def test_the_environment_can_turn_them_off(unpatched, monkeypatch):
    from infra.compat import beam_speed

    core, _ = unpatched
    monkeypatch.setenv("MTNLG_BEAM_SPEED_PATCHES", "0")
    beam_speed.enable()
    assert not hasattr(core.get_function_args_defaults, "_beam_original")
