"""Cache simulation from a site's own transfer logs (``storadvise cache simulate``).

Inputs (one module per format) stream batches of read requests into a :class:`~advisor.cache.trace.Trace`
(dense file keys, sizes, bytes read, servers, file types); policies (``policies``) replay them in
compiled kernels; ``curve`` computes the whole LRU curve in one pass; ``plots`` draws it.
"""
