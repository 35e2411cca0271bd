"""storadvise: tuning advisor and diagnostic toolkit for WLCG site storage."""

__version__ = "0.1.0"
