import os
import sys

# `training_fixtures` (small stand-ins for the blending layer) is imported by tests and by worker processes.
sys.path.insert(0, os.path.dirname(__file__))
