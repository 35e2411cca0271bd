"""Apply: turn a scan's failed findings into an Ansible project (plan), and prove the change (verify)."""
