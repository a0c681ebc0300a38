"""The emulator's instruction families, each compiled to closures over a batch of waves."""
