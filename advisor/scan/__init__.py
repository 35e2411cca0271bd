"""The scan pipeline, once: options -> open -> collect -> measure -> evaluate -> report;
its options as typer flags and its dry run."""
