"""Run as N ranks by test_spawn.py: what the rank server does with a rank that fails or hangs.

    python tests/training/spawn.py 2 tests/training/failing_worker.py raise|hang|env
"""
import os
import sys
import time


def main() -> None:
    what, rank = sys.argv[1], int(os.environ["RANK"])
    if what == "raise" and rank == 1:
        raise RuntimeError("rank 1 fails on purpose")
    if what == "hang":  # after saying where it is (the file appears whole: written, then renamed)
        path = os.path.join(os.environ["PIDS"], f"rank{rank}")
        with open(path + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(path + ".tmp", path)
        time.sleep(600)
    if what == "env":
        print(f"rank {rank} of {os.environ['WORLD_SIZE']} MARK={os.environ.get('MARK')}")


if __name__ == "__main__":
    main()
