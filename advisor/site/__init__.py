"""The site: its model (hosts, roles, waivers, mesh pairs), how a site file or an Ansible
inventory is found and read, host patterns, the host variables that are secrets."""
