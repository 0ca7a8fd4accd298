"""Scenarios: who may log in, what the server looks like, what it serves, which faults fire.

- ``scenarios.py`` - :class:`Scenario` (TOML/YAML file or Python), its users, sources and
  passwords;
- ``faults.py`` - the mock master's table of fault actions, and the stream-level ones (rotate,
  split_packet, compress_transaction) applied to the history up front; an action itself is the
  one :class:`binlogscope.drivers.scenario_files.Action` the proxy uses too;
- ``errors.py`` - :class:`ScenarioError` (one clear line).

The per-event actions fire in :mod:`mock_master.dump.events`.
"""
