import pytest
from apache_beam.testing.test_pipeline import TestPipeline


@pytest.fixture
def pipeline():
    """A TestPipeline on the FnApiRunner, in process (never Prism: it downloads a binary)."""
    return TestPipeline(runner="FnApiRunner")
