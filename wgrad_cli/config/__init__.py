"""What to run: shape configs, kernel specs, routing, targets and the command line's options."""
