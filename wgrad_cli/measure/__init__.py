"""verify and bench on a device: checking outputs, taking timing samples, the torch baselines."""
