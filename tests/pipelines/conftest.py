import pytest

from pipeline_fixtures import local_pipeline


@pytest.fixture
def pipeline():
    """A TestPipeline on the FnApiRunner, in process, as `mtnlg curate` builds its job."""
    return local_pipeline()
