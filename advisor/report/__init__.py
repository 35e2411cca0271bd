"""Reports: the scan report model (JSON), the console summary, JUnit XML."""
