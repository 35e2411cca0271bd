"""CPU efficiency from job accounting: ingest (HTCondor, Slurm, CMSSW FJR), analysis, latency what-if.

The symptom a site sees is CPU efficiency = CPU time / (wall time x cores). This package turns
job-accounting exports into per-job :class:`~advisor.efficiency.records.JobRecord` objects
(streamed, bounded memory), aggregates them into distributions, and raises
:class:`advisor.model.findings.Finding` objects (I/O-bound signature, wasted wall time, below
baseline) that point at the storage and network findings of the same hosts.
"""
