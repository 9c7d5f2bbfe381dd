"""The Airflow tests' shared fixture: one migrated metadata database per test run."""
import pytest
from airflow_helpers import make_airflow_env


@pytest.fixture(scope="session")
def airflow_env(tmp_path_factory):
    """A migrated SQLite metadata database in a temporary AIRFLOW_HOME, and the environment to use it."""
    return make_airflow_env(tmp_path_factory.mktemp("airflow_home"))
