"""What the tests share: harnesses, fixtures and test data. No test module imports another; they import from here.

- tiers.py: the markers a test gets from the fixtures it takes, the guard that keeps them true;
  quiet_scheduling.py: under xdist, the quiet tests (labs, throughput) run last, alone on one worker.
- cli.py: storadvise as a user runs it, in a process of its own.
- sshd.py (``sshd``), ns_host.py (``ns_hosts``), netns.py (``netns``, ``netns_site``), lab.py (``lab_registry``),
  ansible.py (``ansible_playbook``): the real components tests run against, each removed even when a test fails.
- paths.py, reports.py, report_checks.py, diagnosis_site.py, ifca_mesh.py, rule_packs.py, planner_facts.py,
  firewall_outputs.py, plan_files.py, sysctl_sandbox.py, subprocess_transport.py: data and checks several test
  modules use.
"""
