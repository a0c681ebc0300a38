"""Running on a device: the runtime protocol and its drivers, launches, isolation, the session."""
