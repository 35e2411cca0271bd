"""Paths: one typed record per directed path (``PathRecord``), whether a mesh test or the site's
production flows measured it, and what its two ends hold that acts on it (``host_view``)."""
