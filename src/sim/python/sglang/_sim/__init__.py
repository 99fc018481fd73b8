"""The parts of the simulated ``sglang.launch_server`` (see launch_server.py): flags and files, fault modes,
HTTP payloads, the request handler. Internal to the simulator."""
