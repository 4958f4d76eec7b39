"""Beam's local job service (``local_job_service_main``) with the job's worker count honoured.

Why this wrapper exists (Beam 2.77, read in apache_beam/runners/portability/): the local job
service runs each job with ``BeamJob._invoke_runner``, which builds ``FnApiRunner()`` and calls
``run_via_runner_api``.  The runner's worker count (``FnApiRunner._num_workers``) is set from
``--direct_num_workers`` only in ``FnApiRunner.run_pipeline``, which this path never calls, so it
stays at its constructor default of 1: the runner asks the EXTERNAL worker pool for ONE SDK
harness (``WorkerHandlerManager.get_worker_handlers(env, num_workers=1)``) and every bundle runs
there.  ``--sdk_worker_parallelism`` is no help: no Python code reads it; only the Java job
servers (Flink, Spark) use it to size their SDK harness pools.

This runs ``local_job_service_main`` unchanged except that ``_invoke_runner`` sets the worker
count from the job's ``--direct_num_workers``, so the pool starts that many SDK harness
processes and the runner splits every stage's input among them, as a multi-worker cluster does.
The job service runs the FnApiRunner, so it gets the local runner's data-plane fix
(``infra.compat.beam.safe_local_data_plane``, docs/runners.md) as ``mtnlg curate`` does.
"""
import sys

from apache_beam.options.pipeline_options import DirectOptions
from apache_beam.portability.api import beam_job_api_pb2
from apache_beam.runners.portability import local_job_service, local_job_service_main
from apache_beam.runners.portability.fn_api_runner import fn_runner

from infra.compat.beam import safe_local_data_plane


def _invoke_runner(self):
    self.set_state(beam_job_api_pb2.JobState.RUNNING)
    options = self.pipeline_options()
    runner = fn_runner.FnApiRunner(provision_info=self._provision_info)
    # Options arrive from the job API as strings.
    runner._num_workers = max(1, int(options.view_as(DirectOptions).direct_num_workers or 1))
    return runner.run_via_runner_api(self._pipeline_proto, options)


local_job_service.BeamJob._invoke_runner = _invoke_runner

if __name__ == "__main__":
    safe_local_data_plane()
    local_job_service_main.run(sys.argv[1:])
