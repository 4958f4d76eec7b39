"""Apache Beam internals patched for speed only, each per process and idempotent.

Unlike the local runner's data-plane fix (``infra.compat.beam``), nothing here changes what a
job computes, so a Beam that is not what a patch was written for is not an error: the patch is
left out with one warning and the job runs at Beam's own speed.

* ``reuse_s3_clients``: one boto3 client per set of S3 options instead of one per file operation.
* ``memoize_function_signatures``: Beam inspects the signature of every method of every DoFn
  again and again; each function's is computed once.
* ``cache_option_views``: ``PipelineOptions.view_as`` builds and runs an argparse parser on
  every call (thousands per job); a view is built once per options object and class.
* ``cache_dofn_specs``: Beam looks for state and timer parameters in every method of a DoFn
  each time it asks whether the DoFn is stateful; the answer is found once per DoFn class.
* ``memoize_yield_return_check``: every ``ParDo`` reads the source of its DoFn's ``process``
  (``inspect.getsourcelines``) to warn about ``yield`` with ``return``; each function's source
  is read once.

``enable()`` applies them all; ``infra/storage/__init__.py`` calls it, so the driver, every
Beam worker that runs the project's steps and the run-folder tools (all read and write files
through that package) have them.
"""
from __future__ import annotations

import logging
import threading

from infra.compat import CompatError, require, require_version, source_digest
from infra.compat.beam import VERIFIED

log = logging.getLogger("mtnlg.compat")

# sha256 of the dedented source of what each patch wraps, in Beam 2.77: a change upstream is a
# reason to look again before wrapping it.
_S3IO_INIT_SHA256 = "e587933d59ae27dd67f6fd5b56d0e909cd79772217e226dd529742c326dd2140"
_ARGS_DEFAULTS_SHA256 = "5e41a60ff81fe8ca96ab6ec705dcd571f5c2f574a43a9e8db00010e19976191b"
_VIEW_AS_SHA256 = "f1a7b704b579d3fbd63c678e6d771fa63f199971d3ceb2be0b5ae43b613e7247"
_DOFN_SPECS_SHA256 = "eeb36145d3115aa02ec8d05667f4190084047c5229734d49250d6a950db0e923"
_YIELD_RETURN_SHA256 = "0564abdb440c676dcb3f027f8fbfa8d0e8f7e11455be5f316112c73ef1836c3c"
_S3_OPTIONS = ("s3_access_key_id", "s3_secret_access_key", "s3_session_token", "s3_endpoint_url",
               "s3_disable_ssl", "s3_region_name", "s3_api_version", "s3_verify")


def _verified(function, sha256: str, what: str) -> bool:
    """Whether the installed Beam is in ``VERIFIED`` and ``function`` is the code ``what``
    wraps; otherwise one warning, and False."""
    import apache_beam

    try:
        require_version("apache-beam", apache_beam.__version__, VERIFIED, f"{what} (infra/compat/beam_speed.py)")
        require(source_digest(function) == sha256, f"apache-beam {apache_beam.__version__}",
                f"{function.__module__}.{function.__qualname__} is not the code {what} wraps")
    except CompatError as e:
        log.warning("%s is left out (speed only): %s", what, e)
        return False
    return True


def _patch(owner, name: str, sha256: str, what: str, make) -> bool:
    """Replace ``owner.name`` by ``make(original)`` once per process, where the installed Beam is
    the code ``what`` was written for (``_verified``); returns whether the patch is in place."""
    original = getattr(owner, name)
    if getattr(original, "_beam_original", None) is not None:
        return True
    if not _verified(original, sha256, what):
        return False
    wrapper = make(original)
    wrapper._beam_original = original
    setattr(owner, name, wrapper)
    return True


def _per_function(original):
    """``original(f)`` computed once per plain function or method (cached by its function object,
    weakly, and by whether it is bound); any other callable (partial, builtin, callable object)
    goes to ``original`` every time."""
    import types
    import weakref

    cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    lock = threading.Lock()

    def cached(f):
        func = f.__func__ if isinstance(f, types.MethodType) else f
        if not isinstance(func, types.FunctionType):
            return original(f)
        bound = func is not f
        with lock:
            known = cache.get(func)
            hit = known.get(bound) if known is not None else None
        if hit is None:
            hit = original(f)
            with lock:
                cache.setdefault(func, {})[bound] = hit
        return hit
    return cached


def _s3_client_key(options) -> tuple:
    """What Beam's ``boto3_client.Client`` is built from: these S3 options' values."""
    if isinstance(options, dict):
        return tuple(options.get(n) for n in _S3_OPTIONS)
    from apache_beam.options.pipeline_options import S3Options

    view = options.view_as(S3Options)
    return tuple(getattr(view, n, None) for n in _S3_OPTIONS)


def reuse_s3_clients() -> bool:
    """One boto3 S3 client per process and set of S3 options, instead of one per file operation.

    Beam's ``S3FileSystem`` makes a new ``s3io.S3IO(options=...)`` in every method (open, create,
    match, exists, rename, delete, ...), and each builds a boto3 session and client, which loads
    botocore's service model and endpoint rules from JSON on every file operation: most of a
    curate run's time on S3 went there (docs/runners.md, "Beam's fixed cost per job, and the
    speed-only patches").  boto3 clients are thread-safe.  Returns whether the patch is in place."""
    try:
        from apache_beam.io.aws import s3io
        from apache_beam.io.aws.clients.s3 import boto3_client
    except ImportError:  # no [aws] extra (boto3): no S3 filesystem to speed up
        return False
    clients: dict = {}
    lock = threading.Lock()

    def make(init):
        def __init__(self, client=None, options=None):
            if client is None and options is not None:
                key = _s3_client_key(options)
                with lock:
                    client = clients.get(key)
                    if client is None:
                        client = clients[key] = boto3_client.Client(options=options)
            init(self, client=client, options=options)
        return __init__

    return _patch(s3io.S3IO, "__init__", _S3IO_INIT_SHA256, "the S3 client reuse", make)


def memoize_function_signatures() -> bool:
    """``apache_beam.transforms.core.get_function_args_defaults`` computed once per function.

    Beam calls it (``inspect.signature``) for every method of a DoFn each time it asks whether
    the DoFn is stateful, validates it, serialises it and builds a bundle processor: ~140,000
    calls for one curate job of ~800 transforms, 28% of the CPU of a curate run of a tiny corpus
    (measured: bench/RESULTS.md "Beam's fixed cost per job").  The result depends only on the
    function (its code, defaults, wrappers) and on whether it is bound, so plain functions and
    methods are cached by their function object (weakly, so nothing is kept alive); any other
    callable (partial, builtin, callable object) is inspected every time, as before."""
    from apache_beam.transforms import core

    def make(original):
        cached = _per_function(original)

        def get_function_args_defaults(f):
            args, defaults = cached(f)
            return list(args), list(defaults)  # callers own their lists, as with Beam's
        return get_function_args_defaults

    return _patch(core, "get_function_args_defaults", _ARGS_DEFAULTS_SHA256,
                  "the function-signature cache", make)


def cache_option_views() -> bool:
    """``PipelineOptions.view_as(cls)`` built once per options object and class.

    Each call builds an argparse parser for ``cls``'s options and parses the object's flags
    again (gettext and terminal-size lookups included), and Beam calls it for every transform it
    applies and every type it checks: ~18% of the CPU of a curate run of a tiny corpus.  A view
    holds nothing of its own but what that parse gives (the flags never change after an options
    object is made) and the source object's shared ``_all_options`` dict, so the same view can
    be handed out again; it is rebuilt if that dict was replaced.  Views are kept weakly, per
    source object."""
    import weakref

    from apache_beam.options.pipeline_options import PipelineOptions

    views: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    lock = threading.Lock()

    def make(original):
        def view_as(self, cls):
            with lock:
                mine = views.get(self)
                view = mine.get(cls) if mine is not None else None
            if view is None or view._all_options is not self._all_options:
                view = original(self, cls)
                with lock:
                    views.setdefault(self, {})[cls] = view
            return view
        view_as.__doc__ = original.__doc__
        return view_as

    return _patch(PipelineOptions, "view_as", _VIEW_AS_SHA256, "the options-view cache", make)


def cache_dofn_specs() -> bool:
    """``apache_beam.transforms.userstate.get_dofn_specs`` found once per DoFn class.

    Beam asks it (is the DoFn stateful? valid? which timers?) when a ParDo is made, validated,
    serialised and when each bundle processor is built; each call walks ``dir(dofn)`` and the
    signature of every method: 8% of the CPU of a curate run of a tiny corpus after the
    function-signature cache.  The answer comes from the defaults of the methods' parameters,
    which belong to the class, so it is cached per class (weakly) when no instance attribute is a
    bound method (which ``dir`` would also find); other DoFns are inspected every time, as
    before.  Callers get their own sets."""
    import types
    import weakref

    from apache_beam.transforms import userstate

    cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    lock = threading.Lock()

    def make(original):
        def get_dofn_specs(dofn):
            if any(isinstance(v, types.MethodType) for v in getattr(dofn, "__dict__", {}).values()):
                return original(dofn)
            with lock:
                hit = cache.get(type(dofn))
            if hit is None:
                hit = original(dofn)  # raises for an invalid DoFn: nothing cached
                with lock:
                    cache[type(dofn)] = hit
            return set(hit[0]), set(hit[1])
        return get_dofn_specs

    return _patch(userstate, "get_dofn_specs", _DOFN_SPECS_SHA256, "the DoFn state-spec cache",
                  make)


def memoize_yield_return_check() -> bool:
    """``apache_beam.transforms.core._check_fn_use_yield_and_return`` answered once per function.

    ``ParDo`` calls it for its DoFn's ``process`` each time one is made, and it reads and scans
    that function's source (``inspect.getsourcelines``, which tokenizes the module's source):
    every ``beam.Map``/``FlatMap``/``Filter`` asks again about the same wrapper method, hundreds
    of times for one curate job.  The answer depends only on the function's source,
    so plain functions and methods are cached by their function object (weakly); any other
    callable is checked every time, as before."""
    from apache_beam.transforms import core

    return _patch(core, "_check_fn_use_yield_and_return", _YIELD_RETURN_SHA256,
                  "the yield-and-return check cache", _per_function)


def enable() -> None:
    """Every speed patch (each where the installed Beam allows it), unless the environment says
    ``MTNLG_BEAM_SPEED_PATCHES=0`` (to rule them out when chasing a problem, and for
    bench/job/job_overhead.py's side by side)."""
    import os

    if os.environ.get("MTNLG_BEAM_SPEED_PATCHES", "1") == "0":
        return
    reuse_s3_clients()
    memoize_function_signatures()
    cache_option_views()
    cache_dofn_specs()
    memoize_yield_return_check()
