"""The rules stage: rule packs as data (specs), the engine that evaluates them over a fact set
(engine, checks, the analytic rules), what they ask the probes to collect (probe_requests), how a
failed finding's changes are rendered (change_templates, finding_changes), waivers and lint."""
