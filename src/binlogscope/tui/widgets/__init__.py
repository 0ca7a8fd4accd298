"""The inspector's widgets: the event list, field tree, hex pane, field help, phase strip,
prompt bar and status bar (each receives Nodes and rows; none imports a driver)."""
