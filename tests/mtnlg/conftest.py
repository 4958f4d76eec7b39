import os
import sys

# pipeline_fixtures (a tiny raw corpus, its config) serves the tests of the commands that read a
# curated run, too.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "pipelines"))
