"""One curate run whose output disk fills up, then ``--resume`` once space is freed; run by
test_full_disk.py inside its own mount namespace (``unshare -m``), where it mounts a small tmpfs.

    python full_disk_run.py WHEN CONFIG MOUNT OUT_JSON COPY_TO

WHEN ``stage``: a worker is held inside the dedup stage (``tests/worker_hold``), the disk is then
filled to the last byte and the worker let go, so its next write fails; WHEN ``commit``: the disk
is filled when the commit of the read stage begins (``RunDir.commit`` wrapped in the curate
process).  Then the ballast is removed and the run resumed.  Writes what happened to OUT_JSON and
copies the finished run to COPY_TO (outside the namespace's tmpfs, which goes with it)."""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
GUARD_S = 600  # hang guards, never speed bounds

# `mtnlg curate` whose commit of the read stage first fills the disk (the ballast file).
FILL_AT_COMMIT = """
import sys
from pipelines import curate
from pipelines.runfolder.commit import RunDir
sys.path.insert(0, sys.argv[1])
from full_disk_run import fill

ballast, commit = sys.argv[2], RunDir.commit

def filling_commit(self, attempts, fp, info=None):
    attempts = list(attempts)
    if "read" in [a.stage for a in attempts]:
        fill(ballast)
    return commit(self, attempts, fp, info)

RunDir.commit = filling_commit
sys.exit(curate.run(sys.argv[3:]))
"""


def fill(path: str) -> None:
    """Write ``path`` until its filesystem has no byte left (unbuffered: no write waits in a
    buffer for a close that would fail)."""
    with open(path, "wb", buffering=0) as f:
        for size in (1 << 16, 4096, 512, 1):  # big blocks, then the last partial ones
            try:
                while f.write(b"\0" * size):
                    pass
            except OSError:
                pass


def main(when: str, config: str, mount: str, out_json: str, copy_to: str) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mount], check=True)
    run, ballast, hold = os.path.join(mount, "run"), os.path.join(mount, "ballast"), os.path.join(mount, "hold")
    os.makedirs(hold)
    args = ["--config", config, "--output", run, "--direct_num_workers=2"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(REPO, "tests", "worker_hold"), REPO]))
    if when == "stage":
        env.update(MTNLG_TEST_HOLD="dedup", MTNLG_TEST_HOLD_DIR=hold)
        cmd = [sys.executable, "-m", "pipelines.curate", *args]
    else:
        cmd = [sys.executable, "-c", FILL_AT_COMMIT, HERE, ballast, *args]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    if when == "stage":
        deadline = time.monotonic() + GUARD_S
        while not os.path.exists(os.path.join(hold, "holding")) and proc.poll() is None:
            assert time.monotonic() < deadline, "no worker was held"
            time.sleep(0.05)
        fill(ballast)
        open(os.path.join(hold, "release"), "w").close()  # an empty file: an inode, no block
    _, err = proc.communicate(timeout=GUARD_S)
    staging = os.path.join(run, "_curate", "staging")
    left = sorted(os.path.relpath(os.path.join(d, f), run) for d, _, fs in os.walk(run) for f in fs
                  if ".tmp-" in f or d.startswith(staging))
    os.unlink(ballast)  # space freed
    resumed = subprocess.run([sys.executable, "-m", "pipelines.curate", "--config", config,
                              "--resume", run, "--direct_num_workers=2"], cwd=REPO,
                             env=dict(os.environ, PYTHONPATH=REPO), capture_output=True, text=True,
                             timeout=GUARD_S)
    shutil.copytree(run, copy_to)
    with open(out_json, "w") as f:
        json.dump({"code": proc.returncode, "stderr": err, "left": left,
                   "run_json_before_resume": False, "resume_code": resumed.returncode,
                   "resume_stderr": resumed.stderr[-3000:]}, f)


if __name__ == "__main__":
    main(*sys.argv[1:6])
