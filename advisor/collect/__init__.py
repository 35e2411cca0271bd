"""The collect stage: which probes run where and with which privilege, run through the
transports (or Ansible) and parsed into facts."""
