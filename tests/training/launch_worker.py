"""Run as N ranks (spawn.py) in test_elastic_launch.py: one rank of `mtnlg train` as torchrun's
agent starts it (``python -m training.launch ARGS`` with torchrun's environment: the rank sees
WORLD_SIZE and trains).

    python tests/training/spawn.py 4 tests/training/launch_worker.py --manifest M --output O ...
"""
import sys

from training.launch import main as launch


def main() -> None:
    code = launch(sys.argv[1:])
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
